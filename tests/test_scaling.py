"""Vector, matrix and structured (SVS, SMS) scaling: optimality, invariants, probmetrics'
optimum, CalibratedClassifier and ONNX parity on real multiclass data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _parity import assert_parity, run_onnx
from scipy.special import logsumexp, softmax
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline as sk_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks._realdata import (
    DEFAULT_DATA_DIR,
    DataMissing,
    as_float,
    load,
    make_pipeline,
    split,
)
from bernonnx import (
    CalibratedClassifier,
    MatrixScalingCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    VectorScalingCalibrator,
)
from bernonnx.calibrators.temperature import mixed_log_proba
from bernonnx.export import to_onnx
from bernonnx.stats import stats_for

SCALINGS = [
    VectorScalingCalibrator(),
    MatrixScalingCalibrator(),
    StructuredVectorScalingCalibrator(),
    StructuredMatrixScalingCalibrator(),
]
IDS = ["vector", "matrix", "svs", "sms"]
#: Two fits of one objective (weights and repetitions, shuffled rows, logits and their
#: probabilities, warm and cold starts) agree to the solver's stopping rule (a relative
#: gradient of 1e-8), not to rounding: probabilities within this
FIT_TOL = 1e-6


def _logits(n=3000, k=4, seed=0):
    """Logits of a miscalibrated model: class-dependent scales and a shift."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = 2.0 * np.eye(k)[y] + rng.normal(size=(n, k))
    return z * np.linspace(0.5, 3.0, k) + np.arange(k) * 0.3, y


def _inputs(cal, z):
    """What the affine map reads: log-probabilities (after temperature and mixture)."""
    if hasattr(cal, "mixture_"):
        return mixed_log_proba(z, cal.inverse_temperature_, cal.mixture_)
    return z - logsumexp(z, axis=1, keepdims=True)


def _objective(cal, z, y, w):
    """The documented objective at the fitted parameters (the sum form)."""
    return _objective_at(cal, _inputs(cal, z), y, w, cal.coef_, cal.intercept_)


def _objective_at(cal, t, y, w, coef, b):
    k = t.shape[1]
    a = (t @ coef.T if coef.ndim == 2 else t * coef) + b
    loss = float(w @ (logsumexp(a, axis=1) - a[np.arange(len(y)), y]))
    if not hasattr(cal, "mixture_"):
        return loss
    delta = coef - (np.eye(k) if coef.ndim == 2 else 1.0)
    diag = np.diag(delta) if coef.ndim == 2 else delta
    off = float(np.sum(delta**2) - np.sum(diag**2)) if coef.ndim == 2 else 0.0
    lam_o = getattr(cal, "lambda_off_diagonal", 0.0)
    return (
        loss
        + k * cal.lambda_intercept * float(b @ b)
        + k * cal.lambda_diagonal * float(diag @ diag)
        + k * (k - 1) * lam_o * off
    )


# ----------------------------------------------------------------------------- the fit


@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_fit_is_the_minimum(cal):
    z, y = _logits()
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    cal = clone(cal).fit(z, y, sample_weight=w)
    t = _inputs(cal, z)
    best = _objective(cal, z, y, w)
    rng = np.random.default_rng(2)
    for _ in range(20):  # no nearby point is lower
        dc = 1e-4 * rng.normal(size=cal.coef_.shape)
        db = 1e-4 * rng.normal(size=cal.intercept_.shape)
        assert _objective_at(cal, t, y, w, cal.coef_ + dc, cal.intercept_ + db) >= best - 1e-9
    proba = cal.predict_proba(z)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # the calibrated model is at least as good as the identity map on its own rows
    assert -np.mean(np.log(proba[np.arange(len(y)), y])) <= -np.mean(
        np.log(softmax(z, axis=1)[np.arange(len(y)), y])
    )


def test_structured_maps_shrink_towards_the_identity():
    z, y = _logits(n=400)
    loose = StructuredMatrixScalingCalibrator(lambda_off_diagonal=0.0, lambda_diagonal=0.0)
    strong = StructuredMatrixScalingCalibrator(lambda_off_diagonal=1e4, lambda_diagonal=1e4)
    off = ~np.eye(4, dtype=bool)
    d_loose = np.abs(loose.fit(z, y).coef_ - np.eye(4))[off].max()
    d_strong = np.abs(strong.fit(z, y).coef_ - np.eye(4))[off].max()
    assert d_strong < 1e-3 < d_loose


@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_weights_equal_repetition_and_row_order(cal):
    z, y = _logits(n=600, k=3)
    counts = np.random.default_rng(3).integers(0, 4, len(y))
    weighted = clone(cal).fit(z, y, sample_weight=counts)
    repeated = clone(cal).fit(np.repeat(z, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted.predict_proba(z), repeated.predict_proba(z), atol=FIT_TOL)
    order = np.random.default_rng(4).permutation(len(y))
    shuffled = clone(cal).fit(z[order], y[order])
    np.testing.assert_allclose(
        clone(cal).fit(z, y).predict_proba(z), shuffled.predict_proba(z), atol=FIT_TOL
    )


@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_labels_dtype_one_column_and_inputs(cal):
    z, y = _logits(k=3)
    labels = np.array(["c", "a", "b"])[y]  # sorted classes a, b, c: columns 1, 2, 0
    named = clone(cal).fit(z[:, [1, 2, 0]], labels)
    plain = clone(cal).fit(z, y)
    np.testing.assert_allclose(
        named.predict_proba(z[:, [1, 2, 0]]), plain.predict_proba(z)[:, [1, 2, 0]], atol=FIT_TOL
    )
    assert list(named.classes_) == ["a", "b", "c"]
    assert plain.predict_proba(z.astype(np.float32)).dtype == np.float32
    # probabilities in: their logarithms are the logits
    p = softmax(z, axis=1)
    on_p = clone(cal).set_params(input="proba").fit(p, y)
    np.testing.assert_allclose(on_p.predict_proba(p), plain.predict_proba(z), atol=FIT_TOL)
    # one column of log-odds is the two columns [0, s]
    s = z[:, 1] - z[:, 0]
    two = y[:1000] % 2
    one = clone(cal).fit(s[:1000], two)
    both = clone(cal).fit(np.c_[0 * s, s][:1000], two)
    np.testing.assert_allclose(
        one.predict_proba(s), both.predict_proba(np.c_[0 * s, s]), atol=1e-9
    )
    assert one.n_features_in_ == 1


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.zeros((10, 2)), np.arange(10) % 3, r"one column per class of y \(3 columns\)"),
        (np.zeros((10, 3)), np.zeros(10), "single class"),
        (np.full((10, 2), np.nan), np.arange(10) % 2, "scores contains NaN"),
    ],
)
@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_bad_input_is_named(cal, X, y, match):
    with pytest.raises(ValueError, match=match):
        clone(cal).fit(X, y)


def test_bad_parameters_and_no_statistics():
    with pytest.raises(ValueError, match="lambda_off_diagonal"):
        StructuredMatrixScalingCalibrator(lambda_off_diagonal=-1.0).fit(*_logits(n=50))
    for cal in SCALINGS:
        # a convex fit over every row: no mergeable statistics, partial_fit refused
        with pytest.raises(TypeError, match="no streaming statistics"):
            stats_for(cal, [0, 1, 2])
        assert not hasattr(cal, "partial_fit")


# ----------------------------------------------------------------------------- probmetrics


def _digits_proba():
    X, y = load_digits(return_X_y=True)
    X_tr, X_cal, y_tr, y_cal = train_test_split(
        X.astype(np.float64), y, test_size=0.5, stratify=y, random_state=0
    )
    return GaussianNB().fit(X_tr, y_tr).predict_proba(X_cal), y_cal


@pytest.mark.parametrize(("ours", "theirs"), [("sms", "sms"), ("svs", "svs")])
def test_same_optimum_as_probmetrics(ours, theirs):
    """probmetrics 1.3.0 (Berta et al.'s code) fed predict_proba, as CalArena feeds it:
    on its own logits (log p floored at log of float32's tiny), our fit's penalised
    objective is at most probmetrics' (its BFGS stops at a gradient of 1e-5) and the
    probabilities agree to its precision."""
    calibrators = pytest.importorskip("probmetrics.calibrators")
    p, y = _digits_proba()
    with np.errstate(divide="ignore"):  # probmetrics' logits: log p, floored
        z = np.clip(np.log(p), np.log(np.finfo(np.float32).tiny), None)
    cal = {"sms": StructuredMatrixScalingCalibrator, "svs": StructuredVectorScalingCalibrator}
    mine = cal[ours]().fit(z, y)
    other = calibrators.get_calibrator(theirs).fit(p, y)
    assert mine.inverse_temperature_ == pytest.approx(other.ts_.cal_.invtemp_, rel=1e-6)
    t = mixed_log_proba(z, mine.inverse_temperature_, mine.mixture_)
    w = np.ones(len(y))
    if ours == "sms":
        coef, b = other.W_[:, :-1], other.W_[:, -1]
    else:
        coef, b = other.v_, other.b_
    theirs_obj = _objective_at(mine, t, y, w, coef, b)
    assert _objective(mine, z, y, w) <= theirs_obj + 1e-9
    assert _objective(mine, z, y, w) >= theirs_obj - 1e-2  # the same optimum, to BFGS's tolerance
    np.testing.assert_allclose(mine.predict_proba(z), other.predict_proba(p), atol=5e-3)


# ----------------------------------------------------------------------------- ONNX


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("input_kind", ["logits", "proba", "log_odds"])
@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_onnx_parity_alone(cal, input_kind, k, dtype):
    z, y = _logits(k=max(k, 2))
    if k == 1:
        z = z[:, 1:] - z[:, :1]
    X = {"logits": z, "proba": softmax(z, axis=1), "log_odds": z / 2.0}[input_kind]
    if input_kind == "proba" and k == 1:
        X = 1.0 / (1.0 + np.exp(-z))
    cal = clone(cal).set_params(input=input_kind).fit(X[:2000], y[:2000])
    held_out = np.r_[X[2000:], 3.0 * X[:50] if input_kind != "proba" else X[:50]]
    Xt = held_out.astype(dtype)
    onx = to_onnx(cal, Xt[:5], dtype=dtype)
    label, proba = run_onnx(onx, Xt)
    tol = {np.float32: 1e-6, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(proba, cal.predict_proba(Xt), rtol=0, atol=tol)
    np.testing.assert_array_equal(label, cal.predict(Xt))


def _kind(frozen, X_cal, y_cal):
    """What the default reads from this model: the input its scores are."""
    default = CalibratedClassifier(frozen).fit(X_cal, y_cal)
    return default.calibrated_classifiers_[0].calibrators[0].input


@pytest.fixture(scope="module")
def genhlth():
    """Diabetes ``GenHlth`` (5 classes) as pandas reads it, 50/25/25."""
    try:
        X, y, categorical = load("diabetes", DEFAULT_DATA_DIR, task="multiclass")
    except DataMissing as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    X, _, y, _ = train_test_split(X, y, train_size=12_000, stratify=y, random_state=0)
    numeric = [c for c in X.columns if c not in categorical]
    return split(X, y), numeric, categorical


@pytest.fixture(scope="module")
def frozen_pipeline(genhlth):
    """``model -> (frozen pipeline, the input its scores are)``, each fitted once per
    module: the four scalings calibrate the same frozen pipeline (FrozenEstimator never
    refits it, and no test changes it), and the kind of its scores, which the default
    calibrator's fit tells, is the same for all four."""
    (X_tr, y_tr, X_cal, y_cal, _, _), numeric, categorical = genhlth
    fitted = {}

    def get(model):
        if model not in fitted:
            pipe = make_pipeline("standard", model, numeric, categorical).fit(X_tr, y_tr)
            frozen = FrozenEstimator(pipe)
            fitted[model] = frozen, _kind(frozen, X_cal, y_cal)
        return fitted[model]

    return get


@pytest.mark.parametrize("model", ["LogisticRegression", "GaussianNB"])
@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_real_data_parity_in_a_pipeline(genhlth, frozen_pipeline, cal, model):
    """A ColumnTransformer pipeline on the frame as read (int64 and float64 columns,
    a one-hot category), frozen, calibrated on its own kind of scores; one float64
    graph equals Python on every test row."""
    (_, _, X_cal, y_cal, X_test, _), _, _ = genhlth
    frozen, kind = frozen_pipeline(model)
    clf = CalibratedClassifier(frozen, clone(cal).set_params(input=kind)).fit(X_cal, y_cal)
    onx = to_onnx(clf, X_test[:5], dtype=np.float64)
    assert_parity(clf, onx, X_test, tol=1e-9)


def test_real_data_float32_parity(genhlth):
    """The float32 case: a frame cast to float32 before fitting, a float32 graph."""
    (X_tr, y_tr, X_cal, y_cal, X_test, _), numeric, categorical = genhlth
    X_tr, X_cal, X_test = (as_float(X, np.float32) for X in (X_tr, X_cal, X_test))
    pipe = make_pipeline("standard", "GaussianNB", numeric, categorical).fit(X_tr, y_tr)
    clf = CalibratedClassifier(
        FrozenEstimator(pipe), StructuredMatrixScalingCalibrator(input="log_odds")
    ).fit(X_cal, y_cal)
    onx = to_onnx(clf, X_test[:5], dtype=np.float32)
    assert_parity(clf, onx, X_test, tol=1e-6)


@pytest.mark.parametrize("cal", SCALINGS, ids=IDS)
def test_digits_cross_fitted_ensemble_exports_as_one_graph(cal):
    """scikit-learn's bundled digits (10 classes, float64 array), a StandardScaler and
    LogisticRegression pipeline, 3 folds: one graph averaging the three calibrated
    models."""
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float64)
    base = sk_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=300))
    clf = CalibratedClassifier(base, clone(cal), cv=3).fit(X[:1200], y[:1200])
    assert len(clf.calibrated_classifiers_) == 3
    onx = to_onnx(clf, X[:5], dtype=np.float64)
    assert_parity(clf, onx, X[1200:], tol=1e-9)


@pytest.mark.parametrize("cal", [MatrixScalingCalibrator(), StructuredMatrixScalingCalibrator()])
def test_warm_start_on_many_rows_reaches_the_same_fit(cal, monkeypatch):
    """Above WARM_ROWS rows the fit starts from the fit on a regular subsample: the
    optimum is the one reached from the identity."""
    from bernonnx._core import affine_softmax

    z, y = _logits(n=6000, k=3)
    monkeypatch.setattr(affine_softmax, "WARM_ROWS", 2000)
    warm = clone(cal).fit(z, y)
    monkeypatch.setattr(affine_softmax, "WARM_ROWS", 10**9)
    cold = clone(cal).fit(z, y)
    np.testing.assert_allclose(warm.predict_proba(z), cold.predict_proba(z), atol=FIT_TOL)
    w = np.ones(len(y))
    assert _objective(warm, z, y, w) == pytest.approx(_objective(cold, z, y, w), rel=1e-12)


@pytest.mark.parametrize("matrix", [True, False])
def test_hessian_is_the_gradient_derivative(matrix):
    """The full Hessian of the exact-step path against central differences of the
    log loss's gradient, at a random point."""
    from bernonnx._core.affine_softmax import _hessian, _unpack

    rng = np.random.default_rng(1)
    n, k = 60, 4
    t, w, y = rng.normal(size=(n, k)), rng.uniform(0.5, 2.0, n), rng.integers(0, k, n)
    size = k * k + k if matrix else 2 * k

    def gradient(theta):
        delta, b = _unpack(theta, k, matrix)
        p = softmax(t + (t @ delta.T if matrix else t * delta) + b, axis=1)
        g_a = w[:, None] * (p - np.eye(k)[y])
        g_delta = g_a.T @ t if matrix else (g_a * t).sum(axis=0)
        return np.r_[g_delta.ravel(), g_a.sum(axis=0)], p

    theta = 0.1 * rng.normal(size=size)
    numeric = np.array(
        [
            (gradient(theta + 1e-6 * e)[0] - gradient(theta - 1e-6 * e)[0]) / 2e-6
            for e in np.eye(size)
        ]
    )
    np.testing.assert_allclose(_hessian(t, gradient(theta)[1], w, matrix), numeric, atol=1e-7)


@pytest.mark.parametrize("n", [1500, 6000])
def test_preconditioned_newton_reaches_the_trust_region_optimum(n, monkeypatch):
    """SMS with many classes takes Newton steps by block-preconditioned conjugate
    gradients: the optimum of the exact trust-region steps, from either path."""
    from bernonnx._core import affine_softmax

    z, y = _logits(n=n, k=15, seed=5)
    w = np.random.default_rng(6).uniform(0.5, 2.0, n)
    monkeypatch.setattr(affine_softmax, "PRECONDITIONED_BUDGET", 0.0)
    fast = StructuredMatrixScalingCalibrator().fit(z, y, sample_weight=w)
    monkeypatch.setattr(affine_softmax, "PRECONDITIONED_BUDGET", np.inf)
    monkeypatch.setattr(affine_softmax, "HESSIAN_BUDGET", np.inf)
    exact = StructuredMatrixScalingCalibrator().fit(z, y, sample_weight=w)
    np.testing.assert_allclose(fast.predict_proba(z), exact.predict_proba(z), atol=FIT_TOL)
    best = _objective(exact, z, y, w)
    assert _objective(fast, z, y, w) == pytest.approx(best, rel=1e-12)


def test_preconditioned_newton_weights_equal_repetition_and_row_order(monkeypatch):
    """The preconditioned path keeps the invariants of the fit: a weight is that many
    repeated rows, and the rows' order does not matter."""
    from bernonnx._core import affine_softmax

    monkeypatch.setattr(affine_softmax, "PRECONDITIONED_BUDGET", 0.0)
    test_weights_equal_repetition_and_row_order(StructuredMatrixScalingCalibrator())
    z, y = _logits(n=800, k=12, seed=7)
    counts = np.random.default_rng(8).integers(0, 4, len(y))
    weighted = StructuredMatrixScalingCalibrator().fit(z, y, sample_weight=counts)
    repeated = StructuredMatrixScalingCalibrator().fit(
        np.repeat(z, counts, axis=0), np.repeat(y, counts)
    )
    np.testing.assert_allclose(weighted.predict_proba(z), repeated.predict_proba(z), atol=FIT_TOL)


# ------------------------------------------------- temperature scaling's fit at 0


def _biased_logits(n=4000, seed=0):
    """A weak model whose logits are strongly biased against the common classes: no
    positive temperature lowers the loss, temperature scaling's fit is 0."""
    rng = np.random.default_rng(seed)
    prior = np.array([0.6, 0.3, 0.1])
    y = rng.choice(3, n, p=prior)
    return 0.5 * np.eye(3)[y] + rng.normal(size=(n, 3)) - 6.0 * np.log(prior), y


def _joint_fit(cal, t, y, w):
    """Berta et al.'s joint form ``W = a I + diag(v) + offdiag(M)`` (vector scaling: ``a
    + v``), ``a`` unpenalised, minimised independently (L-BFGS, analytic gradient, from
    the identity) on the mixed log-probabilities ``t``; returns ``(coef, intercept)``."""
    from scipy.optimize import minimize

    n, k = t.shape
    matrix = isinstance(cal, StructuredMatrixScalingCalibrator)
    off = ~np.eye(k, dtype=bool)
    onehot = np.eye(k)[y]
    lam_b, lam_d = k * cal.lambda_intercept, k * cal.lambda_diagonal
    lam_o = k * (k - 1) * getattr(cal, "lambda_off_diagonal", 0.0)

    def unpack(x):
        a, v, b = x[0], x[1 : k + 1], x[k + 1 : 2 * k + 1]
        m = np.zeros((k, k))
        if matrix:
            m[off] = x[2 * k + 1 :]
        return a, v, m, b

    def fun(x):
        a, v, m, b = unpack(x)
        coef = a * np.eye(k) + np.diag(v) + m if matrix else a + v
        logits = (t @ coef.T if matrix else t * coef) + b
        g = w[:, None] * (softmax(logits, axis=1) - onehot)
        value = float(w @ (logsumexp(logits, axis=1) - logits[np.arange(n), y]))
        value += lam_b * b @ b + lam_d * v @ v + lam_o * float(np.sum(m[off] ** 2))
        d_coef = g.T @ t if matrix else np.sum(g * t, axis=0)
        d_diag = np.diag(d_coef) if matrix else d_coef
        grad = np.r_[d_diag.sum(), d_diag + 2 * lam_d * v, g.sum(axis=0) + 2 * lam_b * b]
        if matrix:
            grad = np.r_[grad, d_coef[off] + 2 * lam_o * m[off]]
        return value, grad

    x0 = np.r_[1.0, np.zeros(2 * k + (k * (k - 1) if matrix else 0))]
    res = minimize(fun, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-9, "ftol": 0})
    a, v, m, b = unpack(res.x)
    return (a * np.eye(k) + np.diag(v) + m if matrix else a + v), b, res.fun


@pytest.mark.parametrize("cal", SCALINGS[2:], ids=IDS[2:])
def test_temperature_at_zero_fits_the_joint_form_not_the_class_prior(cal):
    """Temperature scaling first, as Berta et al. and probmetrics fit SVS and SMS, maps
    every row to the uniform distribution when its inverse temperature is 0: the map
    read constant inputs and predicted the class prior whatever the scores (probmetrics
    1.3.0's bisection stops at exp(-16) and gives the prior within 3e-7 on these
    logits). The fit is then their joint form, the scale unpenalised, on the scores
    themselves: the minimum of that objective (an independent solver's), far below the
    prior's loss, weights as repetitions, and one graph that computes it."""
    from bernonnx.calibrators.temperature import _fit_inverse_temperature

    z, y = _biased_logits()
    w = np.ones(len(y))
    assert _fit_inverse_temperature(z, y, w) == 0.0
    fitted = clone(cal).fit(z, y)
    assert fitted.inverse_temperature_ == 1.0
    proba = fitted.predict_proba(z)
    assert np.ptp(proba, axis=0).min() > 0.1  # not one row repeated
    loss = -np.mean(np.log(proba[np.arange(len(y)), y]))
    prior = np.bincount(y) / len(y)
    assert loss < -np.mean(np.log(prior[y])) - 0.02
    t = mixed_log_proba(z, 1.0, fitted.mixture_)
    coef, b, best = _joint_fit(fitted, t, y, w)
    a = (t @ fitted.coef_.T if fitted.coef_.ndim == 2 else t * fitted.coef_) + fitted.intercept_
    diag = np.diag(fitted.coef_) if fitted.coef_.ndim == 2 else fitted.coef_
    off = fitted.coef_[~np.eye(3, dtype=bool)] if fitted.coef_.ndim == 2 else np.zeros(0)
    k = 3
    ours = float(w @ (logsumexp(a, axis=1) - a[np.arange(len(y)), y]))
    ours += k * fitted.lambda_intercept * float(fitted.intercept_ @ fitted.intercept_)
    ours += k * fitted.lambda_diagonal * float(np.sum((diag - diag.mean()) ** 2))
    ours += k * (k - 1) * getattr(fitted, "lambda_off_diagonal", 0.0) * float(off @ off)
    assert ours <= best + 1e-7 * best
    other = (t @ coef.T if coef.ndim == 2 else t * coef) + b
    np.testing.assert_allclose(proba, softmax(other, axis=1), rtol=0, atol=1e-5)
    counts = np.random.default_rng(5).integers(0, 3, len(y))
    weighted = clone(cal).fit(z, y, sample_weight=counts)
    repeated = clone(cal).fit(np.repeat(z, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted.predict_proba(z), repeated.predict_proba(z), atol=FIT_TOL)
    for dtype, tol in ((np.float64, 1e-9), (np.float32, 1e-6)):
        Xt = z.astype(dtype)
        _, graph = run_onnx(to_onnx(fitted, Xt[:5], dtype=dtype), Xt)
        np.testing.assert_allclose(graph, fitted.predict_proba(Xt), rtol=0, atol=tol)


def _genhlth_frame():
    try:
        frame = pd.read_csv(DEFAULT_DATA_DIR / "diabetes_brfss2015.csv.gz", nrows=30000)
    except FileNotFoundError as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    y = frame.pop("GenHlth").to_numpy()
    return frame, y


def test_real_model_biased_against_its_common_classes():
    """Diabetes ``GenHlth`` as pandas reads it, a logistic regression on three binary
    columns whose class weights over-correct the imbalance (the squared inverse class
    frequencies): its logits are biased against the common classes and temperature
    scaling's fit is 0. The multiclass default predicted the class prior on every row
    (one distinct row, test log loss above the prior's); it now tells the 8 feature
    combinations apart, beats the prior on held-out rows, and exports exactly."""
    frame, y = _genhlth_frame()
    X = frame[["Diabetes_binary", "HighBP", "HighChol"]]
    classes, counts = np.unique(y[:10000], return_counts=True)
    weights = {c: float(counts.max() / m) ** 2 for c, m in zip(classes, counts, strict=True)}
    model = sk_pipeline(
        StandardScaler(), LogisticRegression(class_weight=weights, max_iter=1000)
    ).fit(X[:10000], y[:10000])
    frozen = FrozenEstimator(model)
    clf = CalibratedClassifier(frozen).fit(X[10000:20000], y[10000:20000])
    sms = clf.calibrated_classifiers_[0].calibrators[0].scaling_
    from bernonnx.calibrators.temperature import _fit_inverse_temperature

    z = model.decision_function(X[10000:20000])
    target = np.searchsorted(classes, y[10000:20000])
    assert _fit_inverse_temperature(z, target, np.ones(len(target))) == 0.0
    assert sms.inverse_temperature_ == 1.0
    X_test, y_test = X[20000:], np.searchsorted(classes, y[20000:])
    proba = clf.predict_proba(X_test)
    assert len(np.unique(proba.round(12), axis=0)) == 8
    prior = np.bincount(target, minlength=len(classes)) / len(target)
    loss = -np.mean(np.log(proba[np.arange(len(y_test)), y_test]))
    assert loss < -np.mean(np.log(prior[y_test])) - 0.03
    onx = to_onnx(clf, X_test[:5], dtype=np.float64)
    assert_parity(clf, onx, X_test, tol=1e-9)


@pytest.mark.parametrize("cal", SCALINGS[2:], ids=IDS[2:])
def test_a_positive_temperature_keeps_the_fit_of_berta_et_al(genhlth, cal):
    """Where temperature scaling's fit is positive (every real case of the benchmarks)
    the fit is, to the last bit, temperature scaling then the map from the identity
    with the ridge on its departure from it: the unchanged form."""
    from bernonnx._core.affine_softmax import fit_affine_softmax
    from bernonnx.calibrators.temperature import _fit_inverse_temperature

    (X_tr, y_tr, X_cal, y_cal, _, _), numeric, categorical = genhlth
    pipe = make_pipeline("standard", "LogisticRegression", numeric, categorical).fit(X_tr, y_tr)
    z = pipe.decision_function(X_cal)
    target = np.searchsorted(pipe.classes_, y_cal)
    fitted = clone(cal).fit(z, y_cal)
    beta = _fit_inverse_temperature(z, target, np.ones(len(target)))
    assert beta > 0 and fitted.inverse_temperature_ == beta
    coef, b = fit_affine_softmax(
        mixed_log_proba(z, beta, fitted.mixture_),
        target,
        np.ones(len(target)),
        matrix=fitted.coef_.ndim == 2,
        penalty=fitted._penalty(z.shape[1]),
    )
    np.testing.assert_array_equal(fitted.coef_, coef)
    np.testing.assert_array_equal(fitted.intercept_, b)


# ----------------------------------------------------------------------------- extreme scales


def _digits_logits():
    """Logistic regression's decision values on half of digits (real data, 10 classes)."""
    X, y = load_digits(return_X_y=True)
    X_tr, X_cal, y_tr, y_cal = train_test_split(
        X.astype(np.float64), y, test_size=0.5, stratify=y, random_state=0
    )
    model = sk_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=500))
    return model.fit(X_tr, y_tr).decision_function(X_cal), y_cal


EVERY_SCALING = [*SCALINGS, "temperature", "temperature-bernstein"]
EVERY_ID = [*IDS, "temperature", "temperature-bernstein"]


def _make(cal):
    from bernonnx import TemperatureBernsteinCalibrator, TemperatureCalibrator

    if cal == "temperature":
        return TemperatureCalibrator()
    if cal == "temperature-bernstein":
        return TemperatureBernsteinCalibrator(scaling="sms", method="identity")
    return clone(cal)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cal", EVERY_SCALING, ids=EVERY_ID)
def test_huge_logits_and_weights_fit_and_export(cal):
    # vector scaling at logits x1e300, matrix at x1e150 and SMS with weights of 1e300
    # raised "array must not contain infs or NaNs" inside the solver; exact powers of two
    # now bring logits and weights to range inside (bernonnx._core.scale)
    z, y = _digits_logits()
    fits = {}
    for factor in (1e150, 1e300):
        fits[factor] = _make(cal).fit(z * factor, y)
        p = fits[factor].predict_proba(z * factor)
        assert np.isfinite(p).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if not isinstance(cal, MatrixScalingCalibrator):
        # at these scales the log-probabilities are linear in the factor: the same fit
        # (unpenalised matrix scaling separates these hard log-probabilities: no unique
        # optimum to compare)
        np.testing.assert_allclose(
            fits[1e300].predict_proba(z * 1e300),
            fits[1e150].predict_proba(z * 1e150),
            rtol=0,
            atol=FIT_TOL,
        )
    X = z * 1e300
    label, proba = run_onnx(to_onnx(fits[1e300], X[:5]), X)
    np.testing.assert_allclose(proba, fits[1e300].predict_proba(X), rtol=0, atol=1e-12)
    heavy = _make(cal).fit(z, y, sample_weight=np.full(y.shape[0], 1e300))
    p = heavy.predict_proba(z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if cal == "temperature" or type(cal) is VectorScalingCalibrator:
        # no penalty: equal weights of any size give the unweighted fit (matrix scaling
        # has no unique optimum here, see above)
        np.testing.assert_allclose(p, _make(cal).fit(z, y).predict_proba(z), rtol=0, atol=FIT_TOL)


@pytest.mark.parametrize("cal", EVERY_SCALING, ids=EVERY_ID)
def test_subnormal_logits_fit_or_are_refused_naming_the_scores(cal):
    # temperature, SVS, SMS and temperature-Bernstein failed inside scipy ("function value
    # at x=inf is NaN"): their inverse temperature ~1e310 is beyond float64, a ValueError
    # now names the scores; vector and matrix scaling read log-probabilities, all
    # -log(K) at this scale, and fit the class prior
    z, y = _digits_logits()
    est = _make(cal)
    if isinstance(cal, (VectorScalingCalibrator, MatrixScalingCalibrator)):
        p = est.fit(z * 1e-310, y).predict_proba(z * 1e-310)
        prior = np.bincount(y) / y.shape[0]
        np.testing.assert_allclose(p, np.tile(prior, (y.shape[0], 1)), rtol=0, atol=FIT_TOL)
        return
    with pytest.raises(ValueError, match="scores: the logits spread over 1.*beyond the float64"):
        est.fit(z * 1e-310, y)
