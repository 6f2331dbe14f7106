"""Basis identities and the monotone QP solver."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import comb

from bernonnx._core import basis as bern
from bernonnx._core import loss
from bernonnx._core.qp import gap_step, solve_monotone_qp, solve_monotone_qp_cvxpy

unit = arrays(np.float64, st.integers(1, 60), elements=st.floats(0, 1, allow_subnormal=False))


@settings(max_examples=60, deadline=None)
@given(u=unit, degree=st.integers(0, 60))
def test_basis_matches_binomial_pmf_and_sums_to_one(u, degree):
    basis = bern.bernstein_basis(u, degree)
    k = np.arange(degree + 1)
    # the textbook formula with np.power (scipy's binom.pmf overflows at u ~ 1e-308)
    expected = comb(degree, k) * u[:, None] ** k * (1 - u[:, None]) ** (degree - k)
    # values below 1e-120 are flushed to zero on purpose (see bernstein_basis_t)
    np.testing.assert_allclose(basis, expected, rtol=1e-9, atol=1e-120)
    np.testing.assert_allclose(basis.sum(axis=1), 1.0, rtol=1e-12)
    assert (basis >= 0).all()


@settings(max_examples=60, deadline=None)
@given(u=unit, degree=st.integers(1, 40), extra=st.integers(0, 40))
def test_degree_elevation_is_exact(u, degree, extra):
    e = bern.elevation_matrix(degree, degree + extra)
    np.testing.assert_allclose(
        bern.bernstein_basis(u, degree),
        bern.bernstein_basis(u, degree + extra) @ e.T,
        rtol=1e-9,
        atol=1e-14,
    )
    # elevation is a convex combination: monotone coefficients stay monotone
    np.testing.assert_allclose(e.sum(axis=0)[[0, -1]], [1.0, 1.0])


@pytest.mark.parametrize("degree", [1, 5, 20, 60, 100])
def test_gram_from_moments_equals_direct_products(degree):
    rng = np.random.default_rng(degree)
    u = rng.beta(0.5, 0.5, size=5000)
    w = rng.random(5000)
    y = (rng.random(5000) < u).astype(float)
    gram, h, r = loss.least_squares_terms(u, y, w, degree)
    basis = bern.bernstein_basis(u, degree)
    np.testing.assert_allclose(gram, basis.T @ (w[:, None] * basis), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(h, basis.T @ (w * y), rtol=1e-9, atol=1e-9)
    assert r == pytest.approx(np.sum(w * y**2))


def test_eval_is_chunk_invariant_and_keeps_float32():
    rng = np.random.default_rng(0)
    u = rng.random(bern.CHUNK * 2 + 17)
    coef = np.sort(rng.random(12))
    direct = bern.bernstein_basis(u, 11) @ coef
    np.testing.assert_allclose(bern.bernstein_eval(u, coef), direct, rtol=1e-13)
    assert bern.bernstein_eval(u.astype(np.float32), coef).dtype == np.float32


def _random_qp(rng, d):
    a = rng.normal(size=(3 * d + 3, d + 1))
    h = a.T @ a
    q = rng.normal(size=d + 1) * 10
    return h, q


@pytest.mark.parametrize("d", [1, 2, 5, 20, 60])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-15.0, 15.0)])
@pytest.mark.parametrize("min_step", [0.0, 1e-3])
def test_active_set_matches_cvxpy(d, bounds, min_step):
    rng = np.random.default_rng(d)
    lo, hi = bounds
    for _ in range(5):
        h, q = _random_qp(rng, d)
        x = solve_monotone_qp(h, q, lo, hi, min_step=min_step)
        xc = solve_monotone_qp_cvxpy(h, q, lo, hi, min_step=min_step)

        def f(c, h=h, q=q):
            return 0.5 * c @ h @ c + q @ c

        gap = gap_step(lo, hi, d, min_step)
        assert x[0] >= lo and x[-1] <= hi
        assert np.all(np.diff(x) >= gap * (1 - 1e-9))
        # the exact active-set solution is never worse than the interior point one
        assert f(x) <= f(xc) + 1e-7 * (1 + abs(f(xc)))


def test_active_set_warm_start_gives_same_optimum():
    rng = np.random.default_rng(3)
    for _ in range(30):
        d = int(rng.integers(1, 25))
        h, q = _random_qp(rng, d)
        cold = solve_monotone_qp(h, q, 0.0, 1.0)
        start = np.sort(rng.uniform(-1, 2, size=d + 1))
        warm = solve_monotone_qp(h, q, 0.0, 1.0, x0=start)

        def f(c, h=h, q=q):
            return 0.5 * c @ h @ c + q @ c

        assert f(warm) == pytest.approx(f(cold), rel=1e-9, abs=1e-9)


def test_singular_hessian_is_handled():
    # two distinct points only: the Gram matrix has rank 2 at degree 10
    u = np.repeat([0.2, 0.7], 50)
    y = np.r_[np.zeros(40), np.ones(10), np.zeros(10), np.ones(40)]
    gram, h, _ = loss.least_squares_terms(u, y, np.ones(100), 10)
    x = solve_monotone_qp(2 * gram, -2 * h, 0.0, 1.0)
    fitted = bern.bernstein_basis(np.array([0.2, 0.7]), 10) @ x
    np.testing.assert_allclose(fitted, [0.2, 0.8], atol=1e-6)


def test_bad_bounds_raise():
    with pytest.raises(ValueError, match="lo must be below hi"):
        solve_monotone_qp(np.eye(3), np.zeros(3), 1.0, 1.0)
