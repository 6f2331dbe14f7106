"""A logistic regression on a few features with non-negative coefficients.

The fit behind Beta calibration (Kull, Silva Filho and Flach 2017) and quadratic
scaling of the logit (Berta et al. 2026): a column of ones (the intercept) and two
features, Platt's (1999) smoothed targets, and the coefficients of the two features
constrained to be non-negative, which is what makes both maps non-decreasing.

The problem is convex with bound constraints on at most a few coefficients, so its
optimum is the unconstrained optimum of one face of the feasible set (the one whose
constraints are active, KKT): each face is fitted by Newton's method, faces whose free
coefficients come out negative are infeasible, and the feasible face of least loss is
the optimum. It is the Beta calibration package's procedure (fit, drop a negative
coefficient, refit), carried through to every combination.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.special import expit

#: Newton iterations per face at most; it converges quadratically (8 to 20 typical).
_NEWTON_MAX_ITER = 100


def platt_targets(target: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Platt's (1999) smoothed targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``
    (weighted class totals): the optimum is finite even on separable scores."""
    n_pos = float(w[target > 0.5].sum())
    n_neg = float(w[target <= 0.5].sum())
    return np.where(target > 0.5, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _loss(F, soft, w, theta) -> float:
    eta = F @ theta
    # log(1 + e^eta), written out: numpy's logaddexp takes 1.6 times as long
    softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
    return float(w @ (softplus - soft * eta))


def _newton(F: np.ndarray, soft: np.ndarray, w: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Minimise the weighted log loss of ``expit(F @ theta)`` against ``soft`` from ``theta``."""
    f = _loss(F, soft, w, theta)
    for _ in range(_NEWTON_MAX_ITER):
        p = expit(F @ theta)
        grad = F.T @ (w * (p - soft))
        hess = (F * (w * p * (1.0 - p))[:, None]).T @ F
        # a relative damping only guards a singular Hessian (collinear features, such as
        # a constant score); the gradient is exact, so a fixed point is an optimum
        hess += 1e-12 * (np.trace(hess) + 1e-300) * np.eye(hess.shape[0])
        step = np.linalg.solve(hess, -grad)
        decrease = -float(grad @ step)
        if not decrease > 0:
            break
        scale = 1.0
        if decrease > 1e-10 * abs(f):
            # far from the optimum: backtrack on the objective (Armijo); closer in, f
            # cannot resolve the remaining error and the full step is safe (f is then
            # only the scale this test compares with, and is kept)
            while scale > 1e-12:
                trial = _loss(F, soft, w, theta + scale * step)
                if trial <= f - 1e-4 * scale * decrease:
                    f = trial
                    break
                scale *= 0.5
            else:
                break
        theta = theta + scale * step
        if np.max(np.abs(scale * step)) <= 1e-13 * (1.0 + np.max(np.abs(theta))):
            break
    return theta


def fit_nonnegative_logistic(
    F: np.ndarray, target: np.ndarray, w: np.ndarray, nonnegative: tuple[int, ...]
) -> np.ndarray:
    """Coefficients ``theta`` minimising the weighted log loss of ``expit(F @ theta)``
    against Platt's smoothed targets, with ``theta[j] >= 0`` for ``j`` in ``nonnegative``.

    Parameters
    ----------
    F : ndarray of shape (n, p)
        The features, a column of ones among them (never constrained).
    target : ndarray of shape (n,)
        0/1 labels.
    w : ndarray of shape (n,)
        Positive weights (weight ``k`` equals ``k`` repeated rows: the targets are
        weighted counts).
    nonnegative : tuple of int
        The constrained columns (a few: every combination of them is one face).

    Returns
    -------
    theta : ndarray of shape (p,)
        Constrained coefficients exactly 0 where their constraint is active.
    """
    soft = platt_targets(target, w)
    # each column scaled to a largest magnitude of 1 (a positive factor keeps the signs)
    scale = np.max(np.abs(F), axis=0)
    scale[~(scale > 0)] = 1.0
    G = F / scale
    start = np.zeros(F.shape[1])
    # a constant constrained feature (constant scores) is collinear with the intercept:
    # its coefficient is 0, not an arbitrary point of a flat valley
    constant = tuple(j for j in nonnegative if np.ptp(F[:, j]) == 0)
    best, best_loss = None, np.inf
    for k in range(len(nonnegative) + 1):
        for fixed in combinations(nonnegative, k):
            if not set(constant) <= set(fixed):
                continue
            free = [j for j in range(F.shape[1]) if j not in fixed]
            theta = np.zeros(F.shape[1])
            theta[free] = _newton(G[:, free], soft, w, start[free])
            if np.any(theta[list(nonnegative)] < 0):
                continue  # infeasible face
            loss = _loss(G, soft, w, theta)
            if loss < best_loss:
                best, best_loss = theta, loss
        if best is not None and k == len(constant):
            break  # the least constrained face is feasible: it is the optimum
    # the face with every constrained coefficient at 0 is always feasible
    return best / scale
