"""ONNX converter of :class:`bernonnx.StackedCalibrator` (mirrors
``bernonnx/calibrators/stacked.py``).

On the float64 score ``s`` (N, 1), with ``logit(x) = Log(c) - Log(1 - c)``,
``c = Clip(x, EPS, 1 - EPS)``::

    t = s (input_ = "logits") | logit(s) (input_ = "proba")
    affine:     F = [t]
    beta:       r = Log(1 + Exp(Neg(Abs(t))));  F = [Min(t, 0) - r, Max(t, 0) + r]
    quadratic:  u = Clip((t - centre) / scale, -MAX, MAX);  a = Abs(u)   (MAX: float max)
                u = Where(a > 4, Sign(u) * (4 + Log(1 + Max(a - 4, 0))), u)
                uc = Min(Max(u, lo), hi);  h = ((uc - lo) * (uc - lo)) / (2 (hi - lo))
                F = [((uc - lo) - h) + Min(u - lo, 0), h + Max(u - hi, 0)]
    eta_m = (Expand(w0) + ((F_0 - mean_0) / norm_0) * w1) + ((F_1 - mean_1) / norm_1) * w2
                (a feature of slope 0 left out: it may be infinite near the float max)
    eta_m = logit(p_m(s))    (Bernstein and Venn-Abers: their own emitters' p)
    e_m = Clip(eta_m, logit(EPS), logit(1 - EPS))
    q = Sigmoid(Clip(((intercept + e_0 * weight_0) + e_1 * weight_1) + ..., -b, b))
                (b = min(logit_bound, logit(1 - EPS)): no class gets probability 0 or 1)
    pair: Concat(1 - q, q)

A member of weight 0 is left out: adding ``e * 0`` changes no sum (all of weight 0: the
first is kept, for the rows' shape).
"""

from __future__ import annotations

from bernonnx._core.increasing import FLOAT_MAX
from bernonnx.calibrators.stacked import EPS, LOGIT_HI, LOGIT_LO, MEMBERS
from bernonnx.converters._graph import GraphWriter, clipped_log_odds
from bernonnx.converters.bernstein import emit_bernstein
from bernonnx.converters.beta import sigmoid_pair, softplus_pair
from bernonnx.converters.venn_abers import emit_venn_abers


def _features(g: GraphWriter, t: str, fit) -> list[str]:
    """The parametric member's feature columns (N, 1) each, as ``features``."""
    if fit.family == "affine":
        return [t]
    # only the families that read it: an unused initializer makes onnxruntime print a
    # warning at every load of the graph
    zero = g.const("zero", 0.0)
    if fit.family == "beta":
        return list(softplus_pair(g, t, zero))
    centre, scale, lo, hi = (float(v) for v in fit.shape_)
    four = g.const("four", 4.0)
    u = g.node("Div", [g.node("Sub", [t, g.const("centre", centre)]), g.const("scale", scale)])
    u = g.node("Clip", [u, g.const("minus_max", -FLOAT_MAX), g.const("max", FLOAT_MAX)])
    a = g.node("Abs", [u])
    excess = g.node("Max", [g.node("Sub", [a, four]), zero])
    far = g.node("Add", [four, g.node("Log", [g.node("Add", [g.const("one", 1.0), excess])])])
    u = g.node(
        "Where", [g.node("Greater", [a, four]), g.node("Mul", [g.node("Sign", [u]), far]), u]
    )
    lo_c, hi_c = g.const("lo", lo), g.const("hi", hi)
    d = g.node("Sub", [g.node("Min", [g.node("Max", [u, lo_c]), hi_c]), lo_c])
    h = g.node("Div", [g.node("Mul", [d, d]), g.const("twice_width", 2.0 * (hi - lo))])
    return [
        g.node("Add", [g.node("Sub", [d, h]), g.node("Min", [g.node("Sub", [u, lo_c]), zero])]),
        g.node("Add", [h, g.node("Max", [g.node("Sub", [u, hi_c]), zero])]),
    ]


def _parametric(g: GraphWriter, t: str, fit) -> str:
    """``w0 + sum_j ((F_j - mean_j) / norm_j) * w_{j+1}``, summed left to right."""
    eta = g.node("Expand", [g.const("w0", float(fit.w_[0])), g.node("Shape", [t])])
    for j, f in enumerate(_features(g, t, fit)):
        if fit.w_[1 + j] == 0.0:
            continue  # as Python: an infinite feature times 0 would be NaN
        std = g.node(
            "Div",
            [
                g.node("Sub", [f, g.const("mean", float(fit.mean_[j]))]),
                g.const("norm", float(fit.norm_[j])),
            ],
        )
        eta = g.node("Add", [eta, g.node("Mul", [std, g.const("w", float(fit.w_[1 + j]))])])
    return eta


def emit_stacked(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair``, of the (N, 1) float64
    ``scores``. ``basis`` is the Bernstein member's basis option."""
    t = scores if cal.input_ == "logits" else clipped_log_odds(g, scores, EPS)
    lo, hi = g.const("logit_lo", LOGIT_LO), g.const("logit_hi", LOGIT_HI)
    eta = g.const("intercept", float(cal.intercept_))
    used = [i for i, weight in enumerate(cal.weights_) if weight != 0.0] or [0]
    for i in used:
        m, weight = MEMBERS[i], cal.weights_[i]
        fit = cal.members_[m]
        if m == "bernstein":
            e = clipped_log_odds(g, emit_bernstein(g, scores, fit, pair=False, basis=basis), EPS)
        elif m == "venn-abers":
            e = clipped_log_odds(g, emit_venn_abers(g, scores, fit, pair=False), EPS)
        else:
            e = _parametric(g, t, fit)
        e = g.node("Clip", [e, lo, hi], f"log_odds_{m.replace('-', '_')}")
        eta = g.node("Add", [eta, g.node("Mul", [e, g.const("weight", float(weight))])])
    bound = min(float(cal.logit_bound), LOGIT_HI)
    eta = g.node("Clip", [eta, g.const("minus_bound", -bound), g.const("bound", bound)], "eta")
    return sigmoid_pair(g, eta, pair)
