"""Platt scaling (seeds 001 and 004): a logistic regression of the label on the score.

A baseline the Bernstein calibrator is measured against, with the same
conventions: one score column, any two labels, sample weight ``k`` equals ``k``
repeated rows, float32 in and out, fitted attributes that are plain numpy
floats, and a ``predict_proba`` formula that the ONNX converter
(``converters/platt.py``) emits node for node (see the Notes). Its fit is also
the first step of :class:`bernonnx.PlattHistogramCalibrator`.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit

from ._base import PartialFitMixin, SourceFitMixin, _ScoreCalibrator
from ._core.chunks import target_of, weights_of
from ._core.sources import summarise
from ._core.transforms import clipped_log_odds, rescale, score_exponent
from ._validation import Interval, _fit_context

__all__ = ["PlattCalibrator"]

#: Newton on the two Platt parameters: at most this many iterations. It
#: converges quadratically; 8 to 15 iterations are typical.
_NEWTON_MAX_ITER = 100

_PLATT_CONSTRAINTS: dict = {
    "log_odds": ["boolean"],
    # below about 1.1e-16, 1 - eps rounds to 1 in float64 and logit(1) = inf
    "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    "C": [Interval(Real, 0, np.inf, closed="right")],
    "increasing": ["boolean"],
}


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


def _platt_argument(est, s: np.ndarray) -> np.ndarray:
    """``slope_ * t + intercept_``: one multiplication, one addition (the graph's Mul, Add)."""
    t = rescale(_platt_feature(s, est.log_odds, est.eps), getattr(est, "score_exponent_", 0))
    return est.slope_ * t + est.intercept_


def _platt_eval(est, s: np.ndarray) -> np.ndarray:
    return expit(_platt_argument(est, s))


def _set_platt(est, s, target, w):
    """Fit the Platt part of ``est`` (score_exponent_, slope_, intercept_) and return g(s).

    Extreme scores are rescaled by a power of two first: the slope of
    denormal scores (about 1e310) is not a float64.
    """
    t = _platt_feature(s, est.log_odds, est.eps)
    est.score_exponent_ = score_exponent(t)
    t = rescale(t, est.score_exponent_)
    est.slope_, est.intercept_ = _fit_platt(_in_memory(t, target, w), float(est.C), est.increasing)
    return _platt_eval(est, s)


def _set_platt_source(est, source):
    """:func:`_set_platt` on the rows of a ``_core.chunks.Source``, read in passes."""
    described = summarise(source, type(est).__name__)
    est.classes_, est.n_features_in_ = described.classes, 1
    ends = _platt_feature(np.array([described.lo, described.hi]), est.log_odds, est.eps)
    est.score_exponent_ = score_exponent(ends)
    lo, hi = rescale(ends, est.score_exponent_)

    def each(fn):
        def one(chunk):
            w = weights_of(chunk)
            keep = w > 0
            t = rescale(_platt_feature(chunk.s[keep], est.log_odds, est.eps), est.score_exponent_)
            return fn(t, target_of(chunk, described.classes)[keep], w[keep])

        return source.reduce(one)

    n_pos = described.positive_weight
    rows = _Rows(each, float(lo), float(hi), n_pos, described.weight - n_pos)
    est.slope_, est.intercept_ = _fit_platt(rows, float(est.C), est.increasing)


class PlattCalibrator(PartialFitMixin, SourceFitMixin, _ScoreCalibrator):
    r"""Platt scaling: a logistic regression of the label on the score.

    Parameters
    ----------
    log_odds : bool, default=False
        Regress on ``logit(clip(score, eps, 1 - eps))`` instead of the score
        (for probability scores, the log-odds scale is where a
        linear fit is well specified). Scores must then lie in ``[0, 1]``.
    eps : float, default=1e-15
        Clip of ``log_odds=True``, in ``[1e-15, 0.5)``: 0 and 1 map to
        about -34.5 and 34.5 (``1 - eps`` must stay below 1 in float64).
    C : float, default=inf
        Inverse strength of an L2 penalty ``slope^2 / (2 C)`` on the slope
        (never on the intercept), as in ``LogisticRegression(C=C)``;
        ``inf``: no penalty.
    increasing : bool, default=True
        Constrain ``slope_ >= 0`` so the map keeps the ranking of scores.
        False: the classic unconstrained fit, whose slope is negative on
        scores anti-correlated with the label.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    slope_ : float
        Coefficient of ``t`` (non-negative when ``increasing=True``).
    intercept_ : float
    score_exponent_ : int
        ``t`` is multiplied by ``2^score_exponent_`` first; 0 unless the
        fitted ``t`` are extreme (above ``2^500`` or below ``2^-500`` in
        magnitude, e.g. denormal scores, whose slope would overflow).
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        t = s                                        # log_odds=False
        c = min(max(s, eps), 1 - eps)                # log_odds=True, needs s in [0, 1]
        t = log(c) - log1p(-c)
        t = t * 2^score_exponent_      # two exact power-of-two products; skipped at 0
        p = 1 / (1 + exp(-(slope_ * t + intercept_)))
        predict_proba = [1 - p, p]

    The fit follows Platt (1999) and scikit-learn's ``method="sigmoid"``:
    with ``N_+`` and ``N_-`` the weighted class totals, the 0/1 labels are
    replaced by the targets

    .. math::

        T_i = \frac{N_+ + 1}{N_+ + 2} \text{ if } y_i = 1, \qquad
        T_i = \frac{1}{N_- + 2} \text{ if } y_i = 0,

    and ``(a, b) = (slope_, intercept_)`` solve

    .. math::

        \min_{a, b} \sum_i w_i \left[\log(1 + e^{a t_i + b})
        - T_i (a t_i + b)\right] + \frac{a^2}{2C}
        \quad \text{s.t. } a \ge 0 \text{ (if increasing)}.

    The smoothed targets lie strictly inside (0, 1), so the optimum is finite
    and unique even on separable scores, where the plain maximum-likelihood
    slope is infinite. They are weighted counts, so weights still equal
    repetition. Newton's method solves the two-parameter problem exactly
    (vectorised passes over the rows). With ``increasing=True`` and a
    negative unconstrained slope, the constrained optimum is ``slope_ = 0``
    and a constant probability, the weighted mean of ``T``. Constant scores
    predict the weighted base rate (``slope_ = 0``).

    References
    ----------
    J. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", 1999.
    A. Kumar, P. Liang, T. Ma, "Verified uncertainty calibration",
    NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.platt import PlattCalibrator
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> y = rng.random(2000) < 1 / (1 + np.exp(-(2 * s - 1)))
    >>> cal = PlattCalibrator().fit(s, y)
    >>> round(cal.slope_, 1), round(cal.intercept_, 1)
    (2.0, -0.9)
    """

    _parameter_constraints: dict = dict(_PLATT_CONSTRAINTS)

    def __init__(self, log_odds=False, *, eps=1e-15, C=np.inf, increasing=True):
        self.log_odds = log_odds
        self.eps = eps
        self.C = C
        self.increasing = increasing

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit slope and intercept on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores (probabilities when ``log_odds=True``).
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : PlattCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        _set_platt(self, s, target, w)
        return self

    def _fit_source(self, source):
        """Fit on the rows of a ``_core.chunks.Source`` in passes: the same fit as in memory."""
        _set_platt_source(self, source)
        return self

    def _evaluate(self, s):
        return _platt_eval(self, s)
