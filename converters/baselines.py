"""ONNX converters of the baseline calibrators (mirrors ``bernonnx/baselines.py``).

On column ``j`` of a float64 score matrix ``raw`` (comparisons in float64: a
float32 score is exact there, uniform bin edges are not float32 values)::

    Platt            t   = s  |  log(c) - log(1 - c), c = Clip(s, eps, 1 - eps)   (log_odds)
                     t   = Mul(Mul(t, 2^a), 2^b), a + b = score_exponent_   (if not 0)
                     p   = Sigmoid(slope * t + intercept)
    Histogram        p   = v0 + MatMul(Cast(Greater(s, edges)), diff(values))
                     p   = Where(IsNaN(s), NaN, p)
    PlattHistogram   a   = Add(Mul(t, slope), intercept)   (t as for Platt; no Sigmoid:
                     p   = v0 + MatMul(Cast(Greater(a, edges)), diff(values))   the edges are on a)
                     p   = Where(IsNaN(a), NaN, p)

``#{edges < s}`` selects the bin (right-closed bins, ``searchsorted(...,
side="left")``); the telescoping sum of value steps equals ``values[k]`` up to
rounding. With ``pair=True`` the last node yields ``[1 - p, p]`` directly
(negated weights and biases in the same Gemm / Sigmoid).

    Isotonic         s, x = s * 2^score_exponent_, x * 2^score_exponent_  (Mul nodes; if not 0)
                     c   = Clip(s, x[0], x[T-1])
                     m   = #{x < c}  in two levels: b = #{block starts < c} over the
                           ceil(sqrt(T)) blocks of ceil(sqrt(T)) thresholds, then
                           #{x in block b < c} on Gather(blocks, b)
                     j   = Clip(m - 1, 0, T - 2)
                     p   = Gather(y, j) + Gather(slope, j) * (c - Gather(x, j))
                     (out_of_bounds="nan": Where(s < x[0] or s > x[T-1], NaN, p))

The isotonic lookup costs 2 sqrt(T) comparisons per row, not the N x T matrix
of skl2onnx's nearest-threshold export, and interpolates as ``np.interp``
does (same slope, same formula; at a segment boundary both neighbours give
the same value up to rounding).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx._transforms import rescale
from bernonnx.converters._graph import GraphWriter
from bernonnx.converters.bernstein import rescale_scores


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
    t = rescale_scores(g, _platt_argument(g, s, cal), getattr(cal, "score_exponent_", 0))
    slope, intercept = float(cal.slope_), float(cal.intercept_)
    weights = [[-slope, slope]] if pair else [[slope]]
    bias = [-intercept, intercept] if pair else [intercept]
    eta = g.node("Gemm", [t, g.const("slope", weights), g.const("intercept", bias)], "eta")
    return g.node("Sigmoid", [eta], "p")


def _platt_linear(g: GraphWriter, s: str, cal) -> str:
    """``slope * t + intercept`` with one Mul and one Add, rounding as numpy does
    (a Gemm may fuse them into one rounding): the Platt-histogram bins compare it."""
    t = rescale_scores(g, _platt_argument(g, s, cal), getattr(cal, "score_exponent_", 0))
    a = g.node("Mul", [t, g.const("slope", float(cal.slope_))])
    return g.node("Add", [a, g.const("intercept", float(cal.intercept_))], "a")


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


def _isotonic(g: GraphWriter, s: str, cal) -> str:
    """Exact linear interpolation through ``(x_thresholds_, y_thresholds_)``."""
    if cal.out_of_bounds == "raise":
        raise NotImplementedError(
            "IsotonicCalibrator(out_of_bounds='raise') cannot be exported: a graph cannot "
            "raise; use 'clip' or 'nan'"
        )
    exponent = getattr(cal, "score_exponent_", 0)
    s = rescale_scores(g, s, exponent)
    x = rescale(np.asarray(cal.x_thresholds_, dtype=np.float64), exponent)
    y = np.asarray(cal.y_thresholds_, dtype=np.float64)
    t = x.shape[0]
    c = g.node("Clip", [s, g.const("x_first", x[0]), g.const("x_last", x[-1])], "c")
    if t == 1:
        p = g.node("Add", [g.node("Mul", [c, g.const("zero", 0.0)]), g.const("y0", y[0])], "p")
    else:
        width = int(np.ceil(np.sqrt(t)))
        n_blocks = int(np.ceil(t / width))
        blocks = np.full(n_blocks * width, np.inf)  # s > inf is false: padding never counts
        blocks[:t] = x
        blocks = blocks.reshape(n_blocks, width)
        as_double = {"to": TensorProto.DOUBLE}
        starts = g.const("block_starts", blocks[1:, 0][None, :])
        block = g.node(
            "ReduceSum",
            [
                g.node("Cast", [g.node("Greater", [c, starts])], **as_double),
                g.const("axis", [1], TensorProto.INT64),
            ],
            keepdims=0,
        )
        rows = g.node(
            "Gather",
            [g.const("blocks", blocks), g.node("Cast", [block], to=TensorProto.INT64)],
            axis=0,
        )
        inside = g.node(
            "ReduceSum",
            [
                g.node("Cast", [g.node("Greater", [c, rows])], **as_double),
                g.const("axis", [1], TensorProto.INT64),
            ],
            keepdims=1,
        )
        count = g.node(
            "Add",
            [
                g.node(
                    "Unsqueeze",
                    [
                        g.node("Mul", [block, g.const("width", float(width))]),
                        g.const("axis1", [1], TensorProto.INT64),
                    ],
                ),
                inside,
            ],
        )
        segment = g.node(
            "Clip",
            [
                g.node("Sub", [count, g.const("one", 1.0)]),
                g.const("first", 0.0),
                g.const("last", float(t - 2)),
            ],
        )
        j = g.node("Cast", [segment], to=TensorProto.INT64)
        slope = np.diff(y) / np.diff(x)

        def pick(name, values):
            return g.node("Gather", [g.const(name, values), j], axis=0)

        x_j, y_j = pick("x", x[:-1]), pick("y", y[:-1])
        p = g.node("Add", [g.node("Mul", [pick("slope", slope), g.node("Sub", [c, x_j])]), y_j])
        p = g.node("Reshape", [p, g.const("shape", [-1, 1], TensorProto.INT64)], "p")
    if cal.out_of_bounds == "nan":
        outside = g.node(
            "Or",
            [
                g.node("Less", [s, g.const("x_first", x[0])]),
                g.node("Greater", [s, g.const("x_last", x[-1])]),
            ],
        )
        p = g.node("Where", [outside, g.const("nan", np.nan), p])
    return p


def emit_baseline(g: GraphWriter, raw: str, width: int, column: int, cal, *, pair: bool) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, for a baseline calibrator."""
    name = type(cal).__name__
    s = _score(g, raw, width, column)
    if name == "PlattCalibrator":
        return _platt(g, s, cal, pair)
    if name == "HistogramCalibrator":
        return _binned(g, s, cal.bin_edges_, cal.bin_values_, pair)
    if name == "PlattHistogramCalibrator":
        return _binned(g, _platt_linear(g, s, cal), cal.bin_edges_, cal.bin_values_, pair)
    if name == "IsotonicCalibrator":
        p = _isotonic(g, s, cal)
        if not pair:
            return p
        return g.node("Gemm", [p, g.const("to_pair", [[-1.0, 1.0]]), g.const("pair0", [1.0, 0.0])])
    raise NotImplementedError(f"no ONNX converter for calibrator {name}")
