"""The arguments every metric shares, checked once: labels, probabilities, weights."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._validation import as_1d, binarize_labels, check_sample_weight

_STRATEGIES = ("uniform", "quantile")
_NORMS = ("l1", "l2", "max")

PosLabel = int | float | bool | str | None


class _Checked(NamedTuple):
    """Validated inputs: 0/1 targets, probabilities and weights, all float64."""

    y: np.ndarray
    p: np.ndarray
    w: np.ndarray
    # dtype of y_prob as passed, for the log-loss clipping epsilon
    prob_dtype: np.dtype


def _check_y_prob(y_prob: ArrayLike) -> tuple[np.ndarray, np.dtype]:
    arr = np.asarray(y_prob)
    if arr.ndim == 2 and arr.shape[1] == 2:
        raise ValueError(
            f"y_prob has shape {arr.shape}: pass the probabilities of the positive class "
            "only, e.g. predict_proba(X)[:, 1], not the two-column predict_proba output."
        )
    arr = as_1d(arr, "y_prob")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y_prob must hold real numbers, got dtype {arr.dtype}.")
    # integer and bool predictions have no epsilon of their own; sklearn casts them to
    # float64 too
    prob_dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    p = arr.astype(np.float64)
    if np.isnan(p).any():
        raise ValueError("y_prob contains NaN.")
    if np.isinf(p).any():
        raise ValueError("y_prob contains inf.")
    if p.size and (p.min() < 0.0 or p.max() > 1.0):
        raise ValueError(
            "y_prob must be probabilities in [0, 1], found values in "
            f"[min={float(p.min())!r}, max={float(p.max())!r}]."
        )
    return p, prob_dtype


def _check_inputs(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    sample_weight: ArrayLike | None,
    pos_label: PosLabel,
) -> _Checked:
    """Validate the arguments every metric shares; see :mod:`bernonnx.metrics`."""
    yt = as_1d(y_true, "y_true")
    p, prob_dtype = _check_y_prob(y_prob)
    if yt.shape[0] != p.shape[0]:
        raise ValueError(
            f"y_true and y_prob have different lengths: {yt.shape[0]} and {p.shape[0]}."
        )
    if p.shape[0] == 0:
        raise ValueError("y_true and y_prob are empty: at least one sample is needed.")
    w = check_sample_weight(sample_weight, p.shape[0])
    y = binarize_labels(yt, pos_label)
    return _Checked(y, p, w, prob_dtype)


def _check_choice(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}.")
