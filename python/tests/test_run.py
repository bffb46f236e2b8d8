"""nanmap.run against `nanmap run --csv` on the same .npy input: outputs bit
for bit, status, flag counts, the first failing op, the errors."""

import collections
import csv
import io
import math
import os

import numpy as np
import pytest

import nanmap

SEED = int(os.environ.get("NANMAP_SEED", "20261202"))

CASES = [
    ("softmax_ce", "naive", "storage=fp16", {}),
    ("softmax_ce", "lse", "storage=bf16,compute=fp32", {}),
    ("layernorm", None, "storage=fp16,compute=fp32", {}),
    ("accum", "sum:seq", "storage=e4m3,compute=fp32", {}),
    ("rmsnorm", None, "storage=e5m2,compute=fp16", {"eps": 1e-3}),
    ("softmax_ce", None, "storage=e4m3,compute=fp32,scale=mxfp8", {}),
]


def parse(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    d = collections.defaultdict(dict)
    for r in rows:
        d[(r["backend"], r["kind"])][r["key"]] = r["value"]
    return d


def num(s):
    return float(s) if s not in ("inf", "-inf", "nan") else float(s)


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


@pytest.mark.parametrize("kernel,variant,policy,params", CASES)
@pytest.mark.parametrize("backend", ["fast", "exact"])
def test_run_matches_cli(cli, tmp_path, kernel, variant, policy, params, backend):
    print("seed %d (NANMAP_SEED)" % SEED)
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((3, 32)) * 8
    p = tmp_path / "x.npy"
    np.save(p, x)
    args = ["run", kernel, "--policy", policy, "--input", p, "--backend", backend, "--seed", 4,
            "--csv"]
    if variant:
        args += ["--variant", variant]
    for k, v in params.items():
        args += ["--param", "%s=%r" % (k, v)]
    d = parse(cli(*args))
    r = nanmap.run(kernel, x, policy=policy, variant=variant, params=params, backend=backend,
                   seed=4)
    assert r.status == d[(backend, "status")]["status"]
    bits = d[(backend, "bits")]
    for name, b in r.bits.items():
        assert [int(bits["%s[%d]" % (name, j)], 16) for j in range(b.size)] == b.tolist(), name
        assert d[(backend, "meta")][name + ".format"] == r.formats[name]
    met = d[(backend, "metric")]
    for name, e in r.errors.items():
        for k, v in e.items():
            key = "%s.%s" % (name, k)
            if key in met:
                assert same(num(met[key]), v), "%s: cli %s python %r" % (key, met[key], v)
    ops = d[(backend, "ops")]
    assert {k: int(v) for k, v in ops.items()} == {k: v["ops"] for k, v in r.flags.items()}
    flags = {k: int(v) for k, v in d[(backend, "flags")].items()}
    assert flags == {"%s.%s" % (o, f): c for o, fl in r.flags.items()
                     for f, c in fl.items() if f != "ops"}
    first = d.get((backend, "first"))
    if first:
        assert r.first == {"op": first["op"], "step": first["step"],
                           "index": int(first["index"]), "flags": first["flags"].split("|")}
    else:
        assert r.first is None
    stored = d.get((backend, "stored"), {})
    for k, v in stored.items():
        assert r.stored[k] == int(v)


def test_run_readme_example():
    """The README's tour: fp16 exp overflows and the naive softmax turns NaN."""
    r = nanmap.run("softmax_ce", [11.09375, 0.0], policy="storage=fp16", variant="naive")
    assert r.status == "nan"
    assert r.first == {"op": "exp", "step": "exp", "index": 0, "flags": ["overflow"]}
    assert r.bits["loss"].tolist() == [0x7c00]
    assert r.flags["exp"] == {"ops": 2, "overflow": 1, "inexact": 1}
    assert math.isinf(r.errors["loss"]["max_ulp"])
    assert nanmap.run("softmax_ce", [11.09375, 0.0], policy="storage=fp16", variant="lse",
                      truth=False).errors == {}


def test_run_errors():
    with pytest.raises(nanmap.NanmapError, match="nosuch"):
        nanmap.run("nosuch", [1.0], policy="storage=fp16")
    with pytest.raises(nanmap.NanmapError):
        nanmap.run("softmax_ce", [1.0, 2.0], policy="storage=fp99")
    with pytest.raises(nanmap.NanmapError):
        nanmap.run("softmax_ce", [1.0, 2.0], policy="storage=fp16", variant="nosuch")
    with pytest.raises(nanmap.NanmapError, match="unknown parameter 'foo' for softmax_ce"):
        nanmap.run("softmax_ce", [1.0, 2.0], policy="storage=fp16", params={"foo": 1})
    with pytest.raises(nanmap.NanmapError, match="rmsnorm: eps=-1 must be finite"):
        nanmap.run("rmsnorm", [1.0, 2.0], policy="storage=fp16", params={"eps": -1})
    assert "softmax_ce" in nanmap.kernels()
