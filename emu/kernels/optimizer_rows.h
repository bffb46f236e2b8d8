/*
 * optimizer_rows.h — SGD with momentum and AdamW, one step over a run of
 * elements, written once (emu/engine/krow.h): emu/kernels/optimizer.c runs
 * it on the engine's backends over every element of a step, gpu/kern.cu on
 * the GPU (one thread an element, over all the steps) and gpu/host_rows.c
 * on the fake device. docs/kernels-optimizer.md writes out every formula
 * and cites PyTorch's sources (torch.optim.SGD and AdamW, foreach=False).
 *
 * Formats: S the weights (and adamw_kahan's compensation), C every
 * operation (opmath), G the stored gradients, T the states m and v (and,
 * unless the fused switch is on, every temporary tensor PyTorch
 * materialises from them). A stored tensor an operation reads is first
 * converted into C (its own step: exact when C holds the stored format).
 *
 * Python's scalars arrive as binary64 (py: emu/kernels/optimizer.c's
 * emu_opt_plan_make computes them as CPython does) and are rounded once
 * into C where a tensor operation meets them (K_CONST): k_opt_consts the
 * run's, k_opt_step_consts step s's (the bias corrections'). t holds
 * OPT_NT scalars.
 *
 * The weight's two stores (the decay's and the update's) are SR in
 * adamw_sr: the bits of element e of step S_DECAY_STORE or S_STORE under
 * the policy's seed, so their step ids are part of the result, and unlike
 * the other row sources' these ids exist on the GPU too (K_STEP0 on both
 * sides).
 */
#ifndef NANMAP_OPTIMIZER_ROWS_H
#define NANMAP_OPTIMIZER_ROWS_H

/* The variants, in the order of emu/kernels/optimizer.c's list (the first
 * its default) */
#define K_OPT_VARIANTS(X)                                                                          \
	X(OPT_ADAMW, "adamw")                                                                      \
	X(OPT_ADAMW_KAHAN, "adamw_kahan")                                                          \
	X(OPT_ADAMW_SR, "adamw_sr")                                                                \
	X(OPT_SGD, "sgd")
enum { K_OPT_VARIANTS(K_VARIANT_ID) };

/* The switches (k_opt_cfg.flags): weight decay on, momentum on (sgd),
 * lerp's first form (1 − β1 below 1/2: ATen's Lerp.h), denom kept in C
 * (fused) */
enum { OPT_F_WD = 1, OPT_F_MOMENTUM = 2, OPT_F_LERP_SMALL = 4, OPT_F_FUSED = 8 };

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists
 * them). Their order is part of adamw_sr's draws: append, never reorder. */
#define K_OPT_STEPS(X)                                                                             \
	X(S_GRAD, "grad")                                                                          \
	X(S_DECAY_FACTOR, "decay_factor")                                                          \
	X(S_LERP_W, "beta1")                                                                       \
	X(S_BETA2, "beta2")                                                                        \
	X(S_ONE_MINUS_BETA2, "one_minus_beta2")                                                    \
	X(S_EPS, "eps")                                                                            \
	X(S_NEG_LR, "lr")                                                                          \
	X(S_WD, "weight_decay")                                                                    \
	X(S_NEG_LR_WD, "neg_lr_wd")                                                                \
	X(S_STEP_SIZE, "step_size")                                                                \
	X(S_BC2_SQRT, "bc2_sqrt")                                                                  \
	X(S_MOMENTUM, "momentum")                                                                  \
	/* SGD */                                                                                  \
	X(S_WD_MUL, "wd_mul")                                                                      \
	X(S_WD_ADD, "wd_add")                                                                      \
	X(S_WD_STORE, "wd_store")                                                                  \
	X(S_BUF_INIT, "buf_init")                                                                  \
	X(S_BUF_MUL, "buf_mul")                                                                    \
	X(S_BUF_MUL_STORE, "buf_mul_store")                                                        \
	X(S_BUF_ADD, "buf_add")                                                                    \
	X(S_BUF_STORE, "buf_store")                                                                \
	X(S_LR_MUL, "lr_mul")                                                                      \
	/* AdamW */                                                                                \
	X(S_DECAY, "decay")                                                                        \
	X(S_DECAY_STORE, "decay_store")                                                            \
	X(S_LERP_SUB, "m_lerp")                                                                    \
	X(S_LERP_MUL, "m_lerp_mul")                                                                \
	X(S_LERP_ADD, "m_lerp_add")                                                                \
	X(S_M_STORE, "m_store")                                                                    \
	X(S_V_MUL, "v_mul")                                                                        \
	X(S_V_MUL_STORE, "v_mul_store")                                                            \
	X(S_G2_SCALE, "g2_scale")                                                                  \
	X(S_G2, "g2")                                                                              \
	X(S_V_ADD, "v_add")                                                                        \
	X(S_V_STORE, "v_store")                                                                    \
	X(S_SQRT, "sqrt")                                                                          \
	X(S_SQRT_STORE, "sqrt_store")                                                              \
	X(S_BC2_DIV, "bc2_div")                                                                    \
	X(S_BC2_STORE, "bc2_store")                                                                \
	X(S_ADD_EPS, "add_eps")                                                                    \
	X(S_DENOM_STORE, "denom_store")                                                            \
	X(S_STEP_MUL, "step_mul")                                                                  \
	X(S_STEP_DIV, "step_div")                                                                  \
	/* Kahan */                                                                                \
	X(S_KAHAN_DECAY, "kahan_decay")                                                            \
	X(S_KAHAN_INC, "increment")                                                                \
	X(S_COMP_ADD, "comp_add")                                                                  \
	X(S_COMP_STORE, "comp_store")                                                              \
	X(S_COMP_DIFF, "comp_diff")                                                                \
	X(S_COMP_FIX, "comp_fix")                                                                  \
	X(S_COMP_FIX_STORE, "comp_fix_store")                                                      \
	/* the weight */                                                                           \
	X(S_UPDATE, "update")                                                                      \
	X(S_STORE, "store")                                                                        \
	X(S_DIAG, "diag")                                                                          \
	/* stored tensors read back into the compute format */                                     \
	X(S_GRAD_C, "grad_to_compute")                                                             \
	X(S_W_C, "w_to_compute")                                                                   \
	X(S_W_C2, "w_to_compute_2")                                                                \
	X(S_W_C3, "w_to_compute_3")                                                                \
	X(S_WD_C, "wd_to_compute")                                                                 \
	X(S_M_C, "m_to_compute")                                                                   \
	X(S_M_C2, "m_to_compute_2")                                                                \
	X(S_M_C3, "m_to_compute_3")                                                                \
	X(S_V_C, "v_to_compute")                                                                   \
	X(S_V_C2, "v_to_compute_2")                                                                \
	X(S_V_C3, "v_to_compute_3")                                                                \
	X(S_D_C, "d_to_compute")                                                                   \
	X(S_D_C2, "d_to_compute_2")                                                                \
	X(S_D_C3, "d_to_compute_3")                                                                \
	X(S_C_C, "c_to_compute")                                                                   \
	X(S_C_C2, "c_to_compute_2")                                                                \
	/* initial states given by role (emu_kin.tensors): stored; by default                      \
	 * they are +0 and nothing is stored */                                                    \
	X(S_M_IN, "m")                                                                             \
	X(S_V_IN, "v")                                                                             \
	X(S_C_IN, "c")
#define K_OPT_STEP_ID(id, name) id,
enum { S_FIRST_ = K_STEP0 - 1, K_OPT_STEPS(K_OPT_STEP_ID) S_END };

/* The Python scalars of py (binary64) and, rounded into C, the slots of t:
 * the run's, then (OPT_NPY on) step s's two at OPT_NPY + 2·(s − 1) in py;
 * t's last slots are 1 and the current step's two */
enum {
	OPT_EPS,
	OPT_NEG_LR,
	OPT_WD,
	OPT_MU,
	OPT_DECAY_F,   /* 1 − lr·wd */
	OPT_NEG_LR_WD, /* −(lr·wd) */
	OPT_LERP_W,    /* 1 − β1 */
	OPT_BETA2,
	OPT_OM_BETA2, /* 1 − β2 */
	OPT_NPY,
	OPT_NEG_SS = OPT_NPY, /* −lr/(1 − β1^s) */
	OPT_BC2S,             /* sqrt(1 − β2^s) */
	OPT_ONE,
	OPT_NT
};

/* a variant and its switches */
typedef struct {
	int v;
	unsigned flags;
} k_opt_cfg;

/* the tensors one step reads and writes: the weights w (values of S, in
 * place), the states m and v (T), the compensation c (S, adamw_kahan), the
 * step's gradients g as stored (G); then scratch in C */
typedef struct {
	k_ref w, m, v, c, g;
	k_ref gc, wc, xc, a, d, u;
} k_opt_refs;

/* the run's scalars, each rounded once into C where PyTorch's tensor
 * operation meets it; lerp's weight 1 − β1, or in its second form 1 minus
 * that (opmath's own subtraction) */
K_FN void k_opt_consts(k_ctx kc, k_opt_cfg cfg, k_fmt C, const double *py, k_vec t)
{
	K_CONST(S_EPS, C, K_AT(t, OPT_EPS), py[OPT_EPS]);
	if (cfg.v == OPT_SGD) {
		K_CONST(S_NEG_LR, C, K_AT(t, OPT_NEG_LR), py[OPT_NEG_LR]);
		K_CONST(S_WD, C, K_AT(t, OPT_WD), py[OPT_WD]);
		K_CONST(S_MOMENTUM, C, K_AT(t, OPT_MU), py[OPT_MU]);
		return;
	}
	K_CONST(S_DECAY_FACTOR, C, K_AT(t, OPT_DECAY_F), py[OPT_DECAY_F]);
	K_CONST(S_NEG_LR_WD, C, K_AT(t, OPT_NEG_LR_WD), py[OPT_NEG_LR_WD]);
	K_CONST(S_LERP_W, C, K_AT(t, OPT_LERP_W), py[OPT_LERP_W]);
	if (!(cfg.flags & OPT_F_LERP_SMALL)) {
		K_FILL(K_AT(t, OPT_ONE), 1, 1);
		K_OP2(S_LERP_W, SUB, C, K_AT(t, OPT_LERP_W), K_AT(t, OPT_ONE), K_AT(t, OPT_LERP_W),
		      0);
	}
	K_CONST(S_BETA2, C, K_AT(t, OPT_BETA2), py[OPT_BETA2]);
	K_CONST(S_ONE_MINUS_BETA2, C, K_AT(t, OPT_OM_BETA2), py[OPT_OM_BETA2]);
}

/* step s's scalars (AdamW's): −step_size and sqrt(bias_correction2) */
K_FN void k_opt_step_consts(k_ctx kc, k_opt_cfg cfg, k_fmt C, const double *py, unsigned s, k_vec t)
{
	if (cfg.v == OPT_SGD)
		return;
	py += OPT_NPY + 2 * (size_t)(s - 1);
	K_CONST(S_STEP_SIZE, C, K_AT(t, OPT_NEG_SS), py[0]);
	K_CONST(S_BC2_SQRT, C, K_AT(t, OPT_BC2S), py[1]);
}

/* a store of the weights: the policy's rounding, or SR in adamw_sr */
#define K_OPT_STORE_W(step)                                                                        \
	do {                                                                                       \
		if (cfg.v == OPT_ADAMW_SR)                                                         \
			K_MAP1_SR(step, S, r.w, r.w, seed, n, e);                                  \
		else                                                                               \
			K_MAP1(step, CVT, S, r.w, r.w, n, e);                                      \
	} while (0)

/* torch/optim/sgd.py _single_tensor_sgd: g = g + wd·w (a new tensor of the
 * gradient's dtype), buf = g at the first step, else buf·μ + g (dampening
 * 0), w = w + (−lr)·buf; r.gc holds the gradient in C */
K_FN void k_sgd_step(k_ctx kc, k_opt_cfg cfg, k_fmt S, k_fmt C, k_fmt G, k_fmt T, unsigned s,
                     k_opt_refs r, k_vec t, size_t n, uint64_t e)
{
	k_ref gs = r.g; /* the gradient as stored */
	if (cfg.flags & OPT_F_WD) {
		K_MAP1(S_W_C, CVT, C, r.wc, r.w, n, e);
		K_MAP2(S_WD_MUL, MUL, C, r.d, K_AT(t, OPT_WD), r.wc, n, e);
		K_MAP2(S_WD_ADD, ADD, C, r.d, r.gc, r.d, n, e);
		K_MAP1(S_WD_STORE, CVT, G, r.d, r.d, n, e);
		K_MAP1(S_WD_C, CVT, C, r.gc, r.d, n, e);
		gs = r.d;
	}
	if (cfg.flags & OPT_F_MOMENTUM) {
		if (s == 1) {
			K_MAP1(S_BUF_INIT, CVT, T, r.m, gs, n, e);
		} else {
			K_MAP1(S_M_C, CVT, C, r.xc, r.m, n, e);
			K_MAP2(S_BUF_MUL, MUL, C, r.m, r.xc, K_AT(t, OPT_MU), n, e);
			K_MAP1(S_BUF_MUL_STORE, CVT, T, r.m, r.m, n, e);
			K_MAP1(S_M_C2, CVT, C, r.xc, r.m, n, e);
			K_MAP2(S_BUF_ADD, ADD, C, r.m, r.xc, r.gc, n, e);
			K_MAP1(S_BUF_STORE, CVT, T, r.m, r.m, n, e);
		}
		K_MAP1(S_M_C3, CVT, C, r.gc, r.m, n, e); /* the step's direction */
	}
	K_MAP2(S_LR_MUL, MUL, C, r.a, K_AT(t, OPT_NEG_LR), r.gc, n, e);
	K_MAP1(S_W_C2, CVT, C, r.wc, r.w, n, e);
	K_MAP2(S_UPDATE, ADD, C, r.w, r.wc, r.a, n, e);
	K_MAP1(S_STORE, CVT, S, r.w, r.w, n, e);
}

/* torch/optim/adamw.py _single_tensor_adamw, from m = lerp(m, g, 1 − β1) to
 * the increment a = ((−step_size)·m)/denom, denom = (sqrt(v)/sqrt(bc2)) +
 * eps, each a tensor of v's dtype unless fused; r.gc holds the gradient
 * in C */
K_FN void k_adam_moments(k_ctx kc, k_opt_cfg cfg, k_fmt C, k_fmt T, k_opt_refs r, k_vec t, size_t n,
                         uint64_t e)
{
	int stored = !(cfg.flags & OPT_F_FUSED); /* fused: denom stays in C */
	/* m = lerp(m, g, 1 − β1) */
	K_MAP1(S_M_C, CVT, C, r.xc, r.m, n, e);
	K_MAP2(S_LERP_SUB, SUB, C, r.d, r.gc, r.xc, n, e);
	K_MAP2(S_LERP_MUL, MUL, C, r.d, K_AT(t, OPT_LERP_W), r.d, n, e);
	if (cfg.flags & OPT_F_LERP_SMALL)
		K_MAP2(S_LERP_ADD, ADD, C, r.m, r.xc, r.d, n, e);
	else
		K_MAP2(S_LERP_ADD, SUB, C, r.m, r.gc, r.d, n, e);
	K_MAP1(S_M_STORE, CVT, T, r.m, r.m, n, e);
	/* v = v·β2, then v + ((1 − β2)·g)·g */
	K_MAP1(S_V_C, CVT, C, r.xc, r.v, n, e);
	K_MAP2(S_V_MUL, MUL, C, r.v, r.xc, K_AT(t, OPT_BETA2), n, e);
	K_MAP1(S_V_MUL_STORE, CVT, T, r.v, r.v, n, e);
	K_MAP1(S_V_C2, CVT, C, r.xc, r.v, n, e);
	K_MAP2(S_G2_SCALE, MUL, C, r.d, K_AT(t, OPT_OM_BETA2), r.gc, n, e);
	K_MAP2(S_G2, MUL, C, r.d, r.d, r.gc, n, e);
	K_MAP2(S_V_ADD, ADD, C, r.v, r.xc, r.d, n, e);
	K_MAP1(S_V_STORE, CVT, T, r.v, r.v, n, e);
	/* denom = (sqrt(v) / sqrt(bc2)) + eps */
	K_MAP1(S_V_C3, CVT, C, r.xc, r.v, n, e);
	K_MAP1(S_SQRT, SQRT, C, r.d, r.xc, n, e);
	if (stored)
		K_MAP1(S_SQRT_STORE, CVT, T, r.d, r.d, n, e);
	K_MAP1(S_D_C, CVT, C, r.d, r.d, n, e);
	K_MAP2(S_BC2_DIV, DIV, C, r.d, r.d, K_AT(t, OPT_BC2S), n, e);
	if (stored)
		K_MAP1(S_BC2_STORE, CVT, T, r.d, r.d, n, e);
	K_MAP1(S_D_C2, CVT, C, r.d, r.d, n, e);
	K_MAP2(S_ADD_EPS, ADD, C, r.d, r.d, K_AT(t, OPT_EPS), n, e);
	if (stored)
		K_MAP1(S_DENOM_STORE, CVT, T, r.d, r.d, n, e);
	K_MAP1(S_D_C3, CVT, C, r.d, r.d, n, e);
	/* addcdiv's increment: a = ((−step_size)·m)/denom */
	K_MAP1(S_M_C2, CVT, C, r.xc, r.m, n, e);
	K_MAP2(S_STEP_MUL, MUL, C, r.a, K_AT(t, OPT_NEG_SS), r.xc, n, e);
	K_MAP2(S_STEP_DIV, DIV, C, r.a, r.a, r.d, n, e);
}

/* AdamW's step: w = w·(1 − lr·wd) stored (adamw_kahan: folded into the
 * compensated increment instead), the moments and increment a, then
 * w = w + a; adamw_kahan: u = w·(−lr·wd) + a, c = c + u, w' = w + c,
 * c = c + (w − w'), the compensation stored in S like w; adamw_sr: both
 * stores of w by SR under seed */
K_FN void k_adamw_step(k_ctx kc, k_opt_cfg cfg, k_fmt S, k_fmt C, k_fmt T, k_opt_refs r, k_vec t,
                       uint64_t seed, size_t n, uint64_t e)
{
	if ((cfg.flags & OPT_F_WD) && cfg.v != OPT_ADAMW_KAHAN) {
		K_MAP1(S_W_C, CVT, C, r.wc, r.w, n, e);
		K_MAP2(S_DECAY, MUL, C, r.w, r.wc, K_AT(t, OPT_DECAY_F), n, e);
		K_OPT_STORE_W(S_DECAY_STORE);
	}
	k_adam_moments(kc, cfg, C, T, r, t, n, e);
	K_MAP1(S_W_C2, CVT, C, r.wc, r.w, n, e);
	if (cfg.v != OPT_ADAMW_KAHAN) {
		K_MAP2(S_UPDATE, ADD, C, r.w, r.wc, r.a, n, e);
		K_OPT_STORE_W(S_STORE);
		return;
	}
	if (cfg.flags & OPT_F_WD) {
		K_MAP2(S_KAHAN_DECAY, MUL, C, r.u, r.wc, K_AT(t, OPT_NEG_LR_WD), n, e);
		K_MAP2(S_KAHAN_INC, ADD, C, r.u, r.u, r.a, n, e);
	} else {
		K_COPY(r.u, r.a, n);
	}
	K_MAP1(S_C_C, CVT, C, r.xc, r.c, n, e);
	K_MAP2(S_COMP_ADD, ADD, C, r.c, r.xc, r.u, n, e);
	K_MAP1(S_COMP_STORE, CVT, S, r.c, r.c, n, e);
	K_MAP1(S_C_C2, CVT, C, r.xc, r.c, n, e);
	K_MAP2(S_UPDATE, ADD, C, r.w, r.wc, r.xc, n, e);
	K_MAP1(S_STORE, CVT, S, r.w, r.w, n, e);
	K_MAP1(S_W_C3, CVT, C, r.d, r.w, n, e);
	K_MAP2(S_COMP_DIFF, SUB, C, r.u, r.wc, r.d, n, e);
	K_MAP2(S_COMP_FIX, ADD, C, r.c, r.xc, r.u, n, e);
	K_MAP1(S_COMP_FIX_STORE, CVT, S, r.c, r.c, n, e);
}
#undef K_OPT_STORE_W

/* step s (from 1) of n elements whose first is element e of the step's
 * (SR keys, the first failing operation): r.g holds their gradients as
 * stored in G; t after k_opt_consts and k_opt_step_consts */
K_FN void k_opt_step(k_ctx kc, k_opt_cfg cfg, k_fmt S, k_fmt C, k_fmt G, k_fmt T, unsigned s,
                     k_opt_refs r, k_vec t, uint64_t seed, size_t n, uint64_t e)
{
	K_MAP1(S_GRAD_C, CVT, C, r.gc, r.g, n, e);
	if (cfg.v == OPT_SGD)
		k_sgd_step(kc, cfg, S, C, G, T, s, r, t, n, e);
	else
		k_adamw_step(kc, cfg, S, C, T, r, t, seed, n, e);
}

#endif
