"""ONNX converter of :class:`bernonnx.TemperatureBernsteinCalibrator` (mirrors
``bernonnx/temperature_bernstein.py``).

On the float64 scores ``s`` (N, K), or the log-odds (N, 1) of a binary one::

    z = s  |  Log(Max(s, eps))  (input="proba")
        |  Max(-(Relu(-s) + Log(1 + Exp(-|s|))), log(eps))  (input="log_odds")
    one column: z = Concat(0, s | clipped log-odds of s)
    t = Mul(z, beta)
    identity, temperature:  p = Softmax(t, axis=1)
    bernstein:  l = t - logsumexp over the other columns (two columns: [-d, d], d = t_1 - t_0)
                q_k = Bernstein emitter of column k of l;  p = q / sum_k q_k (uniform if 0)
    one column, pair=False: column 1 of p
"""

from __future__ import annotations

import numpy as np

from bernonnx.converters._graph import GraphWriter, clipped_log_odds
from bernonnx.converters.bernstein import emit_bernstein
from bernonnx.converters.exact_models import one_vs_rest_log_odds


def _logits(g: GraphWriter, s: str, cal) -> str:
    """The (N, K) float64 logits ``predict_proba`` computes from the scores."""
    if int(cal.n_features_in_) == 1:
        z = clipped_log_odds(g, s, cal.eps) if cal.input == "proba" else s
        zero = g.node("Mul", [z, g.const("zero", 0.0)])
        return g.node("Concat", [zero, z], "pair_logits", axis=1)
    if cal.input == "proba":
        # numpy's clip(p, eps, 1) then log; Clip's upper bound is needed by no row
        return g.node("Log", [g.node("Max", [s, g.const("eps", cal.eps)])], "logp")
    if cal.input == "log_odds":
        # log sigmoid(s) as Python computes it (onnxruntime has no float64 Softplus)
        tail = g.node("Relu", [g.node("Neg", [s])])
        e = g.node("Exp", [g.node("Neg", [g.node("Abs", [s])])])
        soft = g.node("Add", [tail, g.node("Log", [g.node("Add", [g.const("one", 1.0), e])])])
        logsig = g.node("Neg", [soft], "logsig")
        return g.node("Max", [logsig, g.const("log_eps", float(np.log(cal.eps)))])
    return s


def emit_temperature_bernstein(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Calibrated probabilities of the float64 ``scores``: (N, K) for K columns,
    P(y = 1) (N, 1) or, with ``pair``, ``[1 - p, p]`` for one column."""
    n_classes = len(cal.classes_)
    z = _logits(g, scores, cal)
    t = g.node("Mul", [z, g.const("beta", float(cal.inverse_temperature_))], "scaled")
    if cal.calibrators_ is None:
        p = g.node("Softmax", [t], "p", axis=1)
    else:
        odds = one_vs_rest_log_odds(g, t, n_classes)
        positives = [
            emit_bernstein(g, g.column(odds, k), sub, pair=False, basis=basis)
            for k, sub in enumerate(cal.calibrators_)
        ]
        p = _renormalise(g, g.node("Concat", positives, axis=1), n_classes)
    if int(cal.n_features_in_) == 1 and not pair:
        return g.column(p, 1)
    return p


def _renormalise(g: GraphWriter, stacked: str, n_classes: int) -> str:
    """(N, K) positives divided by their row sum, uniform where the sum is 0."""
    total = g.reduce("ReduceSum", stacked)
    ratio = g.node("Div", [stacked, g.node("Max", [total, g.const("tiny", 1e-300)])])
    positive = g.node("Greater", [total, g.const("zero", 0.0)])
    return g.node("Where", [positive, ratio, g.const("uniform", 1.0 / n_classes)])
