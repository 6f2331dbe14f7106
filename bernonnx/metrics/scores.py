"""Proper scores of the predictions: Brier score, log loss and their decompositions."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._validation import check_int

from ._inputs import _STRATEGIES, PosLabel, _check_choice, _check_inputs, _Checked
from ._recalibration import METHODS, fit_map
from .binned import _table


def _brier(c: _Checked) -> float:
    return float(np.sum(c.w * (c.y - c.p) ** 2) / c.w.sum())


def _log_loss(c: _Checked, eps: float | str) -> float:
    if isinstance(eps, str):
        if eps != "auto":
            raise ValueError(f"eps must be 'auto' or a float in [0, 0.5), got {eps!r}.")
        eps = float(np.finfo(c.prob_dtype).eps)
    elif not isinstance(eps, numbers.Real) or not 0 <= eps < 0.5:
        raise ValueError(f"eps must be 'auto' or a float in [0, 0.5), got {eps!r}.")
    # clip the probability of the observed class, as sklearn clips both columns of
    # [1 - p, p]; clipping p first would round 1 - p differently near 1
    q = np.clip(np.where(c.y == 1, c.p, 1.0 - c.p), eps, 1.0 - eps)
    # eps=0 asks for no clipping: a confident miss then costs inf, which is the answer
    with np.errstate(divide="ignore"):
        loss = -np.log(q)
    return float(np.sum(c.w * loss) / c.w.sum())


def brier_score(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> float:
    """Brier score: weighted mean squared difference between outcome and probability.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    score : float
        In ``[0, 1]``, lower is better.

    Notes
    -----
    ``BS = sum_i w_i (y_i - p_i)^2 / sum_i w_i`` with ``y_i`` in ``{0, 1}``; equal to
    :func:`sklearn.metrics.brier_score_loss` for binary targets.

    Examples
    --------
    >>> from bernonnx.metrics import brier_score
    >>> round(brier_score([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 4)
    0.0375
    """
    return _brier(_check_inputs(y_true, y_prob, sample_weight, pos_label))


def log_loss(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    eps: float | str = "auto",
) -> float:
    """Binary cross-entropy (natural log) of the predicted probabilities.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.
    eps : "auto" or float, default="auto"
        The probability of the observed class is clipped to ``[eps, 1 - eps]``. ``"auto"``
        takes the machine epsilon of ``y_prob``'s dtype (float64 for integer input), as
        :func:`sklearn.metrics.log_loss` does. ``0`` disables clipping, so a confident miss
        gives ``inf``.

    Returns
    -------
    loss : float
        Non-negative, lower is better.

    Notes
    -----
    With ``q_i = clip(p_i if y_i = 1 else 1 - p_i, eps, 1 - eps)``::

        LL = - sum_i w_i log(q_i) / sum_i w_i

    equal to ``sklearn.metrics.log_loss(y_true, np.c_[1 - p, p])``. The sum is taken in
    float64 even for float32 input, whose epsilon is still the one used for clipping.

    Examples
    --------
    >>> from bernonnx.metrics import log_loss
    >>> round(log_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.35]), 4)
    0.2162
    """
    return _log_loss(_check_inputs(y_true, y_prob, sample_weight, pos_label), eps)


def brier_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> dict[str, float]:
    """Murphy's decomposition of the binned Brier score.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    n_bins : int, default=10
        Number of bins, see :func:`reliability_table`.
    strategy : {"uniform", "quantile"}, default="uniform"
        Binning strategy, see :func:`reliability_table`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    decomposition : dict of float
        ``reliability`` (lower is better), ``resolution`` (higher is better),
        ``uncertainty`` (a property of the labels alone) and
        ``brier = reliability - resolution + uncertainty``.

    Notes
    -----
    With the reliability table's ``W_b``, ``pbar_b`` (``mean_predicted``), ``obar_b``
    (``fraction_positive``) and the weighted base rate ``obar = sum_i w_i y_i / W``::

        reliability = sum_b (W_b / W) (pbar_b - obar_b)^2
        resolution  = sum_b (W_b / W) (obar_b - obar)^2
        uncertainty = obar (1 - obar)

    Within a bin, ``mean((y - p)^2) = obar_b (1 - obar_b) + (pbar_b - obar_b)^2
    + var_b(p) - 2 cov_b(y, p)``, and the law of total variance gives
    ``sum_b (W_b / W) obar_b (1 - obar_b) = uncertainty - resolution``. So ``brier``
    equals :func:`brier_score` exactly when predictions are constant within each bin, and
    otherwise differs by ``sum_b (W_b / W) (var_b(p) - 2 cov_b(y, p))``, at most
    ``1 / (4 n_bins^2) + 1 / (2 n_bins)`` for uniform bins.

    References
    ----------
    A. H. Murphy (1973). A New Vector Partition of the Probability Score. Journal of Applied
    Meteorology 12(4), 595-600.

    Examples
    --------
    >>> from bernonnx.metrics import brier_decomposition
    >>> parts = brier_decomposition([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2)
    >>> {key: round(value, 4) for key, value in parts.items()}
    {'reliability': 0.0763, 'resolution': 0.0, 'uncertainty': 0.25, 'brier': 0.3263}
    """
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _decomposition(c, _table(c, n_bins, strategy))


def _decomposition(c: _Checked, table: dict[str, np.ndarray]) -> dict[str, float]:
    share = table["weight"] / table["weight"].sum()
    base_rate = np.sum(c.w * c.y) / c.w.sum()
    fraction = table["fraction_positive"]
    reliability = float(np.sum(share * (table["mean_predicted"] - fraction) ** 2))
    resolution = float(np.sum(share * (fraction - base_rate) ** 2))
    uncertainty = float(base_rate * (1.0 - base_rate))
    return {
        "reliability": reliability,
        "resolution": resolution,
        "uncertainty": uncertainty,
        "brier": reliability - resolution + uncertainty,
    }


def _decompose_log_loss(
    z: np.ndarray, target: np.ndarray, w: np.ndarray, loss: float, method: str
) -> dict:
    """Split ``loss`` (the log loss of the log-probabilities ``z``) by the map ``method``."""
    keep = w > 0
    refined, params = fit_map(method, z[keep], target[keep], w[keep])
    # the in-sample maps start from the predictions themselves, so the loss after them is
    # at most ``loss`` but for rounding; out of fold (monotone) it can be above ``loss``,
    # which means no recalibration helps: the calibration part is then 0
    calibration = max(loss - refined, 0.0)
    return {
        "log_loss": loss,
        "calibration": calibration,
        "refinement": loss - calibration,
        "method": method,
        **params,
    }


def log_loss_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    labels: ArrayLike | None = None,
    method: str = "monotone",
) -> dict:
    """Split the log loss into a calibration part and a refinement part.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, n_classes)
        Probabilities of the positive class, or with three classes or more the class
        probabilities (columns in the order of ``labels``).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; a weight ``k`` is the row repeated ``k`` times (exactly for
        ``"affine"`` and ``"temperature"``; ``"monotone"`` assigns folds by position, so
        repeated rows fall in other folds than one weighted row).
    pos_label : int, float, bool or str, default=None
        Binary only: the positive label, see :func:`reliability_table`.
    labels : array-like of shape (n_classes,), default=None
        Multiclass only: the label of each column (default: the sorted labels of
        ``y_true``).
    method : {"monotone", "affine", "temperature"}, default="monotone"
        The recalibration map whose gain is the calibration part:

        - ``"monotone"``: a flexible monotone map, scored out of fold (5 folds by
          position): :class:`bernonnx.BernsteinCalibrator` on the logit for two
          classes, :class:`bernonnx.TemperatureBernsteinCalibrator` otherwise. It sees
          miscalibration of any monotone shape, shifts included; out of fold it is not
          optimistic, so its calibration part leans low. Fits 5 calibrators (seconds
          on 100,000 rows).
        - ``"affine"``: ``softmax(beta log p + b)``, a scale and one bias per class,
          fitted on the rows it is scored on. Binary, Platt scaling on the logit; it
          sees an overconfident model (the scale) and a shifted one (the biases), not a
          curved one.
        - ``"temperature"``: ``softmax(beta log p)`` alone, as Berta et al. split it. It
          keeps ``p = 1/2`` in place, so a shifted base rate counts as refinement.

    Returns
    -------
    decomposition : dict
        ``log_loss`` (:func:`log_loss`, or :func:`multiclass_log_loss`),
        ``refinement`` (the log loss after the recalibration map), ``calibration`` (the
        rest, ``>= 0``: what the map removes), ``method`` (the map, as passed) and the
        map's parameters: ``temperature`` (the fitted ``T = 1 / beta``; ``inf`` when the
        predictions carry no information the map can use) for ``"affine"`` and
        ``"temperature"``, ``bias`` (the intercept for two classes, one per class after
        the first otherwise) for ``"affine"``, ``n_folds`` for ``"monotone"``.

    Notes
    -----
    With the log probabilities ``z_i`` (binary: ``(log(1 - p_i), log p_i)``, each
    clipped as :func:`log_loss` clips) and the recalibrated ``q_i = g(z_i)``::

        refinement  = - sum_i w_i log q_{i, y_i} / sum_i w_i
        calibration = max(log_loss - refinement, 0),  refinement = log_loss - calibration

    so ``calibration + refinement = log_loss`` exactly. The in-sample maps include the
    identity (``beta = 1``, ``b = 0``), hence ``calibration >= 0``; their optimism is of
    order ``(number of parameters) / n``. The loss is convex in ``(beta, b)``: the
    temperature is :class:`bernonnx.TemperatureCalibrator`'s fit (Brent's method on the
    derivative), the affine map Newton's method with a trust region.

    Why ``"monotone"`` by default: a model whose scores are right in order but whose
    probabilities are off (labels drawn with probability ``p^1.6``, ``p`` uniform on
    ``[0.01, 0.99]``, 20,000 rows) loses 0.0428 of log loss to the true probabilities;
    the temperature recovers 0.0007 of it, the affine map 0.0425 and the monotone map
    0.0427 (``tests/test_metrics_smooth.py`` checks at least 90% for the last two). On
    real held-out predictions the miscalibration is often curved rather than affine: a
    logistic regression on the credit-card default table (15,000 rows, ECE 0.053) has a
    calibration part of 0.0006 by the affine map and 0.018 by the monotone one
    (``benchmarks/metrics_study.md``).

    References
    ----------
    E. Berta, D. Holzmüller, M. I. Jordan, F. Bach (2025). Rethinking Early Stopping:
    Refine, Then Calibrate. arXiv:2501.19195.

    J. Platt (1999). Probabilistic outputs for support vector machines and comparisons to
    regularized likelihood methods. Advances in Large Margin Classifiers.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.metrics import log_loss_decomposition
    >>> rng = np.random.default_rng(0)
    >>> logit = rng.normal(size=10_000)
    >>> y = rng.uniform(size=10_000) < 1 / (1 + np.exp(-logit))
    >>> over = 1 / (1 + np.exp(-2 * logit))  # overconfident
    >>> parts = log_loss_decomposition(y, over)
    >>> parts["method"], round(parts["calibration"], 3)
    ('monotone', 0.055)
    >>> round(log_loss_decomposition(y, over, method="affine")["temperature"], 3)
    2.004
    >>> shifted = 1 / (1 + np.exp(-(logit + 1)))  # right order, base rate too high
    >>> round(log_loss_decomposition(y, shifted)["calibration"], 3)
    0.104
    >>> round(log_loss_decomposition(y, shifted, method="temperature")["calibration"], 3)
    0.054
    """
    _check_choice(method, "method", METHODS)
    if np.ndim(y_prob) == 2 and np.shape(y_prob)[1] > 2:
        if pos_label is not None:
            raise ValueError("pos_label applies to binary y_prob; got (n, k) probabilities")
        from .multiclass import _log_loss as multiclass_loss
        from .multiclass import _Multiclass

        m = _Multiclass(y_true, y_prob, sample_weight, labels)
        z = np.log(np.clip(m.P, float(np.finfo(m.dtype).eps), 1.0))
        return _decompose_log_loss(z, m.y, m.w, multiclass_loss(m), method)
    if labels is not None:
        raise ValueError("labels applies to (n, k) multiclass y_prob; use pos_label")
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    eps = float(np.finfo(c.prob_dtype).eps)
    z = np.log(np.clip(np.column_stack([1.0 - c.p, c.p]), eps, 1.0 - eps))
    return _decompose_log_loss(z, c.y.astype(np.int64), c.w, _log_loss(c, "auto"), method)
