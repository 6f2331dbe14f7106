"""``to_onnx``: one ONNX graph of a fitted model holding bernonnx estimators.

The graph's float type follows the data (float32 data: float32; anything else:
float64), its inputs follow ``X_sample``'s layout (``_inputs.input_layout``), what it
cannot make exact is refused (``bernonnx.converters.supported``), and every graph is
checked by onnx's full checker and by :func:`~bernonnx.export.check_parity` on
``X_sample`` before it is returned.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import skl2onnx
import sklearn
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, StringTensorType
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from bernonnx._version import __version__
from bernonnx.calibration import CalibratedClassifier
from bernonnx.fusion import FusionClassifier
from bernonnx.shift import PriorShiftAdapter

from ._conformal import is_conformal, with_sets
from ._errors import (
    check_arguments,
    check_routed_columns,
    check_text_columns,
    foreign_error,
    in_fitted_order,
)
from ._inputs import (
    INPUT_COLUMNS,
    INPUT_ORDER,
    _as_dtype,
    _final_estimator,
    _first_consumers,
    _is_float32_data,
    _numeric,
    _numeric_columns,
    input_layout,
    is_numeric_column,
    positional_columns,
    rounded_columns,
)
from ._ort_rewrites import make_safe
from ._refusals import REFUSED, refused_values
from ._retype import narrow_to_float32, widen_to_float64
from .parity import check_parity

__all__ = ["DEFAULT_OPSET", "InexactExportWarning", "float32_input_loss", "to_onnx"]

#: ai.onnx 17 runs on every onnxruntime since 1.12 (Triton's, mobile, web);
#: ai.onnx.ml 3 carries double-precision tree ensembles.
DEFAULT_OPSET = {"": 17, "ai.onnx.ml": 3}


class InexactExportWarning(UserWarning):
    """``to_onnx(..., allow_inexact=True)`` wrote a graph bernonnx has not shown exact."""


def _describe(model) -> dict[str, str]:
    """Metadata naming what produced the graph and the calibrators inside."""
    final = _final_estimator(model)
    shift = {}
    if isinstance(final, PriorShiftAdapter):
        shift = {
            "train_prior": json.dumps(final.train_prior_.tolist()),
            "target_prior": json.dumps(final.prior_.tolist()),
        }
        final = final.estimator_
        while isinstance(final, FrozenEstimator):
            final = final.estimator
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
    return {**meta, **shift}


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


def _initial_types(sample, layout: str, dtype) -> list:
    """skl2onnx's input types: one tensor ``X``, or one (N, 1) tensor per column."""
    float_type = FloatTensorType if np.dtype(dtype) == np.float32 else DoubleTensorType
    if layout == "columns":
        return [
            (
                str(name),
                float_type([None, 1])
                if is_numeric_column(sample[name])
                else StringTensorType([None, 1]),
            )
            for name in sample.columns
        ]
    width = np.shape(sample)[1] if np.ndim(sample) == 2 else 1
    return [("X", float_type([None, width]))]


def _check_frame_columns(model, X_sample) -> None:
    """A DataFrame's columns must be the ones the model was fitted on, in that order."""
    names = getattr(model, "feature_names_in_", None)
    if names is None or not hasattr(X_sample, "columns"):
        return
    if list(X_sample.columns) != list(names):
        raise ValueError(
            f"X_sample's columns {list(X_sample.columns)} are not the columns "
            f"{list(names)} that {type(model).__name__} was fitted on (same names, same order)"
        )


def _check_fitted(model) -> None:
    """A bernonnx estimator (alone or a Pipeline's last step) must be fitted: unfitted,
    skl2onnx would fail deep inside its converter, which reads as "not supported"."""
    final = _final_estimator(model)
    if type(final).__module__.split(".")[0] != "bernonnx":
        return
    try:
        check_is_fitted(final)
    except NotFittedError as exc:
        raise ValueError(f"model is not fitted: {exc}") from None


def to_onnx(
    model,
    X_sample,
    *,
    dtype=None,
    zipmap: bool = False,
    target_opset: dict | int | None = None,
    name: str = "bernonnx",
    basis: str = "exp",
    allow_inexact: bool = False,
    priors_input: bool = False,
) -> onnx.ModelProto:
    """Convert a fitted model containing bernonnx estimators into one ONNX graph.

    The graph, fed the user's data cast to its declared input types
    (:func:`~bernonnx.export.onnx_inputs` does that), gives ``model.predict_proba``
    and ``model.predict`` on the same data: within 1e-9 (float64 graphs) or 1e-6
    (float32 graphs) on every row, identical labels. What bernonnx cannot make exact
    is refused. Registers the converters
    (:func:`bernonnx.converters.register_converters`) and calls skl2onnx; the base
    model(s) and the calibrators land in the same graph; outputs are ``label`` (N,)
    and ``probabilities`` (N, n_classes).

    Before returning, the graph passes onnx's full checker and
    :func:`~bernonnx.export.check_parity` on ``X_sample``; every node that
    onnxruntime's graph optimiser would change although it is no no-op (``x - c``
    for a float64 ``c`` that float32 rounds to 0, ``x * c`` for one it rounds to 1)
    is first rewritten into an equal computation it keeps
    (``bernonnx/export/_ort_rewrites.py``).

    Parameters
    ----------
    model : fitted estimator
        A ``CalibratedClassifier``, a ``FusionClassifier``, a calibrator on
        its own (input: scores of shape (N, 1), or (N, M) for
        ``MultivariateBernsteinCalibrator``), or a Pipeline ending in one; or a
        :class:`~bernonnx.ConformalClassifier` wrapping one of these (or a
        ``PriorShiftAdapter``): its graph gets a third output ``prediction_set``,
        bool (N, n_classes), and, for randomised sets, the double (N,) input
        ``uniforms``; the export is refused unless the graph's float64
        probabilities are within ``tie / 10`` of Python's and its sets equal
        ``predict_set`` on every row of ``X_sample``.
    X_sample : array-like or DataFrame
        A few rows of input as the model is given them; they fix the inputs:

        - an array: one input ``X`` of shape (N, n_features);
        - a DataFrame into models that start with a ``ColumnTransformer``: one
          (N, 1) input per column, named after it (strings for string and
          categorical columns);
        - a numeric DataFrame into a plain Pipeline or a bare model: one input
          ``X`` whose columns are the frame's, in its order (recorded in the
          metadata ``input_columns``, which :func:`onnx_inputs` reads).

        Integer, boolean and pandas' nullable columns are numeric (missing values
        NaN).
    dtype : {None, np.float32, np.float64}, default=None
        Float type of the graph's numeric inputs and of the probabilities. None
        follows the data: float32 when every numeric value of ``X_sample`` is
        float32, float64 otherwise (float64 and integer arrays or columns). A
        ``VennAbersCalibrator`` behind a model fitted on float32 data (float32
        BLAS sums, which a graph repeats only to a few float32 units: that map
        jumps at every calibration score) has no exact graph: ``np.float32`` is
        refused with a ``ValueError``, float64 with the float32 fit's
        ``NotImplementedError``. Inside the graph every stage computes in the
        precision scikit-learn uses on the data.

        ``np.float64`` for float32 data gives a float64 interface that casts its
        inputs to float32, so it reproduces Python on those float32 values.
        ``np.float32`` for other data gives a float32 interface that computes in
        float64 inside; it is exact only for values float32 holds exactly, so it
        is refused with a ``ValueError`` naming the columns for float64 columns
        (whatever ``X_sample`` holds) and for integer columns holding a value
        float32 rounds.
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
        at batch 100,000.
    allow_inexact : bool, default=False
        Steps that bernonnx has not shown exact (``bernonnx.converters.supported``
        lists what it has) raise ``NotImplementedError``. True exports them with
        skl2onnx's own converters instead and warns (:class:`InexactExportWarning`)
        with the gap measured on ``X_sample``.
    priors_input : bool, default=False
        For a :class:`~bernonnx.PriorShiftAdapter`: the target priors become the
        graph input ``priors`` (double, (N, K) for one row of priors per row, or
        (1, K) for all rows), optional: its default, an initializer of the same
        name, is ``prior_``. A server then changes the class balance per request
        without a new export. False bakes ``prior_`` into the graph.

    Returns
    -------
    onnx.ModelProto
        With metadata (``metadata_props``) naming the library versions and
        the calibrators (type, degrees, loss, transform).

    Raises
    ------
    NotImplementedError
        A step without an exact converter, a graph that fails onnx's full check,
        or a graph that differs from Python on ``X_sample`` (unless
        ``allow_inexact``).
    ValueError
        ``X_sample`` that does not fit the model, or ``dtype=np.float32`` that
        would round its values.

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
    >>> onx = to_onnx(clf, X[:5])  # float64 data: a float64 graph
    >>> [o.name for o in onx.graph.output], onx.graph.input[0].type.tensor_type.elem_type
    (['label', 'probabilities'], 11)
    >>> result = check_parity(clf, onx, X)
    >>> result["max_abs_error"] < 1e-9, result["labels_equal"]
    (True, True)
    """
    from bernonnx.converters import register_converters
    from bernonnx.converters.base_scores import SAMPLE
    from bernonnx.converters.exact import EXACT_PARSERS, EXACT_SHAPES, EXACT_TRANSFORMERS
    from bernonnx.converters.shift import PRIORS_INPUT
    from bernonnx.converters.supported import (
        float32_fit_problems,
        float64_only_steps,
        refusal,
        unsupported_steps,
    )

    if is_conformal(model):  # the wrapped model's graph, then the prediction sets
        options = dict(dtype=dtype, zipmap=zipmap, target_opset=target_opset, name=name)
        options.update(basis=basis, allow_inexact=allow_inexact, priors_input=priors_input)
        return with_sets(to_onnx, model, X_sample, **options)
    if dtype is not None and np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be None, np.float32 or np.float64, got {dtype!r}")
    if not isinstance(allow_inexact, bool | np.bool_):
        raise ValueError(f"allow_inexact must be True or False, got {allow_inexact!r}")
    if not isinstance(priors_input, bool | np.bool_):
        raise ValueError(f"priors_input must be True or False, got {priors_input!r}")
    if priors_input and not isinstance(_final_estimator(model), PriorShiftAdapter):
        raise ValueError(
            f"priors_input=True needs a PriorShiftAdapter, got {type(model).__name__}: "
            "only an adapted model has target priors to take as an input"
        )
    check_arguments(X_sample, name=name, basis=basis, target_opset=target_opset)
    _check_fitted(model)
    layout = input_layout(model, X_sample)
    check_text_columns(model, X_sample)
    if layout == "columns":
        check_routed_columns(_first_consumers(model), X_sample)
        X_sample = in_fitted_order(_first_consumers(model), X_sample)
    width = getattr(model, "n_features_in_", None)
    if width is not None and layout == "array":
        shape = np.shape(X_sample)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(
                f"X_sample must have shape (n, {width}): {type(model).__name__} was fitted on "
                f"{width} columns; got shape {shape}"
            )
    if layout == "frame":
        _check_frame_columns(model, X_sample)
    if len(X_sample) == 0:
        raise ValueError("X_sample must hold at least one row")
    problems = unsupported_steps(model)
    if problems and not allow_inexact:
        raise NotImplementedError(refusal(problems))

    float32_data = _is_float32_data(X_sample)
    float64_only = float64_only_steps(model, float32_data, dtype)  # Venn-Abers
    dtype = (
        np.dtype(np.float32 if float32_data and not float64_only else np.float64)
        if dtype is None
        else np.dtype(dtype)
    )
    # float32 interface for other data: a float64 graph whose inputs are cast up
    narrow = dtype == np.float32 and not float32_data
    if narrow:
        rounded = rounded_columns(X_sample)
        if rounded:
            loss = float32_input_loss(model, X_sample)
            shown = ", ".join(map(repr, rounded[:8])) + (", ..." if len(rounded) > 8 else "")
            measured = (
                f"; rounding X_sample alone moves the probabilities by up to {loss:.3g}"
                if loss > 0
                else ""
            )
            raise ValueError(
                f"dtype=np.float32 cannot carry these inputs exactly: float32 does not hold "
                f"the float64 values of columns [{shown}]{measured}, and a threshold inside "
                "the model can send a rounded value the other way; use dtype=np.float64 "
                "(the default for these data), or fit and serve the model on float32 data"
            )
    if zipmap and (dtype == np.float64 or narrow):
        raise ValueError(
            "zipmap=True needs a float32 graph fed float32 data (ZipMap takes float32 "
            "probabilities only, which cannot hold a float64 graph's results); pass float32 "
            "X_sample, or keep zipmap=False"
        )
    if float32_data:
        problems = problems + float32_fit_problems(model, float64_graph=dtype == np.float64)
        if problems and not allow_inexact:
            raise NotImplementedError(refusal(problems))
    build = np.dtype(np.float64) if narrow else dtype
    register_converters()
    final = _final_estimator(model)
    # a partial_fit calibrator whose statistics moved since its last fit: fit it now
    getattr(final, "_refit_if_stale", lambda: None)()
    options = {id(final): {"zipmap": zipmap, "basis": basis}}
    if priors_input:
        options[id(final)]["priors_input"] = True
    # float32 data behind a float64 interface: scikit-learn computes on the float32
    # values (a StandardScaler rounds to float32), so the graph does too
    widen = build == np.float64 and not zipmap and float32_data
    sample = _as_dtype(X_sample, np.float32 if widen else build)
    # the sample at the calibrated model's level tells the converters which
    # dtype numpy computes in there (float32 data meeting float64 one-hot columns)
    with warnings.catch_warnings():
        # a "frame" graph's converters see an array where the model saw a DataFrame
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        at_final = model[:-1].transform(sample) if isinstance(model, Pipeline) else sample
    token = SAMPLE.set(at_final)
    try:
        onx = convert_sklearn(
            model,
            initial_types=_initial_types(sample, layout, np.float32 if widen else build),
            target_opset=DEFAULT_OPSET if target_opset is None else target_opset,
            options=options,
            custom_conversion_functions=EXACT_TRANSFORMERS,
            custom_shape_calculators=EXACT_SHAPES,
            custom_parsers=EXACT_PARSERS,
            name=name,
        )
    except Exception as exc:  # noqa: BLE001 - skl2onnx's own errors name nothing
        ours = foreign_error(exc)
        if ours is None:
            raise
        raise ours from exc
    finally:
        SAMPLE.reset(token)
    if priors_input:  # the optional input after the data's
        inputs = sorted(onx.graph.input, key=lambda i: i.name == PRIORS_INPUT)
        del onx.graph.input[:]
        onx.graph.input.extend(inputs)
    if widen:
        widen_to_float64(onx)
    if narrow:
        narrow_to_float32(onx)
    onx.graph.name = name
    onx.producer_name = "bernonnx"
    onx.producer_version = __version__
    for key, value in _describe(model).items():
        onx.metadata_props.add(key=key, value=value)
    if layout == "frame":
        columns = [str(c) for c in X_sample.columns]
        onx.metadata_props.add(key=INPUT_COLUMNS, value=json.dumps(columns))
    refused = refused_values(
        model, X_sample, _numeric_columns(X_sample) if layout != "array" else []
    )
    if refused:
        onx.metadata_props.add(key=REFUSED, value=json.dumps(refused))
    positional = positional_columns(model, X_sample, layout)
    if positional is not None:
        onx.metadata_props.add(key=INPUT_ORDER, value=json.dumps(positional))
    # onnxruntime would drop x - 1e-106 and x * (1 + 1e-9) from a float64 graph
    make_safe(onx)
    _check_graph(model, onx, X_sample, problems)
    return onx


def _check_graph(model, onx: onnx.ModelProto, X_sample, problems: list[str]) -> None:
    """onnx's full check, then parity on ``X_sample``: raise (or, for an opted-in
    inexact graph, warn) rather than return a graph that differs from Python."""
    try:
        onnx.checker.check_model(onx, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise NotImplementedError(
            f"the exported graph fails onnx's full check ({' '.join(str(exc).split())[:300]}); "
            "a step of this model has no valid converter"
        ) from exc
    report = check_parity(model, onx, X_sample)
    if problems:
        warnings.warn(
            f"allow_inexact=True: {'; '.join(problems)}. On X_sample: {report.summary()}",
            InexactExportWarning,
            stacklevel=3,
        )
    elif not report["passed"]:
        raise NotImplementedError(
            f"the exported graph differs from Python on X_sample, so to_onnx does not return "
            f"it: {report.summary()} Please report this model; allow_inexact=True cannot help"
        )
