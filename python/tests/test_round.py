"""nanmap.round against `nanmap round --csv` on the same inputs, and
against the MPFR backend (emu_mp_from_double) element by element: bits
and flags, every mode, sat and ftz."""

import csv
import io
import os

import numpy as np
import pytest

import nanmap

FORMATS = ["fp16", "bf16", "e4m3", "e5m2", "e4m3fnuz", "e2m1", "e3m2", "e8m0", "tf32"]
MODES = ["rne", "rtz", "up", "down", "rna", "sr"]
FLAG_BITS = {"invalid": 1, "divbyzero": 2, "overflow": 4, "underflow": 8, "inexact": 16}
SEED = int(os.environ.get("NANMAP_SEED", "20261202"))


def inputs(n=600, seed=SEED):
    """Random doubles over the formats' ranges, the specials, and exact
    midpoints of fp16 and e4m3 (where rounding through decimal would go
    wrong)."""
    print("seed %d (NANMAP_SEED)" % seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n))
    mid16 = (1 + (2 * rng.integers(0, 1024, 40) + 1) / 2048.0) * np.exp2(rng.integers(-24, 16, 40))
    mid8 = (1 + (2 * rng.integers(0, 8, 20) + 1) / 16.0) * np.exp2(rng.integers(-9, 9, 20))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0, 65504.0,
                        65520.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-149, 1e300, -1e-300])
    return np.concatenate([x, mid16, -mid8, special])


def cli_round(cli, fmt, x, *opts):
    text = "".join(float(v).hex() + "\n" if np.isfinite(v) else
                   ("nan\n" if np.isnan(v) else ("inf\n" if v > 0 else "-inf\n")) for v in x)
    out = cli("round", "-f", fmt, "--csv", *opts, "-", stdin=text)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(x)
    bits = np.array([int(r["bits"], 16) for r in rows])
    flags = np.array([sum(FLAG_BITS[f] for f in r["flags"].split("|") if f != "-")
                      for r in rows])
    return bits, flags


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_matches_cli(cli, fmt):
    x = inputs()
    r = nanmap.round(x, fmt)
    bits, flags = cli_round(cli, fmt, x)
    assert r.bits.dtype == (np.uint8 if nanmap.format_info(fmt)["bits"] <= 8 else
                            np.uint16 if nanmap.format_info(fmt)["bits"] <= 16 else np.uint32)
    bad = np.flatnonzero(r.bits != bits)
    assert bad.size == 0, "%s: x=%r python 0x%x cli 0x%x" % (fmt, x[bad[0]], r.bits[bad[0]],
                                                            bits[bad[0]])
    assert np.array_equal(r.flags.elements, flags)
    for k, b in FLAG_BITS.items():
        assert r.flags.counts[k] == int(np.count_nonzero(flags & b))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("opts", [(), ("--sat",), ("--ftz",)])
def test_round_modes_match_cli(cli, mode, opts):
    x = inputs(200)
    r = nanmap.round(x, "e5m2", mode=mode, sat="--sat" in opts, ftz="--ftz" in opts, seed=7)
    bits, flags = cli_round(cli, "e5m2", x, "-r", mode, "--seed", "7", *opts)
    assert np.array_equal(r.bits, bits)
    assert np.array_equal(r.flags.elements, flags)


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "e4m3", "e2m1"])
@pytest.mark.parametrize("mode", MODES)
def test_round_matches_mpfr(fmt, mode):
    """The fast backend through the array API against MPFR in the format."""
    x = inputs(300)
    r = nanmap.round(x, fmt, mode=mode, seed=11)
    bits, flags = nanmap.round_exact(x, fmt, mode=mode, seed=11)
    assert np.array_equal(r.bits, bits)
    assert np.array_equal(r.flags.elements, flags)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_inputs_match_cli_npy(cli, tmp_path, dtype):
    """float32 and float16 arrays: the same numbers as the CLI reads from .npy."""
    with np.errstate(over="ignore"):  # 1e300 is inf in float16 and float32
        x = inputs(300)[:360].astype(dtype).reshape(20, -1)
    p = tmp_path / "x.npy"
    np.save(p, x)
    r = nanmap.round(x, "e4m3")
    assert r.bits.shape == x.shape and r.values.shape == x.shape
    rows = list(csv.DictReader(io.StringIO(cli("round", "-f", "e4m3", "--csv", "--input", p))))
    assert [int(row["bits"], 16) for row in rows] == r.bits.ravel().tolist()


def test_values_are_the_decoded_bits():
    x = inputs(300)
    r = nanmap.round(x, "bf16")
    back = nanmap.op("max", r.bits, r.bits, fmt="bf16", bits=True)
    ok = ~np.isnan(r.values)
    assert np.array_equal(back.values[ok], r.values[ok])
    assert np.array_equal(np.signbit(back.values[ok]), np.signbit(r.values[ok]))


def test_formats_lists_the_table():
    names = [f["name"] for f in nanmap.formats()]
    for n in ("fp16", "bf16", "e4m3", "e5m2", "e2m1", "e8m0"):
        assert n in names
    f = nanmap.format_info("e4m3")
    assert (f["bits"], f["p"], f["max"], f["nan"]) == (8, 4, 448.0, "fn")
    assert nanmap.format_info("p=5,emax=15")["p"] == 5


def test_errors_carry_the_library_message():
    with pytest.raises(nanmap.NanmapError, match="fp17"):
        nanmap.round([1.0], "fp17")
    with pytest.raises(nanmap.NanmapError, match="rounding mode"):
        nanmap.round([1.0], "fp16", mode="nearest")
    with pytest.raises(TypeError):
        nanmap.round(np.array(["a"]), "fp16")


def test_bits_belong_to_the_result():
    """.bits is read later than round ran: changing the input in between
    must not change them."""
    x = inputs(100)
    want = nanmap.round(x.copy(), "e4m3").bits
    r = nanmap.round(x, "e4m3")
    x[:] = 1.0
    assert np.array_equal(r.bits, want)
