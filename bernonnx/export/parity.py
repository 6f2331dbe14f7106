"""``check_parity``: the ONNX graph in onnxruntime against the model in Python."""

from __future__ import annotations

import re

import numpy as np
import onnx
from sklearn.pipeline import Pipeline

from bernonnx._meta import (
    as_scores,
    combine_one_vs_rest,
    method_output,
    response_scores,
    score_columns,
)
from bernonnx.calibration import CalibratedClassifier
from bernonnx.deploy import run_onnx
from bernonnx.fusion import FusionClassifier

from ._inputs import _final_estimator, onnx_inputs, request_inputs

__all__ = ["PARITY_TOLERANCE", "ParityReport", "check_parity", "format_parity"]

#: default tolerance on probabilities, by the graph's float input type
PARITY_TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-9}
#: how many of the worst rows a parity report lists
_N_WORST = 5


class ParityReport(dict):
    """The result of :func:`check_parity`: a dict, with :meth:`summary` for people.

    Its keys are the attributes below (``report["passed"]``).

    Attributes
    ----------
    passed : bool
        Every row within ``tolerance`` and every label equal.
    max_abs_error : float
        Largest ``|p_onnx - p_python|`` over rows and classes (inf where one side is NaN).
    tolerance : float
        The bound a row's error must not exceed.
    n_rows, n_above, share_above : int, int, float
        Rows compared; rows whose largest error over the classes exceeds ``tolerance``;
        their share.
    worst_rows : list of (int, float)
        Up to five ``(row index, error)`` pairs, worst first.
    labels_equal, n_label_mismatches : bool, int
    stage : str or None
        Where the graph first leaves Python when parity fails: ``"base model"``,
        ``"calibrator"`` or ``"unknown"``; None when it passes.
    base_max_abs_error : list of float
        For a ``CalibratedClassifier``: the largest score error of each fold pair's base
        model (empty when the graph's base scores could not be found).
    dtype : str
        The graph's float input type, to which the feed was cast.
    """

    def summary(self) -> str:
        """One paragraph: :func:`format_parity` of this report."""
        return format_parity(self)


def _is_calibrator(estimator) -> bool:
    """A bernonnx calibrator on its own (not one of the meta-estimators)."""
    return (
        hasattr(estimator, "classes_")
        and type(estimator).__module__.startswith("bernonnx.")
        and not isinstance(estimator, (CalibratedClassifier, FusionClassifier))
    )


def _graph_float_dtype(onnx_model: onnx.ModelProto) -> np.dtype:
    """The float type of the graph's first float input (float32 when there is none)."""
    for value in request_inputs(onnx_model.graph):
        elem = value.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            return np.dtype(np.float64 if elem == onnx.TensorProto.DOUBLE else np.float32)
    return np.dtype(np.float32)


def _base_score_names(onnx_model: onnx.ModelProto) -> list[str]:
    """Names of the base models' score tensors, in the order of the fold pairs.

    The converters name them ``base_scores``, ``base_scores1``, ... (skl2onnx's unique
    names); the numeric suffix gives the order, node order breaks ties.
    """
    found = []
    for position, node in enumerate(onnx_model.graph.node):
        for name in node.output:
            if name.startswith("base_scores"):
                suffix = re.search(r"(\d+)$", name)
                found.append((int(suffix.group(1)) if suffix else 0, position, name))
    return [name for _, _, name in sorted(found)]


def _with_outputs(onnx_model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of the graph that also returns the tensors ``names`` (types left open)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(onnx_model)
    present = {o.name for o in copy.graph.output}
    for name in names:
        if name not in present:
            # a ValueInfoProto with only a name: onnxruntime infers the type
            copy.graph.output.append(onnx.ValueInfoProto(name=name))
    return copy


def _as_matrix(values, classes) -> np.ndarray:
    """Probabilities as a float64 (N, n_classes) array; ZipMap's list of dicts too."""
    if isinstance(values, list) and values and isinstance(values[0], dict):
        return np.array([[row[c] for c in classes] for row in values], dtype=np.float64)
    return np.asarray(values, dtype=np.float64)


def _row_errors(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Each row's largest absolute difference; inf where only one side is NaN."""
    got = got.reshape(len(got), -1)
    expected = expected.reshape(len(expected), -1)
    if got.shape != expected.shape:
        return np.full(max(len(got), len(expected)), np.inf)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - expected)
    both = np.isnan(got) & np.isnan(expected)
    diff = np.where(both, 0.0, np.where(np.isnan(diff), np.inf, diff))
    return diff.max(axis=1) if diff.shape[1] else np.zeros(len(diff))


def _base_stage(model, X, outputs: dict, names: list[str]):
    """Score error of each fold pair's base model, and the calibrators' replay.

    Returns ``(errors, replay)``: the largest ``|score_onnx - score_python|`` of each
    pair, and the probabilities Python's calibrators give on the graph's own base
    scores (None when they cannot be computed). ``(None, None)`` when the graph's
    score tensors do not match the fold pairs.
    """
    final = _final_estimator(model)
    pairs = final.calibrated_classifiers_
    if len(names) != len(pairs) or any(name not in outputs for name in names):
        return None, None
    if isinstance(model, Pipeline) and len(model.steps) > 1:
        X = model[:-1].transform(X)
    errors, replay = [], 0.0
    for pair, name in zip(pairs, names, strict=True):
        # log-odds from log-probabilities are computed inside the base stage: its
        # tensor holds the scores the calibrators see, not the method's output
        log_proba = getattr(pair, "log_odds_from", None) == "log_proba"
        if log_proba:
            args = (pair.response_method, pair.log_odds, pair.classes)
            python = response_scores(pair.estimator, X, *args)
        else:
            python = method_output(pair.estimator, X, pair.response_method)
        python = np.asarray(python, dtype=np.float64)
        graph = np.asarray(outputs[name], dtype=np.float64)
        if graph.ndim == 1:
            graph = graph[:, None]
        if python.ndim == 1:
            # binary decision_function: the graph holds [-df, df] or [df]; df is last
            graph = graph[:, -1:]
        errors.append(float(np.max(_row_errors(graph, python), initial=0.0)))
        if replay is None:
            continue
        try:
            scores = (
                graph
                if log_proba
                else as_scores(graph, pair.response_method, pair.log_odds, pair.classes)
            )
            if python.ndim == 1:
                scores = scores.reshape(-1)
            positive = [
                cal.predict_proba(column)[:, 1]
                for cal, column in zip(pair.calibrators, score_columns(scores), strict=True)
            ]
            replay = replay + combine_one_vs_rest(positive, pair.classes.shape[0])
        except Exception:  # noqa: BLE001 - a diagnosis only; fall back to the score errors
            replay = None
    return errors, None if replay is None else replay / len(pairs)


def check_parity(
    model, onnx_model: onnx.ModelProto, X, *, dtype=None, tol: float | None = None
) -> ParityReport:
    """Run ``onnx_model`` in onnxruntime on ``X`` and compare it with ``model`` in Python.

    Python (``model.predict_proba`` and ``model.predict``) runs on ``X`` exactly as
    given: a numpy array at its own dtype, a DataFrame with its own column types. Only
    the graph's feed is cast, to the graph's input types, because the graph accepts
    nothing else. Any precision the cast loses therefore shows up as error, as it would
    for a server fed the same data.

    Parameters
    ----------
    model : fitted estimator
        What ``onnx_model`` was exported from.
    onnx_model : onnx.ModelProto
        A graph with outputs ``label`` and ``probabilities``.
    X : array-like or DataFrame
        The rows to compare on.
    dtype : {np.float32, np.float64}, optional
        The graph's float input type; read from the graph by default.
    tol : float, optional
        Largest error a row may have in any class's probability. Default 1e-6 for
        float32 graphs and 1e-9 for float64 graphs (:data:`PARITY_TOLERANCE`).

    Returns
    -------
    ParityReport
        A dict with ``passed``, ``max_abs_error``, ``tolerance``, ``n_rows``,
        ``n_above``, ``share_above``, ``worst_rows``, ``labels_equal``,
        ``n_label_mismatches``, ``stage``, ``base_max_abs_error`` and ``dtype``
        (see :class:`ParityReport`); ``report.summary()`` says it in one paragraph.

    Notes
    -----
    ``stage`` locates a failure. For a ``CalibratedClassifier``, alone or as the last
    step of a Pipeline, the graph runs with the base models' score tensors (the outputs
    named ``base_scores*``, one per fold pair) as extra outputs. Each is compared in
    float64 with ``getattr(pair.estimator, pair.response_method)`` in Python
    (``base_max_abs_error``), and Python's calibrators are run on the graph's own
    scores. When they reproduce the graph's probabilities within ``tol``, the
    calibration stage is faithful and the stage is ``"base model"`` (its scores
    differ, and the calibrator carries the difference through); otherwise
    ``"calibrator"``. Probabilities within ``tol`` with different labels are a
    ``"calibrator"`` failure (the final argmax). Should the replay be impossible, a
    base score error above ``tol`` means ``"base model"``. A calibrator on its own
    fails in the ``"calibrator"`` stage; anything else (a ``FusionClassifier``, a graph
    without the score tensors) in the ``"unknown"`` one.

    Examples
    --------
    Scores near 1e8 are 8 apart in float32, so a float32 graph cannot tell them
    apart; Python, fed the float64 scores, can:

    >>> import numpy as np
    >>> from bernonnx import BernsteinCalibrator
    >>> from bernonnx.export import check_parity, to_onnx
    >>> rng = np.random.default_rng(0)
    >>> s = 1e8 + rng.normal(size=(1000, 1))
    >>> y = rng.random(1000) < 1 / (1 + np.exp(-2 * (s[:, 0] - 1e8)))
    >>> cal = BernsteinCalibrator(degree=5).fit(s, y)
    >>> exact = check_parity(cal, to_onnx(cal, s[:2], dtype=np.float64), s)
    >>> exact["passed"], exact["max_abs_error"] < 1e-9, exact["n_rows"]
    (True, True, 1000)

    ``to_onnx`` refuses that float32 graph when its sample shows it; a sample
    that is float32 already cannot show it, and the check still tells:

    >>> rounded = check_parity(cal, to_onnx(cal, s[:2].astype(np.float32), dtype=np.float32), s)
    >>> rounded["passed"], rounded["max_abs_error"] > 0.1, rounded["stage"]
    (False, True, 'calibrator')
    """
    feed_dtype = dtype
    dtype = _graph_float_dtype(onnx_model) if dtype is None else np.dtype(dtype)
    if dtype not in PARITY_TOLERANCE:
        raise ValueError(f"dtype must be np.float32 or np.float64, got {dtype!r}")
    tolerance = PARITY_TOLERANCE[dtype] if tol is None else float(tol)
    if not tolerance >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    final = _final_estimator(model)
    feed = onnx_inputs(onnx_model, X, feed_dtype)
    if "uniforms" in {i.name for i in onnx_model.graph.input} - set(feed):
        # randomised prediction sets' draws: the label and probabilities do not read them
        feed["uniforms"] = np.zeros(len(next(iter(feed.values()))))
    names = _base_score_names(onnx_model) if isinstance(final, CalibratedClassifier) else []
    outputs = None
    if names:
        try:
            outputs = run_onnx(_with_outputs(onnx_model, names), feed)
        except Exception:  # noqa: BLE001 - the extra outputs are a diagnosis, not the check
            names, outputs = [], None
    if outputs is None:
        outputs = run_onnx(onnx_model, feed)

    classes = getattr(model, "classes_", None)
    # skl2onnx names ZipMap's output after it; the graph's order is label, probabilities
    label_name, proba_name = (o.name for o in onnx_model.graph.output[:2])
    got = _as_matrix(outputs[proba_name], classes)
    expected = np.asarray(model.predict_proba(X), dtype=np.float64)
    errors = _row_errors(got, expected)
    label = np.asarray(outputs[label_name]).ravel()
    expected_label = np.asarray(model.predict(X)).ravel()
    if label.shape == expected_label.shape:
        n_mismatches = int(np.count_nonzero(label != expected_label))
    else:
        n_mismatches = max(label.size, expected_label.size)
    above = errors > tolerance
    n_rows = int(len(errors))
    order = np.argsort(-errors, kind="stable")[:_N_WORST]
    passed = not above.any() and n_mismatches == 0

    base_errors = replay = None
    if isinstance(final, CalibratedClassifier) and names:
        base_errors, replay = _base_stage(model, X, outputs, names)
    if passed:
        stage = None
    elif not above.any():
        stage = "calibrator"  # probabilities agree, labels do not: the final argmax
    elif replay is not None:
        # Python's calibrators on the graph's own base scores: if they give the graph's
        # probabilities, the calibration stage is faithful and the base model diverged
        faithful = not (_row_errors(got, replay) > tolerance).any()
        stage = "base model" if faithful else "calibrator"
    elif base_errors is not None:
        stage = "base model" if max(base_errors) > tolerance else "calibrator"
    elif _is_calibrator(final):
        stage = "calibrator"  # a calibrator on its own: there is no other stage
    else:
        stage = "unknown"
    return ParityReport(
        passed=bool(passed),
        max_abs_error=float(errors.max(initial=0.0)),
        tolerance=tolerance,
        n_rows=n_rows,
        n_above=int(above.sum()),
        share_above=float(above.mean()) if n_rows else 0.0,
        worst_rows=[(int(i), float(errors[i])) for i in order],
        labels_equal=n_mismatches == 0,
        n_label_mismatches=n_mismatches,
        stage=stage,
        base_max_abs_error=base_errors or [],
        dtype=dtype.name,
    )


def format_parity(report: dict) -> str:
    """One paragraph describing a :func:`check_parity` report, for people and logs.

    Examples
    --------
    >>> from bernonnx.export import format_parity
    >>> print(format_parity({"passed": False, "dtype": "float32", "tolerance": 1e-6,
    ...     "max_abs_error": 0.25, "n_rows": 1000, "n_above": 12, "share_above": 0.012,
    ...     "worst_rows": [(7, 0.25), (3, 0.125)], "labels_equal": False,
    ...     "n_label_mismatches": 2, "stage": "calibrator"}))
    ONNX parity (float32 graph, tolerance 1.0e-06): FAILED. max |p_onnx - p_python| = 2.5e-01 over 1000 rows; 12 rows (1.20%) above the tolerance, worst rows 7 (2.5e-01), 3 (1.2e-01); labels DIFFER on 2 rows; first divergence: calibrator.
    """  # noqa: E501
    head = (
        f"ONNX parity ({report.get('dtype', '?')} graph, tolerance "
        f"{report['tolerance']:.1e}): {'passed' if report['passed'] else 'FAILED'}."
    )
    body = (
        f" max |p_onnx - p_python| = {report['max_abs_error']:.1e} over {report['n_rows']} "
        f"rows; {report['n_above']} rows ({100 * report['share_above']:.2f}%) above the "
        "tolerance"
    )
    if report["n_above"]:
        worst = [f"{row} ({error:.1e})" for row, error in report["worst_rows"] if error > 0]
        body += ", worst rows " + ", ".join(worst)
    if report["labels_equal"]:
        body += "; labels identical"
    else:
        body += f"; labels DIFFER on {report['n_label_mismatches']} rows"
    if not report["passed"]:
        body += f"; first divergence: {report['stage']}"
    return head + body + "."
