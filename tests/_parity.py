"""What the ONNX parity tests share: the tolerance table, running a graph, the assertions.

Python's ``predict_proba`` against the graph run in onnxruntime (one thread, sequential:
repeatable sums), on every row, labels identical. Imported by the test modules
(``from _parity import ...``: pytest puts ``tests/`` on ``sys.path``). ``PROMISED`` is
the library's :data:`bernonnx.export.PARITY_TOLERANCE`, which the real-data cells of
``benchmarks/_realdata.py`` read directly.
"""

from __future__ import annotations

import numpy as np
import onnx

from bernonnx.deploy import run_onnx as _run_named
from bernonnx.export import PARITY_TOLERANCE, check_parity, onnx_inputs, to_onnx

__all__ = [
    "PROMISED",
    "typed",
    "TOLERANCE",
    "assert_every_row",
    "assert_parity",
    "graph_dtype",
    "run_onnx",
    "tolerance",
]

#: The one tolerance table: max |p_onnx - p_python| on probabilities, by the graph's
#: float type. ``TOLERANCE`` is what the calibrators' graphs and one graph with a base
#: model reach on generated data (the calibrators compute in float64 inside a float32
#: graph; a float64 graph computes as numpy does, to rounding). ``PROMISED`` is the
#: library's default (:data:`bernonnx.export.PARITY_TOLERANCE`, what ``check_parity``
#: passes): real data and the exact base-model converters are held to it.
TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}
PROMISED = dict(PARITY_TOLERANCE)

_ONNX_FLOAT = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64}


def typed(X, dtype):
    """``X`` as data held at ``dtype``: an array cast, or a DataFrame's numeric columns.

    For tests of a graph of a given float type: ``to_onnx``'s default graph type follows
    the data, and it refuses ``dtype=np.float32`` for float64 values float32 cannot hold,
    so a float32 graph is exported from float32 data, as a float32 user holds it.
    """
    if hasattr(X, "columns"):
        X = X.copy()
        for column in X.columns:
            if X[column].dtype.kind in "biuf":
                X[column] = X[column].astype(dtype)
        return X
    return np.asarray(X, dtype=dtype)


def tolerance(dtype, table=None) -> float:
    """The tolerance of a graph of float type ``dtype`` (a type, a dtype or its name)."""
    return (TOLERANCE if table is None else table)[np.dtype(dtype)]


def graph_dtype(onx: onnx.ModelProto) -> type:
    """The float type of the graph's numeric inputs (float32 if it has none)."""
    for tensor in onx.graph.input:
        found = _ONNX_FLOAT.get(tensor.type.tensor_type.elem_type)
        if found is not None:
            return found
    return np.float32


def run_onnx(onx: onnx.ModelProto, X, dtype=None) -> list:
    """The graph's outputs on ``X``, in graph order (``label, probabilities``).

    ``X`` is fed as :func:`bernonnx.export.onnx_inputs` builds the feed: one tensor, or
    one column per DataFrame column, cast to ``dtype`` (default: the graph's float type).
    A ZipMap output comes back as onnxruntime gives it, a list of dicts.
    """
    dtype = graph_dtype(onx) if dtype is None else dtype
    outputs = _run_named(onx, onnx_inputs(onx, X, dtype))
    return [outputs[o.name] for o in onx.graph.output]


def assert_parity(model, onx: onnx.ModelProto, X, tol: float | None = None, labels=True):
    """``check_parity`` within ``tol`` (default :func:`tolerance` of the graph's type).

    Returns the report, for further assertions.
    """
    report = check_parity(model, onx, X)
    tol = tolerance(graph_dtype(onx)) if tol is None else tol
    assert report["max_abs_error"] <= tol, (tol, report)
    if labels:
        assert report["labels_equal"], report
    return report


def assert_every_row(model, X, dtype, table=None):
    """Export ``model``, run Python and the graph on ``X`` at ``dtype``: every row within
    :func:`tolerance` (of ``table``, default :data:`TOLERANCE`), labels identical."""
    X = X.astype(dtype) if hasattr(X, "astype") else X
    onx = to_onnx(model, X[:5], dtype=dtype)
    label, proba = run_onnx(onx, X, dtype)
    tol = tolerance(dtype, table)
    err = np.abs(proba - model.predict_proba(X)).max(axis=1)
    assert err.max() <= tol, f"{int((err > tol).sum())} rows off, max {err.max()}"
    np.testing.assert_array_equal(label, model.predict(X))
