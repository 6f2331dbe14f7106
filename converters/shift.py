"""Parser and converter of :class:`bernonnx.PriorShiftAdapter` (mirrors
``bernonnx/shift/_adapter.py``).

The adapted model is ONE graph: the wrapped model's nodes (a ``CalibratedClassifier``'s
base models and calibrators, as ``converters/calibration.py`` writes them, or a
calibrator alone on its scores), then, in float64, Bayes' rule for the new priors::

    probabilities p (N, K), float64, before any cast
    w = Div(target, train)           target: an initializer holding prior_, or the
                                     graph input ``priors`` (N, K) or (1, K), double,
                                     whose default (an initializer) is prior_
    q = Mul(p, w)
    s = ReduceSum(q, axis 1)
    Where(s > 0, Div(q, s), 1 / K)   uniform where s is 0, as Python
    with the priors input: Where(ReduceMin(target) > 0 and |ReduceSum(target) - 1| <= 1e-6,
                                 that, NaN)   Python refuses such priors; a graph cannot
                                              raise, so the row's probabilities are NaN
    ArgMax -> Gather(classes) -> label;  Cast -> probabilities

This is ``bernonnx._core.priors.adapt_proba``, operation for operation.
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper
from sklearn.frozen import FrozenEstimator

from bernonnx._core.priors import PRIOR_SUM_TOLERANCE
from bernonnx._registry import entry_for
from bernonnx.calibration import CalibratedClassifier
from bernonnx.converters._classifier import (
    NUMERIC_TYPES,
    basis_option,
    calibrate,
    declare_outputs,
    write_outputs,
)
from bernonnx.converters._graph import DOUBLE, GraphWriter, check_opset
from bernonnx.converters.calibration import mean_probabilities, parse_fold_scores

STAGE = "BernonnxPriorShiftStage"
#: The name of the per-request priors input (``to_onnx(..., priors_input=True)``).
PRIORS_INPUT = "priors"


def inner_model(model):
    """The model a ``PriorShiftAdapter`` wraps, ``FrozenEstimator`` unwrapped, if the
    graph can hold it: a ``CalibratedClassifier`` or a registered calibrator."""
    inner = model.estimator_
    while isinstance(inner, FrozenEstimator):
        inner = inner.estimator
    if isinstance(inner, CalibratedClassifier):
        return inner
    try:
        entry_for(inner)
    except TypeError:
        raise NotImplementedError(
            f"PriorShiftAdapter around {type(inner).__name__} cannot be exported: the graph "
            "adapts a CalibratedClassifier or a bernonnx calibrator on its scores; wrap "
            "the model (with its preprocessing as its base estimator) in one of those"
        ) from None
    return inner


def parse_prior_shift(scope, model, inputs, custom_parsers=None):
    """The wrapped model's scores (each fold's base model), then one adaptation stage."""
    inner = inner_model(model)
    if isinstance(inner, CalibratedClassifier):
        scores = parse_fold_scores(scope, inner, inputs, custom_parsers)
    else:
        scores = list(inputs)
    operator = scope.declare_local_operator(STAGE, model)
    operator.inputs.extend(scores)
    return declare_outputs(scope, operator, model, inputs, max(len(model.classes_), 2))


def calculate_prior_shift_shapes(operator):
    """Label (N,) and probabilities (N, K); the inputs must be numeric tensors."""
    for var in operator.inputs:
        if not isinstance(var.type, NUMERIC_TYPES):
            raise ValueError(
                f"input {var.onnx_name!r} of PriorShiftAdapter must be a float, double or "
                f"integer tensor, got {type(var.type).__name__}"
            )
    n = operator.inputs[0].get_first_dimension() if operator.inputs else None
    operator.outputs[0].type.shape = [n]
    operator.outputs[1].type.shape = [n, max(len(operator.raw_operator.classes_), 2)]


def _target_prior(g: GraphWriter, model, as_input: bool) -> str:
    """``prior_`` as a (1, K) float64 constant, or as the graph input ``priors`` whose
    default (an initializer of the same name) holds it."""
    values = np.asarray(model.prior_, dtype=np.float64)[None, :]
    if not as_input:
        return g.const("target_prior", values)
    name = g.scope.get_unique_variable_name(PRIORS_INPUT)
    g.container.initializers.append(numpy_helper.from_array(values, name))
    g.container.inputs.append(helper.make_tensor_value_info(name, DOUBLE, [None, values.shape[1]]))
    return name


def adapt(g: GraphWriter, probabilities: str, model, *, priors_input: bool) -> str:
    """Bayes' rule for ``model.prior_`` (or the ``priors`` input) on float64
    ``probabilities`` calibrated for ``model.train_prior_``."""
    train = g.const("train_prior", np.asarray(model.train_prior_, dtype=np.float64)[None, :])
    target = _target_prior(g, model, priors_input)
    ratio = g.node("Div", [target, train])
    weighted = g.node("Mul", [probabilities, ratio])
    total = g.reduce("ReduceSum", weighted)
    # a zero sum (no valid priors give one) divides to NaN here, and Where drops it
    shares = g.node("Div", [weighted, total])
    positive = g.node("Greater", [total, g.const("zero", 0.0)])
    uniform = g.const("uniform", 1.0 / max(len(model.classes_), 2))
    adapted = g.node("Where", [positive, shares, uniform])
    if not priors_input:
        return adapted  # prior_ was checked when it was set
    # the priors Python refuses (a zero, a negative or NaN share, a sum off 1) give NaN
    # rows: NaN fails both comparisons, so it lands on the NaN branch too
    above = g.node("Greater", [g.reduce("ReduceMin", target), g.const("zero", 0.0)])
    off = g.node("Abs", [g.node("Sub", [g.reduce("ReduceSum", target), g.const("one", 1.0)])])
    summed = g.node("LessOrEqual", [off, g.const("tolerance", PRIOR_SUM_TOLERANCE)])
    valid = g.node("And", [above, summed])
    return g.node("Where", [valid, adapted, g.const("nan", np.nan)])


def convert_prior_shift_stage(scope, operator, container):
    """The wrapped model's float64 probabilities, adapted, then label and cast."""
    model = operator.raw_operator
    check_opset(container, type(model).__name__)
    g = GraphWriter(scope, container, "shift")
    inner = inner_model(model)
    basis = basis_option(container, model)
    if isinstance(inner, CalibratedClassifier):
        scores = [var.full_name for var in operator.inputs]
        probabilities = mean_probabilities(g, inner, scores, basis)
    else:
        scores = [g.to_double(var.full_name) for var in operator.inputs]
        scores = scores[0] if len(scores) == 1 else g.node("Concat", scores, axis=1)
        probabilities = calibrate(g, scores, inner, pair=True, basis=basis)
    priors_input = container.get_options(model, {"priors_input": False})["priors_input"]
    write_outputs(g, operator, adapt(g, probabilities, model, priors_input=priors_input))
