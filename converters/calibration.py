"""Parsers, shape calculators and converters for bernonnx classifiers.

``BernsteinCalibrator`` on its own takes a score tensor (N, 1).
``CalibratedClassifier`` becomes ONE graph: a custom parser hands each
fitted base model (a ``FrozenEstimator`` is unwrapped; Pipelines and
ColumnTransformers go through skl2onnx's own parser) to skl2onnx with
``zipmap=False`` and ``raw_scores=True`` when the calibrators were fitted on
``decision_function``. Their score outputs feed one ``BernonnxCalibrationStage``
operator, whose converter emits::

    per fold pair:  scores -> [column of each class] -> [log-odds] -> calibrator
                    binary: [1 - p, p];  multiclass: p_k / sum_k p_k (uniform if 0)
    mean over pairs -> probabilities (Cast to the graph's float type)
    ArgMax -> Gather(classes) -> label

Both outputs are tensors; ``zipmap=True`` adds skl2onnx's ZipMap on request.
This mirrors ``CalibratedPair.predict_proba`` and ``CalibratedClassifier.predict_proba``.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np
from onnx import TensorProto
from skl2onnx._parse import _apply_zipmap, _parse_sklearn
from skl2onnx._supported_operators import sklearn_operator_name_map
from skl2onnx.common._registration import get_converter, get_shape_calculator
from skl2onnx.common.data_types import (
    DoubleTensorType,
    FloatTensorType,
    Int64TensorType,
    StringTensorType,
)
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline

from bernonnx.calibration import LOG_ODDS_EPS, _final_and_inputs
from bernonnx.converters._graph import DOUBLE, GraphWriter
from bernonnx.converters.baselines import emit_baseline
from bernonnx.converters.bernstein import emit_bernstein
from bernonnx.converters.exact import exact_scores, exact_supported
from bernonnx.converters.multivariate import emit_multivariate

STAGE = "BernonnxCalibrationStage"
SCORES = "BernonnxRawScores"
#: skl2onnx alias of each calibrator class, by class name.
CALIBRATOR_ALIASES = {
    name: f"Bernonnx{name}"
    for name in (
        "BernsteinCalibrator",
        "PlattCalibrator",
        "IsotonicCalibrator",
        "HistogramCalibrator",
        "PlattHistogramCalibrator",
        "MultivariateBernsteinCalibrator",
    )
}
CLASSIFIER_OPTIONS = {
    "zipmap": [False, True, "columns"],
    "nocl": [False, True],
    "basis": ["exp", "pow"],
}


def _label_type(classes: np.ndarray):
    if classes.dtype.kind in "OUS":
        return StringTensorType([None])
    if classes.dtype.kind in "biu" or (
        classes.dtype.kind == "f" and np.all(np.mod(classes, 1) == 0)
    ):
        return Int64TensorType([None])
    raise NotImplementedError(f"class labels of dtype {classes.dtype} cannot be exported")


def _float_type(inputs):
    """Double outputs when any graph input is double, float otherwise."""
    if any(isinstance(var.type, DoubleTensorType) for var in inputs):
        return DoubleTensorType
    return FloatTensorType


def _declare_outputs(scope, operator, model, inputs, n_classes):
    label = scope.declare_local_variable("label", _label_type(np.asarray(model.classes_)))
    probabilities = scope.declare_local_variable(
        "probabilities", _float_type(inputs)([None, n_classes])
    )
    operator.outputs.extend([label, probabilities])
    options = scope.get_options(model, {"zipmap": False})
    if options["zipmap"]:
        return _apply_zipmap(
            options["zipmap"], scope, model, inputs[0].type, [label, probabilities]
        )
    return [label, probabilities]


def parse_score_calibrator(scope, model, inputs, custom_parsers=None):
    """A calibrator alone: (N, 1) scores ((N, M) for the multivariate one) in,
    label and (N, 2) probabilities out."""
    operator = scope.declare_local_operator(CALIBRATOR_ALIASES[type(model).__name__], model)
    operator.inputs.extend(inputs)
    return _declare_outputs(scope, operator, model, inputs, 2)


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
        label = scope.declare_local_variable("base_label", _label_type(np.asarray(model.classes_)))
        scores = scope.declare_local_variable("base_scores", _float_type(inputs)())
        operator.outputs.extend([label, scores])
        return [label, scores]

    return parse


#: The X that ``bernonnx.export.to_onnx`` was given, at the graph's dtype, at the
#: level of the model being parsed: it tells which dtype numpy computes in.
SAMPLE: ContextVar = ContextVar("bernonnx_sample", default=None)


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
    (``bernonnx.calibration.log_odds_source``). Returns the score variable.
    """
    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    final = _final_step(estimator)
    exact = exact_supported(final, method)
    if type(final) not in sklearn_operator_name_map and not exact:
        raise NotImplementedError(
            f"no skl2onnx converter is registered for {type(final).__name__}"
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
    parsers = dict(custom_parsers or {})
    parsers[type(final)] = _final_scores_parser(final, options, custom_parsers)
    return _parse_sklearn(scope, estimator, inputs, custom_parsers=parsers)[-1]


def parse_calibrated_classifier(scope, model, inputs, custom_parsers=None):
    """Parse every fold's base model, then one calibration-stage operator."""
    scores = [
        parse_scores(
            scope,
            pair.estimator,
            pair.response_method,
            inputs,
            custom_parsers,
            log_odds_from=getattr(pair, "log_odds_from", None),
        )
        for pair in model.calibrated_classifiers_
    ]
    operator = scope.declare_local_operator(STAGE, model)
    operator.inputs.extend(scores)
    return _declare_outputs(scope, operator, model, inputs, len(model.classes_))


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


def calculate_classifier_output_shapes(operator):
    """Label (N,) and probabilities (N, n_classes); the types were set by the parser."""
    n_classes = len(operator.raw_operator.classes_)
    n = operator.inputs[0].get_first_dimension() if operator.inputs else None
    operator.outputs[0].type.shape = [n]
    operator.outputs[1].type.shape = [n, n_classes]


def _finish(g: GraphWriter, operator, probabilities: str) -> None:
    """Label by ArgMax on the float64 probabilities, then the output cast.

    A NaN input row (Python raises a ValueError there; a graph cannot) gives
    NaN probabilities and, deterministically, the first class as label.
    """
    classes = np.asarray(operator.raw_operator.classes_)
    if classes.dtype.kind in "biu" and np.array_equal(classes, np.arange(classes.shape[0])):
        # labels 0..K-1 are the ArgMax itself (an all-NaN row gives 0 in
        # onnxruntime, as numpy's argmax does)
        g.container.add_node(
            "ArgMax",
            [probabilities],
            operator.outputs[0].full_name,
            name=g.scope.get_unique_operator_name(f"{g.prefix}_label"),
            axis=1,
            keepdims=0,
        )
    else:
        index = g.node("ArgMax", [probabilities], "argmax", axis=1, keepdims=0)
        if classes.dtype.kind in "OUS":
            table = g.const("classes", classes.astype(str), TensorProto.STRING)
        else:
            table = g.const("classes", classes.astype(np.int64), TensorProto.INT64)
        g.container.add_node(
            "Gather",
            [table, index],
            operator.outputs[0].full_name,
            name=g.scope.get_unique_operator_name(f"{g.prefix}_label"),
            axis=0,
        )
    out_type = operator.outputs[1].type
    to = DOUBLE if isinstance(out_type, DoubleTensorType) else TensorProto.FLOAT
    g.container.add_node(
        "Cast",
        [probabilities],
        operator.outputs[1].full_name,
        name=g.scope.get_unique_operator_name(f"{g.prefix}_cast"),
        to=to,
    )


def _basis_option(container, model) -> str:
    return container.get_options(model, {"basis": "exp"})["basis"]


def emit_calibrator(g: GraphWriter, raw: str, width: int, column: int, cal, **kw) -> str:
    """Any bernonnx calibrator on column ``column`` of the float64 ``raw`` (see
    ``emit_bernstein`` and ``emit_baseline`` for the nodes)."""
    if type(cal).__name__ == "BernsteinCalibrator":
        return emit_bernstein(g.scope, g.container, raw, width, column, cal, prefix=g.prefix, **kw)
    return emit_baseline(g, raw, width, column, cal, pair=kw["pair"])


def convert_score_calibrator(scope, operator, container):
    """Standalone calibrator: Cast(scores) -> calibrator -> [1 - p, p] -> label."""
    g = GraphWriter(scope, container, "cal")
    model = operator.raw_operator
    scores = g.to_double(operator.inputs[0].full_name)
    if type(model).__name__ == "MultivariateBernsteinCalibrator":
        probabilities = emit_multivariate(
            g, scores, model, basis=_basis_option(container, model), pair=True
        )
        _finish(g, operator, probabilities)
        return
    probabilities = emit_calibrator(
        g,
        scores,
        1,
        0,
        model,
        basis=_basis_option(container, model),
        pair=True,
    )
    _finish(g, operator, probabilities)


def scores_to_double(
    g: GraphWriter, score: str, method: str, log_odds: bool, log_odds_from=None
) -> str:
    """A base model's (N, K) score output as the float64 scores its calibrators saw.

    Log-odds from log-probabilities arrive ready from ``parse_scores``; log-odds
    of probabilities are taken here, from clipped probabilities.
    """
    raw = g.to_double(score)
    if method == "predict_proba" and log_odds and log_odds_from != "log_proba":
        p = g.node("Clip", [raw, g.const("eps", LOG_ODDS_EPS), g.const("1meps", 1 - LOG_ODDS_EPS)])
        q = g.node("Sub", [g.const("one", 1.0), p])
        raw = g.node("Sub", [g.node("Log", [p]), g.node("Log", [q])], "logit")
    return raw


def one_vs_rest(g: GraphWriter, positives: list[str], n_classes: int) -> str:
    """Per-class (N, 1) positive probabilities divided by their row sum (uniform if 0).

    With two classes ``positives`` holds the (N, 2) pair already.
    """
    if n_classes == 2:
        return positives[0]
    stacked = g.node("Concat", positives, axis=1)
    total = g.reduce("ReduceSum", stacked)
    ratio = g.node("Div", [stacked, g.node("Max", [total, g.const("tiny", 1e-300)])])
    positive = g.node("Greater", [total, g.const("zero", 0.0)])
    return g.node("Where", [positive, ratio, g.const("uniform", 1.0 / n_classes)])


def _pair_probabilities(g: GraphWriter, pair, score: str, n_classes: int, basis: str):
    """One fold's calibrated probabilities from its base model's (N, K) scores."""
    raw = scores_to_double(
        g, score, pair.response_method, pair.log_odds, getattr(pair, "log_odds_from", None)
    )
    width = max(n_classes, 2)
    columns = [1] if n_classes == 2 else list(range(n_classes))
    cal_writer = GraphWriter(g.scope, g.container, f"{g.prefix}_cal")
    positives = [
        emit_calibrator(cal_writer, raw, width, column, cal, basis=basis, pair=n_classes == 2)
        for cal, column in zip(pair.calibrators, columns, strict=True)
    ]
    return one_vs_rest(g, positives, n_classes)


def convert_calibration_stage(scope, operator, container):
    """Calibrate each pair's scores, average the pairs, add the label."""
    model = operator.raw_operator
    g = GraphWriter(scope, container, "calib")
    n_classes = len(model.classes_)
    basis = _basis_option(container, model)
    pairs = [
        _pair_probabilities(g, pair, var.full_name, n_classes, basis)
        for pair, var in zip(model.calibrated_classifiers_, operator.inputs, strict=True)
    ]
    mean = pairs[0]
    if len(pairs) > 1:
        mean = g.node("Div", [g.node("Sum", pairs), g.const("n_pairs", float(len(pairs)))])
    _finish(g, operator, mean)
