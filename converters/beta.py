"""ONNX converter of :class:`bernonnx.BetaCalibrator` (mirrors ``bernonnx/calibrators/beta.py``).

On the float64 score ``s`` (N, 1)::

    input_ = "proba":   c = Clip(s, eps, 1 - eps);  x1 = Log(c);  x2 = Neg(Log(1 - c))
    input_ = "logits":  r = Log(1 + Exp(Neg(Abs(s))))
                        x1 = Min(s, 0) - r;  x2 = Max(s, 0) + r
    q = Sigmoid((x1 * a + x2 * b) + intercept)
    pair: Concat(1 - q, q)
"""

from __future__ import annotations

from bernonnx.converters._graph import GraphWriter


def sigmoid_pair(g: GraphWriter, eta: str, pair: bool) -> str:
    """``q = Sigmoid(eta)``, or ``[1 - q, q]`` with ``pair`` (Python's ``[1 - q, q]``)."""
    q = g.node("Sigmoid", [eta], "q")
    if not pair:
        return q
    return g.node("Concat", [g.node("Sub", [g.const("one", 1.0), q], "one_minus_q"), q], axis=1)


def clipped_logs(g: GraphWriter, s: str, eps: float) -> tuple[str, str]:
    """``log(c)`` and ``log(1 - c)`` of ``c = Clip(s, eps, 1 - eps)``."""
    c = g.node("Clip", [s, g.const("eps", eps), g.const("one_minus_eps", 1.0 - eps)], "c")
    return g.node("Log", [c]), g.node("Log", [g.node("Sub", [g.const("one", 1.0), c])])


def beta_features(g: GraphWriter, s: str, cal) -> tuple[str, str]:
    """``log p`` and ``-log(1 - p)`` as ``bernonnx.calibrators._input.log_p_and_log_q``."""
    if cal.input_ == "proba":
        log_c, log_1mc = clipped_logs(g, s, cal.eps)
        return log_c, g.node("Neg", [log_1mc])
    return softplus_pair(g, s, g.const("zero", 0.0))


def softplus_pair(g: GraphWriter, s: str, zero: str) -> tuple[str, str]:
    """``-softplus(-s)`` and ``softplus(s)`` as ``bernonnx._core.increasing.softplus_pair``:
    ``r = Log(1 + Exp(Neg(Abs(s))))``, ``Min(s, 0) - r`` and ``Max(s, 0) + r``."""
    r = g.node(
        "Log",
        [
            g.node(
                "Add", [g.const("one", 1.0), g.node("Exp", [g.node("Neg", [g.node("Abs", [s])])])]
            )
        ],
        "r",
    )
    x1 = g.node("Sub", [g.node("Min", [s, zero]), r], "log_p")
    x2 = g.node("Add", [g.node("Max", [s, zero]), r], "minus_log_q")
    return x1, x2


def emit_beta(g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp") -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` (the Bernstein basis option) does not apply."""
    x1, x2 = beta_features(g, scores, cal)
    linear = g.node(
        "Add",
        [
            g.node("Mul", [x1, g.const("a", float(cal.a_))]),
            g.node("Mul", [x2, g.const("b", float(cal.b_))]),
        ],
    )
    eta = g.node("Add", [linear, g.const("intercept", float(cal.intercept_))], "eta")
    return sigmoid_pair(g, eta, pair)
