"""ONNX parser and converter of :class:`bernonnx.FusionClassifier` (mirrors ``fusion.py``).

One graph: every base model is parsed as in ``CalibratedClassifier`` (raw
scores, FrozenEstimator unwrapped, Pipelines through skl2onnx), and their
score outputs feed one ``BernonnxFusionStage`` operator, whose converter
emits::

    per base model m:  scores_m -> Cast(double) -> [log-odds]             (N, K)
    binary:  S = Concat(scores_m[:, 1] for m)                             (N, M)
             [1 - p, p] = calibrator(S)   (a multi-score one: its registered emitter)
    K > 2:   p_k = calibrator_k(Concat(scores_m[:, k] for m)), then p_k / sum_k p_k
    ArgMax -> Gather(classes) -> label

This mirrors ``FusionClassifier.predict_proba``.
"""

from __future__ import annotations

from bernonnx._registry import CALIBRATORS
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

FUSION_STAGE = "BernonnxFusionStage"


def parse_fusion_classifier(scope, model, inputs, custom_parsers=None):
    """Parse every base model, then one fusion-stage operator."""
    calibrator = model.calibrators_[0]
    multi = [entry for entry in CALIBRATORS if entry.multi]
    if not any(type(calibrator) is entry.load() for entry in multi):
        raise NotImplementedError(
            f"FusionClassifier exports with a {' or '.join(e.name for e in multi)} only; "
            f"this one was fitted with {type(calibrator).__name__}"
        )
    scores = [
        parse_scores(scope, est, method, inputs, custom_parsers)
        for est, method in zip(model.estimators_, model.response_methods_, strict=True)
    ]
    operator = scope.declare_local_operator(FUSION_STAGE, model)
    operator.inputs.extend(scores)
    return declare_outputs(scope, operator, model, inputs, len(model.classes_))


def convert_fusion_stage(scope, operator, container):
    """Fuse the base models' scores, add the label."""
    model = operator.raw_operator
    check_opset(container, type(model).__name__)
    g = GraphWriter(scope, container, "fusion")
    n_classes = len(model.classes_)
    basis = basis_option(container, model)
    raw = [
        scores_to_double(g, var.full_name, method, model.log_odds)
        for var, method in zip(operator.inputs, model.response_methods_, strict=True)
    ]
    columns = [1] if n_classes == 2 else list(range(n_classes))
    positives = []
    for cal, column in zip(model.calibrators_, columns, strict=True):
        matrix = g.node("Concat", [g.column(r, column) for r in raw], "scores", axis=1)
        positives.append(calibrate(g, matrix, cal, pair=n_classes == 2, basis=basis))
    write_outputs(g, operator, one_vs_rest(g, positives, n_classes))
