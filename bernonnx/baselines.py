"""The classic one-score calibrators: Platt scaling, isotonic regression,
histogram binning and Platt-histogram binning (seeds 001 and 004).

They are the baselines the Bernstein calibrator is measured against, with the
same conventions: one score column, any two labels, sample weight ``k`` equals
``k`` repeated rows, float32 in and out, fitted attributes that are plain
numpy arrays and floats, and a ``predict_proba`` formula that the ONNX
converters emit node for node (each class's Notes).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._base import OneScoreMixin
from ._stats import weighted_quantile
from ._transforms import clipped_log_odds, rescale, score_exponent
from ._validation import (
    Interval,
    IntInterval,
    StrOptions,
    _fit_context,
    fit_inputs,
    predict_scores,
)

#: Newton on the two Platt parameters: at most this many iterations. It
#: converges quadratically; 8 to 15 iterations are typical.
_NEWTON_MAX_ITER = 100
#: Vectorised pooling rounds of the PAV before the exact stack pass finishes
#: off the (by then few) remaining blocks; a constant, so the PAV stays O(n).
_PAV_ROUNDS = 8

_PLATT_CONSTRAINTS: dict = {
    "log_odds": ["boolean"],
    # below about 1.1e-16, 1 - eps rounds to 1 in float64 and logit(1) = inf
    "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    "C": [Interval(Real, 0, np.inf, closed="right")],
    "increasing": ["boolean"],
}
_BIN_CONSTRAINTS: dict = {
    "n_bins": [IntInterval(1, None, closed="left")],
    "strategy": [StrOptions({"uniform", "quantile"})],
}


class _ScoreCalibrator(OneScoreMixin, ClassifierMixin, BaseEstimator):
    """A one-score calibrator: inputs checked as ``BernsteinCalibrator`` does
    (:func:`fit_inputs`), ``[1 - p, p]``, ``predict`` and tags from the mixin.

    Subclasses implement ``_evaluate(s)``: the positive-class probability of
    float64 scores, in float64.
    """

    def _positive_proba(self, X):
        check_is_fitted(self)
        s = predict_scores(self, X)
        # evaluated in float64 (a float32 score is exact in float64), then cast back
        return self._evaluate(s.astype(np.float64)).astype(s.dtype, copy=False)


# --------------------------------------------------------------------- Platt


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


def _fit_platt(
    t: np.ndarray, target: np.ndarray, w: np.ndarray, C: float, increasing: bool
) -> tuple[float, float]:
    """Slope and intercept of Platt's smoothed-target logistic fit (see PlattCalibrator).

    Newton's method on ``u = (t - centre) / half_range`` in ``[-1, 1]`` (the
    fit is invariant to that affine map; the L2 term is rescaled so that it
    penalises the slope of ``t``), then mapped back.
    """
    lo, hi = float(t.min()), float(t.max())
    # halves first: lo + hi and hi - lo may overflow for |t| near the float max
    centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    if not half > 0:
        # constant scores carry no ranking: predict the weighted base rate
        return 0.0, _logit(float(np.average(target, weights=w)))
    n_pos = float(w[target > 0.5].sum())
    n_neg = float(w[target <= 0.5].sum())
    # Platt (1999) targets: the MAP estimate under a uniform prior on the
    # per-class rates; keeps the optimum finite on separable scores
    soft = np.where(target > 0.5, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    u = (t - centre) / half
    ridge = 0.0 if np.isinf(C) else 1.0 / (C * half * half)

    def objective(theta):
        eta = theta[0] * u + theta[1]
        return float(w @ (np.logaddexp(0.0, eta) - soft * eta)) + 0.5 * ridge * theta[0] ** 2

    theta = np.array([0.0, np.log((n_pos + 1.0) / (n_neg + 1.0))])
    f = objective(theta)
    for _ in range(_NEWTON_MAX_ITER):
        p = expit(theta[0] * u + theta[1])
        r = w * (p - soft)
        h = w * p * (1.0 - p)
        hu = float(h @ u)
        grad = np.array([float(r @ u) + ridge * theta[0], float(r.sum())])
        hess = np.array([[float(h @ (u * u)) + ridge, hu], [hu, float(h.sum())]])
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
                fn = objective(theta + scale * step)
                if fn <= f - 1e-4 * scale * decrease:
                    break
                scale *= 0.5
            else:
                break
        theta = theta + scale * step
        f = objective(theta)
        if np.max(np.abs(scale * step)) <= 1e-13 * (1.0 + np.max(np.abs(theta))):
            break
    a, b = float(theta[0]), float(theta[1])
    if increasing and a < 0:
        # the problem is convex with one bound: the optimum is on it (a = 0),
        # where the intercept solves sum w (sigmoid(b) - T) = 0 in closed form
        a, b = 0.0, _logit(float(np.average(soft, weights=w)))
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
    est.slope_, est.intercept_ = _fit_platt(t, target, w, float(est.C), est.increasing)
    return _platt_eval(est, s)


# ------------------------------------------------------------------ isotonic


def _pav_stack(starts, bw, bwy):
    """Exact stack PAV over blocks: each block is pushed and popped at most once."""
    st, sw, swy = [], [], []
    for s0, w0, wy0 in zip(starts.tolist(), bw.tolist(), bwy.tolist(), strict=True):
        while sw and swy[-1] / sw[-1] >= wy0 / w0:
            s0, w0, wy0 = st.pop(), w0 + sw.pop(), wy0 + swy.pop()
        st.append(s0)
        sw.append(w0)
        swy.append(wy0)
    return np.asarray(st, dtype=np.intp), np.asarray(sw), np.asarray(swy)


def _pav(y: np.ndarray, w: np.ndarray, increasing: bool = True) -> np.ndarray:
    """Weighted least-squares monotone fit of ``y`` in the given order (positive ``w``).

    Pool-adjacent-violators, ties (equal neighbours) pooled too, as in
    scikit-learn. A few vectorised rounds each pool every maximal
    non-increasing run of block means at once (pooling any adjacent
    violators is valid PAV: the optimum is unique); a stack pass over the
    remaining blocks then finishes exactly. O(n) overall.
    """
    if not increasing:
        return _pav(y[::-1], w[::-1])[::-1]
    n = y.shape[0]
    starts, bw, bwy = np.arange(n), w.astype(np.float64), w * y
    for _ in range(_PAV_ROUNDS):
        mean = bwy / bw
        pool = mean[:-1] >= mean[1:]
        if not pool.any():
            break
        first = np.flatnonzero(np.r_[True, ~pool])
        starts = starts[first]
        bw, bwy = np.add.reduceat(bw, first), np.add.reduceat(bwy, first)
    else:
        starts, bw, bwy = _pav_stack(starts, bw, bwy)
    return np.repeat(bwy / bw, np.diff(np.r_[starts, n]))


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


# ----------------------------------------------------------------- histogram


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


# ------------------------------------------------------------------- classes


class PlattCalibrator(_ScoreCalibrator):
    r"""Platt scaling: a logistic regression of the label on the score.

    Parameters
    ----------
    log_odds : bool, default=False
        Regress on ``logit(clip(score, eps, 1 - eps))`` instead of the score
        (seed 001: for probability scores, the log-odds scale is where a
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
    NeurIPS 2019 (seed 001).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.baselines import PlattCalibrator
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
        _set_platt(self, *fit_inputs(self, X, y, sample_weight))
        return self

    def _evaluate(self, s):
        return _platt_eval(self, s)


class IsotonicCalibrator(_ScoreCalibrator):
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
    incomplete information", Ann. Math. Statist. 26(4), 1955 (PAV; seed 004).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.baselines import IsotonicCalibrator
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
        x, ybar, wt = _pool_ties(*fit_inputs(self, X, y, sample_weight))
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


class HistogramCalibrator(_ScoreCalibrator):
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
    decision trees and naive Bayesian classifiers", ICML 2001 (seed 001).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.baselines import HistogramCalibrator
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
        s, target, w = fit_inputs(self, X, y, sample_weight)
        self.bin_edges_ = _inner_edges(s, w, self.n_bins, self.strategy)
        self.bin_values_ = _bin_means(s, w, target, self.bin_edges_, self.increasing)
        return self

    def _evaluate(self, s):
        return self.bin_values_[_bin_index(self.bin_edges_, s)]


class PlattHistogramCalibrator(_ScoreCalibrator):
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
    NeurIPS 2019 (seed 001).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.baselines import PlattHistogramCalibrator
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
        s, target, w = fit_inputs(self, X, y, sample_weight)
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
