"""Temperature scaling (Guo et al. 2017): one parameter on a network's logits.

The multiclass calibrator deep-learning users reach for first. Unlike the
one-score calibrators it reads all ``K`` score columns at once (a *joint*
calibrator, ``multiclass=True`` in ``bernonnx._registry``) and returns ``K``
probabilities; with one column it is binary and reads the log-odds of
``classes_[1]``. Its ONNX converter (``converters/temperature.py``) emits the
formula ``predict_proba`` evaluates (see the Notes).
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from scipy.sparse import issparse
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._core.transforms import clipped_log_odds
from ._validation import (
    Interval,
    StrOptions,
    _finite_or_raise,
    _fit_context,
    check_scores,
    check_weights,
)

__all__ = ["TemperatureCalibrator"]

#: Largest |inverse temperature * logit| the fit lets grow: beyond it softmax
#: is a hard argmax in float64 and separable scores would push it to infinity.
_MAX_MARGIN = 1e6


def _logits(est, arr: np.ndarray) -> np.ndarray:
    """The float64 logits the temperature divides: (n, K), or (n,) log-odds."""
    z = arr.astype(np.float64)
    if est.input == "proba":
        lo, hi = float(z.min(initial=0.0)), float(z.max(initial=0.0))
        if lo < 0.0 or hi > 1.0:
            raise ValueError(
                f"input='proba' takes probabilities in [0, 1]; got scores in [{lo:.6g}, "
                f"{hi:.6g}]. Pass input='logits' for logits or log-probabilities"
            )
        if z.shape[1] == 1:
            return clipped_log_odds(z[:, 0], est.eps)
        return np.log(np.clip(z, est.eps, 1.0))
    return z[:, 0] if z.shape[1] == 1 else z


def _softmax_mean(beta: float, z: np.ndarray) -> np.ndarray:
    """The mean of each row's logits under ``softmax(beta * z)``."""
    return np.sum(softmax(beta * z, axis=1) * z, axis=1)


def _fit_inverse_temperature(z: np.ndarray, target: np.ndarray, w: np.ndarray) -> float:
    """``beta >= 0`` minimising the weighted log loss of ``softmax(beta * z)``.

    The loss is convex in ``beta`` (its second derivative is the weighted
    variance of the logits under the softmax), so its minimiser is the root of
    the derivative ``sum_i w_i (E_p[z_i] - z_{i, y_i})``: bracketed, solved by
    Brent's method to float64 precision.
    """
    zy = z[np.arange(z.shape[0]), target]

    def slope(beta: float) -> float:
        return float(w @ (_softmax_mean(beta, z) - zy))

    if not slope(0.0) < 0.0:
        # the scores do not rank the true class above the average: no positive
        # inverse temperature lowers the loss below the uniform prediction
        return 0.0
    spread = float(np.max(np.abs(z - z.mean(axis=1, keepdims=True))))
    cap = _MAX_MARGIN / spread
    hi = 1.0 / spread
    while slope(hi) < 0.0:
        if hi >= cap:
            warnings.warn(
                "the scores separate the classes: the temperature tends to 0; "
                f"stopped at inverse temperature {cap:.6g} (|margin| {_MAX_MARGIN:g})",
                ConvergenceWarning,
                stacklevel=3,
            )
            return cap
        hi = min(2.0 * hi, cap)
    return float(brentq(slope, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))


def check_class_scores(estimator, X, y, sample_weight):
    """``fit``'s checks of (n, K) class scores, one column per sorted label (one column
    allowed for two classes): sets ``estimator.classes_``; returns the scores, each
    row's class index and the weights. Shared by the temperature calibrators."""
    arr, y = check_scores(estimator, X, reset=True, y=y)
    check_classification_targets(y)
    estimator.classes_, target = np.unique(y, return_inverse=True)
    n_classes = estimator.classes_.shape[0]
    name = type(estimator).__name__
    if arr.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 samples, got n_samples = {arr.shape[0]}")
    if n_classes < 2:
        raise ValueError(
            f"y contains a single class ({estimator.classes_[0]!r}); {name} needs at least "
            "two classes"
        )
    w = check_weights(sample_weight, arr)
    _finite_or_raise(arr, "scores")
    if arr.shape[1] != n_classes and not (n_classes == 2 and arr.shape[1] == 1):
        expected = f"{n_classes} columns" + (" or 1 column" if n_classes == 2 else "")
        raise ValueError(
            f"scores must have one column per class of y ({expected}); got shape "
            f"{arr.shape} for {n_classes} classes"
        )
    return arr, target, w


def check_predict_scores(estimator, X) -> np.ndarray:
    """``predict_proba``'s checks of the class scores, as ``fit`` took them: fitted, the
    fitted number of columns (1-D binary log-odds as one column), finite. Shared by the
    temperature calibrators."""
    check_is_fitted(estimator)
    if not (hasattr(X, "iloc") or issparse(X)):
        X = np.asarray(X)
    if getattr(X, "ndim", 2) == 1 and estimator.n_features_in_ == 1:
        # 1-D binary log-odds, as in fit; other 1-D input is refused by validate_data
        X = X.to_frame() if hasattr(X, "to_frame") else X.reshape(-1, 1)
    arr = validate_data(
        estimator, X, reset=False, dtype=[np.float64, np.float32], ensure_all_finite=False
    )
    _finite_or_raise(arr, "scores")
    return arr


class TemperatureCalibrator(ClassifierMixin, BaseEstimator):
    r"""Temperature scaling: ``softmax(z / T)`` with one fitted temperature ``T``.

    Parameters
    ----------
    input : {"logits", "proba"}, default="logits"
        What the score columns are. ``"logits"``: logits or log-probabilities
        (the same thing to a softmax: they differ by a per-row constant), or,
        with one column, the log-odds of ``classes_[1]``. ``"proba"``:
        probabilities in ``[0, 1]``, whose logarithms (clipped at ``eps``) are
        scaled; with one column, the probability of ``classes_[1]`` (its clipped
        log-odds are scaled).
    eps : float, default=1e-15
        Clip of ``input="proba"``, in ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    inverse_temperature_ : float
        ``beta = 1 / T >= 0``, the factor the logits are multiplied by. 0 when
        the scores do not rank the true class above the others on average.
    temperature_ : float
        ``T = 1 / beta`` (``inf`` when ``beta = 0``).
    n_features_in_ : int
        The number of score columns: ``n_classes``, or 1 for binary log-odds.

    Notes
    -----
    With ``z`` the logits (``log(max(p, eps))`` for ``input="proba"``, or
    ``log(c) - log1p(-c)``, ``c = clip(p, eps, 1 - eps)``, for one column),
    ``predict_proba`` evaluates in float64 what the ONNX converter emits::

        one column:   p = 1 / (1 + exp(-beta * z));  predict_proba = [1 - p, p]
        K columns:    predict_proba = softmax(beta * z)  (row max subtracted)

    The fit minimises the weighted log loss

    .. math::

        L(\beta) = \sum_i w_i \Big(\log \sum_k e^{\beta z_{ik}} - \beta z_{i y_i}\Big),
        \qquad \beta \ge 0,

    convex in ``beta`` (``L''`` is the weighted variance of ``z_i`` under the
    softmax): the root of ``L'`` is found by Brent's method to float64 precision.
    One column stands for the logits ``[0, z]``. On separable scores ``L``
    decreases for ever; ``beta`` then stops where the largest margin reaches
    1e6 (a ``ConvergenceWarning``).

    References
    ----------
    Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural
    Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(2000, 3)))
    >>> cal = TemperatureCalibrator().fit(logits, y)
    >>> round(cal.temperature_, 2)
    3.13
    >>> cal.predict_proba(logits[:1]).round(3)
    array([[0.   , 0.002, 0.998]])
    """

    _parameter_constraints: dict = {
        "input": [StrOptions({"logits", "proba"})],
        "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    }

    def __init__(self, input="logits", eps=1e-15):
        self.input = input
        self.eps = eps

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the temperature on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes), or (n_samples,) or
            (n_samples, 1) for two classes
            Logits, log-probabilities or (``input="proba"``) probabilities;
            columns in the order of the sorted labels.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : TemperatureCalibrator
        """
        arr, target, w = check_class_scores(self, X, y, sample_weight)
        keep = w > 0
        z = _logits(self, arr[keep])
        if z.ndim == 1:
            z = np.column_stack([np.zeros_like(z), z])
        beta = _fit_inverse_temperature(z, target[keep], w[keep])
        self.inverse_temperature_ = beta
        self.temperature_ = float(np.inf) if beta == 0.0 else 1.0 / beta
        return self

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, n_classes)``; see Notes."""
        arr = check_predict_scores(self, X)
        z = _logits(self, arr)
        beta = self.inverse_temperature_
        if z.ndim == 1:
            p = expit(beta * z)
            proba = np.stack([1.0 - p, p], axis=1)
        else:
            proba = softmax(beta * z, axis=1)
        return proba.astype(arr.dtype, copy=False)

    def predict(self, X):
        """Class with the highest calibrated probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
