"""``to_onnx``: one ONNX graph of a fitted model holding bernonnx estimators.

The float type of the graph is chosen here, guarded by :func:`float32_input_loss`.
"""

from __future__ import annotations

import numpy as np
import onnx
import skl2onnx
import sklearn
from skl2onnx import convert_sklearn
from skl2onnx.algebra.type_helper import guess_initial_types
from sklearn.pipeline import Pipeline

from bernonnx import __version__
from bernonnx.calibration import CalibratedClassifier
from bernonnx.fusion import FusionClassifier

from ._inputs import _as_dtype, _final_estimator, _is_float32_data, _numeric

__all__ = ["DEFAULT_OPSET", "FLOAT32_INPUT_TOLERANCE", "float32_input_loss", "to_onnx"]

#: ai.onnx 17 runs on every onnxruntime since 1.12 (Triton's, mobile, web);
#: ai.onnx.ml 3 carries double-precision tree ensembles.
DEFAULT_OPSET = {"": 17, "ai.onnx.ml": 3}
#: Largest change of probability that rounding the inputs to float32 may cause
#: before ``to_onnx`` refuses a float32 graph (or, by default, picks float64).
FLOAT32_INPUT_TOLERANCE = 1e-3


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
        meta["log_odds"] = str(final.log_odds_)
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
