"""What the ONNX graph is fed: ``X`` cast to the graph's inputs, and its numeric part."""

from __future__ import annotations

import numpy as np
import onnx
from sklearn.pipeline import Pipeline


def _final_estimator(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _numeric_columns(X) -> list:
    """The names of a DataFrame's numeric (bool, int, float) columns."""
    return [c for c in X.columns if X[c].dtype.kind in "biuf"]


def _as_dtype(X, dtype):
    """Numeric data (array, or each numeric DataFrame column) cast to ``dtype``."""
    if hasattr(X, "dtypes"):
        X = X.copy()
        for column in _numeric_columns(X):
            X[column] = X[column].astype(dtype)
        return X
    return np.asarray(X, dtype=dtype)


def onnx_inputs(onnx_model: onnx.ModelProto, X, dtype=np.float32) -> dict:
    """The input feed for ``X``: one tensor, or one (N, 1) tensor per DataFrame column.

    Raises a ``ValueError`` naming the missing columns, or the expected width,
    when ``X`` does not match the graph's inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import PlattCalibrator
    >>> from bernonnx.export import onnx_inputs, to_onnx
    >>> s = np.linspace(-3, 3, 100).reshape(-1, 1)
    >>> cal = PlattCalibrator().fit(s, s[:, 0] > 0.3)
    >>> feed = onnx_inputs(to_onnx(cal, s[:2]), s)
    >>> [(name, x.shape, x.dtype.name) for name, x in feed.items()]
    [('X', (100, 1), 'float32')]
    """
    names = [i.name for i in onnx_model.graph.input]
    if hasattr(X, "columns"):
        missing = [name for name in names if name not in X.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} that the ONNX graph takes as inputs")
        feed = {}
        for name in names:
            column = X[name].to_numpy()
            kind = column.dtype.kind
            column = column.astype(dtype) if kind in "fiub" else column.astype(str).astype(object)
            feed[name] = column.reshape(-1, 1)
        return feed
    if len(names) != 1:
        raise ValueError(f"the graph has inputs {names}; pass X as a DataFrame with those columns")
    X = np.asarray(X, dtype=dtype)
    dims = onnx_model.graph.input[0].type.tensor_type.shape.dim
    width = dims[1].dim_value if len(dims) > 1 else 0
    if width and (X.ndim != 2 or X.shape[1] != width):
        raise ValueError(
            f"X has shape {X.shape} but the ONNX input {names[0]!r} takes {width} columns"
        )
    return {names[0]: X}


def _numeric(X) -> np.ndarray:
    """The numeric values of an array or of a DataFrame's numeric columns."""
    if hasattr(X, "dtypes"):
        X = X[_numeric_columns(X)]
    return np.asarray(X, dtype=np.float64)


def _is_float32_data(X) -> bool:
    """True when every numeric value of ``X`` is float32 (and there is one)."""
    if hasattr(X, "dtypes"):
        columns = _numeric_columns(X)
        return bool(columns) and all(X[c].dtype == np.float32 for c in columns)
    return getattr(X, "dtype", None) == np.float32
