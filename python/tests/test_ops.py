"""nanmap's array arithmetic (emu_a_op) against `nanmap op --csv` and
against the MPFR backend (emu_mp_apply) element by element."""

import csv
import ctypes
import io
import os

import numpy as np
import pytest

import nanmap
from nanmap import _lib as L

FLAG_BITS = {"invalid": 1, "divbyzero": 2, "overflow": 4, "underflow": 8, "inexact": 16}
SEED = int(os.environ.get("NANMAP_SEED", "20261202"))
OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1, "exp": 1, "log": 1}


def operands(fmt, arity, n, seed=SEED):
    """Random encodings of fmt, every one of them for 8-bit formats."""
    rng = np.random.default_rng(seed)
    w = nanmap.format_info(fmt)["bits"]
    return [rng.integers(0, 1 << w, n).astype(np.uint32) for _ in range(arity)]


def mpfr_op(name, fmt, args, mode="rne", seed=0):
    f = nanmap._format(fmt)
    o = L.emu_op_by_name(name.encode())
    env = nanmap._env(mode, False, False, False, seed)
    bits = np.empty(args[0].shape, np.uint32)
    flags = np.empty(args[0].shape, np.uint8)
    for i in range(args[0].size):
        env.index = i
        a = (ctypes.c_uint32 * 3)(*[int(x[i]) for x in args])
        r = L.emu_mp_apply(o, ctypes.byref(f), ctypes.byref(f), a, ctypes.byref(env))
        bits[i], flags[i] = r.bits, r.flags
    return bits, flags


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "e4m3", "e5m2"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_match_mpfr(fmt, name):
    print("seed %d (NANMAP_SEED)" % SEED)
    args = operands(fmt, OPS[name], 400)
    r = nanmap.op(name, *args, fmt=fmt, bits=True)
    bits, flags = mpfr_op(name, fmt, args)
    bad = np.flatnonzero(r.bits != bits)
    assert bad.size == 0, "%s %s %s: python 0x%x mpfr 0x%x" % (
        fmt, name, [hex(int(a[bad[0]])) for a in args], r.bits[bad[0]], bits[bad[0]])
    assert np.array_equal(r.flags.elements, flags)


@pytest.mark.parametrize("mode", ["rtz", "up", "sr"])
def test_modes_match_mpfr(mode):
    args = operands("bf16", 2, 300)
    r = nanmap.mul(*args, fmt="bf16", bits=True, mode=mode, seed=5)
    bits, flags = mpfr_op("mul", "bf16", args, mode=mode, seed=5)
    assert np.array_equal(r.bits, bits) and np.array_equal(r.flags.elements, flags)


@pytest.mark.parametrize("name", ["add", "div", "fma", "exp"])
def test_ops_match_cli(cli, name):
    args = operands("e4m3", OPS[name], 300, seed=SEED + 1)
    r = nanmap.op(name, *args, fmt="e4m3", bits=True)
    lines = "".join(" ".join("0x%02x" % int(a[i]) for a in args) + "\n" for i in range(300))
    rows = list(csv.DictReader(io.StringIO(cli("op", name, "-f", "e4m3", "--bits", "--csv", "-",
                                               stdin=lines))))
    assert [int(row["bits"], 16) for row in rows] == r.bits.tolist()
    assert [sum(FLAG_BITS[f] for f in row["flags"].split("|") if f != "-")
            for row in rows] == r.flags.elements.tolist()


def test_values_broadcast():
    r = nanmap.add(np.array([[1.0], [2.0]]), np.array([0.5, 0.25, 1024.0]), fmt="fp16")
    assert r.values.shape == (2, 3)
    assert r.values.tolist() == [[1.5, 1.25, 1025.0], [2.5, 2.25, 1026.0]]
    r = nanmap.exp(np.array([11.0859375, 11.09375]), fmt="fp16")
    assert r.bits.tolist() == [0x7bf7, 0x7c00]
    assert r.flags.counts["overflow"] == 1 and r.flags.first_bad == 1


def test_inexact_operand_is_refused():
    with pytest.raises(nanmap.NanmapError, match="not a value of fp16"):
        nanmap.add([0.1], [1.0], fmt="fp16")
    with pytest.raises(nanmap.NanmapError, match="does not fit"):
        nanmap.add([0x100], [0], fmt="e4m3", bits=True)


def test_nan_sign_kept_in_encodings():
    r = nanmap.mul([-448.0], [2.0], fmt="e4m3")
    assert r.bits.tolist() == [0xff]
