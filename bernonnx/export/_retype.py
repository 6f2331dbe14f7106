"""The graph's interface types: a graph built for one float type, declared with the other.

``to_onnx(..., dtype=...)`` builds the graph in the type the data need and, where the
caller asks for the other, retypes its float inputs and probabilities here: each input is
cast back at once by a first node, so the computation inside is the one that was checked.
"""

from __future__ import annotations

import onnx


def retype_inputs(onx: onnx.ModelProto, inside: int, outside: int) -> None:
    """Graph inputs of element type ``inside`` declared ``outside`` instead, each cast
    back to ``inside`` by a first node (``<input>_float32`` or ``<input>_float64``)."""
    suffix = "float32" if inside == onnx.TensorProto.FLOAT else "float64"
    casts = []
    defaults = {t.name for t in onx.graph.initializer}  # ``priors``: float64 always
    for graph_input in onx.graph.input:
        tensor = graph_input.type.tensor_type
        if tensor.elem_type != inside or graph_input.name in defaults:
            continue
        inner = f"{graph_input.name}_{suffix}"
        for node in onx.graph.node:
            for i, name in enumerate(node.input):
                if name == graph_input.name:
                    node.input[i] = inner
        casts.append(
            onnx.helper.make_node(
                "Cast", [graph_input.name], [inner], to=inside, name=f"{inner}_cast"
            )
        )
        tensor.elem_type = outside
    for cast in reversed(casts):
        onx.graph.node.insert(0, cast)


def widen_to_float64(onx: onnx.ModelProto) -> None:
    """A float32 graph's float inputs and probabilities made float64: each input is
    cast to float32 at once (exact for the float32 data it was built for), and the
    float64 probabilities are no longer rounded to float32 at the end."""
    float32, float64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    retype_inputs(onx, float32, float64)
    for output in onx.graph.output:
        if output.name == "probabilities":
            output.type.tensor_type.elem_type = float64
            for node in onx.graph.node:
                if "probabilities" in node.output and node.op_type == "Cast":
                    for attribute in node.attribute:
                        if attribute.name == "to":
                            attribute.i = float64


def narrow_to_float32(onx: onnx.ModelProto) -> None:
    """A float64 graph given float32 inputs and probabilities: each input is cast to
    float64 at once (exact: every float32 is a float64), so the graph computes what
    scikit-learn computes on those values in float64; the probabilities are rounded
    to float32 at the end."""
    float32, float64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    retype_inputs(onx, float64, float32)
    for output in onx.graph.output:
        tensor = output.type.tensor_type
        if output.name != "probabilities" or tensor.elem_type != float64:
            continue
        inner = "probabilities_float64"
        for node in onx.graph.node:
            for i, name in enumerate(node.output):
                if name == output.name:
                    node.output[i] = inner
        onx.graph.node.append(
            onnx.helper.make_node(
                "Cast", [inner], [output.name], to=float32, name="probabilities_float32_cast"
            )
        )
        tensor.elem_type = float32
