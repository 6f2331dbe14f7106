"""BernsteinCalibrator: optimality, invariants, dtypes and bad input."""

import warnings
from functools import partial

import cvxpy as cp
import numpy as np
import pytest
from _scores import make_scores as _make_scores
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import expit
from scipy.stats import binom
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score

from bernonnx import BernsteinCalibrator
from bernonnx._core.transforms import apply_transform

TRANSFORMS = ["logistic", "quantile", "minmax"]
LOSSES = ["log", "squared"]


#: scores N(0, 1), truth sigmoid(2.5 tanh(s) - 1)
make_scores = partial(_make_scores, scale=1.0, offset=1.0)


def _u(cal, s):
    keys = ("shift", "scale", "scale_below", "knots", "levels")
    params = {k: getattr(cal, k + "_") for k in keys if hasattr(cal, k + "_")}
    return apply_transform(cal.score_transform, s, params)[0]


def full_problem_objective(u, y, w, degree, loss):
    """The blog formulation: the n x (d+1) basis matrix handed to cvxpy."""
    v = binom.pmf(np.arange(degree + 1), degree, u[:, None])
    c = cp.Variable(degree + 1)
    z = v @ c
    if loss == "squared":
        objective = cp.sum(cp.multiply(w, cp.square(z - y)))
        box = [c >= 0, c <= 1]
    else:
        objective = cp.sum(cp.multiply(w, cp.logistic(z) - cp.multiply(y, z)))
        box = [c >= -15, c <= 15]
    problem = cp.Problem(cp.Minimize(objective), [*box, cp.diff(c) >= 0])
    with warnings.catch_warnings():
        # Clarabel sometimes stops at "optimal_inaccurate" on the exponential cone; its
        # value is then at most slightly off, which only makes our comparison stricter
        # when it errs low, and is still the reference the issue names
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL)
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    return problem.value, v


def our_objective(v, coef, y, w, loss):
    z = v @ coef
    if loss == "squared":
        return float(np.sum(w * (z - y) ** 2))
    return float(np.sum(w * (np.logaddexp(0, z) - y * z)))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("degree", [3, 10, 20])
def test_objective_matches_full_cvxpy_problem(loss, transform, degree):
    s, y = make_scores(1500, seed=degree)
    w = np.random.default_rng(1).uniform(0.2, 2.0, size=s.shape[0])
    cal = BernsteinCalibrator(degree=degree, loss=loss, score_transform=transform).fit(s, y, w)
    reference, v = full_problem_objective(_u(cal, s), y, w, degree, loss)
    ours = our_objective(v, cal.coef_, y, w, loss)
    assert ours <= reference * (1 + 1e-6)


@pytest.mark.slow  # 40,000 rows against the full cvxpy problem
@pytest.mark.parametrize("loss", LOSSES)
def test_objective_matches_full_problem_on_large_n(loss):
    # above 2**15 rows the log loss is solved on binned data, then polished
    s, y = make_scores(40000, seed=7, tail=True)
    cal = BernsteinCalibrator(degree=8, loss=loss).fit(s, y)
    w = np.ones(s.shape[0])
    reference, v = full_problem_objective(_u(cal, s), y, w, 8, loss)
    assert our_objective(v, cal.coef_, y, w, loss) <= reference * (1 + 1e-6)


@pytest.mark.parametrize("loss", LOSSES)
def test_cvxpy_solver_option_agrees(loss):
    s, y = make_scores(3000, seed=2)
    a = BernsteinCalibrator(degree=12, loss=loss).fit(s, y)
    b = BernsteinCalibrator(degree=12, loss=loss, solver="cvxpy").fit(s, y)
    grid = np.linspace(-4, 4, 101)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=2e-4)


scores_strategy = arrays(
    np.float64,
    st.integers(8, 300),
    elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    s=scores_strategy,
    seed=st.integers(0, 2**31),
    degree=st.integers(1, 40),
    loss=st.sampled_from(LOSSES),
    transform=st.sampled_from(TRANSFORMS),
)
def test_monotone_and_bounded_everywhere(s, seed, degree, loss, transform):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=s.shape[0])
    y[:2] = [0, 1]
    cal = BernsteinCalibrator(degree=degree, loss=loss, score_transform=transform).fit(s, y)
    lo, hi = s.min(), s.max()
    span = max(hi - lo, 1.0)
    grid = np.sort(np.r_[np.linspace(lo - span, hi + span, 400), s, -1e300, 1e300])
    proba = cal.predict_proba(grid)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # monotone up to the rounding of the float64 evaluation (a few ulps); where
    # scores differ by more than rounding, order is kept exactly (tests below)
    assert np.all(np.diff(proba[:, 1]) >= -8 * (degree + 1) * np.finfo(float).eps)
    assert np.all(np.diff(cal.coef_) > 0) or np.ptp(s) == 0


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", ["logistic", "quantile"])
@pytest.mark.parametrize("seed", range(4))
def test_ranking_and_auc_kept_exactly(loss, transform, seed):
    s, y = make_scores(20000, seed=seed)
    s_test, y_test = make_scores(20000, seed=seed + 100)
    if transform == "quantile":  # clipped outside the fitted range by definition
        inside = (s_test > s.min()) & (s_test < s.max())
        s_test, y_test = s_test[inside], y_test[inside]
    cal = BernsteinCalibrator(loss=loss, score_transform=transform).fit(s, y)
    p = cal.predict_proba(s_test)[:, 1]
    assert np.all(np.diff(p[np.argsort(s_test)]) > 0), "distinct scores must stay distinct"
    assert roc_auc_score(y_test, p) == roc_auc_score(y_test, s_test)


@pytest.mark.parametrize("loss", LOSSES)
def test_heavy_tails_keep_the_bulk_strictly_ordered(loss):
    # 1% of scores x30: far out the calibrated probability changes by less than
    # one ulp (a float64 limit, documented), so strictness is asserted over the
    # 1st..99th percentile of the calibration scores
    s, y = make_scores(20000, seed=11, tail=True)
    s_test, _ = make_scores(20000, seed=12, tail=True)
    cal = BernsteinCalibrator(loss=loss).fit(s, y)
    lo, hi = np.quantile(s, [0.01, 0.99])
    bulk = np.sort(s_test[(s_test > lo) & (s_test < hi)])
    assert np.all(np.diff(cal.predict_proba(bulk)[:, 1]) > 0)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_weights_equal_repetition(loss, transform):
    s, y = make_scores(600, seed=3)
    w = np.random.default_rng(4).integers(0, 4, size=s.shape[0])
    w[:2] = 1
    a = BernsteinCalibrator(degree=9, loss=loss, score_transform=transform).fit(s, y, w)
    b = BernsteinCalibrator(degree=9, loss=loss, score_transform=transform).fit(
        np.repeat(s, w), np.repeat(y, w)
    )
    grid = np.linspace(-5, 5, 201)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-7)


def test_auto_degree_picks_from_grid_and_records_curve():
    s, y = make_scores(5000, seed=5)
    cal = BernsteinCalibrator().fit(s, y)
    assert cal.degree_ in cal.cv_degrees_
    assert cal.cv_log_loss_.shape == cal.cv_degrees_.shape
    assert cal.coef_.shape == (cal.degree_ + 1,)
    custom = BernsteinCalibrator(degree=[3, 5]).fit(s, y)
    assert custom.degree_ in (3, 5)
    assert list(custom.cv_degrees_) == [3, 5]
    # "auto" scores every other candidate until two in a row bring no new least loss,
    # the last, and both neighbours of its choice (NaN for the others); a grid of the
    # same degrees scores every one
    scored = ~np.isnan(cal.cv_log_loss_)
    index = int(np.flatnonzero(cal.cv_degrees_ == cal.degree_)[0])
    even = scored[:-1:2]
    stop = int(np.argmin(even)) if not even.all() else even.size
    assert even[:stop].all() and stop >= 3 and scored[-1]
    assert scored[max(index - 1, 0) : index + 2].all() and scored.sum() < scored.size
    assert cal.cv_log_loss_[index] == np.nanmin(cal.cv_log_loss_)
    grid = BernsteinCalibrator(degree=list(cal.cv_degrees_)).fit(s, y)
    assert not np.isnan(grid.cv_log_loss_).any()
    np.testing.assert_allclose(cal.cv_log_loss_[scored], grid.cv_log_loss_[scored], rtol=1e-5)


def test_auto_beats_an_underfit_fixed_degree_on_a_steep_curve():
    rng = np.random.default_rng(0)
    s = rng.normal(size=20000)
    y = (rng.random(20000) < np.where(s > 0.5, 0.9, 0.05)).astype(int)
    s_test = rng.normal(size=20000)
    y_test = (rng.random(20000) < np.where(s_test > 0.5, 0.9, 0.05)).astype(int)
    auto = BernsteinCalibrator().fit(s, y)
    low = BernsteinCalibrator(degree=2).fit(s, y)

    def ll(c):
        p = c.predict_proba(s_test)[:, 1]
        return -np.mean(y_test * np.log(p) + (1 - y_test) * np.log1p(-p))

    assert auto.degree_ > 2
    assert ll(auto) < ll(low)


def test_labels_of_any_type_and_permutation():
    s, y = make_scores(800, seed=6)
    ref = BernsteinCalibrator(degree=6).fit(s, y)
    names = np.where(y == 1, "yes", "no")
    named = BernsteinCalibrator(degree=6).fit(s, names)
    assert list(named.classes_) == ["no", "yes"]
    np.testing.assert_allclose(named.predict_proba(s), ref.predict_proba(s))
    assert set(named.predict(s)) <= {"no", "yes"}
    # scores rank classes_[1] (the label that sorts last), as in scikit-learn:
    # the same labels under other names give the same probabilities
    renamed = BernsteinCalibrator(degree=6).fit(s, np.where(y == 1, "z", "a"))
    np.testing.assert_allclose(renamed.predict_proba(s), ref.predict_proba(s))
    np.testing.assert_allclose(
        BernsteinCalibrator(degree=6).fit(s, 2 * y - 1).predict_proba(s), ref.predict_proba(s)
    )


def test_float32_in_float32_out_and_column_input():
    s, y = make_scores(2000, seed=8)
    cal = BernsteinCalibrator(degree=10).fit(s.astype(np.float32), y)
    proba = cal.predict_proba(s.astype(np.float32))
    assert proba.dtype == np.float32
    ref = BernsteinCalibrator(degree=10).fit(s, y)
    np.testing.assert_allclose(proba, ref.predict_proba(s), atol=1e-5)
    np.testing.assert_array_equal(cal.predict_proba(s[:, None].astype(np.float32)), proba)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_constant_scores_predict_weighted_base_rate(loss, transform):
    y = np.array([0, 1, 1, 0, 1])
    w = np.array([1.0, 2.0, 1.0, 4.0, 2.0])
    cal = BernsteinCalibrator(loss=loss, score_transform=transform).fit(np.full(5, 3.0), y, w)
    p = cal.predict_proba(np.array([-1e9, 3.0, 7.0]))[:, 1]
    np.testing.assert_allclose(p, 0.5, rtol=1e-9)


def test_zero_weight_rows_are_absent_rows():
    s, y = make_scores(400, seed=9)
    w = np.ones_like(s)
    w[:50] = 0
    s_out = s.copy()
    s_out[:50] = 1e6  # an outlier with zero weight must not move the transform
    for transform in TRANSFORMS:
        a = BernsteinCalibrator(degree=5, score_transform=transform).fit(s_out, y, w)
        b = BernsteinCalibrator(degree=5, score_transform=transform).fit(s[50:], y[50:])
        grid = np.linspace(-3, 3, 50)
        np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-9)


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
def test_bad_input_is_named(scores, labels, match):
    with pytest.raises(ValueError, match=match):
        BernsteinCalibrator(degree=3).fit(scores, np.asarray(labels))


@pytest.mark.parametrize("degree", [0, 101, -3, "high", 2.5, [0, 4], [3.5], []])
def test_degree_out_of_range(degree):
    s, y = make_scores(100)
    with pytest.raises(ValueError, match="degree"):
        BernsteinCalibrator(degree=degree).fit(s, y)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        (-np.ones(100), "[Nn]egative"),
        (np.zeros(100), "[Ss]ample.weight"),
        (np.r_[np.ones(99), np.nan], "sample_weight contains NaN|NaN"),
        (np.ones(7), "sample_weight.shape"),
    ],
)
def test_bad_weights(weights, match):
    s, y = make_scores(100)
    with pytest.raises(ValueError, match=match):
        BernsteinCalibrator(degree=3).fit(s, y, weights)


def test_unfitted_and_wrong_predict_input():
    with pytest.raises(NotFittedError):
        BernsteinCalibrator().predict_proba(np.zeros(3))
    s, y = make_scores(200)
    cal = BernsteinCalibrator(degree=3).fit(s, y)
    with pytest.raises(ValueError, match="scores contains NaN"):
        cal.predict_proba(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="scores must be a 1-D array"):
        cal.predict_proba(np.zeros((4, 3)))


def test_refit_leaves_no_attribute_of_the_previous_fit():
    """A refit with other settings deletes what only the earlier fit set: the degree
    search's cv_* arrays and another transform's parameters (knots_, levels_)."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=(2000, 1))
    y = (rng.random(2000) < expit(2 * s[:, 0])).astype(int)
    cal = BernsteinCalibrator(degree="auto", score_transform="quantile").fit(s, y)
    assert all(hasattr(cal, a) for a in ("cv_degrees_", "knots_", "levels_"))
    cal.set_params(degree=5, score_transform="logistic").fit(s, y)
    assert not any(hasattr(cal, a) for a in ("cv_degrees_", "cv_log_loss_", "knots_", "levels_"))
    fresh = BernsteinCalibrator(degree=5, score_transform="logistic").fit(s, y)
    np.testing.assert_array_equal(cal.predict_proba(s), fresh.predict_proba(s))
    assert sorted(k for k in vars(cal) if k.endswith("_")) == sorted(
        k for k in vars(fresh) if k.endswith("_")
    )


@pytest.mark.parametrize(
    "calibrator",
    [
        BernsteinCalibrator(degree=20),
        BernsteinCalibrator(degree=20, score_transform="quantile"),
        BernsteinCalibrator(degree=20, score_transform="minmax", loss="squared"),
    ],
    ids=repr,
)
def test_a_scores_probability_does_not_depend_on_its_batch(calibrator):
    # Spark's Arrow batches, Dask blocks and serving one row at a time must agree
    # to the bit with one call on every score
    rng = np.random.default_rng(0)
    s = rng.normal(size=30_000) * 3
    y = (rng.random(30_000) < 1 / (1 + np.exp(-s))).astype(int)
    full = calibrator.fit(s, y).predict_proba(s)
    for n in (1, 3, 7, 9, 17, 1_000, 8_191, 8_193, 16_385):
        for offset in (0, 1, 5):
            part = calibrator.predict_proba(s[offset : offset + n])
            assert np.array_equal(part, full[offset : offset + n])
