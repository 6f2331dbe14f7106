"""Input checks shared by all calibrators, and the one place that imports
private scikit-learn helpers."""

from __future__ import annotations

import numpy as np
from sklearn.base import _fit_context  # noqa: F401  (re-exported for the estimators)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions  # noqa: F401
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, validate_data


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
    """Validate a score vector for a one-dimensional calibrator.

    Accepts shape ``(n,)`` or ``(n, 1)``; returns ``(s, y)`` with ``s`` 1-D
    float32/float64. Sets ``n_features_in_`` (always 1) when ``reset``.
    """
    if np.ndim(scores) == 2 and np.shape(scores)[1] != 1 or np.ndim(scores) > 2:
        raise ValueError(
            f"scores must be a 1-D array of shape (n_samples,) or a single column "
            f"(n_samples, 1); got shape {np.shape(scores)}. {type(estimator).__name__} "
            "calibrates one score; use CalibratedClassifier for a classifier's scores"
        )
    arr = np.asarray(scores).reshape(-1, 1) if np.ndim(scores) == 1 else scores
    kwargs = dict(
        reset=reset,
        dtype=[np.float64, np.float32],
        ensure_all_finite=False,
        ensure_min_samples=1,
    )
    if y is not None:
        arr, y = validate_data(estimator, arr, y, **kwargs)
    else:
        arr = validate_data(estimator, arr, **kwargs)
    _finite_or_raise(arr, "scores")
    return arr[:, 0], y


def check_binary_labels(y, estimator_name: str):
    """Classes and 0/1 float target of a binary label vector (any label type)."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.shape[0] < 2:
        raise ValueError(
            f"y contains a single class ({classes[0]!r}); {estimator_name} needs both "
            "classes of a binary problem to fit a calibration curve"
        )
    if classes.shape[0] > 2:
        raise ValueError(
            f"{estimator_name} is binary but y has {classes.shape[0]} classes "
            f"({type_of_target(y)}); wrap the classifier in CalibratedClassifier, which "
            "calibrates each class one-vs-rest"
        )
    return classes, (y == classes[1]).astype(np.float64)


def check_weights(sample_weight, s: np.ndarray) -> np.ndarray:
    """Float64 non-negative weights with a positive total (ones when None)."""
    w = _check_sample_weight(sample_weight, s, dtype=np.float64, ensure_non_negative=True)
    _finite_or_raise(w, "sample_weight")
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to zero: nothing to fit")
    return w
