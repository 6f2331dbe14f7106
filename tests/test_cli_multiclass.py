"""``bernonnx export`` of a multiclass calibrator: one ``--score`` column per class.

The scores are a real model's: a logistic regression on diabetes ``GenHlth`` (5
classes) read with pandas, its decision values written to a CSV as a user's scoring
job writes them. The graph the command writes is run in onnxruntime and compared with
the same calibrator fitted in Python on the same scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks._realdata import DEFAULT_DATA_DIR
from bernonnx import (
    StructuredMatrixScalingCalibrator,
    TemperatureBernsteinCalibrator,
    TemperatureCalibrator,
)
from bernonnx.cli import EXIT_USAGE
from bernonnx.deploy import run_onnx

#: ``GenHlth``'s codes as words, whose sorted order is not the codes' order
WORDS = {1: "excellent", 2: "very good", 3: "good", 4: "fair", 5: "poor"}


@pytest.fixture(scope="module")
def genhlth(tmp_path_factory):
    """CSV files of a frozen model's five decision values and the label: as float64
    text (``%.17g``), and rounded to float32 (a server that scores in float32)."""
    try:
        frame = pd.read_csv(DEFAULT_DATA_DIR / "diabetes_brfss2015.csv.gz", nrows=12000)
    except FileNotFoundError as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    y = frame.pop("GenHlth")
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    model.fit(frame[:6000], y[:6000])
    scores = model.decision_function(frame[6000:])
    labels = y[6000:].to_numpy()
    folder = tmp_path_factory.mktemp("multiclass")
    columns = [f"score_{c}" for c in model.classes_]
    files = {}
    for kind, values in (("float64", scores), ("float32", scores.astype(np.float32))):
        table = pd.DataFrame(values.astype(np.float64), columns=columns)
        table.insert(0, "GenHlth", labels)
        files[kind] = folder / f"genhlth_{kind}.csv"
        table.to_csv(files[kind], index=False, float_format="%.17g")
    words = pd.DataFrame(scores, columns=columns)
    words.insert(0, "GenHlth", [WORDS[v] for v in labels])
    files["words"] = folder / "genhlth_words.csv"
    words.to_csv(files["words"], index=False, float_format="%.17g")
    # the scores as the command reads them back
    back = {kind: pd.read_csv(path)[columns].to_numpy() for kind, path in files.items()}
    return files, back, labels, columns


METHODS = {
    "sms-bernstein": lambda: TemperatureBernsteinCalibrator(scaling="sms"),
    "sms": StructuredMatrixScalingCalibrator,
    "temperature": TemperatureCalibrator,
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", list(METHODS))
def test_export_a_multiclass_calibrator(run, genhlth, tmp_path, method, dtype):
    """The written graph reads the (N, 5) scores and gives the Python calibrator's
    probabilities and labels on every row: float64 within 1e-9, float32 within 1e-6."""
    files, back, labels, columns = genhlth
    out_path = tmp_path / "calibrator.onnx"
    args = ["export", files[dtype], "--label", "GenHlth", "--method", method]
    args += [arg for column in columns for arg in ("--score", column)]
    args += ["--onnx", out_path, "--dtype", dtype]
    out, _ = run(*args)
    expected = METHODS[method]().fit(back[dtype], labels)
    assert f"{type(expected).__name__} on {', '.join(columns)}; classes 1, 2, 3, 4, 5" in out
    assert f"input 'X': {'double' if dtype == 'float64' else 'float'}[N, 5]" in out
    assert "passed" in out
    X = back[dtype].astype(dtype)
    got = run_onnx(out_path, {"X": X})
    tol = {"float64": 1e-9, "float32": 1e-6}[dtype]
    np.testing.assert_allclose(got["probabilities"], expected.predict_proba(X), rtol=0, atol=tol)
    np.testing.assert_array_equal(got["label"], expected.predict(X))


def test_text_labels_take_the_columns_in_sorted_order(run, genhlth, tmp_path):
    """Text classes are sorted as text ('excellent' < 'fair' < 'good' < 'poor' < 'very
    good'): the --score columns are given in that order and the graph's labels are the
    words."""
    files, back, labels, columns = genhlth
    words = np.array([WORDS[v] for v in labels])
    order = [columns[code - 1] for code, _ in sorted(WORDS.items(), key=lambda kv: kv[1])]
    out_path = tmp_path / "words.onnx"
    args = ["export", files["words"], "--label", "GenHlth", "--method", "sms"]
    args += [arg for column in order for arg in ("--score", column)]
    out, _ = run(*args, "--onnx", out_path)
    assert "classes 'excellent', 'fair', 'good', 'poor', 'very good'" in out
    S = pd.read_csv(files["words"])[order].to_numpy()
    expected = StructuredMatrixScalingCalibrator().fit(S, words)
    got = run_onnx(out_path, {"X": S})
    np.testing.assert_allclose(got["probabilities"], expected.predict_proba(S), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(got["label"], expected.predict(S))


@pytest.mark.parametrize(
    "case", ["three columns for five classes", "pos-label", "one class", "streamed"]
)
def test_bad_multiclass_input_is_one_error_and_nothing_written(run, genhlth, tmp_path, case):
    files, _, _, columns = genhlth
    path = files["float64"]
    scores = columns
    extra = []
    if case == "three columns for five classes":
        scores, expected = columns[:3], "5 classes (1, 2, 3, 4, 5) but 3 --score columns"
    elif case == "pos-label":
        extra, expected = ["--pos-label", "3"], "--pos-label is for one-score methods"
    elif case == "streamed":
        pytest.importorskip("pyarrow")
        path = tmp_path / "scores.parquet"
        pd.read_csv(files["float64"]).to_parquet(path)
        extra, expected = ["--stream"], "cannot be fitted in passes"
    else:
        path = tmp_path / "one.csv"
        table = pd.read_csv(files["float64"]).head(50)
        table["GenHlth"] = 2
        table[["GenHlth", *columns[:2]]].to_csv(path, index=False)
        scores, expected = columns[:2], "1 class (2) but 2 --score columns"
    args = ["-q", "export", path, "--label", "GenHlth", "--method", "sms-bernstein"]
    args += [arg for column in scores for arg in ("--score", column)]
    args += [*extra, "--onnx", tmp_path / "out" / "m.onnx", "--triton", tmp_path / "repo"]
    _, err = run(*args, expect=EXIT_USAGE)
    assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
    assert expected in err and "unexpected" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "repo").exists()
