"""ONNX converter of :class:`bernonnx.QuadraticScalingCalibrator` (mirrors
``bernonnx/binary/quadratic.py``).

On the float64 score ``s`` (N, 1)::

    l = s  |  Log(c) - Log(1 - c), c = Clip(s, eps, 1 - eps)        (input_ = "proba")
    u = Min(Max(l, low), high);  v = (u - center) / half_width
    inner = (intercept + linear * v) + quadratic * (v * v)
    below = Min(l * 0.25 - low * 0.25, 0) * (4 slope_low)
    above = Max(l * 0.25 - high * 0.25, 0) * (4 slope_high)
    q = Sigmoid((inner + below) + above);  pair: Concat(1 - q, q)
"""

from __future__ import annotations

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
    inner = g.node(
        "Add",
        [
            g.node(
                "Add",
                [
                    g.const("intercept", float(cal.intercept_)),
                    g.node("Mul", [g.const("linear", float(cal.linear_)), v]),
                ],
            ),
            g.node("Mul", [g.const("quadratic", float(cal.quadratic_)), g.node("Mul", [v, v])]),
        ],
        "inner",
    )
    quarter = g.node("Mul", [l, g.const("quarter", 0.25)], "quarter")
    zero = g.const("zero", 0.0)
    below = g.node(
        "Mul",
        [
            g.node("Min", [g.node("Sub", [quarter, g.const("low_quarter", low * 0.25)]), zero]),
            g.const("slope_low", 4.0 * float(cal.slope_low_)),
        ],
        "below",
    )
    above = g.node(
        "Mul",
        [
            g.node("Max", [g.node("Sub", [quarter, g.const("high_quarter", high * 0.25)]), zero]),
            g.const("slope_high", 4.0 * float(cal.slope_high_)),
        ],
        "above",
    )
    eta = g.node("Add", [g.node("Add", [inner, below]), above], "eta")
    return sigmoid_pair(g, eta, pair)
