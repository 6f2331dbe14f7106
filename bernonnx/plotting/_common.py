"""What every figure needs: matplotlib on demand, a non-empty range, the inverse transforms."""

from __future__ import annotations

import importlib

import numpy as np
from scipy.special import logit

_MISSING_MATPLOTLIB = "bernonnx.plotting needs matplotlib: pip install 'bernonnx[plot]'"
#: A logistic transform never reaches 0 or 1; its default plotting range is where
#: ``u`` runs over [_U_EDGE, 1 - _U_EDGE], which is 2.4 times as far from the median as
#: the 10th and 90th percentiles.
_U_EDGE = 0.005


def _pyplot():
    """matplotlib.pyplot, or the ImportError that says how to install it."""
    try:
        importlib.import_module("matplotlib")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise ImportError(_MISSING_MATPLOTLIB) from exc


def _new_axes(ax, figsize):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _padded(lo: float, hi: float) -> tuple[float, float]:
    """A non-empty range: a degenerate one is widened to +-1 around its point."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"the calibrator's fitted score range [{lo}, {hi}] is not finite")
    if hi > lo:
        return lo, hi
    return lo - 1.0, hi + 1.0


def _transform_params(cal, column=None) -> dict:
    """The fitted transform parameters of a Bernstein calibrator (one column of it)."""
    params = {}
    for key in ("shift", "scale", "scale_below", "knots", "levels"):
        if hasattr(cal, key + "_"):
            value = getattr(cal, key + "_")
            params[key] = value if column is None else value[column]
    return params


def _inverse_transform(kind: str, params: dict, u: np.ndarray) -> np.ndarray:
    """Scores whose transform is ``u`` (``u`` in [0, 1]); the inverse of ``apply_transform``.

    Closed forms: the logistic transform is a sigmoid of a two-slope linear map
    (``u = 0`` and ``1`` map to -inf and +inf), min-max is affine and the quantile map is
    piecewise linear through ``(knots, levels)`` with strictly increasing levels. A
    constant transform (zero slope or one knot) maps every ``u`` to its one score.
    """
    u = np.asarray(u, dtype=np.float64)
    if kind == "quantile":
        knots, levels = params["knots"], params["levels"]
        if knots.shape[0] == 1:
            return np.full_like(u, knots[0])
        return np.interp(u, levels, knots)
    shift, scale = float(params["shift"]), float(params["scale"])
    if kind == "minmax":
        return shift + u / scale if scale > 0 else np.full_like(u, shift)
    below = float(params["scale_below"])
    if not (scale > 0 and below > 0):
        return np.full_like(u, shift)
    with np.errstate(divide="ignore"):
        z = logit(u)
    return shift + np.where(z >= 0, z / scale, z / below)


def _transform_range(kind: str, params: dict) -> tuple[float, float]:
    """Default plotting range of a transform: the fitted range (logistic: see _U_EDGE)."""
    edge = _U_EDGE if kind == "logistic" else 0.0
    lo, hi = _inverse_transform(kind, params, np.array([edge, 1.0 - edge]))
    return float(lo), float(hi)


def _transform_median(kind: str, params: dict) -> float:
    """The score the transform maps to 1/2: the fitted weighted median (logistic, and
    quantile up to a knot), the mid-range for min-max."""
    return float(_inverse_transform(kind, params, np.array([0.5]))[0])
