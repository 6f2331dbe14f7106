"""Histogram binning (Zadrozny and Elkan, 2001) and the scaling-binning calibrator
(Kumar, Liang and Ma, 2019).

Baselines the Bernstein calibrator is measured against, with the same
conventions as :class:`bernonnx.PlattCalibrator`. Both look a value up in
right-closed bins; the Platt-histogram calibrator bins the Platt argument of
:mod:`bernonnx.calibrators.platt`'s fit. The ONNX converter (``converters/histogram.py``)
emits the same lookup.

References
----------
B. Zadrozny, C. Elkan, "Obtaining calibrated probability estimates from decision
trees and naive Bayesian classifiers", ICML 2001 (histogram binning).
A. Kumar, P. Liang, T. Ma, "Verified uncertainty calibration", NeurIPS 2019
(scaling-binning: Platt scaling, then equal-mass bins of its output).
"""

from __future__ import annotations

import numpy as np

from bernonnx._base import (
    _PLATT_CONSTRAINTS,
    PartialFitMixin,
    TableFitMixin,
    _platt_argument,
    _ScoreCalibrator,
    _set_platt,
)
from bernonnx._core.pav import _pav
from bernonnx._core.quantiles import weighted_quantile
from bernonnx._core.transforms import rescale, score_exponent
from bernonnx._validation import IntInterval, StrOptions, _fit_context

__all__ = ["HistogramCalibrator", "PlattHistogramCalibrator"]

_BIN_CONSTRAINTS: dict = {
    "n_bins": [IntInterval(1, None, closed="left")],
    "strategy": [StrOptions({"uniform", "quantile"})],
}


def _inner_edges(v, w, n_bins, strategy):
    """Strictly increasing inner bin edges of ``v``, all below ``max(v)``.

    "uniform": ``n_bins`` equal widths over ``[min v, max v]``; "quantile":
    weighted inverted-CDF quantiles at ``k / n_bins``. Repeated edges and
    edges at the top value (which would leave an empty top bin) are dropped,
    so quantile bins are never empty.
    """
    if strategy == "uniform":
        # on rescaled values: the width of [-1e308, 1e308] overflows, and that
        # of denormal scores has too few bits for n_bins steps
        e = score_exponent(v)
        edges = rescale(np.linspace(*rescale([v.min(), v.max()], e), n_bins + 1)[1:-1], -e)
    else:
        edges = weighted_quantile(v, w, np.arange(1, n_bins) / n_bins)
    edges = np.unique(edges)
    return edges[edges < v.max()]


def _midpoints_above(edges, v):
    """Each edge (a value of ``v``) moved halfway to the next larger value of ``v``.

    The bins hold the same rows of ``v``, but no row sits on an edge, where the
    last bit decides the bin: the log-odds feature's ``log`` may differ by an
    ulp between numpy and onnxruntime.
    """
    if edges.shape[0] == 0:
        return edges
    distinct = np.unique(v)
    above = distinct[np.searchsorted(distinct, edges, side="right")]
    with np.errstate(over="ignore", invalid="ignore"):  # a gap of 2e308: keep the edge
        middle = edges + (above - edges) / 2
    return np.where(middle < above, middle, edges)


def _bin_index(edges, v):
    # side="left": bins are right-closed, (e[k-1], e[k]]: an inverted-CDF
    # quantile edge closes the bin whose mass it completes (as in
    # sklearn.calibration.calibration_curve and bernonnx.metrics)
    return np.searchsorted(edges, v, side="left")


def _fill_empty(values, full):
    """Each empty bin takes the value of the nearest non-empty bin (in bin
    index; on a tie, the lower one)."""
    nonempty = np.flatnonzero(full)
    k = np.arange(values.shape[0])
    j = np.searchsorted(nonempty, k)  # first non-empty bin >= k
    up = nonempty[np.minimum(j, nonempty.size - 1)]
    down = nonempty[np.maximum(j - 1, 0)]
    dist_up = np.where(j < nonempty.size, up - k, np.inf)
    dist_down = np.where(j > 0, k - down, np.inf)
    return values[np.where(dist_down <= dist_up, down, up)]


def _bin_means(v, w, z, edges, increasing):
    """Weighted mean of ``z`` per bin of ``v``; PAV over the bins if ``increasing``."""
    idx = _bin_index(edges, v)
    m = edges.shape[0] + 1
    wt = np.bincount(idx, weights=w, minlength=m)
    wz = np.bincount(idx, weights=w * z, minlength=m)
    full = wt > 0
    means = np.zeros(m)
    means[full] = wz[full] / wt[full]
    if increasing:
        means[full] = _pav(means[full], wt[full])
    return np.clip(_fill_empty(means, full), 0.0, 1.0)


class HistogramCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    """Histogram binning: the weighted positive rate of the score's bin.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins before repeated edges are collapsed.
    strategy : {"uniform", "quantile"}, default="uniform"
        "uniform": equal widths over the fitted score range (not ``[0, 1]``,
        so decision values work as well as probabilities); "quantile":
        equal weighted mass, edges at weighted inverted-CDF quantiles.
    increasing : bool, default=False
        Pool the bin rates by weighted PAV (bin weights) into a
        non-decreasing sequence. False keeps the classic, non-monotone
        histogram binning.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    bin_edges_ : ndarray of shape (n_edges,)
        Strictly increasing inner edges (float64), ``n_edges <= n_bins - 1``.
    bin_values_ : ndarray of shape (n_edges + 1,)
        Probability of each bin.
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        k = searchsorted(bin_edges_, s, side="left")  # = number of edges < s
        p = bin_values_[k]
        predict_proba = [1 - p, p]

    Bins are right-closed: ``(-inf, e_0], (e_0, e_1], ..., (e_last, inf)``;
    a score equal to an edge falls in the lower bin, as in
    ``sklearn.calibration.calibration_curve``. Below the fitted range the
    first bin applies, above it the last.

    Each bin's value is the weighted fraction of positives of the
    calibration rows in it. Repeated edges are collapsed and an edge equal
    to the top score dropped, so quantile bins are never empty. A uniform bin
    can be: it takes the value of the nearest non-empty bin (by bin index; on
    a tie, the lower one), which keeps a non-decreasing sequence
    non-decreasing. The map is a step function, not monotone in general
    (neighbouring rates are noisy): use ``increasing=True`` for a
    monotone one. Constant scores give one bin, the weighted base rate.

    References
    ----------
    B. Zadrozny, C. Elkan, "Obtaining calibrated probability estimates from
    decision trees and naive Bayesian classifiers", ICML 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import HistogramCalibrator
    >>> s = np.array([0.0, 0.1, 0.5, 0.6, 0.9, 1.0])
    >>> cal = HistogramCalibrator(n_bins=2).fit(s, [0, 0, 1, 0, 1, 1])
    >>> cal.bin_edges_.tolist(), cal.bin_values_.round(3).tolist()
    ([0.5], [0.333, 0.667])
    >>> cal.predict_proba([0.5, 0.50001])[:, 1].round(3).tolist()
    [0.333, 0.667]
    """

    _parameter_constraints: dict = {**_BIN_CONSTRAINTS, "increasing": ["boolean"]}

    def __init__(self, n_bins=15, *, strategy="uniform", increasing=False):
        self.n_bins = n_bins
        self.strategy = strategy
        self.increasing = increasing

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the bins and their rates on scores ``X`` and labels ``y``.

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
        self : HistogramCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        self.bin_edges_ = _inner_edges(s, w, self.n_bins, self.strategy)
        self.bin_values_ = _bin_means(s, w, target, self.bin_edges_, self.increasing)
        return self

    def _evaluate(self, s):
        return self.bin_values_[_bin_index(self.bin_edges_, s)]


class PlattHistogramCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    """Platt-histogram ("scaling-binning") calibration of Kumar et al. (2019).

    Fits Platt scaling ``g``, bins the values ``g(s)`` and outputs, per bin,
    the weighted mean of ``g(s)`` over the calibration rows in it. Averaging
    ``g`` rather than the labels makes the bin values far less noisy than
    histogram binning's, and the output takes finitely many values, so its
    calibration error can be measured.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins before repeated edges are collapsed.
    strategy : {"quantile", "uniform"}, default="quantile"
        Bins of ``g(s)``: equal weighted mass (Kumar et al.) or equal width
        over the fitted range of ``g(s)``.
    log_odds, eps, C, increasing
        Of the Platt part, see :class:`PlattCalibrator`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    slope_, intercept_, score_exponent_
        The Platt map ``g``, see :class:`PlattCalibrator`.
    bin_edges_ : ndarray of shape (n_edges,)
        Strictly increasing inner edges on the scale of the Platt argument
        ``a = slope_ * t + intercept_`` (``g = sigmoid(a)``; ``expit(bin_edges_)``
        are the edges on the scale of ``g``).
    bin_values_ : ndarray of shape (n_edges + 1,)
        Weighted mean of ``g(s)`` in each bin.
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        t = s  or  log(c) - log1p(-c), c = min(max(s, eps), 1 - eps)  # log_odds
        a = slope_ * (t * 2^score_exponent_) + intercept_
        k = searchsorted(bin_edges_, a, side="left")   # = number of edges < a
        p = bin_values_[k]
        predict_proba = [1 - p, p]

    Bins are right-closed as in :class:`HistogramCalibrator`, and an empty
    (uniform) bin takes the nearest non-empty bin's value. Each non-empty
    bin's mean lies inside the bin, so ``bin_values_`` increases strictly
    over non-empty bins: the map is non-decreasing in ``s`` when
    ``slope_ >= 0`` (always with ``increasing=True``), non-increasing
    otherwise. Kumar et al. fit ``g``, choose the bins and average on three
    disjoint splits of the calibration data; like the seed, this class uses
    all rows for the three steps (split the data yourself for the
    verified-calibration guarantee). Constant scores predict the weighted
    base rate.

    References
    ----------
    A. Kumar, P. Liang, T. Ma, "Verified uncertainty calibration",
    NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import PlattHistogramCalibrator
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> y = rng.random(2000) < 1 / (1 + np.exp(-(2 * s - 1)))
    >>> cal = PlattHistogramCalibrator(n_bins=10).fit(s, y)
    >>> cal.bin_values_.shape
    (10,)
    >>> bool(np.all(np.diff(cal.bin_values_) > 0))
    True
    """

    _parameter_constraints: dict = {**_BIN_CONSTRAINTS, **_PLATT_CONSTRAINTS}

    def __init__(
        self,
        n_bins=15,
        *,
        strategy="quantile",
        log_odds=False,
        eps=1e-15,
        C=np.inf,
        increasing=True,
    ):
        self.n_bins = n_bins
        self.strategy = strategy
        self.log_odds = log_odds
        self.eps = eps
        self.C = C
        self.increasing = increasing

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the Platt map, then the bins of its values and their means.

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
        self : PlattHistogramCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        q = _set_platt(self, s, target, w)
        # The bins are chosen on g(s) but stored, and applied, on its argument
        # a = slope_ t + intercept_: Python and the graph then compare the same
        # float64 products and sums, while a sigmoid rounds differently in
        # onnxruntime and scipy, and a fitted row on an edge changed bins.
        a = _platt_argument(self, s)
        if self.strategy == "quantile":  # quantiles of a and of g(a) are the same rows
            edges = _midpoints_above(_inner_edges(a, w, self.n_bins, "quantile"), a)
        else:
            edges = _inner_edges(q, w, self.n_bins, "uniform")
            with np.errstate(divide="ignore"):
                edges = np.unique(np.log(edges) - np.log1p(-edges))
            edges = edges[np.isfinite(edges) & (edges < a.max())]
        self.bin_edges_ = edges
        self.bin_values_ = _bin_means(a, w, q, self.bin_edges_, increasing=False)
        return self

    def _evaluate(self, s):
        return self.bin_values_[_bin_index(self.bin_edges_, _platt_argument(self, s))]
