"""nanmap.round on a 2^20 array against the bare C call, in one run.

The C call is emu_a_cvt itself through ctypes on buffers allocated once (no
Python per element, nothing allocated): what a C program calling the
library pays. nanmap.round adds what the package does around that call:
checking and converting the input, allocating the values and flags, and
building the result. .bits is a second C call (emu_round_array), timed
apart. Best of REPS (default 7) for each; prints CSV, the ratio last.

    /usr/bin/python3 python/bench_round.py [--reps N] [--n N]
"""

import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nanmap  # noqa: E402
from nanmap import _lib as L  # noqa: E402


def best(fn, reps):
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--n", type=int, default=1 << 20)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    # "narrow" as bench/bench.c draws it: [2^-14, 2), exponent uniform
    x = (1 + rng.random(a.n)) * np.exp2(-rng.integers(0, 15, a.n))
    print("fmt,mode,n,c_ms,python_ms,ratio,python_with_bits_ms,ratio_with_bits")
    for fmt in ("bf16", "e4m3"):
        for mode in ("rne", "sr"):
            f = nanmap._format(fmt)
            env = nanmap._env(mode, False, False, False, 1)
            dst = np.empty(a.n)
            fl = np.empty(a.n, np.uint8)
            xp, dp, fp = x.ctypes.data_as(L.c_dp), dst.ctypes.data_as(L.c_dp), \
                fl.ctypes.data_as(L.c_u8p)

            def c_call():
                L.emu_a_cvt(ctypes.byref(f), dp, xp, 1, a.n, ctypes.byref(env), fp)

            def py_call():
                nanmap.round(x, fmt, mode=mode, seed=1)

            def py_bits():
                nanmap.round(x, fmt, mode=mode, seed=1).bits

            c = best(c_call, a.reps)
            p = best(py_call, a.reps)
            pb = best(py_bits, a.reps)
            r = nanmap.round(x, fmt, mode=mode, seed=1)
            assert np.array_equal(r.values, dst) and np.array_equal(r.flags.elements, fl)
            print("%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f" % (fmt, mode, a.n, c * 1e3, p * 1e3, p / c,
                                                         pb * 1e3, pb / c))


if __name__ == "__main__":
    main()
