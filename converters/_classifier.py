"""What every bernonnx classifier converter shares: its options, its declared
outputs and their shape calculator, the score preparation before a calibrator,
the dispatch to a calibrator's emitter, the one-vs-rest normalisation and the
label and probability outputs.

Each calibrator's emitter is found through the registry
(``bernonnx._registry.CALIBRATORS``) and has one signature::

    emit(g: GraphWriter, scores: str, cal, *, pair: bool, basis: str) -> str

``scores`` is the float64 (N, 1) score (N, M for a multi-score calibrator);
the result is P(y = 1) (N, 1), or ``[1 - p, p]`` (N, 2) with ``pair=True``.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from skl2onnx._parse import _apply_zipmap
from skl2onnx.common.data_types import (
    DoubleTensorType,
    FloatTensorType,
    Int32TensorType,
    Int64TensorType,
    StringTensorType,
)

from bernonnx._meta import LOG_ODDS_EPS
from bernonnx._registry import entry_for, resolve
from bernonnx.converters._graph import DOUBLE, GraphWriter, clipped_log_odds

CLASSIFIER_OPTIONS = {
    "zipmap": [False, True, "columns"],
    "nocl": [False, True],
    "basis": ["exp", "pow"],
}
#: Input types a bernonnx operator accepts (cast to float64 in the graph).
NUMERIC_TYPES = (FloatTensorType, DoubleTensorType, Int64TensorType, Int32TensorType)


def label_type(classes: np.ndarray):
    """The skl2onnx type of a label output for these classes."""
    if classes.dtype.kind in "OUS":
        return StringTensorType([None])
    if classes.dtype.kind in "biu" or (
        classes.dtype.kind == "f" and np.all(np.mod(classes, 1) == 0)
    ):
        return Int64TensorType([None])
    raise NotImplementedError(f"class labels of dtype {classes.dtype} cannot be exported")


def float_type(inputs):
    """Double outputs when any graph input is double, float otherwise."""
    if any(isinstance(var.type, DoubleTensorType) for var in inputs):
        return DoubleTensorType
    return FloatTensorType


def declare_outputs(scope, operator, model, inputs, n_classes):
    """Label (N,) and probabilities (N, n_classes) of ``operator``, ZipMap on request."""
    label = scope.declare_local_variable("label", label_type(np.asarray(model.classes_)))
    probabilities = scope.declare_local_variable(
        "probabilities", float_type(inputs)([None, n_classes])
    )
    operator.outputs.extend([label, probabilities])
    options = scope.get_options(model, {"zipmap": False})
    if options["zipmap"]:
        return _apply_zipmap(
            options["zipmap"], scope, model, inputs[0].type, [label, probabilities]
        )
    return [label, probabilities]


def _columns(var):
    shape = var.type.shape
    return shape[1] if shape is not None and len(shape) == 2 else None


def calculate_classifier_output_shapes(operator):
    """Label (N,) and probabilities (N, n_classes); the types were set by the parser.

    Checks the inputs first: numeric tensors holding, for a calibrator alone,
    its 1 score column (M for a multi-score one, K for a multiclass one; one
    input per column, as a DataFrame gives, is fine), and for a calibration or
    fusion stage, each base model's K score columns (two when binary).
    """
    model = operator.raw_operator
    name = type(model).__name__
    for var in operator.inputs:
        if not isinstance(var.type, NUMERIC_TYPES):
            raise ValueError(
                f"input {var.onnx_name!r} of {name} must be a float, double or integer "
                f"tensor, got {type(var.type).__name__}"
            )
    try:
        entry = entry_for(model)
    except TypeError:  # a stage: one input per base model
        groups, expected = [[var] for var in operator.inputs], max(len(model.classes_), 2)
    else:  # a calibrator alone: the inputs side by side are its scores
        wide = entry.multi or entry.multiclass
        groups, expected = [operator.inputs], int(model.n_features_in_) if wide else 1
    for group in groups:
        columns = [_columns(var) for var in group]
        if all(isinstance(c, int) for c in columns) and sum(columns) != expected:
            names = ", ".join(repr(var.onnx_name) for var in group)
            shapes = ", ".join(str(list(var.type.shape)) for var in group)
            raise ValueError(
                f"input {names} of {name} must have {expected} column(s), got shape {shapes}"
            )
    n_classes = len(model.classes_)
    n = operator.inputs[0].get_first_dimension() if operator.inputs else None
    operator.outputs[0].type.shape = [n]
    operator.outputs[1].type.shape = [n, n_classes]
    for extra in operator.outputs[2:]:  # the intervals of Entry.interval
        extra.type.shape = [n, 2] if n_classes <= 2 else [n, n_classes, 2]


def basis_option(container, model) -> str:
    """The ``basis`` conversion option of ``model`` (default ``"exp"``)."""
    return container.get_options(model, {"basis": "exp"})["basis"]


def calibrate(g: GraphWriter, scores: str, cal, *, pair: bool, basis: str) -> str:
    """Emit calibrator ``cal`` on the float64 ``scores`` with its registered emitter."""
    try:
        entry = entry_for(cal)
    except TypeError:
        raise NotImplementedError(
            f"no ONNX converter for calibrator {type(cal).__name__}"
        ) from None
    return resolve(entry.emitter)(g, scores, cal, pair=pair, basis=basis)


def scores_to_double(
    g: GraphWriter, score: str, method: str, log_odds: bool, log_odds_from=None
) -> str:
    """A base model's (N, K) score output as the float64 scores its calibrators saw.

    Log-odds from log-probabilities arrive ready from ``parse_scores``; log-odds
    of probabilities are taken here, from clipped probabilities.
    """
    raw = g.to_double(score)
    if method == "predict_proba" and log_odds and log_odds_from != "log_proba":
        raw = clipped_log_odds(g, raw, LOG_ODDS_EPS)
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


def write_outputs(g: GraphWriter, operator, probabilities: str) -> None:
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
