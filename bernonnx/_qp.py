"""The feasible sets of the monotone Bernstein fits, and their small quadratic programs.

Both implement the protocol the fitting core (:mod:`bernonnx._newton`) uses:
``shape``, ``lo``, ``hi``, ``project(x)`` (a feasible point near ``x``) and
``qp(h, q, x0=None)`` (minimise ``1/2 x^T h x + q^T x`` over the set; ``x0``
a nearby point). ``x`` is the coefficient tensor flattened in C order.

* :class:`Chain`, one score: ``lo <= x_0 <= x_1 <= ... <= x_d <= hi``.
* :class:`Lattice`, ``M`` scores: non-decreasing along every axis of the
  coefficient tensor (Wang & Liu, Theorem 1), solved by cvxpy with Clarabel.

The chain QP

    minimise    1/2 x^T H x + q^T x
    subject to  lo <= x_0 <= x_1 <= ... <= x_d <= hi

``x`` has ``d + 1`` entries (the Bernstein coefficients), so the problem is
tiny whatever the number of samples. Two solvers:

* :func:`solve_monotone_qp`: a primal active-set method that exploits the
  chain structure of the constraints. An active set is a partition of the
  coefficients into blocks of equal values, the first block possibly pinned
  to ``lo`` and the last to ``hi``; the equality-constrained subproblem is a
  dense solve in the free block values, and the Lagrange multipliers are
  running sums of the gradient inside each block. Exact to rounding error,
  no tolerance to tune, microseconds per iteration.
* :func:`solve_monotone_qp_cvxpy`: the same problem stated in cvxpy and
  handed to a conic solver, for users who prefer it and as a cross-check.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning

#: Relative ridge added to every lattice QP Hessian, as in the chain
#: active-set solver: directions without data (a constant column) still get a
#: unique solution.
_RIDGE = 1e-12


def _blocks(link: np.ndarray) -> list[tuple[int, int]]:
    """Split ``0..d`` into maximal runs joined by active links.

    ``link`` has ``d + 2`` entries: ``link[0]`` is the lower bound,
    ``link[k]`` (``1 <= k <= d``) ties ``x[k-1] = x[k]``, ``link[d+1]`` is the
    upper bound.
    """
    d = link.shape[0] - 2
    starts = [0, *(np.flatnonzero(~link[1 : d + 1]) + 1).tolist()]
    ends = [s - 1 for s in starts[1:]] + [d]
    return list(zip(starts, ends, strict=True))


def _solve_eqp(h, q, link, lo, hi):
    """Minimiser of the objective with the constraints in ``link`` as equalities."""
    d = h.shape[0] - 1
    blocks = _blocks(link)
    x = np.zeros(d + 1)
    free = []
    for a, b in blocks:
        if a == 0 and link[0]:
            x[a : b + 1] = lo
        elif b == d and link[d + 1]:
            x[a : b + 1] = hi
        else:
            free.append((a, b))
    if free:
        z = np.zeros((d + 1, len(free)))
        for j, (a, b) in enumerate(free):
            z[a : b + 1, j] = 1.0
        reduced = z.T @ h @ z
        rhs = -z.T @ (q + h @ x)
        x = x + z @ _solve(reduced, rhs)
    return x, blocks


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.linalg.solve(a, b)`` for a small square ``a``: the same LAPACK ``gesv``
    called directly (3 us instead of 11 us; the active set solves one per step)."""
    _, _, x, info = lapack.dgesv(a, b)
    if info != 0:
        raise np.linalg.LinAlgError("Singular matrix")
    return x


def _multipliers(grad, link, blocks):
    """Lagrange multipliers of all ``d + 2`` constraints at a block solution.

    With rows ``a_0 = e_0``, ``a_k = e_k - e_{k-1}``, ``a_{d+1} = -e_d``, the
    KKT condition ``grad = A^T lam`` reads ``grad_j = lam_j - lam_{j+1}``.
    Inside a block the multipliers are running sums of the gradient, started
    from the block side whose constraint is inactive (multiplier zero).
    """
    d = grad.shape[0] - 1
    lam = np.zeros(d + 2)
    grad = grad.tolist()  # Python floats: indexing them is 4x cheaper than numpy scalars
    for a, b in blocks:
        if a == 0 and link[0]:
            # pinned at the lower bound: the link after the block is inactive
            acc = 0.0
            for j in range(b, a - 1, -1):
                acc += grad[j]
                lam[j] = acc
        else:
            acc = 0.0
            for j in range(a, b + 1):
                acc -= grad[j]
                lam[j + 1] = acc
    lam[~link] = 0.0
    return lam


def _slacks(x, lo, hi):
    """``A x - b`` for the chain constraints (all >= 0 when feasible)."""
    out = np.empty(x.shape[0] + 1)
    out[0] = x[0] - lo
    np.subtract(x[1:], x[:-1], out=out[1:-1])
    out[-1] = hi - x[-1]
    return out


def _rows_dot(p):
    """``A p`` for the chain constraint matrix."""
    out = _slacks(p, 0.0, 0.0)
    out[-1] = -p[-1]
    return out


def gap_step(lo: float, hi: float, degree: int, min_step: float) -> float:
    """Smallest allowed increment between consecutive coefficients."""
    return min_step * (hi - lo) / max(degree, 1)


def project_monotone(x: np.ndarray, lo: float, hi: float, min_step: float = 0.0) -> np.ndarray:
    """A feasible point near ``x``: ``x_0 >= lo``, increments ``>= gap``, ``x_d <= hi``."""
    d = x.shape[0] - 1
    ramp = gap_step(lo, hi, d, min_step) * np.arange(d + 1)
    y = np.maximum.accumulate(np.clip(np.asarray(x, dtype=np.float64) - ramp, lo, hi - ramp[-1]))
    return y + ramp


def solve_monotone_qp(
    h: np.ndarray,
    q: np.ndarray,
    lo: float,
    hi: float,
    x0: np.ndarray | None = None,
    min_step: float = 0.0,
    max_iter: int | None = None,
) -> np.ndarray:
    """Solve ``min 1/2 x'Hx + q'x`` s.t. ``lo <= x_0``, ``x_k - x_{k-1} >= g``, ``x_d <= hi``.

    ``g = min_step (hi - lo) / d`` (0 by default: plain non-decreasing). The
    substitution ``x = y + g k`` turns the gapped problem into the plain one
    in ``y`` with upper bound ``hi - g d``.

    Parameters
    ----------
    h : ndarray of shape (d + 1, d + 1)
        Symmetric positive semi-definite matrix. A ridge of ``1e-12`` times
        its mean diagonal is added so that directions without data (a
        semi-definite ``h``) still give a unique step; it moves the optimal
        objective by a relative amount of the same order.
    q : ndarray of shape (d + 1,)
    lo, hi : float
        Bounds, ``lo < hi``.
    x0 : ndarray of shape (d + 1,), optional
        Warm start; projected onto the feasible set first.
    min_step : float, default=0.0
        Relative minimum increment, ``0 <= min_step < 1``.
    max_iter : int, optional
        Active-set iterations before giving up (default ``50 (d + 2)``).

    Returns
    -------
    x : ndarray of shape (d + 1,)
        A minimiser, exactly feasible.
    """
    h = np.asarray(h, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    d = h.shape[0] - 1
    if not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo}, hi={hi}")
    if min_step > 0:
        ramp = gap_step(lo, hi, d, min_step) * np.arange(d + 1)
        y0 = None if x0 is None else np.asarray(x0, dtype=np.float64) - ramp
        y = solve_monotone_qp(h, q + h @ ramp, lo, hi - ramp[-1], x0=y0, max_iter=max_iter)
        return y + ramp
    scale = max(float(np.trace(h)) / (d + 1), np.finfo(float).tiny)
    h = 0.5 * (h + h.T) + 1e-12 * scale * np.eye(d + 1)

    if x0 is None:
        x = lo + (hi - lo) * (np.arange(d + 1) + 1.0) / (d + 2)
    else:
        x = np.maximum.accumulate(np.clip(np.asarray(x0, dtype=np.float64), lo, hi))
    link = _slacks(x, lo, hi) <= 0.0
    max_iter = 50 * (d + 2) if max_iter is None else max_iter
    gscale = np.abs(h).max() * max(abs(lo), abs(hi), 1.0) + np.abs(q).max() + 1e-300
    tol = 1e-11 * gscale

    for _ in range(max_iter):
        target, blocks = _solve_eqp(h, q, link, lo, hi)
        p = target - x
        ap = _rows_dot(p)
        slack = np.maximum(_slacks(x, lo, hi), 0.0)
        blocking = (~link) & (ap < 0)
        alpha, hit = 1.0, -1
        if blocking.any():
            ratios = np.full(d + 2, np.inf)
            ratios[blocking] = slack[blocking] / -ap[blocking]
            hit = int(np.argmin(ratios))
            if ratios[hit] < 1.0:
                alpha = ratios[hit]
            else:
                hit = -1
        if hit >= 0:
            x = x + alpha * p
            link[hit] = True
            continue
        x = target
        lam = _multipliers(h @ x + q, link, blocks)
        worst = int(np.argmin(np.where(link, lam, np.inf)))
        if not link.any() or lam[worst] >= -tol:
            return np.maximum.accumulate(np.clip(x, lo, hi))
        link[worst] = False
    raise RuntimeError(
        f"active-set solver for the monotone QP did not converge in {max_iter} "
        "iterations (status: max_iter); try solver='cvxpy'"
    )


def solve_monotone_qp_cvxpy(
    h: np.ndarray,
    q: np.ndarray,
    lo: float,
    hi: float,
    x0: np.ndarray | None = None,
    min_step: float = 0.0,
) -> np.ndarray:
    """The same problem solved by cvxpy (Clarabel). See :func:`solve_monotone_qp`.

    ``x0`` is accepted for interface compatibility and ignored (interior-point
    methods do not warm start).
    """
    import cvxpy as cp

    h = np.asarray(h, dtype=np.float64)
    d = h.shape[0] - 1
    x = cp.Variable(d + 1)
    objective = 0.5 * cp.quad_form(x, cp.psd_wrap(0.5 * (h + h.T))) + q @ x
    constraints = [x[0] >= lo, x[d] <= hi]
    if d:
        constraints.append(cp.diff(x) >= gap_step(lo, hi, d, min_step))
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=cp.CLARABEL)
    if problem.status == cp.OPTIMAL_INACCURATE:
        warnings.warn(
            f"cvxpy/Clarabel returned status {problem.status!r} for the monotone QP",
            ConvergenceWarning,
            stacklevel=2,
        )
    elif problem.status != cp.OPTIMAL:
        raise RuntimeError(f"cvxpy/Clarabel failed on the monotone QP: status {problem.status!r}")
    return project_monotone(np.asarray(x.value, dtype=np.float64), lo, hi, min_step)


@dataclass(frozen=True)
class Chain:
    """Feasible set of the 1-D fit: ``lo <= x_0``, ``x_k - x_{k-1} >= g``, ``x_d <= hi``.

    ``g = min_slope (hi - lo) / d`` (see :func:`solve_monotone_qp`); ``solve``
    is :func:`solve_monotone_qp` or :func:`solve_monotone_qp_cvxpy`.
    """

    shape: tuple[int]
    lo: float
    hi: float
    min_slope: float = 0.0
    solve: Callable = solve_monotone_qp

    def project(self, x: np.ndarray) -> np.ndarray:
        return project_monotone(x, self.lo, self.hi, self.min_slope)

    def qp(self, h: np.ndarray, q: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        return self.solve(h, q, self.lo, self.hi, x0=x0, min_step=self.min_slope)


class Lattice:
    """Feasible set of Theorem 1 with the strictness margin, and its QP.

    ``x`` is the coefficient tensor of shape ``shape`` flattened in C order;
    constraints ``x[0] >= lo``, ``x[-1] <= hi`` and ``x[k + e_m] - x[k] >=
    gap_m`` with ``gap_m = min_slope (hi - lo) / (M K_m)``: the margins add up
    to ``min_slope (hi - lo)`` along the diagonal, as in the 1-D fit.
    """

    def __init__(self, shape, lo, hi, min_slope):
        self.shape, self.lo, self.hi = tuple(shape), float(lo), float(hi)
        m_axes = len(self.shape)
        self.gaps = [min_slope * (hi - lo) / (m_axes * max(k - 1, 1)) for k in self.shape]
        grids = np.meshgrid(*(np.arange(k) for k in self.shape), indexing="ij")
        self.ramp = sum(g * k for g, k in zip(self.gaps, grids, strict=True)).ravel()
        idx = np.arange(math.prod(self.shape)).reshape(self.shape)
        lower, upper, gap = [], [], []
        for m, k in enumerate(self.shape):
            lower.append(np.take(idx, np.arange(k - 1), axis=m).ravel())
            upper.append(np.take(idx, np.arange(1, k), axis=m).ravel())
            gap.append(np.full(lower[-1].size, self.gaps[m]))
        lower, upper = np.concatenate(lower), np.concatenate(upper)
        rows = np.arange(lower.size)
        self.diff = sp.csr_matrix(
            (
                np.r_[-np.ones(rows.size), np.ones(rows.size)],
                (np.r_[rows, rows], np.r_[lower, upper]),
            ),
            shape=(rows.size, idx.size),
        )
        self.gap = np.concatenate(gap)

    def project(self, x: np.ndarray) -> np.ndarray:
        """A feasible point near ``x``, exactly feasible in floating point.

        With the ramp removed, clip to the bounds and take running maxima
        along each axis in turn: a running maximum along one axis keeps
        monotonicity along the others.
        """
        y = np.asarray(x, dtype=np.float64).ravel() - self.ramp
        y = np.clip(y, self.lo, self.hi - self.ramp[-1]).reshape(self.shape)
        for axis in range(y.ndim):
            y = np.maximum.accumulate(y, axis=axis)
        return y.ravel() + self.ramp

    def qp(self, h: np.ndarray, q: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Minimise ``1/2 x^T h x + q^T x`` over the lattice; cvxpy with Clarabel.

        Solved in ``z = x - x0`` (``x0`` a nearby point): near convergence the
        objective in ``z`` is small, and Clarabel's absolute gap tolerance
        then bounds the error of a Newton step by that of the decrease, not
        of the loss itself. ``h`` is rebuilt from its eigen-decomposition with
        eigenvalues clipped at zero plus a relative ridge of ``1e-12``, and
        scaled to unit mean diagonal, so the matrix handed over is positive
        definite in floating point; should Clarabel still fail, the problem is
        solved again with the objective written through the factor ``F``
        (``h = F F^T``).
        """
        import cvxpy as cp

        size = h.shape[0]
        center = np.zeros(size) if x0 is None else np.ravel(x0).astype(np.float64)
        h = 0.5 * (h + h.T)
        scale = max(float(np.trace(h)) / size, np.finfo(float).tiny)
        lam, vec = np.linalg.eigh(h / scale)
        factor = vec * np.sqrt(np.maximum(lam, 0.0) + _RIDGE)
        gram = factor @ factor.T
        gram = 0.5 * (gram + gram.T)  # a product of two factors is symmetric only to rounding
        lin = (q + h @ center) / scale
        z = cp.Variable(size)
        constraints = [
            self.diff @ z >= self.gap - self.diff @ center,
            z[0] >= self.lo - center[0],
            z[size - 1] <= self.hi - center[-1],
        ]
        status, errors = None, []
        for quad in (
            lambda: cp.quad_form(z, cp.psd_wrap(gram)),
            lambda: cp.sum_squares(factor.T @ z),
        ):
            problem = cp.Problem(cp.Minimize(0.5 * quad() + lin @ z), constraints)
            try:
                problem.solve(solver=cp.CLARABEL)
            except cp.error.SolverError as exc:
                errors.append(str(exc))
                continue
            status = problem.status
            if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                break
        if status == cp.OPTIMAL_INACCURATE:
            warnings.warn(
                f"cvxpy/Clarabel returned status {status!r} for the lattice-monotone QP "
                f"with {size} coefficients",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif status != cp.OPTIMAL:
            raise RuntimeError(
                f"cvxpy/Clarabel failed on the lattice-monotone QP with {size} coefficients: "
                f"status {status!r}" + (f" ({'; '.join(errors)})" if errors else "")
            )
        return self.project(center + z.value)
