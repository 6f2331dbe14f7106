"""ONNX converters of :class:`bernonnx.HistogramCalibrator` and
:class:`bernonnx.PlattHistogramCalibrator` (mirrors ``bernonnx/calibrators/histogram.py``).

On the float64 score ``s`` (N, 1) (comparisons in float64: a float32 score is
exact there, uniform bin edges are not float32 values)::

    Histogram        p   = v0 + MatMul(Cast(Greater(s, edges)), diff(values))
                     p   = Where(IsNaN(s), NaN, p)
    PlattHistogram   a   = Add(Mul(t, slope), intercept)   (t as in converters/platt.py;
                     p   = v0 + MatMul(Cast(Greater(a, edges)), diff(values))   no Sigmoid:
                     p   = Where(IsNaN(a), NaN, p)                           edges are on a)

``#{edges < s}`` selects the bin (right-closed bins, ``searchsorted(...,
side="left")``); the telescoping sum of value steps equals ``values[k]`` up to
rounding. With ``pair=True`` the last Gemm yields ``[1 - p, p]`` directly
(negated steps and base).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx.converters._graph import GraphWriter
from bernonnx.converters.platt import platt_linear


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
        p = g.node("Add", [g.node("Clip", [x, zero, zero]), g.const("v0", base[None, :])])
    else:
        above = g.node(
            "Cast",
            [g.node("Greater", [x, g.const("edges", edges[None, :])])],
            to=TensorProto.DOUBLE,
        )
        p = g.node("Gemm", [above, g.const("steps", steps), g.const("v0", base)])
    # NaN > edge is false, which would put a NaN score in the first bin with a
    # confident value: give NaN, as every other calibrator graph does (Python
    # raises). Not x - x or 0 * x, which would turn +-inf into NaN too.
    return g.node("Where", [g.node("IsNaN", [x]), g.const("nan", np.nan), p], "p")


def emit_histogram(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    return _binned(g, scores, cal.bin_edges_, cal.bin_values_, pair)


def emit_platt_histogram(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """As :func:`emit_histogram`, on the Platt argument ``slope_ * t + intercept_``."""
    return _binned(g, platt_linear(g, scores, cal), cal.bin_edges_, cal.bin_values_, pair)
