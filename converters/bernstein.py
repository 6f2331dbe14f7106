"""ONNX converter of :class:`bernonnx.BernsteinCalibrator` (mirrors ``bernonnx/bernstein.py``).

Nodes emitted for a score tensor ``s`` of shape (N, 1), all in float64::

    d    = Clip(s - shift, -1e300, 1e300)
    u, v = Sigmoid(z), Sigmoid(-z),  z = Relu(d) * scale + Min(d, 0) * scale_below   logistic
    u    = Clip(d * scale, 0, 1), v = 1 - u                                           minmax
    u    = MatMul(Clip((s - knots[:-1]) / widths, 0, 1), diff(levels)), v = 1 - u     quantile
    B    = Pow(u, k) * Pow(v, d - k) * C(d, k)          k = 0..d, broadcast to (N, d+1)
    eta  = MatMul(B, coef - coef[0]) + coef[0]
    p    = Sigmoid(eta) (loss="log")  |  Clip(eta, 0, 1) (loss="squared")

This is the formula ``BernsteinCalibrator.predict_proba`` evaluates (see its
Notes). ``Pow(0, 0) = 1`` and the clip on ``d`` keep every node finite for
any finite input: no ``inf * 0``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import comb

from bernonnx.converters._graph import GraphWriter

#: Same bound as ``bernonnx._transforms._MAX_DIFF``.
_MAX_DIFF = 1e300


def _transform(g: GraphWriter, s: str, cal) -> tuple[str, str]:
    one = g.const("one", 1.0)
    zero = g.const("zero", 0.0)
    if cal.score_transform == "quantile":
        knots, levels = np.asarray(cal.knots_), np.asarray(cal.levels_)
        if knots.shape[0] == 1:
            # constant scores: u = 0 whatever s (s * 0 would be NaN for s = inf)
            u = g.node("Mul", [g.node("Clip", [s, zero, zero]), zero])
        else:
            k = knots.shape[0] - 1
            shifted = g.node("Sub", [s, g.const("knots", knots[:-1].reshape(1, k))])
            ramps = g.node("Mul", [shifted, g.const("inv_width", 1.0 / np.diff(knots)[None, :])])
            ramps = g.node("Clip", [ramps, zero, one])
            u = g.node("MatMul", [ramps, g.const("dlevels", np.diff(levels).reshape(k, 1))])
        return u, g.node("Sub", [one, u])
    bound = g.const("max_diff", _MAX_DIFF)
    d = g.node("Sub", [s, g.const("shift", cal.shift_)])
    d = g.node("Clip", [d, g.node("Neg", [bound]), bound])
    if cal.score_transform == "minmax":
        u = g.node("Clip", [g.node("Mul", [d, g.const("scale", cal.scale_)]), zero, one])
        return u, g.node("Sub", [one, u])
    above = g.node("Mul", [g.node("Relu", [d]), g.const("scale", cal.scale_)])
    below = g.node("Mul", [g.node("Min", [d, zero]), g.const("scale_below", cal.scale_below_)])
    z = g.node("Add", [above, below], "z")
    return g.node("Sigmoid", [z], "u"), g.node("Sigmoid", [g.node("Neg", [z])], "v")


def emit_bernstein(scope, container, score: str, cal, prefix: str = "bern") -> str:
    """Emit the calibrator on a float64 (N, 1) ``score``; returns the (N, 1) float64 P(y = 1)."""
    g = GraphWriter(scope, container, prefix)
    u, v = _transform(g, score, cal)
    coef = np.asarray(cal.coef_, dtype=np.float64)
    d = coef.shape[0] - 1
    k = np.arange(d + 1, dtype=np.float64)[None, :]
    basis = g.node(
        "Mul", [g.node("Pow", [u, g.const("k", k)]), g.node("Pow", [v, g.const("dk", d - k)])]
    )
    basis = g.node("Mul", [basis, g.const("binom", comb(d, k))])
    rise = g.node("MatMul", [basis, g.const("rise", (coef - coef[0]).reshape(d + 1, 1))])
    eta = g.node("Add", [rise, g.const("c0", coef[0])], "eta")
    if cal.loss == "log":
        return g.node("Sigmoid", [eta], "p")
    return g.node("Clip", [eta, g.const("zero", 0.0), g.const("one", 1.0)], "p")
