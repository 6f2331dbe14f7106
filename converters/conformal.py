"""The prediction-set stage of :class:`bernonnx.ConformalClassifier` (mirrors
``bernonnx/conformal/``), appended to the wrapped model's graph.

The wrapped model is exported as it always is (``to_onnx`` or ``attach``); every
bernonnx classifier graph computes its probabilities in float64 and casts them last
(``_classifier.write_outputs``). This stage reads that float64 tensor, the input of the
last ``Cast``, so the sets are decided on the probabilities Python decides on, whatever
the graph's float type::

    p (N, K) float64
    LAC:   score = Sub(1, p)
    APS:   above = Greater(Sub(p_j, p_k), tie)            (N, K, K): j above k
           mass  = ReduceSum(Where(above, p_j, 0), axis 2)
           score = mass                                   deterministic (u = 1)
                 = Sub(Add(mass, p), Mul(u, p))           randomised, u: input ``uniforms``
    RAPS:  rank  = 1 + ReduceSum(Cast(above), axis 2)
           score = Add(score, Mul(lam, Max(Sub(rank, k_reg), 0)))
    prediction_set = LessOrEqual(score, threshold_)       (N, K) bool

These are ``lac.class_scores``, ``aps.class_scores`` and ``raps.class_scores``,
operation for operation; ``threshold_`` keeps ``tie`` away from every conformalization
score, so a probability a few ulps off Python's decides no row the other way.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["SET_OUTPUT", "UNIFORMS_INPUT", "add_prediction_set", "float64_probabilities"]

#: The graph's boolean (N, n_classes) output.
SET_OUTPUT = "prediction_set"
#: The randomised sets' per-row uniform draws, double (N,).
UNIFORMS_INPUT = "uniforms"


def float64_probabilities(graph: onnx.GraphProto, output: str = "probabilities") -> str:
    """The float64 tensor the ``output`` probabilities are cast from."""
    for node in graph.node:
        if output in node.output and node.op_type == "Cast":
            return node.input[0]
    raise NotImplementedError(
        f"the graph's {output!r} output is not the Cast of a float64 tensor (a ZipMap? a "
        "graph not written by bernonnx?): the prediction sets need the float64 probabilities"
    )


class _Writer:
    """Nodes and float64 constants with names no tensor of ``graph`` has."""

    def __init__(self, graph: onnx.GraphProto, prefix: str):
        taken = {name for node in graph.node for name in (*node.input, *node.output)}
        taken |= {t.name for t in graph.initializer} | {i.name for i in graph.input}
        while any(name.startswith(prefix) for name in taken):
            prefix = f"{prefix}_"
        self.graph, self.prefix, self.count = graph, prefix, 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{self.prefix}{hint}_{self.count}"

    def const(self, hint: str, value, dtype=np.float64) -> str:
        name = self.name(hint)
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(self, op: str, inputs: list[str], hint: str, output: str | None = None, **attrs):
        out = output or self.name(hint)
        self.graph.node.append(
            helper.make_node(op, inputs, [out], name=self.name(f"{hint}_node"), **attrs)
        )
        return out


def _aps_parts(w: _Writer, p: str, model):
    """The mass above each class and, for RAPS, each class's rank, (N, K) float64."""
    pj = w.node("Unsqueeze", [p, w.const("axis1", [1], np.int64)], "p_j")
    pk = w.node("Unsqueeze", [p, w.const("axis2", [2], np.int64)], "p_k")
    above = w.node("Greater", [w.node("Sub", [pj, pk], "diff"), w.const("tie", model.tie)], "gt")
    kept = w.node("Where", [above, pj, w.const("zero", 0.0)], "kept")
    axis = w.const("reduce_axis", [2], np.int64)
    mass = w.node("ReduceSum", [kept, axis], "mass", keepdims=0)
    if model.score != "raps":
        return mass, None
    counted = w.node("Cast", [above], "above_double", to=TensorProto.DOUBLE)
    count = w.node("ReduceSum", [counted, axis], "count", keepdims=0)
    return mass, w.node("Add", [w.const("one", 1.0), count], "rank")


def add_prediction_set(onx: onnx.ModelProto, model, output: str = "probabilities") -> None:
    """Append the prediction-set stage of the fitted ``model`` (a
    ``ConformalClassifier``) to ``onx``, in place: the output ``prediction_set`` and,
    for randomised sets, the input ``uniforms``."""
    graph = onx.graph
    names = {o.name for o in graph.output} | {i.name for i in graph.input}
    for reserved in (SET_OUTPUT, UNIFORMS_INPUT):
        if reserved in names:
            raise ValueError(f"the graph already has a tensor named {reserved!r}")
    p = float64_probabilities(graph, output)
    w = _Writer(graph, "conformal_")
    if model.score == "lac":
        score = w.node("Sub", [w.const("one", 1.0), p], "lac")
    else:
        mass, rank = _aps_parts(w, p, model)
        score = mass
        if model.randomized:
            graph.input.append(
                helper.make_tensor_value_info(UNIFORMS_INPUT, TensorProto.DOUBLE, [None])
            )
            u = w.node("Unsqueeze", [UNIFORMS_INPUT, w.const("axis1", [1], np.int64)], "u")
            own = w.node("Mul", [u, p], "u_p")
            score = w.node("Sub", [w.node("Add", [mass, p], "mass_p"), own], "aps")
        if rank is not None:
            excess = w.node("Sub", [rank, w.const("k_reg", float(model.k_reg_))], "excess")
            clipped = w.node("Max", [excess, w.const("zero", 0.0)], "clipped")
            penalty = w.node("Mul", [w.const("lam", model.lam_), clipped], "penalty")
            score = w.node("Add", [score, penalty], "raps")
    threshold = w.const("threshold", np.asarray(model.threshold_, np.float64)[None, :])
    w.node("LessOrEqual", [score, threshold], "set", output=SET_OUTPUT)
    n_classes = len(model.classes_)
    graph.output.append(
        helper.make_tensor_value_info(SET_OUTPUT, TensorProto.BOOL, [None, n_classes])
    )
