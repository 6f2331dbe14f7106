"""Export bernonnx models (and anything containing them) to ONNX, and check parity.

>>> import numpy as np
>>> from sklearn.linear_model import LogisticRegression
>>> from bernonnx import CalibratedClassifier
>>> from bernonnx.export import check_parity, to_onnx
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 4)); y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
>>> clf = CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
>>> onx = to_onnx(clf, X[:1])
>>> [o.name for o in onx.graph.output]
['label', 'probabilities']
>>> report = check_parity(clf, onx, X)
>>> report["passed"], report["tolerance"], report["n_above"], report["labels_equal"]
(True, 1e-06, 0, True)

Python runs on ``X`` as given (float64 here) and only the graph's feed is cast to
float32, so the report measures what a float32 server would return.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import skl2onnx
import sklearn
from skl2onnx import convert_sklearn
from skl2onnx.algebra.type_helper import guess_initial_types
from sklearn.pipeline import Pipeline

from . import __version__
from .calibration import CalibratedClassifier
from .deploy import run_onnx
from .fusion import FusionClassifier

__all__ = [
    "DEFAULT_OPSET",
    "PARITY_TOLERANCE",
    "ParityReport",
    "check_parity",
    "format_parity",
    "onnx_inputs",
    "to_onnx",
]

#: ai.onnx 17 runs on every onnxruntime since 1.12 (Triton's, mobile, web);
#: ai.onnx.ml 3 carries double-precision tree ensembles.
DEFAULT_OPSET = {"": 17, "ai.onnx.ml": 3}


def _final_estimator(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _numeric_columns(X) -> list:
    """The names of a DataFrame's numeric (bool, int, float) columns."""
    return [c for c in X.columns if X[c].dtype.kind in "biuf"]


def _as_dtype(X, dtype):
    """Numeric data (array, or each numeric DataFrame column) cast to ``dtype``."""
    if hasattr(X, "dtypes"):
        X = X.copy()
        for column in _numeric_columns(X):
            X[column] = X[column].astype(dtype)
        return X
    return np.asarray(X, dtype=dtype)


def onnx_inputs(onnx_model: onnx.ModelProto, X, dtype=np.float32) -> dict:
    """The input feed for ``X``: one tensor, or one (N, 1) tensor per DataFrame column.

    Raises a ``ValueError`` naming the missing columns, or the expected width,
    when ``X`` does not match the graph's inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import PlattCalibrator
    >>> from bernonnx.export import onnx_inputs, to_onnx
    >>> s = np.linspace(-3, 3, 100).reshape(-1, 1)
    >>> cal = PlattCalibrator().fit(s, s[:, 0] > 0.3)
    >>> feed = onnx_inputs(to_onnx(cal, s[:2]), s)
    >>> [(name, x.shape, x.dtype.name) for name, x in feed.items()]
    [('X', (100, 1), 'float32')]
    """
    names = [i.name for i in onnx_model.graph.input]
    if hasattr(X, "columns"):
        missing = [name for name in names if name not in X.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} that the ONNX graph takes as inputs")
        feed = {}
        for name in names:
            column = X[name].to_numpy()
            kind = column.dtype.kind
            column = column.astype(dtype) if kind in "fiub" else column.astype(str).astype(object)
            feed[name] = column.reshape(-1, 1)
        return feed
    if len(names) != 1:
        raise ValueError(f"the graph has inputs {names}; pass X as a DataFrame with those columns")
    X = np.asarray(X, dtype=dtype)
    dims = onnx_model.graph.input[0].type.tensor_type.shape.dim
    width = dims[1].dim_value if len(dims) > 1 else 0
    if width and (X.ndim != 2 or X.shape[1] != width):
        raise ValueError(
            f"X has shape {X.shape} but the ONNX input {names[0]!r} takes {width} columns"
        )
    return {names[0]: X}


def _describe(model) -> dict[str, str]:
    """Metadata naming what produced the graph and the calibrators inside."""
    final = _final_estimator(model)
    meta = {
        "bernonnx_version": __version__,
        "skl2onnx_version": skl2onnx.__version__,
        "onnx_version": onnx.__version__,
        "sklearn_version": sklearn.__version__,
        "model": type(model).__name__,
    }
    calibrators = []
    if isinstance(final, CalibratedClassifier):
        meta["response_method"] = final.response_method_
        meta["log_odds"] = str(final.log_odds)
        meta["n_fold_pairs"] = str(len(final.calibrated_classifiers_))
        calibrators = [c for pair in final.calibrated_classifiers_ for c in pair.calibrators]
    elif isinstance(final, FusionClassifier):
        meta["response_method"] = ",".join(final.response_methods_)
        meta["log_odds"] = str(final.log_odds)
        meta["base_models"] = ",".join(type(e).__name__ for e in final.estimators_)
        calibrators = final.calibrators_
    elif hasattr(final, "classes_") and type(final).__module__.startswith("bernonnx."):
        calibrators = [final]  # a calibrator on its own
    if calibrators:
        meta["calibrator"] = type(calibrators[0]).__name__
        meta["degree"] = ",".join(
            str(getattr(c, "degree_", getattr(c, "degrees_", ""))) for c in calibrators
        )
        meta["loss"] = str(getattr(calibrators[0], "loss", ""))
        meta["score_transform"] = str(getattr(calibrators[0], "score_transform", ""))
    return meta


#: Largest change of probability that rounding the inputs to float32 may cause
#: before ``to_onnx`` refuses a float32 graph (or, by default, picks float64).
FLOAT32_INPUT_TOLERANCE = 1e-3


def _numeric(X) -> np.ndarray:
    """The numeric values of an array or of a DataFrame's numeric columns."""
    if hasattr(X, "dtypes"):
        X = X[_numeric_columns(X)]
    return np.asarray(X, dtype=np.float64)


def _is_float32_data(X) -> bool:
    """True when every numeric value of ``X`` is float32 (and there is one)."""
    if hasattr(X, "dtypes"):
        columns = _numeric_columns(X)
        return bool(columns) and all(X[c].dtype == np.float32 for c in columns)
    return getattr(X, "dtype", None) == np.float32


def _widen_to_float64(onx: onnx.ModelProto) -> None:
    """A float32 graph's float inputs and probabilities made float64: each input is
    cast to float32 at once (exact for the float32 data it was built for), and the
    float64 probabilities are no longer rounded to float32 at the end."""
    float32, float64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    casts = []
    for graph_input in onx.graph.input:
        tensor = graph_input.type.tensor_type
        if tensor.elem_type != float32:
            continue
        inner = f"{graph_input.name}_float32"
        for node in onx.graph.node:
            for i, name in enumerate(node.input):
                if name == graph_input.name:
                    node.input[i] = inner
        casts.append(
            onnx.helper.make_node(
                "Cast", [graph_input.name], [inner], to=float32, name=f"{inner}_cast"
            )
        )
        tensor.elem_type = float64
    for cast in reversed(casts):
        onx.graph.node.insert(0, cast)
    for output in onx.graph.output:
        if output.name == "probabilities":
            output.type.tensor_type.elem_type = float64
            for node in onx.graph.node:
                if "probabilities" in node.output and node.op_type == "Cast":
                    for attribute in node.attribute:
                        if attribute.name == "to":
                            attribute.i = float64


def float32_input_loss(model, X_sample) -> float:
    """Max change of ``model.predict_proba`` on ``X_sample`` when its numeric
    values are rounded to float32 (both evaluated in float64)."""
    X64 = _as_dtype(X_sample, np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, measured below
        X32 = _as_dtype(_as_dtype(X_sample, np.float32), np.float64)
    finite = np.isfinite(_numeric(X64))
    if np.any(finite & ~np.isfinite(_numeric(X32))):
        return float("inf")  # float32 cannot hold these values at all
    try:
        p64, p32 = model.predict_proba(X64), model.predict_proba(X32)
    except ValueError:  # X_sample the model refuses (NaN...): nothing to measure
        return 0.0
    return float(np.max(np.abs(np.asarray(p64) - np.asarray(p32)), initial=0.0))


def to_onnx(
    model,
    X_sample,
    *,
    dtype=None,
    zipmap: bool = False,
    target_opset: dict | int | None = None,
    name: str = "bernonnx",
    basis: str = "exp",
) -> onnx.ModelProto:
    """Convert a fitted model containing bernonnx estimators into one ONNX graph.

    Registers the converters (:func:`bernonnx.converters.register_converters`)
    and calls ``skl2onnx.to_onnx``. The base model(s) and the calibrators land
    in the same graph; outputs are ``label`` (N,) and ``probabilities``
    (N, n_classes) tensors.

    Parameters
    ----------
    model : fitted estimator
        A ``CalibratedClassifier``, a ``FusionClassifier``, a calibrator on
        its own (input: scores of shape (N, 1), or (N, M) for
        ``MultivariateBernsteinCalibrator``), or a Pipeline ending in one.
    X_sample : array-like or DataFrame
        A few rows of input; fixes input names and types (a DataFrame gives
        one input per column, as skl2onnx does).
    dtype : {None, np.float32, np.float64}, default=None
        Float type of the graph's numeric inputs and of the probabilities.
        Inside the graph every stage computes in the precision scikit-learn
        uses for it (the calibrators always in float64). The precision is that
        of ``X_sample``'s data: float32 data exported with ``np.float64``
        (float32 DataFrame columns, say) give a float64 interface that casts
        its inputs to float32, so it reproduces Python on those float32 values.
        None chooses float32 unless float32 inputs cannot carry ``X_sample``
        (see below), then float64.

        Precision guard: rounding ``X_sample`` to float32 must not move the
        model's probabilities by more than ``FLOAT32_INPUT_TOLERANCE`` (1e-3).
        Scores near 1e8 with unit spread, say, are flattened by float32 (its
        spacing there is 8). An explicit ``np.float32`` then raises a
        ``ValueError`` instead of writing a graph that flattens the scores;
        pass representative rows as ``X_sample``.
    zipmap : bool, default=False
        Add skl2onnx's ZipMap (a list of dicts). Serving runtimes (Triton,
        onnxruntime-node/web) reject it; keep False for serving.
    target_opset : dict or int, optional
        Defaults to :data:`DEFAULT_OPSET` (ai.onnx 17, ai.onnx.ml 3).
    name : str, default="bernonnx"
        Graph name.
    basis : {"exp", "pow"}, default="exp"
        How the graph builds the Bernstein basis ``C(d,k) u^k v^(d-k)``:
        ``"exp"`` in log space (``Exp(Gemm(Log([u, v]), K, log C))``), or
        ``"pow"`` with two broadcast ``Pow`` nodes and ``Mul``. Both agree
        with Python within the parity bounds; ``"exp"`` has 2.5x the throughput
        at batch 100,000 (``benchmarks/onnx_results.md``).

    Returns
    -------
    onnx.ModelProto
        With metadata (``metadata_props``) naming the library versions and
        the calibrators (type, degrees, loss, transform).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.linear_model import LogisticRegression
    >>> from bernonnx import BernsteinCalibrator, CalibratedClassifier
    >>> from bernonnx.export import check_parity, to_onnx
    >>> X, y = make_classification(2000, random_state=0)
    >>> base = LogisticRegression().fit(X[:1000], y[:1000])
    >>> clf = CalibratedClassifier(FrozenEstimator(base), BernsteinCalibrator(degree=6))
    >>> clf = clf.fit(X[1000:], y[1000:])
    >>> onx = to_onnx(clf, X[:5])
    >>> [o.name for o in onx.graph.output]
    ['label', 'probabilities']
    >>> result = check_parity(clf, onx, X)
    >>> result["max_abs_error"] < 1e-6, result["labels_equal"]
    (True, True)
    """
    from bernonnx.converters import register_converters
    from bernonnx.converters.base_scores import SAMPLE
    from bernonnx.converters.exact import EXACT_PARSERS, EXACT_TRANSFORMERS

    if dtype is not None and np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be None, np.float32 or np.float64, got {dtype!r}")
    wants_float32 = dtype is None or np.dtype(dtype) == np.float32
    loss = float32_input_loss(model, X_sample) if wants_float32 else 0.0
    if dtype is None:
        dtype = np.float64 if loss > FLOAT32_INPUT_TOLERANCE else np.float32
    elif np.dtype(dtype) == np.float32 and loss > FLOAT32_INPUT_TOLERANCE:
        why = (
            "X_sample holds values beyond float32's range (3.4e38)"
            if np.isinf(loss)
            else f"rounding X_sample to float32 moves the model's probabilities by up to "
            f"{loss:.3g} (> {FLOAT32_INPUT_TOLERANCE:g}), so a float32 graph would flatten "
            "the scores"
        )
        raise ValueError(
            f"dtype=np.float32 cannot carry these inputs: {why}; use dtype=np.float64"
        )
    register_converters()
    final = _final_estimator(model)
    width = getattr(model, "n_features_in_", None)
    if width is not None and not hasattr(X_sample, "columns"):
        shape = np.shape(X_sample)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(
                f"X_sample must have shape (n, {width}): {type(model).__name__} was fitted on "
                f"{width} columns; got shape {shape}"
            )
    options = {id(final): {"zipmap": zipmap, "basis": basis}}
    # float32 data behind a float64 interface: scikit-learn computes on the float32
    # values (a StandardScaler rounds to float32), so the graph does too
    widen = np.dtype(dtype) == np.float64 and not zipmap and _is_float32_data(X_sample)
    sample = _as_dtype(X_sample, np.float32 if widen else dtype)
    # the sample at the calibrated model's level tells the converters which
    # dtype numpy computes in there (float32 data meeting float64 one-hot columns)
    at_final = model[:-1].transform(sample) if isinstance(model, Pipeline) else sample
    token = SAMPLE.set(at_final)
    try:
        onx = convert_sklearn(
            model,
            initial_types=guess_initial_types(sample, None),
            target_opset=DEFAULT_OPSET if target_opset is None else target_opset,
            options=options,
            custom_conversion_functions=EXACT_TRANSFORMERS,
            custom_parsers=EXACT_PARSERS,
            name=name,
        )
    finally:
        SAMPLE.reset(token)
    if widen:
        _widen_to_float64(onx)
    onx.graph.name = name
    onx.producer_name = "bernonnx"
    onx.producer_version = __version__
    for key, value in _describe(model).items():
        onx.metadata_props.add(key=key, value=value)
    return onx


#: default tolerance on probabilities, by the graph's float input type
PARITY_TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-9}
#: how many of the worst rows a parity report lists
_N_WORST = 5


class ParityReport(dict):
    """The result of :func:`check_parity`: a dict, with :meth:`summary` for people.

    Keys
    ----
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
    for value in onnx_model.graph.input:
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
    from .calibration import _columns, as_scores, combine_one_vs_rest, response_scores

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
            python = getattr(pair.estimator, pair.response_method)(X)
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
                for cal, column in zip(pair.calibrators, _columns(scores), strict=True)
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
    dtype = _graph_float_dtype(onnx_model) if dtype is None else np.dtype(dtype)
    if dtype not in PARITY_TOLERANCE:
        raise ValueError(f"dtype must be np.float32 or np.float64, got {dtype!r}")
    tolerance = PARITY_TOLERANCE[dtype] if tol is None else float(tol)
    if not tolerance >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    final = _final_estimator(model)
    feed = onnx_inputs(onnx_model, X, dtype)
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
    got = _as_matrix(outputs["probabilities"], classes)
    expected = np.asarray(model.predict_proba(X), dtype=np.float64)
    errors = _row_errors(got, expected)
    label = np.asarray(outputs["label"]).ravel()
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
