"""Input checks shared by all calibrators, and the one place that imports
private scikit-learn helpers."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.sparse import issparse
from sklearn.base import _fit_context  # noqa: F401  (re-exported for the estimators)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions  # noqa: F401
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, validate_data


class IntInterval(Interval):
    """``Interval(Integral, ...)`` that refuses ``bool``: ``True`` is an
    ``Integral`` in Python, and ``degree=True`` silently meaning degree 1 hides
    a mistake (an argument shifted by one place, a flag passed as a count)."""

    def __init__(self, left, right, *, closed):
        super().__init__(Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        if isinstance(val, bool | np.bool_):
            return False
        return super().is_satisfied_by(val)


def check_int_grid(values, name: str, low: int, high: int) -> list[int]:
    """Sorted distinct ints of a non-empty sequence, each in ``[low, high]``
    (bools refused); a ``ValueError`` naming ``name`` otherwise."""
    flat = np.asarray(values, dtype=object).ravel()
    ok = flat.size > 0 and all(
        isinstance(v, Integral) and not isinstance(v, bool | np.bool_) and low <= v <= high
        for v in flat
    )
    if not ok:
        raise ValueError(
            f"{name} must be an int or a non-empty sequence of ints in [{low}, {high}] "
            f"(not bools), got {values!r}"
        )
    return sorted({int(v) for v in flat})


def _finite_or_raise(values: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        kind = "NaN" if np.isnan(values).any() else "inf"
        first = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"{name} contains {kind} ({int(bad.sum())} non-finite values, first at flat "
            f"index {first}); calibrators need finite scores"
        )


def check_scores(estimator, scores, *, reset: bool, y=None):
    """Validate scores (and ``y``) in scikit-learn's order; returns a 2-D array.

    Shape ``(n,)`` becomes ``(n, 1)``. Finiteness and the single-column rule
    are checked afterwards by :func:`single_score`, once the labels and
    weights have been checked, so each problem gets its own message.
    Sets ``n_features_in_`` when ``reset``.
    """
    if reset and y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None"
        )
    if not (hasattr(scores, "iloc") or issparse(scores)):
        scores = np.asarray(scores)
    shape = getattr(scores, "shape", ())
    if not reset and len(shape) == 2 and shape[1] != 1:
        # clearer than the generic "X has k features" of validate_data
        single_score(estimator, np.empty((0, shape[1])))
    if getattr(scores, "ndim", 2) == 1:
        scores = scores.to_frame() if hasattr(scores, "to_frame") else scores.reshape(-1, 1)
    kwargs = dict(reset=reset, dtype=[np.float64, np.float32], ensure_all_finite=False)
    if y is not None:
        return validate_data(estimator, scores, y, **kwargs)
    return validate_data(estimator, scores, **kwargs), None


def single_score(estimator, arr: np.ndarray) -> np.ndarray:
    """The one score column of a validated 2-D array, finite, as 1-D."""
    _finite_or_raise(arr, "scores")
    if arr.shape[1] != 1:
        raise ValueError(
            f"scores must be a 1-D array of shape (n_samples,) or a single column "
            f"(n_samples, 1); got shape {arr.shape}. {type(estimator).__name__} calibrates "
            "one score; use CalibratedClassifier to calibrate a classifier's scores"
        )
    return arr[:, 0]


def check_binary_labels(y, estimator_name: str):
    """Classes and 0/1 float target of a binary label vector (any label type).

    Continuous targets are refused by ``check_classification_targets`` with
    scikit-learn's "Unknown label type" message.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.shape[0] < 2:
        raise ValueError(
            f"y contains a single class ({classes[0]!r}); {estimator_name} needs both "
            "classes of a binary problem to fit a calibration curve"
        )
    if classes.shape[0] > 2:
        raise ValueError(
            f"Only binary classification is supported. The type of the target is "
            f"{type_of_target(y)} ({classes.shape[0]} classes): {estimator_name} calibrates "
            "one class against the rest; CalibratedClassifier does that for every class"
        )
    return classes, (y == classes[1]).astype(np.float64)


def check_weights(sample_weight, s: np.ndarray) -> np.ndarray:
    """Float64 non-negative weights with a positive total (ones when None)."""
    w = _check_sample_weight(sample_weight, s, dtype=np.float64, ensure_non_negative=True)
    _finite_or_raise(w, "sample_weight")
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to zero: nothing to fit")
    return w


def fit_inputs(estimator, X, y, sample_weight):
    """Checked float64 scores, 0/1 target and weights of the rows with positive weight.

    Sets ``classes_`` and ``n_features_in_``. Errors, in order: labels,
    weights, a single class among the positive-weight rows, then NaN/inf and
    the single-column rule (see :func:`check_scores`).
    """
    arr, y = check_scores(estimator, X, reset=True, y=y)
    target, w, keep = labelled_rows(estimator, arr, y, sample_weight)
    s = single_score(estimator, arr)
    return s[keep].astype(np.float64), target[keep], w[keep]


def labelled_rows(estimator, arr: np.ndarray, y, sample_weight):
    """Set ``classes_``; return the 0/1 target, the weights and the mask of
    positive-weight rows, which must hold both classes."""
    name = type(estimator).__name__
    estimator.classes_, target = check_binary_labels(y, name)
    w = check_weights(sample_weight, arr)
    keep = w > 0
    if target[keep].min() == target[keep].max():
        raise ValueError(
            "y contains a single class among the rows with positive sample_weight; "
            f"{name} needs both classes"
        )
    return target, w, keep


def predict_scores(estimator, X) -> np.ndarray:
    """The checked 1-D scores of a fitted one-score calibrator (input dtype kept)."""
    return single_score(estimator, check_scores(estimator, X, reset=False)[0])
