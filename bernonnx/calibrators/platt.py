"""Platt scaling (Platt, 1999): a logistic regression of the label on the score.

A baseline the Bernstein calibrator is measured against, with the same
conventions: one score column, any two labels, sample weight ``k`` equals ``k``
repeated rows, float32 in and out, fitted attributes that are plain numpy
floats, and a ``predict_proba`` formula that the ONNX converter
(``converters/platt.py``) emits node for node (see the Notes). Its fit is also
the first step of :class:`bernonnx.PlattHistogramCalibrator`.

References
----------
J. Platt, "Probabilistic outputs for support vector machines and comparisons to
regularized likelihood methods", in A. Smola et al. (eds.), Advances in Large Margin
Classifiers, MIT Press, 1999 (the sigmoid and its smoothed targets).
A. Niculescu-Mizil, R. Caruana, "Predicting good probabilities with supervised
learning", ICML 2005 (Platt scaling and isotonic regression compared as calibrators).
"""

from __future__ import annotations

import numpy as np

from bernonnx._base import (
    _PLATT_CONSTRAINTS,
    PartialFitMixin,
    SourceFitMixin,
    _platt_eval,
    _ScoreCalibrator,
    _set_platt,
)
from bernonnx._core.chunks import target_of, weights_of
from bernonnx._core.sigmoid import _fit_platt, _platt_feature, _Rows
from bernonnx._core.sources import summarise
from bernonnx._core.transforms import rescale, score_exponent
from bernonnx._validation import _fit_context

__all__ = ["PlattCalibrator"]


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
    >>> from bernonnx import PlattCalibrator
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
