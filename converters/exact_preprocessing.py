"""Exact converters of the preprocessing steps in front of a base model
(part of ``converters/exact.py``, see there).

Transformers (``custom_conversion_functions`` of one conversion; a
ColumnTransformer's concatenation is typed float64 when any part is)::

    StandardScaler / RobustScaler   x -> Sub(center) -> Div(scale)
    MinMaxScaler                    x -> Mul(scale) -> Add(min) [-> Clip]
    MaxAbsScaler                    x -> Div(scale)
    SimpleImputer (NaN, numeric)    Where(IsNaN(x), statistics, x)
    OneHotEncoder                   ``exact_onehot``: Equal(x, categories) -> MatMul(map)

Each op runs in the precision numpy uses for it on float32 data: either in
float32 with float32 constants (``X -= xp.astype(mean_, X.dtype)``) or in
float64 with a cast back to float32 after each in-place operation
(``X *= scale_``). Which one a scikit-learn version uses is not guessed: it is
measured once per export on a probe of random float32 rows (``_float32_mode``).
"""

from __future__ import annotations

import warnings

import numpy as np
from skl2onnx.common.data_types import DoubleTensorType
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    RobustScaler,
    StandardScaler,
)

from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter
from bernonnx.converters.exact_onehot import convert_exact_one_hot, one_hot_shape


def _scaler_chain(model) -> tuple[list[tuple[str, np.ndarray]], tuple | None]:
    """The in-place numpy operations of ``model.transform``, in order, and a clip range."""
    if isinstance(model, StandardScaler):  # mean_ is fitted even with with_mean=False
        chain = [("Sub", model.mean_ if model.with_mean else None)]
        chain.append(("Div", model.scale_ if model.with_std else None))
    elif isinstance(model, RobustScaler):
        chain = [("Sub", model.center_ if model.with_centering else None)]
        chain.append(("Div", model.scale_ if model.with_scaling else None))
    elif isinstance(model, MaxAbsScaler):
        chain = [("Div", model.scale_)]
    else:  # MinMaxScaler
        chain = [("Mul", model.scale_), ("Add", model.min_)]
    chain = [(op, np.asarray(v)) for op, v in chain if v is not None]
    clip = tuple(model.feature_range) if getattr(model, "clip", False) else None
    return chain, clip


_NUMPY_OPS = {"Sub": np.subtract, "Div": np.divide, "Mul": np.multiply, "Add": np.add}


def _apply_chain(X: np.ndarray, chain, clip, mode: str) -> np.ndarray:
    """numpy's result for float32 ``X`` under ``mode``: "float32" (constants cast
    to float32 first) or "float64" (each op in float64, rounded to float32)."""
    X = X.copy()
    for op, values in chain:
        if mode == "float32":
            X = _NUMPY_OPS[op](X, values.astype(np.float32))
        else:
            X = _NUMPY_OPS[op](X.astype(np.float64), values.astype(np.float64))
        X = X.astype(np.float32)
    if clip is not None:
        X = np.clip(X, np.float32(clip[0]), np.float32(clip[1]))
    return X


def _float32_mode(model, chain, clip) -> str:
    """Which float32 arithmetic ``model.transform`` uses, measured on a probe."""
    rng = np.random.default_rng(0)
    n = model.n_features_in_
    scales = np.ones(n)
    for _, values in chain:
        scales = np.maximum(scales, np.abs(np.broadcast_to(values, (n,))))
    X = (rng.standard_normal((512, n)) * scales * 10 ** rng.uniform(-3, 1, (512, 1))).astype(
        np.float32
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fitted on a DataFrame: the probe has no names
        expected = np.asarray(model.transform(X.copy()), dtype=np.float32)
    for mode in ("float32", "float64"):
        if np.array_equal(_apply_chain(X, chain, clip, mode), expected, equal_nan=True):
            return mode
    raise NotImplementedError(
        f"{type(model).__name__}.transform rounds float32 data in a way bernonnx does not "
        "reproduce; export with dtype=np.float64"
    )


def _elem(var) -> int:
    return DOUBLE if isinstance(var.type, DoubleTensorType) else FLOAT


def _finish_transformer(g: GraphWriter, operator, x: str, elem: int) -> None:
    out = operator.outputs[0]
    if _elem(out) != elem:
        x = g.node("Cast", [x], to=_elem(out))
    g.container.add_node(
        "Identity", [x], out.full_name, name=g.scope.get_unique_operator_name("exact_out")
    )


def convert_exact_scaler(scope, operator, container):
    """Standard, Robust, MinMax and MaxAbs scalers in numpy's precision, op by op."""
    model = operator.raw_operator
    g = GraphWriter(scope, container, "scaler")
    chain, clip = _scaler_chain(model)
    x = operator.inputs[0].full_name
    elem = _elem(operator.outputs[0])
    if _elem(operator.inputs[0]) != elem:
        x = g.node("Cast", [x], to=elem)
    mode = "float64" if elem == DOUBLE else _float32_mode(model, chain, clip)
    for op, values in chain:
        if mode == "float64" and elem == FLOAT:
            x = g.node("Cast", [x], to=DOUBLE)
            x = g.node("Cast", [g.node(op, [x, g.const(op.lower(), values)])], to=FLOAT)
        else:
            x = g.node(op, [x, g.const(op.lower(), values, elem)])
    if clip is not None:
        x = g.node("Clip", [x, g.const("lo", clip[0], elem, []), g.const("hi", clip[1], elem, [])])
    _finish_transformer(g, operator, x, elem)


def imputer_is_simple(model) -> bool:
    statistics = np.asarray(model.statistics_)
    return (
        isinstance(model.missing_values, float)
        and np.isnan(model.missing_values)
        and not model.add_indicator
        and statistics.dtype.kind == "f"
        and not np.isnan(statistics).any()
    )


def convert_exact_imputer(scope, operator, container):
    """``X[isnan(X)] = statistics_`` (float32 data get the statistics rounded to
    nearest, as numpy's assignment rounds); anything else goes to skl2onnx."""
    model = operator.raw_operator
    if not imputer_is_simple(model) or operator.inputs[0].type.__class__.__name__.startswith(
        ("Int", "String")
    ):
        from skl2onnx.common._registration import get_converter

        return get_converter(operator.type)(scope, operator, container)
    g = GraphWriter(scope, container, "impute")
    elem = _elem(operator.outputs[0])
    x = operator.inputs[0].full_name
    if _elem(operator.inputs[0]) != elem:
        x = g.node("Cast", [x], to=elem)
    stats = g.const("statistics", model.statistics_, elem, [1, len(model.statistics_)])
    _finish_transformer(g, operator, g.node("Where", [g.node("IsNaN", [x]), stats, x]), elem)


#: skl2onnx ``custom_conversion_functions`` for one ``to_onnx`` call.
EXACT_TRANSFORMERS = {
    StandardScaler: convert_exact_scaler,
    RobustScaler: convert_exact_scaler,
    MinMaxScaler: convert_exact_scaler,
    MaxAbsScaler: convert_exact_scaler,
    SimpleImputer: convert_exact_imputer,
    OneHotEncoder: convert_exact_one_hot,
}

#: skl2onnx ``custom_shape_calculators`` for one ``to_onnx`` call.
EXACT_SHAPES = {OneHotEncoder: one_hot_shape}


def parse_column_transformer(scope, model, inputs, custom_parsers=None):
    """skl2onnx's ColumnTransformer parser, with the concatenation typed as numpy
    types ``hstack``: float64 when any part is float64. skl2onnx types it after
    the first part, so a OneHotEncoder (float) first would round the float64
    parts of a float64 graph to float32."""
    from skl2onnx._parse import _parse_sklearn_column_transformer

    outputs = _parse_sklearn_column_transformer(scope, model, inputs, custom_parsers)
    for operator in scope.operators.values():
        if operator.type == "SklearnConcat" and operator.outputs[0] in outputs:
            if any(isinstance(v.type, DoubleTensorType) for v in operator.inputs):
                operator.outputs[0].type = DoubleTensorType(operator.outputs[0].type.shape)
    return outputs


def parse_pipeline(scope, model, inputs, custom_parsers=None):
    """skl2onnx's Pipeline parser on the steps that compute: a ``"passthrough"`` or
    None step is the identity, which skl2onnx's parser cannot read (it asks each step
    for its scikit-learn tags)."""
    from skl2onnx._parse import _parse_sklearn_pipeline

    steps = [(n, s) for n, s in model.steps if s is not None and not isinstance(s, str)]
    if not steps:
        return inputs
    if len(steps) != len(model.steps):
        view = Pipeline.__new__(Pipeline)  # the same fitted steps, none copied
        view.__dict__.update(model.__dict__)
        view.steps = steps
        model = view
    return _parse_sklearn_pipeline(scope, model, inputs, custom_parsers)


#: skl2onnx ``custom_parsers`` for one ``to_onnx`` call.
EXACT_PARSERS = {ColumnTransformer: parse_column_transformer, Pipeline: parse_pipeline}
