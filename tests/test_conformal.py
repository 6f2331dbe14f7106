"""Conformal prediction sets: the quantile, the scores against MAPIE's, coverage, the
checks, and the sets in the ONNX graph on every row (conformalization rows included).

Real data as users hold it: the shared credit table read by pandas into a
ColumnTransformer pipeline (binary), scikit-learn's digits as a DataFrame (ten classes).
Generated data only for the quantile's identities.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import onnx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_set_params,
)

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR
from benchmarks.conformal import _Prefit as MapieView  # the benchmark's MAPIE wrapper
from bernonnx import (
    CalibratedClassifier,
    ConformalClassifier,
    PlattCalibrator,
    PriorShiftAdapter,
    attach,
    check_parity,
    to_onnx,
)
from bernonnx.conformal import ConformalWarning, finite_sample_quantile, place_threshold
from bernonnx.deploy import run_onnx, write_triton_repository
from bernonnx.export import onnx_inputs

CATEGORICAL = ["SEX", "EDUCATION", "MARRIAGE"]


@pytest.fixture(scope="module")
def credit():
    """A calibrated ColumnTransformer pipeline on the credit table as pandas reads it:
    model, conformalization rows, test rows."""
    spec = DATASETS["credit"]
    df = pd.read_csv(DEFAULT_DATA_DIR / spec.file).sample(6000, random_state=0)
    y = df.pop(spec.label).to_numpy()
    X = df.drop(columns=list(spec.drop)).reset_index(drop=True)
    numeric = [c for c in X.columns if c not in CATEGORICAL]
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
        ]
    )
    pipe = make_pipeline(pre, LogisticRegression(max_iter=2000))
    model = CalibratedClassifier(pipe, cv=3).fit(X[:2000], y[:2000])
    return model, (X[2000:4000], y[2000:4000]), (X[4000:], y[4000:])


@pytest.fixture(scope="module")
def digits():
    """Ten classes: a calibrated logistic regression on the digits as a DataFrame."""
    X, y = load_digits(return_X_y=True, as_frame=True)
    X = X.astype(np.float64)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X.iloc[order].reset_index(drop=True), y.to_numpy()[order]
    model = CalibratedClassifier(
        make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000)), cv=3
    ).fit(X[:600], y[:600])
    return model, (X[600:1200], y[600:1200]), (X[1200:], y[1200:])


def coverage(sets, y, classes) -> float:
    return float(sets[np.arange(len(y)), np.searchsorted(classes, y)].mean())


# ----------------------------------------------------------------- the quantile


def test_quantile_is_the_ceil_order_statistic_mapie_takes():
    rng = np.random.default_rng(0)
    for n in (9, 10, 57, 300):
        s = rng.random(n)
        for c in (0.8, 0.9, 0.95):
            k = int(np.ceil((n + 1) * c))
            expected = np.sort(s)[k - 1] if k <= n else np.inf
            assert finite_sample_quantile(s, c) == expected
            if k <= n:  # MAPIE's _compute_classification_quantile
                assert expected == np.quantile(s, np.ceil((n + 1) * c) / n, method="lower")


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(0, 4), min_size=5, max_size=40),
    confidence=st.floats(0.5, 0.97),
)
def test_integer_weights_equal_repeated_rows(counts, confidence):
    counts = np.array(counts)
    if counts.sum() == 0:
        return
    s = np.random.default_rng(len(counts)).random(len(counts))
    assert finite_sample_quantile(s, confidence, counts) == finite_sample_quantile(
        np.repeat(s, counts), confidence
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=50), st.floats(0.05, 0.99))
def test_threshold_keeps_tie_from_every_score_and_never_drops_below_the_quantile(s, c):
    s = np.array(s)
    q = finite_sample_quantile(s, c)
    t = place_threshold(s, q, 1e-8)
    assert t >= q
    if np.isfinite(t):
        assert np.abs(s - t).min() >= 1e-8 * (1 - 1e-6)
        # the sets of the rows themselves are those of the order statistic, or larger
        assert np.all((s <= q) <= (s <= t))


# ----------------------------------------------------------------- against MAPIE


@pytest.mark.parametrize(("score", "randomized"), [("lac", False), ("aps", True)])
def test_sets_equal_mapie_on_every_row(credit, digits, score, randomized):
    from mapie.classification import SplitConformalClassifier

    # MAPIE takes APS for multiclass targets only
    for model, (Xc, yc), (Xt, yt) in (credit, digits) if score == "lac" else (digits,):
        ours = ConformalClassifier(
            model, confidence=0.9, score=score, randomized=randomized, random_state=3
        ).fit(Xc, yc)
        mapie = SplitConformalClassifier(
            MapieView(model),
            confidence_level=0.9,
            conformity_score=score,
            prefit=True,
            random_state=3,
        ).conformalize(Xc, yc)
        params = {"include_last_label": "randomized"} if randomized else None
        _, expected = mapie.predict_set(Xt, conformity_score_params=params)
        u = np.random.RandomState(3).uniform(size=len(yt)) if randomized else None
        np.testing.assert_array_equal(ours.predict_set(Xt, u), expected[:, :, 0])


@pytest.mark.parametrize("score", ["aps", "raps"])
def test_deterministic_sets_no_larger_than_mapies(digits, score):
    # MAPIE's deterministic APS calibrates on randomised scores, which are at least the
    # mass above the true class that bernonnx calibrates on, and predicts with the same
    # rule: each bernonnx APS set is inside MAPIE's. RAPS: each tunes its own parameters.
    from mapie.classification import SplitConformalClassifier

    model, (Xc, yc), (Xt, yt) = digits
    mapie = SplitConformalClassifier(
        MapieView(model),
        confidence_level=0.9,
        conformity_score=score,
        prefit=True,
        random_state=3,
    ).conformalize(Xc, yc)
    ours = ConformalClassifier(model, confidence=0.9, score=score, random_state=3)
    found = ours.fit(Xc, yc).predict_set(Xt)
    theirs = mapie.predict_set(Xt)[1][:, :, 0]
    if score == "aps":
        assert np.all(found <= theirs)
    assert found.sum(axis=1).mean() <= theirs.sum(axis=1).mean()
    assert coverage(found, yt, model.classes_) >= 0.9 - 0.04


# ----------------------------------------------------------------- coverage


@pytest.mark.parametrize("score", ["lac", "aps", "raps"])
def test_coverage_on_held_out_rows(digits, score):
    model, (Xc, yc), (Xt, yt) = digits
    for c in (0.8, 0.9):
        sets = ConformalClassifier(model, confidence=c, score=score, random_state=0)
        sets = sets.fit(Xc, yc).predict_set(Xt)
        # 597 test rows: a binomial standard error of about 0.013
        assert coverage(sets, yt, model.classes_) >= c - 0.04


@settings(max_examples=12, deadline=None)
@given(a=st.floats(0.5, 0.98), b=st.floats(0.5, 0.98), score=st.sampled_from(["lac", "aps"]))
def test_sets_nested_and_coverage_monotone_in_confidence(credit, a, b, score):
    model, (Xc, yc), (Xt, yt) = credit
    low, high = sorted((a, b))
    small = ConformalClassifier(model, confidence=low, score=score, random_state=0)
    large = ConformalClassifier(model, confidence=high, score=score, random_state=0)
    s1, s2 = small.fit(Xc, yc).predict_set(Xt), large.fit(Xc, yc).predict_set(Xt)
    assert np.all(s1 <= s2)
    assert coverage(s1, yt, model.classes_) <= coverage(s2, yt, model.classes_)


def test_sample_weights_equal_repeated_rows(digits):
    model, (Xc, yc), (Xt, _) = digits
    counts = np.random.default_rng(0).integers(0, 4, len(yc))
    rows = np.repeat(np.arange(len(yc)), counts)
    for case in (dict(score="lac"), dict(score="aps", class_conditional=True)):
        weighted = ConformalClassifier(model, **case).fit(Xc, yc, sample_weight=counts)
        repeated = ConformalClassifier(model, **case).fit(Xc.iloc[rows], yc[rows])
        np.testing.assert_array_equal(weighted.threshold_, repeated.threshold_)
        np.testing.assert_array_equal(weighted.predict_set(Xt), repeated.predict_set(Xt))


def test_class_conditional_covers_every_class(digits):
    model, (Xc, yc), (Xt, yt) = digits
    sets = ConformalClassifier(model, confidence=0.8, class_conditional=True).fit(Xc, yc)
    found = sets.predict_set(Xt)
    assert len(set(sets.threshold_)) > 1  # one threshold per class
    for k, label in enumerate(model.classes_):
        rows = yt == label
        # about 60 test rows per class: a binomial standard error of 0.05
        assert found[rows, k].mean() >= 0.8 - 0.15


def test_prior_shift_weighting_restores_coverage(credit):
    model, (Xc, yc), (Xt, yt) = credit
    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(yt == 1), np.flatnonzero(yt == 0)
    rows = np.concatenate([rng.choice(pos, 900), rng.choice(neg, 600)])  # 22 % -> 60 %
    prior = np.array([0.4, 0.6])
    adapter = PriorShiftAdapter(model, priors=prior).fit()
    weighted = ConformalClassifier(adapter, confidence=0.9).fit(Xc, yc)
    share = np.bincount(yc) / len(yc)
    np.testing.assert_allclose(weighted.prior_ratio_, prior / share)
    plain = ConformalClassifier(model, confidence=0.9).fit(Xc, yc)
    got = coverage(weighted.predict_set(Xt.iloc[rows]), yt[rows], model.classes_)
    lost = coverage(plain.predict_set(Xt.iloc[rows]), yt[rows], model.classes_)
    assert got >= 0.9 - 0.02 > lost


def test_raps_parameters_chosen_or_given(digits):
    model, (Xc, yc), _ = digits
    chosen = ConformalClassifier(model, score="raps", random_state=0).fit(Xc, yc)
    assert chosen.lam_ in (0.001, 0.01, 0.1, 0.2, 0.5) and 1 <= chosen.k_reg_ <= 10
    assert chosen.n_conformal_ == 480  # 20 % of the rows chose them
    given_ = ConformalClassifier(model, score="raps", lam=0.3, k_reg=2).fit(Xc, yc)
    assert (given_.lam_, given_.k_reg_, given_.n_conformal_) == (0.3, 2, 600)


# ----------------------------------------------------------------- the estimator


def test_clone_keeps_the_fitted_model_and_refits_the_sets(credit):
    model, (Xc, yc), (Xt, _) = credit
    first = ConformalClassifier(model, confidence=0.9).fit(Xc, yc)
    twin = clone(first).set_params(confidence=0.95)
    assert twin.estimator is model and not hasattr(twin, "threshold_")
    twin.fit(Xc, yc)
    assert np.all(first.predict_set(Xt) <= twin.predict_set(Xt))
    np.testing.assert_array_equal(twin.predict_proba(Xt), model.predict_proba(Xt))
    np.testing.assert_array_equal(twin.predict(Xt), model.predict(Xt))


def test_estimator_conventions_and_pickle(credit):
    model, (Xc, yc), (Xt, _) = credit
    sets = ConformalClassifier(model, score="raps", random_state=0)
    check_no_attributes_set_in_init("conformal", sets)
    check_get_params_invariance("conformal", sets)
    check_set_params("conformal", sets)
    sets.fit(Xc, yc)
    again = pickle.loads(pickle.dumps(sets))
    np.testing.assert_array_equal(again.predict_set(Xt), sets.predict_set(Xt))
    # a Pipeline has no predict_set: wrapping the Pipeline is the way, and to_onnx says so
    with pytest.raises(ValueError, match="wrap the fitted Pipeline instead"):
        to_onnx(make_pipeline(StandardScaler(), sets), Xt[:5])


def test_bad_input(credit):
    model, (Xc, yc), _ = credit
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence"):
            ConformalClassifier(model, confidence=bad).fit(Xc, yc)
    with pytest.raises(ValueError, match="labels the wrapped model does not know"):
        ConformalClassifier(model).fit(Xc, np.where(yc == 1, 7, 0))
    with pytest.raises(ValueError, match="class 1 has no conformalization row"):
        ConformalClassifier(model, class_conditional=True).fit(Xc[yc == 0], yc[yc == 0])
    with pytest.raises(ValueError, match="not fitted"):
        ConformalClassifier(clone(model)).fit(Xc, yc)
    with pytest.raises(ValueError, match="randomized=True needs"):
        ConformalClassifier(model, randomized=True).fit(Xc, yc)
    with pytest.raises(ValueError, match="sample_weight"):
        ConformalClassifier(model).fit(Xc, yc, sample_weight=-np.ones(len(yc)))
    fitted = ConformalClassifier(model, score="aps", randomized=True).fit(Xc, yc)
    with pytest.raises(ValueError, match="uniforms"):
        fitted.predict_set(Xc[:5], np.full(5, 1.5))
    # too few rows for the confidence: every set is every class, and a warning says so
    with pytest.warns(ConformalWarning, match="too few conformalization rows"):
        few = ConformalClassifier(model, confidence=0.95).fit(Xc[:10], yc[:10])
    assert few.predict_set(Xc).all()


# ----------------------------------------------------------------- the graph


def _graph_sets(onx, X, uniforms=None):
    feed = onnx_inputs(onx, X)
    if uniforms is not None:
        feed["uniforms"] = uniforms
    return run_onnx(onx, feed)


SLOW = pytest.mark.slow
CASES = [
    pytest.param(dict(score="lac"), id="lac"),
    pytest.param(dict(score="aps", randomized=True), id="aps-randomized"),
    pytest.param(dict(score="aps"), id="aps", marks=SLOW),
    pytest.param(dict(score="raps"), id="raps", marks=SLOW),
    pytest.param(
        dict(score="raps", randomized=True, class_conditional=True), id="raps-rc", marks=SLOW
    ),
    pytest.param(dict(score="lac", class_conditional=True), id="lac-mondrian", marks=SLOW),
]


@pytest.mark.parametrize("case", CASES)
def test_graph_sets_equal_python_on_every_row(credit, digits, case):
    for model, (Xc, yc), (Xt, _) in (credit, digits):
        sets = ConformalClassifier(model, confidence=0.9, random_state=0, **case).fit(Xc, yc)
        onx = to_onnx(sets, Xt[:5])
        assert [o.name for o in onx.graph.output] == ["label", "probabilities", "prediction_set"]
        X = pd.concat([Xc, Xt])  # the conformalization rows sit nearest the threshold
        u = np.random.default_rng(1).random(len(X)) if sets.randomized else None
        out = _graph_sets(onx, X, u)
        assert out["prediction_set"].dtype == np.bool_
        np.testing.assert_array_equal(out["prediction_set"], sets.predict_set(X, u))
        np.testing.assert_array_equal(out["label"], sets.predict(X))


def test_float32_graph_sets_equal_python_and_refusal(digits):
    model, (Xc, yc), (Xt, _) = digits
    X32 = pd.concat([Xc, Xt]).astype(np.float32)
    sets = ConformalClassifier(model, score="aps").fit(Xc, yc)
    onx = to_onnx(sets, X32[:5])
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    np.testing.assert_array_equal(_graph_sets(onx, X32)["prediction_set"], sets.predict_set(X32))
    # a margin under the graph's last-bit differences cannot be kept: refused
    tight = ConformalClassifier(model, score="aps", tie=1e-300).fit(Xc, yc)
    with pytest.raises(NotImplementedError, match="differ from Python's"):
        to_onnx(tight, X32[:50])
    with pytest.raises(ValueError, match="zipmap"):
        to_onnx(sets, X32[:5], zipmap=True)


def test_prior_shift_graph_and_triton(credit, tmp_path):
    model, (Xc, yc), (Xt, _) = credit
    adapter = PriorShiftAdapter(model, priors=[0.5, 0.5]).fit()
    sets = ConformalClassifier(adapter, score="aps", randomized=True).fit(Xc, yc)
    onx = to_onnx(sets, Xt[:5])
    u = np.random.default_rng(2).random(len(Xt))
    got = _graph_sets(onx, Xt, u)["prediction_set"]
    np.testing.assert_array_equal(got, sets.predict_set(Xt, u))
    assert check_parity(sets, onx, Xt)["passed"]  # the draws fed for it
    with pytest.raises(ValueError, match="priors_input=True cannot carry prediction sets"):
        to_onnx(sets, Xt[:5], priors_input=True)
    text = (write_triton_repository(onx, tmp_path, "sets") / "config.pbtxt").read_text()
    block = text[text.index('name: "prediction_set"') :].split("}")[0]
    assert "TYPE_BOOL" in block and "dims: [ 2 ]" in block
    assert 'name: "uniforms"' in text


def test_attach_carries_the_sets():
    from skl2onnx import to_onnx as skl_to_onnx

    X, y = load_digits(return_X_y=True)
    X, y = X.astype(np.float32), (y == 3).astype(int)
    lr = LogisticRegression(max_iter=2000).fit(X[:600], y[:600])
    onx = skl_to_onnx(lr, X[:1], options={"zipmap": False}, target_opset=15)
    scores = run_onnx(onx, {"X": X})["probabilities"][:, 1:]
    cal = PlattCalibrator().fit(scores[600:1000], y[600:1000])
    sets = ConformalClassifier(cal, confidence=0.95).fit(scores[1000:1400], y[1000:1400])
    merged = attach(onx, sets, output="probabilities", column=1)
    assert [o.name for o in merged.graph.output][-1] == "prediction_set"
    got = run_onnx(merged, {"X": X[1000:]})["prediction_set"]
    np.testing.assert_array_equal(got, sets.predict_set(scores[1000:]))
    assert not np.isin(["uniforms"], [i.name for i in merged.graph.input]).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_onnx(merged, {"X": X[:3]})["prediction_set"].shape == (3, 2)
