"""The active set of the chain QP of :mod:`bernonnx._core.qp`, found by DAQP.

DAQP (Arnström, Bemporad and Axehill) is a dual active-set solver for small
dense QPs, in C; from a cold start on the default's 13-coefficient chain QP it
takes about 8 µs where the numpy active-set method of
:func:`bernonnx._core.qp.solve_monotone_qp` takes about 100 µs, nearly all of
it numpy call overhead in the iterations that add one tie each (warm starts
are another matter: see :data:`MAX_SIZE`). DAQP finds the optimal active set; the
numpy method then starts from it and confirms it in one block solve (or goes
on, should it not be optimal), so the solution is the numpy method's, exact to
rounding and exactly feasible. DAQP is optional (``pip install
bernonnx[fast]``): :func:`active_set` returns ``None`` when it is not
installed, when it reports anything but an optimum, or when its answer is not
finite, and the numpy method then starts as it always did
(``tests/test_qp.py`` runs both).

The problem handed over is the plain chain ``lo <= y_0 <= ... <= y_d <= hi``
(the gapped one reaches it by the substitution of ``solve_monotone_qp``):
simple bounds on ``y_0`` and ``y_d``, one general constraint
``y_{k+1} - y_k >= 0`` per link, the Hessian with the same relative ridge as
the numpy method and scaled to unit mean diagonal (the minimiser does not
change), so that DAQP's absolute tolerances are relative ones; its primal
tolerance is tightened from 1e-6 to ``1e-12 max(1, |lo|, |hi|)``.

References
----------
D. Arnström, A. Bemporad and D. Axehill, "A dual active-set solver for
embedded quadratic programming using recursive LDL^T updates", IEEE
Transactions on Automatic Control 67(8), 4362-4369, 2022.
"""

from __future__ import annotations

import numpy as np

try:  # optional: the numpy active-set method is the fallback
    import daqp as _daqp
except ImportError:  # pragma: no cover - exercised with the extra missing
    _daqp = None

#: Whether :func:`active_set` may use DAQP (tests set it to False to force the fallback).
ENABLED = True
#: Largest chain (unknowns) handed to DAQP. Measured on the 114 QPs of a default fit
#: (4,755 held-out scores; a busy machine, load 12 on 2 cores), per QP from a cold
#: start, DAQP then the numpy method vs the numpy method alone: 51 vs 113 µs at 9
#: unknowns, 59 vs 157 at 14, 88 vs 1,284 at 21, but 2.4 vs 2.5 ms at 33 and 8.6 vs
#: 4.0 ms at 51, where the ill-conditioned Hessian costs DAQP hundreds of
#: iterations at the tight primal tolerance. Warm starts (every QP of a Newton step
#: after the first) are left to the numpy method: from a nearby point's ties it
#: needs two or three block solves, 31-128 µs, less than DAQP's call.
MAX_SIZE = 24
#: DAQP's exit flag for an optimal solution.
_OPTIMAL = 1
#: Its constraint bound for "no bound" (DAQP_INF).
_INF = 1e30
#: Sense flags of a constraint active at its lower bound (DAQP's ACTIVE | LOWER).
_ACTIVE_LOWER = 3
_ACTIVE_UPPER = 1

_LINKS: dict[int, np.ndarray] = {}


def available() -> bool:
    """Whether DAQP is installed and enabled."""
    return _daqp is not None and ENABLED


def _links(n: int) -> np.ndarray:
    """The ``(n - 1, n)`` first-difference matrix: row ``k`` is ``y_{k+1} - y_k``."""
    a = _LINKS.get(n)
    if a is None:
        a = np.zeros((max(n - 1, 0), n))
        k = np.arange(n - 1)
        a[k, k] = -1.0
        a[k, k + 1] = 1.0
        _LINKS[n] = a
    return a


def active_set(h, q, lo, hi, y0=None, tie_tol=0.0, ridge=1e-12):
    """The optimal active set of ``min 1/2 y'hy + q'y`` s.t. ``lo <= y_0 <= ... <= y_d <= hi``.

    DAQP's answer is exact to its tolerances, but on the ill-conditioned
    Hessians of high degrees a flat direction can leave it off the optimum
    by more than rounding (measured: up to 2e-6 of the objective's scale on
    the test suite's QPs, coefficients moved by up to the whole box where the
    loss is flat). Its active set is what is kept: the numpy method starts
    from it and, when it is optimal, confirms it with one block solve and
    its multipliers, which gives the numpy method's solution; when it is not,
    the numpy method goes on from there.

    Parameters
    ----------
    h : ndarray of shape (n, n)
        Positive semi-definite; ``ridge`` times its mean diagonal is added, as
        in the numpy method.
    q : ndarray of shape (n,)
    lo, hi : float
        Bounds, ``lo < hi``.
    y0 : ndarray of shape (n,), optional
        Warm start: its ties (slack at most ``tie_tol``) and the bounds it
        touches are DAQP's initial active set.
    tie_tol : float, default=0.0
    ridge : float, default=1e-12

    Returns
    -------
    isstart : ndarray of shape (n + 2,) of bool or None
        DAQP's optimal active set as the block starts of the extended chain
        ``(lo, y_0, ..., y_d, hi)`` of the numpy method
        (:func:`bernonnx._core.qp._chain_active_set`): position 0, and the
        position after every inactive link. ``None`` if DAQP is missing or
        disabled, or did not report an optimum.
    """
    if not available():
        return None
    n = h.shape[0]
    scale = max(float(h.trace()) / n, np.finfo(float).tiny)
    hs = h + h.T
    hs *= 0.5 / scale
    hs.ravel()[:: n + 1] += ridge
    qs = q / scale
    m = 2 * n - 1  # n simple bounds (two of them finite), then n - 1 links
    upper = np.full(m, _INF)
    lower = np.full(m, -_INF)
    lower[0] = lo
    upper[n - 1] = hi
    lower[n:] = 0.0
    sense = np.zeros(m, dtype=np.int32)
    if y0 is not None:
        tied = np.diff(y0) <= tie_tol
        if n > 1 and tied.all():  # lo and hi within tie_tol: keep the widest gap open
            tied[int(np.diff(y0).argmax())] = False
        sense[n:][tied] = _ACTIVE_LOWER
        if y0[0] <= lo:
            sense[0] = _ACTIVE_LOWER
        if y0[-1] >= hi and (n > 1 or y0[0] > lo):  # n = 1: one variable, one side active
            sense[n - 1] = _ACTIVE_UPPER
    tol = 1e-12 * max(1.0, abs(lo), abs(hi))
    try:
        y, _, flag, info = _daqp.solve(hs, qs, _links(n), upper, lower, sense, primal_tol=tol)
    except Exception:  # noqa: BLE001 - any failure of the optional solver: the fallback solves
        return None
    if flag != _OPTIMAL or not np.isfinite(y).all():
        return None
    # the extended chain's block starts: position 0 (lo), then one after every inactive
    # link (link 0 the lower bound, links 1 .. n - 1 the increments, link n the upper bound)
    lam = info["lam"]
    isstart = np.empty(n + 2, dtype=bool)
    isstart[0] = True
    np.equal(lam[n:], 0.0, out=isstart[2:-1])
    isstart[1] = lam[0] == 0.0
    isstart[-1] = lam[n - 1] == 0.0
    if n == 1 and not isstart[1]:  # one variable, both bounds in one constraint: the near one
        isstart[1 + (abs(y[0] - hi) < abs(y[0] - lo))] = True
    if not isstart[1:].any():  # cannot be optimal (lo < hi): let the numpy method start cold
        return None
    return isstart
