"""The fit of an affine map of logits under a softmax: vector and matrix scaling.

``softmax(t * v + b)`` (vector scaling) or ``softmax(t @ W.T + b)`` (matrix scaling) on
given logits ``t`` (n, K), by weighted log loss plus a ridge penalty on the departure
from the identity, ``v - 1`` or ``W - I``, and on ``b``: a multinomial logistic
regression whose features are the logits themselves, with an offset. The objective is
convex (strictly, when every parameter is penalised); it is minimised by a trust-region
Newton method: exact steps on the full Hessian when it is cheap (``n P^2`` below
:data:`HESSIAN_BUDGET`, ``P`` parameters), else conjugate-gradient steps (Steihaug) on
Hessian-vector products, each one pass over the ``n x K`` rows. A penalised matrix
scaling above :data:`PRECONDITIONED_BUDGET` (structured matrix scaling with many
classes) takes Newton steps with a line search instead, solved by conjugate gradients
preconditioned by the Hessian's per-class blocks: a tenth of the Hessian-vector
products at 20 classes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from .scale import rescaled, unit_exponent

__all__ = ["Penalty", "fit_affine_softmax"]

#: Most trust-region Newton iterations; each is a handful of passes over the rows.
MAX_ITER = 200
#: The fit stops when the gradient's norm, per unit of total weight and of the largest
#: |logit|, is below this: near the rounding of the sums that make it.
GTOL = 1e-8
#: Above this many rows, the fit starts from the fit on a regular subsample of about
#: half as many.
WARM_ROWS = 20_000
#: Largest ``n * P^2`` (rows times squared parameter count) for which the full Hessian
#: is formed; above it, conjugate-gradient steps on Hessian-vector products.
HESSIAN_BUDGET = 4e8
#: The same for a penalised matrix scaling (strictly convex), whose steps above it are
#: conjugate gradients preconditioned by the Hessian's per-class blocks: faster than
#: exact steps from about 10 classes at 10,000 rows (measured on the multiclass study)
PRECONDITIONED_BUDGET = 1e8


@dataclass(frozen=True)
class Penalty:
    """Ridge strengths on the total-weight scale: the objective adds
    ``intercept * |b|^2 + diagonal * |diag(W - I)|^2 + off_diagonal * |offdiag(W)|^2``
    to the weighted *sum* of the row log losses (all 0: maximum likelihood).

    ``free_scale``: Berta et al.'s joint form ``W = a I + diag(v) + offdiag(M)`` with
    the scale ``a`` unpenalised; the ridge on the diagonal is then on ``v``, the
    diagonal's departure from its mean, ``diagonal * |diag(W) - mean(diag(W))|^2``
    (the minimum over ``a`` of ``diagonal * |diag(W) - a|^2``): still a convex
    quadratic, so the fit stays one convex problem.
    """

    intercept: float = 0.0
    diagonal: float = 0.0
    off_diagonal: float = 0.0
    free_scale: bool = False


def _unpack(theta: np.ndarray, k: int, matrix: bool):
    if matrix:
        return theta[: k * k].reshape(k, k), theta[k * k :]
    return theta[:k], theta[k:]


def _penalty_matrix(k: int, matrix: bool, penalty: Penalty, centre: np.ndarray) -> np.ndarray:
    """``M`` with the penalty ``theta' M theta'`` in the centred parameters ``theta' =
    (W - I, b')``, ``b' = b + (W - I) m``: the ridge on ``W - I`` and on ``b = b' - (W -
    I) m``, whose map ``J`` (K x P) is written out."""
    size = k * k + k if matrix else 2 * k
    if matrix:
        square = np.full((k, k), penalty.off_diagonal)
        np.fill_diagonal(square, penalty.diagonal)
        diagonal = np.r_[square.ravel(), np.zeros(k)]
        jac = np.zeros((k, size))
        for j in range(k):
            jac[j, j * k : (j + 1) * k] = -centre
    else:
        diagonal = np.r_[np.full(k, penalty.diagonal), np.zeros(k)]
        jac = np.zeros((k, size))
        jac[np.arange(k), np.arange(k)] = -centre
    jac[np.arange(k), size - k + np.arange(k)] = 1.0
    out = np.diag(diagonal) + penalty.intercept * (jac.T @ jac)
    if penalty.free_scale:
        # the diagonal's common part (the scale a) unpenalised: its ridge is on
        # (I - 1 1' / K) diag(W - I), the projection off the all-ones direction
        idx = np.arange(k) * (k + 1) if matrix else np.arange(k)
        out[np.ix_(idx, idx)] -= penalty.diagonal / k
    return out


def _hessian(t: np.ndarray, p: np.ndarray, w: np.ndarray, matrix: bool) -> np.ndarray:
    """The log loss's Hessian in the order of ``theta``: ``sum_i w_i (diag(p_i) - p_i
    p_i^T)`` between the classes, times the products of each class's features."""
    n, k = t.shape
    if matrix:
        # features x_i = [t_i, 1], shared by every class; parameters [W - I | b] by row
        x = np.column_stack([t, np.ones(n)])
        outer = (p[:, :, None] * x[:, None, :]).reshape(n, -1)  # p_ij x_il
        h = -(outer.T @ (w[:, None] * outer))
        for j in range(k):
            block = slice(j * (k + 1), (j + 1) * (k + 1))
            h[block, block] += x.T @ ((w * p[:, j])[:, None] * x)
        # to theta's order: every row's K coefficients first, then the K intercepts
        rows = np.arange(k) * (k + 1)
        order = np.r_[(rows[:, None] + np.arange(k)).ravel(), rows + k]
        return h[np.ix_(order, order)]
    # vector scaling: class j's features are [t_ij, 1]; sum_i w_i (diag(p_i) - p_i
    # p_i^T) entrywise times the features, as matrix products (no n x K x K array)
    wp = w[:, None] * p
    u = p * t
    h_vv = np.diag(np.sum(wp * t * t, axis=0)) - u.T @ (w[:, None] * u)
    h_vb = np.diag(np.sum(wp * t, axis=0)) - u.T @ wp
    h_bb = np.diag(wp.sum(axis=0)) - p.T @ wp
    return np.block([[h_vv, h_vb], [h_vb.T, h_bb]])


def _class_blocks(tc: np.ndarray, p: np.ndarray, w: np.ndarray, pen: np.ndarray):
    """The inverses of the Hessian's diagonal blocks of matrix scaling, one per class:
    ``sum_i w_i p_ij (1 - p_ij) x_i x_i^T`` (``x_i = [t_i, 1]``) plus the penalty's
    block of that class's row of ``W - I`` and intercept, (K, K + 1, K + 1)."""
    n, k = tc.shape
    x = np.column_stack([tc, np.ones(n)])
    c = w[:, None] * p * (1.0 - p)
    blocks = np.stack([x.T @ (c[:, j, None] * x) for j in range(k)])
    index = _class_index(k)
    blocks += pen[index[:, :, None], index[:, None, :]]
    return np.linalg.inv(blocks)


def _class_index(k: int) -> np.ndarray:
    """Each class's parameters in ``theta``: its row of ``W - I``, then its intercept."""
    return np.column_stack([np.arange(k * k).reshape(k, k), k * k + np.arange(k)])


def _newton_pcg(fun, hessp, precondition, theta, gtol, scale):
    """Newton's method with a backtracking line search on a strictly convex objective,
    each step solved by conjugate gradients preconditioned by ``precondition(theta)``
    (a function of the residual) to a relative residual that shrinks with the
    gradient (Dembo, Eisenstat and Steihaug's forcing terms: its square root, then
    proportional to it, so the convergence is quadratic and the last step lands on the
    optimum, not merely inside the gradient tolerance). Returns ``(theta, iterations,
    gradient)``."""
    f, g = fun(theta)
    for it in range(MAX_ITER):
        g_norm = float(np.linalg.norm(g))
        if g_norm <= gtol:
            return theta, it, g
        solve = precondition(theta)
        eta = min(0.5, np.sqrt(g_norm / scale), 100.0 * g_norm / scale)
        step = np.zeros_like(theta)
        r = -g
        z = solve(r)
        d = z
        rz = float(r @ z)
        for _ in range(theta.size):
            hd = hessp(theta, d)
            alpha = rz / float(d @ hd)
            step = step + alpha * d
            r = r - alpha * hd
            if np.linalg.norm(r) <= eta * g_norm:
                break
            z = solve(r)
            rz, rz_old = float(r @ z), rz
            d = z + (rz / rz_old) * d
        slope = float(g @ step)
        length = 1.0
        while True:
            f_new, g_new = fun(theta + length * step)
            # Armijo's decrease, or (at the rounding of the objective) a smaller gradient
            if f_new <= f + 1e-4 * length * slope or (
                f_new <= f + 1e-13 * abs(f) and np.linalg.norm(g_new) < g_norm
            ):
                break
            length *= 0.5
            if length < 1e-12:
                return theta, it, g
        theta, f, g = theta + length * step, f_new, g_new
    return theta, MAX_ITER, g


def fit_affine_softmax(
    t: np.ndarray,
    target: np.ndarray,
    w: np.ndarray,
    *,
    matrix: bool,
    penalty: Penalty,
    warm: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``(coef, intercept)`` minimising the penalised weighted log loss of
    ``softmax(t @ coef.T + intercept)`` (``matrix``: coef (K, K)) or of
    ``softmax(t * coef + intercept)`` (coef (K,)), started at the identity, or (``warm``,
    more than :data:`WARM_ROWS` rows) at the fit on a regular subsample of the rows.

    The objective, with ``a_i`` row ``i``'s logits and ``mu`` the strengths of
    ``penalty``::

        F = sum_i w_i (logsumexp(a_i) - a_{i, y_i}) + sum_j mu_j theta_j^2,

    ``theta`` being ``coef - identity`` and ``intercept``; the solver works on centred
    logits ``t - m`` (``m`` their weighted column means; the intercept ``b + (W - I) m``),
    the same objective better conditioned. Without a penalty, adding a constant to every
    intercept (or a vector to every row of ``coef``) leaves the probabilities unchanged;
    the steps, like the gradient, are orthogonal to those directions, so the fit ends at
    one of those equal solutions. On separable logits the
    unpenalised loss has no minimum: the fit stops where the gradient is below
    :data:`GTOL` (a ConvergenceWarning if it runs out of iterations first).
    """
    n, k = t.shape
    # extreme scales, made ordinary by exact powers of two (bernonnx._core.scale): the
    # objective divided by a power of two (weights and penalty alike) has the same
    # minimiser, and unpenalised logits times one give the coefficients divided by it
    e_w = unit_exponent(float(w.sum()))
    e_t = unit_exponent(float(np.max(np.abs(t), initial=0.0)))
    if penalty != Penalty():
        e_t = 0  # a ridge toward the identity is not scale-free (and its logits are bounded)
    if e_w or e_t:
        strength = float(rescaled(np.float64(1.0), e_w))
        coef, b = fit_affine_softmax(
            rescaled(t, e_t),
            target,
            rescaled(w, e_w),
            matrix=matrix,
            penalty=Penalty(
                penalty.intercept * strength,
                penalty.diagonal * strength,
                penalty.off_diagonal * strength,
                penalty.free_scale,
            ),
            warm=warm,
        )
        return rescaled(coef, e_t), b
    y = np.zeros((n, k))
    y[np.arange(n), target] = 1.0
    scale = float(w.sum()) * max(1.0, float(np.max(np.abs(t), initial=0.0)))
    # centred features: the intercepts no longer move with the slopes, so the Newton
    # systems are far better conditioned (fewer conjugate-gradient steps)
    centre = (w @ t) / w.sum()
    tc = t - centre
    pen = _penalty_matrix(k, matrix, penalty, centre)
    rows = np.arange(n)
    cache = {}

    def linear(theta_or_direction):
        d_delta, d_b = _unpack(theta_or_direction, k, matrix)
        return (tc @ d_delta.T if matrix else tc * d_delta) + d_b

    def state(theta):
        key = theta.tobytes()
        if key not in cache:
            cache.clear()
            a = t + linear(theta)
            top = a.max(axis=1, keepdims=True)
            e = np.exp(a - top)
            total = e.sum(axis=1, keepdims=True)
            cache[key] = (a, e / total, top[:, 0] + np.log(total[:, 0]))
        return cache[key]

    def back(g_a: np.ndarray) -> np.ndarray:
        """The parameters' gradient from the logits' (n, K)."""
        g_delta = g_a.T @ tc if matrix else np.sum(g_a * tc, axis=0)
        return np.r_[g_delta.ravel(), g_a.sum(axis=0)]

    def fun(theta):
        a, p, lse = state(theta)
        loss = float(w @ (lse - a[rows, target]))
        grad = back(w[:, None] * (p - y)) + 2.0 * (pen @ theta)
        return loss + float(theta @ pen @ theta), grad

    def hessp(theta, direction):
        _, p, _ = state(theta)
        pda = p * linear(direction)
        g_a = w[:, None] * (pda - p * pda.sum(axis=1, keepdims=True))
        return back(g_a) + 2.0 * (pen @ direction)

    def hess(theta):
        _, p, _ = state(theta)
        return _hessian(tc, p, w, matrix) + 2.0 * pen

    theta0 = np.zeros(k * k + k if matrix else 2 * k)
    if warm and n > WARM_ROWS:
        # a warm start: the same objective on every m-th row, weights scaled so that the
        # penalty keeps its weight; Newton's method then needs a few steps on all rows
        every = n // (WARM_ROWS // 2)
        sub = w[::every]
        coef, b = fit_affine_softmax(
            t[::every],
            target[::every],
            sub * (w.sum() / sub.sum()),
            matrix=matrix,
            penalty=penalty,
            warm=False,
        )
        delta = coef - (np.eye(k) if matrix else 1.0)
        theta0 = np.r_[delta.ravel(), b + (delta @ centre if matrix else delta * centre)]
    # the full Hessian costs n P^2 (P parameters) against about 4 n P for a product
    # with it; below the budget, exact trust-region steps need far fewer passes
    small = n * theta0.size**2 <= HESSIAN_BUDGET
    # every parameter penalised (the joint form's free scale is not): strictly convex
    strict = min(penalty.intercept, penalty.diagonal, penalty.off_diagonal) > 0
    strict = strict and not penalty.free_scale
    if matrix and strict and n * theta0.size**2 > PRECONDITIONED_BUDGET:
        # strictly convex: Newton steps by conjugate gradients preconditioned by the
        # Hessian's per-class blocks, which hold most of its curvature (the classes
        # couple through -p_ij p_il only)
        index = _class_index(k)

        def precondition(theta):
            inverse = _class_blocks(tc, state(theta)[1], w, 2.0 * pen)

            def solve(r):
                out = np.empty_like(r)
                out[index] = np.einsum("jab,jb->ja", inverse, r[index])
                return out

            return solve

        x, nit, jac = _newton_pcg(fun, hessp, precondition, theta0, GTOL * scale, scale)
        return _result(x, nit, jac, k, matrix, centre)
    with warnings.catch_warnings():
        # trust-ncg says "A bad approximation caused failure to predict improvement"
        # once the objective's changes reach its rounding; the gradient decides below
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            fun,
            theta0,
            jac=True,
            **({"hess": hess, "method": "trust-exact"} if small else {}),
            **({} if small else {"hessp": hessp, "method": "trust-ncg"}),
            options={"gtol": GTOL * scale, "maxiter": MAX_ITER},
        )
    return _result(res.x, res.nit, res.jac, k, matrix, centre)


def _result(x, nit, jac, k, matrix, centre):
    """``(coef, intercept)`` from the centred parameters, with a ConvergenceWarning if
    the fit ran out of iterations."""
    if nit >= MAX_ITER:
        warnings.warn(
            f"the {'matrix' if matrix else 'vector'} scaling fit stopped after {MAX_ITER} "
            f"iterations with gradient norm {np.linalg.norm(jac):.3g}; "
            "the logits may separate the classes (add a penalty)",
            ConvergenceWarning,
            stacklevel=4,
        )
    delta, b = _unpack(x, k, matrix)
    b = b - (delta @ centre if matrix else delta * centre)
    return delta + (np.eye(k) if matrix else 1.0), b
