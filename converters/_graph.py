"""Small helpers to emit ONNX nodes and constants from a skl2onnx converter.

Every calibrator subgraph computes in float64 (``DOUBLE``) whatever the graph's
input dtype: the probability then differs from scikit-learn's float64
computation only by the final rounding to float32, and binomial coefficients
cannot overflow (float32 overflows from C(132, 66)).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

DOUBLE = TensorProto.DOUBLE
FLOAT = TensorProto.FLOAT
_NUMPY = {
    DOUBLE: np.float64,
    FLOAT: np.float32,
    TensorProto.INT64: np.int64,
    TensorProto.UINT8: np.uint8,
}

#: Minimum ai.onnx opset the emitted nodes need (Clip with tensor bounds,
#: ReduceSum with axes as an input).
MIN_OPSET = 13


class GraphWriter:
    """Emit nodes and initializers with unique names under one prefix."""

    def __init__(self, scope, container, prefix: str):
        self.scope = scope
        self.container = container
        self.prefix = prefix

    def const(self, name: str, values, dtype=DOUBLE, shape=None) -> str:
        """An initializer holding ``values`` (float64 unless ``dtype`` says otherwise).

        FLOAT constants are ``values`` rounded to nearest float32, as numpy's
        ``astype(np.float32)`` rounds them.
        """
        arr = np.asarray(values)
        shape = list(arr.shape) if shape is None else list(shape)
        unique = self.scope.get_unique_variable_name(f"{self.prefix}_{name}")
        if dtype == TensorProto.STRING:
            flat = [str(v).encode("utf-8") for v in arr.ravel()]
        else:
            flat = arr.astype(_NUMPY[dtype]).ravel().tolist()
        self.container.add_initializer(unique, dtype, shape, flat)
        return unique

    def node(self, op_type: str, inputs: list[str], name: str | None = None, **attrs) -> str:
        """One node with one output; returns the output name."""
        out = self.scope.get_unique_variable_name(f"{self.prefix}_{name or op_type.lower()}")
        self.container.add_node(
            op_type,
            inputs,
            out,
            name=self.scope.get_unique_operator_name(f"{self.prefix}_{op_type}"),
            **attrs,
        )
        return out

    def reduce(self, op: str, x: str, axis: int = 1, keepdims: int = 1) -> str:
        """``op`` (ReduceSum, ReduceMax, ReduceMin) over ``axis``: ReduceSum has
        taken its axes as an input since opset 13, the others since opset 18."""
        if op == "ReduceSum" or self.container.target_opset >= 18:
            axes = self.const("axes", [axis], TensorProto.INT64)
            return self.node(op, [x, axes], keepdims=keepdims)
        return self.node(op, [x], axes=[axis], keepdims=keepdims)

    def to_double(self, name: str) -> str:
        return self.node("Cast", [name], "double", to=DOUBLE)

    def column(self, name: str, index: int) -> str:
        """Column ``index`` of an (N, K) tensor as (N, 1)."""
        return self.node("Gather", [name, self.const("col", [index], TensorProto.INT64)], axis=1)
