"""Base-model converters that compute what scikit-learn computes, rounding where numpy rounds.

skl2onnx's own converters are written for speed in float32: scalers become one
``Scaler`` op (``(x - offset) * (1 / scale)`` with float32 attributes), tree
thresholds are rounded to the *nearest* float32, and linear models, naive
Bayes and MLPs compute in float32 even where scikit-learn computes in float64.
On real data the last bit moves values across tree thresholds and saturated
probabilities across many ulps (issue 9: up to 0.1 of probability). Inside
:func:`bernonnx.export.to_onnx` the converters below replace skl2onnx's for
the estimators they name; skl2onnx's global registry is not changed.

Transformers (``custom_conversion_functions`` of one conversion; a
ColumnTransformer's concatenation is typed float64 when any part is)::

    StandardScaler / RobustScaler   x -> Sub(center) -> Div(scale)
    MinMaxScaler                    x -> Mul(scale) -> Add(min) [-> Clip]
    MaxAbsScaler                    x -> Div(scale)
    SimpleImputer (NaN, numeric)    Where(IsNaN(x), statistics, x)

Each op runs in the precision numpy uses for it on float32 data: either in
float32 with float32 constants (``X -= xp.astype(mean_, X.dtype)``) or in
float64 with a cast back to float32 after each in-place operation
(``X *= scale_``). Which one a scikit-learn version uses is not guessed: it is
measured once per export on a probe of random float32 rows (``_float32_mode``).

Final classifiers (behind ``BernonnxRawScores``, see ``converters/calibration.py``),
each emitting float64 scores::

    linear (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron)
            Cast -> MatMul(coef.T) -> Add(intercept)   [Sigmoid / softmax for proba]
    GaussianNB   joint log-likelihood: Sub(theta) -> Mul -> Div(var) -> ReduceSum,
                 then scikit-learn's logsumexp for probabilities
    MLPClassifier  MatMul/Add per layer, Relu/Tanh/Sigmoid, Sigmoid or softmax
    trees (DecisionTree, RandomForest, ExtraTrees, GradientBoosting,
           HistGradientBoosting)
            TreeEnsembleRegressor whose target t is the leaf id reached in tree t
            (exact in float32 below 2^24 nodes) -> Cast -> Add(offsets)
            -> Gather(float64 leaf values) -> ReduceSum -> [Div(n_trees) | Add(init)]

Tree thresholds: scikit-learn compares ``x <= t`` with ``t`` float64. For the
float32 ``x`` that RandomForest, ExtraTrees, DecisionTree and GradientBoosting
compare (they cast X to float32), ``x <= t`` exactly when ``x <= t'`` with
``t'`` the largest float32 not above ``t``: the float attribute holds ``t'``.
HistGradientBoosting compares float64 ``x``; in float64 graphs its thresholds
travel as ``nodes_values_as_tensor`` (float64), which onnxruntime compares in
double. Leaf values are float64 and summed in float64, as scikit-learn sums.
"""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto, numpy_helper
from scipy.sparse import issparse
from skl2onnx.common.data_types import DoubleTensorType
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import (
    LogisticRegression,
    Perceptron,
    RidgeClassifier,
    SGDClassifier,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter

INT64 = TensorProto.INT64

# ---------------------------------------------------------------- transformers


def _scaler_chain(model) -> tuple[list[tuple[str, np.ndarray]], tuple | None]:
    """The in-place numpy operations of ``model.transform``, in order, and a clip range."""
    if isinstance(model, StandardScaler):  # mean_ is fitted even with with_mean=False
        chain = [("Sub", model.mean_ if model.with_mean else None)]
        chain.append(("Div", model.scale_ if model.with_std else None))
    elif isinstance(model, RobustScaler):
        chain = [("Sub", model.center_ if model.with_centering else None)]
        chain.append(("Div", model.scale_ if model.with_scaling else None))
    elif isinstance(model, MaxAbsScaler):
        chain = [("Div", model.scale_)]
    else:  # MinMaxScaler
        chain = [("Mul", model.scale_), ("Add", model.min_)]
    chain = [(op, np.asarray(v)) for op, v in chain if v is not None]
    clip = tuple(model.feature_range) if getattr(model, "clip", False) else None
    return chain, clip


_NUMPY_OPS = {"Sub": np.subtract, "Div": np.divide, "Mul": np.multiply, "Add": np.add}


def _apply_chain(X: np.ndarray, chain, clip, mode: str) -> np.ndarray:
    """numpy's result for float32 ``X`` under ``mode``: "float32" (constants cast
    to float32 first) or "float64" (each op in float64, rounded to float32)."""
    X = X.copy()
    for op, values in chain:
        if mode == "float32":
            X = _NUMPY_OPS[op](X, values.astype(np.float32))
        else:
            X = _NUMPY_OPS[op](X.astype(np.float64), values.astype(np.float64))
        X = X.astype(np.float32)
    if clip is not None:
        X = np.clip(X, np.float32(clip[0]), np.float32(clip[1]))
    return X


def _float32_mode(model, chain, clip) -> str:
    """Which float32 arithmetic ``model.transform`` uses, measured on a probe."""
    rng = np.random.default_rng(0)
    n = model.n_features_in_
    scales = np.ones(n)
    for _, values in chain:
        scales = np.maximum(scales, np.abs(np.broadcast_to(values, (n,))))
    X = (rng.standard_normal((512, n)) * scales * 10 ** rng.uniform(-3, 1, (512, 1))).astype(
        np.float32
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fitted on a DataFrame: the probe has no names
        expected = np.asarray(model.transform(X.copy()), dtype=np.float32)
    for mode in ("float32", "float64"):
        if np.array_equal(_apply_chain(X, chain, clip, mode), expected, equal_nan=True):
            return mode
    raise NotImplementedError(
        f"{type(model).__name__}.transform rounds float32 data in a way bernonnx does not "
        "reproduce; export with dtype=np.float64"
    )


def _elem(var) -> int:
    return DOUBLE if isinstance(var.type, DoubleTensorType) else FLOAT


def _finish_transformer(g: GraphWriter, operator, x: str, elem: int) -> None:
    out = operator.outputs[0]
    if _elem(out) != elem:
        x = g.node("Cast", [x], to=_elem(out))
    g.container.add_node(
        "Identity", [x], out.full_name, name=g.scope.get_unique_operator_name("exact_out")
    )


def convert_exact_scaler(scope, operator, container):
    """Standard, Robust, MinMax and MaxAbs scalers in numpy's precision, op by op."""
    model = operator.raw_operator
    g = GraphWriter(scope, container, "scaler")
    chain, clip = _scaler_chain(model)
    x = operator.inputs[0].full_name
    elem = _elem(operator.outputs[0])
    if _elem(operator.inputs[0]) != elem:
        x = g.node("Cast", [x], to=elem)
    mode = "float64" if elem == DOUBLE else _float32_mode(model, chain, clip)
    for op, values in chain:
        if mode == "float64" and elem == FLOAT:
            x = g.node("Cast", [x], to=DOUBLE)
            x = g.node("Cast", [g.node(op, [x, g.const(op.lower(), values)])], to=FLOAT)
        else:
            x = g.node(op, [x, g.const(op.lower(), values, elem)])
    if clip is not None:
        x = g.node("Clip", [x, g.const("lo", clip[0], elem, []), g.const("hi", clip[1], elem, [])])
    _finish_transformer(g, operator, x, elem)


def _imputer_is_simple(model) -> bool:
    statistics = np.asarray(model.statistics_)
    return (
        isinstance(model.missing_values, float)
        and np.isnan(model.missing_values)
        and not model.add_indicator
        and statistics.dtype.kind == "f"
        and not np.isnan(statistics).any()
    )


def convert_exact_imputer(scope, operator, container):
    """``X[isnan(X)] = statistics_`` (float32 data get the statistics rounded to
    nearest, as numpy's assignment rounds); anything else goes to skl2onnx."""
    model = operator.raw_operator
    if not _imputer_is_simple(model) or operator.inputs[0].type.__class__.__name__.startswith(
        ("Int", "String")
    ):
        from skl2onnx.common._registration import get_converter

        return get_converter(operator.type)(scope, operator, container)
    g = GraphWriter(scope, container, "impute")
    elem = _elem(operator.outputs[0])
    x = operator.inputs[0].full_name
    if _elem(operator.inputs[0]) != elem:
        x = g.node("Cast", [x], to=elem)
    stats = g.const("statistics", model.statistics_, elem, [1, len(model.statistics_)])
    _finish_transformer(g, operator, g.node("Where", [g.node("IsNaN", [x]), stats, x]), elem)


#: skl2onnx ``custom_conversion_functions`` for one ``to_onnx`` call.
EXACT_TRANSFORMERS = {
    StandardScaler: convert_exact_scaler,
    RobustScaler: convert_exact_scaler,
    MinMaxScaler: convert_exact_scaler,
    MaxAbsScaler: convert_exact_scaler,
    SimpleImputer: convert_exact_imputer,
}

# ----------------------------------------------------------------- classifiers

LINEAR = (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron)
FORESTS = (RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier)


def exact_supported(model, method: str) -> bool:
    """True when this module emits ``method``'s scores of ``model`` exactly."""
    # boosting: raw scores, or binary probabilities (expit of the raw score)
    boosting_method = method == "decision_function" or len(getattr(model, "classes_", [])) == 2
    if isinstance(model, HistGradientBoostingClassifier):
        return boosting_method and getattr(model, "_preprocessor", None) is None
    if isinstance(model, GradientBoostingClassifier):
        return boosting_method
    if isinstance(model, FORESTS):
        return method == "predict_proba" and getattr(model, "n_outputs_", 1) == 1
    if isinstance(model, LINEAR):
        return method == "decision_function" or isinstance(model, LogisticRegression)
    if isinstance(model, SVC):
        return (
            method == "decision_function"
            and model.kernel in _KERNELS
            and not issparse(model.support_vectors_)
            and (model.decision_function_shape == "ovr" or len(model.classes_) == 2)
        )
    return isinstance(model, GaussianNB | MLPClassifier)


def _as(g: GraphWriter, x: str, elem: int, current: int) -> str:
    return x if elem == current else g.node("Cast", [x], to=elem)


def _linear_scores(g: GraphWriter, x: str, coef, intercept, elem: int) -> str:
    """``X @ coef.T + intercept`` in ``elem`` precision, as ``safe_sparse_dot``."""
    coef = np.atleast_2d(np.asarray(coef))
    z = g.node("MatMul", [x, g.const("coef_t", coef.T, elem)])
    return g.node("Add", [z, g.const("intercept", np.atleast_1d(intercept), elem)])


def _softmax(g: GraphWriter, z: str) -> str:
    """scikit-learn's ``softmax``: subtract the row max, exp, divide by the sum."""
    shifted = g.node("Sub", [z, g.reduce("ReduceMax", z, 1, 1)])
    e = g.node("Exp", [shifted])
    return g.node("Div", [e, g.reduce("ReduceSum", e, 1, 1)])


def _binary_pair(g: GraphWriter, p: str) -> str:
    """``[1 - p, p]`` from an (N, 1) float64 probability."""
    return g.node("Concat", [g.node("Sub", [g.const("one", 1.0, shape=[]), p]), p], axis=1)


def _signed_pair(g: GraphWriter, z: str) -> str:
    """``[-z, z]``: the layout of skl2onnx's binary raw scores (score in column 1)."""
    return g.node("Concat", [g.node("Neg", [z]), z], axis=1)


def _slice(g: GraphWriter, x: str, start: int, end: int, step: int = 1, axis: int = -1) -> str:
    """``x[start:end:step]`` along ``axis``."""
    bounds = [g.const(n, [v], INT64) for n, v in (("start", start), ("end", end), ("axis", axis))]
    return g.node("Slice", [x, *bounds, g.const("step", [step], INT64)])


def numpy_sum(g: GraphWriter, x: str, start: int, n: int, axis: int = -1) -> str:
    """numpy's pairwise sum of ``x[start:start + n]`` along ``axis`` (kept,
    length 1), in numpy's order: below 8 terms one by one; up to 128,
    eight running sums combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 +
    r7)), then the rest; beyond, two halves (a multiple of 8 first). Checked
    bit for bit against ``np.sum(axis=-1)`` in float32 and float64."""
    if n < 8:
        total = _slice(g, x, start, start + 1, 1, axis)
        for i in range(1, n):
            total = g.node("Add", [total, _slice(g, x, start + i, start + i + 1, 1, axis)])
        return total
    if n <= 128:
        r = _slice(g, x, start, start + 8, 1, axis)
        i = 8
        while i < n - n % 8:
            r = g.node("Add", [r, _slice(g, x, start + i, start + i + 8, 1, axis)])
            i += 8
        r = g.node("Add", [_slice(g, r, 0, 8, 2, axis), _slice(g, r, 1, 8, 2, axis)])
        r = g.node("Add", [_slice(g, r, 0, 4, 2, axis), _slice(g, r, 1, 4, 2, axis)])
        total = g.node("Add", [_slice(g, r, 0, 1, 1, axis), _slice(g, r, 1, 2, 1, axis)])
        for k in range(i, n):
            total = g.node("Add", [total, _slice(g, x, start + k, start + k + 1, 1, axis)])
        return total
    half = n // 2 - (n // 2) % 8
    return g.node(
        "Add", [numpy_sum(g, x, start, half, axis), numpy_sum(g, x, start + half, n - half, axis)]
    )


def _unary(g: GraphWriter, op: str, x: str, elem: int) -> str:
    """``op`` (Exp, Log) as numpy computes it: in float64, or for float32 data
    in float64 rounded to float32, the correctly rounded result that numpy's
    float32 loops return (onnxruntime's float32 Exp is a faster approximation,
    a few ulps off, and scikit-learn's logsumexp adds ~2000-sized terms where
    one ulp of a log moves a probability by 1e-4)."""
    if elem == DOUBLE:
        return g.node(op, [x])
    return g.node("Cast", [g.node(op, [g.node("Cast", [x], to=DOUBLE)])], to=FLOAT)


def _logsumexp(g: GraphWriter, a: str, elem: int = DOUBLE) -> str:
    """scikit-learn's ``_logsumexp`` over axis 1 (keepdims): the maxima are taken
    out, ``log1p(sum(exp(a - max)) / m) + log(m) + max``; Log(1 + s) stands for
    log1p (ONNX has none), within 1.2e-16 absolute."""
    amax = g.reduce("ReduceMax", a, 1, 1)
    is_max = g.node("Equal", [a, amax])
    others = g.node("Where", [is_max, g.const("ninf", -np.inf, elem, []), a])
    m = g.reduce("ReduceSum", g.node("Cast", [is_max], to=elem), 1, 1)
    finite = g.node("Not", [g.node("IsInf", [amax])])
    shift = g.node("Where", [finite, amax, g.const("zero", 0.0, elem, [])])
    s = g.reduce("ReduceSum", _unary(g, "Exp", g.node("Sub", [others, shift]), elem), 1, 1)
    is_zero = g.node("Equal", [s, g.const("zero", 0.0, elem, [])])
    s = g.node("Where", [is_zero, s, g.node("Div", [s, m])])
    if elem == DOUBLE:
        log1p = g.node("Log", [g.node("Add", [g.const("one", 1.0), s])])
    else:  # 1 + s is exact in float64 for a float32 s: a correctly rounded log1p
        one_plus = g.node("Add", [g.const("one", 1.0), g.node("Cast", [s], to=DOUBLE)])
        log1p = g.node("Cast", [g.node("Log", [one_plus])], to=FLOAT)
    return g.node("Add", [g.node("Add", [log1p, _unary(g, "Log", m, elem)]), amax])


def one_vs_rest_log_odds(g: GraphWriter, u: str, n_classes: int) -> str:
    """``u_k - logsumexp_{j != k} u_j`` from unnormalised log-probabilities ``u``
    (N, K): each class's log-odds against the rest, exactly as
    ``bernonnx.calibration.log_odds_from_log_proba``. Two classes: ``[-l, l]``
    with ``l = u_1 - u_0``."""
    if n_classes == 2:
        u0, u1 = g.column(u, 0), g.column(u, 1)
        return _signed_pair(g, g.node("Sub", [u1, u0]))
    mask = np.where(np.eye(n_classes, dtype=bool), -np.inf, 0.0)
    a = g.node(
        "Add", [g.node("Unsqueeze", [u, g.const("axis1", [1], INT64)]), g.const("mask", mask)]
    )
    m = g.reduce("ReduceMax", a, 2, 0)
    e = g.node("Exp", [g.node("Sub", [a, g.node("Unsqueeze", [m, g.const("ax2", [2], INT64)])])])
    lse = g.node("Add", [m, g.node("Log", [g.reduce("ReduceSum", e, 2, 0)])])
    return g.node("Sub", [u, lse])


def _gaussian_nb_jll(g: GraphWriter, x: str, model, elem: int) -> str:
    """``_joint_log_likelihood``: per class ``log prior - 0.5 sum log(2 pi var)
    - 0.5 sum((x - theta)^2 / var)`` in ``elem`` precision, the sum over
    features in numpy's pairwise order, the constants computed by numpy as
    scikit-learn computes them (in the dtype of ``theta_``)."""
    theta, var = np.asarray(model.theta_), np.asarray(model.var_)
    classes = range(len(model.classes_))
    joint = np.array([np.log(model.class_prior_[i]) for i in classes])
    n_ij = np.array([-0.5 * np.sum(np.log(2.0 * np.pi * var[i, :])) for i in classes])
    x = g.node("Unsqueeze", [x, g.const("axis1", [1], INT64)])
    d = g.node("Sub", [x, g.const("theta", theta, elem)])
    q = g.node("Div", [g.node("Mul", [d, d]), g.const("var", var, elem)])
    total = g.node("Squeeze", [numpy_sum(g, q, 0, theta.shape[1]), g.const("last", [2], INT64)])
    half = g.node("Mul", [g.const("half", 0.5, elem, []), total])
    n = g.node("Sub", [g.const("n_ij", n_ij, elem), half])
    return g.node("Add", [g.const("log_prior", joint, elem), n])


_ACTIVATIONS = {"relu": "Relu", "tanh": "Tanh", "logistic": "Sigmoid", "identity": None}


def _mlp_logits(g: GraphWriter, x: str, model, elem: int) -> str:
    """The MLP's forward pass up to the output activation, in ``elem`` precision."""
    act = _ACTIVATIONS[model.activation]
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_, strict=True)):
        x = _linear_scores(g, x, np.asarray(w).T, b, elem)
        if i < len(model.coefs_) - 1 and act is not None:
            x = g.node(act, [x])
    return x


_KERNELS = ("rbf", "linear", "poly", "sigmoid")


def _svc_decision(g: GraphWriter, x: str, model) -> str:
    """libsvm's one-vs-one decision values in float64 (``svm_predict_values``:
    per pair (i, j) the kernel values of class i's support vectors weighted by
    ``dual_coef[j - 1]``, class j's by ``dual_coef[i]``, plus the intercept),
    then scikit-learn's sign flip (binary) or ``_ovr_decision_function``."""
    sv = np.asarray(model.support_vectors_, dtype=np.float64)
    gamma, coef0, degree = float(model._gamma), float(model.coef0), float(model.degree)
    # Scalars go into the support vectors, never onto the MatMul's output:
    # onnxruntime fuses MatMul * scalar into a FusedMatMul that lost 5e-7 of a
    # float64 decision value here. 2 * sv is exact; gamma * sv moves each term
    # by one rounding (1e-16 relative), libsvm's gamma * dot(x, sv) another.
    if model.kernel == "rbf":
        xx = g.reduce("ReduceSum", g.node("Mul", [x, x]), 1, 1)
        d = g.node("Add", [xx, g.const("ss", (sv * sv).sum(axis=1)[None, :])])
        d = g.node("Sub", [d, g.node("MatMul", [x, g.const("two_sv_t", 2.0 * sv.T)])])
        kernel = g.node("Exp", [g.node("Mul", [g.const("ngamma", -gamma), d])])
    elif model.kernel == "linear":
        kernel = g.node("MatMul", [x, g.const("sv_t", sv.T)])
    else:
        xs = g.node("MatMul", [x, g.const("gamma_sv_t", gamma * sv.T)])
        arg = g.node("Add", [xs, g.const("c0", coef0)])
        if model.kernel == "poly":
            kernel = g.node("Pow", [arg, g.const("degree", degree)])
        else:
            kernel = g.node("Tanh", [arg])
    n_classes, counts = len(model.classes_), np.asarray(model._n_support)
    starts = np.concatenate([[0], np.cumsum(counts)])
    dual = np.asarray(model._dual_coef_, dtype=np.float64)
    pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    weights = np.zeros((len(sv), len(pairs)))
    for p, (i, j) in enumerate(pairs):
        weights[starts[i] : starts[i + 1], p] = dual[j - 1, starts[i] : starts[i + 1]]
        weights[starts[j] : starts[j + 1], p] = dual[i, starts[j] : starts[j + 1]]
    dec = g.node(
        "Add",
        [
            g.node("MatMul", [kernel, g.const("dual", weights)]),
            g.const("intercept", np.asarray(model._intercept_, dtype=np.float64)),
        ],
    )
    if n_classes == 2:
        return g.node("Neg", [dec])
    # _ovr_decision_function(dec < 0, -dec, n_classes)
    to_i, to_j = np.zeros((len(pairs), n_classes)), np.zeros((len(pairs), n_classes))
    for p, (i, j) in enumerate(pairs):
        to_i[p, i], to_j[p, j] = 1.0, 1.0
    confidence = g.node("MatMul", [dec, g.const("conf", to_i - to_j)])
    negative = g.node("Cast", [g.node("Less", [dec, g.const("zero", 0.0)])], to=DOUBLE)
    positive = g.node("Sub", [g.const("one", 1.0), negative])
    votes = g.node(
        "Add",
        [
            g.node("MatMul", [positive, g.const("vote_i", to_i)]),
            g.node("MatMul", [negative, g.const("vote_j", to_j)]),
        ],
    )
    scale = g.node(
        "Mul",
        [g.const("three", 3.0), g.node("Add", [g.node("Abs", [confidence]), g.const("one", 1.0)])],
    )
    return g.node("Add", [votes, g.node("Div", [confidence, scale])])


def _tree_arrays(model):
    """Every tree as (left, right, feature, threshold, missing_left, values (n, K),
    column), plus what scikit-learn does after summing the trees."""
    trees, post = [], None
    if isinstance(model, HistGradientBoostingClassifier):
        k_cols = model.n_trees_per_iteration_
        for predictors in model._predictors:
            for k, predictor in enumerate(predictors):
                nodes = predictor.nodes
                if nodes["is_categorical"].any():
                    raise NotImplementedError("categorical splits of HistGradientBoosting")
                leaf = nodes["is_leaf"].astype(bool)
                values = np.zeros((len(nodes), k_cols))
                values[leaf, k] = nodes["value"][leaf]
                trees.append(
                    (
                        np.where(leaf, -1, nodes["left"].astype(np.int64)),
                        np.where(leaf, -1, nodes["right"].astype(np.int64)),
                        nodes["feature_idx"].astype(np.int64),
                        nodes["num_threshold"].astype(np.float64),
                        nodes["missing_go_to_left"].astype(np.int64),
                        values,
                    )
                )
        post = ("add", np.asarray(model._baseline_prediction, dtype=np.float64).reshape(1, -1))
        return trees, post, np.float64
    if isinstance(model, GradientBoostingClassifier):
        k_cols = model.estimators_.shape[1]
        for stage in model.estimators_:
            for k, reg in enumerate(stage):
                t = reg.tree_
                values = np.zeros((t.node_count, k_cols))
                values[:, k] = model.learning_rate * t.value[:, 0, 0]
                trees.append(_sklearn_tree(t, values))
        zero = np.zeros((1, model.n_features_in_), dtype=np.float32)
        post = ("add", np.asarray(model._raw_predict_init(zero), dtype=np.float64))
        return trees, post, np.float32
    estimators = [model] if isinstance(model, DecisionTreeClassifier) else model.estimators_
    n_classes = len(model.classes_)
    for est in estimators:
        t = est.tree_
        trees.append(_sklearn_tree(t, np.asarray(t.value[:, 0, :n_classes], dtype=np.float64)))
    if not isinstance(model, DecisionTreeClassifier):
        post = ("div", float(len(estimators)))
    return trees, post, np.float32


def _sklearn_tree(t, values):
    missing = getattr(t, "missing_go_to_left", None)
    missing = np.zeros(t.node_count, np.int64) if missing is None else missing.astype(np.int64)
    return (
        t.children_left.astype(np.int64),
        t.children_right.astype(np.int64),
        t.feature.astype(np.int64),
        t.threshold.astype(np.float64),
        missing,
        values,
    )


def round_down_float32(t: np.ndarray) -> np.ndarray:
    """The largest float32 not above each float64 ``t``: for float32 ``x``,
    ``x <= t`` exactly when ``x <= round_down_float32(t)``."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = t.astype(np.float32)
    above = r.astype(np.float64) > t
    r[above] = np.nextafter(r[above], np.float32(-np.inf))
    return r


def _tree_ensemble(g: GraphWriter, x: str, model, elem: int) -> str:
    """Sum of leaf values over the trees, in float64, plus the model's post step."""
    trees, post, x_dtype = _tree_arrays(model)
    attrs = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "true", "false", "miss")}
    thresholds, target = [], {"treeids": [], "nodeids": [], "ids": [], "weights": []}
    offsets, tables = [], []
    for tree_id, (left, right, feature, threshold, missing, values) in enumerate(trees):
        n = len(left)
        if n >= 2**24:
            raise NotImplementedError("trees of 2^24 nodes or more")
        leaf = left < 0
        attrs["treeids"] += [tree_id] * n
        attrs["nodeids"] += list(range(n))
        attrs["featureids"] += np.where(leaf, 0, feature).tolist()
        attrs["modes"] += ["LEAF" if is_leaf else "BRANCH_LEQ" for is_leaf in leaf]
        attrs["true"] += np.where(leaf, 0, left).tolist()
        attrs["false"] += np.where(leaf, 0, right).tolist()
        attrs["miss"] += np.where(leaf, 0, missing).tolist()
        thresholds.append(np.where(leaf, 0.0, threshold))
        ids = np.flatnonzero(leaf)
        target["treeids"] += [tree_id] * len(ids)
        target["nodeids"] += ids.tolist()
        target["ids"] += [tree_id] * len(ids)
        target["weights"] += ids.astype(np.float64).tolist()
        offsets.append(sum(len(t) for t in tables))
        tables.append(values)
    thresholds = np.concatenate(thresholds)
    common = dict(
        nodes_treeids=attrs["treeids"],
        nodes_nodeids=attrs["nodeids"],
        nodes_featureids=attrs["featureids"],
        nodes_modes=attrs["modes"],
        nodes_truenodeids=attrs["true"],
        nodes_falsenodeids=attrs["false"],
        nodes_missing_value_tracks_true=attrs["miss"],
        target_treeids=target["treeids"],
        target_nodeids=target["nodeids"],
        target_ids=target["ids"],
        target_weights=target["weights"],
        n_targets=len(trees),
        aggregate_function="SUM",
        post_transform="NONE",
    )
    if x_dtype == np.float32 or elem == FLOAT:
        # scikit-learn compares float32 x (forests cast X to float32; float32 data stay exact)
        x = _as(g, x, FLOAT, elem)
        common["nodes_values"] = round_down_float32(thresholds).astype(np.float64).tolist()
    else:
        common["nodes_values_as_tensor"] = numpy_helper.from_array(thresholds, "thresholds")
    leaf_ids = g.scope.get_unique_variable_name(f"{g.prefix}_leaf_ids")
    g.container.add_node(
        "TreeEnsembleRegressor",
        [x],
        leaf_ids,
        op_domain="ai.onnx.ml",
        op_version=3,
        name=g.scope.get_unique_operator_name(f"{g.prefix}_TreeEnsembleRegressor"),
        **common,
    )
    index = g.node(
        "Add",
        [g.node("Cast", [leaf_ids], to=INT64), g.const("offsets", [offsets], INT64)],
    )
    table = g.const("leaf_values", np.concatenate(tables))
    total = g.reduce("ReduceSum", g.node("Gather", [table, index], axis=0), 1, 0)
    if post is None:
        return total
    if post[0] == "div":
        return g.node("Div", [total, g.const("n_trees", post[1])])
    return g.node("Add", [g.const("init", post[1]), total])


def exact_scores(g: GraphWriter, x: str, elem: int, model, method: str, options: dict) -> str:
    """``method``'s output of ``model`` as an (N, 2) or (N, K) float64 tensor.

    Binary decision functions come as ``[-z, z]``; with
    ``options["log_odds_from"] == "log_proba"`` the output is the log-odds of
    each class against the rest (``one_vs_rest_log_odds``) instead of probabilities.
    ``options["numpy_dtype"]`` is the dtype scikit-learn sees at the model's
    input (float32 or float64); it decides the precision of linear algebra.
    """
    n_classes = len(model.classes_)
    log_proba = options.get("log_odds_from") == "log_proba"
    seen = np.dtype(options.get("numpy_dtype") or (np.float64 if elem == DOUBLE else np.float32))
    seen = seen if seen == np.float32 else np.dtype(np.float64)  # ints, bools: numpy promotes
    if isinstance(model, (HistGradientBoostingClassifier, GradientBoostingClassifier, *FORESTS)):
        scores = _tree_ensemble(g, x, model, elem)
        if isinstance(model, FORESTS) or n_classes > 2:
            return scores
        if method == "decision_function":
            return _signed_pair(g, scores)
        return _binary_pair(g, g.node("Sigmoid", [scores]))  # the loss's expit
    if isinstance(model, GaussianNB):
        work = DOUBLE if np.result_type(seen, model.theta_.dtype) == np.float64 else FLOAT
        jll = _gaussian_nb_jll(g, _as(g, x, work, elem), model, work)
        if log_proba:
            return one_vs_rest_log_odds(g, _as(g, jll, DOUBLE, work), n_classes)
        proba = _unary(g, "Exp", g.node("Sub", [jll, _logsumexp(g, jll, work)]), work)
        return _as(g, proba, DOUBLE, work)
    if isinstance(model, MLPClassifier):
        work = DOUBLE if np.result_type(seen, model.coefs_[0].dtype) == np.float64 else FLOAT
        z = _as(g, _mlp_logits(g, _as(g, x, work, elem), model, work), DOUBLE, work)
        if log_proba:
            return _signed_pair(g, z) if n_classes == 2 else one_vs_rest_log_odds(g, z, n_classes)
        if model.out_activation_ == "softmax":
            return _softmax(g, z)
        return _binary_pair(g, g.node("Sigmoid", [z]))
    if isinstance(model, SVC):
        z = _svc_decision(g, _as(g, x, DOUBLE, elem), model)
        return _signed_pair(g, z) if n_classes == 2 else z
    # linear models
    work = DOUBLE if np.result_type(seen, np.asarray(model.coef_).dtype) == np.float64 else FLOAT
    z = _as(
        g,
        _linear_scores(g, _as(g, x, work, elem), model.coef_, model.intercept_, work),
        DOUBLE,
        work,
    )
    if method == "decision_function" or (log_proba and n_classes == 2):
        return _signed_pair(g, z) if n_classes == 2 else z
    if log_proba:
        return one_vs_rest_log_odds(g, z, n_classes)
    return _binary_pair(g, g.node("Sigmoid", [z])) if n_classes == 2 else _softmax(g, z)


def parse_column_transformer(scope, model, inputs, custom_parsers=None):
    """skl2onnx's ColumnTransformer parser, with the concatenation typed as numpy
    types ``hstack``: float64 when any part is float64. skl2onnx types it after
    the first part, so a OneHotEncoder (float) first would round the float64
    parts of a float64 graph to float32."""
    from skl2onnx._parse import _parse_sklearn_column_transformer

    outputs = _parse_sklearn_column_transformer(scope, model, inputs, custom_parsers)
    for operator in scope.operators.values():
        if operator.type == "SklearnConcat" and operator.outputs[0] in outputs:
            if any(isinstance(v.type, DoubleTensorType) for v in operator.inputs):
                operator.outputs[0].type = DoubleTensorType(operator.outputs[0].type.shape)
    return outputs


#: skl2onnx ``custom_parsers`` for one ``to_onnx`` call.
EXACT_PARSERS = {ColumnTransformer: parse_column_transformer}
