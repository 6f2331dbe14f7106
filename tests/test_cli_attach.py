"""``bernonnx attach`` in-process: fit on a CSV of an ONNX model's scores, merge, write."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from scipy.special import softmax
from skl2onnx import to_onnx as skl2onnx_to_onnx
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from bernonnx import BernsteinCalibrator, TemperatureCalibrator
from bernonnx.cli import EXIT_USAGE
from bernonnx.deploy import run_onnx


@pytest.fixture(scope="module")
def model_and_scores(tmp_path_factory):
    """A 3-class LogisticRegression as ONNX (raw scores: logits), a CSV of its scores
    on held-out rows, and rows to check the merged graph on."""
    folder = tmp_path_factory.mktemp("attach")
    X, y = make_classification(3000, n_classes=3, n_informative=4, random_state=0)
    X = X.astype(np.float32)
    lr = LogisticRegression().fit(X[:1000], y[:1000])
    onx = skl2onnx_to_onnx(
        lr, X[:1], options={"zipmap": False, "raw_scores": True}, target_opset=15
    )
    onnx.save(onx, folder / "model.onnx")
    logits = run_onnx(onx, {"X": X[1000:2000]})["probabilities"]
    table = np.c_[y[1000:2000], logits, softmax(logits, axis=1)]
    np.savetxt(
        folder / "scores.csv",
        table,
        delimiter=",",
        header="y,l0,l1,l2,p0,p1,p2",
        comments="",
        fmt="%.17g",
    )
    return folder, onx, logits, y[1000:2000], X[2000:]


def test_temperature_on_all_logits_with_triton(run, model_and_scores):
    folder, onx, logits, y, X_test = model_and_scores
    out_path, triton = folder / "t.onnx", folder / "triton"
    args = ["attach", folder / "model.onnx", folder / "scores.csv", "--label", "y"]
    args += ["--score", "l0", "--score", "l1", "--score", "l2", "--method", "temperature"]
    args += ["--output", "probabilities", "--onnx", out_path, "--triton", triton]
    out, _ = run(*args)
    assert "TemperatureCalibrator on output 'probabilities'" in out
    assert (triton / "t" / "config.pbtxt").is_file()
    assert (triton / "t" / "1" / "model.onnx").is_file()
    cal = TemperatureCalibrator().fit(logits, y)
    merged = onnx.load(out_path)
    got = run_onnx(merged, {"X": X_test})
    expected = cal.predict_proba(run_onnx(onx, {"X": X_test})["probabilities"])
    np.testing.assert_allclose(got["probabilities"], expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("method", "name"),
    [("sms", "StructuredMatrixScalingCalibrator"), ("vector-scaling", "VectorScalingCalibrator")],
)
def test_multiclass_scalings_on_all_logits(run, model_and_scores, method, name):
    import bernonnx

    folder, onx, logits, y, X_test = model_and_scores
    out_path = folder / f"{method}.onnx"
    args = ["attach", folder / "model.onnx", folder / "scores.csv", "--label", "y"]
    args += ["--score", "l0", "--score", "l1", "--score", "l2", "--method", method]
    args += ["--output", "probabilities", "--onnx", out_path]
    out, _ = run(*args)
    assert f"{name} on output 'probabilities'" in out
    cal = getattr(bernonnx, name)().fit(logits, y)
    got = run_onnx(onnx.load(out_path), {"X": X_test})
    expected = cal.predict_proba(run_onnx(onx, {"X": X_test})["probabilities"])
    np.testing.assert_allclose(got["probabilities"], expected, rtol=0, atol=1e-6)


def test_one_column_against_the_rest(run, model_and_scores):
    folder, onx, logits, y, X_test = model_and_scores
    out_path = folder / "b.onnx"
    args = ["attach", folder / "model.onnx", folder / "scores.csv", "--label", "y"]
    args += ["--score", "l1", "--pos-label", "1", "--column", "1", "--method", "bernstein"]
    args += ["--output", "probabilities", "--onnx", out_path, "--keep-outputs"]
    out, _ = run(*args)
    assert "positive label '1' is class 1" in out
    merged = onnx.load(out_path)
    assert [o.name for o in merged.graph.output] == [
        "label",
        "probabilities",
        "model_label",
        "model_probabilities",
    ]
    cal = BernsteinCalibrator().fit(logits[:, 1], (y == 1).astype(int))
    scores = run_onnx(onx, {"X": X_test})["probabilities"][:, 1]
    got = run_onnx(merged, {"X": X_test})["probabilities"]
    np.testing.assert_allclose(got, cal.predict_proba(scores), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--score", "l1", "--pos-label", "1", "--output", "nope"], "must name one of"),
        (["--score", "l1", "--pos-label", "1", "--output", "probabilities"], "pass column"),
        (
            ["--score", "l1", "--pos-label", "1", "--output", "probabilities", "--column", "1"]
            + ["--method", "sklearn-isotonic"],
            "has no ONNX export",
        ),
        (["--score", "l0", "--score", "l1", "--output", "probabilities"], "one score column"),
    ],
)
def test_bad_input_exits_2(run, model_and_scores, extra, message):
    folder = model_and_scores[0]
    args = ["attach", folder / "model.onnx", folder / "scores.csv", "--label", "y", *extra]
    _, err = run(*args, "--onnx", folder / "bad.onnx", expect=EXIT_USAGE)
    assert message in err
    assert not (folder / "bad.onnx").exists()


def test_unreadable_model_exits_2(run, model_and_scores, tmp_path):
    folder = model_and_scores[0]
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    args = ["attach", tmp_path / "junk.onnx", folder / "scores.csv", "--label", "y"]
    args += ["--score", "l1", "--pos-label", "1", "--output", "probabilities"]
    _, err = run(*args, "--onnx", tmp_path / "o.onnx", expect=EXIT_USAGE)
    assert "cannot read the ONNX model" in err


def test_help_lists_only_exportable_methods(run):
    for command in ("export", "attach"):
        out, _ = run(command, "--help")
        assert "temperature" in out
        assert "sklearn-sigmoid" not in out and "uncalibrated" not in out
    out, _ = run("compare", "--help")
    assert "sklearn-sigmoid" in out
