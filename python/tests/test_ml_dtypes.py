"""nanmap against ml_dtypes (the numpy types of JAX, github.com/jax-ml/ml_dtypes)
and numpy's float16: every format both have, as nanmap's built-in and as
custom specs, compared as encodings.

- decode: every encoding, nanmap.decode against ml_dtypes' value of the same
  bits (astype float64), compared as binary64 bits (-0 is not +0); a NaN
  matches any NaN, whatever its sign or payload (NaN by class).
- round: 1,000,000 float64 values rounded to nearest-even, nanmap.round(x,
  fmt) (no saturation) against x.astype(type): every representable value of
  either sign, every midpoint between adjacent representables (and between
  0 and the smallest) with its two binary64 neighbours, the overflow
  boundary (max, the midpoint above it, the next p-bit value) and the
  underflow boundary (the smallest subnormal, half of it, the smallest
  normal) with their neighbours, ±0, ±inf, ±NaN; the rest random,
  log-uniform over the format's range and a little past it, random signs
  (NANMAP_SEED). Encodings are compared, NaN by class.

Where the two differ by design, KNOWN names the inputs and how many must
differ (docs/numerics.md, "ml_dtypes"); any other difference fails:
- float8_e8m0fnu: ml_dtypes converts ±0 to its NaN 0xff; e8m0 has no zero
  and nanmap gives code 0 (2^-127) with underflow|inexact, as for every zero
  result (specialize.h; OCP MX leaves it to the implementation): 2 inputs.
- float6_e2m3fn, float6_e3m2fn, float4_e2m1fn (no NaN): ml_dtypes converts
  a NaN to a zero of the opposite sign (+NaN to -0, -NaN to +0); nanmap
  gives +0 with invalid for both (specialize.h, EMU_NONAN_BITS): 1 input,
  +NaN.
Overflow agrees: both give the NaN (fn, fnuz, e8m0fnu, e5m3fnu) or inf
without saturation, and ±max in the formats without NaN.

The interpreter is tests/python.sh's, the one the other Python tests use.
Where it cannot import ml_dtypes, the ml_dtypes comparison is one skip that
names the interpreter and the import error; numpy's float16 still runs.
"""

import os
import sys
import warnings

import numpy as np
import pytest

import nanmap

SEED = int(os.environ.get("NANMAP_SEED", "20261202"))
N = 1_000_000

try:
    import ml_dtypes
    MLD_SKIP = None
except ImportError as e:
    ml_dtypes = None
    MLD_SKIP = ("ml_dtypes is not importable by %s (%s: %s): install it there, or run "
                "make test PYTHON=<a python with numpy, pytest and ml_dtypes>"
                % (sys.executable, type(e).__name__, e))

# ml_dtypes' type -> the nanmap formats that are the same format: the
# built-in where there is one, and custom specs (emax= and ebits=,bias=)
ML_PAIRS = [
    ("bfloat16", ["bf16", "p=8,emax=127", "p=8,ebits=8,bias=127"]),
    ("float8_e4m3fn", ["e4m3", "p=4,emax=8,nan=fn", "p=4,ebits=4,bias=7,nan=fn"]),
    ("float8_e5m2", ["e5m2", "p=3,emax=15"]),
    ("float8_e4m3fnuz", ["e4m3fnuz", "p=4,emax=7,nan=fnuz"]),
    ("float8_e5m2fnuz", ["e5m2fnuz", "p=3,emax=15,nan=fnuz"]),
    ("float8_e4m3b11fnuz", ["p=4,ebits=4,bias=11,nan=fnuz"]),
    ("float8_e4m3", ["p=4,emax=7"]),
    ("float8_e3m4", ["p=5,emax=3"]),
    ("float6_e2m3fn", ["e2m3", "p=4,emax=2,nan=none"]),
    ("float6_e3m2fn", ["e3m2", "p=3,emax=4,nan=none"]),
    ("float4_e2m1fn", ["e2m1", "p=2,emax=2,nan=none"]),
    ("float8_e8m0fnu", ["e8m0", "p=1,ebits=8,bias=127,unsigned,nozero,nan=fn"]),
    ("float8_e5m3fnu", ["p=4,ebits=5,bias=15,unsigned,nan=fn"]),
]
NUMPY_PAIRS = [("float16", ["fp16", "p=11,emax=15", "p=11,ebits=5,bias=15"])]

_NONAN = ("+NaN: ml_dtypes gives -0 (and +0 for -NaN), nanmap +0 with invalid",
          lambda x: np.isnan(x) & ~np.signbit(x), 1)
# type -> [(the difference, the inputs it covers, how many of them differ)]
KNOWN = {
    "float8_e8m0fnu": [("±0: ml_dtypes gives its NaN 0xff, nanmap code 0 = 2^-127 with "
                        "underflow|inexact", lambda x: x == 0, 2)],
    "float6_e2m3fn": [_NONAN],
    "float6_e3m2fn": [_NONAN],
    "float4_e2m1fn": [_NONAN],
}


def _uint(bits):
    return np.uint8 if bits <= 8 else np.uint16


def inputs(spec, n=N, seed=SEED):
    """The float64 inputs of the rounding comparison (see the top)."""
    f = nanmap.format_info(spec)
    v = nanmap.decode(np.arange(1 << f["bits"]), spec)
    pos = np.unique(v[np.isfinite(v) & (v > 0)])
    grid = np.concatenate([[0.0], pos])  # 0 too where there is none: the underflow tie
    mids = (grid[:-1] + grid[1:]) / 2  # exact: adjacent values of a <= 16-bit format
    ulp_top = np.ldexp(1.0, f["emax"] - f["p"] + 1)
    edges = np.array([f["max"], f["max"] + ulp_top / 2, f["max"] + ulp_top,
                      f["min_subnormal"], f["min_subnormal"] / 2, f["min_normal"]])
    near = np.concatenate([mids, edges])
    near = np.concatenate([near, np.nextafter(near, np.inf), np.nextafter(near, -np.inf)])
    x = np.concatenate([pos, near])
    x = np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]])
    assert x.size < n, "%s: %d structured inputs" % (spec, x.size)
    rng = np.random.default_rng(seed)
    k = n - x.size
    e = rng.integers(f["emin"] - f["p"] - 3, f["emax"] + 4, k)
    r = np.ldexp(1 + rng.random(k), e) * np.where(rng.random(k) < 0.5, -1.0, 1.0)
    return np.concatenate([x, r])


def _bits_of(a, width):
    return a.view(_uint(width)).astype(np.uint32)


def compare(dtype, name, specs):
    """Decode and round every spec against dtype; returns the report lines."""
    lines = []
    for spec in specs:
        f = nanmap.format_info(spec)
        width = f["bits"]
        assert np.dtype(dtype).itemsize == (1 if width <= 8 else 2), (name, spec)

        # every encoding decoded
        enc = np.arange(1 << width).astype(_uint(width))
        with np.errstate(all="ignore"):  # numpy warns on casting bfloat16's NaNs
            mv = enc.view(dtype).astype(np.float64)
        nv = nanmap.decode(enc, spec)
        same = (mv.view(np.uint64) == nv.view(np.uint64)) | (np.isnan(mv) & np.isnan(nv))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, "%s vs %s: %d of %d encodings decode differently, first 0x%x: " \
            "ml_dtypes %r, nanmap %r" % (name, spec, bad.size, enc.size, bad[0], mv[bad[0]],
                                         nv[bad[0]])

        # 1,000,000 roundings
        x = inputs(spec)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ml_dtypes warns on overflow
            m = x.astype(dtype)
        mb = _bits_of(m, width)
        mnan = np.isnan(m.astype(np.float64))
        r = nanmap.round(x, spec)
        nb = r.bits.astype(np.uint32)
        nnan = np.isnan(r.values)
        differ = (mb != nb) & ~(mnan & nnan)
        explained = np.zeros(x.size, dtype=bool)
        notes = []
        for what, covers, count in KNOWN.get(name, []):
            c = covers(x)
            got = int(np.count_nonzero(differ & c))
            assert got == count, "%s vs %s: %s: %d inputs differ, %d expected" % (
                name, spec, what, got, count)
            explained |= c
            notes.append("%d as documented (%s)" % (got, what))
        bad = np.flatnonzero(differ & ~explained)
        assert bad.size == 0, "%s vs %s: %d of %d roundings differ; first: %s" % (
            name, spec, bad.size, x.size, "; ".join(
                "%s -> ml_dtypes 0x%x, nanmap 0x%x" % (float(x[i]).hex(), mb[i], nb[i])
                for i in bad[:5]))
        lines.append("%s vs %s: %d encodings equal; %d roundings, %d equal%s" % (
            name, spec, enc.size, x.size, x.size - int(np.count_nonzero(differ)),
            "; " + "; ".join(notes) if notes else ""))
    for line in lines:
        print(line)
    return lines


@pytest.mark.parametrize("name,specs", NUMPY_PAIRS, ids=[p[0] for p in NUMPY_PAIRS])
def test_numpy(name, specs):
    print("%s, numpy %s" % (sys.executable, np.__version__))
    compare(getattr(np, name), name, specs)


@pytest.mark.parametrize(
    "name,specs", ML_PAIRS if ml_dtypes else [("ml_dtypes", [])],
    ids=[p[0] for p in ML_PAIRS] if ml_dtypes else ["ml_dtypes"])
def test_ml_dtypes(name, specs):
    if ml_dtypes is None:
        pytest.skip(MLD_SKIP)
    if not hasattr(ml_dtypes, name):
        pytest.skip("ml_dtypes %s (%s) has no %s" % (ml_dtypes.__version__, sys.executable,
                                                     name))
    print("%s, numpy %s, ml_dtypes %s" % (sys.executable, np.__version__,
                                          ml_dtypes.__version__))
    compare(getattr(ml_dtypes, name), name, specs)
