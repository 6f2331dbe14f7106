"""Base models' scores inside one graph: the parser and converter of a
``BernonnxRawScores`` operator.

:func:`parse_scores` hands a fitted base model (a ``FrozenEstimator`` is
unwrapped; Pipelines and ColumnTransformers go through skl2onnx's own parser)
to skl2onnx so that its last output is the scores its calibrators were fitted
on: ``zipmap=False``, ``raw_scores=True`` for ``decision_function``. The final
classifier becomes a ``BernonnxRawScores`` operator, converted exactly by
``converters/exact.py`` when it can be, by skl2onnx's own converter otherwise.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np
from onnx import TensorProto
from skl2onnx._parse import _parse_sklearn
from skl2onnx._supported_operators import sklearn_operator_name_map
from skl2onnx.common._registration import get_converter, get_shape_calculator
from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline

from bernonnx._meta import booster_kind
from bernonnx._meta import final_and_inputs as _final_and_inputs
from bernonnx.converters._classifier import float_type, label_type
from bernonnx.converters._graph import DOUBLE, GraphWriter, check_opset
from bernonnx.converters.boosters import register_booster_converter
from bernonnx.converters.exact import exact_scores, exact_supported

SCORES = "BernonnxRawScores"

#: The X that ``bernonnx.export.to_onnx`` was given, at the graph's dtype, at the
#: level of the model being parsed: it tells which dtype numpy computes in.
SAMPLE: ContextVar = ContextVar("bernonnx_sample", default=None)


def _final_step(estimator):
    return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator


def _score_options(final, method: str) -> dict:
    """Sub-model options giving the scores the calibrators were fitted on."""
    allowed = get_converter(sklearn_operator_name_map[type(final)]).get_allowed_options() or {}
    options = {"zipmap": False} if "zipmap" in allowed else {}
    if method == "decision_function":
        if "raw_scores" not in allowed:
            raise NotImplementedError(
                f"the skl2onnx converter of {type(final).__name__} has no raw_scores option, "
                "so its decision_function cannot be exported; fit CalibratedClassifier with "
                "response_method='predict_proba'"
            )
        options["raw_scores"] = True
    return options


def _final_scores_parser(final, options: dict, custom_parsers):
    """Parser for the final classifier step: a ``BernonnxRawScores`` operator.

    skl2onnx hands converters the options given to ``to_onnx``, not those a
    parser adds to its scope, so ``raw_scores`` cannot be requested from here;
    the operator carries them and its converter sets them before delegating.
    Models that ``converters/exact.py`` computes exactly get one float64 score
    output and no label.
    """
    others = {k: v for k, v in (custom_parsers or {}).items() if k is not type(final)}

    def parse(scope, model, inputs, custom_parsers=None):
        if model is not final:  # another step of the same type: the usual parser
            return _parse_sklearn(scope, model, inputs, custom_parsers=others or None)
        operator = scope.declare_local_operator(SCORES, model)
        operator.inputs.extend(inputs)
        operator.bernonnx_options = options
        if options.get("exact"):
            scores = scope.declare_local_variable("base_scores", DoubleTensorType())
            operator.outputs.append(scores)
            return [scores]
        label = scope.declare_local_variable("base_label", label_type(np.asarray(model.classes_)))
        scores = scope.declare_local_variable("base_scores", float_type(inputs)())
        operator.outputs.extend([label, scores])
        return [label, scores]

    return parse


def _numpy_input_dtype(estimator):
    """The dtype scikit-learn's final step sees for the export sample (None if unknown)."""
    sample = SAMPLE.get()
    if sample is None:
        return None
    try:
        _, sample = _final_and_inputs(estimator, sample)
        dtype = sample.dtype if hasattr(sample, "dtype") else np.asarray(sample).dtype
        return dtype.name  # sparse matrices (one-hot heavy ColumnTransformers) have one too
    except Exception:  # noqa: BLE001 - a hint only; the graph's dtype is the fallback
        return None


def parse_scores(scope, estimator, method: str, inputs, custom_parsers=None, log_odds_from=None):
    """Parse one fitted base model so that its last output is ``method``'s scores.

    A ``FrozenEstimator`` is unwrapped; Pipelines and ColumnTransformers go
    through skl2onnx's own parser, the final classifier through a
    ``BernonnxRawScores`` operator. With ``log_odds_from="log_proba"`` the
    scores are each class's log-odds from the model's log-probabilities
    (``bernonnx._meta.log_odds_source``). Returns the score variable.
    """
    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    final = _final_step(estimator)
    exact = exact_supported(final, method)
    if type(final) not in sklearn_operator_name_map and not exact:
        if not register_booster_converter(final):
            extra = (
                " (install onnxmltools: pip install bernonnx[boosters])"
                if booster_kind(final)
                else ""
            )
            raise NotImplementedError(
                f"no skl2onnx converter is registered for {type(final).__name__}{extra}"
            )
    if exact:
        options = {
            "exact": True,
            "method": method,
            "log_odds_from": log_odds_from,
            "numpy_dtype": _numpy_input_dtype(estimator),
        }
    else:
        if log_odds_from == "log_proba":
            raise NotImplementedError(
                f"log-odds from the log-probabilities of {type(final).__name__} cannot be exported"
            )
        options = _score_options(final, method)
    if type(final) in sklearn_operator_name_map:
        # also on the scope: the Pipeline parser would otherwise give the final
        # step zipmap=True, which some converters (LinearSVC) do not accept
        scope.add_options(id(final), _score_options(final, "predict_proba"))
        if not exact:
            scope.add_options(id(final), options)
    else:
        # no skl2onnx converter (XGBoost, LightGBM margins): no options at all, and
        # none from the Pipeline parser, which would fail validation
        scope.add_options(id(final), {})
    parsers = dict(custom_parsers or {})
    parsers[type(final)] = _final_scores_parser(final, options, custom_parsers)
    return _parse_sklearn(scope, estimator, inputs, custom_parsers=parsers)[-1]


def calculate_raw_scores_shapes(operator):
    """The wrapped classifier's own shape calculator; (N, max(K, 2)) for exact scores."""
    if operator.bernonnx_options.get("exact"):
        n = operator.inputs[0].get_first_dimension()
        operator.outputs[0].type.shape = [n, max(len(operator.raw_operator.classes_), 2)]
        return
    get_shape_calculator(sklearn_operator_name_map[type(operator.raw_operator)])(operator)


def _ints_not_bools(value):
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value.astype(np.int64)
    if isinstance(value, list | tuple) and any(isinstance(v, bool | np.bool_) for v in value):
        return [int(v) if isinstance(v, bool | np.bool_) else v for v in value]
    return value


def convert_raw_scores(scope, operator, container):
    """Set the score options of the wrapped classifier, then run its skl2onnx converter.

    The operator takes the wrapped model's alias during the call (some
    converters branch on it). Also casts boolean lists in node attributes to
    ints: skl2onnx 1.20's
    HistGradientBoosting converter passes numpy booleans where onnx >= 1.17
    requires ints ("AttributeProto.ints: Expected an int, got a boolean").
    """
    model = operator.raw_operator
    check_opset(container, f"the scores of {type(model).__name__}")
    options = operator.bernonnx_options
    if options.get("exact"):
        g = GraphWriter(scope, container, "base")
        inp = operator.inputs[0]
        elem = DOUBLE if isinstance(inp.type, DoubleTensorType) else TensorProto.FLOAT
        name = inp.full_name
        if not isinstance(inp.type, DoubleTensorType | FloatTensorType):
            name, elem = g.node("Cast", [name], to=DOUBLE), DOUBLE
        scores = exact_scores(g, name, elem, model, options["method"], options)
        # the last node writes the operator's output itself: skl2onnx's optimiser
        # would drop an Identity and the name base_scores* with it, which
        # check_parity looks for to tell which stage diverges
        for node in reversed(container.nodes):
            if scores in node.output:
                node.output[list(node.output).index(scores)] = operator.outputs[0].full_name
                break
        return
    if container.options is None:
        container.options = {}
    current = container.options.get(id(model)) or {}
    container.options[id(model)] = {**current, **operator.bernonnx_options}
    add_node = container.add_node

    def add_node_with_int_flags(*args, **attrs):
        return add_node(*args, **{k: _ints_not_bools(v) for k, v in attrs.items()})

    # some converters branch on operator.type (GaussianNB vs other naive Bayes)
    alias, operator.type = operator.type, sklearn_operator_name_map[type(model)]
    container.add_node = add_node_with_int_flags
    try:
        get_converter(operator.type)(scope, operator, container)
    finally:
        del container.add_node  # back to the class's method
        operator.type = alias
