"""A checked ONNX graph laid out as a Triton Inference Server model repository."""

from __future__ import annotations

import functools
import importlib.util
import os
import pathlib
import sys
import warnings

import onnx

from bernonnx._validation import check_int

from ._files import ModelLike, _atomic_write

#: ONNX tensor element type -> Triton ``DataType`` enum name. Types absent here
#: (complex, float8, int4, ...) have no Triton counterpart.
_TRITON_DTYPES = {
    onnx.TensorProto.BOOL: "TYPE_BOOL",
    onnx.TensorProto.UINT8: "TYPE_UINT8",
    onnx.TensorProto.UINT16: "TYPE_UINT16",
    onnx.TensorProto.UINT32: "TYPE_UINT32",
    onnx.TensorProto.UINT64: "TYPE_UINT64",
    onnx.TensorProto.INT8: "TYPE_INT8",
    onnx.TensorProto.INT16: "TYPE_INT16",
    onnx.TensorProto.INT32: "TYPE_INT32",
    onnx.TensorProto.INT64: "TYPE_INT64",
    onnx.TensorProto.FLOAT16: "TYPE_FP16",
    onnx.TensorProto.FLOAT: "TYPE_FP32",
    onnx.TensorProto.DOUBLE: "TYPE_FP64",
    onnx.TensorProto.STRING: "TYPE_STRING",
    onnx.TensorProto.BFLOAT16: "TYPE_BF16",
}


def _load_graph(model: ModelLike, argname: str = "model") -> onnx.ModelProto:
    """The ModelProto behind ``model``, external tensors left unloaded (only the
    graph's signature is read from it)."""
    if isinstance(model, onnx.ModelProto):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(
            f"{argname} must be an onnx.ModelProto or a path to a .onnx file, "
            f"got {type(model).__name__}"
        )
    path = pathlib.Path(model)
    if not path.is_file():
        raise ValueError(f"{argname}: no such file {str(path)!r}")
    return onnx.load(str(path), load_external_data=False)


def _uses_external_data(graph: onnx.GraphProto) -> bool:
    """Whether any initializer or constant, subgraphs included, lives in an external file."""
    tensors = list(graph.initializer)
    for node in graph.node:
        for attr in node.attribute:
            tensors.extend([attr.t] if attr.HasField("t") else attr.tensors)
            if attr.HasField("g") and _uses_external_data(attr.g):
                return True
            if any(_uses_external_data(g) for g in attr.graphs):
                return True
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in tensors)


def _dims(value: onnx.ValueInfoProto) -> list[int] | None:
    """Shape of a tensor value, -1 for symbolic or unknown dims; None for unknown rank."""
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]


def _quote(text: str) -> str:
    """A protobuf text-format string literal."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            # Octal, not \x: the text-format tokenizer reads at most 3 octal digits, so the
            # escape cannot swallow a following hex-looking character.
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _check_model_name(name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    # Triton uses the name as a directory and in the URL /v2/models/<name>: a separator,
    # '.' or '..' would place the files elsewhere than where Triton looks.
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if (
        not name
        or name in (".", "..")
        or any(sep in name for sep in separators)
        or name != name.strip()
        or any(ord(char) < 0x20 or ord(char) == 0x7F for char in name)
    ):
        raise ValueError(
            "name must be a non-empty Triton model name usable as a directory: no path "
            "separators, not '.' or '..', no control characters or surrounding "
            f"whitespace; got {name!r}"
        )


@functools.cache
def _triton_model_config_class():
    """Triton's ``inference.ModelConfig`` message class, or None without tritonclient.

    The bare ``tritonclient`` wheel ships ``tritonclient/grpc/model_config_pb2.py``, but
    ``import tritonclient.grpc.model_config_pb2`` runs ``tritonclient/grpc/__init__.py``,
    which raises RuntimeError unless grpcio is installed (``tritonclient[grpc]``, which
    also pins protobuf < 7). The generated module itself needs protobuf only, so it is
    loaded from its file without the package ``__init__``.
    """
    module = sys.modules.get("tritonclient.grpc.model_config_pb2")
    if module is None:
        try:
            spec = importlib.util.find_spec("tritonclient")
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            return None
        path = (
            pathlib.Path(next(iter(spec.submodule_search_locations)))
            / "grpc"
            / "model_config_pb2.py"
        )
        if not path.is_file():
            return None
        file_spec = importlib.util.spec_from_file_location(
            "_bernonnx_triton_model_config_pb2", path
        )
        module = importlib.util.module_from_spec(file_spec)
        try:
            file_spec.loader.exec_module(module)
        except Exception as exc:  # e.g. a protobuf runtime older than the generated code
            warnings.warn(
                f"tritonclient is installed but {path} could not be loaded ({exc!r}); "
                "Triton configs are written without schema validation",
                UserWarning,
                stacklevel=3,
            )
            return None
    return module.ModelConfig


def _triton_tensor_entry(
    value: onnx.ValueInfoProto, kind: str, batched: bool, optional: bool = False
) -> str:
    """One ``input``/``output`` entry of config.pbtxt for a graph input/output."""
    which = value.type.WhichOneof("value")
    if which != "tensor_type":
        hint = (
            " (a ZipMap output: export the classifier with options={id(model): "
            "{'zipmap': False}}, i.e. zipmap=False)"
            if which in ("sequence_type", "map_type")
            else ""
        )
        raise ValueError(
            f"model: graph {kind} {value.name!r} is of {which or 'unknown'} type; Triton's "
            f"onnxruntime backend serves tensors only{hint}"
        )
    elem_type = value.type.tensor_type.elem_type
    if elem_type not in _TRITON_DTYPES:
        raise ValueError(
            f"model: graph {kind} {value.name!r} has element type "
            f"{onnx.TensorProto.DataType.Name(elem_type)}, which Triton has no data type for"
        )
    dims = _dims(value)
    if dims is None:
        raise ValueError(
            f"model: graph {kind} {value.name!r} has no shape (not even a rank); give it one "
            "or run onnx.shape_inference.infer_shapes before exporting"
        )
    if batched:
        if not dims or dims[0] != -1:
            raise ValueError(
                f"model: graph {kind} {value.name!r} has shape {dims} (-1 = dynamic): with "
                "max_batch_size > 0 its first dimension must be the dynamic batch "
                "dimension; pass max_batch_size=0 to serve it without batching"
            )
        dims = dims[1:]
    lines = [
        f"    name: {_quote(value.name)}",
        f"    data_type: {_TRITON_DTYPES[elem_type]}",
    ]
    if dims:
        lines.append(f"    dims: [ {', '.join(str(d) for d in dims)} ]")
    else:
        # Triton needs at least one dim: a per-row scalar (e.g. the label output of
        # shape [N]) is declared [1] and reshaped to the model's true shape.
        lines.append("    dims: [ 1 ]")
        lines.append("    reshape: { shape: [ ] }")
    if optional:
        lines.append("    optional: true")
    return "  {\n" + "\n".join(lines) + "\n  }"


def _triton_config_text(
    model: ModelLike,
    name: str,
    *,
    max_batch_size: int = 1024,
    dynamic_batching: bool = True,
    instance_count: int = 1,
) -> str:
    """The ``config.pbtxt`` text :func:`write_triton_repository` writes.

    Parameters and errors are those of :func:`write_triton_repository`; the text is
    returned unvalidated.
    """
    graph = _load_graph(model).graph
    _check_model_name(name)
    check_int(max_batch_size, "max_batch_size", 0)
    check_int(instance_count, "instance_count", 1)
    batched = max_batch_size > 0
    initializers = {init.name for init in graph.initializer}
    # A graph input that is also an initializer has a default: a request may leave it
    # out (``optional: true``), as an adapted model's ``priors``.
    entries = {
        "input": [
            _triton_tensor_entry(v, "input", batched, optional=v.name in initializers)
            for v in graph.input
        ],
        "output": [_triton_tensor_entry(v, "output", batched) for v in graph.output],
    }
    lines = [
        f"name: {_quote(name)}",
        'backend: "onnxruntime"',
        f"max_batch_size: {int(max_batch_size)}",
    ]
    for field, items in entries.items():
        lines.append(f"{field} [\n" + ",\n".join(items) + "\n]")
    # The dynamic batcher stacks requests along the batch dimension, which a model
    # served with max_batch_size 0 does not have.
    if dynamic_batching and batched:
        lines.append("dynamic_batching { }")
    lines.append(
        f"instance_group [\n  {{\n    count: {int(instance_count)}\n    kind: KIND_CPU\n  }}\n]"
    )
    return "\n".join(lines) + "\n"


def _check_paths(files: list[pathlib.Path]) -> None:
    """``ValueError`` before anything is written when a file to write is a folder, or
    a folder to create is a file: one file written and the other refused would leave
    a repository of a new model and an old config (or none)."""
    for path in files:
        if path.is_dir():
            raise ValueError(
                f"repository: {path} is a folder; write_triton_repository writes a file "
                "there (remove the folder, or choose another repository or name)"
            )
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise ValueError(
                f"repository: {folder} is a file, so {path} cannot be written; choose "
                "another repository or name"
            )


def write_triton_repository(
    model: ModelLike,
    repository: str | os.PathLike[str],
    name: str,
    *,
    max_batch_size: int = 1024,
    version: int = 1,
    dynamic_batching: bool = True,
    instance_count: int = 1,
) -> pathlib.Path:
    """Write an ONNX graph as a Triton Inference Server model (onnxruntime backend).

    Creates ``<repository>/<name>/config.pbtxt`` and
    ``<repository>/<name>/<version>/model.onnx``, replacing files already there.

    Parameters
    ----------
    model : onnx.ModelProto or path-like
        The graph. A path is copied byte for byte; a ModelProto is serialised. Every
        input and output must be a tensor: a classifier exported with skl2onnx's
        default ZipMap output is refused (export with ``zipmap=False``).
    repository : path-like
        The Triton model repository (created if missing).
    name : str
        The model name: its folder and the ``name`` in config.pbtxt. No path separators.
    max_batch_size : int, default=1024
        Largest batch Triton forms. When > 0, every graph input and output must have a
        dynamic first dimension (the batch), which config.pbtxt leaves out of ``dims``.
        0 declares the full shapes and disables batching.
    version : int, default=1
        The version folder, >= 1 (Triton ignores folder ``0``).
    dynamic_batching : bool, default=True
        Add ``dynamic_batching { }`` so Triton merges concurrent requests. Ignored when
        ``max_batch_size=0``.
    instance_count : int, default=1
        Number of CPU instances (``instance_group { count, kind: KIND_CPU }``).

    Returns
    -------
    model_dir : pathlib.Path
        ``<repository>/<name>``.

    Raises
    ------
    ValueError
        A non-tensor input or output (named in the message), an element type Triton
        lacks, a tensor without a dynamic first dimension while ``max_batch_size > 0``,
        an unusable ``name``, bad integer arguments, or a file to write that is a
        folder (or under a file). Nothing is written then.
    NotImplementedError
        A graph whose weights live in external data files.

    Notes
    -----
    Shapes map as: ONNX ``[N, 3]`` -> ``dims: [ 3 ]``; symbolic or unknown dims -> -1;
    ONNX ``[N]`` (a label output) -> ``dims: [ 1 ]`` with ``reshape: { shape: [ ] }``.
    Element types map FLOAT -> TYPE_FP32, DOUBLE -> TYPE_FP64, INT64 -> TYPE_INT64,
    STRING -> TYPE_STRING, and so on. A graph input with a default (an initializer of
    the same name, such as the ``priors`` input of an adapted model,
    ``to_onnx(adapter, X, priors_input=True)``) is declared ``optional: true``: a
    request that leaves it out gets the default.

    When ``tritonclient`` is installed (``pip install tritonclient``; the bare wheel is
    enough, grpcio is not needed) the text is parsed with Triton's own ``ModelConfig``
    protobuf schema before anything is written, which catches unknown fields and enum
    names. Without it the config is written unvalidated: it is generated from the
    graph, never hand-written.

    Examples
    --------
    >>> import tempfile
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Neg", ["X"], ["Y"])], "neg",
    ...     [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 2])],
    ...     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])])
    >>> model = helper.make_model(
    ...     graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    >>> with tempfile.TemporaryDirectory() as repo:
    ...     folder = write_triton_repository(model, repo, "neg")
    ...     print(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")))
    ...     print((folder / "config.pbtxt").read_text().splitlines()[:3])
    ['1', '1/model.onnx', 'config.pbtxt']
    ['name: "neg"', 'backend: "onnxruntime"', 'max_batch_size: 1024']
    """
    graph_model = _load_graph(model)
    check_int(version, "version", 1)
    if _uses_external_data(graph_model.graph):
        raise NotImplementedError(
            "model: graphs with external data files are not supported; save the model "
            "as a single .onnx file (onnx.save(model, path, save_as_external_data=False))"
        )
    text = _triton_config_text(
        graph_model,
        name,
        max_batch_size=max_batch_size,
        dynamic_batching=dynamic_batching,
        instance_count=instance_count,
    )
    config_class = _triton_model_config_class()
    if config_class is not None:
        from google.protobuf import text_format

        try:
            text_format.Parse(text, config_class())
        except text_format.ParseError as exc:  # a bug here, not in the user's graph
            raise RuntimeError(
                f"bernonnx generated a config.pbtxt that Triton's ModelConfig schema "
                f"rejects ({exc}):\n{text}"
            ) from exc

    model_dir = pathlib.Path(repository) / name
    version_dir = model_dir / str(int(version))
    _check_paths([version_dir / "model.onnx", model_dir / "config.pbtxt"])
    version_dir.mkdir(parents=True, exist_ok=True)
    # The model goes first: a config that points to a missing file would make a polling
    # Triton fail the load, a model without config is simply not picked up yet.
    if isinstance(model, onnx.ModelProto):
        _atomic_write(version_dir / "model.onnx", model.SerializeToString())
    else:
        _atomic_write(version_dir / "model.onnx", pathlib.Path(model).read_bytes())
    _atomic_write(model_dir / "config.pbtxt", text.encode("utf-8"))
    return model_dir
