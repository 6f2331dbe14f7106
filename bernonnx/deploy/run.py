"""Running a graph in onnxruntime: the reference other runtimes are compared with."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping

import numpy as np
import onnx
import onnxruntime as ort

from ._files import ModelLike


def run_onnx(
    model: ModelLike,
    inputs: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Run a graph once in onnxruntime on one CPU thread and return outputs by name.

    Parameters
    ----------
    model : onnx.ModelProto or path-like
        An in-memory graph, or a path to a ``.onnx`` or ``.ort`` file.
    inputs : mapping of str to array-like
        One array per graph input, by name (graph inputs that have an initializer
        may be left out).

    Returns
    -------
    outputs : dict of str to numpy.ndarray
        Every graph output, in graph order. A non-tensor output (ZipMap) comes back as
        onnxruntime returns it, a list of dicts.

    Raises
    ------
    ValueError
        ``inputs`` misses a required graph input or names one the graph lacks.

    Notes
    -----
    One intra-op and one inter-op thread with sequential execution: reductions then
    add up in a fixed order, which makes runs repeatable and comparable with the
    single-threaded Node.js and WASM runs of the parity tests. An optional input with
    a default (an initializer of the same name, such as the ``priors`` of an adapted
    graph exported with ``priors_input=True``) may be fed or left out; onnxruntime
    lists it in ``session.get_overridable_initializers()``, not ``get_inputs()``, and
    warns about it at every load, so its session logs errors only.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Neg", ["X"], ["Y"])], "neg",
    ...     [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 2])],
    ...     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 2])])
    >>> model = helper.make_model(
    ...     graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    >>> run_onnx(model, {"X": np.array([[1.0, -2.0]], dtype=np.float32)})
    {'Y': array([[-1.,  2.]], dtype=float32)}
    """
    if not isinstance(inputs, Mapping):
        raise ValueError(
            f"inputs must be a mapping of input name to array, got {type(inputs).__name__}"
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if isinstance(model, onnx.ModelProto):
        source = model.SerializeToString()
        graph = model.graph
    elif isinstance(model, (str, os.PathLike)):
        if not pathlib.Path(model).is_file():
            raise ValueError(f"model: no such file {str(model)!r}")
        source = os.fspath(model)
        graph = None
        if not source.endswith(".ort"):
            graph = onnx.load(source, load_external_data=False).graph
    else:
        raise TypeError(
            "model must be an onnx.ModelProto or a path to a .onnx/.ort file, "
            f"got {type(model).__name__}"
        )
    if graph is not None and {i.name for i in graph.input} & {t.name for t in graph.initializer}:
        # an optional input with a default (an adapted graph's 'priors'): onnxruntime
        # warns "Initializer ... appears in graph inputs" at every load, which is the
        # point of it; errors only for this session
        options.log_severity_level = 3
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    required = {i.name for i in session.get_inputs()}
    optional = {i.name for i in session.get_overridable_initializers()}
    unknown = sorted(set(inputs) - required - optional)
    missing = sorted(required - set(inputs))
    if unknown or missing:
        raise ValueError(
            f"inputs must name the graph inputs {sorted(required)}; "
            f"missing {missing}, unknown {unknown}"
        )
    feeds = {name: np.asarray(value) for name, value in inputs.items()}
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))
