"""The classic calibrators: agreement with scikit-learn, invariants, edge
conventions, dtypes and bad input."""

from functools import partial

import numpy as np
import pytest
from _scores import make_scores as _make_scores
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.calibration import _SigmoidCalibration
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression, isotonic_regression
from sklearn.linear_model import LogisticRegression

from bernonnx import CalibratedClassifier
from bernonnx._core.pav import _pav
from bernonnx.calibrators.histogram import HistogramCalibrator, PlattHistogramCalibrator
from bernonnx.calibrators.isotonic import IsotonicCalibrator
from bernonnx.calibrators.platt import PlattCalibrator
from bernonnx.metrics import expected_calibration_error, log_loss

ALL = [
    PlattCalibrator(),
    PlattCalibrator(increasing=False, C=10.0),
    IsotonicCalibrator(),
    HistogramCalibrator(),
    HistogramCalibrator(n_bins=7, strategy="quantile", increasing=True),
    PlattHistogramCalibrator(),
    PlattHistogramCalibrator(n_bins=8, strategy="uniform"),
]
IDS = [repr(c) for c in ALL]
#: The estimators that promise a non-decreasing map.
MONOTONE = [
    PlattCalibrator(),
    IsotonicCalibrator(),
    HistogramCalibrator(strategy="uniform", increasing=True),
    HistogramCalibrator(n_bins=5, strategy="quantile", increasing=True),
    PlattHistogramCalibrator(),
    PlattHistogramCalibrator(n_bins=6, strategy="uniform"),
]


#: scores 2 N(0, 1), truth sigmoid(2.5 tanh(s / 2) - 0.5)
make_scores = partial(_make_scores, scale=2.0, offset=0.5)


def random_weights(n, seed, zeros=0.1):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 3.0, size=n)
    w[rng.random(n) < zeros] = 0.0
    return w


def grid_around(s, n=401):
    lo, hi = s.min(), s.max()
    span = hi - lo
    return np.r_[np.linspace(lo - span, hi + span, n), s]


# ------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("increasing", [True, False])
def test_isotonic_equals_sklearn_with_ties_and_weights(seed, increasing):
    s, y = make_scores(2000, seed=seed, ties=True)
    if not increasing:
        s = -s
    w = random_weights(s.shape[0], seed)
    ours = IsotonicCalibrator(increasing=increasing).fit(s, y, w)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1, increasing=increasing)
    ref.fit(s, y, sample_weight=w)
    x = grid_around(s)
    np.testing.assert_allclose(ours.predict_proba(x)[:, 1], ref.predict(x), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ours.x_thresholds_, ref.X_thresholds_)
    np.testing.assert_allclose(ours.y_thresholds_, ref.y_thresholds_, rtol=0, atol=1e-12)
    assert np.all(np.diff(ours.x_thresholds_) > 0)
    direction = 1 if increasing else -1
    assert np.all(direction * np.diff(ours.y_thresholds_) >= 0)


@pytest.mark.parametrize("out_of_bounds", ["nan", "raise"])
def test_isotonic_out_of_bounds_like_sklearn(out_of_bounds):
    s, y = make_scores(500, seed=1)
    ours = IsotonicCalibrator(out_of_bounds=out_of_bounds).fit(s, y)
    ref = IsotonicRegression(out_of_bounds=out_of_bounds, y_min=0, y_max=1).fit(s, y)
    inside = np.linspace(s.min(), s.max(), 101)
    np.testing.assert_allclose(ours.predict_proba(inside)[:, 1], ref.predict(inside), atol=1e-12)
    outside = np.array([s.min() - 1, s.max() + 1])
    if out_of_bounds == "nan":
        assert np.all(np.isnan(ours.predict_proba(outside)))
    else:
        with pytest.raises(ValueError, match="outside the fitted range"):
            ours.predict_proba(outside)


def test_pav_matches_sklearn_past_the_vectorised_rounds():
    # a staircase then a drop needs one pooling round per step: the stack pass
    # finishes what the vectorised rounds leave
    rng = np.random.default_rng(0)
    cases = [
        np.r_[np.linspace(0.1, 0.9, 50), 0.0],
        rng.random(3000),
        np.r_[np.arange(40.0), np.arange(40.0)[::-1], -np.arange(20.0)],
    ]
    for y in cases:
        w = rng.uniform(0.1, 2.0, size=y.shape[0])
        for increasing in (True, False):
            ref = isotonic_regression(y, sample_weight=w, increasing=increasing)
            np.testing.assert_allclose(_pav(y, w, increasing), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_platt_equals_sklearn_sigmoid_calibration(seed):
    # same target smoothing as sklearn: the two solve one problem; sklearn's
    # L-BFGS stops at gtol=1e-6, so probabilities agree to about 1e-9
    s, y = make_scores(3000, seed=seed)
    w = random_weights(s.shape[0], seed)
    ref = _SigmoidCalibration().fit(s, y, sample_weight=w)
    x = grid_around(s)
    for cal in (PlattCalibrator(increasing=False), PlattCalibrator()):
        cal.fit(s, y, w)
        np.testing.assert_allclose(cal.predict_proba(x)[:, 1], ref.predict(x), atol=1e-6)
        np.testing.assert_allclose([cal.slope_, cal.intercept_], [-ref.a_, -ref.b_], rtol=1e-5)


def platt_objective(theta, t, y, w, C):
    n_pos, n_neg = w[y == 1].sum(), w[y == 0].sum()
    soft = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    eta = theta[0] * t + theta[1]
    return float(w @ (np.logaddexp(0, eta) - soft * eta)) + theta[0] ** 2 / (2 * C)


@pytest.mark.parametrize("C", [np.inf, 0.05, 3.0])
@pytest.mark.parametrize("log_odds", [False, True])
def test_platt_minimises_its_objective(C, log_odds):
    s, y = make_scores(2000, seed=4)
    w = random_weights(s.shape[0], 5)
    if log_odds:
        s = expit(s)
        s[:3] = [0.0, 1.0, 1e-18]  # clipped to eps and 1 - eps
    cal = PlattCalibrator(log_odds=log_odds, C=C, increasing=False).fit(s, y, w)
    if log_odds:
        c = np.clip(s, 1e-15, 1 - 1e-15)
        t = np.log(c / (1 - c))
    else:
        t = s
    ref = minimize(
        platt_objective, [0.0, 0.0], args=(t, y, w, C), method="BFGS", options={"gtol": 1e-9}
    )
    ours = platt_objective([cal.slope_, cal.intercept_], t, y, w, C)
    assert ours <= ref.fun * (1 + 1e-12)
    np.testing.assert_allclose([cal.slope_, cal.intercept_], ref.x, rtol=1e-5, atol=1e-7)


def test_platt_stays_finite_on_separable_scores():
    s = np.r_[np.linspace(-3, -1, 50), np.linspace(1, 3, 50)]
    y = (s > 0).astype(int)
    cal = PlattCalibrator().fit(s, y)
    ref = _SigmoidCalibration().fit(s, y)
    assert np.isfinite(cal.slope_) and cal.slope_ > 0
    p = cal.predict_proba(s)[:, 1]
    assert np.all((p > 0) & (p < 1))
    np.testing.assert_allclose(p, ref.predict(s), atol=1e-6)


def test_platt_increasing_clamps_an_anti_correlated_slope_at_zero():
    s, y = make_scores(2000, seed=2)
    w = random_weights(s.shape[0], 2)
    free = PlattCalibrator(increasing=False).fit(-s, y, w)
    assert free.slope_ < 0
    clamped = PlattCalibrator().fit(-s, y, w)
    assert clamped.slope_ == 0.0
    n_pos, n_neg = w[y == 1].sum(), w[y == 0].sum()
    soft = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    p = clamped.predict_proba(np.array([-5.0, 0.0, 5.0]))[:, 1]
    np.testing.assert_allclose(p, np.average(soft, weights=w), rtol=1e-12)
    # PlattHistogram follows the slope of its Platt part: anti-correlated and
    # unconstrained, its map is non-increasing
    ph = PlattHistogramCalibrator(increasing=False).fit(-s, y, w)
    assert ph.slope_ < 0
    assert np.all(np.diff(ph.predict_proba(np.sort(-s))[:, 1]) <= 0)


# ------------------------------------------------------------------ seed 001


def skewed_probabilities(n, seed):
    """An over-confident, shifted model of a rare class: its log-odds are
    ``2 z + 1`` for true log-odds ``z``, so only a log-odds fit is well specified."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-2.5, 1.5, size=n)
    y = (rng.random(n) < expit(z)).astype(int)
    return expit(2 * z + 1), y


@pytest.mark.parametrize("cls", [PlattCalibrator, PlattHistogramCalibrator])
def test_platt_on_log_odds_beats_platt_on_probabilities(cls):
    p, y = skewed_probabilities(20000, 0)
    p_test, y_test = skewed_probabilities(20000, 1)
    raw = cls(log_odds=False).fit(p, y).predict_proba(p_test)[:, 1]
    odds = cls(log_odds=True).fit(p, y).predict_proba(p_test)[:, 1]
    assert log_loss(y_test, odds) < log_loss(y_test, raw) - 0.01
    ece_raw = expected_calibration_error(y_test, raw, n_bins=15, strategy="quantile")
    ece_odds = expected_calibration_error(y_test, odds, n_bins=15, strategy="quantile")
    assert ece_odds < ece_raw / 3


# ---------------------------------------------------------------- invariants


@pytest.mark.parametrize("cal", ALL, ids=IDS)
def test_weights_equal_repetition(cal):
    s, y = make_scores(800, seed=3, ties=True)
    w = np.random.default_rng(4).integers(0, 4, size=s.shape[0])
    w[:2] = [1, 1]
    y[:2] = [0, 1]
    a = cal.fit(s, y, w).predict_proba(grid_around(s))
    b = cal.fit(np.repeat(s, w), np.repeat(y, w)).predict_proba(grid_around(s))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


@pytest.mark.parametrize("cal", ALL, ids=IDS)
def test_zero_weight_rows_are_absent_rows(cal):
    s, y = make_scores(600, seed=9)
    w = np.ones_like(s)
    w[:60] = 0
    s_out = s.copy()
    s_out[:60] = 1e6  # must move neither the range nor the bins
    a = cal.fit(s_out, y, w).predict_proba(grid_around(s[60:]))
    b = cal.fit(s[60:], y[60:]).predict_proba(grid_around(s[60:]))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("cal", ALL, ids=IDS)
def test_float32_in_float32_out(cal):
    s, y = make_scores(1000, seed=8)
    s32 = s.astype(np.float32)
    proba = cal.fit(s32, y).predict_proba(s32)
    assert proba.dtype == np.float32
    np.testing.assert_array_equal(cal.predict_proba(s32[:, None]), proba)
    ref = cal.fit(s32.astype(np.float64), y).predict_proba(s32.astype(np.float64))
    np.testing.assert_allclose(proba, ref, atol=1e-6)


@pytest.mark.parametrize("cal", ALL, ids=IDS)
def test_constant_scores_predict_weighted_base_rate(cal):
    y = np.array([0, 1, 1, 0, 1])
    w = np.array([1.0, 2.0, 1.0, 4.0, 2.0])  # weighted rate 5 / 10
    s = np.full(5, 0.3)
    p = cal.fit(s, y, w).predict_proba(np.array([-1e9, 0.0, 0.3, 7.0]))[:, 1]
    np.testing.assert_allclose(p, 0.5, rtol=1e-12)


@pytest.mark.parametrize("cal", ALL, ids=IDS)
def test_labels_of_any_type(cal):
    s, y = make_scores(500, seed=6)
    ref = cal.fit(s, y).predict_proba(s)
    named = cal.fit(s, np.where(y == 1, "yes", "no"))
    assert list(named.classes_) == ["no", "yes"]
    np.testing.assert_allclose(named.predict_proba(s), ref)
    assert set(named.predict(s)) <= {"no", "yes"}
    np.testing.assert_allclose(cal.fit(s, 2 * y - 1).predict_proba(s), ref)


scores_strategy = arrays(
    st.sampled_from([np.float64, np.float32]),
    st.integers(4, 200),
    elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=scores_strategy, seed=st.integers(0, 2**31), which=st.integers(0, len(MONOTONE) - 1))
def test_monotone_bounded_and_dtype_kept(s, seed, which):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=s.shape[0])
    y[:2] = [0, 1]
    w = rng.integers(0, 3, size=s.shape[0]).astype(float)
    w[:2] = 1.0
    cal = MONOTONE[which].fit(s, y, w)
    lo, hi = float(s.min()), float(s.max())
    span = max(hi - lo, 1.0)
    grid = np.sort(np.r_[np.linspace(lo - span, hi + span, 300), s]).astype(s.dtype)
    proba = cal.predict_proba(grid)
    assert proba.dtype == s.dtype
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-6)
    assert np.all(np.diff(proba[:, 1].astype(np.float64)) >= 0)


@settings(max_examples=30, deadline=None)
@given(s=scores_strategy, seed=st.integers(0, 2**31), n_bins=st.integers(1, 20))
def test_histogram_bins_are_valid_and_quantile_bins_never_empty(s, seed, n_bins):
    y = np.random.default_rng(seed).integers(0, 2, size=s.shape[0])
    y[:2] = [0, 1]
    for strategy in ("uniform", "quantile"):
        cal = HistogramCalibrator(n_bins=n_bins, strategy=strategy).fit(s, y)
        edges = cal.bin_edges_
        assert edges.shape[0] <= n_bins - 1
        assert cal.bin_values_.shape == (edges.shape[0] + 1,)
        assert np.all(np.diff(edges) > 0)
        assert np.all(edges < s.max())
        assert np.all((cal.bin_values_ >= 0) & (cal.bin_values_ <= 1))
        if strategy == "quantile":
            occupied = np.unique(np.searchsorted(edges, s.astype(np.float64), side="left"))
            assert occupied.shape[0] == edges.shape[0] + 1


# ----------------------------------------------------------- histogram edges


def test_histogram_uniform_edges_are_right_closed():
    s = np.array([0.0, 0.5, 1.0, 1.0, 1.5, 2.0])
    y = np.array([0, 0, 1, 0, 1, 1])
    cal = HistogramCalibrator(n_bins=2).fit(s, y)
    np.testing.assert_array_equal(cal.bin_edges_, [1.0])
    # bin 0 = (-inf, 1] holds 0, 0.5, 1, 1 (one positive in four); bin 1 = (1, inf)
    np.testing.assert_allclose(cal.bin_values_, [0.25, 1.0])
    edge = 1.0
    x = np.array([-100.0, np.nextafter(edge, 0), edge, np.nextafter(edge, 2), 100.0])
    np.testing.assert_allclose(cal.predict_proba(x)[:, 1], [0.25, 0.25, 0.25, 1.0, 1.0])


def test_histogram_quantile_edges_close_the_bin_they_complete():
    # inverted-CDF median of 1..10 is 5: bins (-inf, 5] and (5, inf) hold five rows each
    s = np.arange(1.0, 11.0)
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1, 0, 1])
    cal = HistogramCalibrator(n_bins=2, strategy="quantile").fit(s, y)
    np.testing.assert_array_equal(cal.bin_edges_, [5.0])
    np.testing.assert_allclose(cal.bin_values_, [0.2, 0.8])
    x = np.array([5.0, np.nextafter(5.0, 6.0)])
    np.testing.assert_allclose(cal.predict_proba(x)[:, 1], [0.2, 0.8])
    # a heavy top value: its quantile edge is dropped rather than leave an empty top bin
    heavy = HistogramCalibrator(n_bins=2, strategy="quantile").fit(
        np.r_[0.0, 0.0, 0.0, np.ones(7)], np.r_[0, 1, 0, 1, 1, 0, 1, 1, 1, 0]
    )
    assert heavy.bin_edges_.shape == (0,)
    np.testing.assert_allclose(heavy.bin_values_, [0.6])


def test_histogram_empty_bins_take_the_nearest_non_empty_bin():
    s = np.array([0.0, 0.1, 0.9, 1.0])
    y = np.array([0, 1, 1, 1])
    four = HistogramCalibrator(n_bins=4).fit(s, y)  # edges 0.25, 0.5, 0.75
    np.testing.assert_allclose(four.bin_edges_, [0.25, 0.5, 0.75])
    # bins 1 and 2 are empty: bin 1 is nearer bin 0, bin 2 nearer bin 3
    np.testing.assert_allclose(four.bin_values_, [0.5, 0.5, 1.0, 1.0])
    three = HistogramCalibrator(n_bins=3).fit(s, y)  # bin 1 empty, equidistant: lower
    np.testing.assert_allclose(three.bin_values_, [0.5, 0.5, 1.0])


def test_histogram_increasing_pools_bin_rates_by_weight():
    s, y = make_scores(3000, seed=12)
    w = random_weights(s.shape[0], 12, zeros=0)
    raw = HistogramCalibrator(n_bins=25, strategy="quantile").fit(s, y, w)
    mono = HistogramCalibrator(n_bins=25, strategy="quantile", increasing=True).fit(s, y, w)
    np.testing.assert_array_equal(raw.bin_edges_, mono.bin_edges_)
    assert np.any(np.diff(raw.bin_values_) < 0), "the data should make raw rates non-monotone"
    bins = np.searchsorted(raw.bin_edges_, s, side="left")
    bin_weight = np.bincount(bins, weights=w)
    expected = isotonic_regression(raw.bin_values_, sample_weight=bin_weight)
    np.testing.assert_allclose(mono.bin_values_, expected, rtol=0, atol=1e-12)


def test_histogram_uniform_spans_the_fitted_range_of_decision_values():
    s, y = make_scores(1000, seed=13)
    s = 40 * s - 300  # far outside [0, 1]
    cal = HistogramCalibrator(n_bins=10).fit(s, y)
    np.testing.assert_allclose(cal.bin_edges_, np.linspace(s.min(), s.max(), 11)[1:-1])


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_platt_histogram_averages_platt_values_per_bin(strategy):
    s, y = make_scores(3000, seed=14)
    w = random_weights(s.shape[0], 14)
    cal = PlattHistogramCalibrator(n_bins=12, strategy=strategy).fit(s, y, w)
    a = cal.slope_ * s + cal.intercept_  # the edges are on the Platt argument
    g = expit(a)
    keep = w > 0
    bins = np.searchsorted(cal.bin_edges_, a[keep], side="left")
    for k in np.unique(bins):
        in_bin = bins == k
        mean = np.average(g[keep][in_bin], weights=w[keep][in_bin])
        assert cal.bin_values_[k] == pytest.approx(mean, rel=1e-12)
    platt = PlattCalibrator().fit(s, y, w)
    assert (cal.slope_, cal.intercept_) == (platt.slope_, platt.intercept_)
    assert np.all(np.diff(cal.bin_values_) >= 0)
    assert np.all(np.isfinite(cal.bin_edges_)) and np.all(np.diff(cal.bin_edges_) > 0)


# ----------------------------------------------------------------- bad input

CLASSES = [PlattCalibrator, IsotonicCalibrator, HistogramCalibrator, PlattHistogramCalibrator]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        (np.array([0.1, np.nan, 0.3]), [0, 1, 0], "scores contains NaN"),
        (np.array([0.1, np.inf, 0.3]), [0, 1, 0], "scores contains inf"),
        (np.array([0.1, 0.2, 0.3]), [1, 1, 1], "single class"),
        (np.array([0.1, 0.2, 0.3]), [0, 1, 2], "3 classes"),
        (np.ones((3, 2)), [0, 1, 0], r"scores must be a 1-D array.*got shape \(3, 2\)"),
        (np.array([]), [], "0 sample"),
        (np.array([0.1, 0.2]), [0, 1, 0], "inconsistent numbers of samples"),
    ],
)
def test_bad_input_is_named(cls, scores, labels, match):
    with pytest.raises(ValueError, match=match):
        cls().fit(scores, np.asarray(labels))


@pytest.mark.parametrize("cls", CLASSES)
def test_one_class_left_after_zero_weights(cls):
    with pytest.raises(ValueError, match="single class among the rows with positive"):
        cls().fit([0.1, 0.2, 0.3], [0, 1, 1], sample_weight=[1.0, 0.0, 0.0])


@pytest.mark.parametrize("cls", [PlattCalibrator, PlattHistogramCalibrator])
def test_log_odds_needs_probabilities(cls):
    with pytest.raises(ValueError, match=r"log_odds=True takes probability scores in \[0, 1\]"):
        cls(log_odds=True).fit([-0.5, 0.2, 0.9], [0, 1, 1])
    cal = cls(log_odds=True).fit([0.0, 0.2, 0.9, 1.0], [0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"got scores in \[0.5, 1.5\]"):
        cal.predict_proba([0.5, 1.5])


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: HistogramCalibrator(n_bins=0), "n_bins"),
        (lambda: HistogramCalibrator(n_bins=2.5), "n_bins"),
        (lambda: PlattHistogramCalibrator(n_bins=-1), "n_bins"),
        (lambda: HistogramCalibrator(strategy="kmeans"), "strategy"),
        (lambda: PlattCalibrator(C=0.0), "'C'"),
        (lambda: PlattCalibrator(eps=0.0), "eps"),
        (lambda: PlattHistogramCalibrator(eps=1e-17), "eps"),
        (lambda: PlattCalibrator(log_odds="yes"), "log_odds"),
        (lambda: IsotonicCalibrator(out_of_bounds="extrapolate"), "out_of_bounds"),
    ],
)
def test_bad_parameters(make, match):
    s, y = make_scores(50)
    with pytest.raises(ValueError, match=match):
        make().fit(s, y)


@pytest.mark.parametrize("cls", CLASSES)
def test_unfitted_and_wrong_predict_input(cls):
    with pytest.raises(NotFittedError):
        cls().predict_proba(np.zeros(3))
    s, y = make_scores(200)
    cal = cls().fit(s, y)
    with pytest.raises(ValueError, match="scores contains NaN"):
        cal.predict_proba(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="scores must be a 1-D array"):
        cal.predict(np.zeros((4, 3)))


# ------------------------------------------------------------------- plug-in


@pytest.mark.parametrize("cal", ALL, ids=IDS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_plugs_into_calibrated_classifier(cal, n_classes):
    X, y = make_classification(
        n_samples=600, n_features=6, n_informative=4, n_classes=n_classes, random_state=0
    )
    clf = CalibratedClassifier(LogisticRegression(), calibrator=cal, cv=3).fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (600, n_classes)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert set(clf.predict(X)) <= set(range(n_classes))
    assert np.mean(clf.predict(X) == y) > 0.6


@pytest.mark.parametrize("cls", [PlattCalibrator, PlattHistogramCalibrator])
def test_log_odds_calibrator_on_predict_proba_scores(cls):
    X, y = make_classification(n_samples=600, random_state=1)
    clf = CalibratedClassifier(
        LogisticRegression(), calibrator=cls(log_odds=True), cv=3, response_method="predict_proba"
    ).fit(X, y)
    proba = clf.predict_proba(X)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
