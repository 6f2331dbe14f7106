"""Exact scores of linear models, naive Bayes, MLPs and SVCs (part of
``converters/exact.py``, see there), each in the precision scikit-learn uses::

    linear (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron)
            Cast -> Gemm(coef.T, intercept)   [expit / softmax for proba]
    GaussianNB   joint log-likelihood on blocks of rows (a Loop), features first:
                 Sub(theta) -> Mul -> Div(var) -> numpy's pairwise sum,
                 then scikit-learn's logsumexp for probabilities
    MLPClassifier  MatMul/Add per layer, Relu/Tanh/expit, expit or softmax
    SVC          on blocks of rows (a Loop): kernel values (RBF: (x - sv)^2,
                 CumSum over the features), times dual coefficients, CumSum
                 over the support vectors (libsvm's one-vs-one sums, in order);
                 then scikit-learn's sign flip (binary) or one-vs-rest votes
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter

INT64 = TensorProto.INT64


def cast_to(g: GraphWriter, x: str, elem: int, current: int) -> str:
    return x if elem == current else g.node("Cast", [x], to=elem)


def linear_scores(g: GraphWriter, x: str, coef, intercept, elem: int) -> str:
    """``X @ coef.T + intercept`` in ``elem`` precision, as ``safe_sparse_dot``.

    One ``Gemm``: onnxruntime adds ``intercept`` to the finished products' sum, and
    gives bit for bit ``MatMul`` then ``Add`` (checked in float32 and float64 from 1
    to 100,000 rows, 7 to 300 features, 1 to 3 columns), one node fewer: on a
    single row each node costs about 0.2 us.
    """
    coef = np.atleast_2d(np.asarray(coef))
    intercept = np.atleast_1d(intercept)
    return g.node(
        "Gemm", [x, g.const("coef_t", coef.T, elem), g.const("intercept", intercept, elem)]
    )


def softmax(g: GraphWriter, z: str) -> str:
    """scikit-learn's ``softmax``: subtract the row max, exp, divide by the sum."""
    shifted = g.node("Sub", [z, g.reduce("ReduceMax", z, 1, 1)])
    e = g.node("Exp", [shifted])
    return g.node("Div", [e, g.reduce("ReduceSum", e, 1, 1)])


def binary_pair(g: GraphWriter, p: str) -> str:
    """``[1 - p, p]`` from an (N, 1) float64 probability."""
    return g.node("Concat", [g.node("Sub", [g.const("one", 1.0, shape=[]), p]), p], axis=1)


def signed_pair(g: GraphWriter, z: str) -> str:
    """``[-z, z]``: the layout of skl2onnx's binary raw scores (score in column 1)."""
    return g.node("Concat", [g.node("Neg", [z]), z], axis=1)


def _slice(g: GraphWriter, x: str, start: int, end: int, step: int = 1, axis: int = -1) -> str:
    """``x[start:end:step]`` along ``axis``."""
    bounds = [g.const(n, [v], INT64) for n, v in (("start", start), ("end", end), ("axis", axis))]
    return g.node("Slice", [x, *bounds, g.const("step", [step], INT64)])


def numpy_sum(g: GraphWriter, x: str, start: int, n: int, axis: int = -1, take=None) -> str:
    """numpy's pairwise sum of ``x[start:start + n]`` along ``axis`` (kept,
    length 1), in numpy's order: below 8 terms one by one; up to 128,
    eight running sums combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 +
    r7)), then the rest; beyond, two halves (a multiple of 8 first). Checked
    bit for bit against ``np.sum(axis=-1)`` in float32 and float64.

    ``take(a, b)``, if given, emits the terms ``a:b`` itself (``x`` unused), so a
    caller can compute each block of terms where it is added rather than all of
    them first."""
    if take is None:

        def take(a: int, b: int) -> str:
            return _slice(g, x, a, b, 1, axis)

    if n < 8:
        total = take(start, start + 1)
        for i in range(1, n):
            total = g.node("Add", [total, take(start + i, start + i + 1)])
        return total
    if n <= 128:
        r = take(start, start + 8)
        i = 8
        while i < n - n % 8:
            r = g.node("Add", [r, take(start + i, start + i + 8)])
            i += 8
        r = g.node("Add", [_slice(g, r, 0, 8, 2, axis), _slice(g, r, 1, 8, 2, axis)])
        r = g.node("Add", [_slice(g, r, 0, 4, 2, axis), _slice(g, r, 1, 4, 2, axis)])
        total = g.node("Add", [_slice(g, r, 0, 1, 1, axis), _slice(g, r, 1, 2, 1, axis)])
        for k in range(i, n):
            total = g.node("Add", [total, take(start + k, start + k + 1)])
        return total
    half = n // 2 - (n // 2) % 8
    return g.node(
        "Add",
        [
            numpy_sum(g, x, start, half, axis, take),
            numpy_sum(g, x, start + half, n - half, axis, take),
        ],
    )


def numpy_unary(g: GraphWriter, op: str, x: str, elem: int) -> str:
    """``op`` (Exp, Log) as numpy computes it: in float64, or for float32 data
    in float64 rounded to float32, the correctly rounded result that numpy's
    float32 loops return (onnxruntime's float32 Exp is a faster approximation,
    a few ulps off, and scikit-learn's logsumexp adds ~2000-sized terms where
    one ulp of a log moves a probability by 1e-4)."""
    if elem == DOUBLE:
        return g.node(op, [x])
    return g.node("Cast", [g.node(op, [g.node("Cast", [x], to=DOUBLE)])], to=FLOAT)


def logsumexp(g: GraphWriter, a: str, elem: int = DOUBLE) -> str:
    """scikit-learn's ``_logsumexp`` over axis 1 (keepdims): the maxima are taken
    out, ``log1p(sum(exp(a - max)) / m) + log(m) + max``; Log(1 + s) stands for
    log1p (ONNX has none), within 1.2e-16 absolute."""
    amax = g.reduce("ReduceMax", a, 1, 1)
    is_max = g.node("Equal", [a, amax])
    others = g.node("Where", [is_max, g.const("ninf", -np.inf, elem, []), a])
    m = g.reduce("ReduceSum", g.node("Cast", [is_max], to=elem), 1, 1)
    finite = g.node("Not", [g.node("IsInf", [amax])])
    shift = g.node("Where", [finite, amax, g.const("zero", 0.0, elem, [])])
    s = g.reduce("ReduceSum", numpy_unary(g, "Exp", g.node("Sub", [others, shift]), elem), 1, 1)
    is_zero = g.node("Equal", [s, g.const("zero", 0.0, elem, [])])
    s = g.node("Where", [is_zero, s, g.node("Div", [s, m])])
    if elem == DOUBLE:
        log1p = g.node("Log", [g.node("Add", [g.const("one", 1.0), s])])
    else:  # 1 + s is exact in float64 for a float32 s: a correctly rounded log1p
        one_plus = g.node("Add", [g.const("one", 1.0), g.node("Cast", [s], to=DOUBLE)])
        log1p = g.node("Cast", [g.node("Log", [one_plus])], to=FLOAT)
    return g.node("Add", [g.node("Add", [log1p, numpy_unary(g, "Log", m, elem)]), amax])


def one_vs_rest_log_odds(g: GraphWriter, u: str, n_classes: int) -> str:
    """``u_k - logsumexp_{j != k} u_j`` from unnormalised log-probabilities ``u``
    (N, K): each class's log-odds against the rest, exactly as
    ``bernonnx._meta.log_odds_from_log_proba``. Two classes: ``[-l, l]``
    with ``l = u_1 - u_0``."""
    if n_classes == 2:
        u0, u1 = g.column(u, 0), g.column(u, 1)
        return signed_pair(g, g.node("Sub", [u1, u0]))
    mask = np.where(np.eye(n_classes, dtype=bool), -np.inf, 0.0)
    a = g.node(
        "Add", [g.node("Unsqueeze", [u, g.const("axis1", [1], INT64)]), g.const("mask", mask)]
    )
    m = g.reduce("ReduceMax", a, 2, 0)
    e = g.node("Exp", [g.node("Sub", [a, g.node("Unsqueeze", [m, g.const("ax2", [2], INT64)])])])
    lse = g.node("Add", [m, g.node("Log", [g.reduce("ReduceSum", e, 2, 0)])])
    return g.node("Sub", [u, lse])


def gaussian_nb_jll(g: GraphWriter, x: str, model, elem: int, float64: bool = False) -> str:
    """``_joint_log_likelihood``: per class ``log prior - 0.5 sum log(2 pi var)
    - 0.5 sum((x - theta)^2 / var)`` in ``elem`` precision, the sum over
    features in numpy's pairwise order, the constants computed by numpy as
    scikit-learn computes them (in the dtype of ``theta_``). ``float64=True``
    computes them from float64 copies of the fitted arrays instead, as
    ``bernonnx._meta.gaussian_nb_jll64`` does (``elem`` must be DOUBLE)."""
    theta, var = np.asarray(model.theta_), np.asarray(model.var_)
    prior = np.asarray(model.class_prior_)
    if float64:
        theta, var, prior = (a.astype(np.float64) for a in (theta, var, prior))
    classes = range(len(model.classes_))
    joint = np.array([np.log(prior[i]) for i in classes])
    n_ij = np.array([-0.5 * np.sum(np.log(2.0 * np.pi * var[i, :])) for i in classes])
    rows = max(1, _NB_BLOCK_VALUES // (theta.size or 1))
    theta_t, var_t = theta.T[:, :, None], var.T[:, :, None]

    def block(g: GraphWriter, x: str) -> str:
        # Features first, rows last, (F, K, rows): each Sub and Div broadcasts one
        # constant over a run of rows, and the pairwise sum over the features adds
        # contiguous (K, rows) planes; in (rows, K, F) onnxruntime's broadcasting
        # walked runs of F elements, three times slower for the same operations.
        # (Reshape, not Unsqueeze: onnxruntime's transpose optimizer would push the
        # Transpose through Unsqueeze, Sub and Mul and transpose the 3-D product.)
        x = g.node("Transpose", [x], perm=[1, 0])
        x = g.node("Reshape", [x, g.const("f1n", [theta.shape[1], 1, -1], INT64)])

        def terms(a: int, b: int) -> str:  # ((x - theta)^2 / var) of features a:b
            d = g.node("Sub", [_slice(g, x, a, b, 1, 0), g.const("theta", theta_t[a:b], elem)])
            return g.node("Div", [g.node("Mul", [d, d]), g.const("var", var_t[a:b], elem)])

        total = numpy_sum(g, x, 0, theta.shape[1], 0, terms)
        total = g.node(
            "Transpose", [g.node("Squeeze", [total, g.const("first", [0], INT64)])], perm=[1, 0]
        )
        half = g.node("Mul", [g.const("half", 0.5, elem, []), total])
        n = g.node("Sub", [g.const("n_ij", n_ij, elem), half])
        return g.node("Add", [g.const("log_prior", joint, elem), n])

    return g.in_row_blocks(x, block, rows, len(joint), elem)


#: Values per (features, classes, rows) intermediate of the GaussianNB graph, 2^18
#: (see ``_SVC_BLOCK_VALUES``): the rows per block are this over F * K. On the credit
#: data (33 features, 2 classes) the graph ran 0.55 of skl2onnx's GaussianNB at
#: 100,000 rows with 2^16 or 2^18, 0.53 with 2^20 and 0.45 in one whole-batch pass
#: (one run, load 5.0).
_NB_BLOCK_VALUES = 2**18


_ACTIVATIONS = {"relu": "Relu", "tanh": "Tanh", "logistic": "Sigmoid", "identity": None}


def expit(g: GraphWriter, z: str, elem: int = DOUBLE) -> str:
    """scipy's ``expit`` (scikit-learn's logistic): ``1 / (1 + exp(-z))``. In double,
    onnxruntime's Sigmoid is an approximation: 3e-8 relative at z = -20, and 0 from
    z = -40 where expit gives 4e-18, which a calibrator reading probabilities on a
    log scale turns into 0.08 of probability. Float32 graphs keep Sigmoid (within
    their tolerance)."""
    if elem != DOUBLE:
        return g.node("Sigmoid", [z])
    one = g.const("one", 1.0, DOUBLE, [])
    return g.node("Div", [one, g.node("Add", [one, g.node("Exp", [g.node("Neg", [z])])])])


def mlp_logits(g: GraphWriter, x: str, model, elem: int) -> str:
    """The MLP's forward pass up to the output activation, in ``elem`` precision."""
    act = _ACTIVATIONS[model.activation]
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_, strict=True)):
        x = linear_scores(g, x, np.asarray(w).T, b, elem)
        if i < len(model.coefs_) - 1 and act == "Sigmoid":
            x = expit(g, x, elem)
        elif i < len(model.coefs_) - 1 and act is not None:
            x = g.node(act, [x])
    return x


SVC_KERNELS = ("rbf", "linear", "poly", "sigmoid")


#: Values per (rows, features, support vectors) intermediate of the RBF graph (per
#: (rows, S) one of the other kernels), 2^18 float64 (2 MB, near a core's cache): a
#: block has this many values over F * S (over S) rows, at least one. On the credit
#: data's SVC (33 features, 1,494 support vectors: five rows a block) this ran 0.71 of
#: skl2onnx's SVC at 20,000 rows, against 0.60 with half and 0.28 with eight times the
#: rows, in one run at load 4.8.
_SVC_BLOCK_VALUES = 2**18


def sequential_sum(g: GraphWriter, terms: str, n: int) -> str:
    """``((t_0 + t_1) + t_2) + ...`` over the n columns of an (N, n) float64 tensor,
    in order, as a C loop without fast-math sums: (N, 1). onnxruntime's CumSum
    adds one slice after the other (``out[i] = out[i-1] + in[i]``, read in its
    ``cumsum.cc``); over the first axis of the transposed terms it adds whole rows."""
    cumulative = g.node(
        "CumSum", [g.node("Transpose", [terms], perm=[1, 0]), g.const("axis0", 0, INT64, [])]
    )
    return g.node("Transpose", [_slice(g, cumulative, n - 1, n, 1, 0)], perm=[1, 0])


def svc_decision(g: GraphWriter, x: str, model) -> str:
    """libsvm's one-vs-one decision values in float64 (``svm_predict_values``:
    per pair (i, j) the kernel values of class i's support vectors weighted by
    ``dual_coef[j - 1]``, class j's by ``dual_coef[i]``, plus the intercept),
    then scikit-learn's sign flip (binary) or ``_ovr_decision_function``.
    Computed on blocks of rows (``GraphWriter.in_row_blocks``: every operation is
    row by row), so the (rows, features, support vectors) intermediates stay in cache."""
    n_sv, n_classes = len(model.support_vectors_), len(model.classes_)
    pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    # the RBF graph's largest intermediate is (rows, F, S), the others' (rows, S)
    width = n_sv * (model.support_vectors_.shape[1] if model.kernel == "rbf" else 1)
    rows = max(1, _SVC_BLOCK_VALUES // max(width, 1))
    dec = g.in_row_blocks(x, lambda w, xs: _svc_pairs(w, xs, model), rows, len(pairs))
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


def _svc_pairs(g: GraphWriter, x: str, model) -> str:
    """(N, n_pairs) libsvm decision values before scikit-learn's sign flip."""
    sv = np.asarray(model.support_vectors_, dtype=np.float64)
    gamma, coef0, degree = float(model._gamma), float(model.coef0), float(model.degree)
    # Scalars go into the support vectors, never onto the MatMul's output:
    # onnxruntime fuses MatMul * scalar into a FusedMatMul that lost 5e-7 of a
    # float64 decision value here. 2 * sv is exact; gamma * sv moves each term
    # by one rounding (1e-16 relative), libsvm's gamma * dot(x, sv) another.
    if model.kernel == "rbf":
        # libsvm's dense RBF: sum over features, in order, of (x_j - sv_j)^2; the
        # expansion |x|^2 + |sv|^2 - 2 x.sv cancels on unscaled data (credit's amounts
        # near 1e6: 1.1e-9 of probability)
        # (rows, F, S): x_j - sv_j, squared, then summed over the features in order
        # by CumSum (one slice after the other, as libsvm's loop), whose last slice is d
        n_features = sv.shape[1]
        diff = g.node(
            "Sub",
            [
                g.node("Unsqueeze", [x, g.const("axis2", [2], INT64)]),
                g.const("sv_t", sv.T[None, :, :]),
            ],
        )
        squares = g.node("Mul", [diff, diff])
        cumulative = g.node("CumSum", [squares, g.const("axis1", 1, INT64, [])])
        d = g.node(
            "Squeeze",
            [
                _slice(g, cumulative, n_features - 1, n_features, 1, 1),
                g.const("axis1", [1], INT64),
            ],
        )
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
    intercept = np.asarray(model._intercept_, dtype=np.float64)
    columns = []
    for p, (i, j) in enumerate(pairs):
        # libsvm: sum += coef * kvalue over class i's support vectors, then class j's,
        # one term at a time; a MatMul sums in another order, which a steep calibrator
        # turned into 1.1e-9 of probability (1,565 terms on raw credit amounts)
        index = np.r_[np.arange(starts[i], starts[i + 1]), np.arange(starts[j], starts[j + 1])]
        coef = np.r_[dual[j - 1, starts[i] : starts[i + 1]], dual[i, starts[j] : starts[j + 1]]]
        if len(index) != len(sv) or not np.array_equal(index, np.arange(len(index))):
            values = g.node("Gather", [kernel, g.const("sv_index", index, INT64)], axis=1)
        else:  # two classes: the pair's support vectors are all of them, in order
            values = kernel
        terms = g.node("Mul", [values, g.const("coef", coef[None, :])])
        total = sequential_sum(g, terms, len(index))
        columns.append(g.node("Add", [total, g.const("intercept", intercept[p : p + 1])]))
    return columns[0] if len(columns) == 1 else g.node("Concat", columns, axis=1)
