"""ONNX converters of :class:`bernonnx.TemperatureCalibrator` and of vector, matrix and
structured scaling (mirrors ``bernonnx/calibrators/temperature.py``).

Temperature scaling, on the float64 scores ``z`` (N, K), or the log-odds (N, 1) of a
binary one::

    z = Log(Max(z, eps))  |  log(c) - log(1 - c), c = Clip(z, eps, 1 - eps)   (input="proba")
    K columns:  p = Softmax(Mul(z, beta), axis=1)
    one column: p = Sigmoid(Mul(z, beta));  pair: Concat(1 - p, p)

Vector and matrix scaling, and their structured forms (SVS, SMS)::

    z = the (N, K) logits of the scores (``temperature_bernstein``'s, [0, s] for one column)
    structured:  t = Log(Add(Mul(Softmax(Mul(z, beta)), 1 - c), c / K))
    else:        t = Sub(z, Add(m, Log(ReduceSum(Exp(Sub(z, m)))))), m = ReduceMax(z)
    a = Add(Mul(t, v), b)  |  Add(MatMul(t, W^T), b);   p = Softmax(a, axis=1)
    one column, pair=False: column 1 of p
"""

from __future__ import annotations

import numpy as np

from bernonnx.converters._graph import GraphWriter, clipped_log_odds


def class_logits(g: GraphWriter, s: str, cal) -> str:
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


def emit_temperature(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Calibrated probabilities of the float64 ``scores``: (N, K) for K columns,
    P(y = 1) (N, 1) or, with ``pair``, ``[1 - p, p]`` for one column. ``basis``
    (the Bernstein basis option) does not apply."""
    beta = g.const("beta", float(cal.inverse_temperature_))
    if int(cal.n_features_in_) != 1:
        scaled = g.node("Mul", [class_logits(g, scores, cal), beta], "scaled")
        return g.node("Softmax", [scaled], "p", axis=1)
    # one column: the sigmoid of the scaled log-odds, not the pair class_logits builds
    z = clipped_log_odds(g, scores, cal.eps) if cal.input == "proba" else scores
    p = g.node("Sigmoid", [g.node("Mul", [z, beta], "scaled")], "p")
    if not pair:
        return p
    return g.node("Concat", [g.node("Sub", [g.const("one", 1.0), p], "q"), p], "pair", axis=1)


def affine_logits(g: GraphWriter, t: str, cal) -> str:
    """The calibrated logits ``a`` (N, K) of vector, matrix, SVS or SMS scaling, from
    the logits ``t`` of the scores (``class_logits``), as ``calibrated_logits``."""
    if hasattr(cal, "mixture_"):
        k = len(cal.classes_)
        beta = g.const("beta", float(cal.inverse_temperature_))
        q = g.node("Softmax", [g.node("Mul", [t, beta], "scaled")], "ts", axis=1)
        kept = g.node("Mul", [q, g.const("kept", 1.0 - cal.mixture_)])
        mixed = g.node("Add", [kept, g.const("uniform", cal.mixture_ / k)], "mixed")
        t = g.node("Log", [mixed], "log_mixed")
    else:
        top = g.reduce("ReduceMax", t)
        total = g.reduce("ReduceSum", g.node("Exp", [g.node("Sub", [t, top])]))
        t = g.node("Sub", [t, g.node("Add", [top, g.node("Log", [total])])], "log_proba")
    coef = np.asarray(cal.coef_, dtype=np.float64)
    if coef.ndim == 2:
        scaled = g.node("MatMul", [t, g.const("coef_t", np.ascontiguousarray(coef.T))])
    else:
        scaled = g.node("Mul", [t, g.const("coef", coef[None, :])])
    return g.node("Add", [scaled, g.const("intercept", np.asarray(cal.intercept_)[None, :])])


def emit_affine_scaling(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Calibrated probabilities of the float64 ``scores`` under vector, matrix,
    structured vector or structured matrix scaling: (N, K) for K columns, P(y = 1)
    (N, 1) or, with ``pair``, ``[1 - p, p]`` for one column. ``basis`` does not
    apply."""
    p = g.node("Softmax", [affine_logits(g, class_logits(g, scores, cal), cal)], "p", axis=1)
    if int(cal.n_features_in_) == 1 and not pair:
        return g.column(p, 1)
    return p
