"""ONNX converter of :class:`bernonnx.QuadraticScalingCalibrator` (mirrors
``bernonnx/calibrators/quadratic.py``).

On the float64 score ``s`` (N, 1)::

    l = s  |  Log(c) - Log(1 - c), c = Clip(s, eps, 1 - eps)        (input_ = "proba")
    l = (l * 2**(e // 2)) * 2**(e - e // 2)        (only for e = log2_scale_ != 0)
    u = Min(Max(l, low), high);  v = (u - center) / half_width
    inner = (base + rise_low * (1 - (1 - v) * (1 - v))) + rise_high * ((1 + v) * (1 + v))
    below = Min(l * 0.25 - low * 0.25, 0) * (4 slope_low)      (only for slope_low > 0)
    above = Max(l * 0.25 - high * 0.25, 0) * (4 slope_high)    (only for slope_high > 0)
    q = Sigmoid((inner + below) + above);  pair: Concat(1 - q, q)
"""

from __future__ import annotations

from bernonnx._core.scale import factors
from bernonnx.converters._graph import GraphWriter
from bernonnx.converters.beta import clipped_logs, sigmoid_pair


def emit_quadratic(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    l = scores
    if cal.input_ == "proba":
        log_c, log_1mc = clipped_logs(g, scores, cal.eps)
        l = g.node("Sub", [log_c, log_1mc], "logit")
    if cal.log2_scale_ != 0:
        for i, factor in enumerate(factors(cal.log2_scale_)):
            l = g.node("Mul", [l, g.const(f"scale_{i}", factor)], f"scaled_{i}")
    low, high = float(cal.low_), float(cal.high_)
    u = g.node("Min", [g.node("Max", [l, g.const("low", low)]), g.const("high", high)], "u")
    v = g.node(
        "Div",
        [
            g.node("Sub", [u, g.const("center", float(cal.center_))]),
            g.const("half", cal.half_width_),
        ],
        "v",
    )
    base, rise_low, rise_high = (float(t) for t in cal.terms_)
    one = g.const("one", 1.0)
    falling, rising = g.node("Sub", [one, v], "falling"), g.node("Add", [one, v], "rising")
    low_part = g.node(
        "Mul",
        [g.const("rise_low", rise_low), g.node("Sub", [one, g.node("Mul", [falling, falling])])],
    )
    high_part = g.node("Mul", [g.const("rise_high", rise_high), g.node("Mul", [rising, rising])])
    inner = g.node("Add", [g.node("Add", [g.const("base", base), low_part]), high_part], "inner")
    quarter = g.node("Mul", [l, g.const("quarter", 0.25)], "quarter")
    zero = g.const("zero", 0.0)
    eta = inner
    if cal.slope_low_ > 0:  # a zero slope's tail is left out, as in Python (never 0 * inf)
        below = g.node(
            "Mul",
            [
                g.node(
                    "Min", [g.node("Sub", [quarter, g.const("low_quarter", low * 0.25)]), zero]
                ),
                g.const("slope_low", 4.0 * float(cal.slope_low_)),
            ],
            "below",
        )
        eta = g.node("Add", [eta, below])
    if cal.slope_high_ > 0:
        above = g.node(
            "Mul",
            [
                g.node(
                    "Max", [g.node("Sub", [quarter, g.const("high_quarter", high * 0.25)]), zero]
                ),
                g.const("slope_high", 4.0 * float(cal.slope_high_)),
            ],
            "above",
        )
        eta = g.node("Add", [eta, above])
    return sigmoid_pair(g, g.node("Identity", [eta], "eta"), pair)
