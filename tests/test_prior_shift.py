"""Class-prior shift: the recorded training priors, Bayes' rule, the EM estimate, its
checks, and the adapted model as one ONNX graph (priors baked in or as an input).

Real data as users hold it: the shared credit table read by pandas, a ColumnTransformer
pipeline, its test rows subsampled to another class balance (a prior shift by
construction: within a class the rows are the table's own). Generated data only where
the exact posterior must be known (the EM's consistency).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _parity import PROMISED
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_set_params,
)

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR
from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    PriorShiftAdapter,
    attach,
    check_parity,
    to_onnx,
)
from bernonnx._core.priors import (
    em_priors,
    likelihood_slope,
    posterior_mean_priors,
    prior_covariance,
    shrink_priors,
)
from bernonnx._registry import CALIBRATORS
from bernonnx.deploy import run_onnx, write_triton_repository
from bernonnx.deploy import triton as deploy
from bernonnx.export import onnx_inputs
from bernonnx.shift import MIN_TARGET_ROWS, UncalibratedModelWarning, adapt_proba

needs_data = pytest.mark.skipif(
    not (DEFAULT_DATA_DIR / DATASETS["credit"].file).is_file(),
    reason=f"the shared credit table is not at {DEFAULT_DATA_DIR} (set BERNONNX_SHARED_DATA)",
)
CATEGORICAL = ["SEX", "EDUCATION", "MARRIAGE"]


def credit(rows: int = 9000):
    """The credit table as pandas reads it, ``rows`` of it, and its labels."""
    spec = DATASETS["credit"]
    df = pd.read_csv(DEFAULT_DATA_DIR / spec.file).sample(rows, random_state=0)
    y = df.pop(spec.label).to_numpy()
    return df.drop(columns=list(spec.drop)), y


def shifted(y, rate: float, n: int, seed: int = 0) -> np.ndarray:
    """Row indices of ``n`` rows with a share ``rate`` of positives (rows drawn without
    replacement within each class): a prior shift of the table's own rows."""
    rng = np.random.default_rng(seed)
    k = int(round(rate * n))
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    return np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n - k, False)])


@pytest.fixture(scope="module")
def fitted():
    """A ColumnTransformer pipeline, prefit, calibrated on other rows; the test rows."""
    X, y = credit()
    numeric = [c for c in X.columns if c not in CATEGORICAL]
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
        ]
    )
    base = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X[:3000], y[:3000])
    clf = CalibratedClassifier(FrozenEstimator(base), BernsteinCalibrator(degree=6))
    clf.fit(X[3000:6000], y[3000:6000])
    return clf, X[6000:], y[6000:]


# ----------------------------------------------------------------- Bayes' rule itself

probabilities = st.lists(st.floats(0.001, 0.999), min_size=3, max_size=3).map(
    lambda v: np.array(v) / np.sum(v)
)


@settings(max_examples=60, deadline=None)
@given(p=probabilities, a=probabilities, b=probabilities, c=probabilities)
def test_adaptation_composes_and_inverts(p, a, b, c):
    # moving a -> b -> c is moving a -> c; moving to the training priors changes nothing
    p = p[None, :]
    np.testing.assert_allclose(adapt_proba(adapt_proba(p, a, b), b, c), adapt_proba(p, a, c))
    np.testing.assert_allclose(adapt_proba(p, a, a), p, rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(adapt_proba(p, a, b).sum(axis=1), 1.0)
    # the priors' scale cancels: only their ratios matter
    np.testing.assert_allclose(adapt_proba(p, a, 3.0 * b), adapt_proba(p, a, b))


@settings(max_examples=40, deadline=None)
@given(target=st.floats(0.01, 0.99), train=st.floats(0.01, 0.99))
def test_binary_adaptation_is_monotone(target, train):
    # a positive probability maps increasingly: the ranking (and the AUC) is kept
    p1 = np.linspace(0, 1, 201)
    q1 = adapt_proba(np.stack([1 - p1, p1], 1), [1 - train, train], [1 - target, target])[:, 1]
    assert np.all(np.diff(q1) >= 0)


# ----------------------------------------------------------------- the recorded priors


@pytest.mark.parametrize("mode", ["prefit", "ensemble", "cross_val"])
def test_calibration_prior_weights_equal_repetition(mode):
    X, y = load_iris(return_X_y=True)
    y = y % 2  # two classes of 100 and 50 rows
    rng = np.random.default_rng(1)
    w = rng.integers(1, 4, len(y))
    if mode == "prefit":
        est = FrozenEstimator(LogisticRegression(max_iter=500).fit(X, y))
        kw = {}
    else:
        est, kw = LogisticRegression(max_iter=500), {"cv": 3, "ensemble": mode == "ensemble"}
    weighted = CalibratedClassifier(est, BernsteinCalibrator(degree=3), **kw)
    weighted.fit(X, y, sample_weight=w)
    expected = np.bincount(y, weights=w) / w.sum()
    np.testing.assert_allclose(weighted.calibration_prior_, expected, rtol=1e-14)
    repeated = CalibratedClassifier(FrozenEstimator(est), BernsteinCalibrator(degree=3))
    if mode == "prefit":
        repeated.fit(np.repeat(X, w, axis=0), np.repeat(y, w))
        np.testing.assert_allclose(repeated.calibration_prior_, expected, rtol=1e-14)


def test_calibration_prior_multiclass_folds():
    X, y = load_iris(return_X_y=True)
    keep = np.r_[0:50, 50:80, 100:150]  # 50, 30, 50 rows
    clf = CalibratedClassifier(LogisticRegression(max_iter=500), cv=3).fit(X[keep], y[keep])
    np.testing.assert_allclose(clf.calibration_prior_, [50 / 130, 30 / 130, 50 / 130])
    pairs = clf.calibrated_classifiers_
    assert sum(p.weight for p in pairs) == 130  # every row calibrated once, in its fold


# ----------------------------------------------------------------- the EM estimate


def _gaussian_rows(n_pos, n_neg, rng):
    """Two unit Gaussians at -1 and +1: the exact posterior at prior 0.5 is known."""
    x = np.concatenate([rng.normal(1, 1, n_pos), rng.normal(-1, 1, n_neg)])
    p1 = 1 / (1 + np.exp(-2 * x))  # P(y=1 | x) at priors (0.5, 0.5)
    return np.stack([1 - p1, p1], 1)


@pytest.mark.parametrize("rate", [0.05, 0.3, 0.5, 0.8])
def test_em_finds_the_prior_of_exactly_calibrated_rows(rate):
    rng = np.random.default_rng(int(rate * 100))
    n = 20000
    proba = _gaussian_rows(int(rate * n), n - int(rate * n), rng)
    prior, n_iter, change = em_priors(proba, np.array([0.5, 0.5]), tol=1e-10)
    assert change < 1e-10 and n_iter < 1000
    assert abs(prior[1] - rate) < 0.02  # sampling error at n = 20,000
    # the fixed point: the adapted probabilities average to the estimate
    np.testing.assert_allclose(adapt_proba(proba, [0.5, 0.5], prior).mean(0), prior, atol=1e-9)


def test_accelerated_and_plain_em_agree():
    rng = np.random.default_rng(3)
    proba = _gaussian_rows(700, 9300, rng)
    fast, n_fast, _ = em_priors(proba, np.array([0.5, 0.5]), tol=1e-12)
    slow, n_slow, _ = em_priors(proba, np.array([0.5, 0.5]), tol=1e-12, accelerate=False)
    np.testing.assert_allclose(fast, slow, atol=1e-9)
    assert n_fast < n_slow


@needs_data
def test_estimate_on_shifted_credit_rows(fitted):
    clf, X, y = fitted
    for rate in (0.1, 0.5):
        rows = shifted(y, rate, 1200)
        adapter = PriorShiftAdapter(clf, n_bootstrap=100, random_state=0).fit(X.iloc[rows])
        low, high = adapter.prior_interval_[1]
        assert low <= adapter.prior_em_[1] <= high
        assert abs(adapter.prior_[1] - rate) < 0.06
        assert high - low < 0.2
        # the probabilities adapted to the raw EM estimate average to it (the fixed
        # point); prior_, the posterior mean of an estimate many standard errors inside
        # (0, 1) (the estimate itself) with one row added to each class's expected count,
        # lies between the raw estimate and the uniform prior, within 1 / (n + 2) of it
        raw = adapt_proba(clf.predict_proba(X.iloc[rows]), adapter.train_prior_, adapter.prior_em_)
        np.testing.assert_allclose(raw.mean(0), adapter.prior_em_, atol=1e-6)
        lo, hi = sorted((0.5, adapter.prior_em_[1]))
        assert lo - 1e-12 <= adapter.prior_[1] <= hi + 1e-12
        assert abs(adapter.prior_[1] - adapter.prior_em_[1]) <= 1.0 / (len(rows) + 2)


@needs_data
def test_target_weights_equal_repetition_and_order_does_not_matter(fitted):
    clf, X, y = fitted
    rows = shifted(y, 0.4, 600)
    w = np.random.default_rng(0).integers(1, 4, len(rows))
    kw = {"n_bootstrap": 0, "tol": 1e-12}
    weighted = PriorShiftAdapter(clf, **kw).fit(X.iloc[rows], sample_weight=w)
    repeated = PriorShiftAdapter(clf, **kw).fit(X.iloc[np.repeat(rows, w)])
    np.testing.assert_allclose(weighted.prior_, repeated.prior_, atol=1e-10)
    permuted = PriorShiftAdapter(clf, **kw).fit(X.iloc[rows[::-1]], sample_weight=w[::-1])
    np.testing.assert_allclose(weighted.prior_, permuted.prior_, atol=1e-10)


@needs_data
def test_given_priors_cost_no_refit(fitted):
    clf, X, _ = fitted
    before = pickle.dumps(clf)
    adapter = PriorShiftAdapter(clf, priors=[0.6, 0.4]).fit()  # no rows needed
    assert adapter.estimator_ is clf and pickle.dumps(clf) == before
    np.testing.assert_array_equal(
        adapter.predict_proba(X),
        adapt_proba(clf.predict_proba(X), clf.calibration_prior_, [0.6, 0.4]),
    )
    np.testing.assert_array_equal(adapter.prior_interval_, [[0.6, 0.6], [0.4, 0.4]])
    assert adapter.n_iter_ == 0
    # no shift at all: the model's own probabilities
    same = PriorShiftAdapter(clf, priors=clf.calibration_prior_).fit()
    np.testing.assert_allclose(same.predict_proba(X), clf.predict_proba(X), atol=1e-15)


def test_train_prior_can_be_overridden():
    X, y = load_iris(return_X_y=True)
    clf = CalibratedClassifier(LogisticRegression(max_iter=500), cv=3).fit(X, y)
    adapter = PriorShiftAdapter(clf, priors=[0.2, 0.3, 0.5], train_prior=[0.5, 0.25, 0.25])
    adapter.fit()
    np.testing.assert_array_equal(adapter.train_prior_, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(
        adapter.predict_proba(X),
        adapt_proba(clf.predict_proba(X), [0.5, 0.25, 0.25], [0.2, 0.3, 0.5]),
    )


# ----------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def iris_model():
    X, y = load_iris(return_X_y=True)
    return CalibratedClassifier(LogisticRegression(max_iter=500), cv=3).fit(X, y), X


@pytest.mark.parametrize(
    ("priors", "message"),
    [
        ([0.2, 0.3, 0.6], "must sum to 1"),
        ([0.5, 0.5, 0.0], "positive and finite"),
        ([0.5, 0.5], r"3 values.*got shape \(2,\)"),
        ([0.5, np.nan, 0.5], "positive and finite"),
        ("high", "must be an array-like or None"),
    ],
)
@pytest.mark.parametrize("argument", ["priors", "train_prior"])
def test_bad_priors_are_named(iris_model, priors, message, argument):
    clf, _ = iris_model
    kw = {argument: priors}
    if argument == "train_prior":
        kw["priors"] = [0.2, 0.3, 0.5]
    with pytest.raises(ValueError, match=f"{argument}.*{message}"):
        PriorShiftAdapter(clf, **kw).fit()


@needs_data
def test_train_prior_below_the_normal_range_is_named(fitted):
    # the probabilities are divided by train_prior: below the smallest normal float64
    # the ratio overflows (the covariance's SVD failed: LinAlgError); just above, fine
    clf, X, _ = fitted
    with pytest.raises(ValueError, match=r"train_prior.*at least 2.2\d*e-308"):
        PriorShiftAdapter(clf, train_prior=[1 - 1e-310, 1e-310]).fit(X[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        adapter = PriorShiftAdapter(clf, train_prior=[1 - 1e-300, 1e-300], n_bootstrap=20)
        adapter.fit(X[:300])
    assert np.isfinite(adapter.prior_).all() and abs(adapter.prior_.sum() - 1) < 1e-12
    low, high = adapter.prior_interval_.T
    assert np.all((low <= adapter.prior_) & (adapter.prior_ <= high))


@needs_data
@pytest.mark.parametrize("source", ["dummy", "constant scores"])
def test_a_model_without_information_gives_the_whole_interval(source):
    # every target row gets exactly the calibration prior, so the rows say nothing of
    # their priors: a DummyClassifier, calibrated, or (bernonnx adapt's path) a
    # calibrator on a score column stuck at one value. With the calibration rows known
    # the interval is [0, 1] and the standard error inf (it was the bootstrap's zero
    # width about the training prior, and a Fisher variance of 0: a certainty the rows
    # cannot give)
    from sklearn.dummy import DummyClassifier

    X, y = credit(6000)
    rows = 2000 + shifted(y[2000:], 0.4, 600)
    if source == "dummy":
        dummy = DummyClassifier(strategy="prior").fit(X[:2000], y[:2000])
        clf = CalibratedClassifier(FrozenEstimator(dummy), BernsteinCalibrator())
        clf.fit(X[2000:4000], y[2000:4000])
        target, train, kw = X.iloc[rows], clf.calibration_prior_, {}
    else:
        clf = BernsteinCalibrator().fit(np.ones(2000), y[:2000])
        train = np.array([1 - y[:2000].mean(), y[:2000].mean()])
        target, kw = np.ones((600, 1)), {"train_prior": train, "calibration_rows": 2000.0}
    np.testing.assert_array_equal(clf.predict_proba(target[:5])[0], train)
    adapter = PriorShiftAdapter(clf, n_bootstrap=20, random_state=0, **kw).fit(target)
    np.testing.assert_array_equal(adapter.prior_interval_, [[0.0, 1.0], [0.0, 1.0]])
    assert np.isinf(adapter.prior_se_).all()
    # nothing moves the estimate (EM stays at its start): prior_ is the training prior
    # with the pseudo-counts, not the flat prior's 1/2, whose exact tie of the adapted
    # probabilities the graph broke the other way (to_onnx refused: labels differ)
    np.testing.assert_allclose(adapter.prior_, (600 * train + 1) / 602, rtol=1e-12)
    if source == "constant scores":
        report = check_parity(adapter, to_onnx(adapter, target[:20]), target)
        assert report["passed"], report


def test_target_rows_checked(iris_model):
    clf, X = iris_model
    with pytest.raises(ValueError, match=f"at least {MIN_TARGET_ROWS} target rows.*got 99"):
        PriorShiftAdapter(clf).fit(X[:99])
    bad = X[:120].copy()
    bad[[3, 50], 1] = np.nan
    with pytest.raises(ValueError, match="missing values in 2 of its 120 target rows"):
        PriorShiftAdapter(clf).fit(bad)
    frame = pd.DataFrame(X[:120]).astype("Float64")
    frame.iloc[7, 0] = pd.NA
    with pytest.raises(ValueError, match="missing values in 1 of its 120"):
        PriorShiftAdapter(clf).fit(frame)
    with pytest.raises(ValueError, match="X is None"):
        PriorShiftAdapter(clf).fit()
    with pytest.raises(ValueError, match="sample_weight must be 150"):
        PriorShiftAdapter(clf).fit(X, sample_weight=np.ones(3))


def test_unfitted_uncalibrated_and_unknown_priors(iris_model):
    clf, X = iris_model
    with pytest.raises(ValueError, match="estimator must be a fitted classifier"):
        PriorShiftAdapter(LogisticRegression()).fit(X)
    plain = LogisticRegression(max_iter=500).fit(X, load_iris().target)
    with pytest.raises(ValueError, match="train_prior is None.*LogisticRegression"):
        PriorShiftAdapter(plain).fit(X)
    with pytest.warns(UncalibratedModelWarning, match="LogisticRegression is not a calibrated"):
        PriorShiftAdapter(plain, train_prior=[1 / 3] * 3, n_bootstrap=0).fit(X)
    sk = CalibratedClassifierCV(LogisticRegression(max_iter=500), cv=3).fit(X, load_iris().target)
    with pytest.raises(ValueError, match="records no calibration_prior_: pass train_prior"):
        PriorShiftAdapter(sk).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedModelWarning)  # calibrated: no warning
        PriorShiftAdapter(sk, train_prior=[1 / 3] * 3, n_bootstrap=0).fit(X)
    with pytest.raises(NotFittedError):
        PriorShiftAdapter(clf).predict_proba(X)


def test_em_that_does_not_converge_warns(iris_model):
    clf, X = iris_model
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=1 steps"):
        adapter = PriorShiftAdapter(clf, max_iter=1, n_bootstrap=0).fit(X[:120])
    assert adapter.n_iter_ == 1


# ----------------------------------------------------------------- scikit-learn's conventions


def test_scikit_learn_conventions(iris_model):
    # PriorShiftAdapter adapts a fitted model and never fits one, so the checks that fit
    # it on their own data cannot apply (tests/test_common.py says so); these do
    clf, X = iris_model
    adapter = PriorShiftAdapter(clf, random_state=0)
    name = type(adapter).__name__
    check_no_attributes_set_in_init(name, adapter)
    check_get_params_invariance(name, adapter)
    check_set_params(name, adapter)
    assert clone(adapter).get_params()["priors"] is None
    fitted = adapter.fit(X)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(
        fitted.predict(X), fitted.classes_[fitted.predict_proba(X).argmax(1)]
    )
    assert fitted.n_features_in_ == 4
    same = PriorShiftAdapter(clf, random_state=0).fit(X)  # seeded bootstrap: repeatable
    np.testing.assert_array_equal(same.prior_interval_, fitted.prior_interval_)


# ----------------------------------------------------------------- one graph


def _assert_exact(model, X, onx):
    report = check_parity(model, onx, X)
    assert report["max_abs_error"] <= PROMISED[np.dtype(report["dtype"])], report.summary()
    assert report["labels_equal"], report.summary()
    return report


@needs_data
@pytest.mark.parametrize("priors_input", [False, True])
def test_credit_frames_adapted_graph_is_exact(fitted, priors_input):
    clf, X, y = fitted
    adapter = PriorShiftAdapter(clf, n_bootstrap=0).fit(X.iloc[shifted(y, 0.5, 1000)])
    onx = to_onnx(adapter, X[:5], priors_input=priors_input)
    assert _assert_exact(adapter, X, onx)["dtype"] == "float64"
    names = [i.name for i in onx.graph.input]
    assert names[: len(X.columns)] == list(X.columns)
    assert ("priors" in names) == priors_input
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["target_prior"] == str(adapter.prior_.tolist())
    if priors_input:
        # a server changes the balance per request (one row of priors per row, or one
        # for all) without a new export: the graph gives what Python gives for them
        feed = onnx_inputs(onx, X)
        per_row = np.random.default_rng(0).dirichlet([2, 2], size=len(X))
        base = clf.predict_proba(X)
        for priors, expected in (
            (per_row, adapt_proba(base, adapter.train_prior_, per_row)),
            (np.array([[0.9, 0.1]]), adapt_proba(base, adapter.train_prior_, [0.9, 0.1])),
        ):
            got = run_onnx(onx, {**feed, "priors": priors})["probabilities"]
            assert np.abs(got - expected).max() <= PROMISED[np.dtype(np.float64)]


@needs_data
def test_float32_data_adapted_graph_is_exact(fitted):
    clf, X, y = fitted
    X32 = X.astype({c: np.float32 for c in X.columns})
    numeric = [c for c in X.columns if c not in CATEGORICAL]
    pre = ColumnTransformer([("num", StandardScaler(), numeric)])
    base = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X32[:1000], y[:1000])
    clf32 = CalibratedClassifier(FrozenEstimator(base)).fit(X32[1000:2000], y[1000:2000])
    adapter = PriorShiftAdapter(clf32, n_bootstrap=0).fit(X32[2000:])
    for priors_input in (False, True):
        onx = to_onnx(adapter, X32[:5], priors_input=priors_input)
        assert _assert_exact(adapter, X32, onx)["dtype"] == "float32"


def _registry_cases():
    cases = []
    for entry in CALIBRATORS:
        if entry.multi:
            continue  # fusion calibrators: FusionClassifier, not CalibratedClassifier
        for variant in entry.variants[:1]:
            cases.append(pytest.param(entry, variant, id=variant.cli_name))
    return cases


@pytest.mark.parametrize(("entry", "variant"), _registry_cases())
@pytest.mark.parametrize("ensemble", [False, True])
def test_every_calibrator_adapted_exactly(entry, variant, ensemble):
    # binary on the credit-like bundled rows for one-score calibrators (one-vs-rest on
    # three classes too); multiclass calibrators on three classes
    X, y = load_iris(return_X_y=True)
    params = {"degree": 4} if "bernstein" in variant.cli_name else {}
    cal = entry.make(variant, **params)
    targets = [y] if entry.multiclass else [y, (y == 2).astype(int)]
    for target in targets:
        clf = CalibratedClassifier(LogisticRegression(max_iter=500), cal, cv=3, ensemble=ensemble)
        clf.fit(X, target)
        k = len(clf.classes_)
        priors = np.linspace(1, 2, k) / np.linspace(1, 2, k).sum()
        adapter = PriorShiftAdapter(clf, priors=priors).fit()
        np.testing.assert_allclose(adapter.predict_proba(X).sum(1), 1.0)
        for priors_input in (False, True):
            _assert_exact(adapter, X, to_onnx(adapter, X[:3], priors_input=priors_input))
        estimated = PriorShiftAdapter(clf, n_bootstrap=20, random_state=0).fit(X)
        assert np.all(estimated.prior_interval_[:, 0] <= estimated.prior_em_ + 1e-12)


def test_priors_input_needs_an_adapter(iris_model):
    clf, X = iris_model
    with pytest.raises(ValueError, match="priors_input=True needs a PriorShiftAdapter"):
        to_onnx(clf, X[:3], priors_input=True)


def test_export_of_an_unsupported_wrapped_model_is_refused(iris_model):
    _, X = iris_model
    sk = CalibratedClassifierCV(LogisticRegression(max_iter=500), cv=3).fit(X, load_iris().target)
    adapter = PriorShiftAdapter(sk, priors=[0.2, 0.3, 0.5], train_prior=[1 / 3] * 3).fit()
    with pytest.raises(NotImplementedError, match="CalibratedClassifierCV cannot be exported"):
        to_onnx(adapter, X[:3])


@needs_data
@pytest.mark.parametrize("priors_input", [False, True])
def test_attach_an_adapted_calibrator(fitted, priors_input):
    from skl2onnx import to_onnx as skl_to_onnx

    _, X, y = fitted
    numeric = X.to_numpy(dtype=np.float64)
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    lr.fit(numeric[:1000], y[:1000])
    onx = skl_to_onnx(lr, numeric[:1], options={"zipmap": False}, target_opset=17)
    scores = run_onnx(onx, {"X": numeric})["probabilities"][:, 1]
    cal = BernsteinCalibrator(degree=5).fit(scores[1000:2000], y[1000:2000])
    train = np.bincount(y[1000:2000]) / 1000
    adapter = PriorShiftAdapter(cal, train_prior=train, priors=[0.5, 0.5]).fit()
    merged = attach(onx, adapter, output="probabilities", column=1, priors_input=priors_input)
    assert [i.name for i in merged.graph.input] == ["X", "priors"][: 1 + priors_input]
    meta = {p.key: p.value for p in merged.metadata_props}
    assert meta["calibrator"] == "BernsteinCalibrator"
    assert meta["target_prior"] == "[0.5, 0.5]"
    got = run_onnx(merged, {"X": numeric[2000:]})["probabilities"]
    expected = adapter.predict_proba(scores[2000:])
    assert np.abs(got - expected).max() <= PROMISED[np.dtype(np.float64)]
    if priors_input:
        got = run_onnx(merged, {"X": numeric[2000:], "priors": np.array([[0.7, 0.3]])})
        expected = adapt_proba(cal.predict_proba(scores[2000:]), train, [0.7, 0.3])
        assert np.abs(got["probabilities"] - expected).max() <= PROMISED[np.dtype(np.float64)]


def test_triton_declares_the_optional_priors_input(iris_model, tmp_path):
    clf, X = iris_model
    adapter = PriorShiftAdapter(clf, priors=[0.2, 0.3, 0.5]).fit()
    onx = to_onnx(adapter, X[:3], priors_input=True)
    folder = write_triton_repository(onx, tmp_path, "adapted")
    text = (folder / "config.pbtxt").read_text()
    block = text[text.index('name: "priors"') :].split("}")[0]
    assert "data_type: TYPE_FP64" in block and "dims: [ 3 ]" in block
    assert "optional: true" in block
    assert text.count("optional: true") == 1  # X stays required
    config_class = deploy._triton_model_config_class()
    if config_class is not None:  # Triton's own schema knows the field
        from google.protobuf import text_format

        parsed = text_format.Parse(text, config_class())
        assert [i.optional for i in parsed.input] == [False, True]


def test_float32_interface_keeps_the_priors_input_double():
    # integer data exported with dtype=np.float32: the data inputs become float32, the
    # optional priors input stays double (it is no data column)
    X, y = load_iris(return_X_y=True)
    Xi = (X * 10).astype(np.int64)
    clf = CalibratedClassifier(LogisticRegression(max_iter=1000), cv=3).fit(Xi, y)
    adapter = PriorShiftAdapter(clf, priors=[0.2, 0.3, 0.5]).fit()
    onx = to_onnx(adapter, Xi[:5], dtype=np.float32, priors_input=True)
    types = {i.name: i.type.tensor_type.elem_type for i in onx.graph.input}
    assert types == {"X": 1, "priors": 11}  # FLOAT, DOUBLE
    assert _assert_exact(adapter, Xi, onx)["dtype"] == "float32"


def test_priors_input_python_refuses_give_nan_rows():
    # Python refuses priors with a zero, a negative or NaN share, or a sum off 1; the graph
    # cannot raise, so such a request's rows are NaN, and valid requests are untouched
    X, y = load_iris(return_X_y=True)
    clf = CalibratedClassifier(LogisticRegression(max_iter=1000), cv=3).fit(X, y)
    adapter = PriorShiftAdapter(clf, priors=[0.2, 0.3, 0.5]).fit()
    onx = to_onnx(adapter, X[:5], priors_input=True)
    rows = X[:4]
    priors = np.array([[0.2, 0.3, 0.5], [-1.0, 1.5, 0.5], [np.nan, 0.5, 0.5], [0.0, 0.5, 0.5]])
    out = run_onnx(onx, {"X": rows.astype(np.float64), "priors": priors})["probabilities"]
    assert np.all(np.isfinite(out[0])) and np.all(np.isnan(out[1:]))
    np.testing.assert_allclose(out[0], adapter.predict_proba(rows[:1])[0], rtol=0, atol=1e-12)
    for bad in ([[0.2, 0.3, 0.6]], [[0.0, 0.0, 0.0]]):
        out = run_onnx(onx, {"X": rows, "priors": np.array(bad)})["probabilities"]
        assert np.all(np.isnan(out)), bad
        for priors in (bad[0], bad[0][::-1]):
            with pytest.raises(ValueError, match="priors"):
                PriorShiftAdapter(clf, priors=priors).fit()


# ------------------------------------------------- shrinkage of a noisy EM estimate


def _row_log_loss(y_enc, proba):
    return -np.log(np.clip(proba[np.arange(len(y_enc)), y_enc], 1e-15, None))


@needs_data
def test_zero_shift_adapted_is_no_worse_than_unadapted_beyond_noise(fitted):
    clf, X, y = fitted
    rate = clf.calibration_prior_[1]
    boot = np.random.default_rng(0)
    for seed in range(8):
        rows = shifted(y, rate, 1200, seed=seed)
        adapter = PriorShiftAdapter(clf, n_bootstrap=0).fit(X.iloc[rows])
        yy = np.searchsorted(clf.classes_, y[rows])
        diff = _row_log_loss(yy, adapter.predict_proba(X.iloc[rows])) - _row_log_loss(
            yy, clf.predict_proba(X.iloc[rows])
        )
        se = diff[boot.integers(0, len(diff), (200, len(diff)))].mean(1).std(ddof=1)
        assert diff.mean() <= 2 * se + 1e-12
        # the default: each prior's posterior mean given EM and its standard error (the
        # slope and Fisher variance of the target rows' likelihood, the standard error
        # widened for the calibration rows), then one row added per class
        proba, tau, em = clf.predict_proba(X.iloc[rows]), adapter.train_prior_, adapter.prior_em_
        variance = np.diag(prior_covariance(proba, tau, em))
        widened = np.sqrt(variance * (1 + len(rows) / adapter.calibration_rows_))
        mean = posterior_mean_priors(em, widened, likelihood_slope(proba, tau, em), variance)
        expected = (len(rows) * mean + 1.0) / (len(rows) + 2)
        np.testing.assert_allclose(adapter.prior_, expected, rtol=1e-12)
        # the likelihood-ratio shrinkage keeps a move never larger than EM's, and on the
        # same side
        shrunk = PriorShiftAdapter(
            clf, n_bootstrap=0, shrinkage=2.0, posterior_mean=False, pseudo_count=0
        )
        shrunk.fit(X.iloc[rows])
        move, raw = shrunk.prior_ - shrunk.train_prior_, shrunk.prior_em_ - shrunk.train_prior_
        assert np.all(np.abs(move) <= np.abs(raw) + 1e-12) and np.all(move * raw >= -1e-15)


@needs_data
def test_clear_shift_is_still_adapted(fitted):
    clf, X, y = fitted
    for rate in (0.05, 0.5):
        rows = shifted(y, rate, 1200)
        adapter = PriorShiftAdapter(clf, n_bootstrap=0).fit(X.iloc[rows])
        raw = adapter.prior_em_[1] - adapter.train_prior_[1]
        kept = (adapter.prior_[1] - adapter.train_prior_[1]) / raw
        assert kept > 0.9  # a shift of many standard errors is kept almost whole
        yy = np.searchsorted(clf.classes_, y[rows])
        adapted = _row_log_loss(yy, adapter.predict_proba(X.iloc[rows])).mean()
        assert adapted < _row_log_loss(yy, clf.predict_proba(X.iloc[rows])).mean()
    none = PriorShiftAdapter(clf, n_bootstrap=0, posterior_mean=False, pseudo_count=0)
    np.testing.assert_array_equal(none.fit(X.iloc[rows]).prior_, none.prior_em_)


@needs_data
def test_asymptotic_variance_matches_the_bootstrap(fitted):
    clf, X, y = fitted
    rows = shifted(y, 0.4, 1500)
    adapter = PriorShiftAdapter(clf, n_bootstrap=200, random_state=0).fit(X.iloc[rows])
    proba = clf.predict_proba(X.iloc[rows])
    se = np.sqrt(np.diag(prior_covariance(proba, adapter.train_prior_, adapter.prior_em_)))
    np.testing.assert_allclose(se, adapter.prior_se_, rtol=0.25)


@settings(max_examples=60, deadline=None)
@given(
    probabilities,
    probabilities,
    st.lists(st.floats(1e-8, 1e-1), min_size=3, max_size=3),
    st.floats(0, 4),
)
def test_shrinkage_keeps_priors_and_moves_toward_training(prior, train, variance, strength):
    out = shrink_priors(prior, train, np.array(variance), strength)
    assert np.all(out > 0) and abs(out.sum() - 1) < 1e-12
    # a move within its noise is dropped whole; no noise, nothing is shrunk
    np.testing.assert_allclose(shrink_priors(prior, train, np.full(3, 1e6), 1.0), train)
    np.testing.assert_allclose(shrink_priors(prior, train, np.array(variance), 0.0), prior)
    # no noise: nothing shrunk
    np.testing.assert_allclose(shrink_priors(prior, train, np.zeros(3), strength), prior)


def test_priors_input_graph_loads_silently_and_is_an_overridable_initializer(
    iris_model, tmp_path, capfd
):
    # onnxruntime logged "Initializer priors appears in graph inputs" at every load of
    # bernonnx.deploy.run_onnx (twice per export: the parity check, then a run), which
    # users read as an error; the input is get_overridable_initializers()'s, not
    # get_inputs()'s (docs/prior_shift.rst says how to feed it)
    import onnxruntime as ort

    clf, X = iris_model
    adapter = PriorShiftAdapter(clf, priors=[0.2, 0.3, 0.5]).fit()
    capfd.readouterr()
    onx = to_onnx(adapter, X[:3], priors_input=True)
    path = tmp_path / "adapted.onnx"
    path.write_bytes(onx.SerializeToString())
    for model in (onx, path):
        run_onnx(model, {"X": X[:4]})
        run_onnx(model, {"X": X[:4], "priors": np.array([[0.5, 0.25, 0.25]])})
    assert "appears in graph inputs" not in capfd.readouterr().err
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["X"]
    assert [i.name for i in session.get_overridable_initializers()] == ["priors"]
