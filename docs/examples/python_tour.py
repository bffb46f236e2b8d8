"""A tour of nanmap from Python: quantise a tensor, run softmax_ce under a
precision policy, check a kernel's outputs against a golden case.

    make && /usr/bin/python3 docs/examples/python_tour.py

Run from the repository root (or set NANMAP_LIB to libnanmap.so and pass
the golden file's path as the first argument).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import nanmap  # noqa: E402
import nanmap.golden  # noqa: E402

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
golden_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "golden",
                                                                  "softmax_ce.golden")

# 1. rounding: encodings, exact values and flags, from the C library
r = nanmap.round(np.array([0.1, 65519.99, 1e-8]), "fp16")
print("round to fp16:", [hex(b) for b in r.bits], r.values.tolist(), r.flags)

# 2. quantise an activation tensor with NVFP4 (16-element blocks, e4m3
#    scales, a per-tensor fp32 scale) and read what it cost
rng = np.random.default_rng(0)
x = (rng.standard_normal((4, 64)) * 3).astype(np.float32)
x[0, 7] = 200.0  # an outlier: its block's other elements lose precision
q = nanmap.quant(x, "nvfp4")
s = q.stats
print("nvfp4: %d elements in %d blocks, SQNR %.2f dB, flushed %d, max rel err %.3g"
      % (s["n"], s["blocks"], s["sqnr_db"], s["flushed"], s["max_rel"]))
print("  first block: scale %g (code 0x%02x), codes %s"
      % (q.scales[0, 0], q.scale_codes[0, 0], " ".join("%x" % c for c in q.codes[0, :16])))

# 3. softmax cross-entropy in fp16: the naive form overflows where lse does not
for variant in ("naive", "lse"):
    run = nanmap.run("softmax_ce", [11.09375, 0.0], policy="storage=fp16", variant=variant)
    print("softmax_ce %-5s status %-9s loss %-8s first failure %s"
          % (variant, run.status, run.outputs["loss"][0], run.first))

# 4. a kernel test against a golden case: run "my kernel" (here the
#    emulator's exact backend) on the case's input and check every output
g = nanmap.golden.load(golden_path)
case = g["softmax_ce.naive.fp16-fp16.safe"]
mine = nanmap.run(case.kernel, case.inputs(), policy=case.policy, variant=case.variant,
                  backend="exact", seed=case.seed, truth=False)
for name, out in case.outputs.items():
    rep = nanmap.golden.check(out, mine.bits[name])
    print("golden %s: checked %d, mismatched %d" % (out.target, rep.checked, rep.mismatched))

# ... and what a wrong kernel sees
wrong = mine.bits["grad"].copy()
wrong[4] += 1
try:
    nanmap.golden.check(case.output("grad"), wrong)
except AssertionError as e:
    print("a wrong grad fails the check:\n  " + str(e).replace("\n", "\n  "))
