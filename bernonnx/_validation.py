"""Input checks shared by the calibrators, the metrics, plotting and deployment, and
the one place that imports private scikit-learn helpers.

Estimators check their data through scikit-learn (:func:`fit_inputs`,
:func:`predict_scores`); functions that take plain arrays (metrics, plots) use the
numpy-only checks :func:`as_1d`, :func:`check_sample_weight`, :func:`binarize_labels`,
:func:`positives_among_classes`; every integer argument outside an estimator goes
through :func:`check_int`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.sparse import issparse
from sklearn.base import _fit_context  # noqa: F401  (re-exported for the estimators)
from sklearn.neural_network._base import ACTIVATIONS  # noqa: F401  (for _meta.py)
from sklearn.utils._indexing import _safe_indexing  # noqa: F401  (for _meta.py)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions  # noqa: F401
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,  # noqa: F401  (for _meta.py)
    validate_data,
)


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
    # one reduction, no temporary: a NaN or inf anywhere makes the sum non-finite (a
    # finite sum that overflows only sends us to the exact test below)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(values, axis=None)
    if np.isfinite(total):
        return
    bad = ~np.isfinite(values)
    if bad.any():
        kind = "NaN" if np.isnan(values).any() else "inf"
        first = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"{name} contains {kind} ({int(bad.sum())} non-finite values, first at flat "
            f"index {first}); calibrators need finite scores"
        )


def is_missing(v) -> bool:
    """None, NaN or ``pd.NA`` (whose truth value is ambiguous: never compare it)."""
    return v is None or type(v).__name__ == "NAType" or (isinstance(v, float) and v != v)


def refuse_missing(values, name: str) -> None:
    """``ValueError`` naming ``name`` if object-dtype ``values`` hold None or ``pd.NA``.

    Validation would otherwise end in a ``TypeError`` from comparing ``pd.NA``.
    Numeric and pandas extension dtypes are left to the usual checks (NaN).
    """
    dtypes = getattr(values, "dtypes", None)
    if dtypes is not None and hasattr(dtypes, "__iter__"):  # a DataFrame
        if not any(getattr(d, "kind", None) == "O" for d in dtypes):
            return
    elif np.asarray(values).dtype.kind != "O":
        return
    flat = np.asarray(values, dtype=object).reshape(-1)
    where = next((i for i, v in enumerate(flat) if is_missing(v)), None)
    if where is not None:
        raise ValueError(
            f"{name} has missing values (None, NaN or pd.NA), first at flat index {where}; "
            "drop or fill those rows first"
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
    if not issparse(scores):
        refuse_missing(scores, "scores")
    if y is not None:
        refuse_missing(y, "y")
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
    fast = _two_numeric_labels(y)
    if fast is not None:
        return fast
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


def _two_numeric_labels(y: np.ndarray):
    """``(classes, target)`` of a 1-D bool/int/float ``y`` holding exactly two integral
    values, else ``None`` (the general path then decides, with its messages).

    What ``check_classification_targets`` and ``np.unique`` conclude for such ``y``
    (binary, those two classes), from a few linear passes instead of two sorts: at
    ``n = 1e6`` the label checks cost more than a fit's optimisation.
    """
    if y.ndim != 1 or y.shape[0] == 0 or y.dtype.kind not in "biuf":
        return None
    lo, hi = y.min(), y.max()
    # NaN, a single class or non-integral floats (a continuous target) go the long way
    if not lo < hi or (y.dtype.kind == "f" and not (lo.is_integer() and hi.is_integer())):
        return None
    positive = y == hi
    if not np.logical_or(positive, y == lo, out=positive.copy()).all():
        return None
    return np.array([lo, hi], dtype=y.dtype), positive.astype(np.float64)


def check_weights(sample_weight, s: np.ndarray) -> np.ndarray:
    """Float64 non-negative weights with a positive total (ones when None)."""
    if sample_weight is None:
        return np.ones(_num_samples(s))
    w = _check_sample_weight(sample_weight, s, dtype=np.float64, ensure_non_negative=True)
    _finite_or_raise(w, "sample_weight")
    with np.errstate(over="ignore"):  # an overflowing total is refused below
        total = w.sum()
    if not total > 0:
        raise ValueError("sample_weight sums to zero: nothing to fit")
    if not np.isfinite(total):
        # every fit sums the weights (losses, statistics): inf there breaks them all
        raise ValueError(
            f"sample_weight sums to inf in float64 (largest weight {w.max():.3g}); divide "
            "the weights by a common factor"
        )
    return w


def fit_inputs(estimator, X, y, sample_weight, positions=False):
    """Checked float64 scores, 0/1 target and weights of the rows with positive weight.

    Sets ``classes_`` and ``n_features_in_``. Errors, in order: labels,
    weights, a single class among the positive-weight rows, then NaN/inf and
    the single-column rule (see :func:`check_scores`). ``positions=True``
    also returns which rows of ``X`` are kept (a mask, or ``slice(None)``: all),
    and the number of rows.
    """
    arr, y = check_scores(estimator, X, reset=True, y=y)
    target, w, keep = labelled_rows(estimator, arr, y, sample_weight)
    s = single_score(estimator, arr).astype(np.float64, copy=False)
    if positions:
        return s[keep], target[keep], w[keep], keep, s.shape[0]
    return s[keep], target[keep], w[keep]


def labelled_rows(estimator, arr: np.ndarray, y, sample_weight):
    """Set ``classes_``; return the 0/1 target, the weights and the mask of
    positive-weight rows, which must hold both classes (``slice(None)`` without
    ``sample_weight``: indexing by it is free)."""
    name = type(estimator).__name__
    estimator.classes_, target = check_binary_labels(y, name)
    w = check_weights(sample_weight, arr)
    if sample_weight is None:
        return target, w, slice(None)  # check_binary_labels saw both classes
    keep = w > 0
    if target[keep].min() == target[keep].max():
        raise ValueError(
            "y contains a single class among the rows with positive sample_weight; "
            f"{name} needs both classes"
        )
    return target, w, keep


def predict_scores(estimator, X) -> np.ndarray:
    """The checked 1-D scores of a fitted one-score calibrator (input dtype kept).

    A plain float64 or float32 ndarray of shape ``(n,)`` or ``(n, 1)``, ``n > 0``, for
    an estimator fitted without feature names, is what ``validate_data`` would return
    unchanged: it is used as it is, without the 0.09 ms that call costs (most of a
    small batch's prediction time). Anything else goes through ``validate_data``.
    """
    if (
        type(X) is np.ndarray
        and X.dtype in _FLOAT_DTYPES
        and (X.ndim == 1 or (X.ndim == 2 and X.shape[1] == 1))
        and X.shape[0] > 0
        and getattr(estimator, "n_features_in_", None) == 1
        and not hasattr(estimator, "feature_names_in_")
    ):
        _finite_or_raise(X, "scores")
        return X if X.ndim == 1 else X[:, 0]
    return single_score(estimator, check_scores(estimator, X, reset=False)[0])


_FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


# ----------------------------------------------------------------- plain-array arguments


def check_int(value, name: str, minimum: int) -> int:
    """``value`` as an int if it is an integer ``>= minimum`` (bools refused); a
    ``ValueError`` naming ``name`` otherwise.

    >>> check_int(np.int64(3), "n_bins", 1)
    3
    >>> check_int(True, "n_bins", 1)
    Traceback (most recent call last):
    ...
    ValueError: n_bins must be an integer >= 1, got True
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def as_1d(x, name: str) -> np.ndarray:
    """``x`` as a 1-D array; one column ``(n, 1)`` is flattened, other shapes refused."""
    arr = np.asarray(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}.")
    return arr


def check_sample_weight(sample_weight, n: int, *, of: str = "y_prob") -> np.ndarray:
    """Float64 weights of ``n`` rows (ones when None): real, finite, non-negative,
    with a positive total; ``of`` names the argument whose length they must match."""
    if sample_weight is None:
        return np.ones(n)
    arr = as_1d(sample_weight, "sample_weight")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold real numbers, got dtype {arr.dtype}.")
    w = arr.astype(np.float64)
    if w.shape[0] != n:
        raise ValueError(f"sample_weight has {w.shape[0]} entries but {of} has {n}.")
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or inf.")
    if (w < 0).any():
        raise ValueError(f"sample_weight must be non-negative, found min={float(w.min())!r}.")
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight.")
    return w


def binarize_labels(y_true: np.ndarray, pos_label) -> np.ndarray:
    """0/1 float64 targets of a 1-D label array with at most two distinct labels.

    ``pos_label=None`` means 1 for labels within ``{0, 1}`` or ``{-1, 1}`` (bools
    included), as scikit-learn's ``_check_pos_label_consistency``; other labels need
    it. A single label is allowed: with ``pos_label`` elsewhere it is all negatives.
    """
    if y_true.dtype.kind == "f" and np.isnan(y_true).any():
        raise ValueError("y_true contains NaN.")
    try:
        classes, inverse = np.unique(y_true, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"y_true mixes labels of incomparable types: {exc}") from None
    labels = classes.tolist()
    if len(labels) > 2:
        raise ValueError(
            f"y_true must hold at most two distinct labels (binary task), got {len(labels)}: "
            f"{labels[:10]}."
        )
    if pos_label is None:
        # strings never compare equal to ints: only the conventional numeric encodings
        # have an unambiguous positive label
        if set(labels) <= {0, 1} or set(labels) <= {-1, 1}:
            pos_label = 1
        else:
            raise ValueError(
                f"y_true has labels {labels}: pass pos_label to say which one is the positive "
                "class (pos_label=None is only allowed for labels in {0, 1} or {-1, 1})."
            )
    elif len(labels) == 2 and pos_label not in labels:
        raise ValueError(f"pos_label={pos_label!r} is not one of the labels in y_true {labels}.")
    is_pos = np.array([label == pos_label for label in labels], dtype=bool)
    return is_pos[inverse.reshape(-1)].astype(np.float64)


def positives_among_classes(y, classes: np.ndarray, n: int) -> np.ndarray:
    """0/1 float64 targets of labels ``y`` that must be among a fitted binary
    calibrator's ``classes`` (``classes[1]`` positive), one per each of ``n`` scores."""
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(
            f"y must be 1-D with one label per score: scores has {n} entries, "
            f"y has shape {labels.shape}"
        )
    unknown = set(np.unique(labels).tolist()) - set(classes.tolist())
    if unknown:
        raise ValueError(
            f"y holds labels {sorted(map(str, unknown))} that are not among the calibrator's "
            f"classes_ {classes.tolist()}"
        )
    return (labels == classes[1]).astype(np.float64)


# ---- labels and scores of a stream (bernonnx.stats)


def label_array(y, name: str) -> np.ndarray:
    """``y`` as a 1-D array, missing labels (None, NaN, ``pd.NA``) refused by name."""
    y = np.asarray(y).reshape(-1)
    if y.dtype.kind == "f":
        missing = np.isnan(y)
    elif y.dtype.kind == "O":
        missing = np.fromiter(map(is_missing, y), bool, y.shape[0])
    else:
        return y
    if missing.any():
        raise ValueError(
            f"{name} has missing labels (None, NaN or pd.NA), e.g. at position "
            f"{int(np.argmax(missing))}; every row needs one of the two classes"
        )
    return y


def labels_against(y, classes: np.ndarray, name: str = "y") -> np.ndarray:
    """0/1 target of ``y`` against two known ``classes``; unknown labels are an error."""
    y = label_array(y, name)
    target = y == classes[1]
    unknown = ~(target | (y == classes[0]))
    if unknown.any():
        raise ValueError(
            f"{name} has labels outside classes {classes.tolist()!r}, e.g. "
            f"{y[unknown][0]!r}; the classes are fixed by the first update (or classes=)"
        )
    return target.astype(np.float64)


def float_scores(s, name: str = "scores") -> np.ndarray:
    """Float64 scores; anything else (``pd.NA``, strings) refused by name."""
    try:
        return np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be real numbers (missing values such as pd.NA or None are not "
            f"scores): {exc}"
        ) from None


def check_classes(y, classes) -> np.ndarray:
    """The two classes of a stream: ``classes`` if given, else those of the first ``y``."""
    given = classes is not None
    values = np.unique(label_array(classes if given else y, "classes" if given else "y"))
    if values.shape[0] != 2:
        where = "classes" if given else "y of the first chunk"
        raise ValueError(
            f"{where} must hold exactly two classes, got {values.shape[0]} "
            f"({values[:3].tolist()!r}); pass classes=[negative, positive] to the first "
            "partial_fit when a chunk may hold one class only"
        )
    return values
