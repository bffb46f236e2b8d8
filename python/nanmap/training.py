"""nanmap.train (nanmap.training): a whole training run (docs/train.md) from Python.

The trainer is the command line's `nanmap train` (emu/train/ in the C
library, run through bin/nanmap as nanmap.golden exports inputs): this
module passes the options, reads back its per-step table and its report,
and returns them as numpy arrays and a dict. No arithmetic of its own.
"""

import csv
import json
import os
import subprocess
import tempfile

import numpy as np

from . import _lib as L

__all__ = ["train", "TrainError"]


class TrainError(ValueError):
    """`nanmap train` refused its input; the message is its line."""


_INT_COLUMNS = {"step", "skipped", "overflow", "underflow", "invalid", "nonfinite_params"}


def _option(name, value):
    flag = "--" + name.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, (list, tuple)):
        if name == "role":
            out = []
            for v in value:
                out += [flag, str(v)]
            return out
        value = ",".join(map(str, value))
    return [flag, str(value)]


def train(policy="fp32", steps=100, **options):
    """Run `nanmap train --policy POLICY --steps STEPS` with the other
    options as keywords (layers=2, d_model=32, role=["state=fp32"],
    spike="50:1e6", compare="fp32", save="ckpt.safetensors", ...; a
    list of policies runs them side by side).

    Returns (table, report): table maps each policy to a dict of numpy
    arrays, one per CSV column (docs/train.md: step, loss, val_loss
    (NaN where not computed), grad_norm, lr, scale, skipped, overflow,
    underflow, invalid, nonfinite_params); report is the JSON report: per
    run the final losses, skipped steps, the step the losses parted from
    the reference, and first_failure (site, op, element, flags, the
    parameter, the first non-finite tensor and the chain to the loss).
    """
    cli = L.find_cli()
    if not cli:
        raise TrainError("nanmap.train needs bin/nanmap (set NANMAP=)")
    if isinstance(policy, (list, tuple)):
        policy = ",".join(policy)
    with tempfile.TemporaryDirectory() as tmp:
        table_path = os.path.join(tmp, "steps.csv")
        report_path = os.path.join(tmp, "report.json")
        cmd = [cli, "train", "--policy", str(policy), "--steps", str(int(steps)), "--every", "0",
               "--csv", table_path, "--json", report_path]
        for k, v in options.items():
            cmd += _option(k, v)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise TrainError(r.stderr.strip() or "nanmap train failed (status %d)" % r.returncode)
        with open(report_path) as f:
            report = json.load(f)
        rows = {}
        with open(table_path, newline="") as f:
            for row in csv.DictReader(f):
                rows.setdefault(row.pop("policy"), []).append(row)
    table = {}
    for pol, rs in rows.items():
        cols = {}
        for name in rs[0]:
            if name in _INT_COLUMNS:
                cols[name] = np.array([int(x[name]) for x in rs], dtype=np.int64)
            else:
                cols[name] = np.array([float(x[name]) if x[name] != "" else np.nan for x in rs])
        table[pol] = cols
    return table, report
