"""nanmap.quant against `nanmap quant --csv --out` on the same .npy: the
dequantised values and codes bit for bit, the statistics to the CLI's
printed digits."""

import csv
import io
import math
import os

import numpy as np
import pytest

import nanmap

SEED = int(os.environ.get("NANMAP_SEED", "20261202"))
RECIPES = ["nvfp4", "mxfp8", "mxfp4", "mxfp6:e3m2", "deepseek", "tensor", "mxfp8:e5m2"]


def tensor(rows=8, cols=64, seed=SEED):
    print("seed %d (NANMAP_SEED)" % seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-6, 6, (rows, 1)))
    x[1, 3] = 0.0
    x[2, 5] *= 1e4
    return x.astype(np.float32)


def close(cli_text, value):
    """The CLI prints reals to a few digits: the same number at that precision."""
    if cli_text in ("inf", "-inf", "nan"):
        return cli_text == repr(float(value)) or (cli_text == "nan" and math.isnan(value))
    c = float(cli_text)
    return c == value or abs(c - value) <= 1e-5 * max(abs(c), abs(value))


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("role,colwise", [("act", False), ("weight", False), ("grad", True)])
def test_quant_matches_cli(cli, tmp_path, recipe, role, colwise):
    x = tensor()
    p, deq, codes = tmp_path / "x.npy", tmp_path / "deq.npy", tmp_path / "codes.npy"
    np.save(p, x)
    opts = ["--recipe", recipe, "--input", p, "--role", role, "--seed", 3, "--csv"]
    if colwise:
        opts.append("--colwise")
    row = list(csv.DictReader(io.StringIO(cli("quant", *opts, "--out", deq))))[0]
    cli("quant", *opts, "--out", codes, "--encodings")
    q = nanmap.quant(x, recipe, role=role, colwise=colwise, seed=3)
    want = np.load(deq)
    assert np.array_equal(q.values, want, equal_nan=True)
    assert np.array_equal(np.signbit(q.values), np.signbit(want))
    assert np.array_equal(q.codes.astype(np.int64), np.load(codes).astype(np.int64))
    for k in ("n", "saturated", "flushed", "lost", "within", "nonfinite_out", "nan_in",
              "inf_in", "blocks"):
        assert int(row[k]) == q.stats[k], k
    for k in ("amax", "sqnr_db", "max_rel", "mean_rel", "bias", "bias_se"):
        assert close(row[k], q.stats[k]), "%s: cli %s python %r" % (k, row[k], q.stats[k])
    for k, cn in (("zero_scale", "zero_scales"), ("nan_scale", "nan_scales"),
                  ("inf_scale", "inf_scales")):
        assert int(row[cn]) == q.stats[k]


def test_quant_shapes_and_scales():
    x = tensor(4, 64)
    q = nanmap.quant(x, "mxfp8")
    assert q.codes.shape == x.shape and q.codes.dtype == np.uint8
    assert q.block == (1, 32) and q.scales.shape == (4, 2)
    assert q.format == "e4m3" and q.scale_format == "e8m0"
    # the dequantised value is q · d exactly
    assert np.array_equal(q.values, q.q * np.repeat(q.scales, 32, axis=1))
    assert q.stats["n"] == x.size and q.stats["blocks"] == 8


def test_quant_errors():
    with pytest.raises(nanmap.NanmapError, match="nvfp5"):
        nanmap.quant([1.0], "nvfp5")
    with pytest.raises(nanmap.NanmapError, match="role"):
        nanmap.quant([1.0], "nvfp4", role="bias")
