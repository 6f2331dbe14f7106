"""ONNX converter of :class:`bernonnx.IsotonicCalibrator` (mirrors
``bernonnx/calibrators/isotonic.py``).

On the float64 score ``s`` (N, 1)::

    s, x = s * 2^score_exponent_, x * 2^score_exponent_  (Mul nodes; if not 0)
    c   = Clip(s, x[0], x[T-1])
    m   = #{x < c}  in two levels: b = #{block starts < c} over the
          ceil(sqrt(T)) blocks of ceil(sqrt(T)) thresholds, then
          #{x in block b < c} on Gather(blocks, b)
    j   = Clip(m - 1, 0, T - 2)
    p   = Gather(y, j) + Gather(slope, j) * (c - Gather(x, j))
    (out_of_bounds="nan": Where(s < x[0] or s > x[T-1], NaN, p))
    pair=True: [1 - p, p] = Gemm(p, [[-1, 1]], [1, 0])

The lookup costs 2 sqrt(T) comparisons per row, not the N x T matrix of
skl2onnx's nearest-threshold export, and interpolates as ``np.interp`` does
(same slope, same formula; at a segment boundary both neighbours give the
same value up to rounding).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx._core.transforms import rescale
from bernonnx.converters._graph import GraphWriter, rescale_scores


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


def emit_isotonic(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    p = _isotonic(g, scores, cal)
    if not pair:
        return p
    return g.node("Gemm", [p, g.const("to_pair", [[-1.0, 1.0]]), g.const("pair0", [1.0, 0.0])])
