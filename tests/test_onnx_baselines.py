"""ONNX parity of the baseline calibrators, alone and inside CalibratedClassifier."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from bernonnx import (
    CalibratedClassifier,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
)
from bernonnx.deploy import run_onnx
from bernonnx.export import check_parity, to_onnx

TOL = {np.float32: 1e-6, np.float64: 1e-12}

CALIBRATORS = {
    "platt": lambda: PlattCalibrator(),
    "platt_free_slope": lambda: PlattCalibrator(increasing=False),
    "platt_log_odds": lambda: PlattCalibrator(log_odds=True),
    "histogram_uniform": lambda: HistogramCalibrator(n_bins=12),
    "histogram_quantile_monotone": lambda: HistogramCalibrator(
        strategy="quantile", increasing=True
    ),
    "platt_histogram": lambda: PlattHistogramCalibrator(n_bins=10),
    "platt_histogram_log_odds": lambda: PlattHistogramCalibrator(log_odds=True),
}


def scores(n, seed, probability):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-1.5 * s))).astype(int)
    if probability:
        s = 1 / (1 + np.exp(-2.5 * s))  # skewed probabilities in (0, 1)
    return s, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CALIBRATORS))
def test_calibrator_alone(name, dtype):
    probability = "log_odds" in name
    s, y = scores(3000, 0, probability)
    cal = CALIBRATORS[name]().fit(s, y)
    grid, _ = scores(4000, 1, probability)
    extremes = [0.0, 1.0, 1e-300, 1 - 1e-16] if probability else [-1e30, 1e30, 0.0]
    grid = np.r_[grid, extremes].astype(dtype)[:, None]
    onx = to_onnx(cal, grid[:1], dtype=dtype)
    out = run_onnx(onx, {onx.graph.input[0].name: grid})
    assert np.all(np.isfinite(out["probabilities"]))
    np.testing.assert_allclose(
        out["probabilities"], cal.predict_proba(grid), atol=TOL[dtype], rtol=0
    )
    np.testing.assert_array_equal(out["label"], cal.predict(grid))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ["platt", "histogram_uniform", "platt_histogram_log_odds"])
def test_inside_calibrated_classifier(name, n_classes):
    X, y = make_classification(
        1500, n_features=6, n_informative=4, n_classes=n_classes, random_state=2
    )
    log_odds = "log_odds" in name
    # the calibrator takes the log-odds itself: the meta-estimator passes probabilities
    base = GaussianNB() if log_odds else LogisticRegression()
    clf = CalibratedClassifier(base, CALIBRATORS[name](), cv=2).fit(X[:1000], y[:1000])
    for dtype in (np.float32, np.float64):
        report = check_parity(clf, to_onnx(clf, X[:1], dtype=dtype), X[1000:])
        # GaussianNB's own float32 export errs by ~1e-6 (see benchmarks/onnx_parity.md)
        tol = 5e-6 if (log_odds and dtype is np.float32) else TOL[dtype]
        assert report["max_abs_error"] <= tol and report["labels_equal"], report


def test_isotonic_export_is_refused_clearly():
    s, y = scores(500, 3, False)
    cal = IsotonicCalibrator().fit(s, y)
    with pytest.raises(NotImplementedError, match="IsotonicCalibrator cannot be exported"):
        to_onnx(cal, s[:1, None])
