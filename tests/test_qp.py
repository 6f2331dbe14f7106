"""The chain QP solver: exact optimum, exact feasibility, warm starts (issue 12)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bernonnx._core import chain_daqp
from bernonnx._core.qp import (
    _chain_active_set,
    gap_step,
    project_monotone,
    solve_monotone_qp,
    solve_monotone_qp_cvxpy,
)


@pytest.fixture(params=["daqp", "numpy"])
def engine(request, monkeypatch):
    """Both paths of the chain QP: DAQP's active set then the numpy method, and the
    numpy method alone (the fallback when DAQP is not installed)."""
    if request.param == "daqp" and not chain_daqp.available():
        pytest.skip("daqp is not installed (pip install bernonnx[fast])")
    monkeypatch.setattr(chain_daqp, "ENABLED", request.param == "daqp")
    return request.param


def _objective(h, q, x):
    return 0.5 * x @ h @ x + q @ x


def _assert_exactly_feasible(x, lo, hi, min_step):
    gap = gap_step(lo, hi, x.shape[0] - 1, min_step)
    assert x[0] >= lo
    assert x[-1] <= hi
    assert np.all(np.diff(x) >= gap)


@st.composite
def _problems(draw):
    """A PSD Hessian (rank-deficient when ``rows < d + 1``), a gradient, bounds and a start."""
    d = draw(st.integers(0, 30))
    rows = draw(st.integers(1, 2 * d + 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, d + 1))
    h = a.T @ a
    q = rng.normal(size=d + 1) * draw(st.sampled_from([0.1, 1.0, 30.0]))
    lo, hi = draw(st.sampled_from([(0.0, 1.0), (-15.0, 15.0), (-2.0, 0.5)]))
    min_step = draw(st.sampled_from([0.0, 1e-7, 1e-3, 0.3]))
    start = draw(st.sampled_from(["none", "random", "tied", "optimum"]))
    return h, q, lo, hi, min_step, start, rng


@settings(max_examples=80, deadline=None)
@given(problem=_problems())
@pytest.mark.parametrize("use_daqp", [True, False])
def test_active_set_matches_cvxpy_on_random_psd_problems(problem, use_daqp):
    if use_daqp and chain_daqp._daqp is None:
        pytest.skip("daqp is not installed (pip install bernonnx[fast])")
    chain_daqp.ENABLED = use_daqp
    try:
        _check_against_cvxpy(*problem)
    finally:
        chain_daqp.ENABLED = True


def _check_against_cvxpy(h, q, lo, hi, min_step, start, rng):
    n = q.shape[0]
    x0 = None
    if start == "random":
        x0 = rng.uniform(lo - 1, hi + 1, size=n)
    elif start == "tied":
        # a start with ties through the ramp round trip, as the Newton steps pass it
        x0 = project_monotone(np.repeat(rng.uniform(lo, hi, size=3), n)[:n], lo, hi, min_step)
    elif start == "optimum":
        x0 = solve_monotone_qp(h, q, lo, hi, min_step=min_step)
    x = solve_monotone_qp(h, q, lo, hi, x0=x0, min_step=min_step)
    xc = solve_monotone_qp_cvxpy(h, q, lo, hi, min_step=min_step)
    _assert_exactly_feasible(x, lo, hi, min_step)
    f, fc = _objective(h, q, x), _objective(h, q, xc)
    scale = 1.0 + abs(fc) + np.abs(h).max() * max(abs(lo), abs(hi)) ** 2
    # the exact active-set optimum is never worse than the interior-point one
    assert f <= fc + 1e-8 * scale
    assert f == pytest.approx(fc, abs=1e-6 * scale)


@pytest.mark.parametrize("min_step", [0.0, 1e-7, 1e-2])
def test_warm_and_cold_starts_give_the_same_optimum(min_step, engine):
    rng = np.random.default_rng(7)
    for _ in range(40):
        d = int(rng.integers(1, 30))
        a = rng.normal(size=(3 * d + 3, d + 1))
        h, q = a.T @ a, rng.normal(size=d + 1) * 10
        cold = solve_monotone_qp(h, q, -3.0, 3.0, min_step=min_step)
        for x0 in (
            cold,
            project_monotone(rng.normal(size=d + 1), -3.0, 3.0, min_step),
            project_monotone(np.zeros(d + 1), -3.0, 3.0, min_step),
        ):
            warm = solve_monotone_qp(h, q, -3.0, 3.0, x0=x0, min_step=min_step)
            # well conditioned: the optimum is unique and both are it to rounding
            np.testing.assert_allclose(warm, cold, rtol=0, atol=1e-10)


def test_output_is_exactly_feasible_across_the_ramp(engine):
    # ties of y become increments of exactly the gap after adding the ramp: the
    # rounding of y + gap k must not leave one an ulp short
    rng = np.random.default_rng(1)
    for _ in range(200):
        d = int(rng.integers(1, 40))
        lo, hi = sorted(rng.normal(size=2) * 10)
        h = np.eye(d + 1) * rng.uniform(0.1, 10)
        q = -h @ np.full(d + 1, rng.uniform(lo - 1, hi + 1))  # optimum: mostly one tie run
        min_step = float(rng.choice([1e-7, 1e-3]))
        x = solve_monotone_qp(h, q, lo, hi, min_step=min_step)
        _assert_exactly_feasible(x, lo, hi, min_step)


def test_degree_zero_and_zero_hessian(engine):
    np.testing.assert_allclose(solve_monotone_qp(np.eye(1) * 2, np.array([-1.0]), 0.0, 1.0), [0.5])
    assert solve_monotone_qp(np.eye(1), np.array([5.0]), 0.0, 1.0, x0=np.array([0.3]))[0] == 0.0
    x = solve_monotone_qp(np.zeros((4, 4)), np.zeros(4), 0.0, 1.0, min_step=0.3)
    _assert_exactly_feasible(x, 0.0, 1.0, 0.3)


def test_max_iter_exhausted_raises(monkeypatch):
    monkeypatch.setattr(chain_daqp, "ENABLED", False)  # DAQP's start needs one iteration
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 20))
    with pytest.raises(RuntimeError, match="did not converge"):
        solve_monotone_qp(a.T @ a, rng.normal(size=20) * 100, 0.0, 1.0, max_iter=1)


def test_bounds_must_be_ordered(engine):
    with pytest.raises(ValueError, match="lo must be below hi"):
        solve_monotone_qp(np.eye(3), np.zeros(3), 1.0, 1.0)
    with pytest.raises(ValueError, match="lo must be below hi"):
        solve_monotone_qp(np.eye(3), np.zeros(3), 2.0, 1.0)


def test_constant_columns_and_ties(engine):
    # a Hessian with empty rows and columns (coefficients no point reaches) and a
    # gradient that ties neighbours: the ridge makes the optimum unique, and both
    # paths must find it, exactly feasible
    rng = np.random.default_rng(3)
    for _ in range(30):
        d = int(rng.integers(2, 20))
        a = rng.normal(size=(2 * d, d + 1))
        a[:, rng.integers(0, d + 1, size=2)] = 0.0
        h = a.T @ a
        q = -h @ np.repeat(rng.uniform(-1, 2, size=2), (d + 2) // 2)[: d + 1]
        for min_step in (0.0, 1e-7):
            x = solve_monotone_qp(h, q, 0.0, 1.0, min_step=min_step)
            xc = solve_monotone_qp_cvxpy(h, q, 0.0, 1.0, min_step=min_step)
            _assert_exactly_feasible(x, 0.0, 1.0, min_step)
            scale = 1.0 + np.abs(h).max()
            assert _objective(h, q, x) <= _objective(h, q, xc) + 1e-8 * scale


def test_daqp_start_gives_the_numpy_solution():
    # DAQP's optimal active set, confirmed by the numpy method, is the numpy method's own
    # answer: bit for bit where the optimum's active set is unique
    if not chain_daqp.available():
        pytest.skip("daqp is not installed (pip install bernonnx[fast])")
    rng = np.random.default_rng(11)
    same = 0
    for _ in range(100):
        d = int(rng.integers(0, chain_daqp.MAX_SIZE))
        a = rng.normal(size=(3 * d + 3, d + 1))
        h, q = a.T @ a, rng.normal(size=d + 1) * 10
        lo, hi = -3.0, 3.0
        start = chain_daqp.active_set(h, q, lo, hi)
        assert start is not None
        y = _chain_active_set(h, q, lo, hi, None, 100, 0.0, start)
        ref = _chain_active_set(h, q, lo, hi, None, 100, 0.0)
        np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12)
        same += np.array_equal(y, ref)
    assert same >= 95


@pytest.mark.parametrize("loss", ["squared", "log"])
def test_calibrator_fits_agree_with_and_without_daqp(loss, monkeypatch):
    # the real credit table as the bundled loader gives it (float64), a logistic model's
    # held-out scores: every QP of the fit (the squared loss's cold solves reach DAQP)
    # must come out the same, so the fitted coefficients do
    if not chain_daqp.available():
        pytest.skip("daqp is not installed (pip install bernonnx[fast])")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from bernonnx import BernsteinCalibrator
    from bernonnx.datasets import load_credit_default

    X, y, _ = load_credit_default()
    X, y = X[:6000], y[:6000]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(
        X[:3000], y[:3000]
    )
    s, yc = model.decision_function(X[3000:]), y[3000:]
    fits = {}
    for use in (True, False):
        monkeypatch.setattr(chain_daqp, "ENABLED", use)
        for degree in ("auto", 8):
            cal = BernsteinCalibrator(loss=loss, degree=degree).fit(s, yc)
            fits[use, degree] = cal
    for degree in ("auto", 8):
        on, off = fits[True, degree], fits[False, degree]
        assert on.degree_ == off.degree_
        np.testing.assert_allclose(on.coef_, off.coef_, rtol=0, atol=1e-12)
        assert np.all(np.diff(on.coef_) > 0)
