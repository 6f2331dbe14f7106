"""MultivariateBernsteinCalibrator: optimality, monotonicity, invariants and bad input."""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
from _scores import make_score_columns as make_scores
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from bernonnx import BernsteinCalibrator
from bernonnx._base import AUTO_DEGREES
from bernonnx._core import tensor as tm
from bernonnx._core.newton import TENSOR, newton
from bernonnx._core.points import Points
from bernonnx._core.qp import Lattice
from bernonnx._core.transforms import apply_transform
from bernonnx.calibrators import multivariate as mv
from bernonnx.calibrators.multivariate import MultivariateBernsteinCalibrator

TRANSFORMS = ["quantile", "logistic", "minmax"]
LOSSES = ["squared", "log"]
_KEYS = ("shift", "scale", "scale_below", "knots", "levels")


def transformed(cal, s):
    """The ``u`` matrix the fitted calibrator's transforms give."""
    params = {k: getattr(cal, k + "_") for k in _KEYS if hasattr(cal, k + "_")}
    return np.stack(
        [
            apply_transform(cal.score_transform, s[:, m], {k: p[m] for k, p in params.items()})[0]
            for m in range(s.shape[1])
        ],
        axis=1,
    )


def tensor_basis_matrix(u, degrees):
    """The ``n x prod(K_m + 1)`` tensor basis, one row-wise Kronecker product per row."""
    out = np.ones((u.shape[0], 1))
    for m, d in enumerate(degrees):
        b = binom.pmf(np.arange(d + 1), d, u[:, m, None])
        out = (out[:, :, None] * b[:, None, :]).reshape(u.shape[0], -1)
    return out


def full_problem_objective(u, y, w, degrees, loss):
    """Eq. 13 of the paper (or its logistic version) handed to cvxpy as it stands."""
    basis = tensor_basis_matrix(u, degrees)
    shape = tuple(d + 1 for d in degrees)
    c = cp.Variable(basis.shape[1])
    z = basis @ c
    if loss == "squared":
        objective = cp.sum(cp.multiply(w, cp.square(z - y)))
        box = [c[0] >= 0, c[-1] <= 1]
    else:
        objective = cp.sum(cp.multiply(w, cp.logistic(z) - cp.multiply(y, z)))
        box = [c[0] >= -15, c[-1] <= 15]
    idx = np.arange(basis.shape[1]).reshape(shape)
    monotone = [
        c[np.take(idx, range(1, k), axis=m).ravel()]
        >= c[np.take(idx, range(k - 1), axis=m).ravel()]
        for m, k in enumerate(shape)
    ]
    problem = cp.Problem(cp.Minimize(objective), box + monotone)
    with warnings.catch_warnings():
        # Clarabel sometimes ends at "optimal_inaccurate" on the exponential cone; its
        # value is then slightly off, which only makes the comparison stricter when low
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL)
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    return problem.value, basis


def objective(basis, coef, y, w, loss):
    z = basis @ coef.ravel()
    if loss == "squared":
        return float(np.sum(w * (z - y) ** 2))
    return float(np.sum(w * (np.logaddexp(0, z) - y * z)))


# --- the tensor-product math -------------------------------------------------------


@pytest.mark.parametrize("degrees", [(3,), (2, 4), (3, 1, 2), (1, 2, 1, 2)])
def test_tensor_moments_gram_and_eval_match_the_explicit_basis(degrees):
    rng = np.random.default_rng(len(degrees))
    u = rng.random((700, len(degrees)))
    u[:5] = 0.0
    u[5:10] = 1.0
    w = rng.uniform(0.1, 2.0, 700)
    y = rng.random(700)
    basis = tensor_basis_matrix(u, degrees)
    double = tuple(2 * d for d in degrees)
    t = tm.tensor_moments(u, 1 - u, np.stack([w, w * y], axis=1), double)
    np.testing.assert_allclose(t[..., 0].ravel(), tensor_basis_matrix(u, double).T @ w, rtol=1e-12)
    gram = tm.tensor_gram(t[..., 0], degrees)
    np.testing.assert_allclose(gram, basis.T @ (w[:, None] * basis), rtol=1e-10, atol=1e-13)
    rhs = tm.mode_product(t[..., 1], tm._elevation_to_double(degrees)).ravel()
    np.testing.assert_allclose(rhs, basis.T @ (w * y), rtol=1e-10, atol=1e-13)
    coef = rng.normal(size=tuple(d + 1 for d in degrees))
    np.testing.assert_allclose(tm.tensor_eval(u, 1 - u, coef), basis @ coef.ravel(), atol=1e-12)
    high = tm.elevate(coef, tuple(d + 2 for d in degrees))
    np.testing.assert_allclose(tm.tensor_eval(u, 1 - u, high), basis @ coef.ravel(), atol=1e-12)


def test_auto_grid_keeps_at_most_256_coefficients():
    assert mv._auto_degrees(2) == [1, 2, 3, 4, 5, 6, 8, 10, 12, 15]
    assert mv._auto_degrees(3) == [1, 2, 3, 4, 5]
    assert mv._auto_degrees(4) == [1, 2, 3]
    assert mv._auto_degrees(5) == [1, 2]
    assert mv._auto_degrees(8) == [1]
    for m_axes in range(2, 9):
        assert (max(mv._auto_degrees(m_axes)) + 1) ** m_axes <= 256


# --- optimality --------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    ("degrees", "transform"),
    [((4, 3), "quantile"), ((6, 6), "logistic"), ((2, 3, 2), "quantile"), ((3, 2, 2), "minmax")],
)
def test_objective_matches_full_cvxpy_problem(loss, degrees, transform):
    s, y = make_scores(800, n_cols=len(degrees), seed=sum(degrees))
    w = np.random.default_rng(1).uniform(0.2, 2.0, size=s.shape[0])
    cal = MultivariateBernsteinCalibrator(degree=degrees, loss=loss, score_transform=transform)
    cal.fit(s, y, w)
    reference, basis = full_problem_objective(transformed(cal, s), y, w, degrees, loss)
    # the min_slope margin costs a relative ~1e-7 against the plain monotone problem
    assert objective(basis, cal.coef_, y, w, loss) <= reference * (1 + 1e-6)


def test_binned_log_fit_is_polished_to_the_exact_optimum():
    # above 2**15 rows the log loss is first solved on binned data
    s, y = make_scores(40000, seed=3)
    cal = MultivariateBernsteinCalibrator(degree=(4, 4), loss="log").fit(s, y)
    u = transformed(cal, s)
    w = np.ones(s.shape[0])
    lattice = Lattice((5, 5), -15.0, 15.0, cal.min_slope)
    exact = newton(TENSOR, Points(u, 1 - u, y.astype(float), w), lattice, cal.coef_.ravel() * 0)
    exact = exact.reshape(lattice.shape)
    basis = tensor_basis_matrix(u, (4, 4))
    ours, best = (objective(basis, c, y, w, "log") for c in (cal.coef_, exact))
    assert ours <= best * (1 + 1e-8)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_one_column_is_the_1d_calibrator(loss, transform):
    s, y = make_scores(2000, n_cols=1, seed=4)
    grid = np.linspace(-5, 5, 201)
    ours = MultivariateBernsteinCalibrator(degree=9, loss=loss, score_transform=transform)
    ref = BernsteinCalibrator(degree=9, loss=loss, score_transform=transform).fit(s[:, 0], y)
    # the 1-D calibrator adds an unfitted tail term (bernonnx._core.tail) that the tensor
    # product has not: the fitted polynomials are what must agree
    assert ref.tail_slope_ == (1e-4 if (loss, transform) == ("log", "logistic") else 0.0)
    ref.tail_slope_ = 0.0
    np.testing.assert_allclose(
        ours.fit(s, y).predict_proba(grid[:, None]), ref.predict_proba(grid), atol=1e-5
    )


def test_one_column_auto_picks_the_1d_degree():
    s, y = make_scores(3000, n_cols=1, seed=5)
    ours = MultivariateBernsteinCalibrator(loss="log").fit(s, y)
    # the 1-D calibrator scoring every candidate, as the tensor search does ("auto"
    # skips some: here a dip at degree 3 between its coarse candidates 2 and 4)
    degrees = list(AUTO_DEGREES)
    ref = BernsteinCalibrator(degrees, loss="log", score_transform="quantile").fit(s[:, 0], y)
    assert ours.degrees_ == (ref.degree_,)
    # the same folds; the tensor search fits every fold, the 1-D search takes two
    # Newton steps per fold from the fit on all of them (select_degree_by_steps):
    # the validation losses agree to the step's error, far below their spread
    np.testing.assert_allclose(ours.cv_log_loss_, ref.cv_log_loss_, rtol=3e-4)
    assert np.ptp(ref.cv_log_loss_) > 10 * np.abs(ours.cv_log_loss_ - ref.cv_log_loss_).max()


# --- shape guarantees --------------------------------------------------------------


def _score_axis(col, rng):
    lo, hi = col.min(), col.max()
    span = max(hi - lo, 1.0)
    inner = np.linspace(lo - span, hi + span, 13)
    return np.sort(np.r_[inner, rng.choice(col, size=min(4, col.size)), -1e300, 1e300])


@st.composite
def problems(draw):
    m_axes = draw(st.integers(1, 3))
    n = draw(st.integers(8, 150))
    degrees = tuple(draw(st.integers(1, 6)) for _ in range(m_axes))
    if math.prod(d + 1 for d in degrees) > 120:
        degrees = (2,) * m_axes
    cols = draw(
        st.lists(
            st.sampled_from(["normal", "wide", "ties", "constant"]),
            min_size=m_axes,
            max_size=m_axes,
        )
    )
    return m_axes, n, degrees, cols


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    seed=st.integers(0, 2**31),
    loss=st.sampled_from(LOSSES),
    transform=st.sampled_from(TRANSFORMS),
)
def test_monotone_in_every_score_and_bounded_everywhere(problem, seed, loss, transform):
    m_axes, n, degrees, kinds = problem
    rng = np.random.default_rng(seed)
    cols = {
        "normal": lambda: rng.normal(size=n),
        "wide": lambda: rng.uniform(-1e3, 1e3, size=n),
        "ties": lambda: rng.integers(0, 3, size=n).astype(float),
        "constant": lambda: np.full(n, 2.5),
    }
    s = np.stack([cols[k]() for k in kinds], axis=1)
    y = rng.integers(0, 2, size=n)
    y[:2] = [0, 1]
    cal = MultivariateBernsteinCalibrator(degree=degrees, loss=loss, score_transform=transform)
    cal.fit(s, y)
    assert cal.coef_.shape == tuple(d + 1 for d in degrees)
    lo, hi = (0.0, 1.0) if loss == "squared" else (-15.0, 15.0)
    assert lo <= cal.coef_.min() and cal.coef_.max() <= hi
    if not all(k == "constant" for k in kinds):
        # strictly increasing coefficients along every axis: the min_slope margin
        for m in range(m_axes):
            assert np.all(np.diff(cal.coef_, axis=m) > 0)

    axes = [_score_axis(s[:, m], rng) for m in range(m_axes)]
    grid = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    proba = cal.predict_proba(grid)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    p = proba[:, 1].reshape([a.size for a in axes])
    # monotone up to the rounding of the float64 evaluation (a few ulps per term)
    tol = 8 * cal.coef_.size * np.finfo(float).eps
    for m in range(m_axes):
        assert np.all(np.diff(p, axis=m) >= -tol)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", ["logistic", "quantile"])
def test_distinct_scores_stay_distinct_along_every_axis(loss, transform):
    s, y = make_scores(5000, n_cols=3, seed=6)
    cal = MultivariateBernsteinCalibrator(degree=3, loss=loss, score_transform=transform)
    cal.fit(s, y)
    rng = np.random.default_rng(7)
    base = s[rng.choice(s.shape[0], 50)]
    for m in range(3):
        lo, hi = np.quantile(s[:, m], [0.01, 0.99])
        values = np.sort(rng.uniform(lo, hi, 40))
        rows = np.repeat(base, values.size, axis=0)
        rows[:, m] = np.tile(values, base.shape[0])
        p = cal.predict_proba(rows)[:, 1].reshape(base.shape[0], values.size)
        assert np.all(np.diff(p, axis=1) > 0)


# --- statistical value -------------------------------------------------------------


@pytest.mark.slow  # large samples, the default degree search
def test_two_scores_beat_the_1d_calibrator_on_their_mean():
    def data(n, seed):
        rng = np.random.default_rng(seed)
        s = rng.normal(size=(n, 2))
        truth = 1 / (1 + np.exp(-(2.5 * s[:, 0] + 0.8 * np.tanh(2 * s[:, 1]) - 0.5)))
        return s, (rng.random(n) < truth).astype(int)

    def log_loss(p, y):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))

    s, y = data(4000, 0)
    s_test, y_test = data(40000, 1)
    joint = MultivariateBernsteinCalibrator(loss="log").fit(s, y)
    ours = log_loss(joint.predict_proba(s_test)[:, 1], y_test)
    assert joint.degrees_ in [(d, d) for d in joint.cv_degrees_]
    # measured: 0.400 jointly (0.399 for the truth), 0.501 on the mean score, 0.425 on
    # the better score alone
    for reduce in (lambda x: x.mean(axis=1), lambda x: x[:, 0]):
        cal = BernsteinCalibrator().fit(reduce(s), y)
        assert ours < log_loss(cal.predict_proba(reduce(s_test))[:, 1], y_test) - 0.01


# --- invariants --------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_weights_equal_repetition(loss, transform):
    s, y = make_scores(600, seed=8)
    w = np.random.default_rng(9).integers(0, 4, size=s.shape[0])
    w[:2] = 1
    kwargs = dict(degree=(3, 4), loss=loss, score_transform=transform)
    a = MultivariateBernsteinCalibrator(**kwargs).fit(s, y, w)
    b = MultivariateBernsteinCalibrator(**kwargs).fit(np.repeat(s, w, axis=0), np.repeat(y, w))
    grid = np.random.default_rng(10).normal(scale=2, size=(300, 2))
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-7)


def test_float32_in_float32_out():
    s, y = make_scores(2000, seed=11)
    cal = MultivariateBernsteinCalibrator(degree=5).fit(s.astype(np.float32), y)
    proba = cal.predict_proba(s.astype(np.float32))
    assert proba.dtype == np.float32
    assert cal.predict_proba(s).dtype == np.float64
    ref = MultivariateBernsteinCalibrator(degree=5).fit(s, y)
    np.testing.assert_allclose(proba, ref.predict_proba(s), atol=1e-5)


def test_labels_of_any_type_and_fitted_attributes():
    s, y = make_scores(800, n_cols=3, seed=12)
    ref = MultivariateBernsteinCalibrator(degree=(2, 3, 1), score_transform="logistic").fit(s, y)
    named = MultivariateBernsteinCalibrator(degree=(2, 3, 1), score_transform="logistic")
    named.fit(s, np.where(y == 1, "yes", "no"))
    assert list(named.classes_) == ["no", "yes"]
    np.testing.assert_allclose(named.predict_proba(s), ref.predict_proba(s))
    assert set(named.predict(s)) <= {"no", "yes"}
    assert named.degrees_ == (2, 3, 1) and named.coef_.shape == (3, 4, 2)
    assert named.n_features_in_ == 3
    for key in ("shift_", "scale_", "scale_below_"):
        assert getattr(named, key).shape == (3,)
    quantile = MultivariateBernsteinCalibrator(degree=2).fit(s, y)
    assert len(quantile.knots_) == len(quantile.levels_) == 3
    assert not hasattr(quantile, "shift_")


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_constant_column_is_ignored(loss, transform):
    s, y = make_scores(1500, seed=13)
    with_constant = np.c_[s[:, :1], np.full(s.shape[0], -3.0)]
    cal = MultivariateBernsteinCalibrator(degree=(6, 3), loss=loss, score_transform=transform)
    cal.fit(with_constant, y)
    ref = BernsteinCalibrator(degree=6, loss=loss, score_transform=transform).fit(s[:, 0], y)
    grid = np.linspace(-4, 4, 81)
    for other in (-3.0, 0.0, 1e6):  # the constant column's value does not matter
        p = cal.predict_proba(np.c_[grid, np.full(grid.size, other)])
        np.testing.assert_allclose(p, ref.predict_proba(grid), atol=1e-4)


@pytest.mark.parametrize("loss", LOSSES)
def test_constant_scores_predict_weighted_base_rate(loss):
    y = np.array([0, 1, 1, 0, 1])
    w = np.array([1.0, 2.0, 1.0, 4.0, 2.0])
    cal = MultivariateBernsteinCalibrator(loss=loss).fit(np.full((5, 2), 3.0), y, w)
    p = cal.predict_proba(np.array([[-1e9, 3.0], [3.0, 3.0], [7.0, 1.0]]))[:, 1]
    np.testing.assert_allclose(p, 0.5, rtol=1e-9)


# --- errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        (np.array([[0.1, 0.2], [np.nan, 0.1], [0.3, 0.3]]), [0, 1, 0], "scores contains NaN"),
        (np.array([[0.1, 0.2], [0.2, np.inf], [0.3, 0.3]]), [0, 1, 0], "scores contains inf"),
        (np.ones((3, 2)), [1, 1, 1], "single class"),
        (np.ones((3, 2)), [0, 1, 2], "3 classes"),
        (np.array([0.1, 0.2, 0.3]), [0, 1, 0], "Expected 2D array"),
        (np.ones((1, 2)), [1], "n_samples=1"),
        (np.ones((0, 2)), [], "0 sample"),
        (np.ones((2, 2)), [0, 1, 0], "inconsistent numbers of samples"),
    ],
)
def test_bad_input_is_named(scores, labels, match):
    with pytest.raises(ValueError, match=match):
        MultivariateBernsteinCalibrator(degree=2).fit(scores, np.asarray(labels))


@pytest.mark.parametrize(
    ("degree", "match"),
    [
        (0, "degree"),
        (101, "degree"),
        (-3, "degree"),
        ("high", "degree"),
        (2.5, "degree"),
        ((3,), "sequence of 2 ints"),
        ((3, 0), "sequence of 2 ints"),
        ((3, 101), "sequence of 2 ints"),
        ((2.0, 3.0), "sequence of 2 ints"),
        ((50, 50), "2601 coefficients"),
    ],
)
def test_degree_out_of_range(degree, match):
    s, y = make_scores(100)
    with pytest.raises(ValueError, match=match):
        MultivariateBernsteinCalibrator(degree=degree).fit(s, y)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        (-np.ones(100), "[Nn]egative"),
        (np.zeros(100), "[Ss]ample.weight"),
        (np.r_[np.ones(99), np.nan], "NaN"),
        (np.ones(7), "sample_weight.shape"),
        ((np.arange(100) % 2).astype(float), "single class"),
    ],
)
def test_bad_weights(weights, match):
    s, y = make_scores(100)
    y = np.arange(100) % 2
    with pytest.raises(ValueError, match=match):
        MultivariateBernsteinCalibrator(degree=3).fit(s, y, weights)


def test_unfitted_and_wrong_predict_input():
    with pytest.raises(NotFittedError):
        MultivariateBernsteinCalibrator().predict_proba(np.zeros((3, 2)))
    s, y = make_scores(200)
    cal = MultivariateBernsteinCalibrator(degree=3).fit(s, y)
    with pytest.raises(ValueError, match="scores contains NaN"):
        cal.predict_proba(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="scores contains inf"):
        cal.predict(np.array([[-np.inf, 0.0]]))
    with pytest.raises(ValueError, match="3 features.*expecting 2"):
        cal.predict_proba(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Expected 2D array"):
        cal.predict_proba(np.zeros(4))


def test_solver_status_is_checked(monkeypatch):
    s, y = make_scores(300)

    def ends_with(status):
        def solve(problem, *args, **kwargs):
            for var in problem.variables():
                var.value = np.zeros(var.shape)
            problem._status = status

        return solve

    monkeypatch.setattr(cp.Problem, "solve", ends_with(cp.OPTIMAL_INACCURATE))
    with pytest.warns(ConvergenceWarning, match="optimal_inaccurate"):
        MultivariateBernsteinCalibrator(degree=2).fit(s, y)
    monkeypatch.setattr(cp.Problem, "solve", ends_with(cp.INFEASIBLE))
    with pytest.raises(RuntimeError, match="Clarabel.*status 'infeasible'"):
        MultivariateBernsteinCalibrator(degree=2).fit(s, y)
