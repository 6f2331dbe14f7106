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
    "isotonic": lambda: IsotonicCalibrator(),
    "isotonic_decreasing": lambda: IsotonicCalibrator(increasing=False),
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
@pytest.mark.parametrize(
    "name", ["platt", "histogram_uniform", "platt_histogram_log_odds", "isotonic"]
)
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
        tol = TOL[dtype]
        if dtype is np.float32 and (log_odds or name == "isotonic"):
            # the base model's float32 scores differ from Python's float64 ones by
            # ~1e-7 relative (GaussianNB's own float32 export: ~1e-6), and isotonic's
            # steep segments multiply that by their slope; float64 graphs are exact
            slopes = [
                np.max(np.diff(c.y_thresholds_) / np.diff(c.x_thresholds_))
                for pair in clf.calibrated_classifiers_
                for c in pair.calibrators
                if hasattr(c, "x_thresholds_") and c.x_thresholds_.shape[0] > 1
            ]
            tol = 5e-6 + 2e-6 * max(slopes, default=0.0)
        assert report["max_abs_error"] <= tol and report["labels_equal"], report


@pytest.mark.parametrize("n_rows", [1, 2, 3, 50, 20000])
def test_isotonic_interpolates_exactly_without_a_threshold_matrix(n_rows):
    s, y = scores(max(n_rows, 2), 4, False)
    y[:2] = [0, 1]
    cal = IsotonicCalibrator().fit(s[:n_rows] if n_rows > 1 else s[:2], y[: max(n_rows, 2)])
    grid = np.r_[np.linspace(s.min() - 1, s.max() + 1, 5001), cal.x_thresholds_, -1e30, 1e30]
    onx = to_onnx(cal, grid[:1, None], dtype=np.float64)
    out = run_onnx(onx, {onx.graph.input[0].name: grid[:, None]})
    np.testing.assert_allclose(out["probabilities"], cal.predict_proba(grid), atol=1e-12, rtol=0)
    # comparisons per row grow like sqrt(T), not T
    sizes = [int(np.prod([d for d in init.dims])) for init in onx.graph.initializer]
    assert max(sizes) <= cal.x_thresholds_.shape[0] + 2 * np.ceil(
        np.sqrt(cal.x_thresholds_.shape[0])
    )


def test_isotonic_out_of_bounds_nan_and_raise():
    s, y = scores(800, 5, False)
    cal = IsotonicCalibrator(out_of_bounds="nan").fit(s, y)
    grid = np.r_[s.min() - 1, np.linspace(s.min(), s.max(), 101), s.max() + 1][:, None]
    out = run_onnx(to_onnx(cal, grid[:1], dtype=np.float64), {"X": grid})
    np.testing.assert_allclose(out["probabilities"], cal.predict_proba(grid), atol=1e-12)
    assert np.isnan(out["probabilities"][[0, -1]]).all()
    np.testing.assert_array_equal(out["label"], cal.predict(grid))
    with pytest.raises(NotImplementedError, match="out_of_bounds='raise'"):
        to_onnx(IsotonicCalibrator(out_of_bounds="raise").fit(s, y), grid[:1])


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
@pytest.mark.parametrize("log_odds", [False, True])
def test_platt_histogram_graph_bins_the_fitted_rows_as_python(strategy, log_odds):
    """Quantile edges are fitted values: a row on an edge must land in the same bin in
    the graph. Binning on sigmoid(a) put 0.3% of fitted rows in the neighbouring bin
    (onnxruntime's Sigmoid rounds differently from scipy's expit): 0.055 off."""
    rng = np.random.default_rng(11)
    s = rng.normal(size=5000)
    if log_odds:
        s = 1 / (1 + np.exp(-2 * s))
    y = rng.random(5000) < 1 / (1 + np.exp(-2 * (s - (0.5 if log_odds else 0.0))))
    cal = PlattHistogramCalibrator(n_bins=15, strategy=strategy, log_odds=log_odds).fit(s, y)
    report = check_parity(cal, to_onnx(cal, s[:50, None], dtype=np.float64), s[:, None])
    assert report["max_abs_error"] <= 1e-12 and report["labels_equal"], report
