"""Calibration metrics of multiclass probabilities ``y_prob`` of shape (n_samples, n_classes).

Columns follow the sorted labels (``labels`` if given), as ``predict_proba`` orders them.
Sample weights mean repetition, as in the binary metrics, and every binned metric reuses
their reliability table (:func:`bernonnx.metrics.reliability_table`):

* top-label: the binary table of "the predicted class is right" against the confidence
  ``max_k p_k`` (Guo et al. 2017);
* classwise: the mean over classes of the binary table of "the class is ``k``" against
  ``p_k`` (Kull et al. 2019).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._validation import as_1d, check_int, check_sample_weight

from ._inputs import _NORMS, _STRATEGIES, _check_choice, _Checked
from .binned import _binned_errors, _calibration_error, _table
from .smooth import _check_bandwidth, _smooth_ece

__all__ = [
    "classwise_calibration_error",
    "classwise_smooth_calibration_error",
    "multiclass_brier_score",
    "multiclass_log_loss",
    "top_label_calibration_error",
    "top_label_smooth_calibration_error",
]


class _Multiclass:
    """Validated multiclass inputs: class indices, probabilities and weights (float64)."""

    def __init__(self, y_true, y_prob, sample_weight, labels):
        P = np.asarray(y_prob)
        if P.ndim != 2 or P.shape[1] < 2:
            raise ValueError(
                f"y_prob must have shape (n_samples, n_classes) with n_classes >= 2, got "
                f"shape {P.shape}"
            )
        if P.dtype.kind not in "biuf":
            raise ValueError(f"y_prob must hold real numbers, got dtype {P.dtype}.")
        self.dtype = P.dtype if P.dtype.kind == "f" else np.dtype(np.float64)
        P = P.astype(np.float64)
        if not np.isfinite(P).all():
            raise ValueError("y_prob contains NaN or inf.")
        if P.size and (P.min() < 0.0 or P.max() > 1.0):
            raise ValueError(
                f"y_prob must be probabilities in [0, 1], found values in "
                f"[min={float(P.min())!r}, max={float(P.max())!r}]."
            )
        y = as_1d(y_true, "y_true")
        if y.shape[0] != P.shape[0]:
            raise ValueError(
                f"y_true and y_prob have different lengths: {y.shape[0]} and {P.shape[0]}."
            )
        if y.shape[0] == 0:
            raise ValueError("y_true and y_prob are empty: at least one sample is needed.")
        classes = np.unique(y) if labels is None else np.asarray(labels)
        if classes.shape[0] != P.shape[1]:
            raise ValueError(
                f"y_prob has {P.shape[1]} columns but {classes.shape[0]} labels "
                f"({'found in y_true' if labels is None else 'given'}): pass labels= with "
                "one label per column, in column order"
            )
        index = np.searchsorted(classes, y) if labels is None else None
        if labels is not None:
            lookup = {label: i for i, label in enumerate(classes.tolist())}
            unknown = [v for v in np.unique(y).tolist() if v not in lookup]
            if unknown:
                raise ValueError(f"y_true holds labels not in labels: {unknown[:5]}")
            index = np.array([lookup[v] for v in y.tolist()], dtype=np.int64)
        self.y = index
        self.P = P
        self.w = check_sample_weight(sample_weight, P.shape[0])

    def binary(self, hit: np.ndarray, p: np.ndarray) -> _Checked:
        return _Checked(hit.astype(np.float64), p, self.w, self.dtype)

    def top_label(self) -> _Checked:
        predicted = np.argmax(self.P, axis=1)
        return self.binary(predicted == self.y, self.P[np.arange(self.P.shape[0]), predicted])


def _binned_args(n_bins: int, strategy: str, norm: str) -> None:
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    _check_choice(norm, "norm", _NORMS)


def top_label_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    norm: str = "l1",
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """Top-label (confidence) calibration error: ECE of ``max_k p_k`` against accuracy.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_prob : array-like of shape (n_samples, n_classes)
        Class probabilities, columns in the order of ``labels`` (default: the sorted
        labels of ``y_true``, which must then all occur).
    n_bins : int, default=15
    strategy : {"uniform", "quantile"}, default="uniform"
    norm : {"l1", "l2", "max"}, default="l1"
        ECE, RMSCE or MCE of the confidence.
    sample_weight : array-like of shape (n_samples,), default=None
    labels : array-like of shape (n_classes,), default=None

    Returns
    -------
    float

    References
    ----------
    Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> from bernonnx.metrics import top_label_calibration_error
    >>> y_prob = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]]
    >>> round(top_label_calibration_error([0, 1, 1, 2], y_prob, n_bins=2), 4)
    0.125
    """
    _binned_args(n_bins, strategy, norm)
    c = _Multiclass(y_true, y_prob, sample_weight, labels).top_label()
    return _calibration_error(_table(c, n_bins, strategy), norm)


def classwise_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    norm: str = "l1",
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """Classwise calibration error: the mean over classes of the binary ECE of ``p_k``.

    Parameters are those of :func:`top_label_calibration_error`. With two classes it is
    the binary ECE of the positive column (the two classes' tables mirror each other).

    References
    ----------
    Kull, Perello-Nieto, Kängsepp, Silva Filho, Song and Flach, "Beyond temperature
    scaling: obtaining well-calibrated multiclass probabilities with Dirichlet
    calibration", NeurIPS 2019.

    Examples
    --------
    >>> from bernonnx.metrics import classwise_calibration_error
    >>> y_prob = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]]
    >>> round(classwise_calibration_error([0, 1, 1, 2], y_prob, n_bins=2), 4)
    0.15
    """
    _binned_args(n_bins, strategy, norm)
    m = _Multiclass(y_true, y_prob, sample_weight, labels)
    errors = [
        _calibration_error(_table(m.binary(m.y == k, m.P[:, k]), n_bins, strategy), norm)
        for k in range(m.P.shape[1])
    ]
    return float(np.mean(errors))


def top_label_smooth_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    bandwidth: float | str = "auto",
) -> float:
    """Top-label smooth ECE: the smooth ECE of the confidence ``max_k p_k`` against accuracy.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_prob : array-like of shape (n_samples, n_classes)
        Class probabilities, columns in the order of ``labels``.
    sample_weight : array-like of shape (n_samples,), default=None
    labels : array-like of shape (n_classes,), default=None
    bandwidth : "auto" or float, default="auto"
        See :func:`~bernonnx.metrics.smooth_calibration_error`.

    Returns
    -------
    float

    Notes
    -----
    :func:`~bernonnx.metrics.smooth_calibration_error` of ``(predicted class is right,
    max_k p_k)``: the pairs ``relplot.multiclass_logits_to_confidences(probs=True)`` makes.

    References
    ----------
    J. Błasiok and P. Nakkiran (2024). Smooth ECE: Principled Reliability Diagrams via
    Kernel Smoothing. ICLR 2024.

    Examples
    --------
    >>> from bernonnx.metrics import top_label_smooth_calibration_error
    >>> y_prob = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]]
    >>> round(top_label_smooth_calibration_error([0, 1, 1, 2], y_prob), 4)
    0.1794
    """
    _check_bandwidth(bandwidth)
    c = _Multiclass(y_true, y_prob, sample_weight, labels).top_label()
    return _smooth_ece(c, bandwidth)[0]


def classwise_smooth_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    bandwidth: float | str = "auto",
) -> float:
    """Classwise smooth ECE: the mean over classes of the smooth ECE of ``p_k``.

    Parameters are those of :func:`top_label_smooth_calibration_error`; each class has its
    own automatic bandwidth. With two classes it is the binary smooth ECE of the positive
    column (the residuals of the two columns are opposite, the kernel is symmetric).

    Examples
    --------
    >>> from bernonnx.metrics import classwise_smooth_calibration_error
    >>> y_prob = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]]
    >>> round(classwise_smooth_calibration_error([0, 1, 1, 2], y_prob), 4)
    0.1777
    """
    _check_bandwidth(bandwidth)
    m = _Multiclass(y_true, y_prob, sample_weight, labels)
    errors = [
        _smooth_ece(m.binary(m.y == k, m.P[:, k]), bandwidth)[0] for k in range(m.P.shape[1])
    ]
    return float(np.mean(errors))


def _brier(m: _Multiclass) -> float:
    onehot = np.eye(m.P.shape[1])[m.y]
    return float(np.sum(m.w * np.sum((m.P - onehot) ** 2, axis=1)) / m.w.sum())


def _log_loss(m: _Multiclass) -> float:
    # sklearn's log_loss clips at the dtype's eps; rows are not renormalised
    eps = float(np.finfo(m.dtype).eps)
    p = np.clip(m.P[np.arange(m.P.shape[0]), m.y], eps, 1.0)
    return float(np.sum(m.w * -np.log(p)) / m.w.sum())


def multiclass_brier_score(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """Brier's original multiclass score: the mean of ``sum_k (p_k - [y = k])^2``, in [0, 2].

    Twice the binary :func:`~bernonnx.metrics.brier_score` when there are two classes.

    Examples
    --------
    >>> from bernonnx.metrics import multiclass_brier_score
    >>> multiclass_brier_score([0, 2], [[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]], labels=[0, 1, 2])
    0.1875
    """
    return _brier(_Multiclass(y_true, y_prob, sample_weight, labels))


def multiclass_log_loss(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """Mean negative log probability of the true class (probabilities clipped below at
    the float type's eps, as :func:`sklearn.metrics.log_loss` does).

    Examples
    --------
    >>> from bernonnx.metrics import multiclass_log_loss
    >>> y_prob = [[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]]
    >>> round(multiclass_log_loss([0, 2], y_prob, labels=[0, 1, 2]), 4)
    0.3466
    """
    return _log_loss(_Multiclass(y_true, y_prob, sample_weight, labels))


def _multiclass_entries(m: _Multiclass, n_bins: int) -> dict:
    """:func:`bernonnx.metrics.calibration_report`'s entries for validated (n, k) inputs."""
    from sklearn.metrics import roc_auc_score

    top = m.top_label()
    uniform = _table(top, n_bins, "uniform")
    quantile = _table(top, n_bins, "quantile")
    classwise = [
        _calibration_error(_table(m.binary(m.y == k, m.P[:, k]), n_bins, "uniform"), "l1")
        for k in range(m.P.shape[1])
    ]
    positive = m.w > 0
    present = np.unique(m.y[positive])
    if present.shape[0] < m.P.shape[1]:
        auc = float("nan")  # one-vs-rest AUC needs every class among the rows
    else:
        auc = float(
            roc_auc_score(
                m.y, m.P / m.P.sum(axis=1, keepdims=True), sample_weight=m.w, multi_class="ovr"
            )
        )
    return {
        **_binned_errors(uniform, quantile),
        "smece": _smooth_ece(top)[0],
        "classwise_ece": float(np.mean(classwise)),
        "brier": _brier(m),
        "log_loss": _log_loss(m),
        "accuracy": float(np.sum(m.w * top.y) / m.w.sum()),
        "auc": auc,
        "n_distinct": int(np.unique(top.p[positive]).shape[0]),
    }
