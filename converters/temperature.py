"""ONNX converter of :class:`bernonnx.TemperatureCalibrator` (mirrors
``bernonnx/temperature.py``).

On the float64 scores ``z`` (N, K), or the log-odds (N, 1) of a binary one::

    z = Log(Max(z, eps))  |  log(c) - log(1 - c), c = Clip(z, eps, 1 - eps)   (input="proba")
    K columns:  p = Softmax(Mul(z, beta), axis=1)
    one column: p = Sigmoid(Mul(z, beta));  pair: Concat(1 - p, p)
"""

from __future__ import annotations

from bernonnx.converters._graph import GraphWriter, clipped_log_odds


def emit_temperature(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Calibrated probabilities of the float64 ``scores``: (N, K) for K columns,
    P(y = 1) (N, 1) or, with ``pair``, ``[1 - p, p]`` for one column. ``basis``
    (the Bernstein basis option) does not apply."""
    one_column = int(cal.n_features_in_) == 1
    z = scores
    if cal.input == "proba":
        if one_column:
            z = clipped_log_odds(g, z, cal.eps)
        else:
            # numpy's clip(p, eps, 1) then log; Clip's upper bound is needed by no row
            z = g.node("Log", [g.node("Max", [z, g.const("eps", cal.eps)])], "logp")
    scaled = g.node("Mul", [z, g.const("beta", float(cal.inverse_temperature_))], "scaled")
    if not one_column:
        return g.node("Softmax", [scaled], "p", axis=1)
    p = g.node("Sigmoid", [scaled], "p")
    if not pair:
        return p
    return g.node("Concat", [g.node("Sub", [g.const("one", 1.0), p], "q"), p], "pair", axis=1)
