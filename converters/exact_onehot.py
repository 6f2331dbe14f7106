"""An exact converter of scikit-learn's ``OneHotEncoder`` (part of ``converters/exact.py``).

skl2onnx's converter casts a float input to int64 before looking it up, so a value
2.5 or 2.0000001 served for a column fitted on the integers 0..6 lands on category 2,
where scikit-learn sees an unknown value; it also rejects NaN and non-integer float
categories and ``drop`` with infrequent categories. This one compares values, not
truncations:

- a numeric column: ``Equal(x, categories)`` in float64 (``IsNaN`` for a NaN
  category), so a value is a category exactly when numpy's comparison says so;
- a string column: ``ai.onnx.ml.OneHotEncoder`` on each category as the feed holds it
  (``converters._graph.text_token``: strings as they are, a missing value as a token
  of its own, so the string ``"nan"`` is not NaN).

That gives each row's indicator over ``categories_[i]``; one ``MatMul`` by a 0/1 matrix
then maps it to the output columns. When every column is numeric (and fed in one float
type, with no NaN category and ``handle_unknown`` not "error") all columns are compared
in one ``Equal`` and mapped at once (a ``Gather`` of the indicator's columns where the
matrix selects them, one ``MatMul`` otherwise): a fixed 7 to 12 nodes instead of 4 or
more per column, which at one row a call is what onnxruntime's time follows.

The matrix, and the row an unknown value gets, are read from scikit-learn itself:
``transform`` of a probe that holds every category and one unknown value, so
infrequent categories, ``drop`` and every ``handle_unknown`` come out as the fitted
encoder computes them. With ``handle_unknown="error"`` an unknown value makes
onnxruntime fail (an ``ai.onnx.ml.OneHotEncoder`` with ``zeros=0`` on the category's
index), as ``transform`` raises.
"""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto
from scipy.sparse import issparse
from skl2onnx.common.data_types import (
    DoubleTensorType,
    FloatTensorType,
    Int64TensorType,
    StringTensorType,
)

from bernonnx.converters._graph import DOUBLE, GraphWriter, text_token

__all__ = ["convert_exact_one_hot", "one_hot_problem", "one_hot_shape"]

_INT64 = TensorProto.INT64
#: a string no fitted category is (checked)
_UNKNOWN = "\x00bernonnx-unknown-category"


def _feature_name(model, i: int) -> str:
    names = getattr(model, "feature_names_in_", None)
    return repr(str(names[i])) if names is not None else f"at position {i}"


def _is_text(categories: np.ndarray) -> bool:
    return categories.dtype.kind in "OUS"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def one_hot_problem(model) -> str | None:
    """Why ``model``'s categories cannot be compared exactly in a graph (None: they can)."""
    for i, categories in enumerate(model.categories_):
        column = f"OneHotEncoder column {_feature_name(model, i)}"
        if _is_text(categories):
            values = [c for c in categories if not _missing(c)]
            if any(not isinstance(c, str) for c in values):
                kinds = sorted({type(c).__name__ for c in values})
                return (
                    f"{column} holds categories of types {kinds}: the graph reads a column "
                    "as numbers or as strings; convert it to one type before fitting "
                    "(pandas.to_numeric, or .astype(str))"
                )
            if len({text_token(c) for c in categories}) != len(categories):
                return (
                    f"{column} has categories a graph fed strings cannot tell apart "
                    f"({[text_token(c) for c in categories]}); make them distinct strings"
                )
            continue
        if categories.dtype.kind not in "biuf":
            return f"{column} has categories of dtype {categories.dtype}, which no graph compares"
        if categories.dtype.kind in "iu" and np.any(
            categories.astype(np.float64).astype(categories.dtype) != categories
        ):
            return (
                f"{column} has integer categories beyond 2**53, which float64 (the graph's "
                "input type) cannot hold apart; encode them as strings"
            )
    return None


def _widths(model) -> list[int]:
    """Output columns of each input column (public fitted attributes only)."""
    out = []
    infrequent = getattr(model, "infrequent_categories_", None)
    for i, categories in enumerate(model.categories_):
        width = len(categories)
        if infrequent is not None and infrequent[i] is not None:
            width -= len(infrequent[i]) - 1
        if model.drop_idx_ is not None and model.drop_idx_[i] is not None:
            width -= 1
        out.append(width)
    return out


def _unknown_value(categories: np.ndarray):
    if _is_text(categories):
        return _UNKNOWN
    finite = categories[np.isfinite(categories.astype(np.float64))].astype(np.float64)
    return float(finite.max() + 1.0) if finite.size else 0.0


def _probe(model, i: int, values: list) -> np.ndarray:
    """``model.transform`` of rows equal but for column ``i``, which takes ``values``."""
    import pandas as pd

    columns = {}
    for j, categories in enumerate(model.categories_):
        if j == i:
            column = values
        else:
            column = [categories[0]] * len(values)
        dtype = object if _is_text(categories) or j == i else categories.dtype
        if j == i and not _is_text(categories):
            dtype = np.float64
        columns[j] = np.array(column, dtype=dtype)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        X = pd.DataFrame({names[j]: v for j, v in columns.items()})
    else:
        X = np.empty((len(values), len(columns)), dtype=object)
        for j, v in columns.items():
            X[:, j] = v
        if all(not _is_text(c) for c in model.categories_):
            X = X.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown categories, drop with unknowns
        out = model.transform(X)
    return np.asarray(out.toarray() if issparse(out) else out, dtype=np.float64)


def _maps(model) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per input column: the (k, width) matrix from its categories to its output
    columns, and the row an unknown value gets (None with ``handle_unknown="error"``)."""
    widths = _widths(model)
    offsets = np.concatenate([[0], np.cumsum(widths)])
    out = []
    for i, categories in enumerate(model.categories_):
        values = list(categories) if _is_text(categories) else list(categories.astype(float))
        errors = model.handle_unknown == "error"
        rows = _probe(model, i, values + ([] if errors else [_unknown_value(categories)]))
        if rows.shape[1] != offsets[-1]:
            raise NotImplementedError(
                f"OneHotEncoder gives {rows.shape[1]} columns where its fitted attributes "
                f"say {offsets[-1]}; this scikit-learn version is not supported"
            )
        block = rows[:, offsets[i] : offsets[i + 1]]
        out.append((block[: len(values)], None if errors else block[len(values) :]))
    return out


def _columns(g: GraphWriter, operator) -> list[tuple[str, object]]:
    """Each input column of the encoder as an (N, 1) tensor, with its variable type."""
    out = []
    for var in operator.inputs:
        width = var.type.shape[1] if len(var.type.shape) > 1 else 1
        if not isinstance(width, int):
            raise NotImplementedError(
                "OneHotEncoder: an input of unknown width cannot be split into its columns"
            )
        for k in range(width):
            name = var.full_name if width == 1 else g.column(var.full_name, k)
            out.append((name, var.type))
    return out


def _indicator(g: GraphWriter, x: str, var_type, categories, errors: bool) -> str:
    """(N, k) float64: 1 where the row holds category k; with ``errors`` an unknown
    value fails in onnxruntime."""
    k = len(categories)
    if isinstance(var_type, StringTensorType):
        cats = [text_token(c).encode("utf-8") for c in categories]
        hot = g.node(
            "OneHotEncoder", [x], op_domain="ai.onnx.ml", cats_strings=cats, zeros=int(not errors)
        )
        return g.to_double(g.node("Reshape", [hot, g.const("shape", [-1, k], _INT64)]))
    if not isinstance(var_type, DoubleTensorType):
        x = g.to_double(x)
    values = categories.astype(np.float64)
    nan = np.isnan(values)
    parts = []
    if (~nan).any():
        parts.append(g.node("Equal", [x, g.const("categories", values[~nan][None, :])]))
    if nan.any():
        parts.append(g.node("IsNaN", [x]))
    hot = parts[0] if len(parts) == 1 else g.node("Concat", parts, axis=1)
    hot = g.to_double(hot)
    if not errors:
        return hot
    # the index of the category, k for an unknown value, which zeros=0 refuses
    unknown = g.node("Sub", [g.const("one", 1.0), g.reduce("ReduceMax", hot)])
    index = g.node("ArgMax", [g.node("Concat", [hot, unknown], axis=1)], axis=1, keepdims=1)
    hot = g.node(
        "OneHotEncoder", [index], op_domain="ai.onnx.ml", cats_int64s=list(range(k)), zeros=0
    )
    return g.to_double(g.node("Reshape", [hot, g.const("shape", [-1, k], _INT64)]))


def _all_at_once(g: GraphWriter, operator) -> str | None:
    """Every column's output at once, (N, width) float64, when every column is numeric,
    fed in one float type, with no NaN category and ``handle_unknown`` not "error";
    else None (and no node written).

    ``Equal`` of the (C, 1, N) values with the (C, K, 1) categories (NaN pads the
    shorter rows: it equals nothing), the output rows selected from the (C K, N)
    indicator (:func:`_select`), the unknown rows added from ``1 - max`` of each
    column's indicator, one ``Transpose`` back: 9 to 14 nodes
    where the loop writes 4 or more per column (onnxruntime spends about 0.3 us a
    node on a single row). Each output is a sum with at most one non-zero term, 0 or
    1, whatever the order, so the result is the loop's.
    """
    model = operator.raw_operator
    types = {type(var.type) for var in operator.inputs}
    widths = [var.type.shape[1] if len(var.type.shape) > 1 else 1 for var in operator.inputs]
    if (
        model.handle_unknown == "error"
        or len(types) != 1
        or types <= {StringTensorType}
        or sum(w if isinstance(w, int) else -1 for w in widths) != len(model.categories_)
        or any(_is_text(c) for c in model.categories_)
        or any(np.isnan(c.astype(np.float64)).any() for c in model.categories_)
    ):
        return None
    maps = _maps(model)
    n_columns, k = len(model.categories_), max(len(c) for c in model.categories_)
    table = np.full((n_columns, k), np.nan)
    width = sum(matrix.shape[1] for matrix, _ in maps)
    stacked, unknown = np.zeros((n_columns * k, width)), np.zeros((n_columns, width))
    start = 0
    for i, (categories, (matrix, unknown_row)) in enumerate(
        zip(model.categories_, maps, strict=True)
    ):
        table[i, : len(categories)] = categories.astype(np.float64)
        stop = start + matrix.shape[1]
        stacked[i * k : i * k + len(categories), start:stop] = matrix
        unknown[i, start:stop] = unknown_row
        start = stop
    names = [var.full_name for var in operator.inputs]
    x = names[0] if len(names) == 1 else g.node("Concat", names, axis=1)
    if types != {DoubleTensorType}:
        x = g.to_double(x)
    # columns first, rows last: each (column, category) pair compares one contiguous
    # row of N values, and the selection copies whole rows (onnxruntime broadcasts and
    # gathers along a short last axis element by element: 2 to 3 times slower at
    # 100,000 rows, measured)
    x = g.node("Unsqueeze", [g.node("Transpose", [x], perm=[1, 0]), g.const("axis1", [1], _INT64)])
    hot = g.node("Equal", [x, g.const("categories", table.reshape(n_columns, k, 1))])
    shape = g.const("flat", [n_columns * k, -1], _INT64)
    sources = stacked.sum(axis=0)
    if not unknown.any() and _selects(stacked):
        # select, transpose, then cast the booleans: a third of the rows, an eighth of
        # the bytes to move
        out = g.node("Gather", [g.node("Reshape", [hot, shape]), _index(g, stacked)], axis=0)
        out = g.to_double(g.node("Transpose", [out], perm=[1, 0]))
        fed = sources[None, :]
        return out if fed.all() else g.node("Mul", [out, g.const("map_fed", fed)])
    hot = g.to_double(hot)
    out = _select(g, g.node("Reshape", [hot, shape]), stacked, "map")
    if unknown.any():
        missing = g.node("Sub", [g.const("one", 1.0), g.reduce("ReduceMax", hot, 1, 0)])
        out = g.node("Add", [out, _select(g, missing, unknown, "unknown")])
    return g.node("Transpose", [out], perm=[1, 0])


def _selects(matrix: np.ndarray) -> bool:
    """Whether each column of the 0/1 ``matrix`` holds at most one 1."""
    return bool(np.isin(matrix, (0.0, 1.0)).all() and (matrix.sum(axis=0) <= 1).all())


def _index(g: GraphWriter, matrix: np.ndarray) -> str:
    return g.const("map_index", matrix.argmax(axis=0), _INT64)


def _select(g: GraphWriter, x: str, matrix: np.ndarray, name: str) -> str:
    """``matrix.T @ x`` for a 0/1 ``matrix`` and rows ``x``: a ``Gather`` of ``x``'s rows
    (times a 0/1 mask for the rows no source feeds) when each column of ``matrix`` holds
    at most one 1, which is the same values without the dense product's work."""
    if not _selects(matrix):
        return g.node("MatMul", [g.const(name, matrix.T), x])
    out = g.node("Gather", [x, _index(g, matrix)], axis=0)
    fed = matrix.sum(axis=0)[:, None]
    return out if fed.all() else g.node("Mul", [out, g.const(f"{name}_fed", fed)])


def convert_exact_one_hot(scope, operator, container):
    """``OneHotEncoder.transform`` as value comparisons and one 0/1 ``MatMul`` per column
    (or one for all columns, :func:`_all_at_once`)."""
    model = operator.raw_operator
    problem = one_hot_problem(model)
    if problem:
        raise NotImplementedError(problem)
    g = GraphWriter(scope, container, "onehot")
    out = _all_at_once(g, operator)
    if out is not None:
        _write_output(g, operator, out)
        return
    columns = _columns(g, operator)
    if len(columns) != len(model.categories_):
        raise NotImplementedError(
            f"OneHotEncoder was fitted on {len(model.categories_)} columns but the graph "
            f"gives it {len(columns)}"
        )
    errors = model.handle_unknown == "error"
    parts = []
    for (x, var_type), categories, (matrix, unknown_row) in zip(
        columns, model.categories_, _maps(model), strict=True
    ):
        if not matrix.shape[1] and not errors:
            continue  # no output column; with "error" the lookup still refuses unknowns
        if isinstance(var_type, StringTensorType) != _is_text(categories):
            raise NotImplementedError(
                "OneHotEncoder: a column fitted on "
                f"{'strings' if _is_text(categories) else 'numbers'} is fed "
                f"{'strings' if isinstance(var_type, StringTensorType) else 'numbers'}"
            )
        hot = _indicator(g, x, var_type, categories, errors)
        out = g.node("MatMul", [hot, g.const("map", matrix)])
        if unknown_row is not None and unknown_row.any():
            unknown = g.node("Sub", [g.const("one", 1.0), g.reduce("ReduceMax", hot)])
            out = g.node("Add", [out, g.node("Mul", [unknown, g.const("unknown", unknown_row)])])
        parts.append(out)
    if not parts:
        n = g.node("Gather", [g.node("Shape", [columns[0][0]]), g.const("zero", [0], _INT64)])
        out = g.node("ConstantOfShape", [g.node("Concat", [n, g.const("w", [0], _INT64)], axis=0)])
        parts = [g.to_double(out)]
    _write_output(g, operator, parts[0] if len(parts) == 1 else g.node("Concat", parts, axis=1))


def _write_output(g: GraphWriter, operator, out: str) -> None:
    """The (N, width) float64 ``out`` as the operator's output, in its declared type."""
    target = operator.outputs[0].type
    elem = (
        DOUBLE
        if isinstance(target, DoubleTensorType)
        else _INT64
        if isinstance(target, Int64TensorType)
        else TensorProto.FLOAT
    )
    if elem != DOUBLE:
        out = g.node("Cast", [out], to=elem)
    g.container.add_node(
        "Identity",
        [out],
        operator.outputs[0].full_name,
        name=g.scope.get_unique_operator_name("oh"),
    )


def one_hot_shape(operator):
    """skl2onnx's output types (int64 for an integer ``dtype``, float otherwise) at
    the true width: skl2onnx's calculator ignores infrequent categories."""
    model = operator.raw_operator
    n = operator.inputs[0].get_first_dimension()
    width = sum(_widths(model))
    if np.issubdtype(model.dtype, np.signedinteger):
        operator.outputs[0].type = Int64TensorType([n, width])
    else:
        operator.outputs[0].type = FloatTensorType([n, width])
