"""Temperature, vector and matrix scaling (Guo et al. 2017), and their structured forms.

Multiclass calibrators of a model's logits: ``softmax`` of an affine map of them, from
one parameter (temperature) through one factor and bias per class (vector scaling) to a
full matrix (matrix scaling); the structured forms (Berta et al. 2026: SVS, SMS) run
temperature scaling first and keep the map near the identity with a ridge penalty.
Unlike the one-score calibrators they read all ``K`` score columns at once (*joint*
calibrators, ``multiclass=True`` in ``bernonnx._registry``) and return ``K``
probabilities; with one column they are binary and read the log-odds of
``classes_[1]``. Their ONNX converter (``converters/temperature.py``) emits the
formula ``predict_proba`` evaluates (see each class's Notes); the fit of the affine maps
is ``_core/affine_softmax.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from bernonnx._core.affine_softmax import Penalty, fit_affine_softmax
from bernonnx._core.scale import rescaled, unit_exponent
from bernonnx._validation import Interval, StrOptions, _fit_context

from ._class_scores import check_predict_scores, class_logits, logits, weighted_rows

__all__ = [
    "MatrixScalingCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
]

#: Largest |inverse temperature * logit| the fit lets grow: beyond it softmax
#: is a hard argmax in float64 and separable scores would push it to infinity.
_MAX_MARGIN = 1e6
#: Half-width (a factor) of the bracket a guess of the inverse temperature opens.
_NEAR = 1.03


def _fit_inverse_temperature(
    z: np.ndarray, target: np.ndarray, w: np.ndarray, guess: float | None = None
) -> float:
    """``beta >= 0`` minimising the weighted log loss of ``softmax(beta * z)``.

    The loss is convex in ``beta`` (its second derivative is the weighted
    variance of the logits under the softmax), so its minimiser is the root of
    the derivative ``sum_i w_i (E_p[z_i] - z_{i, y_i})``: bracketed, solved by
    Brent's method to float64 precision. A ``guess`` (the fit of nearby data)
    brackets it within 3% when it can (the same root, fewer passes).

    Logits spread beyond ``2**500`` or below ``2**-500``, and weights summing
    beyond either, are first multiplied by a power of two (exact: the same
    root, ``beta`` then scaled back); a ``ValueError`` naming the scores when
    ``beta`` itself is beyond the float64 range (logits spread below about
    1e-308 that still rank the classes).
    """
    spread = float(np.max(np.abs(z - z.mean(axis=1, keepdims=True))))
    e_z = unit_exponent(spread)
    e_w = unit_exponent(float(np.sum(w)))
    if e_z == 0 and e_w == 0:
        return _solve_inverse_temperature(z, target, w, guess, spread)
    zs = rescaled(z, e_z)
    raw_spread, spread = spread, float(np.max(np.abs(zs - zs.mean(axis=1, keepdims=True))))
    if guess is not None:
        guess = float(rescaled(np.float64(guess), -e_z))
    beta = _solve_inverse_temperature(zs, target, rescaled(w, e_w), guess, spread)
    beta = float(rescaled(np.float64(beta), e_z))
    if not np.isfinite(beta):
        raise ValueError(
            f"scores: the logits spread over {raw_spread:.3g} only, and the inverse "
            "temperature that fits them is beyond the float64 range; multiply the scores "
            "by a large constant (a temperature does not change the ranking)"
        )
    return beta


def _solve_inverse_temperature(
    z: np.ndarray, target: np.ndarray, w: np.ndarray, guess: float | None, spread: float
) -> float:
    """:func:`_fit_inverse_temperature` on logits and weights in range."""
    # the slope is w @ (E_p[z] - z_y) with p = softmax(beta z); a softmax does not move
    # when a row's logits move together, so it reads the logits less each row's top,
    # once (e^(beta (z - top)) <= 1, the top's 1: no overflow, a total >= 1): five
    # passes over (n, K) per evaluation, not a softmax's eight and its arrays (a 20-class
    # default fit evaluates it about 70 times)
    shifted = z - z.max(axis=1, keepdims=True)
    shifted_y = shifted[np.arange(z.shape[0]), target]
    work = np.empty_like(shifted)
    # the values at the bracket's ends, which brentq evaluates again first
    known: dict[float, float] = {}

    def slope(beta: float) -> float:
        value = known.get(beta)
        if value is None:
            np.multiply(shifted, beta, out=work)
            np.exp(work, out=work)
            total = work.sum(axis=1)
            mean = np.einsum("ij,ij->i", work, shifted)
            mean /= total
            mean -= shifted_y
            value = known[beta] = float(w @ mean)
        return value

    if guess is not None and 0.0 < guess * _NEAR * spread < _MAX_MARGIN:
        # the slope increases: a sign change inside the bracket is the root
        lo, hi = guess / _NEAR, guess * _NEAR
        if slope(lo) < 0.0 <= slope(hi):
            return float(brentq(slope, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps))
    if not slope(0.0) < 0.0:
        # the scores do not rank the true class above the average: no positive
        # inverse temperature lowers the loss below the uniform prediction
        return 0.0
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
        rows = weighted_rows(self, X, y, sample_weight)
        beta = _fit_inverse_temperature(rows.z, rows.target, rows.w)
        self.inverse_temperature_ = beta
        self.temperature_ = float(np.inf) if beta == 0.0 else 1.0 / beta
        return self

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, n_classes)``; see Notes."""
        arr = check_predict_scores(self, X)
        z = logits(self, arr)
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


def log_proba(z: np.ndarray) -> np.ndarray:
    """``z - logsumexp(z)`` by row, as ``max + log(sum(exp(z - max)))`` (the graph's ops):
    the log-probabilities of the logits, which vector and matrix scaling read."""
    top = z.max(axis=1, keepdims=True)
    return z - (top + np.log(np.sum(np.exp(z - top), axis=1, keepdims=True)))


def mixed_log_proba(z: np.ndarray, beta: float, mix: float) -> np.ndarray:
    """``log((1 - mix) * softmax(beta * z) + mix / K)``: temperature scaling, then a
    mixture with the uniform distribution that bounds every log-probability below."""
    return np.log((1.0 - mix) * softmax(beta * z, axis=1) + mix / z.shape[1])


class _AffineScaling(ClassifierMixin, BaseEstimator):
    """``softmax`` of an affine map of the logits: what the four scalings share."""

    #: W is a (K, K) matrix (else a vector, one factor per class)
    _matrix = False
    #: temperature scaling and a uniform mixture first, then a ridge penalty (SVS, SMS)
    _structured = False

    _parameter_constraints: dict = {
        "input": [StrOptions({"logits", "log_odds", "proba"})],
        "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    }

    def _penalty(self, k: int) -> Penalty:
        return Penalty()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the map on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes), or (n_samples,) or
            (n_samples, 1) for two classes
            Scores as ``input`` says; columns in the order of the sorted labels.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            A weight counts as that many repeated rows (the penalty and the
            mixture read the total weight as the number of rows).

        Returns
        -------
        self
        """
        z, target, w, *_ = weighted_rows(self, X, y, sample_weight)
        penalty = self._penalty(z.shape[1])
        if self._structured:
            beta = _fit_inverse_temperature(z, target, w)
            if beta == 0.0:
                # temperature scaling at 0 maps every row to the uniform distribution:
                # no map of it could tell the rows apart, and the fit would be the
                # class prior whatever the scores. Fit Berta et al.'s joint form on
                # the scores themselves instead, the scale of W unpenalised
                beta, penalty = 1.0, replace(penalty, free_scale=True)
            self.inverse_temperature_ = beta
            self.mixture_ = 1.0 / (float(w.sum()) + 1.0)
            z = mixed_log_proba(z, self.inverse_temperature_, self.mixture_)
        else:
            z = log_proba(z)
        self.coef_, self.intercept_ = fit_affine_softmax(
            z, target, w, matrix=self._matrix, penalty=penalty
        )
        return self

    def calibrated_logits(self, arr: np.ndarray) -> np.ndarray:
        """The calibrated logits ``a`` (n, K) of checked scores, whose softmax is
        ``predict_proba``."""
        t = class_logits(self, arr)
        if self._structured:
            t = mixed_log_proba(t, self.inverse_temperature_, self.mixture_)
        else:
            t = log_proba(t)
        scaled = t @ self.coef_.T if self._matrix else t * self.coef_
        return scaled + self.intercept_

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, n_classes)``, in the dtype of
        ``X``; see the Notes."""
        arr = check_predict_scores(self, X)
        return softmax(self.calibrated_logits(arr), axis=1).astype(arr.dtype, copy=False)

    def predict(self, X):
        """Class with the highest calibrated probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class VectorScalingCalibrator(_AffineScaling):
    r"""Vector scaling: ``softmax(v * z + b)``, one factor and one bias per class.

    Parameters
    ----------
    input : {"logits", "log_odds", "proba"}, default="logits"
        What the ``K`` score columns are. ``"logits"``: logits or log-probabilities
        (``decision_function`` of a multinomial model). ``"log_odds"``: each class's
        log-odds against the rest (``CalibratedClassifier(log_odds=True)``).
        ``"proba"``: probabilities (``predict_proba``), whose logarithms, floored at
        ``log(eps)``, are the logits. One column (two classes): the log-odds of
        ``classes_[1]`` (clipped log-odds for ``"proba"``), read as the logits
        ``[0, s]``.
    eps : float, default=1e-15
        Floor of the probabilities of ``input="proba"`` and ``"log_odds"``, in
        ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes,)
        ``v``, the per-class factors of the logits.
    intercept_ : ndarray of shape (n_classes,)
        ``b``.
    n_features_in_ : int

    Notes
    -----
    With ``z`` the (n, K) logits of the scores (see ``input``), ``predict_proba``
    evaluates in float64 what the ONNX converter emits::

        t = z - (m + log(sum_k exp(z_k - m))),  m = max_k z_k    (log-probabilities)
        a = t * v + b;   p = softmax(a)   (row max subtracted)

    The map reads log-probabilities, as probmetrics does (``log`` of
    ``predict_proba``): unlike temperature scaling, vector scaling is not invariant to
    adding a constant to a row of logits, so logits and log-probabilities of the same
    model give the same fit only this way.

    The fit is maximum likelihood, unpenalised, as Guo et al. define it (and
    probmetrics' ``VectorScalingCalibrator``): the weighted log loss
    :math:`\sum_i w_i (\log \sum_k e^{a_{ik}} - a_{i y_i})`, convex in ``(v, b)``,
    minimised by a trust-region Newton method from ``v = 1, b = 0`` to a relative
    gradient of 1e-8. ``b`` is defined up to a constant (the probabilities are
    not). On separable logits the likelihood has no maximum and the fit stops
    at a small gradient; :class:`StructuredVectorScalingCalibrator` is the
    regularised form.

    References
    ----------
    Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural Networks",
    ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import VectorScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(2000, 3)))
    >>> cal = VectorScalingCalibrator().fit(logits, y)
    >>> cal.coef_.round(2)
    array([0.32, 0.33, 0.31])
    >>> cal.predict_proba(logits[:1]).round(3)
    array([[0.   , 0.002, 0.998]])
    """

    def __init__(self, input="logits", eps=1e-15):
        self.input = input
        self.eps = eps


class MatrixScalingCalibrator(_AffineScaling):
    r"""Matrix scaling: ``softmax(W z + b)``, a full ``K x K`` matrix and a bias.

    Parameters
    ----------
    input : {"logits", "log_odds", "proba"}, default="logits"
        What the ``K`` score columns are; see :class:`VectorScalingCalibrator`.
    eps : float, default=1e-15
        Floor of the probabilities of ``input="proba"`` and ``"log_odds"``, in
        ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_classes)
        ``W``: row ``j`` gives class ``j``'s new logit from all the old ones.
    intercept_ : ndarray of shape (n_classes,)
        ``b``.
    n_features_in_ : int

    Notes
    -----
    With ``z`` the (n, K) logits of the scores (see ``input``), ``predict_proba``
    evaluates in float64 what the ONNX converter emits::

        t = z - (m + log(sum_k exp(z_k - m))),  m = max_k z_k    (log-probabilities)
        a = t @ W.T + b;   p = softmax(a)   (row max subtracted)

    The map reads log-probabilities, as probmetrics does (see
    :class:`VectorScalingCalibrator`).

    The fit is maximum likelihood, unpenalised, as Guo et al. define it (and
    probmetrics' ``MatrixScalingCalibrator``): the weighted log loss, convex in
    ``(W, b)``, minimised by a trust-region Newton method (exact steps, or
    conjugate-gradient steps on Hessian-vector products when the ``K (K + 1)``-square
    Hessian would cost too much) from ``W = I, b = 0`` to a relative gradient of 1e-8.
    ``[W, b]`` is defined up to a vector added to every row (the probabilities are
    not). ``K (K + 1)`` parameters overfit small calibration sets, and on separable
    logits the likelihood has no maximum;
    :class:`StructuredMatrixScalingCalibrator` is the regularised form.

    References
    ----------
    Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural Networks",
    ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import MatrixScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(2000, 3)))
    >>> cal = MatrixScalingCalibrator().fit(logits, y)
    >>> cal.coef_.shape, cal.predict_proba(logits[:1]).round(3)
    ((3, 3), array([[0.   , 0.001, 0.998]]))
    """

    _matrix = True

    def __init__(self, input="logits", eps=1e-15):
        self.input = input
        self.eps = eps


class StructuredVectorScalingCalibrator(_AffineScaling):
    r"""Structured vector scaling (SVS): temperature, then regularised vector scaling.

    Parameters
    ----------
    input : {"logits", "log_odds", "proba"}, default="logits"
        What the ``K`` score columns are; see :class:`VectorScalingCalibrator`.
    eps : float, default=1e-15
        Floor of the probabilities of ``input="proba"`` and ``"log_odds"``, in
        ``[1e-15, 0.5)``.
    lambda_intercept : float, default=1.0
        Ridge strength on ``b``, times ``K`` (probmetrics' ``lambda_intercept``).
    lambda_diagonal : float, default=1.0
        Ridge strength on ``v - 1``, times ``K`` (probmetrics' ``lambda_diagonal``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    inverse_temperature_ : float
        ``beta`` of the temperature scaling run first; 1 where that fit is 0 (see
        the Notes).
    mixture_ : float
        ``c = 1 / (n + 1)``, the weight of the uniform distribution mixed in.
    coef_ : ndarray of shape (n_classes,)
        ``v``.
    intercept_ : ndarray of shape (n_classes,)
        ``b``.
    n_features_in_ : int

    Notes
    -----
    With ``z`` the (n, K) logits of the scores (see ``input``), ``beta`` the fitted
    inverse temperature and ``c`` the mixture weight, ``predict_proba`` evaluates in
    float64 what the ONNX converter emits::

        t = log((1 - c) * softmax(beta * z) + c / K)
        a = t * v + b;   p = softmax(a)   (row max subtracted)

    As Berta et al. and their probmetrics 1.3.0 fit it: temperature scaling first
    (:class:`TemperatureCalibrator`'s exact fit, unpenalised), its probabilities mixed
    with the uniform distribution at weight ``c = 1 / (n + 1)`` (so ``t >= log(c /
    K)``), then vector scaling from the identity with a ridge penalty on its departure
    from it. With ``n = sum_i w_i`` the objective is probmetrics' (``rho = tau = 1``,
    strengths ``lambda K / n`` on the mean loss) multiplied by ``n``:

    .. math::

        \sum_i w_i \Big(\log \sum_k e^{a_{ik}} - a_{i y_i}\Big)
        + K \lambda_b \lVert b \rVert^2 + K \lambda_d \lVert v - 1 \rVert^2,

    strictly convex, minimised by a trust-region Newton method to a relative gradient
    of 1e-8, where probmetrics' BFGS stops at a mean-loss gradient of 1e-5: the same
    optimum, to more digits.

    Where temperature scaling's fit is 0 (the scores rank the true class below
    their average: a model biased against its common classes), its probabilities
    are uniform on every row, and any map of them predicts the class prior whatever
    the scores. The fit is then Berta et al.'s joint form, ``v = a + u`` with the
    scale ``a`` unpenalised, on the scores themselves: ``beta = 1`` and the ridge
    on ``v``'s departure from its mean, ``K lambda_d |v - mean(v)|^2`` (the formula
    above is unchanged). probmetrics 1.3.0's bisection of the temperature
    stops at ``exp(-16)`` there and gives the prior to 3e-7.

    References
    ----------
    Berta, Holzmüller, Jordan and Bach, "Structured Matrix Scaling for Multi-Class
    Calibration", AISTATS 2026 (arXiv:2511.03685).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import StructuredVectorScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(2000, 3)))
    >>> cal = StructuredVectorScalingCalibrator().fit(logits, y)
    >>> round(cal.inverse_temperature_, 3), cal.coef_.round(3)
    (0.319, array([1.02 , 1.006, 0.983]))
    """

    _structured = True
    _parameter_constraints: dict = {
        **_AffineScaling._parameter_constraints,
        "lambda_intercept": [Interval(Real, 0, None, closed="left")],
        "lambda_diagonal": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, input="logits", eps=1e-15, lambda_intercept=1.0, lambda_diagonal=1.0):
        self.input = input
        self.eps = eps
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal

    def _penalty(self, k: int) -> Penalty:
        return Penalty(k * self.lambda_intercept, k * self.lambda_diagonal)


class StructuredMatrixScalingCalibrator(_AffineScaling):
    r"""Structured matrix scaling (SMS): temperature, then regularised matrix scaling.

    The multiclass calibrator that leads the CalArena benchmark (Berta et al.):
    matrix scaling's ``K (K + 1)`` parameters, kept near the identity by a ridge
    penalty that is stronger on the ``K (K - 1)`` off-diagonal terms.

    Parameters
    ----------
    input : {"logits", "log_odds", "proba"}, default="logits"
        What the ``K`` score columns are; see :class:`VectorScalingCalibrator`.
    eps : float, default=1e-15
        Floor of the probabilities of ``input="proba"`` and ``"log_odds"``, in
        ``[1e-15, 0.5)``.
    lambda_intercept : float, default=1.0
        Ridge strength on ``b``, times ``K`` (probmetrics' ``lambda_intercept``).
    lambda_diagonal : float, default=1.0
        Ridge strength on the diagonal of ``W - I``, times ``K``.
    lambda_off_diagonal : float, default=1.0
        Ridge strength on the off-diagonal terms of ``W``, times ``K (K - 1)``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    inverse_temperature_ : float
        ``beta`` of the temperature scaling run first; 1 where that fit is 0 (see
        the Notes).
    mixture_ : float
        ``c = 1 / (n + 1)``, the weight of the uniform distribution mixed in.
    coef_ : ndarray of shape (n_classes, n_classes)
        ``W``.
    intercept_ : ndarray of shape (n_classes,)
        ``b``.
    n_features_in_ : int

    Notes
    -----
    With ``z`` the (n, K) logits of the scores (see ``input``), ``beta`` the fitted
    inverse temperature and ``c`` the mixture weight, ``predict_proba`` evaluates in
    float64 what the ONNX converter emits::

        t = log((1 - c) * softmax(beta * z) + c / K)
        a = t @ W.T + b;   p = softmax(a)   (row max subtracted)

    As Berta et al. and their probmetrics 1.3.0 fit it: temperature scaling first,
    the uniform mixture at ``c = 1 / (n + 1)``, then matrix scaling from the identity
    with a ridge penalty on ``W - I`` and ``b`` (see
    :class:`StructuredVectorScalingCalibrator`). With ``n = sum_i w_i`` the objective
    is probmetrics' (``rho = tau = 1``) multiplied by ``n``:

    .. math::

        \sum_i w_i \Big(\log \sum_k e^{a_{ik}} - a_{i y_i}\Big)
        + K \lambda_b \lVert b \rVert^2
        + K \lambda_d \lVert \mathrm{diag}(W - I) \rVert^2
        + K (K - 1) \lambda_o \lVert \mathrm{offdiag}(W) \rVert^2,

    strictly convex, minimised by Newton's method to a relative gradient of 1e-8:
    exact trust-region steps with few parameters, else steps by conjugate gradients
    on Hessian-vector products, preconditioned by the Hessian's per-class blocks
    (trust-region ones in the joint form below).

    Where temperature scaling's fit is 0 (the scores rank the true class below
    their average: a model biased against its common classes), its probabilities
    are uniform on every row, and any map of them predicts the class prior whatever
    the scores. The fit is then Berta et al.'s joint form,
    ``W = a I + diag(u) + offdiag(M)`` with the scale ``a`` unpenalised, on the
    scores themselves: ``beta = 1`` and the diagonal's ridge on its departure from
    its mean, ``K lambda_d |u - mean(u)|^2`` (the formula above is unchanged).
    probmetrics 1.3.0's bisection of the temperature stops at ``exp(-16)`` there
    and gives the prior to 3e-7.

    References
    ----------
    Berta, Holzmüller, Jordan and Bach, "Structured Matrix Scaling for Multi-Class
    Calibration", AISTATS 2026 (arXiv:2511.03685).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import StructuredMatrixScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(2000, 3)))
    >>> cal = StructuredMatrixScalingCalibrator().fit(logits, y)
    >>> cal.coef_.round(2)
    array([[ 1.  , -0.05,  0.01],
           [ 0.03,  1.02, -0.  ],
           [-0.03,  0.04,  0.99]])
    """

    _matrix = True
    _structured = True
    _parameter_constraints: dict = {
        **StructuredVectorScalingCalibrator._parameter_constraints,
        "lambda_off_diagonal": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        input="logits",
        eps=1e-15,
        lambda_intercept=1.0,
        lambda_diagonal=1.0,
        lambda_off_diagonal=1.0,
    ):
        self.input = input
        self.eps = eps
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal
        self.lambda_off_diagonal = lambda_off_diagonal

    def _penalty(self, k: int) -> Penalty:
        return Penalty(
            k * self.lambda_intercept,
            k * self.lambda_diagonal,
            k * (k - 1) * self.lambda_off_diagonal,
        )
