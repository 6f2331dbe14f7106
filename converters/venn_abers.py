"""ONNX converter of :class:`bernonnx.VennAbersCalibrator` (mirrors
``bernonnx/calibrators/venn_abers.py``).

On the float64 score ``s`` (N, 1), with the ``k`` distinct calibration scores ``c``
laid out in ``ceil(sqrt(k))`` blocks of ``ceil(sqrt(k))`` (padded with +inf, which no
score is below) and ``pad = [NaN, c, NaN]``::

    b = #{block starts < s};  m = b * width + #{c in block b < s}      (NaN s: 0)
    lo = Gather(pad, m);  hi = Gather(pad, m + 1)           (c[m - 1], c[m])
    tie_lo = (s - lo) <= Abs(lo) * 1e-12;  tie_hi = (hi - s) <= Abs(hi) * 1e-12
    use_hi = tie_hi And (Not tie_lo Or (hi - s) <= (s - lo));  use_lo = tie_lo And Not use_hi
    p0 = Gather(p0_, m + use_hi);  p1 = Gather(p1_, m - use_lo)
    p0, p1 = Where(IsNaN(s), NaN, p0), Where(IsNaN(s), NaN, p1)
    p = p1 / Max((1 - p0) + p1, 1e-300);  pair: Concat(1 - p, p)
    interval (the calibrator alone, an extra float64 output): Concat(p0, p1)

``numpy.searchsorted(c, s, "left")`` counts the same ``m`` in 2 sqrt(k) comparisons per
row; a comparison with NaN is false in both, which is what the NaN pads are for.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx.calibrators.venn_abers import TIE_TOLERANCE
from bernonnx.converters._graph import GraphWriter

I64 = TensorProto.INT64


def count_at_most(g: GraphWriter, s: str, values: np.ndarray, strict: bool) -> str:
    """``#{values < s}`` (``strict``) or ``#{values <= s}`` per row, int64 (N, 1), for
    increasing ``values``: the block of ``s`` first, then the values inside it."""
    op = "Less" if strict else "LessOrEqual"
    k = values.shape[0]
    width = int(np.ceil(np.sqrt(k)))
    n_blocks = int(np.ceil(k / width))
    blocks = np.full(n_blocks * width, np.inf)
    blocks[:k] = values
    blocks = blocks.reshape(n_blocks, width)
    axis = g.const("axis", [1], I64)

    def count(table: str) -> str:
        hits = g.node("Cast", [g.node(op, [table, s])], to=I64)
        return g.node("ReduceSum", [hits, axis], keepdims=1)

    block = count(g.const("starts", blocks[1:, 0][None, :]))  # (N, 1)
    rows = g.node(
        "Gather", [g.const("blocks", blocks), g.node("Squeeze", [block, axis])], axis=0
    )  # (N, width)
    inside = count(rows)
    return g.node(
        "Add", [g.node("Mul", [block, g.const("width", [[width]], I64)]), inside], "count"
    )


def bounds(g: GraphWriter, scores: str, cal) -> tuple[str, str]:
    """``p0`` and ``p1`` (N, 1) of the (N, 1) float64 ``scores``, a tie decided as
    ``bernonnx.calibrators.venn_abers.tied_counts`` decides it."""
    c = np.asarray(cal.scores_, dtype=np.float64)
    m = count_at_most(g, scores, c, strict=True)
    padded = g.const("padded", np.r_[np.nan, c, np.nan])
    one = g.const("one_index", [[1]], I64)
    lo = g.node("Gather", [padded, m], "below_score", axis=0)
    hi = g.node("Gather", [padded, g.node("Add", [m, one])], "above_score", axis=0)
    d_lo, d_hi = g.node("Sub", [scores, lo], "d_lo"), g.node("Sub", [hi, scores], "d_hi")
    tie = g.const("tie", TIE_TOLERANCE)

    def within(d: str, c_: str) -> str:
        return g.node("LessOrEqual", [d, g.node("Mul", [g.node("Abs", [c_]), tie])])

    tie_lo, tie_hi = within(d_lo, lo), within(d_hi, hi)
    nearer_hi = g.node("Or", [g.node("Not", [tie_lo]), g.node("LessOrEqual", [d_hi, d_lo])])
    use_hi = g.node("And", [tie_hi, nearer_hi], "use_hi")
    use_lo = g.node("And", [tie_lo, g.node("Not", [use_hi])], "use_lo")
    i0 = g.node("Add", [m, g.node("Cast", [use_hi], to=I64)])
    i1 = g.node("Sub", [m, g.node("Cast", [use_lo], to=I64)])
    nan_in = g.node("IsNaN", [scores], "nan_in")
    nan = g.const("nan", np.nan)
    p0 = g.node("Where", [nan_in, nan, _table(g, "p0_table", cal.p0_, i0)], "p0")
    p1 = g.node("Where", [nan_in, nan, _table(g, "p1_table", cal.p1_, i1)], "p1")
    return p0, p1


def emit_venn_abers_interval(g: GraphWriter, scores: str, cal) -> str:
    """The interval ``[p0, p1]`` (N, 2) of ``predict_interval``."""
    return g.node("Concat", list(bounds(g, scores, cal)), "interval", axis=1)


def emit_venn_abers(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    p0, p1 = bounds(g, scores, cal)
    one = g.const("one", 1.0)
    denominator = g.node("Add", [g.node("Sub", [one, p0]), p1])
    denominator = g.node("Max", [denominator, g.const("tiny", 1e-300)])
    p = g.node("Div", [p1, denominator], "p")
    if not pair:
        return p
    return g.node("Concat", [g.node("Sub", [one, p], "one_minus_p"), p], axis=1)


def _table(g: GraphWriter, name: str, values: np.ndarray, index: str) -> str:
    """``values[index]`` (N, 1) for an int64 (N, 1) ``index``."""
    return g.node(
        "Gather", [g.const(name, np.asarray(values, dtype=np.float64)), index], name, axis=0
    )
