"""ONNX converter of :class:`bernonnx.VennAbersCalibrator` (mirrors
``bernonnx/binary/venn_abers.py``).

On the float64 score ``s`` (N, 1), with the ``k`` distinct calibration scores ``c``
laid out in ``ceil(sqrt(k))`` blocks of ``ceil(sqrt(k))`` (padded with +inf, which no
finite score reaches)::

    t = Max(Abs(s), 1) * 1e-12;  above = s + t;  below = s - t    (ties)
    b_le = #{block starts <= above};  n_le = b_le * width + #{c in block b_le <= above}
    b_lt = #{block starts <  below};  n_lt = b_lt * width + #{c in block b_lt <  below}
    p0 = Gather(p0_, n_le);  p1 = Gather(p1_, n_lt)
    p = p1 / Max((1 - p0) + p1, 1e-300);  pair: Concat(1 - p, p)
    interval (the calibrator alone, an extra float64 output): Concat(p0, p1)

``numpy.searchsorted`` counts the same (``"right"``: ``<=``, ``"left"``: ``<``), in
2 sqrt(k) comparisons per row.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx.binary.venn_abers import TIE_TOLERANCE
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
    """``p0`` and ``p1`` (N, 1) of the (N, 1) float64 ``scores``, ties within
    ``bernonnx.binary.venn_abers.tie_band``."""
    c = np.asarray(cal.scores_, dtype=np.float64)
    magnitude = g.node("Max", [g.node("Abs", [scores]), g.const("one", 1.0)])
    t = g.node("Mul", [magnitude, g.const("tie", TIE_TOLERANCE)], "tie")
    below, above = g.node("Sub", [scores, t], "below"), g.node("Add", [scores, t], "above")
    p0 = _table(g, "p0", cal.p0_, count_at_most(g, above, c, strict=False))
    p1 = _table(g, "p1", cal.p1_, count_at_most(g, below, c, strict=True))
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
