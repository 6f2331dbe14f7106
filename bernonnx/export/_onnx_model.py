"""The ONNX model :func:`bernonnx.attach` is given, read and checked before anything is built.

Its graphs, control-flow subgraphs included (:func:`_subgraphs`); the tensors whose data
were left in external files that were not loaded; the types of its outputs, completed by
ONNX shape inference where the graph leaves them out; the score output, its float type
and shape, and how the calibrator reads it (:func:`_adapter`); and, when the merged graph
fails the ONNX checker, whether the model itself fails it. Bad input gets a
``ValueError`` that names the argument.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import TensorProto

_FLOATS = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64}


def _subgraphs(graph: onnx.GraphProto) -> Iterable[onnx.GraphProto]:
    """``graph`` and every subgraph of its control-flow nodes, recursively."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                yield from _subgraphs(sub)


def _external_tensors(graph: onnx.GraphProto) -> list[onnx.TensorProto]:
    """The tensors of ``graph`` (subgraphs included) whose data are in an external file
    that was not loaded (``onnx.load`` loads it and marks the tensor as inline)."""
    found = []
    for g in _subgraphs(graph):
        tensors = list(g.initializer)
        for node in g.node:
            for attribute in node.attribute:
                tensors.extend([attribute.t] if attribute.HasField("t") else attribute.tensors)
        found.extend(t for t in tensors if t.data_location == TensorProto.EXTERNAL)
    return found


def _check_external_data(model: onnx.ModelProto) -> None:
    """A model whose weights were left in external files cannot be merged or run:
    ``ValueError`` naming the first such tensor and its file."""
    external = _external_tensors(model.graph)
    if external:
        where = {e.key: e.value for e in external[0].external_data}.get("location", "?")
        raise ValueError(
            f"model: {len(external)} tensor(s) keep their data in external files that are "
            f"not loaded (first: {external[0].name!r} in {where!r}); pass the model's path "
            "to attach (onnx.load reads the files beside it), or call "
            "onnx.load_external_data_for_model(model, folder) first"
        )


def _has_type(info: onnx.ValueInfoProto) -> bool:
    return info.HasField("type") and info.type.WhichOneof("value") is not None


def _inferred_outputs(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """The graph outputs as ONNX shape inference sees them (empty when it fails: a
    custom domain it does not know, a model above protobuf's 2 GB)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference only refines what attach can check; never required
        return {}
    return {o.name: o for o in inferred.graph.output}


def _complete_outputs(model: onnx.ModelProto, output: str, keep_outputs: bool) -> None:
    """Give the graph outputs declared without a type (or without a shape) what shape
    inference finds; drop untyped outputs that are not kept, refuse the others.

    onnxruntime runs a graph whose outputs have no declared type, but the ONNX checker
    that merging runs rejects it.
    """
    graph = model.graph
    missing = [o for o in graph.output if not _has_type(o)]
    unshaped = [
        o for o in graph.output if _has_type(o) and not o.type.tensor_type.HasField("shape")
    ]
    if not missing and not unshaped:
        return
    inferred = _inferred_outputs(model)
    for info in [*missing, *unshaped]:
        found = inferred.get(info.name)
        if found is not None and _has_type(found):
            info.type.CopyFrom(found.type)
    untyped = [o.name for o in graph.output if not _has_type(o)]
    if output in untyped:
        raise ValueError(
            f"output {output!r} has no type in the graph, and ONNX shape inference cannot "
            "find one: declare it (a float or double tensor of scores)"
        )
    if untyped and keep_outputs:
        raise ValueError(
            f"keep_outputs=True keeps the model's output {untyped[0]!r}, which has no type "
            "in the graph (and ONNX shape inference cannot find one): declare its type, or "
            "pass keep_outputs=False"
        )
    if untyped:  # not kept: attach drops them anyway
        kept = [o for o in graph.output if _has_type(o)]
        del graph.output[:]
        graph.output.extend(kept)


def _score_output(model: onnx.ModelProto, output: str):
    """The ValueInfo of ``output``, its float dtype and its shape's dims (None if unknown)."""
    outputs = {o.name: o for o in model.graph.output}
    if output not in outputs:
        raise ValueError(
            f"output must name one of the model's outputs {list(outputs)}, got {output!r}"
        )
    info = outputs[output]
    tensor = info.type.tensor_type
    if not info.type.HasField("tensor_type") or tensor.elem_type not in _FLOATS:
        kind = TensorProto.DataType.Name(tensor.elem_type) if tensor.elem_type else "non-tensor"
        raise ValueError(
            f"output {output!r} must be a float or double tensor of scores, got {kind}"
        )
    dims = None
    if tensor.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    return info, _FLOATS[tensor.elem_type], dims


def _adapter(score_dims, column, width: int, output: str, calibrator) -> tuple[str, list]:
    """How the score output becomes the calibrator's (N, width) input: "gather",
    "reshape" (a known single column), "rows" (a width the graph does not give, checked
    at run time) or "identity", with the Gather index."""
    name = type(calibrator).__name__
    rank = None if score_dims is None else len(score_dims)
    columns = None if rank != 2 else score_dims[1]
    if column is not None:
        if width != 1:
            raise ValueError(
                f"column must be None for {name}, which reads all {width} columns of "
                f"{output!r}; got column={column!r}"
            )
        if isinstance(column, bool) or not isinstance(column, int | np.integer):
            raise ValueError(f"column must be an int or None, got {column!r}")
        if rank is not None and rank != 2:
            raise ValueError(
                f"column={column} needs a 2-D output, but {output!r} has shape {score_dims}"
            )
        if columns is not None and not -columns <= column < columns:
            raise ValueError(
                f"column={column} is out of range for output {output!r} of {columns} columns"
            )
        return "gather", [int(column)]
    if width == 1:
        if rank == 1 or (rank == 2 and columns == 1):
            return "reshape", []
        if rank is not None and rank != 2 or columns is not None:
            raise ValueError(
                f"output {output!r} has shape {score_dims}: {name} reads one score, so pass "
                "column= (the score column), or give an (N,) or (N, 1) output"
            )
        # (N, ?) or no shape: Reshape(-1, 1) would turn two columns into 2N rows
        return "rows", []
    if rank is not None and (rank != 2 or columns not in (width, None)):
        raise ValueError(
            f"{name} was fitted on {width} score columns, but output {output!r} has shape "
            f"{score_dims}"
        )
    return "identity", []


def load_model_file(path, argument: str) -> onnx.ModelProto:
    """The ONNX model in the file ``path``; a ``ValueError`` naming ``argument`` when
    there is no such file or it holds no ONNX model."""
    import os

    if not os.path.isfile(os.fspath(path)):
        raise ValueError(f"{argument}: no such file {os.fspath(path)!r}")
    try:
        return onnx.load(os.fspath(path))
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ValueError(
            f"{argument}: {os.fspath(path)!r} is not an ONNX model file "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]})"
        ) from None


def _refuse_invalid(model: onnx.ModelProto, exc: Exception):
    """The merged graph failed the ONNX checker: a ``ValueError`` when the model itself
    fails it (bad input), else the checker's error (a bug of attach)."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as own:
        message = str(own).strip().splitlines()[0] if str(own).strip() else type(own).__name__
        raise ValueError(
            f"model is not a valid ONNX model ({message}); onnx.checker.check_model(model) "
            "must pass before a calibrator can be attached"
        ) from own
    raise exc
