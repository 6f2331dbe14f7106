"""Non-decreasing parametric maps of the log-odds: the stack's parametric members.

Each is a logistic regression ``c + F(t) @ w`` with ``w >= 0`` on non-decreasing features
``F`` of the log-odds ``t``, fitted to the 0/1 labels (weighted log loss, L-BFGS-B on
the standardised features):

* ``affine``: ``F = t`` (Platt scaling of the log-odds, ``a >= 0``);
* ``beta``: ``F = [-softplus(-t), softplus(t)]``, i.e. ``a log p - b log(1 - p)`` with
  ``p = sigmoid(t)`` (Kull, Silva Filho and Flach 2017, "Beta calibration");
* ``quadratic``: ``c + a u + b u^2`` on ``u``, the log-odds centred at their weighted
  median, scaled by their interquartile range and log-compressed beyond 4 (``4 + log(1 +
  |u| - 4)``, so that the far tails of naive Bayes log-odds do not drive the square),
  parametrised by its slopes at the smallest and the largest fitted ``u`` (both >= 0:
  increasing on the fitted range) and continued linearly beyond it.

``log_odds`` evaluates, in float64, the formula ``converters/stacked.py`` emits (see
:func:`features`).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

FAMILIES = ("affine", "beta", "quadratic")
FLOAT_MAX = float(np.finfo(np.float64).max)


def row_loss(y: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Per-row log loss of log-odds ``eta`` against 0/1 labels ``y``."""
    return np.logaddexp(0.0, eta) - y * eta


def nonnegative_logistic(
    F: np.ndarray, y: np.ndarray, w: np.ndarray, theta: np.ndarray, options=None
) -> np.ndarray:
    """Intercept and non-negative coefficients of the weighted logistic regression of the
    0/1 labels ``y`` on the columns of ``F``: L-BFGS-B from ``theta`` (``options`` to
    scipy's, None for its defaults). The parametric members and the stack both fit it."""
    X = np.hstack([np.ones((F.shape[0], 1)), F])
    total = float(w.sum())

    def objective(coef):
        eta = X @ coef
        return (w @ row_loss(y, eta)) / total, X.T @ (w * (expit(eta) - y)) / total

    bounds = [(None, None)] + [(0.0, None)] * F.shape[1]
    with warnings.catch_warnings():
        # exp overflow at the line search's trial points is harmless (a huge loss)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(objective, theta, jac=True, method="L-BFGS-B", bounds=bounds,
                       options=options)  # fmt: skip
    return res.x


def softplus_pair(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``-softplus(-t)`` and ``softplus(t)`` with ``r = log(1 + exp(-|t|))`` (as the graph:
    ``min(t, 0) - r`` and ``max(t, 0) + r``, no overflow)."""
    r = np.log(1.0 + np.exp(-np.abs(t)))
    return np.minimum(t, 0.0) - r, np.maximum(t, 0.0) + r


def squash(t: np.ndarray, centre: float, scale: float) -> np.ndarray:
    """``u = (t - centre) / scale``, log-compressed beyond 4: ``sign(u) (4 + log(1 + |u|
    - 4))`` (``log(1 + x)`` as written, the graph's Log of an Add); ``u`` beyond the
    float range is held at the float maximum (the graph's Clip), so that log-odds near it
    (a scale below 1) keep finite features."""
    with np.errstate(over="ignore"):
        u = np.clip((t - centre) / scale, -FLOAT_MAX, FLOAT_MAX)
    a = np.abs(u)
    return np.where(a > 4.0, np.sign(u) * (4.0 + np.log(1.0 + np.maximum(a - 4.0, 0.0))), u)


def features(family: str, t: np.ndarray, shape: tuple) -> np.ndarray:
    """The family's features (n, 1) or (n, 2) of the log-odds ``t``; ``shape`` is
    ``(centre, scale, lo, hi)`` of the quadratic family (unused by the others).

    quadratic, with ``uc = min(max(u, lo), hi)``::

        h = (uc - lo)^2 / (2 (hi - lo))      h'(lo) = 0, h'(hi) = 1
        g = (uc - lo) - h                    g'(lo) = 1, g'(hi) = 0
        F = [g + min(u - lo, 0), h + max(u - hi, 0)]
    """
    if family == "affine":
        return t[:, None]
    if family == "beta":
        return np.stack(softplus_pair(t), axis=1)
    centre, scale, lo, hi = shape
    u = squash(t, centre, scale)
    uc = np.minimum(np.maximum(u, lo), hi)
    h = (uc - lo) ** 2 / (2.0 * (hi - lo))
    g = (uc - lo) - h
    return np.stack([g + np.minimum(u - lo, 0.0), h + np.maximum(u - hi, 0.0)], axis=1)


def weighted_percentiles(t: np.ndarray, w: np.ndarray, q) -> np.ndarray:
    """numpy's default (linear) percentiles for unit weights; weighted ones otherwise
    (the same interpolation on the cumulative weight, weights of mean below 1 first
    scaled to mean 1)."""
    if np.all(w == 1.0):
        return np.percentile(t, q)
    order = np.argsort(t, kind="stable")
    ts, ws = t[order], w[order]
    mean = float(ws.mean())
    if mean < 1.0:
        # fewer counts than rows (shares summing to 1, say): the rule below would put
        # them within one position of each other; as many counts as rows instead (the
        # percentiles of equal shares are those of equal counts)
        ws = ws / mean
    # a row of integer weight k stands for k copies at positions start .. start + k - 1 of
    # the repeated sorted rows; numpy's rule interpolates linearly between positions
    start = np.cumsum(ws) - ws
    end = start + np.maximum(ws - 1.0, 0.0)
    pos = np.stack([start, end], axis=1).ravel() / max(float(ws.sum()) - 1.0, 1e-300)
    return np.interp(np.asarray(q, dtype=np.float64) / 100.0, pos, np.repeat(ts, 2))


def _mean(F: np.ndarray, w: np.ndarray, total: float) -> np.ndarray:
    """``w @ F / total`` per column; a column whose sum overflows (several log-odds
    near the float maximum) is first divided by its largest magnitude."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = (w @ F) / total
        for j in np.flatnonzero(~np.isfinite(out)):
            big = np.max(np.abs(F[:, j]))
            out[j] = big * ((w @ (F[:, j] / big)) / total)
    return out


def _deviation(D: np.ndarray, w: np.ndarray, total: float) -> np.ndarray:
    """``sqrt(w @ D**2 / total)`` per column; a column whose squares overflow or
    underflow (log-odds beyond 1e150 or within 1e-150) is first divided by its largest
    magnitude."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.sqrt((w @ D**2) / total)
        for j in np.flatnonzero(~((out > 1e-150) & (out < 1e150))):
            big = np.max(np.abs(D[:, j]))
            if 0.0 < big < np.inf:
                out[j] = big * np.sqrt((w @ (D[:, j] / big) ** 2) / total)
    return out


class IncreasingLogistic:
    """Logistic regression ``c + F(t) @ w``, ``w >= 0``, on the non-decreasing features of
    ``family`` (see the module docstring). ``fit`` sets ``shape_``, ``mean_``, ``norm_``
    and ``w_``; :meth:`log_odds` is ``w_[0] + ((F - mean_) / norm_) @ w_[1:]``."""

    def __init__(self, family: str):
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        self.family = family

    def fit(self, t: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
        w = np.ones(t.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
        total = float(w.sum())
        self.shape_ = (0.0, 1.0, 0.0, 1.0)
        if self.family == "quadratic":
            q25, q50, q75 = weighted_percentiles(t, w, [25, 50, 75])
            centre, scale = float(q50), float(max(q75 - q25, 1e-12))
            u = squash(t, centre, scale)
            lo = float(u.min())
            self.shape_ = (centre, scale, lo, float(max(u.max(), lo + 1e-9)))
        F = features(self.family, t, self.shape_)
        self.mean_ = _mean(F, w, total)
        deviation = _deviation(F - self.mean_, w, total)
        self.norm_ = np.where(deviation > 0.0, deviation, 1e-300)  # a constant feature
        theta = np.zeros(F.shape[1] + 1)
        rate = float(w @ y) / total
        theta[0] = np.log((rate + 1e-9) / (1.0 - rate + 1e-9))
        self.w_ = nonnegative_logistic(
            (F - self.mean_) / self.norm_, y, w, theta,
            options={"maxiter": 500, "gtol": 1e-10, "ftol": 1e-14},
        )  # fmt: skip
        return self

    def log_odds(self, t: np.ndarray) -> np.ndarray:
        """``w_[0] + sum_j w_[1 + j] (F_j - mean_j) / norm_j``, summed left to right over
        the features of non-zero slope (a feature may be infinite at a score near the
        float maximum, and ``inf * 0`` is NaN where the term is 0)."""
        with np.errstate(over="ignore"):  # scores near the float max: +-inf, as the graph
            F = (features(self.family, t, self.shape_) - self.mean_) / self.norm_
            return self._sum(F)

    def _sum(self, F: np.ndarray) -> np.ndarray:
        eta = np.full(F.shape[0], self.w_[0])
        for j in range(F.shape[1]):
            if self.w_[1 + j] != 0.0:
                eta = eta + F[:, j] * self.w_[1 + j]
        return eta
