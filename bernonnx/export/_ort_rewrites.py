"""Keep onnxruntime's graph optimiser from changing what an exported graph computes.

onnxruntime rewrites every graph when it loads it (graph optimisation level basic and
above, the default of every session). Two of its rewrites change a result that is not
theirs to change:

- ``NoopElimination`` removes ``Add(x, c)``, ``Add(c, x)`` and ``Sub(x, c)`` when
  ``float(c) == 0``, and ``Mul(x, c)``, ``Mul(c, x)`` and ``Div(x, c)`` when
  ``float(c) == 1``, for a constant ``c`` of one element, ``float`` being the cast to
  float32 *also for a float64 constant*: ``x - 1e-106`` becomes ``x`` and
  ``x * (1 + 1e-9)`` becomes ``x`` in a float64 graph. ``c`` is constant when it is an
  initializer (not a graph input), a ``Constant`` node, or the output of nodes on
  constants only, which constant folding turns into an initializer first.
  (onnxruntime's ``noop_elimination.cc``. It also needs the constant's rank not above
  the other input's, and a node it can remove: one whose other input comes from a
  node, not from a graph input, and whose output is no graph output. Those two are not
  checked here: the rewrite is exact, so rewriting a node it would keep costs nothing.)
- ``DivMulFusion`` turns ``Mul(Div(1, x), y)`` into ``Div(y, x)``: one rounding fewer,
  so a different last bit (measured: 187 of 1,000 rows).

:func:`make_safe` rewrites each such node into a computation that equals it in IEEE
arithmetic and that onnxruntime leaves alone (checked against onnxruntime 1.32 at the
levels basic, extended and all):

- ``x + c`` becomes ``Sum(x, c)`` and ``x - c`` becomes ``Sum(x, -c)`` (negation is
  exact, and ``x - c`` is by definition ``x + (-c)``);
- ``x * c`` becomes ``(x * (c / 2)) * 2`` and ``x / c`` becomes ``(x / (2 c)) * 2``:
  ``c`` is within 2^-24 of 1, so ``c / 2`` and ``2 c`` are exact, and
  ``round(x c / 2) = round(x c) / 2`` while ``x c / 2`` is a normal number. The two
  differ only where ``|x c| < 2^-1021`` (next to the subnormals), by at most one
  subnormal unit, ``2^-1074`` (about 4.9e-324) in absolute value; overflow to
  infinity happens for the same ``x``. A product that small is no probability any
  graph of this library gives.
- ``Div(1, x)`` becomes ``Reciprocal(x)``, the same correctly rounded ``1 / x``.

A constant of no element cannot be rewritten (``Add`` of it is an empty tensor, and the
rewrite would give ``x``): :func:`make_safe` refuses it with a ``ValueError`` naming
the node and the constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from bernonnx.converters._graph import noop_eliminated

__all__ = ["Hazard", "find_hazards", "make_safe"]

# what constant folding never folds (onnxruntime's optimizer_utils: the ONNX domain's
# non-deterministic operators)
_RANDOM = {
    "RandomUniform",
    "RandomNormal",
    "RandomUniformLike",
    "RandomNormalLike",
    "Multinomial",
    "Dropout",
}

_ATTRIBUTE_DTYPES = {
    "value_float": np.float32,
    "value_floats": np.float32,
    "value_int": np.int64,
    "value_ints": np.int64,
}


@dataclass(frozen=True)
class Hazard:
    """A node onnxruntime would rewrite although it is not the no-op it takes it for."""

    graph: str
    node: str
    op_type: str
    constant: str  # the constant input's name
    value: float
    rule: str  # "NoopElimination" or "DivMulFusion"

    def describe(self) -> str:
        return (
            f"node {self.node!r} ({self.op_type} in graph {self.graph!r}) with the constant "
            f"{self.constant!r} = {self.value!r}: onnxruntime's {self.rule}"
        )


class _Constants:
    """The tensors of one graph that onnxruntime sees as constant, and their values."""

    def __init__(self, graph: onnx.GraphProto, outer: _Constants | None, opsets):
        self.outer = outer
        self.opsets = opsets
        # a graph input (an overridable initializer, a subgraph's own input) is no
        # constant, and hides an outer constant of its name
        self.inputs = {i.name for i in graph.input}
        self.tensors = {t.name: t for t in graph.initializer if t.name not in self.inputs}
        self.producers: dict[str, onnx.NodeProto] = {}
        self.values: dict[str, np.ndarray] = {}
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                self.producers[node.output[0]] = node
            elif self._foldable(node):
                for out in node.output:
                    self.producers[out] = node

    def _foldable(self, node: onnx.NodeProto) -> bool:
        return (
            node.domain in ("", "ai.onnx")
            and node.op_type not in _RANDOM
            and not any(a.type in (a.GRAPH, a.GRAPHS) for a in node.attribute)
            and all(self.is_constant(name) for name in node.input if name)
            and any(node.input)
        )

    def is_constant(self, name: str) -> bool:
        if name in self.tensors or name in self.producers:
            return True
        return name not in self.inputs and self.outer is not None and self.outer.is_constant(name)

    def size(self, name: str) -> int:
        """The number of elements, without reading a large initializer."""
        if name in self.tensors:
            return int(np.prod(self.tensors[name].dims, dtype=np.int64))
        return self.value(name).size if name in self.producers else self.outer.size(name)

    def value(self, name: str) -> np.ndarray:
        if name in self.values:
            return self.values[name]
        if name in self.tensors:
            value = numpy_helper.to_array(self.tensors[name])
        elif name in self.producers:
            value = self._evaluate(self.producers[name], name)
        else:
            return self.outer.value(name)
        self.values[name] = value
        return value

    def _evaluate(self, node: onnx.NodeProto, name: str) -> np.ndarray:
        if node.op_type == "Constant":
            attr = node.attribute[0]
            if attr.name == "value":
                return numpy_helper.to_array(attr.t)
            # value_float(s) are float32 tensors, value_int(s) int64; a sparse or string
            # value meets no arithmetic rewrite
            dtype = _ATTRIBUTE_DTYPES.get(attr.name, object)
            if dtype is object:
                return np.empty((2,), dtype=object)
            return np.asarray(helper.get_attribute_value(attr), dtype=dtype)
        from onnx.reference import ReferenceEvaluator

        feeds = {i: self.value(i) for i in node.input if i}
        outputs = ReferenceEvaluator(node, opsets=self.opsets).run(None, feeds)
        return np.asarray(outputs[list(node.output).index(name)])


def _constant_operand(node: onnx.NodeProto, consts: _Constants) -> int | None:
    """The index of the input onnxruntime's rewrites would read as the constant."""
    if node.domain not in ("", "ai.onnx") or len(node.input) != 2:
        return None
    first, second = (consts.is_constant(name) for name in node.input)
    if first == second:
        return None
    if node.op_type in ("Add", "Mul"):
        return 0 if first else 1
    if node.op_type in ("Sub", "Div") and second:
        return 1
    if node.op_type == "Div" and first:
        return 0
    return None


def _rule(node: onnx.NodeProto, index: int, value: np.ndarray) -> str | None:
    """Which rewrite would change ``node``, whose input ``index`` is the constant ``value``."""
    if node.op_type == "Div" and index == 0:
        # only float64: onnxruntime's float32 Reciprocal may not round as 1 / x does
        one = value.size == 1 and value.dtype == np.float64 and value.ravel()[0] == 1
        return "DivMulFusion" if one else None
    if value.size == 0:
        return "NoopElimination"
    if value.size > 1 or value.dtype != np.float64:
        # a float32, float16 or integer constant is compared as it is: a true no-op
        return None
    return "NoopElimination" if noop_eliminated(node.op_type, float(value.ravel()[0])) else None


def _hazards_of(graph: onnx.GraphProto, consts: _Constants) -> list[tuple[Hazard, int]]:
    found = []
    for position, node in enumerate(graph.node):
        index = _constant_operand(node, consts)
        if index is None:
            continue
        name = node.input[index]
        if consts.size(name) > 1:
            continue
        value = consts.value(name)
        rule = _rule(node, index, value)
        if rule is None:
            continue
        shown = float(value.ravel()[0]) if value.size else float("nan")
        found.append((Hazard(graph.name, node.name, node.op_type, name, shown, rule), position))
    return found


def _subgraphs(node: onnx.NodeProto):
    for attr in node.attribute:
        if attr.type == attr.GRAPH:
            yield attr.g
        elif attr.type == attr.GRAPHS:
            yield from attr.graphs


def _walk(graph: onnx.GraphProto, outer: _Constants | None, opsets):
    """Every graph and subgraph with its constants, outermost first."""
    consts = _Constants(graph, outer, opsets)
    yield graph, consts
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _walk(sub, consts, opsets)


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {entry.domain: entry.version for entry in model.opset_import}


def find_hazards(model: onnx.ModelProto) -> list[Hazard]:
    """Every node of ``model`` (subgraphs included) that onnxruntime's ``NoopElimination``
    or ``DivMulFusion`` would change although it is not a no-op."""
    _check_model(model)
    return [
        hazard
        for graph, consts in _walk(model.graph, None, _opsets(model))
        for hazard, _ in _hazards_of(graph, consts)
    ]


def _check_model(model) -> None:
    if not isinstance(model, onnx.ModelProto):
        raise ValueError(
            "model must be an onnx.ModelProto (make_safe rewrites it in place: onnx.load "
            f"a file first, onnx.save it after), got {type(model).__name__}"
        )


class _Names:
    def __init__(self, model: onnx.ModelProto):
        self.taken = set()
        for graph, _ in _walk(model.graph, None, {}):
            self.taken.update(t.name for t in graph.initializer)
            self.taken.update(i.name for i in graph.input)
            for node in graph.node:
                self.taken.update([node.name, *node.input, *node.output])

    def __call__(self, base: str) -> str:
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name


def _scaled(graph, consts, name: str, factor: float, names: _Names) -> tuple[str, list]:
    """``factor * c`` (exact: ``factor`` is -1 or a power of two) and the nodes computing
    it: a new initializer, or for a constant onnxruntime folds a ``Mul`` it folds in turn
    (so the value is the one its folding computes)."""
    value = consts.value(name)
    new = names(f"{name}_times_{factor:g}".replace("-", "minus"))
    producer = consts.producers.get(name)
    if producer is None or producer.op_type == "Constant":
        graph.initializer.append(numpy_helper.from_array(value * value.dtype.type(factor), new))
        return new, []
    scale = names(f"{name}_factor")
    graph.initializer.append(numpy_helper.from_array(np.array(factor, value.dtype), scale))
    return new, [helper.make_node("Mul", [name, scale], [new], name=names(new))]


def _rewrite(graph, consts, hazard: Hazard, node: onnx.NodeProto, names: _Names) -> list:
    """The nodes replacing ``node``, in order."""
    outputs, name = list(node.output), node.name
    if hazard.rule == "DivMulFusion":
        return [helper.make_node("Reciprocal", [node.input[1]], outputs, name=name)]
    index = list(node.input).index(hazard.constant)
    x, c = node.input[1 - index], hazard.constant
    if node.op_type == "Add":
        return [helper.make_node("Sum", [x, c], outputs, name=name)]
    if node.op_type == "Sub":
        minus, nodes = _scaled(graph, consts, c, -1.0, names)
        return [*nodes, helper.make_node("Sum", [x, minus], outputs, name=name)]
    scaled, nodes = _scaled(graph, consts, c, 0.5 if node.op_type == "Mul" else 2.0, names)
    two = names(f"{c}_two")
    graph.initializer.append(numpy_helper.from_array(np.array(2.0), two))
    half = names(f"{outputs[0]}_halved")
    return [
        *nodes,
        helper.make_node(node.op_type, [x, scaled], [half], name=names(f"{name}_halved")),
        helper.make_node("Mul", [half, two], outputs, name=name),
    ]


def _drop_unused(graph: onnx.GraphProto, names: set[str]) -> None:
    """Remove the initializers among ``names`` that no node (subgraphs included) reads."""
    read = {o.name for o in graph.output}
    for sub, _ in _walk(graph, None, {}):
        read.update(name for node in sub.node for name in node.input)
    kept = [t for t in graph.initializer if t.name not in names or t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def make_safe(model: onnx.ModelProto) -> list[Hazard]:
    """Rewrite, in place, every node onnxruntime's graph optimiser would change although
    it is no no-op, into an equal computation it keeps; returns what was rewritten.

    :func:`bernonnx.to_onnx` and :func:`bernonnx.attach` run it on every graph they
    return. A graph made by a plain ``skl2onnx.to_onnx`` (with
    ``bernonnx.converters.register_converters``) needs it too: skl2onnx's own
    converters of the base model's steps can write such nodes. The nodes: ``x + c``
    and ``x - c`` with a one-element float64 constant ``c`` that float32 rounds to 0,
    ``x * c`` and ``x / c`` with one it rounds to 1 (onnxruntime's ``NoopElimination``
    compares in float32 and removes them), and ``Div(1, x)`` (its ``DivMulFusion``
    rounds once fewer). They become ``Sum(x, c)``, ``Sum(x, -c)``,
    ``(x * (c / 2)) * 2``, ``(x / (2 c)) * 2`` and ``Reciprocal(x)``: equal in IEEE
    arithmetic, except that a product below 2^-1021 in magnitude may differ by one
    subnormal unit (``2^-1074``).

    Examples
    --------
    A float64 graph that multiplies by ``1 + 1e-9``, which onnxruntime would drop:

    >>> import numpy as np
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> from bernonnx.export import make_safe
    >>> x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None])
    >>> y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None])
    >>> c = numpy_helper.from_array(np.array([1 + 1e-9]), "c")
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", ["e", "c"], ["y"])],
    ...     "g", [x], [y], [c])
    >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    >>> [(h.op_type, h.rule) for h in make_safe(model)]
    [('Mul', 'NoopElimination')]
    >>> [node.op_type for node in model.graph.node]
    ['Exp', 'Mul', 'Mul']

    Raises
    ------
    ValueError
        ``model`` that is no ``onnx.ModelProto``, or a constant of no element, which
        has no such rewrite (names the node and the constant).
    """
    _check_model(model)
    opsets = _opsets(model)
    names = _Names(model)
    done = []
    for graph, consts in list(_walk(model.graph, None, opsets)):
        found = _hazards_of(graph, consts)
        for hazard, _ in found:
            if not consts.value(hazard.constant).size:
                raise ValueError(
                    f"the exported graph has {hazard.describe()} would remove it, and a "
                    "constant of no element has no equal computation it keeps"
                )
        if not found:
            continue
        at = {position: hazard for hazard, position in found}
        rebuilt = []
        for position, node in enumerate(graph.node):
            hazard = at.get(position)
            rebuilt.extend(
                [node] if hazard is None else _rewrite(graph, consts, hazard, node, names)
            )
        del graph.node[:]
        graph.node.extend(rebuilt)
        _drop_unused(graph, {hazard.constant for hazard, _ in found})
        done.extend(hazard for hazard, _ in found)
    left = find_hazards(model)
    if left:
        raise RuntimeError(f"bernonnx left {left[0].describe()}: please report this graph")
    return done
