"""The class scores of the multiclass calibrators: their checks, logits and weighted rows.

What the temperature family (``temperature.py``) and the temperature-Bernstein default
(``temperature_bernstein.py``) share on the way in: ``fit``'s checks of ``K`` class score
columns, labels and sample weights, the float64 logits each ``input`` kind stands for,
and :func:`weighted_rows`, the one place a fit's ``sample_weight`` is checked and its
rows of weight 0 dropped before the logits are taken.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.sparse import issparse
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from bernonnx._core.transforms import clipped_log_odds
from bernonnx._validation import _finite_or_raise, check_scores, check_weights


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


def logits(est, arr: np.ndarray) -> np.ndarray:
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


def class_logits(est, arr: np.ndarray) -> np.ndarray:
    """The float64 (n, K) logits of the score columns (``[0, z]`` for one column), for
    ``input`` in {"logits", "log_odds", "proba"}: ``log(max(p, eps))`` of probabilities,
    the floored log sigmoid of one-vs-rest log-odds (whose softmax is ``p / sum(p)``)."""
    if est.input != "log_odds" or arr.shape[1] == 1:
        z = logits(est, arr)
        return np.column_stack([np.zeros_like(z), z]) if z.ndim == 1 else z
    z = arr.astype(np.float64)
    # log sigmoid(l), whose softmax is p / sum(p): the model's probabilities. In the
    # ops the graph has (onnxruntime has no float64 Softplus, ONNX no log1p).
    # Floored at log(eps) as input="proba" is: naive Bayes gives log-odds of -1e10,
    # and one such row sends the fitted temperature to infinity
    logsig = -(np.maximum(-z, 0.0) + np.log(1.0 + np.exp(-np.abs(z))))
    return np.maximum(logsig, np.log(est.eps))


class WeightedRows(NamedTuple):
    """The rows a multiclass fit reads, from :func:`weighted_rows`."""

    #: float64 (m, K) logits of the rows of positive weight (:func:`class_logits`)
    z: np.ndarray
    #: their class indexes into ``classes_``
    target: np.ndarray
    #: their weights, all positive
    w: np.ndarray
    #: (n,) which rows given have positive weight
    keep: np.ndarray
    #: (n,) every row's class index, weight 0 included
    every_target: np.ndarray
    #: (n,) every row's weight, 0 included
    every_w: np.ndarray


def weighted_rows(estimator, X, y, sample_weight) -> WeightedRows:
    """``fit``'s way in: :func:`check_class_scores` (which sets ``classes_`` from every
    label, weight 0 included, and checks ``sample_weight``), then the rows of positive
    weight, their logits by ``estimator.input`` (:func:`class_logits`), classes and
    weights. A row of weight 0 counts for nothing, so its logits are never taken."""
    arr, target, w = check_class_scores(estimator, X, y, sample_weight)
    keep = w > 0
    z = class_logits(estimator, arr[keep])
    return WeightedRows(z, target[keep], w[keep], keep, target, w)
