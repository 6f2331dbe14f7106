"""Coordinate-wise monotone tensor-product Bernstein calibrator.

Calibrates the scores of ``M`` classifiers jointly: each score column is
mapped to ``[0, 1]`` by a 1-D transform, then a tensor-product Bernstein
polynomial with coefficients non-decreasing along every axis (Wang & Liu,
Theorem 1) gives the probability.

The tensor math is in :mod:`bernonnx._core.tensor`, the lattice QP in
:mod:`bernonnx._core.qp` and the fit (shared with the 1-D calibrator) in
:mod:`bernonnx._core.newton`.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from bernonnx._base import (
    AUTO_DEGREES,
    MAX_DEGREE,
    PARAMETER_CONSTRAINTS,
    TRANSFORM_KEYS,
    PositiveProbaMixin,
    forget_optional_attributes,
    record_degree_search,
)
from bernonnx._core.degree import fit_degree
from bernonnx._core.newton import TENSOR, box, constant_level, predict, single_blas_thread
from bernonnx._core.points import Points
from bernonnx._core.qp import Lattice
from bernonnx._core.transforms import (
    apply_transform,
    fit_transform_params,
    rescale,
    score_exponent,
)
from bernonnx._validation import _finite_or_raise, _fit_context, labelled_rows

__all__ = ["MultivariateBernsteinCalibrator"]

#: Most coefficients ``prod_m (K_m + 1)`` accepted. The QP is dense in them:
#: Clarabel's factorisation grows as their cube (about 0.5 s per solve at 729).
MAX_COEF = 2048
#: ``degree="auto"`` for ``M >= 2`` tries these equal degrees on every axis,
#: keeping those with ``(k + 1)^M <= _AUTO_COEF`` coefficients: up to 15 for
#: M=2, 5 for M=3, 3 for M=4, 2 for M=5, 1 for M=6..8 (M=1 uses
#: BernsteinCalibrator's grid). 256 coefficients keep a Clarabel solve near
#: 0.1 s, so the 5-fold search of the log loss stays within seconds.
_AUTO_DEGREES_MULTI = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15)
_AUTO_COEF = 256


def _auto_degrees(m_axes: int) -> list[int]:
    if m_axes == 1:
        return list(AUTO_DEGREES)
    fits = [k for k in _AUTO_DEGREES_MULTI if (k + 1) ** m_axes <= _AUTO_COEF]
    return fits or [1]


class MultivariateBernsteinCalibrator(PositiveProbaMixin, ClassifierMixin, BaseEstimator):
    r"""Coordinate-wise monotone Bernstein calibrator of several classifiers' scores.

    Fits ``p(s) = P(y = 1 | scores = s)`` for a score matrix ``s`` of shape
    ``(n, M)`` (one column per classifier, higher meaning more positive) as a
    tensor-product Bernstein polynomial whose coefficients are non-decreasing
    along every axis (Wang & Liu, Theorem 1): the calibrated probability is
    then strictly increasing in every score over the whole domain, not only at
    the training points. With ``M = 1`` it is :class:`BernsteinCalibrator`.

    Parameters
    ----------
    degree : int, "auto" or sequence of int, default="auto"
        Degrees ``(K_1, ..., K_M)``: one int for every column, or one per
        column, each from 1 to 100, with at most 2048 coefficients
        ``prod_m (K_m + 1)``. ``"auto"`` tries equal degrees on every axis,
        ``(1, 2, 3, 4, 5, 6, 8, 10, 12, 15)`` for M=2, ``1..5`` for M=3,
        ``1..3`` for M=4, ``1..2`` for M=5 and 1 for M=6..8 (at most 256
        coefficients; BernsteinCalibrator's grid for M=1), and keeps the
        smallest within one standard error of the best ``n_folds``-fold
        cross-validated log loss.
    loss : {"squared", "log"}, default="squared"
        ``"squared"``: least squares with coefficients in ``[0, 1]`` (the
        paper's eq. 13). ``"log"``: logistic loss, coefficients in
        ``[-logit_bound, logit_bound]``, output through a sigmoid.
    score_transform : {"quantile", "logistic", "minmax"}, default="quantile"
        Map from each score column to ``[0, 1]``, fitted per column as in
        :class:`BernsteinCalibrator`. ``"quantile"`` is the paper's empirical
        CDF (piecewise linear through ``n_knots + 1`` weighted quantiles).
    n_knots : int, default=64
        Number of quantile intervals of ``score_transform="quantile"``.
    logit_bound : float, default=15.0
        Box on the log-odds coefficients of ``loss="log"``.
    n_folds : int, default=5
        Folds used to choose the degree when ``degree="auto"``.
    min_slope : float, default=1e-7
        Neighbouring coefficients along axis ``m`` must differ by at least
        ``min_slope * (U - L) / (M K_m)`` (``[L, U]`` the coefficient box),
        so that ``d eta / d u_m >= min_slope * (U - L) / M`` everywhere: the
        map is strictly increasing in every score by construction. The
        margins add up to ``min_slope * (U - L)`` along the diagonal, which
        moves the optimal loss by a relative amount of order ``min_slope``.
        0 gives the plain non-decreasing fit. With M=1 this is the 1-D
        calibrator's margin.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (K_1 + 1, ..., K_M + 1)
        Bernstein coefficients (float64), non-decreasing along every axis.
    degrees_ : tuple of int
        Degrees ``(K_1, ..., K_M)`` used.
    shift_, scale_ : ndarray of shape (M,)
        Per-column parameters of the ``"minmax"`` and ``"logistic"`` transforms.
    scale_below_ : ndarray of shape (M,)
        Per-column slope below ``shift_`` of the ``"logistic"`` transform.
    knots_, levels_ : list of M ndarrays
        Per-column parameters of the ``"quantile"`` transform (lengths may
        differ: tied quantiles are merged; a constant column has one knot).
    cv_degrees_ : ndarray of shape (n_candidates,)
        The common degree of each candidate (``degree="auto"`` only).
    cv_log_loss_ : ndarray of shape (n_candidates,)
        Their mean validation log loss (``degree="auto"`` only); all NaN when
        no fold has rows both in and out of it (no out-of-fold rows: three
        rows or fewer with the default folds, or constant scores), and the
        smallest candidate is then used.
    score_exponent_ : ndarray of int of shape (M,)
        Column ``m`` is multiplied by ``2^score_exponent_[m]`` before its
        transform; 0 unless its scores are extreme (see BernsteinCalibrator).
    n_features_in_ : int
        Number of score columns ``M``.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly this (the formula the
    ONNX converter emits), for a row ``s`` of shape ``(M,)``, ``K =
    degrees_``, ``c = coef_``::

        for m in 0..M-1, with t = s[m] * 2^score_exponent_[m], the transform
        of BernsteinCalibrator:
            u_m = clip((t - shift_[m]) * scale_[m], 0, 1)        # "minmax"
            z_m = scale_[m] * max(t - shift_[m], 0)
                  + scale_below_[m] * min(t - shift_[m], 0)
            u_m = 1 / (1 + exp(-z_m))                           # "logistic"
            u_m = interp(t, knots_[m], levels_[m])              # "quantile"
                  (0 when knots_[m] has a single entry)
            v_m = 1 / (1 + exp(z_m))  (logistic), else 1 - u_m
            b_m[k] = C(K_m, k) u_m^k v_m^(K_m - k),   k = 0..K_m
        c0  = c[0, ..., 0]
        eta = c0 + sum_{k_1..k_M} (c[k_1, ..., k_M] - c0) * prod_m b_m[k_m]
        p   = clip(eta, 0, 1)                  # loss="squared"
        p   = 1 / (1 + exp(-eta))              # loss="log"
        predict_proba = [1 - p, p]

    (``t - shift_[m]`` is clipped to ``[-1e300, 1e300]`` first, as in the 1-D
    transforms.) The fit solves, with weights ``w_i`` and ``B(u)`` the tensor
    basis vector,

    .. math::

        \min_c \sum_i w_i \ell(B(u_i)^T c, y_i) \quad \text{s.t.}\;
        c_{0 \dots 0} \ge L,\; c_{K_1 \dots K_M} \le U,\;
        c_{k + e_m} - c_k \ge \frac{\text{min\_slope}\,(U - L)}{M K_m}

    with squared loss and ``[L, U] = [0, 1]`` or logistic loss and ``[L, U] =
    [-15, 15]``. Monotone coefficients make ``eta`` coordinate-wise
    increasing (its partial derivative along ``u_m`` is ``K_m`` times a
    Bernstein polynomial in the coefficient differences), and the corner
    bounds then bound every coefficient. The data enter through the moments
    of the degree-``2K`` tensor basis, computed in one chunked pass, so the
    optimisation has ``prod_m (K_m + 1)`` unknowns whatever ``n``. The
    logistic fit runs projected Newton steps, each a lattice QP, on at most
    ``2^15`` binned points, then polishes with exact Newton passes over all
    rows. Constant columns are transformed to a constant and do not change
    predictions; if all columns are constant the calibrator predicts the
    weighted base rate.

    References
    ----------
    Y. Wang, X. Liu, "Multivariate Probability Calibration with Isotonic
    Bernstein Polynomials", IJCAI 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from bernonnx import MultivariateBernsteinCalibrator
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=(2000, 2))
    >>> y = rng.random(2000) < expit(2 * s[:, 0] + s[:, 1])
    >>> cal = MultivariateBernsteinCalibrator(degree=4).fit(s, y)
    >>> cal.coef_.shape
    (5, 5)
    >>> p = cal.predict_proba(np.array([[-1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))[:, 1]
    >>> bool(np.all(np.diff(p) > 0))
    True
    """

    _parameter_constraints: dict = {**PARAMETER_CONSTRAINTS}

    def __init__(
        self,
        degree="auto",
        *,
        loss="squared",
        score_transform="quantile",
        n_knots=64,
        logit_bound=15.0,
        n_folds=5,
        min_slope=1e-7,
    ):
        self.degree = degree
        self.loss = loss
        self.score_transform = score_transform
        self.n_knots = n_knots
        self.logit_bound = logit_bound
        self.n_folds = n_folds
        self.min_slope = min_slope

    def _candidate_degrees(self, m_axes: int) -> list[tuple[int, ...]]:
        if isinstance(self.degree, str):
            candidates = [(d,) * m_axes for d in _auto_degrees(m_axes)]
        elif isinstance(self.degree, Integral):
            candidates = [(int(self.degree),) * m_axes]
        else:
            degrees = np.asarray(self.degree, dtype=object).ravel()
            if degrees.shape[0] != m_axes or not all(
                isinstance(d, Integral)
                and not isinstance(d, bool | np.bool_)
                and 1 <= d
                and d <= MAX_DEGREE
                for d in degrees
            ):
                raise ValueError(
                    f"degree must be 'auto', an int or a sequence of {m_axes} ints (one per "
                    f"score column, not bools) in [1, {MAX_DEGREE}]; got {self.degree!r}"
                )
            candidates = [tuple(int(d) for d in degrees)]
        size = math.prod(d + 1 for d in candidates[0])
        if size > MAX_COEF:
            raise ValueError(
                f"degree {self.degree!r} on {m_axes} score columns gives {size} coefficients "
                f"prod(K_m + 1); at most {MAX_COEF} are supported: lower the degree"
            )
        return candidates

    def _validate_scores(self, X, y=None, reset=False):
        if reset and y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        kwargs = dict(reset=reset, dtype=[np.float64, np.float32], ensure_all_finite=False)
        if reset:
            return validate_data(self, X, y, **kwargs)
        arr = validate_data(self, X, **kwargs)
        _finite_or_raise(arr, "scores")
        return arr

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the calibration map on the score matrix ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_scores)
            Uncalibrated scores of ``M = n_scores`` classifiers, each
            increasing with the positive class.
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : MultivariateBernsteinCalibrator
        """
        arr, y = self._validate_scores(X, y, reset=True)
        if arr.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 samples, one of each class; got "
                f"n_samples={arr.shape[0]}"
            )
        target, w, keep = labelled_rows(self, arr, y, sample_weight)
        _finite_or_raise(arr, "scores")
        m_axes = arr.shape[1]
        candidates = self._candidate_degrees(m_axes)
        s, target, w = arr[keep].astype(np.float64), target[keep], w[keep]

        forget_optional_attributes(self)
        self.score_exponent_ = np.array([score_exponent(s[:, m]) for m in range(m_axes)])
        s = rescale(s, self.score_exponent_)
        params = [
            fit_transform_params(self.score_transform, s[:, m], w, self.n_knots)
            for m in range(m_axes)
        ]
        for key in TRANSFORM_KEYS:
            if key in params[0]:
                values = [p[key] for p in params]
                setattr(
                    self, key + "_", values if key in ("knots", "levels") else np.array(values)
                )
        u, v = self._transform(s)

        lo, hi = box(self.loss, float(self.logit_bound))
        if np.all(np.ptp(u, axis=0) == 0):
            # constant scores carry no ranking: predict the weighted base rate
            self.degrees_ = candidates[0]
            shape = tuple(d + 1 for d in self.degrees_)
            self.coef_ = np.full(
                shape, constant_level(self.loss, float(np.average(target, weights=w)), lo, hi)
            )
            if len(candidates) > 1:
                record_degree_search(self, [c[0] for c in candidates], None)
            return self

        lattices = [
            Lattice(tuple(d + 1 for d in c), lo, hi, float(self.min_slope)) for c in candidates
        ]
        # BLAS threads only add synchronisation to the moment products and the
        # small eigen-decompositions (as in BernsteinCalibrator): measured 1.0 s
        # vs 0.016 s for eigh at 256 coefficients with two threads on a busy
        # 2-core machine
        with single_blas_thread():
            index, self.coef_, fold_losses = fit_degree(
                TENSOR, Points(u, v, target, w), lattices, self.loss, self.n_folds
            )
        self.degrees_ = candidates[index]
        if len(candidates) > 1:
            record_degree_search(self, [c[0] for c in candidates], fold_losses)
        return self

    def _transform(self, s):
        params = {k: getattr(self, k + "_") for k in TRANSFORM_KEYS if hasattr(self, k + "_")}
        cols = [
            apply_transform(self.score_transform, s[:, m], {k: p[m] for k, p in params.items()})
            for m in range(s.shape[1])
        ]
        return np.stack([c[0] for c in cols], axis=1), np.stack([c[1] for c in cols], axis=1)

    def _positive_proba(self, X):
        check_is_fitted(self)
        s = self._validate_scores(X)
        u, v = self._transform(rescale(s, getattr(self, "score_exponent_", 0)))
        with single_blas_thread():
            p = predict(TENSOR, u, v, self.coef_, self.loss)
        return p.astype(s.dtype, copy=False)
