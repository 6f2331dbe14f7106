"""The EM estimate of class priors: the safeguarded SQUAREM reaches plain EM's maximum,
including the cells where the unguarded one stalled at the prior floor.

Real data as users hold it: the shared diabetes table read by pandas, a logistic
regression calibrated on rows subsampled to 12% positives, target rows of the table's
own held-out rows at other balances. Generated cells (exact posteriors of Gaussian
classes) only as an addition, through hypothesis.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import norm, truncnorm
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import PriorShiftAdapter
from bernonnx._core.priors import (
    _em_eval,
    em_priors,
    kkt_residual,
    likelihood_slope,
    posterior_mean_priors,
    prior_covariance,
)
from bernonnx.datasets import load_diabetes_brfss

FLOOR = 1e-6


def _plain(proba, train_prior, **kw):
    """Plain EM (Saerens et al. 2002), run to a KKT residual far below the test's 1e-6."""
    prior, n_iter, residual = em_priors(
        proba, train_prior, accelerate=False, tol=1e-11, max_iter=200_000, **kw
    )
    assert residual < 1e-11, (n_iter, residual)
    return prior


@pytest.fixture(scope="module")
def diabetes_12():
    """A logistic regression calibrated (sigmoid, 3 folds) on 12% positive diabetes rows,
    and the held-out rows with their labels."""
    X, y = load_diabetes_brfss()
    order = np.random.default_rng(0).permutation(len(X))[:20_000]
    X, y = X.iloc[order].reset_index(drop=True), y.to_numpy()[order]
    train = np.arange(10_000)
    neg, pos = train[y[train] == 0], train[y[train] == 1]
    train = np.concatenate([neg, pos[: int(0.12 / 0.88 * len(neg))]])
    model = CalibratedClassifierCV(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), cv=3
    ).fit(X.iloc[train], y[train])
    train_prior = np.bincount(y[train]) / len(train)
    return model, train_prior, X.iloc[10_000:], y[10_000:]


def _balanced(y, rate, n, seed=0):
    rng = np.random.default_rng(seed)
    k = int(round(rate * n))
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    return np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n - k, False)])


def test_balanced_target_does_not_stall_at_the_floor(diabetes_12):
    # the unguarded SQUAREM put the positive prior at the floor (0.0016 after 1,000
    # steps) where plain EM reaches 0.499 in 68
    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.5, 2772)
    proba = model.predict_proba(X.iloc[rows])
    fast, n_fast, residual = em_priors(proba, train_prior)
    np.testing.assert_allclose(fast, _plain(proba, train_prior), atol=1e-6)
    assert residual < 1e-8 and n_fast < 100
    assert abs(fast[1] - 0.5) < 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        adapter = PriorShiftAdapter(
            FrozenEstimator(model), train_prior=train_prior, n_bootstrap=40, random_state=0
        ).fit(X.iloc[rows])
    np.testing.assert_allclose(adapter.prior_em_, fast, atol=1e-7)
    low, high = adapter.prior_interval_[1]
    assert low <= adapter.prior_[1] <= high and low <= 0.5 <= high


@pytest.mark.parametrize("rate", [0.0, 0.002, 0.02, 0.12, 0.5, 0.9, 0.995, 1.0])
@pytest.mark.parametrize("n", [300, 1200])
def test_accelerated_em_equals_plain_em_on_real_cells(diabetes_12, rate, n):
    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, rate, n, seed=int(rate * 1000) + n)
    proba = model.predict_proba(X.iloc[rows])
    fast, _, residual = em_priors(proba, train_prior)
    assert residual < 1e-8
    np.testing.assert_allclose(fast, _plain(proba, train_prior), atol=1e-6)


def test_bootstrap_rows_each_reach_their_own_maximum(diabetes_12):
    model, train_prior, X, y = diabetes_12
    proba = model.predict_proba(X.iloc[_balanced(y, 0.5, 500)])
    rng = np.random.default_rng(1)
    weights = rng.multinomial(500, np.full(500, 1 / 500), size=6).astype(float)
    batch, _, residual = em_priors(proba, train_prior, weights=weights)
    assert residual < 1e-8
    for row, w in zip(batch, weights, strict=True):
        np.testing.assert_allclose(row, _plain(proba, train_prior, weights=w), atol=1e-6)


def test_the_stopping_rule_is_the_gradient_not_the_step():
    # a start at the floor where the data want 0.3: EM's first steps move the prior by
    # about 1e-6 each (prior times gradient), below any step tolerance, yet the KKT
    # residual (the gradient) is large and EM goes on
    rng = np.random.default_rng(0)
    y = rng.random(2000) < 0.3
    score = rng.normal(np.where(y, 1.0, -1.0), 1.0)
    p1 = 1.0 / (1.0 + np.exp(-2.0 * score))  # exact posterior at priors 0.5 / 0.5
    proba = np.column_stack([1 - p1, p1])
    train = np.array([0.5, 0.5])
    start = np.array([1 - FLOOR, FLOOR])
    _, grad = _em_eval(proba / train, start[None], np.ones((2000, 1)), np.array([2000.0]))
    assert kkt_residual(start[None], grad, FLOOR)[0] > 0.5
    fast, _, residual = em_priors(proba, train, start=start)
    plain = _plain(proba, train, start=start)
    np.testing.assert_allclose(fast, plain, atol=1e-6)
    assert residual < 1e-8 and abs(fast[1] - 0.3) < 0.05


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 4),
    n=st.sampled_from([150, 600, 2500]),
    concentration=st.sampled_from([0.05, 0.3, 1.0, 5.0]),
    separation=st.floats(0.2, 3.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_accelerated_em_equals_plain_em_on_generated_cells(k, n, concentration, separation, seed):
    # Gaussian classes on a line with exact posteriors for the training priors; target
    # priors from a Dirichlet whose small concentrations put classes near 0 and near 1
    rng = np.random.default_rng(seed)
    train = rng.dirichlet(np.full(k, 2.0))
    target = rng.dirichlet(np.full(k, concentration))
    labels = rng.choice(k, n, p=target)
    means = separation * np.arange(k)
    x = rng.normal(means[labels], 1.0)
    logits = -0.5 * (x[:, None] - means[None]) ** 2 + np.log(train)
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    # tol bounds the likelihood's gradient, so the priors' error is about tol over the
    # curvature: on three overlapping classes of 600 rows the default 1e-8 leaves 4e-6
    # (k=3, n=600, concentration 0.3, separation 0.297, seed 3); at 1e-10 the accelerated
    # run meets plain EM's optimum within 5e-7 on 120 generated cells where plain EM converged
    fast, _, residual = em_priors(proba, train, max_iter=20_000, tol=1e-10)
    assert residual < 1e-10
    plain, _, plain_residual = em_priors(
        proba, train, accelerate=False, tol=1e-11, max_iter=200_000
    )
    # plain EM crawls for more than 200,000 steps on the flattest cells (four classes 0.26
    # apart): there it is no reference, and the cell is drawn again
    assume(plain_residual < 1e-11)
    np.testing.assert_allclose(fast, plain, atol=1e-6)


# ------------------------------------------- what the estimate keeps, and its interval


def test_a_move_the_data_are_sure_of_is_kept(diabetes_12):
    # target rows without a single positive: EM takes the positive prior to (near) the
    # floor and prior_ must not be pulled back toward 0.12 (the Fisher rule gave 0.18 on
    # such rows): the posterior mean stays inside the interval (these 2,000 rows cannot
    # tell 0 from 1% positives: its upper end is 0.017), more than 90% of the move is
    # kept, and the adapted log loss is below a tenth of the unadapted one
    model, train_prior, X, y = diabetes_12
    rows = np.flatnonzero(y == 0)[:2000]
    adapter = PriorShiftAdapter(
        FrozenEstimator(model), train_prior=train_prior, n_bootstrap=30, random_state=0
    ).fit(X.iloc[rows])
    em, _, _ = em_priors(model.predict_proba(X.iloc[rows]), train_prior)
    assert em[1] < 0.01
    assert adapter.prior_[1] < 0.1 * train_prior[1]
    raw = -np.log(model.predict_proba(X.iloc[rows])[:, 0]).mean()
    adapted = -np.log(adapter.predict_proba(X.iloc[rows])[:, 0]).mean()
    assert adapted < 0.1 * raw
    low, high = adapter.prior_interval_[1]
    assert low <= adapter.prior_[1] <= high and low <= adapter.prior_em_[1] <= high
    # without the posterior mean, the prior is the add-one one: (n em + 1) / (n + 2)
    plain = PriorShiftAdapter(
        FrozenEstimator(model), train_prior=train_prior, n_bootstrap=0, posterior_mean=False
    ).fit(X.iloc[rows])
    np.testing.assert_allclose(plain.prior_, (len(rows) * plain.prior_em_ + 1) / 2002)
    assert plain.prior_[1] < 1.5 / len(rows)


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.139, 0.5, 0.97])
def test_interval_holds_its_point_estimates(diabetes_12, rate):
    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, rate, 400, seed=3)
    adapter = PriorShiftAdapter(
        FrozenEstimator(model), train_prior=train_prior, n_bootstrap=40, random_state=0
    ).fit(X.iloc[rows])
    for points in (adapter.prior_, adapter.prior_em_):
        assert np.all(adapter.prior_interval_[:, 0] <= points)
        assert np.all(points <= adapter.prior_interval_[:, 1])


def test_bootstrap_in_blocks_is_the_bootstrap(diabetes_12, monkeypatch):
    # the block size bounds memory; resamples estimated one at a time give the same
    # interval as resamples estimated 16 at a time (same draws, same EM)
    import bernonnx.shift._adapter as module

    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.3, 600, seed=4)
    kw = dict(train_prior=train_prior, n_bootstrap=32, random_state=0)
    wide = PriorShiftAdapter(FrozenEstimator(model), **kw).fit(X.iloc[rows])
    monkeypatch.setattr(module, "_BOOTSTRAP_CELLS", 600)
    narrow = PriorShiftAdapter(FrozenEstimator(model), **kw).fit(X.iloc[rows])
    np.testing.assert_allclose(narrow.prior_interval_, wide.prior_interval_, atol=1e-6)
    np.testing.assert_allclose(narrow.prior_se_, wide.prior_se_, atol=1e-6)


# ------------------------------------------------------------------ clone and search


def test_clone_keeps_the_fitted_model(diabetes_12):
    from sklearn.base import clone

    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.4, 500, seed=5)
    adapter = PriorShiftAdapter(model, train_prior=train_prior, n_bootstrap=0)
    copy = clone(adapter)
    assert copy is not adapter and copy.estimator is model
    assert copy.get_params(deep=False).keys() == adapter.get_params(deep=False).keys()
    np.testing.assert_array_equal(copy.fit(X.iloc[rows]).prior_, adapter.fit(X.iloc[rows]).prior_)
    assert not hasattr(clone(copy), "prior_")  # a clone is unfitted


def test_grid_search_and_cross_validation_over_an_adapter(diabetes_12):
    from sklearn.model_selection import GridSearchCV, cross_val_score

    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.45, 900, seed=6)
    before = model.predict_proba(X.iloc[rows[:5]])
    adapter = PriorShiftAdapter(model, train_prior=train_prior, n_bootstrap=0)
    search = GridSearchCV(adapter, {"shrinkage": [0.0, 2.0, 8.0]}, scoring="neg_log_loss", cv=3)
    search.fit(X.iloc[rows], y[rows])  # labels are only read by the score
    assert search.best_estimator_.estimator is model
    assert search.best_estimator_.prior_[1] > 0.3  # it moved toward the target's 0.45
    scores = cross_val_score(adapter, X.iloc[rows], y[rows], scoring="neg_log_loss", cv=3)
    assert np.all(np.isfinite(scores))
    np.testing.assert_array_equal(model.predict_proba(X.iloc[rows[:5]]), before)  # not refit


def test_interval_widened_for_the_calibration_rows(diabetes_12):
    # the calibrator's sampling error adds the variance of an estimate from its m rows
    # (the Fisher variance of the target rows' estimate times n / m) to each half-width
    # of the bootstrap interval about prior_em_, in quadrature; same draws
    from sklearn.frozen import FrozenEstimator as Frozen

    from bernonnx import BernsteinCalibrator, CalibratedClassifier

    model, train_prior, X, y = diabetes_12
    clf = CalibratedClassifier(Frozen(model), BernsteinCalibrator(degree=4))
    clf.fit(X.iloc[:1500], y[:1500])
    rows = _balanced(y[2000:], 0.3, 600, seed=7) + 2000
    read = PriorShiftAdapter(clf, n_bootstrap=40, random_state=0).fit(X.iloc[rows])
    assert read.calibration_rows_ == 1500.0
    alone = PriorShiftAdapter(clf, calibration_rows=1e15, n_bootstrap=40, random_state=0)
    alone.fit(X.iloc[rows])
    proba = clf.predict_proba(X.iloc[rows])
    extra = np.diag(prior_covariance(proba, read.train_prior_, read.prior_em_)) * 600 / 1500
    center, (low, high) = read.prior_em_, alone.prior_interval_.T
    grow = norm.ppf(0.975) ** 2 * extra
    expected = np.stack(
        [
            center - np.sqrt((center - low) ** 2 + grow),
            center + np.sqrt((high - center) ** 2 + grow),
        ],
        axis=1,
    )
    np.testing.assert_allclose(read.prior_interval_, expected, atol=1e-9)
    np.testing.assert_allclose(read.prior_se_, np.sqrt(alone.prior_se_**2 + extra), rtol=1e-9)
    assert np.all(read.prior_interval_[:, 1] - read.prior_interval_[:, 0] > 0.1)
    given = PriorShiftAdapter(model, train_prior=train_prior, n_bootstrap=40, random_state=0)
    assert given.fit(X.iloc[rows]).calibration_rows_ is None  # unknown: not widened


# ------------------------------------ the posterior mean the adapted priors read


@settings(max_examples=60, deadline=None)
@given(
    center=st.floats(-0.5, 1.0),
    se=st.floats(1e-3, 0.5),
)
def test_posterior_mean_is_the_truncated_normal_mean(center, se):
    # a flat prior on [0, 1] and a normal likelihood of mean `center` (an estimate at
    # the floor moved below 0 by its slope times its variance): scipy's truncated
    # normal mean, for the class; a second class with se 0 keeps its prior
    a, b = -center / se, (1 - center) / se
    assume(a < 30)
    reference = truncnorm(a, b, loc=center, scale=se).mean()
    estimate = max(center, 0.0)
    variance = se**2
    slope = (center - estimate) / variance  # <= 0: the move below the floor
    out = posterior_mean_priors(
        np.array([estimate, 1.0]), np.array([se, 0.0]), np.array([slope, 0.0]), [variance, 1]
    )
    np.testing.assert_allclose(out[0] / out[1], reference, rtol=1e-7, atol=1e-12)


def test_posterior_mean_moves_a_class_the_rows_cannot_place():
    # an estimate at the floor: with a flat likelihood (slope 0) and a standard error of
    # 0.1 the class moves in by 0.8 standard errors; with a slope of -1000 (rows sure it
    # is absent) it stays within 1e-3; interior estimates many standard errors away from
    # both ends keep their ratios
    prior = np.array([1e-6, 0.4, 0.6 - 1e-6])
    se, variance = np.array([0.1, 0.01, 0.01]), np.array([0.01, 1e-4, 1e-4])
    flat = posterior_mean_priors(prior, se, np.zeros(3), variance)
    np.testing.assert_allclose(flat[0] / flat[1], 0.1 * np.sqrt(2 / np.pi) / 0.4, rtol=1e-4)
    np.testing.assert_allclose(flat[1] / flat[2], 0.4 / 0.6, rtol=1e-4)
    steep = posterior_mean_priors(prior, se, np.array([-1000.0, 0, 0]), variance)
    assert steep[0] < 1e-3
    np.testing.assert_array_equal(posterior_mean_priors(prior, np.zeros(3)), prior)


@settings(max_examples=80, deadline=None)
@given(
    prior=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=5).filter(lambda v: sum(v) > 0),
    se=st.lists(
        st.one_of(st.just(0.0), st.just(np.inf), st.floats(5e-324, 1e300)),
        min_size=5,
        max_size=5,
    ),
    slope=st.floats(-1e300, 0.0),
    variance=st.floats(0.0, 1e300),
)
def test_posterior_mean_is_finite_for_any_standard_error(prior, se, slope, variance):
    # standard errors from 0 through subnormal and 1e300 to inf (calibration_rows=1e-310
    # gives inf: the variance of an estimate from 1e-310 rows), slopes and variances
    # whose product overflows: priors in [0, 1] summing to 1 and no RuntimeWarning (the
    # suite turns bernonnx's into errors); an infinite standard error is the flat
    # prior's mean, 1/2, for each class
    prior = np.array(prior) / np.sum(prior)
    k = len(prior)
    se = np.array(se[:k])
    out = posterior_mean_priors(prior, se, np.full(k, slope), np.full(k, variance))
    assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-12)
    if np.all(np.isinf(se)):
        np.testing.assert_allclose(out, 1.0 / k, rtol=1e-12)


def test_calibration_rows_far_below_one_give_no_runtime_warning(diabetes_12):
    # calibration_rows=1e-310 is allowed (positive): the standard error the posterior
    # mean reads is inf, which made an inf * 0 (RuntimeWarning: invalid value) before
    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.3, 400, seed=3)
    adapter = PriorShiftAdapter(
        model, train_prior=train_prior, calibration_rows=1e-310, n_bootstrap=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        adapter.fit(X.iloc[rows])
    # nothing is known of the priors: the flat prior's mean, every class alike
    np.testing.assert_allclose(adapter.prior_, [0.5, 0.5], rtol=1e-12)


def test_covariance_of_classes_the_rows_cannot_tell_apart(diabetes_12):
    # class 1 split in two halves the probabilities cannot tell apart: no information on
    # how the two share their mass, an infinite variance for both (a pseudo-inverse gave
    # the second 0 and the third a finite one: certainty, depending on the classes'
    # order); class 0's variance is the binary problem's; the order does not matter
    model, train_prior, X, y = diabetes_12
    rows = _balanced(y, 0.3, 1500)
    proba = model.predict_proba(X.iloc[rows])
    em, _, _ = em_priors(proba, train_prior, tol=1e-12)
    split = np.c_[proba[:, 0], proba[:, 1] / 2, proba[:, 1] / 2]
    halves = np.r_[train_prior[0], train_prior[1] / 2, train_prior[1] / 2]
    variance = np.diag(prior_covariance(split, halves, np.r_[em[0], em[1] / 2, em[1] / 2]))
    assert np.isinf(variance[1:]).all()
    np.testing.assert_allclose(
        variance[0], np.diag(prior_covariance(proba, train_prior, em))[0], rtol=1e-9
    )
    for order in ([1, 0, 2], [2, 1, 0]):
        moved = prior_covariance(
            split[:, order], halves[order], np.r_[em[0], em[1] / 2, em[1] / 2][order]
        )
        np.testing.assert_allclose(np.diag(moved), variance[order], rtol=1e-9)


def test_likelihood_slope_is_zero_at_a_free_maximum(diabetes_12):
    # the slope along each class's direction is 0 at EM's estimate for a class above the
    # floor, and negative for a class held at the floor by rows without it
    model, train_prior, X, y = diabetes_12
    for rows, free in ((_balanced(y, 0.3, 1500), True), (np.flatnonzero(y == 0)[:2000], False)):
        proba = model.predict_proba(X.iloc[rows])
        em, _, _ = em_priors(proba, train_prior, tol=1e-12)
        slope = likelihood_slope(proba, train_prior, em)
        if free:
            np.testing.assert_allclose(slope, 0.0, atol=1e-6)
        else:
            assert slope[1] < -1.0 and abs(slope[0]) < 1e-3
        w = np.random.default_rng(0).integers(0, 3, len(rows)).astype(float)
        repeated = np.repeat(np.arange(len(rows)), w.astype(int))
        np.testing.assert_allclose(
            likelihood_slope(proba, train_prior, em, w),
            likelihood_slope(proba[repeated], train_prior, em),
            rtol=1e-9,
            atol=1e-9,
        )
