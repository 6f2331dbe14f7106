"""ONNX converters of the baseline calibrators (mirrors ``bernonnx/baselines.py``).

On column ``j`` of a float64 score matrix ``raw`` (comparisons in float64: a
float32 score is exact there, uniform bin edges are not float32 values)::

    Platt            t   = s  |  log(c) - log(1 - c), c = Clip(s, eps, 1 - eps)   (log_odds)
                     p   = Sigmoid(slope * t + intercept)
    Histogram        p   = v0 + MatMul(Cast(Greater(s, edges)), diff(values))
    PlattHistogram   q   = Platt(s);  p = v0 + MatMul(Cast(Greater(q, edges)), diff(values))

``#{edges < s}`` selects the bin (right-closed bins, ``searchsorted(...,
side="left")``); the telescoping sum of value steps equals ``values[k]`` up to
rounding. With ``pair=True`` the last node yields ``[1 - p, p]`` directly
(negated weights and biases in the same Gemm / Sigmoid).

IsotonicCalibrator has no converter yet: exact interpolation needs the
segment of each score, and a Greater against every threshold is the N x
thresholds matrix the export must avoid; an O(N log T) lookup is to come.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx.converters._graph import GraphWriter


def _score(g: GraphWriter, raw: str, width: int, column: int) -> str:
    return raw if width == 1 else g.column(raw, column)


def _platt_argument(g: GraphWriter, s: str, cal) -> str:
    if not cal.log_odds:
        return s
    lo = g.const("eps", cal.eps)
    hi = g.const("1meps", 1.0 - cal.eps)
    c = g.node("Clip", [s, lo, hi])
    return g.node(
        "Sub", [g.node("Log", [c]), g.node("Log", [g.node("Sub", [g.const("one", 1.0), c])])]
    )


def _platt(g: GraphWriter, s: str, cal, pair: bool) -> str:
    """``Sigmoid(slope t + intercept)``, or ``[s(-eta), s(eta)]`` with ``pair``."""
    t = _platt_argument(g, s, cal)
    slope, intercept = float(cal.slope_), float(cal.intercept_)
    weights = [[-slope, slope]] if pair else [[slope]]
    bias = [-intercept, intercept] if pair else [intercept]
    eta = g.node("Gemm", [t, g.const("slope", weights), g.const("intercept", bias)], "eta")
    return g.node("Sigmoid", [eta], "p")


def _binned(g: GraphWriter, x: str, edges, values, pair: bool) -> str:
    """``values[#edges < x]`` as a telescoping sum; ``[1 - p, p]`` with ``pair``."""
    values = np.asarray(values, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    steps = np.diff(values).reshape(-1, 1)
    base = np.array([values[0]])
    if pair:
        steps = np.hstack([-steps, steps])
        base = np.array([1.0 - values[0], values[0]])
    if edges.shape[0] == 0:
        zero = g.const("zero", 0.0)
        return g.node("Add", [g.node("Clip", [x, zero, zero]), g.const("v0", base[None, :])], "p")
    above = g.node(
        "Cast", [g.node("Greater", [x, g.const("edges", edges[None, :])])], to=TensorProto.DOUBLE
    )
    return g.node("Gemm", [above, g.const("steps", steps), g.const("v0", base)], "p")


def emit_baseline(g: GraphWriter, raw: str, width: int, column: int, cal, *, pair: bool) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, for a baseline calibrator."""
    name = type(cal).__name__
    s = _score(g, raw, width, column)
    if name == "PlattCalibrator":
        return _platt(g, s, cal, pair)
    if name == "HistogramCalibrator":
        return _binned(g, s, cal.bin_edges_, cal.bin_values_, pair)
    if name == "PlattHistogramCalibrator":
        return _binned(g, _platt(g, s, cal, pair=False), cal.bin_edges_, cal.bin_values_, pair)
    raise NotImplementedError(
        f"{name} cannot be exported to ONNX yet: exact interpolation without an "
        "N x thresholds matrix needs an O(N log T) segment lookup (see converters/baselines.py)"
    )
