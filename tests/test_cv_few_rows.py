"""``cv_log_loss_`` when too few rows leave no out-of-fold row: NaN, never a loss of 0.

Folds are a hash of a row's position; with the default five folds the first three rows
all fall in fold 0, so three rows (or fewer) leave nothing to hold out. Every calibrator
that chooses by k-fold log loss then reports NaN for every candidate and uses its
simplest one; from four rows on the losses are real.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    MultivariateBernsteinCalibrator,
    TemperatureBernsteinCalibrator,
)
from bernonnx._core.points import fold_of


@pytest.fixture(scope="module")
def credit():
    """Credit as ``read_csv`` gives it, a frozen scaled logistic regression on its first
    3,000 rows (binary default and the 7-class EDUCATION), and the rows after them."""
    with resources.files("bernonnx.data").joinpath("uci_credit_card.csv.gz").open("rb") as f:
        frame = pd.read_csv(f, compression="gzip", nrows=4000).drop(columns="ID")
    binary = frame.pop("default.payment.next.month").to_numpy()
    education = frame.pop("EDUCATION").to_numpy()

    def model(y):
        fitted = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
        return FrozenEstimator(fitted.fit(frame[:3000], y[:3000]))

    rest = slice(3000, None)
    return {
        "X": frame[rest].reset_index(drop=True),
        "binary": (model(binary), binary[rest]),
        "education": (model(education), education[rest]),
    }


def _rows_with_classes(y, n, classes):
    """Indices of ``n`` rows of ``y`` holding every label of ``classes`` (first found)."""
    picked = [int(np.flatnonzero(y == c)[0]) for c in classes]
    others = [i for i in range(len(y)) if i not in picked][: n - len(picked)]
    return np.array(picked + others)


def _scores(credit, kind):
    """Real scores: the binary model's decision values (one column), two of its
    columns' worth for the tensor calibrator, EDUCATION's logits for the multiclass one."""
    X = credit["X"]
    if kind == "multiclass":
        model, y = credit["education"]
        return model.decision_function(X), y
    model, y = credit["binary"]
    s = model.decision_function(X)
    return (np.column_stack([s, X["LIMIT_BAL"].to_numpy()]) if kind == "tensor" else s), y


CASES = {
    "BernsteinCalibrator": (lambda: BernsteinCalibrator(), "binary"),
    "BernsteinCalibrator grid": (lambda: BernsteinCalibrator(degree=[2, 5, 9]), "binary"),
    "MultivariateBernsteinCalibrator": (lambda: MultivariateBernsteinCalibrator(), "tensor"),
    "TemperatureBernsteinCalibrator": (
        lambda: TemperatureBernsteinCalibrator(scaling="sms"),
        "multiclass",
    ),
}


def _losses(cal) -> np.ndarray:
    cv = cal.cv_log_loss_
    return np.array(list(cv.values()) if isinstance(cv, dict) else cv, dtype=float)


def _subset(scores, y, n):
    classes = np.unique(y)[:3] if scores.ndim == 2 and scores.shape[1] > 2 else np.unique(y)
    idx = _rows_with_classes(y, n, classes)
    s, t = scores[idx], y[idx]
    if scores.ndim == 2 and scores.shape[1] > 2:
        # a multiclass calibrator reads one column per class present
        s = s[:, np.searchsorted(np.unique(y), np.unique(t))]
    return s, t


@pytest.mark.parametrize("case", list(CASES))
def test_no_out_of_fold_rows_gives_nan_not_zero(credit, case):
    make, kind = CASES[case]
    scores, y = _scores(credit, kind)
    assert (fold_of(0, 3, 5) == fold_of(0, 3, 5)[0]).all()  # three rows: one fold
    s, t = _subset(scores, y, 3)
    cal = make().fit(s, t)
    assert np.isnan(_losses(cal)).all(), cal.cv_log_loss_
    proba = cal.predict_proba(s)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # the simplest candidate is used
    if kind == "multiclass":
        assert cal.method_ == "identity"
    elif kind == "binary":
        assert cal.degree_ == cal.cv_degrees_[0]
    else:
        assert cal.degrees_[0] == cal.cv_degrees_[0]
    # a refit on enough rows scores real losses (and forgets nothing stale)
    s, t = _subset(scores, y, 60)
    losses = _losses(make().fit(s, t))
    assert np.isfinite(losses).any() and (losses[np.isfinite(losses)] > 0).all()
    refit = cal.fit(s, t)
    np.testing.assert_array_equal(_losses(refit), losses)


def test_weights_equal_repetition_with_no_out_of_fold_rows(credit):
    """Two rows of weights 2 and 1 are the same three rows as the first row repeated:
    both have no held-out row, both report NaN, and the fits agree."""
    scores, y = _scores(credit, "binary")
    idx = _rows_with_classes(y, 2, [0, 1])
    weighted = BernsteinCalibrator().fit(scores[idx], y[idx], sample_weight=[2.0, 1.0])
    repeated = BernsteinCalibrator().fit(scores[idx[[0, 0, 1]]], y[idx[[0, 0, 1]]])
    assert np.isnan(weighted.cv_log_loss_).all() and np.isnan(repeated.cv_log_loss_).all()
    np.testing.assert_allclose(
        weighted.predict_proba(scores), repeated.predict_proba(scores), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("label", ["binary", "education"])
def test_calibrated_classifier_on_three_rows_of_a_frame(credit, label):
    """``CalibratedClassifier`` on three rows of a frame read with pandas, the frozen
    model's scores fed to the default calibrator: its ``cv_log_loss_`` says there was
    nothing to validate on, and the probabilities are finite rows summing to 1."""
    model, y = credit[label]
    X = credit["X"]
    classes = [1, 2, 3] if label == "education" else [0, 1]
    idx = _rows_with_classes(y, 3, classes)
    if label == "education":
        # a model whose classes are the calibration rows' ones: a frozen EDUCATION model
        # knows 7 classes, so refit it on those three classes only
        keep = np.isin(y, classes)
        fitted = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
        model = FrozenEstimator(fitted.fit(X[keep], y[keep]))
    clf = CalibratedClassifier(model).fit(X.iloc[idx], y[idx])
    (cal,) = clf.calibrated_classifiers_[0].calibrators
    assert np.isnan(_losses(cal)).all(), cal.cv_log_loss_
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
