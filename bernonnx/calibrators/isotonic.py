"""Isotonic regression (Zadrozny and Elkan, 2002): the weighted least-squares monotone
step fit, interpolated.

A baseline the Bernstein calibrator is measured against, with the same
conventions as :class:`bernonnx.PlattCalibrator`; the ONNX converter
(``converters/isotonic.py``) interpolates exactly as ``predict_proba`` does.
Its pool-adjacent-violators solver (:mod:`bernonnx._core.pav`) also makes
histogram bins monotone.

References
----------
B. Zadrozny, C. Elkan, "Transforming classifier scores into accurate multiclass
probability estimates", KDD 2002 (isotonic regression as a calibrator).
M. Ayer, H. D. Brunk, G. M. Ewing, W. T. Reid, E. Silverman, "An empirical
distribution function for sampling with incomplete information", Annals of
Mathematical Statistics 26(4), 1955 (the pool-adjacent-violators algorithm).
R. E. Barlow, D. J. Bartholomew, J. M. Bremner, H. D. Brunk, "Statistical inference
under order restrictions", Wiley, 1972 (weighted isotonic regression and PAV).
"""

from __future__ import annotations

import numpy as np

from bernonnx._base import PartialFitMixin, TableFitMixin, _ScoreCalibrator
from bernonnx._core.pav import _pav
from bernonnx._core.transforms import rescale, score_exponent
from bernonnx._validation import StrOptions, _fit_context

__all__ = ["IsotonicCalibrator"]


def _pool_ties(s, target, w):
    """Distinct sorted scores, weighted mean target and total weight of each."""
    order = np.argsort(s, kind="stable")
    xs = s[order]
    first = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    wt = np.add.reduceat(w[order], first)
    return xs[first], np.add.reduceat((w * target)[order], first) / wt, wt


def _drop_inner_repeats(x, y):
    """Drop points whose ``y`` equals both neighbours' (as scikit-learn does):
    linear interpolation through them is unchanged."""
    keep = np.ones(y.shape[0], dtype=bool)
    keep[1:-1] = (y[1:-1] != y[:-2]) | (y[1:-1] != y[2:])
    return x[keep], y[keep]


class IsotonicCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    r"""Isotonic regression: the weighted least-squares monotone step fit, interpolated.

    Parameters
    ----------
    out_of_bounds : {"clip", "nan", "raise"}, default="clip"
        Scores outside the fitted range ``[x_thresholds_[0],
        x_thresholds_[-1]]``: take the end value, give NaN, or raise a
        ValueError (Python only; no ONNX equivalent).
    increasing : bool, default=True
        Fit a non-decreasing map (False: non-increasing).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    x_thresholds_ : ndarray of shape (n_thresholds,)
        Strictly increasing scores (float64): distinct fitted scores, less
        those whose fitted value equals both neighbours'.
    y_thresholds_ : ndarray of shape (n_thresholds,)
        Fitted probabilities there, non-decreasing (non-increasing when
        ``increasing=False``), in ``[0, 1]``.
    score_exponent_ : int
        Scores and thresholds are multiplied by ``2^score_exponent_`` before
        the interpolation; 0 unless the thresholds are extreme (above
        ``2^500`` or below ``2^-500`` in magnitude), see PlattCalibrator.
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits (``x = x_thresholds_``, ``y = y_thresholds_``, ``K`` points;
    ``numpy.interp``)::

        s, x = s * 2^score_exponent_, x * 2^score_exponent_   # skipped at 0
        c = min(max(s, x[0]), x[K-1])           # out_of_bounds="clip"
        p = y[k] + (y[k+1] - y[k]) / (x[k+1] - x[k]) * (c - x[k])
            for the k with x[k] <= c < x[k+1];  p = y[K-1] at c = x[K-1]
        p = y[0]                                 # K = 1 (constant scores)
        p = nan if s < x[0] or s > x[K-1]        # out_of_bounds="nan"
        predict_proba = [1 - p, p]

    That is scikit-learn's ``IsotonicRegression(out_of_bounds="clip",
    y_min=0, y_max=1)``: rows sorted by score, tied scores pooled into one
    point (weighted mean label, summed weight), then the weighted
    pool-adjacent-violators algorithm solves

    .. math::

        \min_{f} \sum_j W_j (f_j - \bar y_j)^2 \quad
        \text{s.t. } f_1 \le f_2 \le \dots \le f_m

    over the ``m`` distinct scores, and the fitted points are joined by
    straight lines. Ties are exact equality in float64 (scikit-learn pools
    scores closer than ``1e-15``; they differ only on such scores). Zero
    weight rows are dropped. Constant scores predict the weighted base rate.

    References
    ----------
    B. Zadrozny, C. Elkan, "Transforming classifier scores into accurate
    multiclass probability estimates", KDD 2002.
    M. Ayer et al., "An empirical distribution function for sampling with
    incomplete information", Ann. Math. Statist. 26(4), 1955 (PAV).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import IsotonicCalibrator
    >>> cal = IsotonicCalibrator().fit([1, 2, 3, 4], [0, 1, 0, 1])
    >>> cal.x_thresholds_.tolist(), cal.y_thresholds_.tolist()
    ([1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 0.5, 1.0])
    >>> cal.predict_proba([0.0, 1.5, 3.5])[:, 1].tolist()
    [0.0, 0.25, 0.75]
    """

    _parameter_constraints: dict = {
        "out_of_bounds": [StrOptions({"clip", "nan", "raise"})],
        "increasing": ["boolean"],
    }

    def __init__(self, out_of_bounds="clip", *, increasing=True):
        self.out_of_bounds = out_of_bounds
        self.increasing = increasing

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the monotone map on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores.
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : IsotonicCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        x, ybar, wt = _pool_ties(s, target, w)
        fitted = np.clip(_pav(ybar, wt, self.increasing), 0.0, 1.0)
        self.x_thresholds_, self.y_thresholds_ = _drop_inner_repeats(x, fitted)
        self.score_exponent_ = score_exponent(self.x_thresholds_)
        return self

    def _evaluate(self, s):
        # thresholds and scores rescaled alike (exact, order kept): the slope
        # between two denormal thresholds overflows, and inf * 0 = NaN
        e = getattr(self, "score_exponent_", 0)
        x, y, s = rescale(self.x_thresholds_, e), self.y_thresholds_, rescale(s, e)
        outside = (s < x[0]) | (s > x[-1])
        if self.out_of_bounds == "raise" and outside.any():
            raise ValueError(
                f"{int(outside.sum())} scores lie outside the fitted range "
                f"[{x[0]:.6g}, {x[-1]:.6g}] and out_of_bounds='raise'"
            )
        fill = np.nan if self.out_of_bounds == "nan" else None
        return np.interp(s, x, y, left=fill, right=fill)
