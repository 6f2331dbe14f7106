"""The default binary calibrator keeps the ranking of the scores in floating point.

Naive Bayes log-odds span -5e8 to 1e4: the logistic transform rounds most of them to
``u = 0``, where the Bernstein polynomial alone is the constant ``c_0``. The tail term
(``bernonnx._core.tail``) keeps them apart. What is asserted: among the test scores, every
pair of distinct scores whose warped values ``z`` differ by more than a rounding
threshold keeps its order strictly (no new ties, no decreases), and the test AUC is
the raw score's.
"""

import numpy as np
import pytest
from _parity import run_onnx, tolerance
from _realdata import DEFAULT_DATA_DIR, DataMissing, load, split
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import roc_auc_score
from sklearn.naive_bayes import GaussianNB

from bernonnx import BernsteinCalibrator, CalibratedClassifier, to_onnx
from bernonnx._core.transforms import logistic_z, rescale
from bernonnx._meta import response_scores


def _neighbours(cal, s):
    """Sorted scores, their calibrated probabilities, and the warped gaps of neighbours."""
    s = np.sort(s)
    p = cal.predict_proba(s)[:, 1]
    params = {k: getattr(cal, k + "_") for k in ("shift", "scale", "scale_below")}
    z = logistic_z(rescale(s, cal.score_exponent_), params)
    rel = np.diff(z) / (1.0 + np.minimum(np.abs(z[1:]), np.abs(z[:-1])))
    return s, p, rel


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31),
    far=st.floats(1e2, 1e9),
    share=st.floats(0.05, 0.6),
    degree=st.sampled_from([3, 8, 20]),
)
def test_saturating_scores_keep_their_order(seed, far, share, degree):
    """Scores with a naive-Bayes-like tail far below the bulk: no decrease anywhere
    (neighbours apart by more than 1e-9 in ``z``, relative to ``1 + |z|``) and strict
    increase where the gap is above 1e-5 and ``p`` is resolved (``1 - p > 1e-6``)."""
    rng = np.random.default_rng(seed)
    n = 3000
    bulk = rng.normal(size=n)
    tail = rng.random(n) < share
    s = np.where(tail, -far * (1 + rng.random(n) * 1e-3), bulk * rng.uniform(1, 30))
    y = rng.random(n) < np.where(tail, 0.1, 1 / (1 + np.exp(-2 * bulk)))
    cal = BernsteinCalibrator(degree=degree).fit(s, y)
    fresh = np.where(tail, -far * (1 + rng.random(n) * 1e-3), bulk * rng.normal(1, 0.1, n))
    _, p, rel = _neighbours(cal, np.r_[s, fresh])
    dp = np.diff(p)
    assert not np.any((rel > 1e-9) & (dp < 0))
    resolved = (rel > 1e-5) & (p[1:] < 1 - 1e-6)
    assert np.all(dp[resolved] > 0)


def _naive_bayes_scores(name):
    try:
        X, y, categorical = load(name, DEFAULT_DATA_DIR)
    except DataMissing as exc:
        pytest.skip(str(exc))
    X = X.drop(columns=categorical).to_numpy(dtype=float)
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y)
    frozen = FrozenEstimator(GaussianNB().fit(X_train, y_train))
    return frozen, X_cal, y_cal, X_test, y_test


@pytest.mark.parametrize("name", ["credit", "magic", "shoppers"])
def test_naive_bayes_log_odds_keep_their_ranking(name):
    """Real naive-Bayes log-odds (credit's reach -3,219, far past the warp's range),
    the default calibrator: every distinct test score keeps its rank strictly (without
    the tail term: 149, 6 and 6 new ties), the test AUC is the raw score's exactly, and
    the graph computes the same probabilities."""
    frozen, X_cal, y_cal, X_test, y_test = _naive_bayes_scores(name)
    clf = CalibratedClassifier(frozen).fit(X_cal, y_cal)
    assert clf.log_odds_ is True
    classes = clf.classes_
    s = response_scores(frozen, X_test, "predict_proba", True, classes)
    cal = clf.calibrated_classifiers_[0].calibrators[0]
    assert cal.tail_slope_ > 0
    order = np.argsort(s, kind="stable")
    p = clf.predict_proba(X_test)[:, 1]
    distinct = np.diff(s[order]) > 0
    assert np.all(np.diff(p[order])[distinct] > 0)
    assert roc_auc_score(y_test, p) == roc_auc_score(y_test, s)
    # the graph: the calibrator on the same scores, at the float64 tolerance
    _, proba = run_onnx(to_onnx(cal, s[:1, None], dtype=np.float64), s[:, None])
    np.testing.assert_allclose(proba, cal.predict_proba(s), rtol=0, atol=tolerance(np.float64))


def test_tail_term_is_bounded_and_off_without_min_slope():
    """The tail term moves the log-odds by at most 0.023 for any finite score, and
    ``min_slope=0`` (the plain non-decreasing fit) or the squared loss leave it out."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=2000)
    y = rng.random(2000) < 1 / (1 + np.exp(-2 * s))
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    plain = BernsteinCalibrator(degree=6, min_slope=0.0).fit(s, y)
    assert cal.tail_slope_ == 1e-4 and plain.tail_slope_ == 0.0
    assert BernsteinCalibrator(degree=6, loss="squared").fit(s, y).tail_slope_ == 0.0
    big = np.finfo(np.float64).max
    eta = np.log(cal.predict_proba(np.array([-big, big])))
    c = cal.coef_
    # p(-big) = expit(c_0 - t), p(big) = expit(c_d + t) with 0 < t <= 1e-4 * log(1 + 1e100)
    limit = 1e-4 * np.log1p(1e100)
    low, high = eta[0, 1] - eta[0, 0], eta[1, 1] - eta[1, 0]
    assert c[0] - limit - 1e-12 <= low < c[0]
    assert c[-1] < high <= c[-1] + limit + 1e-12
