"""Parser and converter of :class:`bernonnx.CalibratedClassifier` (mirrors
``bernonnx/calibration.py``).

The model becomes ONE graph: the parser hands each fold's fitted base model to
:func:`~bernonnx.converters.base_scores.parse_scores` (raw scores when the
calibrators were fitted on ``decision_function``), and their score outputs
feed one ``BernonnxCalibrationStage`` operator, whose converter emits::

    per fold pair:  scores -> Cast(double) -> [log-odds] -> [column of each class]
                    -> calibrator (its registered emitter)
                    binary: [1 - p, p];  multiclass: p_k / sum_k p_k (uniform if 0),
                    or a multiclass calibrator on all K columns at once
    mean over pairs -> probabilities (Cast to the graph's float type)
    ArgMax -> Gather(classes) -> label

Both outputs are tensors; ``zipmap=True`` adds skl2onnx's ZipMap on request.
This mirrors ``CalibratedPair.predict_proba`` and ``CalibratedClassifier.predict_proba``.
"""

from __future__ import annotations

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
    return declare_outputs(scope, operator, model, inputs, len(model.classes_))


def _pair_probabilities(g: GraphWriter, pair, score: str, n_classes: int, basis: str):
    """One fold's calibrated probabilities from its base model's (N, K) scores."""
    raw = scores_to_double(
        g, score, pair.response_method, pair.log_odds, getattr(pair, "log_odds_from", None)
    )
    cal_writer = GraphWriter(g.scope, g.container, f"{g.prefix}_cal")
    if n_classes > 2 and is_multiclass_calibrator(pair.calibrators[0]):
        return calibrate(cal_writer, raw, pair.calibrators[0], pair=False, basis=basis)
    columns = [1] if n_classes == 2 else list(range(n_classes))
    positives = [
        calibrate(
            cal_writer, cal_writer.column(raw, column), cal, pair=n_classes == 2, basis=basis
        )
        for cal, column in zip(pair.calibrators, columns, strict=True)
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
