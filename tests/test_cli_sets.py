"""``--sets C`` of ``bernonnx export`` and ``bernonnx attach``: the prediction sets in the
written graph equal Python's, the held-out split is the one documented, bad input exits 2.

Real data: scikit-learn's digits, a logistic regression's scores on held-out rows.
"""

from __future__ import annotations

import numpy as np
import onnx
import pandas as pd
import pytest
from skl2onnx import to_onnx as skl2onnx_to_onnx
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from bernonnx import ConformalClassifier, PlattCalibrator, TemperatureCalibrator
from bernonnx.cli import EXIT_USAGE
from bernonnx.cli._sets import split_rows
from bernonnx.deploy import run_onnx


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    """A CSV of a digits model's log-probabilities (ten classes) and of its score for
    the class 3 against the rest; the model as ONNX; rows to check on."""
    folder = tmp_path_factory.mktemp("sets")
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    lr = LogisticRegression(max_iter=3000).fit(X[:700], y[:700])
    logp = lr.predict_log_proba(X[700:1500])
    frame = pd.DataFrame(logp, columns=[f"l{k}" for k in range(10)])
    frame["p3"] = lr.predict_proba(X[700:1500])[:, 3]
    frame["y"] = y[700:1500]
    frame["is3"] = (y[700:1500] == 3).astype(int)
    frame.to_csv(folder / "scores.csv", index=False)
    frame = pd.read_csv(folder / "scores.csv")  # as the command reads it: float64
    frame.to_parquet(folder / "scores.parquet")
    onx = skl2onnx_to_onnx(lr, X[:1], options={"zipmap": False}, target_opset=15)
    onnx.save(onx, folder / "model.onnx")
    return folder, frame, onx, X[1500:]


def _args(args, extra=()):
    return type("A", (), {"sets_rows": 0.5, "sets_seed": 0, **dict(extra)})()


def test_export_sets_equal_python(run, scores):
    folder, frame, _, _ = scores
    columns = [f"l{k}" for k in range(10)]
    args = ["export", folder / "scores.csv", "--label", "y", "--method", "temperature"]
    args += [x for c in columns for x in ("--score", c)]
    args += ["--onnx", folder / "m.onnx", "--sets", "0.9", "--set-score", "aps"]
    out, _ = run(*args)
    assert "prediction sets at confidence 0.9 (aps" in out
    assert "output 'prediction_set': bool[N, 10]" in out
    # the same split and fits in Python
    S, labels = frame[columns].to_numpy(), frame["y"].to_numpy()
    fit_labels, fit_S, held_labels, held_S = split_rows(labels, S, _args(args))
    cal = TemperatureCalibrator().fit(fit_S, fit_labels)
    sets = ConformalClassifier(cal, confidence=0.9, score="aps", random_state=0)
    sets.fit(held_S, held_labels)
    got = run_onnx(onnx.load(folder / "m.onnx"), {"X": S})["prediction_set"]
    np.testing.assert_array_equal(got, sets.predict_set(S))
    covered = sets.predict_set(held_S)[np.arange(len(held_S)), held_labels]
    assert covered.mean() >= 0.9


def test_attach_sets_and_triton(run, scores):
    folder, frame, onx, X_new = scores
    args = ["attach", folder / "model.onnx", folder / "scores.csv", "--label", "is3"]
    args += ["--score", "p3", "--method", "platt", "--output", "probabilities"]
    args += ["--column", "3", "--onnx", folder / "a.onnx", "--sets", "0.95"]
    args += ["--triton", folder / "triton", "--class-conditional"]
    out, _ = run(*args)
    assert "one threshold per class" in out
    text = (folder / "triton" / "a" / "config.pbtxt").read_text()
    assert 'name: "prediction_set"' in text and "TYPE_BOOL" in text
    S, labels = frame[["p3"]].to_numpy(), frame["is3"].to_numpy()
    fit_labels, fit_S, held_labels, held_S = split_rows(labels, S, _args(args))
    cal = PlattCalibrator().fit(fit_S, fit_labels)
    sets = ConformalClassifier(cal, confidence=0.95, class_conditional=True, random_state=0)
    sets.fit(held_S, held_labels)
    merged = onnx.load(folder / "a.onnx")
    got = run_onnx(merged, {"X": X_new})["prediction_set"]
    model_scores = run_onnx(onx, {"X": X_new})["probabilities"][:, 3:4]
    np.testing.assert_array_equal(got, sets.predict_set(model_scores))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sets", "1.5"], "expected a fraction in (0, 1)"),
        (["--sets", "0.99", "--sets-rows", "0.01"], "too few conformalization rows"),
        (["--sets", "0.9", "--stream"], "--sets needs the rows in memory"),
    ],
)
def test_bad_sets_exit_2(run, scores, extra, message):
    folder, _, _, _ = scores
    data = folder / ("scores.parquet" if "--stream" in extra else "scores.csv")
    args = ["export", data, "--label", "is3", "--score", "p3"]
    args += ["--method", "platt", "--onnx", folder / "bad.onnx", *extra]
    _, err = run(*args, expect=EXIT_USAGE)
    assert message in err
