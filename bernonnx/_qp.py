"""The small quadratic program behind every monotone Bernstein fit.

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

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning


def _blocks(link: np.ndarray) -> list[tuple[int, int]]:
    """Split ``0..d`` into maximal runs joined by active links.

    ``link`` has ``d + 2`` entries: ``link[0]`` is the lower bound,
    ``link[k]`` (``1 <= k <= d``) ties ``x[k-1] = x[k]``, ``link[d+1]`` is the
    upper bound.
    """
    d = link.shape[0] - 2
    starts = [0] + [k for k in range(1, d + 1) if not link[k]]
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
        x = x + z @ np.linalg.solve(reduced, rhs)
    return x, blocks


def _multipliers(grad, link, blocks):
    """Lagrange multipliers of all ``d + 2`` constraints at a block solution.

    With rows ``a_0 = e_0``, ``a_k = e_k - e_{k-1}``, ``a_{d+1} = -e_d``, the
    KKT condition ``grad = A^T lam`` reads ``grad_j = lam_j - lam_{j+1}``.
    Inside a block the multipliers are running sums of the gradient, started
    from the block side whose constraint is inactive (multiplier zero).
    """
    d = grad.shape[0] - 1
    lam = np.zeros(d + 2)
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
    return np.concatenate(([x[0] - lo], np.diff(x), [hi - x[-1]]))


def _rows_dot(p):
    """``A p`` for the chain constraint matrix."""
    return np.concatenate(([p[0]], np.diff(p), [-p[-1]]))


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
