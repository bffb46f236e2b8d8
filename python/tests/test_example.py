"""docs/examples/python_tour.py runs and prints what the README's Python tour says."""

import os
import subprocess
import sys

from conftest import ROOT


def test_python_tour_runs():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "examples", "python_tour.py")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "softmax_ce naive status nan" in r.stdout
    assert "golden softmax_ce.naive.fp16-fp16.safe/grad: checked 32, mismatched 0" in r.stdout
    assert "grad[4]: expected 0x1db3 (0.00556564331), actual 0x1db4" in r.stdout
