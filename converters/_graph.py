"""Small helpers to emit ONNX nodes and constants from a skl2onnx converter.

Every calibrator subgraph computes in float64 (``DOUBLE``) whatever the graph's
input dtype: the probability then differs from scikit-learn's float64
computation only by the final rounding to float32, and binomial coefficients
cannot overflow (float32 overflows from C(132, 66)).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from bernonnx._core.transforms import exponent_factors

DOUBLE = TensorProto.DOUBLE
FLOAT = TensorProto.FLOAT
_NUMPY = {
    DOUBLE: np.float64,
    FLOAT: np.float32,
    TensorProto.INT64: np.int64,
    TensorProto.UINT8: np.uint8,
    TensorProto.BOOL: np.bool_,
}

#: The nodes :meth:`GraphWriter._kept` writes so that onnxruntime keeps them.
_KEPT = {"Add", "Sub", "Mul", "Div"}


def noop_eliminated(op_type: str, value: float) -> bool:
    """Whether onnxruntime's ``NoopElimination`` removes ``op_type`` (Add, Sub, Mul, Div)
    of ``x`` and a one-element float64 constant ``value`` that is no neutral element:
    it casts the constant to float32 before comparing it with 0 (Add, Sub) or 1 (Mul,
    Div). The rule of :meth:`GraphWriter._kept` and of
    ``bernonnx.export.make_safe``."""
    neutral = 0.0 if op_type in ("Add", "Sub") else 1.0
    with np.errstate(over="ignore"):
        return value != neutral and np.float32(value) == neutral


def _scalars(container) -> dict:
    """The one-element float64 constants written into ``container``: name to
    (value, shape)."""
    if not hasattr(container, "_bernonnx_scalars"):
        container._bernonnx_scalars = {}
    return container._bernonnx_scalars


def text_token(value) -> str:
    """What a string graph input holds for ``value``: a string as it is, a missing value
    as a token no string from ``read_csv`` holds (``"\\x00nan"`` for NaN,
    ``"\\x00None"``, ``"\\x00<NA>"``), so that the string ``"nan"`` and NaN stay two
    categories, as they are for scikit-learn."""
    if isinstance(value, str):
        return value
    if value is None:
        return "\x00None"
    if isinstance(value, float | np.floating) and np.isnan(value):
        return "\x00nan"
    return f"\x00{value}"


def text_tokens(values) -> np.ndarray:
    """:func:`text_token` of every value of a 1-D array or Series (object array)."""
    import pandas as pd

    out = np.asarray(values, dtype=object).copy()
    missing = np.flatnonzero(pd.isna(out))
    for i in missing:
        out[i] = text_token(out[i])
    return out


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
        if dtype == DOUBLE and len(flat) == 1:
            _scalars(self.container)[unique] = (flat[0], shape)
        return unique

    def node(
        self, op_type: str, inputs: list[str], name: str | None = None, outputs=None, **attrs
    ) -> str:
        """One node; returns the name of its output, a new one unless ``outputs`` (a
        list of names, for several outputs) is given."""
        out = outputs or self.scope.get_unique_variable_name(
            f"{self.prefix}_{name or op_type.lower()}"
        )
        if op_type in _KEPT and not attrs:
            op_type, inputs = self._kept(op_type, list(inputs))
        self.container.add_node(
            op_type,
            inputs,
            out,
            name=self.scope.get_unique_operator_name(f"{self.prefix}_{op_type}"),
            **attrs,
        )
        return out

    def _plain(self, op_type: str, inputs: list[str]) -> str:
        """One node as given (the parts :meth:`_kept` writes)."""
        out = self.scope.get_unique_variable_name(f"{self.prefix}_{op_type.lower()}")
        name = self.scope.get_unique_operator_name(f"{self.prefix}_{op_type}")
        self.container.add_node(op_type, inputs, out, name=name)
        return out

    def _kept(self, op_type: str, inputs: list[str]) -> tuple[str, list[str]]:
        """``op_type`` on ``inputs`` as a node onnxruntime's optimiser keeps as it is.

        onnxruntime drops ``x + c`` and ``x - c`` when a one-element constant ``c`` is 0
        once cast to float32, and ``x * c``, ``x / c`` when it is 1, also in float64
        graphs, and fuses ``Div(1, x)`` into a following ``Mul`` with one rounding fewer
        (see ``bernonnx.export._ort_rewrites``, which ``to_onnx`` and ``attach`` run
        on whole graphs). Here, for this writer's own float64 constants, the node is
        written as an equal computation from the start, so that a graph made by a plain
        ``skl2onnx.to_onnx`` with the registered converters is safe too: ``x + c`` as
        ``Sum(x, c)``, ``x - c`` as ``Sum(x, -c)``, ``x * c`` as ``(x * (c / 2)) * 2``,
        ``x / c`` as ``(x / (2 c)) * 2`` (exact away from subnormal products) and
        ``Div(1, x)`` as ``Reciprocal(x)``.
        """
        scalars = _scalars(self.container)
        value = [scalars.get(name) for name in inputs]
        if len(inputs) != 2 or value == [None, None]:
            return op_type, inputs
        hit = [v is not None and noop_eliminated(op_type, v[0]) for v in value]
        if op_type == "Add" and any(hit):
            return "Sum", inputs
        # c / 2, 2 c and -c are computed from c by a node (exact; onnxruntime folds it
        # into a constant), so that c stays in use: an unused initializer makes
        # onnxruntime print a warning when the graph loads
        if op_type == "Sub" and hit[1]:
            return "Sum", [inputs[0], self._plain("Neg", [inputs[1]])]
        if op_type == "Mul" and any(hit):
            k = 1 if hit[1] else 0
            half = self._plain("Mul", [inputs[k], self.const("half", 0.5, shape=value[k][1])])
            part = self._plain("Mul", [inputs[1 - k], half])
            return "Mul", [part, self.const("two", 2.0, shape=value[k][1])]
        if op_type == "Div" and hit[1]:
            twice = self._plain("Mul", [inputs[1], self.const("two", 2.0, shape=value[1][1])])
            part = self._plain("Div", [inputs[0], twice])
            return "Mul", [part, self.const("two", 2.0, shape=value[1][1])]
        if op_type == "Div" and value[0] is not None and value[0][0] == 1.0:
            return "Reciprocal", [inputs[1]]
        return op_type, inputs

    def reduce(self, op: str, x: str, axis: int = 1, keepdims: int = 1) -> str:
        """``op`` (ReduceSum, ReduceMax, ReduceMin) over ``axis``: ReduceSum has
        taken its axes as an input since opset 13, the others since opset 18."""
        if op == "ReduceSum" or self.container.target_opset >= 18:
            axes = self.const("axes", [axis], TensorProto.INT64)
            return self.node(op, [x, axes], keepdims=keepdims)
        return self.node(op, [x], axes=[axis], keepdims=keepdims)

    def in_row_blocks(self, x: str, emit, rows: int, width: int, elem: int = DOUBLE) -> str:
        """``emit(writer, x)`` on blocks of ``rows`` rows of ``x`` at a time, (N, width)
        of type ``elem``.

        A Loop runs ``emit`` on each full block (its nodes written into the Loop's
        body by a :class:`BodyWriter`), and ``emit`` runs once more on the last
        ``N mod rows`` rows; the results are stacked in row order. Each row's result is
        the one ``emit`` gives on all rows at once whenever its operations compute row
        by row. Why: a block's intermediates stay in cache where the whole batch's
        (N, thousands) intermediates would stream through memory at every node.
        """
        i64 = TensorProto.INT64
        n = self.node("Gather", [self.node("Shape", [x]), self.const("zero", [0], i64)])
        per_block = self.const("rows", [rows], i64)
        n_blocks = self.node("Div", [n, per_block])
        full = self.node("Mul", [n_blocks, per_block])
        body = BodyWriter(self)
        step, cond = (
            self.scope.get_unique_variable_name(f"{self.prefix}_{v}") for v in ("step", "cond")
        )
        start = body.node(
            "Unsqueeze",
            [
                body.node("Mul", [step, body.const("rows", rows, i64, [])]),
                body.const("axis0", [0], i64),
            ],
        )
        end = body.node("Add", [start, body.const("rows", [rows], i64)])
        block = emit(body, body.node("Slice", [x, start, end, body.const("axis0", [0], i64)]))
        cond_out = body.node("Identity", [cond])
        graph = helper.make_graph(
            body.nodes,
            self.scope.get_unique_operator_name(f"{self.prefix}_block_body"),
            [
                helper.make_tensor_value_info(step, i64, []),
                helper.make_tensor_value_info(cond, TensorProto.BOOL, []),
            ],
            [
                helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
                helper.make_tensor_value_info(block, elem, [rows, width]),
            ],
            body.initializers,
        )
        trips = self.node("Squeeze", [n_blocks, self.const("zero", [0], i64)])
        always = self.const("true", True, TensorProto.BOOL, [])
        blocks = self.node("Loop", [trips, always], body=graph)
        blocks = self.node("Reshape", [blocks, self.const("flat", [-1, width], i64)])
        last = self.node(
            "Slice", [x, full, self.const("end", [2**62], i64), self.const("zero", [0], i64)]
        )
        return self.node("Concat", [blocks, emit(self, last)], axis=0)

    def if_else(self, cond: str, then_emit, else_emit, elem: int = DOUBLE, shape=None) -> str:
        """``then_emit(writer)`` where the boolean scalar ``cond`` holds, else
        ``else_emit(writer)``: an ``If`` node, each branch a subgraph written by a
        :class:`BodyWriter` (which reads this graph's tensors by name). Only the
        branch taken runs, so its nodes alone cost time."""
        branches = {}
        for key, emit in (("then_branch", then_emit), ("else_branch", else_emit)):
            body = BodyWriter(self)
            out = emit(body)
            branches[key] = helper.make_graph(
                body.nodes,
                self.scope.get_unique_operator_name(f"{self.prefix}_{key}"),
                [],
                [helper.make_tensor_value_info(out, elem, shape)],
                body.initializers,
            )
        return self.node("If", [cond], **branches)

    def to_double(self, name: str) -> str:
        return self.node("Cast", [name], "double", to=DOUBLE)

    def column(self, name: str, index: int) -> str:
        """Column ``index`` of an (N, K) tensor as (N, 1)."""
        return self.node("Gather", [name, self.const("col", [index], TensorProto.INT64)], axis=1)


class BodyWriter(GraphWriter):
    """A :class:`GraphWriter` whose nodes and constants make a subgraph (a Loop's
    body): :attr:`nodes` and :attr:`initializers`, names unique in the whole model."""

    def __init__(self, g: GraphWriter):
        super().__init__(g.scope, g.container, g.prefix)
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, values, dtype=DOUBLE, shape=None) -> str:
        arr = np.asarray(values).astype(_NUMPY[dtype])
        arr = arr.reshape(arr.shape if shape is None else shape)
        unique = self.scope.get_unique_variable_name(f"{self.prefix}_{name}")
        self.initializers.append(numpy_helper.from_array(arr, unique))
        return unique

    def node(
        self, op_type: str, inputs: list[str], name: str | None = None, outputs=None, **attrs
    ) -> str:
        out = outputs or self.scope.get_unique_variable_name(
            f"{self.prefix}_{name or op_type.lower()}"
        )
        op_name = self.scope.get_unique_operator_name(f"{self.prefix}_{op_type}")
        listed = out if isinstance(out, list) else [out]
        self.nodes.append(helper.make_node(op_type, inputs, listed, name=op_name, **attrs))
        return out


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
