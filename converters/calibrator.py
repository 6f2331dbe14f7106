"""Parser and converter of any bernonnx calibrator on its own.

Registered for every entry of ``bernonnx._registry.CALIBRATORS``; the nodes
between the input and the outputs are the calibrator's registered emitter::

    Cast(scores, double) -> emitter(pair=True): [1 - p, p] -> ArgMax -> label
                                                            -> Cast -> probabilities

A family with an interval (``Entry.interval``: ``VennAbersCalibrator``) adds a float64
(N, 2) output ``interval``, its ``predict_interval``.

Input: the scores (N, 1), or (N, M) for a multi-score calibrator (or M inputs
(N, 1), one per column, as a DataFrame gives). A multiclass calibrator
(``TemperatureCalibrator``) reads (N, K) scores and its emitter gives the (N, K)
probabilities directly.
"""

from __future__ import annotations

from skl2onnx.common.data_types import DoubleTensorType

from bernonnx._registry import entry_for, resolve
from bernonnx.converters._classifier import (
    basis_option,
    calibrate,
    declare_outputs,
    write_outputs,
)
from bernonnx.converters._graph import GraphWriter, check_opset


def parse_score_calibrator(scope, model, inputs, custom_parsers=None):
    """A calibrator alone: (N, 1) scores ((N, M) for a multi-score one) in,
    label and (N, 2) probabilities out ((N, K) for a multiclass one), and the
    float64 (N, 2) ``interval`` of a family that has one (``Entry.interval``)."""
    entry = entry_for(model)
    operator = scope.declare_local_operator(entry.onnx_alias, model)
    operator.inputs.extend(inputs)
    outputs = declare_outputs(scope, operator, model, inputs, max(len(model.classes_), 2))
    if entry.interval is not None:
        interval = scope.declare_local_variable("interval", DoubleTensorType([None, 2]))
        operator.outputs.append(interval)
        outputs = [*outputs, interval]
    return outputs


def convert_score_calibrator(scope, operator, container):
    """Cast(scores) -> calibrator -> [1 - p, p] -> label."""
    model = operator.raw_operator
    check_opset(container, type(model).__name__)
    g = GraphWriter(scope, container, "cal")
    scores = [g.to_double(var.full_name) for var in operator.inputs]
    # one input per score column (a DataFrame's): side by side, as in Python
    scores = scores[0] if len(scores) == 1 else g.node("Concat", scores, axis=1)
    probabilities = calibrate(g, scores, model, pair=True, basis=basis_option(container, model))
    write_outputs(g, operator, probabilities)
    entry = entry_for(model)
    if entry.interval is not None:
        interval = resolve(entry.interval)(g, scores, model)
        g.container.add_node(
            "Identity",
            [interval],
            operator.outputs[2].full_name,
            name=g.scope.get_unique_operator_name(f"{g.prefix}_interval"),
        )
