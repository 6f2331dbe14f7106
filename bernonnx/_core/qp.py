"""The feasible sets of the monotone Bernstein fits, and their small quadratic programs.

Both implement the protocol the fitting core (:mod:`bernonnx._core.newton`) uses:
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
  dense solve in the free block values (its matrix and right-hand side are
  block sums, two ``np.add.reduceat`` calls), and the Lagrange multipliers
  are running sums of the gradient inside each block. A warm start's ties
  are its initial active set, and a first phase adds every link the block
  solution violates at once, so that a warm start lacking ties costs a few
  solves rather than one per missing tie; the primal method then decides
  optimality alone. Exact to rounding error, no tolerance to tune.
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

from . import chain_daqp

#: Relative ridge added to every lattice QP Hessian, as in the chain
#: active-set solver: directions without data (a constant column) still get a
#: unique solution.
_RIDGE = 1e-12
_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps


def _chain_active_set(h, q, lo, hi, y0, max_iter, tie_tol, isstart=None):
    """The active-set method on ``lo <= y_0 <= ... <= y_d <= hi``; see :func:`solve_monotone_qp`.

    Works on the extended chain ``(lo, y_0, ..., y_d, hi)`` of ``m = d + 3``
    positions: link ``k`` ties positions ``k`` and ``k + 1`` (link 0 is the
    lower bound, link ``d + 1`` the upper one), a block starts at position 0
    and after every inactive link, and the first and last blocks are pinned at
    ``lo`` and ``hi``. ``isstart`` marks the block starts and ``block`` numbers
    the block of each position; given, it is the initial active set (``y0`` is
    then not read).
    """
    n = h.shape[0]
    m = n + 2
    # h + h^T and 2 q: the problem scaled by 2, exactly, rather than 0.5 (h + h^T);
    # the zero first and last rows are the pinned ends
    he = np.zeros((m, m))
    inner = he[1:-1, 1:-1]
    np.add(h, h.T, out=inner)
    he.ravel()[m + 1 : -1 : m + 1] += 2.0 * _RIDGE * max(float(h.trace()) / n, _TINY)
    qe = np.zeros(m)
    np.add(q, q, out=qe[1:-1])
    gscale = float(abs(he).max()) * max(abs(lo), abs(hi), 1.0) + float(abs(qe).max())
    tol = 1e-11 * (gscale + 1e-300)
    bounds = np.array([lo, hi])

    xe = np.empty(m)
    xe[0] = lo
    xe[-1] = hi
    y = xe[1:-1]
    if isstart is not None:
        block = isstart.cumsum()
        block -= 1
    elif y0 is None:
        y[:] = np.arange(1.0, n + 1.0)
        y *= (hi - lo) / (n + 1)
        y += lo
        isstart = np.ones(m, dtype=bool)
        block = np.arange(m)
    else:
        np.maximum(y0, lo, out=y)
        np.minimum(y, hi, out=y)
        np.maximum.accumulate(y, out=y)
        slack = xe[1:] - xe[:-1]
        isstart = np.empty(m, dtype=bool)
        isstart[0] = True
        np.greater(slack, tie_tol, out=isstart[1:])
        if not isstart[1:].any():  # lo and hi within tie_tol: keep the widest gap open
            isstart[1 + int(slack.argmax())] = True
        block = isstart.cumsum()
        block -= 1
        vals = xe[isstart]
        vals[-1] = hi
        xe = vals[block]  # ties made exact: the warm start's active set

    # Phase 1 adds every link the block solution violates, until that solution
    # is feasible: a warm start usually has too few ties, and adding them one
    # by one (the primal method) costs a solve each. Phase 2 is the primal
    # method from that feasible point; it alone decides optimality.
    phase1 = True
    for _ in range(max_iter):
        bst = isstart.nonzero()[0]
        nb = bst.shape[0]  # >= 2: the link between the lo and hi blocks never closes
        vals = np.empty(nb)
        vals[0] = lo
        vals[-1] = hi
        if nb > 2:
            # block sums of the Hessian and gradient: the reduced problem in the
            # free block values (blocks 1 .. nb - 2)
            r = np.add.reduceat(np.add.reduceat(he, bst, axis=1), bst, axis=0)
            rhs = np.add.reduceat(qe, bst)[1:-1]
            rhs += r[1:-1, :: nb - 1] @ bounds
            _, _, v, info = lapack.dgesv(r[1:-1, 1:-1], rhs)
            if info != 0:
                raise np.linalg.LinAlgError("Singular matrix")
            np.negative(v, out=vals[1:-1])
        jump = vals[1:] - vals[:-1]  # the block solution's slack on each inactive link
        if min(jump.tolist()) < 0.0:
            after = bst[1:]
            if phase1:
                isstart[after[jump < 0.0]] = False
                block = isstart.cumsum()
                block -= 1
                continue
            # move towards the block solution until the first inactive link closes
            sx = xe[after] - xe[after - 1]
            neg = (jump < 0.0).nonzero()[0]
            sn = sx[neg]
            np.maximum(sn, 0.0, out=sn)
            ratio = sn / (sn - jump[neg])
            j = int(ratio.argmin())
            step = vals[block]
            step -= xe
            step *= ratio[j]
            xe += step
            k = int(after[neg[j]])
            isstart[k] = False
            block[k:] -= 1
            continue
        phase1 = False
        xe = vals[block]
        # multipliers: grad_j = lam_j - lam_{j+1}, so inside a block they are
        # running sums of the gradient from the block side whose link is
        # inactive (the upper side for the lo block, the lower one otherwise)
        c = he @ xe
        c += qe
        np.add.accumulate(c, out=c)
        ix = bst - 1
        ix[0] = ix[1]
        lam = c[ix][block]
        lam -= c
        lam = lam[:-1]  # lam[k]: link k; ~0 (the block's stationarity) on inactive links
        worst = int(lam.argmin())
        if lam[worst] < -tol and isstart[worst + 1]:
            lam[isstart[1:]] = np.inf
            worst = int(lam.argmin())
        if lam[worst] >= -tol:
            return xe[1:-1]  # exactly monotone and in [lo, hi]: every jump is >= 0
        isstart[worst + 1] = True
        block[worst + 1 :] += 1
    raise RuntimeError(
        f"active-set solver for the monotone QP did not converge in {max_iter} "
        "iterations (status: max_iter); try solver='cvxpy'"
    )


def _chain(h, q, lo, hi, y0, max_iter, tie_tol):
    """The plain chain QP by the active-set method; a cold start of at most
    :data:`~bernonnx._core.chain_daqp.MAX_SIZE` unknowns starts at DAQP's optimal active
    set when DAQP is installed and succeeds (:mod:`bernonnx._core.chain_daqp`)."""
    start = None
    if y0 is None and h.shape[0] <= chain_daqp.MAX_SIZE:
        start = chain_daqp.active_set(h, q, lo, hi, None, tie_tol, _RIDGE)
    return _chain_active_set(h, q, lo, hi, y0, max_iter, tie_tol, start)


def _add_ramp(y: np.ndarray, ramp: np.ndarray, hi: float, gap: float) -> np.ndarray:
    """``y + ramp`` (``ramp = gap k``) rounded so that increments are ``>= gap`` and ``x_d <= hi``.

    ``y`` is non-decreasing with ``y_d <= hi - gap d``; rounding ``y_k + gap k``
    leaves increments an ulp short of ``gap`` (most often across ties of
    ``y``): those entries move up to the next float that clears the gap (and
    should the top then pass ``hi``, entries move down from the top).
    """
    x = y + ramp
    short = x[1:] - x[:-1] < gap
    if not short.any() and x[-1] <= hi:
        return x
    xs = x.tolist()  # Python floats: a few short increments, a few microseconds
    n = len(xs)
    for k in (short.nonzero()[0] + 1).tolist():
        # raising x_k can shorten the next increment: carry on while it does
        while k < n and xs[k] - xs[k - 1] < gap:
            v = xs[k - 1] + gap
            while v - xs[k - 1] < gap:
                v = math.nextafter(v, math.inf)
            xs[k] = v
            k += 1
    if xs[-1] > hi:
        xs[-1] = hi
        for k in range(len(xs) - 1, 0, -1):
            if xs[k] - xs[k - 1] >= gap:
                break
            v = xs[k] - gap
            while xs[k] - v < gap:
                v = math.nextafter(v, -math.inf)
            xs[k - 1] = v
    return np.array(xs)


def gap_step(lo: float, hi: float, degree: int, min_step: float) -> float:
    """Smallest allowed increment between consecutive coefficients."""
    return min_step * (hi - lo) / max(degree, 1)


def project_monotone(x: np.ndarray, lo: float, hi: float, min_step: float = 0.0) -> np.ndarray:
    """A feasible point near ``x``: ``x_0 >= lo``, increments ``>= gap``, ``x_d <= hi``."""
    d = x.shape[0] - 1
    gap = gap_step(lo, hi, d, min_step)
    ramp = gap * np.arange(d + 1)
    y = np.maximum.accumulate(np.clip(np.asarray(x, dtype=np.float64) - ramp, lo, hi - ramp[-1]))
    return _add_ramp(y, ramp, hi, gap)  # exactly feasible, as the QP's solutions


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
    max_iter = 50 * (d + 2) if max_iter is None else max_iter
    y0 = None if x0 is None else np.asarray(x0, dtype=np.float64)
    if not min_step > 0:
        return _chain(h, q, lo, hi, y0, max_iter, 0.0)
    gap = gap_step(lo, hi, d, min_step)
    ramp = np.arange(d + 1.0)
    ramp *= gap
    tie_tol = 0.0
    if y0 is not None:
        y0 = y0 - ramp
        # x0 = y + ramp rounded, minus the ramp again: the ties of y come back
        # as slacks of a few ulps, and they are the warm start's active set
        tie_tol = 8 * _EPS * max(abs(lo), abs(hi))
    y = _chain(h, q + h @ ramp, lo, hi - ramp[-1], y0, max_iter, tie_tol)
    return _add_ramp(y, ramp, hi, gap)


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
