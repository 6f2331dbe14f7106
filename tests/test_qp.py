"""The chain QP solver: exact optimum, exact feasibility, warm starts (issue 12)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bernonnx._core.qp import (
    gap_step,
    project_monotone,
    solve_monotone_qp,
    solve_monotone_qp_cvxpy,
)


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
def test_active_set_matches_cvxpy_on_random_psd_problems(problem):
    h, q, lo, hi, min_step, start, rng = problem
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
def test_warm_and_cold_starts_give_the_same_optimum(min_step):
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


def test_output_is_exactly_feasible_across_the_ramp():
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


def test_degree_zero_and_zero_hessian():
    np.testing.assert_allclose(solve_monotone_qp(np.eye(1) * 2, np.array([-1.0]), 0.0, 1.0), [0.5])
    assert solve_monotone_qp(np.eye(1), np.array([5.0]), 0.0, 1.0, x0=np.array([0.3]))[0] == 0.0
    x = solve_monotone_qp(np.zeros((4, 4)), np.zeros(4), 0.0, 1.0, min_step=0.3)
    _assert_exactly_feasible(x, 0.0, 1.0, 0.3)


def test_max_iter_exhausted_raises():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 20))
    with pytest.raises(RuntimeError, match="did not converge"):
        solve_monotone_qp(a.T @ a, rng.normal(size=20) * 100, 0.0, 1.0, max_iter=1)
