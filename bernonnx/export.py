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
>>> bool(report["max_abs_error"] < 1e-6 and report["labels_equal"])
True
"""

from __future__ import annotations

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

__all__ = ["DEFAULT_OPSET", "check_parity", "onnx_inputs", "to_onnx"]

#: ai.onnx 17 runs on every onnxruntime since 1.12 (Triton's, mobile, web);
#: ai.onnx.ml 3 carries double-precision tree ensembles.
DEFAULT_OPSET = {"": 17, "ai.onnx.ml": 3}


def _final_estimator(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _as_dtype(X, dtype):
    """Numeric data (array, or each numeric DataFrame column) cast to ``dtype``."""
    if hasattr(X, "dtypes"):
        X = X.copy()
        for column in X.columns:
            if X[column].dtype.kind in "biuf":
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


def float32_input_loss(model, X_sample) -> float:
    """Max change of ``model.predict_proba`` on ``X_sample`` when its numeric
    values are rounded to float32 (both evaluated in float64)."""
    X64 = _as_dtype(X_sample, np.float64)
    X32 = _as_dtype(_as_dtype(X_sample, np.float32), np.float64)
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
        uses for it (the calibrators always in float64). None chooses float32
        unless float32 inputs cannot carry ``X_sample`` (see below), then
        float64.

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
    from bernonnx.converters.calibration import SAMPLE
    from bernonnx.converters.exact import EXACT_PARSERS, EXACT_TRANSFORMERS

    if dtype is not None and np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be None, np.float32 or np.float64, got {dtype!r}")
    loss = float32_input_loss(model, X_sample)
    if dtype is None:
        dtype = np.float64 if loss > FLOAT32_INPUT_TOLERANCE else np.float32
    elif np.dtype(dtype) == np.float32 and loss > FLOAT32_INPUT_TOLERANCE:
        raise ValueError(
            f"dtype=np.float32 cannot carry these inputs: rounding X_sample to float32 moves "
            f"the model's probabilities by up to {loss:.3g} (> {FLOAT32_INPUT_TOLERANCE:g}), "
            "so a float32 graph would flatten the scores; use dtype=np.float64"
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
    sample = _as_dtype(X_sample, dtype)
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
    onx.graph.name = name
    onx.producer_name = "bernonnx"
    onx.producer_version = __version__
    for key, value in _describe(model).items():
        onx.metadata_props.add(key=key, value=value)
    return onx


def check_parity(model, onnx_model: onnx.ModelProto, X, *, dtype=None) -> dict:
    """Run ``onnx_model`` in onnxruntime on ``X`` and compare with ``model``.

    Returns ``max_abs_error`` (probabilities), ``labels_equal`` and ``n_rows``.
    ``dtype`` defaults to the graph's float input type.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import BernsteinCalibrator
    >>> from bernonnx.export import check_parity, to_onnx
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=(1000, 1))
    >>> y = rng.random(1000) < 1 / (1 + np.exp(-2 * s[:, 0]))
    >>> cal = BernsteinCalibrator(degree=5).fit(s, y)
    >>> result = check_parity(cal, to_onnx(cal, s[:2], dtype=np.float64), s)
    >>> result["max_abs_error"] < 1e-12, result["labels_equal"], result["n_rows"]
    (True, True, 1000)
    """
    if dtype is None:
        elem = next(
            (
                i.type.tensor_type.elem_type
                for i in onnx_model.graph.input
                if i.type.tensor_type.elem_type
                in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
            ),
            onnx.TensorProto.FLOAT,
        )
        dtype = np.float64 if elem == onnx.TensorProto.DOUBLE else np.float32
    X_typed = _as_dtype(X, dtype)
    outputs = run_onnx(onnx_model, onnx_inputs(onnx_model, X_typed, dtype))
    label, proba = outputs["label"], outputs["probabilities"]
    expected = model.predict_proba(X_typed)
    return {
        "max_abs_error": float(np.max(np.abs(proba - expected))),
        "labels_equal": bool(np.array_equal(label, model.predict(X_typed))),
        "n_rows": int(proba.shape[0]),
    }
