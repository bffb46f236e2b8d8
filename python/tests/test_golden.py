"""nanmap.golden on real golden cases: a kernel run on the case's input
passes check; a changed element fails it with the lines `nanmap check`
prints for the same outputs."""

import os
import subprocess

import numpy as np
import pytest

import nanmap
import nanmap.golden

from conftest import CLI, ROOT

GOLDEN = os.path.join(ROOT, "golden", "softmax_ce.golden")
CASE = "softmax_ce.naive.fp16-fp16.safe"


@pytest.fixture(scope="module")
def g():
    return nanmap.golden.load(GOLDEN)


def run_case(case):
    x = case.inputs()
    assert x.shape == (case.rows, case.cols) and x.dtype == np.float64
    return nanmap.run(case.kernel, x, policy=case.policy, variant=case.variant,
                      backend="exact", seed=case.seed, truth=False)


def test_load_lists_cases(g):
    c = g[CASE]
    assert (c.kernel, c.variant, c.policy) == ("softmax_ce", "naive", "storage=fp16,compute=fp16")
    assert set(c.outputs) == {"loss", "grad"}
    assert c.output("grad").format == "fp16" and c.expected("grad").dtype == np.uint16
    assert len(c.expected("grad")) == c.rows * c.cols


@pytest.mark.parametrize("case_id", [CASE, "softmax_ce.lse.e4m3-fp32.near_overflow",
                                     "softmax_ce.naive.bf16-bf16.near_underflow"])
def test_run_passes_check(g, case_id):
    if case_id not in g.cases:
        pytest.skip("%s: no case %s" % (GOLDEN, case_id))
    case = g[case_id]
    r = run_case(case)
    for name, out in case.outputs.items():
        rep = nanmap.golden.check(out, r.bits[name])
        assert rep.mismatched == 0 and rep.checked == out.n
        # values exact in the format are accepted too, encoded by the library
        nanmap.golden.check(out, r.outputs[name])


class Tensorish:
    """Anything with __array__, as a torch tensor viewed as its bits is."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None):
        return self.a if dtype is None else self.a.astype(dtype)


class DLPackOnly:
    """Only the DLPack protocol, as some array libraries offer it."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_input(g):
    if not hasattr(np, "from_dlpack"):
        pytest.skip("numpy %s has no from_dlpack" % np.__version__)
    out = g[CASE].output("grad")
    nanmap.golden.check(out, DLPackOnly(out.expected))
    bad = out.expected.copy()
    bad[0] ^= 1
    with pytest.raises(AssertionError, match=r"grad\[0\]"):
        nanmap.golden.check(out, DLPackOnly(bad))


def test_mismatch_lists_like_nanmap_check(g, tmp_path):
    case = g[CASE]
    out = case.output("grad")
    bad = case.expected("grad").copy()
    bad[4] += 1
    bad[6] = 0x7e00
    bad[7] ^= 0x8000
    with pytest.raises(AssertionError) as e:
        nanmap.golden.check(out, Tensorish(bad))
    raw = tmp_path / "grad.bin"
    bad.astype("<u2").tofile(raw)
    r = subprocess.run([CLI, "check", "%s:%s/grad" % (GOLDEN, CASE), str(raw)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1, r.stderr
    assert str(e.value) == r.stdout.rstrip("\n")
    rep = nanmap.golden.compare(out, bad, ulp=1)
    assert rep.mismatched == 2 and rep.max_ulp is None
    # a float16 array is the fp16 output's bits, as nanmap check reads '<f2'
    nanmap.golden.check(out, case.expected("grad").view(np.float16))


def test_errors(g, tmp_path):
    case = g[CASE]
    with pytest.raises(nanmap.golden.GoldenError, match="length|expected|32"):
        nanmap.golden.check(case.output("grad"), np.zeros(3, np.uint16))
    with pytest.raises(TypeError):
        nanmap.golden.check(case.output("grad"), np.zeros(32, np.uint64))
    with pytest.raises(nanmap.NanmapError, match="not a value of fp16"):
        nanmap.golden.check(case.output("grad"), np.full(32, 0.1))
    p = tmp_path / "bad.golden"
    p.write_text("not a golden file\n")
    with pytest.raises(nanmap.golden.GoldenError, match="bad.golden"):
        nanmap.golden.load(p)
    with pytest.raises(KeyError, match="outputs"):
        case.output()


def test_every_softmax_ce_case_passes(g):
    """Every case of the file: the input from the case line, the exact
    backend, every output bit for bit."""
    n = 0
    for case in g:
        r = run_case(case)
        for name, out in case.outputs.items():
            nanmap.golden.check(out, r.bits[name])
            n += 1
    assert n == len(g.outputs) and n > 100
