"""All calibration metrics at once, from one validation of the inputs."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import roc_auc_score

from bernonnx._validation import check_int

from ._inputs import PosLabel, _check_inputs
from .binned import _calibration_error, _table
from .multiclass import multiclass_report
from .scores import _brier, _log_loss


def calibration_report(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    labels: ArrayLike | None = None,
) -> dict[str, float | int]:
    """All calibration metrics at once, for comparison tables.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most (binary ``y_prob``).
    y_prob : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, n_classes)
        Predicted probabilities of the positive class, in ``[0, 1]``; or, with three
        classes or more, the class probabilities (``predict_proba``), columns in the
        order of ``labels``. A binary (n, 2) ``predict_proba`` is refused: pass its
        positive column.
    n_bins : int, default=10
        Number of bins of the binned metrics.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table` (binary only).
    labels : array-like of shape (n_classes,), default=None
        Multiclass only: the label of each column of ``y_prob`` (default: the sorted
        labels of ``y_true``, which must then all occur).

    Returns
    -------
    report : dict
        ``ece`` (uniform bins, l1), ``ece_quantile`` (quantile bins, l1), ``rmsce``
        (uniform, l2), ``mce`` (uniform, max), ``brier``, ``log_loss``, ``auc``
        (:func:`sklearn.metrics.roc_auc_score`, NaN when the rows with positive weight hold
        a single class) and ``n_distinct``, the number of distinct predicted probabilities
        among rows with positive weight (a calibrator with ties, such as isotonic
        regression, shows fewer).

        Multiclass (n, k) ``y_prob``: the binned entries are top-label (the confidence
        ``max_k p_k`` against the accuracy, :func:`top_label_calibration_error`), plus
        ``classwise_ece`` (:func:`classwise_calibration_error`), ``brier``
        (:func:`multiclass_brier_score`), ``log_loss`` (:func:`multiclass_log_loss`),
        ``accuracy``, ``auc`` (one-vs-rest macro average) and ``n_distinct`` of the
        confidence.

    Notes
    -----
    The inputs are validated once; each entry equals the dedicated function's value.

    Examples
    --------
    >>> from bernonnx.metrics import calibration_report
    >>> report = calibration_report([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2)
    >>> {key: round(value, 4) for key, value in report.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'ece': 0.275, 'ece_quantile': 0.275, 'rmsce': 0.2761, 'mce': 0.3, 'brier': 0.2575,
     'log_loss': 0.6841, 'auc': 0.75, 'n_distinct': 4}
    """
    check_int(n_bins, "n_bins", 1)
    if np.ndim(y_prob) == 2 and np.shape(y_prob)[1] > 2:
        if pos_label is not None:
            raise ValueError("pos_label applies to binary y_prob; got (n, k) probabilities")
        return multiclass_report(
            y_true, y_prob, n_bins=n_bins, sample_weight=sample_weight, labels=labels
        )
    if labels is not None:
        raise ValueError("labels applies to (n, k) multiclass y_prob; use pos_label")
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    uniform = _table(c, n_bins, "uniform")
    positive = c.w > 0
    if np.unique(c.y[positive]).shape[0] < 2:
        # AUC is undefined with one class; a NaN keeps comparison tables printable
        auc = float("nan")
    else:
        auc = float(roc_auc_score(c.y, c.p, sample_weight=c.w))
    return {
        "ece": _calibration_error(uniform, "l1"),
        "ece_quantile": _calibration_error(_table(c, n_bins, "quantile"), "l1"),
        "rmsce": _calibration_error(uniform, "l2"),
        "mce": _calibration_error(uniform, "max"),
        "brier": _brier(c),
        "log_loss": _log_loss(c, "auto"),
        "auc": auc,
        "n_distinct": int(np.unique(c.p[positive]).shape[0]),
    }
