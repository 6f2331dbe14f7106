"""Platt's sigmoid fit: a logistic regression of smoothed targets on one regressor.

The two parameters (slope, intercept) of Platt (1999), by Newton's method over rows
read in chunks (:class:`_Rows`: in memory, or passes over a source), and the regressor
itself (the score or its clipped log-odds, :func:`_platt_feature`). Shared by
:class:`bernonnx.PlattCalibrator` and :class:`bernonnx.PlattHistogramCalibrator`,
whose fitted attributes ``_base._set_platt`` sets from it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from .transforms import clipped_log_odds

#: Newton on the two Platt parameters: at most this many iterations. It
#: converges quadratically; 8 to 15 iterations are typical.
_NEWTON_MAX_ITER = 100


def _platt_feature(s: np.ndarray, log_odds: bool, eps: float) -> np.ndarray:
    """The regressor ``t`` of the logistic fit: ``s`` or its clipped log-odds."""
    if not log_odds:
        return s
    lo, hi = float(s.min()), float(s.max())
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            "log_odds=True takes probability scores in [0, 1]; got scores in "
            f"[{lo:.6g}, {hi:.6g}]. Pass log_odds=False for decision values"
        )
    return clipped_log_odds(s, eps)


def _logit(p: float) -> float:
    return float(np.log(p) - np.log1p(-p))


class _Rows:
    """The regressor ``t``, 0/1 target and weights of a Platt fit, summed over chunks.

    ``each(fn)`` is the sum of ``fn(t, target, w)`` over the chunks of the
    rows: one call on in-memory arrays (:func:`_in_memory`), one pass over a
    ``_core.chunks.Source`` otherwise (``PlattCalibrator._fit_source``). ``lo``,
    ``hi``: the range of ``t``; ``n_pos``, ``n_neg``: the weight per class.
    """

    def __init__(self, each, lo: float, hi: float, n_pos: float, n_neg: float):
        self.each, self.lo, self.hi, self.n_pos, self.n_neg = each, lo, hi, n_pos, n_neg


def _in_memory(t: np.ndarray, target: np.ndarray, w: np.ndarray) -> _Rows:
    n_pos = float(w[target > 0.5].sum())
    n_neg = float(w[target <= 0.5].sum())
    return _Rows(lambda fn: fn(t, target, w), float(t.min()), float(t.max()), n_pos, n_neg)


def _fit_platt(rows: _Rows, C: float, increasing: bool) -> tuple[float, float]:
    """Slope and intercept of Platt's smoothed-target logistic fit (see PlattCalibrator).

    Newton's method on ``u = (t - centre) / half_range`` in ``[-1, 1]`` (the
    fit is invariant to that affine map; the L2 term is rescaled so that it
    penalises the slope of ``t``), then mapped back. Each step reads the rows
    once for five sums, each trial of the line search once for the loss.
    """
    lo, hi, n_pos, n_neg = rows.lo, rows.hi, rows.n_pos, rows.n_neg
    # halves first: lo + hi and hi - lo may overflow for |t| near the float max
    centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    if not half > 0:
        # constant scores carry no ranking: predict the weighted base rate
        return 0.0, _logit(n_pos / (n_pos + n_neg))
    # Platt (1999) targets: the MAP estimate under a uniform prior on the
    # per-class rates; keeps the optimum finite on separable scores
    soft_pos, soft_neg = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
    ridge = 0.0 if np.isinf(C) else 1.0 / (C * half * half)

    def scaled(t, target):
        return (t - centre) / half, np.where(target > 0.5, soft_pos, soft_neg)

    def loss(theta):
        def one(t, target, w):
            u, soft = scaled(t, target)
            eta = theta[0] * u + theta[1]
            return float(w @ (np.logaddexp(0.0, eta) - soft * eta))

        return rows.each(one) + 0.5 * ridge * theta[0] ** 2

    def sums(theta):
        def one(t, target, w):
            u, soft = scaled(t, target)
            p = expit(theta[0] * u + theta[1])
            r = w * (p - soft)
            h = w * p * (1.0 - p)
            return np.array([r @ u, r.sum(), h @ (u * u), h @ u, h.sum()])

        return rows.each(one)

    theta = np.array([0.0, np.log((n_pos + 1.0) / (n_neg + 1.0))])
    f = loss(theta)
    for _ in range(_NEWTON_MAX_ITER):
        ru, r, huu, hu, h = (float(v) for v in sums(theta))
        grad = np.array([ru + ridge * theta[0], r])
        hess = np.array([[huu + ridge, hu], [hu, h]])
        # a relative 1e-12 damping only guards a saturated Hessian: the
        # gradient is exact, so the fixed point is the exact optimum
        hess += 1e-12 * (np.trace(hess) + 1e-300) * np.eye(2)
        step = np.linalg.solve(hess, -grad)
        decrease = -float(grad @ step)
        if not decrease > 0:
            break
        scale = 1.0
        if decrease > 1e-10 * abs(f):
            # far from the optimum: backtrack on the objective (Armijo). Closer in,
            # f cannot resolve the remaining error, and the full step is safe
            while scale > 1e-12:
                fn = loss(theta + scale * step)
                if fn <= f - 1e-4 * scale * decrease:
                    break
                scale *= 0.5
            else:
                break
        theta = theta + scale * step
        f = loss(theta)
        if np.max(np.abs(scale * step)) <= 1e-13 * (1.0 + np.max(np.abs(theta))):
            break
    a, b = float(theta[0]), float(theta[1])
    if increasing and a < 0:
        # the problem is convex with one bound: the optimum is on it (a = 0),
        # where the intercept solves sum w (sigmoid(b) - T) = 0 in closed form
        a, b = 0.0, _logit((n_pos * soft_pos + n_neg * soft_neg) / (n_pos + n_neg))
    return a / half, b - a * centre / half
