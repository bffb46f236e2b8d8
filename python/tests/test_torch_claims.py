"""What docs/claims.md takes from PyTorch, checked against PyTorch itself.

The claims report models some of PyTorch's behaviour rather than running it
(docs/claims-method.md): the type promotion of GradScaler's scaled loss
(claim 2), GradScaler's update arithmetic (claim 9), the autocast state a
checkpointed recomputation runs under (claim 15), and where Adam's denom
lives in the for-each and fused kernels (claim 23). Each test checks that
behaviour on the CPU, naming the PyTorch source it comes from. Without
torch the module is skipped with that reason (pytest's importorskip).
"""

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the claims' "
                            "PyTorch behaviour is not checked (pip install torch, CPU is enough)")


def test_claim2_scaled_loss_is_fp32():
    # torch/amp/grad_scaler.py, GradScaler.scale: outputs * self._scale, a
    # zero-dimensional fp32 tensor; a 0-dim fp16 times a 0-dim fp32 promotes
    # to fp32 (both are 0-dim, so the higher category's dtype wins).
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        loss = torch.tensor(15.0, dtype=dt)
        scale = torch.full((), 131072.0, dtype=torch.float32)
        scaled = loss * scale
        assert scaled.dtype == torch.float32
        assert scaled.item() == 1966080.0 and math.isfinite(scaled.item())


def test_claim2_overflow_is_in_backward():
    # backward of loss·S hands the fp16 loss the gradient S cast to fp16:
    # inf for S = 65536 and 131072, whatever the loss's value.
    for s in (65536.0, 131072.0):
        for v in (15.0, 1e-3):
            loss = torch.tensor(v, dtype=torch.float16, requires_grad=True)
            (loss * torch.full((), s, dtype=torch.float32)).backward()
            assert loss.grad.dtype == torch.float16 and math.isinf(loss.grad.item())


def test_claim9_gradscaler_update_rule():
    # torch/amp/grad_scaler.py update() and _amp_update_scale_ (CPU kernel in
    # aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp): skip halves the
    # scale and resets the tracker; growth_interval clean steps multiply it.
    try:
        scaler = torch.amp.GradScaler("cpu", init_scale=2048.0, growth_factor=1.5,
                                      backoff_factor=0.5, growth_interval=3)
    except (TypeError, RuntimeError, AttributeError) as e:
        pytest.skip(f"this torch has no CPU GradScaler: {e}")
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=0.0)
    for skip in (False, False, False, True, False):
        opt.zero_grad()
        scaler.scale(w.sum()).backward()
        if skip:
            w.grad.fill_(math.inf)
        scaler.step(opt)
        scaler.update()
    # three clean steps grew 2048 by 1.5 once (3072), the skip halved it (1536),
    # the last clean step only counted
    assert scaler.get_scale() == 1536.0


def test_claim15_checkpoint_recomputes_under_forward_autocast():
    # torch/utils/checkpoint.py saves the forward's autocast state
    # (_get_autocast_kwargs) and re-enters it for the recomputation.
    from torch.utils.checkpoint import checkpoint
    seen = []

    def f(x, w):
        y = x @ w
        seen.append(y.dtype)
        return y

    x = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = checkpoint(f, x, w, use_reentrant=False)
    out.float().sum().backward()  # outside autocast: the recomputation happens here
    assert len(seen) == 2 and seen[0] == seen[1] == torch.bfloat16


def _adam_step(**kw):
    # fp16 parameters, gradients small enough that (1 − β2)·g² underflows in
    # fp16 (|g| < 5.5e-3): v = 0 where it is stored in fp16
    p = torch.nn.Parameter(torch.full((8,), 0.5, dtype=torch.float16))
    opt = torch.optim.Adam([p], lr=1e-3, eps=1e-8, **kw)
    p.grad = torch.full((8,), 1e-4, dtype=torch.float16)
    opt.step()
    return p.detach().float()


def test_claim23_foreach_denom_loses_eps_fused_keeps_it():
    # torch/optim/adam.py, _multi_tensor_adam: denom = exp_avg_sq.sqrt() /
    # bias_correction2_sqrt, then .add_(eps): tensors of the state's dtype, so
    # 1e-8 is 0 in fp16 and the update divides by 0. _fused_adam computes the
    # step in opmath (fp32) registers and stores only m, v and the weights.
    foreach = _adam_step(foreach=True)
    assert not torch.isfinite(foreach).all()
    try:
        fused = _adam_step(fused=True)
    except (RuntimeError, TypeError) as e:
        pytest.skip(f"this torch has no CPU fused Adam for fp16: {e}")
    assert torch.isfinite(fused).all()
