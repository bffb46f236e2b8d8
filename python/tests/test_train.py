"""nanmap.train: the per-step table and the report of `nanmap train` as numpy
arrays and a dict, the same numbers the command writes, and its errors as
exceptions; a checkpoint readable by the safetensors package where it is
installed."""

import os

import numpy as np
import pytest

import nanmap

TINY = dict(layers=1, d_model=8, heads=2, seq=4, vocab=6, batch=2, warmup=1, lr=0.01,
            val_every=0)


def test_fp16_pure_names_the_optimizer():
    table, report = nanmap.train("fp16-pure", 3, **TINY)
    t = table["fp16-pure"]
    assert list(t["step"]) == [1, 2, 3]
    assert np.isfinite(t["loss"][0]) and np.isnan(t["loss"][1])
    assert t["nonfinite_params"][0] > 0
    assert np.isnan(t["val_loss"]).all()  # not computed: NaN
    f = report["runs"][0]["first_failure"]
    assert f["set"] and f["step"] == 1 and f["site"] == "optimizer.step"
    assert f["flags"] == "divbyzero" and f["parameter"].startswith("ln1w[")
    assert f["nonfinite"] and f["chain"].endswith("-> loss nan")


def test_several_policies_and_roles():
    table, report = nanmap.train(["fp32", "fp16-pure"], 2, role=["state=fp32"], **TINY)
    assert set(table) == {"fp32+state=fp32", "fp16-pure+state=fp32"}
    assert all(np.isfinite(t["loss"]).all() for t in table.values())
    assert [r["policy"] for r in report["runs"]] == list(table)


def test_same_numbers_as_the_command(cli, tmp_path):
    table, _ = nanmap.train("bf16", 3, **TINY)
    path = tmp_path / "a.csv"
    cli("train", "--policy", "bf16", "--steps", 3, "--every", 0, "--csv", path,
        *sum((["--" + k.replace("_", "-"), str(v)] for k, v in TINY.items()), []))
    rows = path.read_text().splitlines()[1:]
    assert [float(r.split(",")[2]) for r in rows] == list(table["bf16"]["loss"])


def test_errors_are_exceptions():
    with pytest.raises(nanmap.TrainError, match="unknown training policy 'fp17'"):
        nanmap.train("fp17", 1)
    with pytest.raises(nanmap.TrainError, match="--heads 3 must divide"):
        nanmap.train("fp32", 1, heads=3)


def test_checkpoint_readable_by_safetensors(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="the safetensors package is not "
                             "installed")
    path = tmp_path / "c.safetensors"
    nanmap.train("fp32", 2, save=str(path), **TINY)
    d = st.load_file(str(path))
    assert d["wte"].shape == (6 * 8,) and d["wte"].dtype == np.float64
    assert int(d["state"][0]) == 2 and bytes(d["policy"]) == b"fp32"


def test_llama_and_fp8_delayed():
    table, report = nanmap.train("fp8-delayed", 3, arch="llama", **TINY)
    t = table["fp8-delayed"]
    assert list(t["step"]) == [1, 2, 3] and np.isfinite(t["loss"]).all()
    # at step 1 every operand runs at scale 1: small values underflow e4m3/e5m2
    assert t["underflow"][0] > 0
    assert report["runs"][0]["policy"] == "fp8-delayed"


def test_golden_training_run(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="the safetensors package is not "
                             "installed")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    g = st.load_file(os.path.join(root, "golden", "train", "bf16-gpt2.safetensors"))
    # the golden runs' model is TINY's: the command's losses are the file's
    table, _ = nanmap.train("bf16", 3, **TINY)
    want = [float(g["step%d.loss" % s][0]) for s in (1, 2, 3)]
    assert np.allclose(table["bf16"]["loss"], want, rtol=1e-8, atol=0)
    assert g["step1.inputs"].shape == (1, 2, 4) and g["init.wte"].shape == (48,)
