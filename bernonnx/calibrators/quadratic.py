"""Quadratic scaling of the logit (CalArena's ``quadratic-scaling``), kept monotone: a
quadratic in the log-odds on the fitted range, increasing there by constraint, and
continued by its end tangents outside it.

The ONNX converter (``converters/quadratic.py``) emits the formula ``predict_proba``
evaluates (see the Notes).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bernonnx._base import PartialFitMixin, TableFitMixin, _ScoreCalibrator
from bernonnx._core.logistic import fit_nonnegative_logistic
from bernonnx._core.scale import factors, rescaled, unit_exponent
from bernonnx._validation import _fit_context

from ._input import INPUT_CONSTRAINTS, logit, resolve_input

__all__ = ["QuadraticScalingCalibrator"]


def scaled_logit(est, s: np.ndarray) -> np.ndarray:
    """The log-odds the map reads, times ``2**log2_scale_`` (the graph's two Muls)."""
    return rescaled(logit(est, s), est.log2_scale_)


def quadratic_eta(est, s: np.ndarray) -> np.ndarray:
    """The calibrated log-odds of scores ``s`` (see QuadraticScalingCalibrator's Notes)."""
    l = scaled_logit(est, s)
    u = np.minimum(np.maximum(l, est.low_), est.high_)
    v = (u - est.center_) / est.half_width_
    # each term a non-decreasing function of v whose every rounded step is one too
    # (1 - v >= 0 falls, its square falls, ...), so the rounded sum never decreases
    base, rise_low, rise_high = est.terms_
    falling, rising = 1.0 - v, 1.0 + v
    eta = (base + rise_low * (1.0 - falling * falling)) + rise_high * (rising * rising)
    # quarters: l - low cannot overflow; a tail beyond the float range is +-inf,
    # probability 0 or 1, as in the graph; a zero slope's tail is left out (never 0 * inf)
    with np.errstate(over="ignore"):
        if est.slope_low_ > 0:
            eta = eta + np.minimum(l * 0.25 - est.low_ * 0.25, 0.0) * (4.0 * est.slope_low_)
        if est.slope_high_ > 0:
            eta = eta + np.maximum(l * 0.25 - est.high_ * 0.25, 0.0) * (4.0 * est.slope_high_)
    return eta


class QuadraticScalingCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    r"""Quadratic scaling of the logit, monotone: ``logit(q) = a l^2 + b l + c`` on the
    fitted range of the log-odds ``l``, increasing there, linear beyond it.

    CalArena's ``quadratic-scaling`` (``probmetrics``; Berta et al. 2026) is a
    logistic regression on ``[1, l, l^2]``. A quadratic with ``a != 0`` turns
    back on one side, so that map reverses the ranking of extreme scores. Here
    the slope of the quadratic is constrained to be non-negative at both ends
    of the fitted range ``[low_, high_]`` (so on all of it: the slope is
    linear), and outside the range the map continues along its tangent at the
    end. The result is continuous, non-decreasing on the whole real line, and
    strictly increasing wherever its slope is positive: everywhere when
    ``slope_low_`` and ``slope_high_`` are positive (the constraint makes one
    of them 0 only where the unconstrained fit would turn back). On the
    fitted range it is the unconstrained quadratic whenever that one is
    increasing there.

    Parameters
    ----------
    input : {"auto", "proba", "logits"}, default="auto"
        What the scores are. ``"proba"``: probabilities in ``[0, 1]``, whose
        log-odds ``log(c) - log(1 - c)``, ``c = min(max(s, eps), 1 - eps)``,
        are scaled (as CalArena feeds ``predict_proba``). ``"logits"``:
        log-odds or decision values, scaled as they are. ``"auto"``:
        ``"proba"`` when every fitted score lies in ``[0, 1]``, ``"logits"``
        otherwise; inside :class:`~bernonnx.CalibratedClassifier` it is set
        from the scores the classifier gives.
    eps : float, default=1e-15
        Clip of probability scores, in ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    input_ : str
        ``"proba"`` or ``"logits"``: ``input`` resolved.
    log2_scale_ : int
        The log-odds are read as ``l = logit * 2**log2_scale_``: 0 unless the
        largest fitted magnitude is beyond ``2**500`` or below ``2**-500``, where
        a power of two (exact) brings it to ``[0.5, 1)`` (otherwise
        ``half_width_ ** 2`` or the tail slopes would overflow). The map is the
        same function of the raw score either way.
    low_, high_ : float
        The fitted range of the (scaled) log-odds ``l``.
    center_, half_width_ : float
        ``v = (u - center_) / half_width_`` maps ``[low_, high_]`` onto
        ``[-1, 1]`` (``half_width_ = 1`` for constant scores).
    intercept_, linear_, quadratic_ : float
        The quadratic in ``v``.
    terms_ : ndarray of shape (3,)
        The same quadratic as ``predict_proba`` evaluates it: the non-negative
        weights of ``1 - (1 - v)^2`` and ``(1 + v)^2`` after the constant (see
        the Notes).
    slope_low_, slope_high_ : float
        Its non-negative slopes per unit of ``l`` at ``low_`` and ``high_``,
        the tails' slopes.
    coef_ : ndarray of shape (3,)
        ``[c, b, a]`` of ``a l^2 + b l + c`` on the fitted range, for comparison
        with other implementations (not used by ``predict_proba``).
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        l = s  (input_ = "logits")  |  log(c) - log(1 - c), c = min(max(s, eps), 1 - eps)
        l = (l * 2**(e // 2)) * 2**(e - e // 2)      (e = log2_scale_, when not 0)
        u = min(max(l, low_), high_)
        v = (u - center_) / half_width_
        base, rise_low, rise_high = terms_
        inner = (base + rise_low * (1 - (1 - v) * (1 - v))) + rise_high * ((1 + v) * (1 + v))
        below = min(l * 0.25 - low_ * 0.25, 0) * (4 * slope_low_)   (when slope_low_ > 0)
        above = max(l * 0.25 - high_ * 0.25, 0) * (4 * slope_high_) (when slope_high_ > 0)
        q = 1 / (1 + exp(-(inner + below + above)))
        predict_proba = [1 - q, q]

    ``inner`` is ``intercept_ + linear_ * v + quadratic_ * v^2`` written as a
    sum of terms each non-decreasing in ``v`` in every rounded operation
    (``1 - v >= 0`` decreases, so does its square, ...): rounding cannot make
    the computed map decrease (written as the quadratic, it did by 1e-16 where
    a slope is 0). A zero tail slope's term is left out, so ``0 * inf`` never
    occurs for scores beyond the float range after scaling.

    The quadratic is parametrised by its slopes ``d_0, d_1 >= 0`` (in ``v``)
    at ``v = -1`` and ``v = 1``: ``inner = c + d_0 (2v - v^2) / 4 + d_1 (2v +
    v^2) / 4``, whose slope ``d_0 (1 - v) / 2 + d_1 (1 + v) / 2`` is a convex
    combination of the two. With Platt's (1999) targets ``T_i`` (see
    :class:`~bernonnx.BetaCalibrator`) the fit minimises

    .. math::

        \sum_i w_i \left[\log(1 + e^{\eta_i}) - T_i \eta_i\right]
        \quad \text{s.t. } d_0 \ge 0,\ d_1 \ge 0,

    by Newton's method on each face of the constraints (the best feasible
    face is the optimum). ``probmetrics`` fits the 0/1 labels without
    constraint (and computes the log-odds of float32 probabilities); where
    its quadratic is increasing on the fitted range the two differ by the
    targets' ``O(1 / n)``. Its affine counterpart, ``affine-scaling``, is
    :class:`~bernonnx.PlattCalibrator` (``log_odds=True`` on probabilities).

    References
    ----------
    E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Structured Matrix
    Scaling for Multi-Class Calibration", AISTATS 2026 (arXiv:2511.03685;
    quadratic scaling; the ``probmetrics`` package).
    J. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import QuadraticScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> l = rng.normal(scale=2.0, size=4000)
    >>> y = rng.random(4000) < 1 / (1 + np.exp(-(0.05 * l**2 + l + 0.5)))
    >>> cal = QuadraticScalingCalibrator().fit(l, y)
    >>> cal.input_, cal.coef_.round(2)
    ('logits', array([0.53, 1.01, 0.05]))
    """

    _parameter_constraints: dict = dict(INPUT_CONSTRAINTS)

    def __init__(self, input="auto", *, eps=1e-15):
        self.input = input
        self.eps = eps

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the monotone quadratic on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores: probabilities or log-odds (see ``input``).
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : QuadraticScalingCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        self.input_ = resolve_input(self, s)
        l = logit(self, s)
        # log-odds beyond 2**+-500: a power of two brings the largest to [0.5, 1), exact
        self.log2_scale_ = unit_exponent(float(np.max(np.abs(l))))
        l = scaled_logit(self, s)
        lo, hi = float(l.min()), float(l.max())
        # halves first: lo + hi and hi - lo may overflow for |l| near the float max
        center, half = lo / 2 + hi / 2, hi / 2 - lo / 2
        if not half > 0:
            half = 1.0  # constant scores: v = 0, the fit is the base rate
        v = (np.minimum(np.maximum(l, lo), hi) - center) / half
        F = np.column_stack([(2 * v - v * v) / 4, (2 * v + v * v) / 4, np.ones_like(v)])
        d0, d1, c = (float(t) for t in fit_nonnegative_logistic(F, target, w, (0, 1)))
        self.low_, self.high_, self.center_, self.half_width_ = lo, hi, center, half
        self.intercept_, self.linear_, self.quadratic_ = c, (d0 + d1) / 2, (d1 - d0) / 4
        self.slope_low_, self.slope_high_ = d0 / half, d1 / half
        self.terms_ = np.array([c - d1 / 4, d0 / 4, d1 / 4])
        # the quadratic in the raw log-odds (beyond the float range for extreme scales: inf)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            a = self.quadratic_ / np.float64(half) ** 2
            coef = [
                c - self.linear_ * center / half + a * np.float64(center) ** 2,
                self.linear_ / half - 2 * a * center,
                a,
            ]
            for factor in factors(self.log2_scale_):  # l' = l * 2**log2_scale_
                coef = [coef[0], coef[1] * factor, coef[2] * factor * factor]
            self.coef_ = np.array(coef, dtype=np.float64)
        return self

    def _evaluate(self, s):
        return expit(quadratic_eta(self, s))
