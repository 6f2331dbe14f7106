"""Parser and converter of :class:`bernonnx.CalibratedClassifier` (mirrors
``bernonnx/calibration.py``).

The model becomes ONE graph: the parser hands each fold's fitted base model to
:func:`~bernonnx.converters.base_scores.parse_scores` (raw scores when the
calibrators were fitted on ``decision_function``), and their score outputs
feed one ``BernonnxCalibrationStage`` operator, whose converter emits::

    per fold pair:  scores -> Cast(double) -> [log-odds] -> [column of each class]
                    -> calibrator (its registered emitter); a binary decision
                    function [-z, z] from an exact base converter: z itself
                    (its Neg and Concat dropped)
                    binary: [1 - p, p];  multiclass: p_k / sum_k p_k (uniform if 0),
                    or a multiclass calibrator on all K columns at once
    mean over pairs -> probabilities (Cast to the graph's float type)
    ArgMax -> Gather(classes) -> label
    every calibrator with an interval (Venn-Abers): each pair's intervals, (N, 2) or
    (N, K, 2), mean over pairs -> interval (float64)

Both outputs are tensors; ``zipmap=True`` adds skl2onnx's ZipMap on request.
This mirrors ``CalibratedPair.predict_proba`` and ``CalibratedClassifier.predict_proba``.
"""

from __future__ import annotations

from onnx import TensorProto
from skl2onnx.common.data_types import DoubleTensorType

from bernonnx._registry import entry_for, resolve
from bernonnx.calibration import is_multiclass_calibrator
from bernonnx.converters._classifier import (
    basis_option,
    calibrate,
    declare_outputs,
    one_vs_rest,
    scores_to_double,
    write_outputs,
)
from bernonnx.converters._graph import GraphWriter, check_opset
from bernonnx.converters.base_scores import parse_scores

STAGE = "BernonnxCalibrationStage"


def parse_fold_scores(scope, model, inputs, custom_parsers=None) -> list:
    """Each fold's base-model scores of a fitted ``CalibratedClassifier``, parsed."""
    return [
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


def parse_calibrated_classifier(scope, model, inputs, custom_parsers=None):
    """Parse every fold's base model, then one calibration-stage operator."""
    scores = parse_fold_scores(scope, model, inputs, custom_parsers)
    operator = scope.declare_local_operator(STAGE, model)
    operator.inputs.extend(scores)
    outputs = declare_outputs(scope, operator, model, inputs, len(model.classes_))
    if _interval_emitters(model) is not None:
        n_classes = len(model.classes_)
        shape = [None, 2] if n_classes == 2 else [None, n_classes, 2]
        interval = scope.declare_local_variable("interval", DoubleTensorType(shape))
        operator.outputs.append(interval)
        outputs = [*outputs, interval]
    return outputs


def _interval_emitters(model):
    """Each pair's calibrators' interval emitters (``Entry.interval``), or None unless
    every calibrator has one (``CalibratedClassifier.predict_interval``)."""
    emitters = []
    for pair in model.calibrated_classifiers_:
        try:
            names = [entry_for(cal).interval for cal in pair.calibrators]
        except TypeError:
            return None
        if None in names:
            return None
        emitters.append([resolve(name) for name in names])
    return emitters


def _decision_column(g: GraphWriter, pair, score: str) -> str | None:
    """``score`` reduced to its column ``z`` when it is a binary decision function's
    ``[-z, z]`` written by an exact base converter (``exact_models.signed_pair``), or
    None.

    The calibrators read ``z`` alone, and onnxruntime runs every node, read or not (on
    a single row about 0.3 us each): the ``Neg`` and the ``Concat`` leave the graph,
    and ``z`` takes the name ``score``, which ``check_parity`` reads as ``[df]``.
    """
    done = g.container.__dict__.setdefault("_bernonnx_decision_columns", set())
    if score in done:
        return score
    if pair.response_method != "decision_function" or getattr(pair, "log_odds_from", None):
        return None
    nodes = g.container.nodes
    producer = {out: node for node in nodes for out in node.output}
    concat = producer.get(score)
    if concat is None or concat.op_type != "Concat" or len(concat.input) != 2:
        return None
    neg, z = producer.get(concat.input[0]), concat.input[1]
    if neg is None or neg.op_type != "Neg" or list(neg.input) != [z] or z not in producer:
        return None
    readers = [node for node in nodes if z in node.input or neg.output[0] in node.input]
    if any(node is not neg and node is not concat for node in readers):
        return None
    nodes[:] = [node for node in nodes if node is not neg and node is not concat]
    outputs = producer[z].output
    outputs[list(outputs).index(z)] = score
    done.add(score)
    return score


def _binary_scores(g: GraphWriter, pair, score: str) -> str:
    """The (N, 1) float64 scores a binary pair's calibrator reads."""
    column = _decision_column(g, pair, score)
    raw = scores_to_double(
        g,
        score if column is None else column,
        pair.response_method,
        pair.log_odds,
        getattr(pair, "log_odds_from", None),
    )
    return raw if column is not None else g.column(raw, 1)


def _pair_interval(g: GraphWriter, pair, emitters, score: str, n_classes: int) -> str:
    """One fold's ``CalibratedPair.predict_interval``: (N, 2), or (N, K, 2)."""
    writer = GraphWriter(g.scope, g.container, f"{g.prefix}_interval")
    if n_classes == 2:
        return emitters[0](writer, _binary_scores(g, pair, score), pair.calibrators[0])
    raw = scores_to_double(
        g, score, pair.response_method, pair.log_odds, getattr(pair, "log_odds_from", None)
    )
    bounds = [
        emit(writer, writer.column(raw, column), cal)
        for emit, cal, column in zip(emitters, pair.calibrators, range(n_classes), strict=True)
    ]
    axis = g.const("axis1", [1], TensorProto.INT64)
    return g.node("Concat", [g.node("Unsqueeze", [b, axis]) for b in bounds], axis=1)


def _pair_probabilities(g: GraphWriter, pair, score: str, n_classes: int, basis: str):
    """One fold's calibrated probabilities from its base model's (N, K) scores."""
    cal_writer = GraphWriter(g.scope, g.container, f"{g.prefix}_cal")
    if n_classes == 2:
        column = _binary_scores(g, pair, score)
        return calibrate(cal_writer, column, pair.calibrators[0], pair=True, basis=basis)
    raw = scores_to_double(
        g, score, pair.response_method, pair.log_odds, getattr(pair, "log_odds_from", None)
    )
    if is_multiclass_calibrator(pair.calibrators[0]):
        return calibrate(cal_writer, raw, pair.calibrators[0], pair=False, basis=basis)
    positives = [
        calibrate(cal_writer, cal_writer.column(raw, column), cal, pair=False, basis=basis)
        for cal, column in zip(pair.calibrators, range(n_classes), strict=True)
    ]
    return one_vs_rest(g, positives, n_classes)


def mean_probabilities(g: GraphWriter, model, scores: list[str], basis: str) -> str:
    """The float64 mean over the fold pairs of ``model`` (a ``CalibratedClassifier``)
    of their calibrated probabilities, from each pair's base-model ``scores``."""
    n_classes = len(model.classes_)
    pairs = [
        _pair_probabilities(g, pair, score, n_classes, basis)
        for pair, score in zip(model.calibrated_classifiers_, scores, strict=True)
    ]
    mean = pairs[0]
    if len(pairs) > 1:
        mean = g.node("Div", [g.node("Sum", pairs), g.const("n_pairs", float(len(pairs)))])
    return mean


def convert_calibration_stage(scope, operator, container):
    """Calibrate each pair's scores, average the pairs, add the label."""
    model = operator.raw_operator
    check_opset(container, type(model).__name__)
    g = GraphWriter(scope, container, "calib")
    scores = [var.full_name for var in operator.inputs]
    basis = basis_option(container, model)
    write_outputs(g, operator, mean_probabilities(g, model, scores, basis))
    emitters = _interval_emitters(model)
    if emitters is not None:
        n_classes = len(model.classes_)
        intervals = [
            _pair_interval(g, pair, emit, score, n_classes)
            for pair, emit, score in zip(
                model.calibrated_classifiers_, emitters, scores, strict=True
            )
        ]
        interval = intervals[0]
        if len(intervals) > 1:
            total = g.node("Sum", intervals)
            interval = g.node("Div", [total, g.const("n_pairs", float(len(intervals)))])
        g.container.add_node(
            "Identity",
            [interval],
            operator.outputs[2].full_name,
            name=g.scope.get_unique_operator_name(f"{g.prefix}_interval"),
        )
