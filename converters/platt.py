"""ONNX converter of :class:`bernonnx.PlattCalibrator` (mirrors ``bernonnx/calibrators/platt.py``).

On the float64 score ``s`` (N, 1)::

    t   = s  |  log(c) - log(1 - c), c = Clip(s, eps, 1 - eps)   (log_odds)
    t   = Mul(Mul(t, 2^a), 2^b), a + b = score_exponent_          (if not 0)
    p   = Sigmoid(Gemm(t, slope, intercept))

With ``pair=True`` the same two nodes yield ``[1 - p, p]`` directly (negated
weight and bias in the Gemm: ``[s(-eta), s(eta)]``).
"""

from __future__ import annotations

from bernonnx.converters._graph import GraphWriter, clipped_log_odds, rescale_scores


def platt_feature(g: GraphWriter, s: str, cal) -> str:
    """``t``: the score or its clipped log-odds, rescaled by ``score_exponent_``."""
    t = clipped_log_odds(g, s, cal.eps) if cal.log_odds else s
    return rescale_scores(g, t, getattr(cal, "score_exponent_", 0))


def platt_linear(g: GraphWriter, s: str, cal) -> str:
    """``slope * t + intercept`` with one Mul and one Add, rounding as numpy does
    (a Gemm may fuse them into one rounding): the Platt-histogram bins compare it."""
    a = g.node("Mul", [platt_feature(g, s, cal), g.const("slope", float(cal.slope_))])
    return g.node("Add", [a, g.const("intercept", float(cal.intercept_))], "a")


def emit_platt(g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp") -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    slope, intercept = float(cal.slope_), float(cal.intercept_)
    weights = [[-slope, slope]] if pair else [[slope]]
    bias = [-intercept, intercept] if pair else [intercept]
    t = platt_feature(g, scores, cal)
    eta = g.node("Gemm", [t, g.const("slope", weights), g.const("intercept", bias)], "eta")
    return g.node("Sigmoid", [eta], "p")
