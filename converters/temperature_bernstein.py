"""ONNX converter of :class:`bernonnx.TemperatureBernsteinCalibrator` (mirrors
``bernonnx/calibrators/temperature_bernstein.py``).

On the float64 scores ``s`` (N, K), or the log-odds (N, 1) of a binary one::

    z = s  |  Log(Max(s, eps))  (input="proba")
        |  Max(-(Relu(-s) + Log(1 + Exp(-|s|))), log(eps))  (input="log_odds")
    one column: z = Concat(0, s | clipped log-odds of s)
    scaling="sms": z = SMS's calibrated logits of z (``temperature.affine_logits``)
    t = Mul(z, beta)
    identity, temperature:  p = Softmax(t, axis=1)
    bernstein:  l = t - logsumexp over the other columns (two columns: [-d, d], d = t_1 - t_0)
                q_k = Bernstein emitter of column k of l;  p = q / sum_k q_k (uniform if 0)
    one column, pair=False: column 1 of p
"""

from __future__ import annotations

from bernonnx.converters._graph import GraphWriter
from bernonnx.converters.bernstein import emit_bernstein
from bernonnx.converters.exact_models import one_vs_rest_log_odds
from bernonnx.converters.temperature import affine_logits, class_logits


def emit_temperature_bernstein(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Calibrated probabilities of the float64 ``scores``: (N, K) for K columns,
    P(y = 1) (N, 1) or, with ``pair``, ``[1 - p, p]`` for one column."""
    n_classes = len(cal.classes_)
    z = class_logits(g, scores, cal)
    if cal.scaling_ is not None:
        z = affine_logits(g, z, cal.scaling_)
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
