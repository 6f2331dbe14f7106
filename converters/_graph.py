"""Small helpers to emit ONNX nodes and constants from a skl2onnx converter.

Every calibrator subgraph computes in float64 (``DOUBLE``) whatever the graph's
input dtype: the probability then differs from scikit-learn's float64
computation only by the final rounding to float32, and binomial coefficients
cannot overflow (float32 overflows from C(132, 66)).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx._core.transforms import exponent_factors

DOUBLE = TensorProto.DOUBLE
FLOAT = TensorProto.FLOAT
_NUMPY = {
    DOUBLE: np.float64,
    FLOAT: np.float32,
    TensorProto.INT64: np.int64,
    TensorProto.UINT8: np.uint8,
}

#: Minimum ai.onnx opset the emitted nodes need (Clip with tensor bounds,
#: ReduceSum with axes as an input); the converters refuse a lower target.
MIN_OPSET = 13


def check_opset(container, what: str) -> None:
    """Raise if the conversion targets an ai.onnx opset below :data:`MIN_OPSET`."""
    opset = container.target_opset
    if opset is not None and opset < MIN_OPSET:
        raise ValueError(
            f"target_opset {opset} is too low to export {what}: bernonnx's converters "
            f"need ai.onnx opset {MIN_OPSET} or later"
        )


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


def clipped_log_odds(g: GraphWriter, p: str, eps: float) -> str:
    """``log(c) - log(1 - c)`` with ``c = Clip(p, eps, 1 - eps)``: the log-odds of
    ``bernonnx._core.transforms.clipped_log_odds`` (``Log(1 - c)`` stands for its
    ``log1p(-c)``; ONNX has no log1p). Platt's ``log_odds=True`` and the
    ``CalibratedClassifier`` / ``FusionClassifier`` ``log_odds`` option share it."""
    c = g.node("Clip", [p, g.const("eps", eps), g.const("1meps", 1.0 - eps)])
    q = g.node("Sub", [g.const("one", 1.0), c])
    return g.node("Sub", [g.node("Log", [c]), g.node("Log", [q])], "logit")


def rescale_scores(g: GraphWriter, s: str, exponent) -> str:
    """``s * 2^exponent`` as ``bernonnx._core.transforms.rescale`` computes it: two
    exact power-of-two ``Mul`` nodes (one factor per column for a vector
    ``exponent``); ``s`` itself when every exponent is 0."""
    exponent = np.atleast_1d(np.asarray(exponent, dtype=np.int64))
    if not exponent.any():
        return s
    first, second = np.array([exponent_factors(int(e)) for e in exponent]).T
    s = g.node("Mul", [s, g.const("pow2_first", first[None, :])])
    return g.node("Mul", [s, g.const("pow2_second", second[None, :])], "rescaled")
