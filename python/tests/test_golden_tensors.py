"""nanmap.golden's case.tensors(): every input a case's kernel consumes (x,
and dy, target, w, grad, ... as the kernel draws them), from the library.
What a kernel developer does with them is run a kernel on them and check
every output; here the kernel is nanmap's own (nanmap.run with the tensors
handed over, under another seed so that nothing is re-derived from it), on
every case of every golden file, bit for bit; and the tensors are the files
`nanmap golden export --out` writes."""

import glob
import os
import subprocess

import numpy as np
import pytest

import nanmap
import nanmap.golden

from conftest import CLI, ROOT

FILES = sorted(glob.glob(os.path.join(ROOT, "golden", "*.golden")))


def _seed_rounds(case):
    """Stochastic rounding keyed by the case's seed (a recipe's SR role):
    only that seed reproduces it."""
    return case.kernel == "quant" or "round=sr" in case.policy


def reproduce(case, encodings=False):
    """Run case's kernel on its exported tensors; the outputs that differ."""
    t = case.tensors(encodings=encodings)
    fmts = case.formats()
    vals = {}
    for role, a in t.items():
        if encodings and a.dtype != np.float64 and fmts[role] != "index":
            a = nanmap._decode(nanmap._format(fmts[role]), a)  # the stored values
        vals[role] = a
    x = vals.pop("x")
    seed = case.seed if _seed_rounds(case) or len(vals) == 0 else case.seed ^ 0x5eed
    r = nanmap.run(case.kernel, x, policy=case.policy, variant=case.variant, backend="fast",
                   seed=seed, truth=False, tensors=vals)
    bad = []
    for name, out in case.outputs.items():
        rep = nanmap.golden.compare(out, r.bits[name], nan_sign="strict")
        if rep.mismatched or not np.array_equal(r.bits[name].astype(np.uint32),
                                                out.expected.astype(np.uint32)):
            bad.append(name)
    return bad, len(case.outputs)


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_every_case_reproduces_from_its_tensors(path):
    g = nanmap.golden.load(path)
    nout = 0
    for case in g:
        bad, n = reproduce(case)
        assert not bad, "%s: %s differ from the records" % (case.id, " ".join(bad))
        nout += n
    assert nout == len(g.outputs) and len(g) > 0


def test_encodings_reproduce_too():
    """The stored encodings, decoded, are what the kernel stored: one case
    of every kernel and variant."""
    seen = set()
    for path in FILES:
        for case in nanmap.golden.load(path):
            key = (case.kernel, case.variant)
            if key in seen or ("fp16-fp32" not in case.id and case.kernel != "quant"):
                continue
            seen.add(key)
            bad, _ = reproduce(case, encodings=True)
            assert not bad, "%s from its encodings: %s differ" % (case.id, " ".join(bad))
    assert len(seen) >= 30


def test_backward_case_tensors():
    g = nanmap.golden.load(os.path.join(ROOT, "golden", "layernorm.golden"))
    case = g["layernorm.twopass.fp16-fp32.safe"]
    t = case.tensors()
    assert list(t) == ["x", "dy"] and case.formats() == {"x": "fp16", "dy": "fp16"}
    assert t["dy"].shape == (2, 16) and set(np.unique(t["dy"])) == {-1.0, 1.0}
    e = case.tensors(encodings=True)
    assert e["dy"].dtype == np.uint16 and set(np.unique(e["dy"])) == {0x3c00, 0xbc00}
    assert np.array_equal(case.inputs(), t["x"])
    # dy is what made the records: x alone under another seed misses dx
    r = nanmap.run("layernorm", t["x"], policy=case.policy, variant="twopass",
                   seed=case.seed ^ 1, truth=False)
    assert not np.array_equal(r.bits["dx"], case.expected("dx"))
    g = nanmap.golden.load(os.path.join(ROOT, "golden", "softmax_ce.golden"))
    t = g["softmax_ce.naive.fp16-fp16.safe"].tensors()
    assert t["target"].dtype == np.uint32 and list(t["target"]) == [0, 1]


def test_tensors_match_golden_export(tmp_path):
    if not os.access(CLI, os.X_OK):
        pytest.skip("%s not built (run make)" % CLI)
    case_id = "backward.maxsub.bf16-fp32.safe"
    case = nanmap.golden.load(os.path.join(ROOT, "golden", "backward.golden"))[case_id]
    for enc in (False, True):
        out = tmp_path / ("enc" if enc else "val")
        cmd = [CLI, "golden", "export", case_id, "--out", str(out)] + (["--encodings"] if enc
                                                                      else [])
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        t = case.tensors(encodings=enc)
        man = [ln.split() for ln in (out / "inputs.txt").read_text().splitlines()
               if not ln.startswith("#")]
        assert [m[0] for m in man] == list(t) == ["x", "w", "target"]
        for role, a in t.items():
            f = np.load(out / (role + ".npy"))
            assert f.dtype == a.dtype and f.shape == a.shape and np.array_equal(f, a), role


def test_run_refuses_a_wrong_tensor():
    x = np.zeros((2, 16))
    with pytest.raises(nanmap.NanmapError, match="tensor dy is 3 x 16"):
        nanmap.run("layernorm", x, policy="storage=fp16", tensors={"dy": np.ones((3, 16))},
                   truth=False)
    with pytest.raises(nanmap.NanmapError, match="no tensor 'w'"):
        nanmap.run("layernorm", x, policy="storage=fp16", tensors={"w": np.ones((2, 16))},
                   truth=False)
