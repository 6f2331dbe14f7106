"""What the ONNX graph is fed, and how ``X_sample`` decides the graph's inputs.

Three input layouts, chosen by :func:`input_layout` from the model and ``X_sample``:

``"array"``
    One tensor ``X`` of shape (N, n_features): numpy arrays, lists, and scores for a
    calibrator on its own.
``"columns"``
    One (N, 1) tensor per DataFrame column, named after it: a DataFrame whose every
    base model starts with a ``ColumnTransformer`` (it routes the columns by name, and
    string columns need their own string input).
``"frame"``
    One tensor ``X`` whose columns are the DataFrame's, in the order of the metadata
    entry ``input_columns``: a numeric DataFrame into a plain Pipeline or a bare model,
    which scikit-learn turns into one array (``np.asarray(frame)``) before it computes.

Numeric columns (int, float, bool and pandas' nullable ``Int64``, ``Float64`` and
``boolean``, missing values as NaN) are fed as floats; string and categorical columns
as strings.

Which frame columns feed which input follows what scikit-learn reads. A
ColumnTransformer that selects its columns by (string) name reads them by name, in any
order and among other columns, and so does the graph. Everything else reads positions:
a plain Pipeline or bare model (it turns the frame into an array, refusing other names
only when it recorded string names at fit time), a ColumnTransformer that selects by
position, columns whose names are not strings (scikit-learn records no names for
them), and a model fitted on an array but exported with a frame. For those the graph
records the exported columns (metadata ``input_column_order``) and :func:`onnx_inputs`
refuses a frame whose columns are not exactly those, in that order: reordering by name
would compute something Python, reading positions, does not.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline

from bernonnx.converters._graph import text_tokens
from bernonnx.shift import PriorShiftAdapter

from ._errors import text_problem
from ._refusals import check_refused, read_refused

__all__ = ["input_layout", "onnx_inputs", "request_inputs"]

#: metadata key holding the DataFrame column order of a ``"frame"`` layout graph
INPUT_COLUMNS = "input_columns"
#: metadata key holding the columns a graph reads by position (absent: by name)
INPUT_ORDER = "input_column_order"

_NUMPY_OF_ONNX = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.STRING: object,
}


def _final_estimator(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _is_frame(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes")


def _kind(dtype) -> str:
    """numpy's kind of a (pandas) dtype; "O" for types numpy has no equivalent of."""
    try:
        return np.dtype(getattr(dtype, "numpy_dtype", dtype)).kind
    except TypeError:  # an extension type without a numpy equivalent (strings)
        return "O"


def is_numeric_column(series) -> bool:
    """bool, int, float (nullable ones too), or a categorical of numbers."""
    dtype = series.dtype
    if getattr(dtype, "name", "") == "category":
        return _kind(dtype.categories.dtype) in "biuf"
    return _kind(dtype) in "biuf"


def _holds_numbers(series) -> bool:
    """An object column whose values (missing ones aside) are all numbers or bools."""
    from pandas.api.types import infer_dtype

    kinds = ("boolean", "integer", "floating", "mixed-integer-float", "empty")
    return _kind(series.dtype) == "O" and infer_dtype(series, skipna=True) in kinds


def _numeric_columns(X) -> list:
    """The names of a DataFrame's numeric columns (:func:`is_numeric_column`)."""
    return [c for c in X.columns if is_numeric_column(X[c])]


def column_values(series, dtype) -> np.ndarray:
    """A DataFrame column as a numpy array: numeric at ``dtype`` (missing values NaN),
    anything else as Python strings."""
    if is_numeric_column(series):
        if getattr(series.dtype, "name", "") == "category":
            series = series.astype(series.dtype.categories.dtype)
        with np.errstate(over="ignore"):  # beyond float32: inf, which the guard reports
            return series.to_numpy(dtype=dtype, na_value=np.nan)
    return text_tokens(series.astype(object))


def _as_dtype(X, dtype):
    """Numeric data (array, or each numeric DataFrame column) cast to ``dtype``."""
    if _is_frame(X):
        X = X.copy()
        for column in _numeric_columns(X):
            X[column] = column_values(X[column], dtype)
        return X
    with np.errstate(over="ignore"):
        return np.asarray(X, dtype=dtype)


def _first_consumers(model) -> list:
    """The estimators that receive ``X`` first (several for the fold pairs of a
    ``CalibratedClassifier`` or the base models of a ``FusionClassifier``)."""
    if isinstance(model, FrozenEstimator):
        return _first_consumers(model.estimator)
    if isinstance(model, Pipeline):
        steps = [s for _, s in model.steps if s is not None and s != "passthrough"]
        return _first_consumers(steps[0]) if steps else []
    if isinstance(model, PriorShiftAdapter):
        return _first_consumers(model.estimator_)
    pairs = getattr(model, "calibrated_classifiers_", None)
    if pairs is not None:
        return [c for pair in pairs for c in _first_consumers(pair.estimator)]
    bases = getattr(model, "estimators_", None)
    if bases is not None and type(model).__module__.startswith("bernonnx."):
        return [c for base in bases for c in _first_consumers(base)]
    return [model]


def input_layout(model, X) -> str:
    """``"array"``, ``"columns"`` or ``"frame"`` (see the module docstring).

    Raises ``ValueError`` when a DataFrame cannot be fed to ``model``: string columns
    without a ColumnTransformer to encode them, or base models of which some start
    with a ColumnTransformer and some do not.
    """
    if not _is_frame(X):
        return "array"
    consumers = _first_consumers(model)
    # a calibrator on its own reads one score per column (its converter joins them)
    routed = [
        isinstance(c, ColumnTransformer) or type(c).__module__.startswith("bernonnx.")
        for c in consumers
    ]
    if consumers and all(routed):
        return "columns"
    if any(routed):
        raise ValueError(
            "X_sample is a DataFrame but only some of the base models start with a "
            "ColumnTransformer; give every base model the same kind of first step"
        )
    text = [c for c in X.columns if not is_numeric_column(X[c])]
    if text:
        raise ValueError(
            f"X_sample has non-numeric columns {text} but {type(consumers[0]).__name__} "
            "takes numbers only; encode them inside the model with a ColumnTransformer"
        )
    return "frame"


def positional_columns(model, X, layout: str) -> list | None:
    """The columns of ``X`` (as strings) when ``model`` reads them by position, None
    when it reads them by name (see the module docstring)."""
    if layout == "array":
        return None
    names = [str(c) for c in X.columns]
    if layout == "frame" or not all(isinstance(c, str) for c in X.columns):
        return names
    for consumer in _first_consumers(model):
        # fitted on string names, a ColumnTransformer selects by name, even where its
        # columns were given as positions
        if getattr(consumer, "feature_names_in_", None) is None:
            return names
    return None


def _metadata(onnx_model: onnx.ModelProto, key: str):
    for prop in onnx_model.metadata_props:
        if prop.key == key:
            try:
                value = json.loads(prop.value)
            except ValueError:
                value = None
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ValueError(
                    f"the graph's metadata {key!r} must be a JSON list of column names, "
                    f"got {prop.value[:80]!r}"
                )
            return value
    return None


def frame_columns(onnx_model: onnx.ModelProto) -> list | None:
    """The DataFrame column order of a ``"frame"`` layout graph, or None."""
    return _metadata(onnx_model, INPUT_COLUMNS)


def _check_order(onnx_model: onnx.ModelProto, X) -> list | None:
    """Refuse a frame whose columns differ from those a positional graph was exported
    with (names or order): Python would read them by position. Returns those columns
    (None for a graph that reads them by name)."""
    expected = _metadata(onnx_model, INPUT_ORDER)
    if expected is None:
        expected = frame_columns(onnx_model)  # a "frame" graph: always by position
    got = [str(c) for c in X.columns]
    if expected is not None and got != expected:
        raise ValueError(
            f"X has the columns {got} but the model reads its columns by position and was "
            f"exported with {expected}: scikit-learn would compute on whatever stands at "
            "each position (or refuse other names), so the graph does not reorder by name; "
            f"pass exactly those columns in that order (X[{expected}])"
        )
    return expected


def request_inputs(graph: onnx.GraphProto) -> list:
    """The graph inputs a request's data feeds: those with no default (an initializer of
    the same name, such as an adapted model's optional ``priors``), and not the
    randomised prediction sets' ``uniforms`` (fed beside the data)."""
    defaults = {t.name for t in graph.initializer}
    if any(o.name == "prediction_set" for o in graph.output):
        defaults.add("uniforms")
    return [i for i in graph.input if i.name not in defaults]


def _declared(value_info) -> tuple:
    """The numpy dtype and the width (0 if unknown) of a graph input."""
    tensor = value_info.type.tensor_type
    dtype = _NUMPY_OF_ONNX.get(tensor.elem_type)
    if dtype is None:
        raise ValueError(
            f"the graph input {value_info.name!r} has element type "
            f"{onnx.TensorProto.DataType.Name(tensor.elem_type)}, which onnx_inputs cannot feed"
        )
    dims = tensor.shape.dim
    return dtype, (dims[1].dim_value if len(dims) > 1 else 0)


def onnx_inputs(onnx_model: onnx.ModelProto, X, dtype=None) -> dict:
    """The input feed for ``X``: each graph input at the type the graph declares.

    A DataFrame gives one (N, 1) tensor per column for graphs whose inputs are its
    columns, and one (N, n_features) tensor, its columns in the order the graph
    recorded (metadata ``input_columns``), for graphs with a single input ``X``.
    Numeric values (pandas' nullable types too; missing values become NaN) are cast
    to the declared float type, strings stay strings.

    Parameters
    ----------
    onnx_model : onnx.ModelProto
    X : array-like or DataFrame
    dtype : {None, np.float32, np.float64}, default=None
        Float type to cast numeric inputs to; None reads it from the graph. Another
        type than the graph's makes onnxruntime refuse the feed.

    Raises a ``ValueError`` naming the missing columns, or the expected width, when
    ``X`` does not match the graph's inputs; and when the model reads a frame's
    columns by position (a plain Pipeline or bare model, column names that are not
    strings, a model fitted on an array), a frame whose columns are not exactly the
    exported ones in the exported order: Python would compute on the columns as they
    stand, the graph cannot tell.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import PlattCalibrator
    >>> from bernonnx.export import onnx_inputs, to_onnx
    >>> s = np.linspace(-3, 3, 100).reshape(-1, 1)
    >>> cal = PlattCalibrator().fit(s, s[:, 0] > 0.3)
    >>> feed = onnx_inputs(to_onnx(cal, s[:2]), s)
    >>> [(name, x.shape, x.dtype.name) for name, x in feed.items()]
    [('X', (100, 1), 'float64')]
    """
    inputs = request_inputs(onnx_model.graph)
    names = [i.name for i in inputs]
    refused = read_refused(onnx_model)

    def as_float(declared):
        if dtype is not None and np.dtype(declared).kind == "f":
            return np.dtype(dtype)
        return declared

    if _is_frame(X):
        positional = _check_order(onnx_model, X)
        by_name = {str(c): c for c in X.columns}  # graph names are strings (0 -> "0")
        columns = frame_columns(onnx_model)
        if positional is not None and columns is None and len(names) == len(X.columns):
            # one input per column, in the frame's order (skl2onnx renames "0" to "_0")
            by_name = dict(zip(names, X.columns, strict=True))
        if columns is not None and len(inputs) == 1:
            missing = [c for c in columns if c not in by_name]
            if missing:
                raise ValueError(f"X lacks the columns {missing} that the ONNX graph takes")
            declared, _ = _declared(inputs[0])
            values = [column_values(X[by_name[c]], as_float(declared)) for c in columns]
            for c, v in zip(columns, values, strict=True):
                check_refused(refused, c, v)
            matrix = np.column_stack(values) if values else np.empty((len(X), 0))
            return {names[0]: matrix.astype(as_float(declared), copy=False)}
        missing = [name for name in names if name not in by_name]
        if missing and len(names) == 1 and _declared(inputs[0])[1] != 1:
            raise ValueError(
                f"X is a DataFrame but the graph was exported from an array (one input "
                f"{names[0]!r}, no column names): feed an array, X.to_numpy(), its columns "
                "in the order the model was fitted on"
            )
        if missing:
            raise ValueError(f"X lacks the columns {missing} that the ONNX graph takes as inputs")
        feed = {}
        for value_info in inputs:
            declared, _ = _declared(value_info)
            column = X[by_name[value_info.name]]
            if declared is object:
                problem = text_problem(column)
                if problem is None and is_numeric_column(column):
                    problem = f"numbers ({column.dtype})"
                if problem is not None:
                    raise ValueError(
                        f"column {value_info.name!r} has {problem} but the graph takes "
                        "strings there; convert it: X[col].astype(str)"
                    )
                values = text_tokens(column.astype(object))
            else:
                if not is_numeric_column(column) and _holds_numbers(column):
                    # a frame's column: pandas is there (the demo, on arrays, needs no pandas)
                    import pandas as pd

                    if any(v is pd.NA for v in column):
                        raise ValueError(
                            f"column {value_info.name!r} holds pd.NA among numbers in an "
                            "object column, which scikit-learn reads as neither NaN nor a "
                            "number; give it a nullable dtype (astype('Float64'), "
                            "astype('boolean')) or NaN"
                        )
                    column = column.astype("Float64")  # bools and numbers held as objects
                values = column_values(column, as_float(declared))
                check_refused(refused, value_info.name, values)
                if not is_numeric_column(column):
                    raise ValueError(
                        f"column {value_info.name!r} holds strings but the graph takes "
                        f"{np.dtype(declared).name} there"
                    )
            feed[value_info.name] = values.reshape(-1, 1)
        return feed
    if len(names) != 1:
        raise ValueError(f"the graph has inputs {names}; pass X as a DataFrame with those columns")
    declared, width = _declared(inputs[0])
    with np.errstate(over="ignore"):
        X = np.asarray(X, dtype=as_float(declared))
    if width and (X.ndim != 2 or X.shape[1] != width):
        raise ValueError(
            f"X has shape {X.shape} but the ONNX input {names[0]!r} takes {width} columns"
        )
    for j in range(X.shape[1] if X.ndim == 2 and refused else 0):
        check_refused(refused, str(j), X[:, j])
    return {names[0]: X}


def _numeric(X) -> np.ndarray:
    """The numeric values of an array or of a DataFrame's numeric columns."""
    if _is_frame(X):
        columns = _numeric_columns(X)
        if not columns:
            return np.empty((len(X), 0))
        return np.column_stack([column_values(X[c], np.float64) for c in columns])
    return np.asarray(X, dtype=np.float64)


def _is_float32_data(X) -> bool:
    """True when every numeric value of ``X`` is float32 (and there is one)."""
    if _is_frame(X):
        columns = _numeric_columns(X)
        return bool(columns) and all(
            getattr(X[c].dtype, "numpy_dtype", X[c].dtype) == np.float32 for c in columns
        )
    return getattr(X, "dtype", None) == np.float32


def rounded_columns(X) -> list:
    """Columns (names, or positions of an array) that float32 may not hold exactly:
    float64 columns whatever their values (a sample of integer-valued rows says
    nothing of later rows), and integer columns whose values float32 rounds."""
    if _is_frame(X):
        out = []
        for c in _numeric_columns(X):
            dtype = X[c].dtype
            if getattr(dtype, "name", "") == "category":
                dtype = dtype.categories.dtype
            if _kind(dtype) == "f" and getattr(dtype, "numpy_dtype", dtype) != np.float32:
                out.append(c)
                continue
            v = column_values(X[c], np.float64)
            with np.errstate(over="ignore"):
                r = v.astype(np.float32).astype(np.float64)
            if not np.array_equal(v, r, equal_nan=True):
                out.append(c)
        return out
    v = np.asarray(X)
    if v.ndim < 2:
        v = v.reshape(-1, 1)
    if v.dtype.kind == "f" and v.dtype != np.float32:
        return list(range(v.shape[1]))
    v = v.astype(np.float64)
    with np.errstate(over="ignore"):
        r = v.astype(np.float32).astype(np.float64)
    same = (v == r) | (np.isnan(v) & np.isnan(r))
    return [int(j) for j in np.flatnonzero(~same.all(axis=0))]
