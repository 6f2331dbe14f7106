"""The one-graph export computes what scikit-learn computes (issue 9).

Cases built to break a float32 or nearest-rounded graph: values on tree
thresholds (prices in cents), scalers whose last bit decides a split,
saturated naive Bayes probabilities, NaN handled by imputers, and scores a
float32 input cannot carry. Every row is compared; tolerances are the
project's: 1e-9 for float64 graphs, 1e-6 for float32 graphs against Python
run on the same float32 features.
"""

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler
from sklearn.svm import SVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.converters.exact_trees import round_down_float32
from bernonnx.export import onnx_inputs, to_onnx

TOL = {np.float32: 1e-6, np.float64: 1e-9}


def run(onx, X, dtype):
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, onnx_inputs(onx, X, dtype))
    return label, proba


def assert_every_row(model, X, dtype):
    """Python on ``X`` at ``dtype`` against the graph, every row, labels identical."""
    X = X.astype(dtype) if hasattr(X, "astype") else X
    onx = to_onnx(model, X[:5], dtype=dtype)
    label, proba = run(onx, X, dtype)
    err = np.abs(proba - model.predict_proba(X)).max(axis=1)
    assert err.max() <= TOL[dtype], f"{int((err > TOL[dtype]).sum())} rows off, max {err.max()}"
    np.testing.assert_array_equal(label, model.predict(X))


def cents(n, seed):
    """Prices rounded to cents: many duplicates, so thresholds sit on data values."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.lognormal(3, 1, size=(n, 4)), 2)
    y = (X[:, 0] - X[:, 1] + rng.normal(0, 15, n) > 0).astype(int)
    return X, y


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=False, width=64),
    st.floats(allow_nan=False, width=32),
)
def test_round_down_float32_decides_like_float64(t, x):
    t_down = round_down_float32(np.array([t]))[0]
    assert t_down.dtype == np.float32
    for value in (np.float32(x), np.nextafter(np.float32(x), np.float32(np.inf))):
        # float64(x) <= t is scikit-learn's comparison; value <= t_down the graph's
        assert (np.float64(value) <= t) == (value <= t_down)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "model",
    [
        HistGradientBoostingClassifier(max_iter=30, random_state=0),
        RandomForestClassifier(20, min_samples_leaf=3, random_state=0, n_jobs=1),
        ExtraTreesClassifier(20, min_samples_leaf=3, random_state=0, n_jobs=1),
        GradientBoostingClassifier(n_estimators=20, random_state=0),
    ],
    ids=lambda m: type(m).__name__,
)
def test_trees_on_values_equal_to_thresholds(model, dtype):
    X, y = cents(3000, 0)
    X = X.astype(dtype)
    base = make_pipeline(StandardScaler(), model).fit(X[:1500], y[:1500])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(X[1500:2200], y[1500:2200])
    assert_every_row(cal, X[2200:], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "model",
    [HistGradientBoostingClassifier(max_iter=20), GradientBoostingClassifier(n_estimators=20)],
    ids=lambda m: type(m).__name__,
)
def test_boosting_probabilities_and_their_log_odds(model, dtype):
    X, y = cents(2400, 9)
    X = X.astype(dtype)
    base = model.fit(X[:1000], y[:1000])
    for log_odds in (False, True):
        cal = CalibratedClassifier(
            FrozenEstimator(base), response_method="predict_proba", log_odds=log_odds
        ).fit(X[1000:1700], y[1000:1700])
        assert_every_row(cal, X[1700:], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "scaler",
    [
        StandardScaler(),
        StandardScaler(with_mean=False),
        MinMaxScaler(clip=True),
        RobustScaler(),
        RobustScaler(with_centering=False),
        MaxAbsScaler(),
    ],
    ids=lambda s: repr(s),
)
def test_scalers_round_as_numpy(scaler, dtype):
    """A RandomForest decides on the scaler's last bit: any rounding difference shows."""
    X, y = cents(3000, 1)
    X = X.astype(dtype)
    model = RandomForestClassifier(20, min_samples_leaf=2, random_state=0, n_jobs=1)
    base = make_pipeline(scaler, model).fit(X[:1500], y[:1500])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(X[1500:2200], y[1500:2200])
    assert_every_row(cal, X[2200:], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_imputer_and_column_transformer_on_dataframe(dtype):
    X, y = cents(3000, 2)
    df = pd.DataFrame(X, columns=list("abcd"))
    df.loc[df.index % 7 == 0, "b"] = np.nan
    df = df.astype(dtype)
    numeric = Pipeline([("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())])
    pre = ColumnTransformer([("n", numeric, ["a", "b"]), ("m", MinMaxScaler(), ["c", "d"])])
    base = Pipeline([("pre", pre), ("m", HistGradientBoostingClassifier(max_iter=20))])
    base.fit(df[:1500], y[:1500])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(df[1500:2200], y[1500:2200])
    assert_every_row(cal, df[2200:], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", [5, 150])  # 150: numpy's pairwise sum recurses
def test_gaussian_nb_log_odds_from_joint_log_likelihood(n_features, dtype):
    """Saturated probabilities: the log-odds come from the joint log-likelihood
    in Python and in the graph, not from clipped probabilities."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, n_features))
    y = (X[:, :3].sum(axis=1) + rng.normal(size=4000) > 0).astype(int)
    X[y == 1] += 3.0  # separable enough to saturate GaussianNB's probabilities
    base = GaussianNB().fit(X[:2000], y[:2000])
    cal = CalibratedClassifier(FrozenEstimator(base), log_odds=True).fit(
        X[2000:3000], y[2000:3000]
    )
    pair = cal.calibrated_classifiers_[0]
    assert pair.log_odds_from == "log_proba"
    jll = base.predict_joint_log_proba(X[3000:])
    assert np.abs(jll[:, 1] - jll[:, 0]).max() > 34.6  # beyond the clipped log-odds
    assert_every_row(cal, X[3000:], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_svc_decision_function_as_libsvm(kernel, n_classes, dtype):
    """libsvm's one-vs-one sums and scikit-learn's one-vs-rest votes, in float64."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1500, 5))
    y = rng.integers(0, n_classes, 1500)
    X[np.arange(1500), y] += 1.5
    base = make_pipeline(StandardScaler(), SVC(kernel=kernel)).fit(X[:600], y[:600])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(X[600:1000], y[600:1000])
    assert_every_row(cal, X[1000:], dtype)


@pytest.mark.parametrize("ensemble", [True, False])
def test_log_odds_from_logits_under_cross_validation(ensemble):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(900, 6))
    y = rng.integers(0, 3, 900)
    X[np.arange(900), y] += 2.0
    for model in (GaussianNB(), LogisticRegression(), MLPClassifier((8,), max_iter=300)):
        cal = CalibratedClassifier(
            model, response_method="predict_proba", log_odds=True, cv=3, ensemble=ensemble
        ).fit(X[:600], y[:600])
        assert {p.log_odds_from for p in cal.calibrated_classifiers_} == {"log_proba"}
        assert_every_row(cal, X[600:], np.float64)


def test_float32_guard_refuses_scores_it_would_flatten():
    rng = np.random.default_rng(5)
    s = (1e8 + rng.standard_normal(3000)).reshape(-1, 1)
    y = rng.random(3000) < 1 / (1 + np.exp(-2 * (s[:, 0] - 1e8)))
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    with pytest.raises(ValueError, match="dtype=np.float32 cannot carry"):
        to_onnx(cal, s[:50], dtype=np.float32)
    onx = to_onnx(cal, s[:50])  # left to us: float64
    assert onx.graph.input[0].type.tensor_type.elem_type == 11
    _, proba = run(onx, s, np.float64)
    assert np.abs(proba - cal.predict_proba(s)).max() <= 1e-9


def test_float32_default_kept_where_it_carries_the_data():
    rng = np.random.default_rng(6)
    s = rng.standard_normal((500, 1))
    cal = BernsteinCalibrator(degree=4).fit(s, s[:, 0] + rng.standard_normal(500) > 0)
    assert to_onnx(cal, s[:50]).graph.input[0].type.tensor_type.elem_type == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_batch_through_exact_base_models(dtype):
    X, y = cents(1200, 7)
    X = X.astype(dtype)
    for model in (
        HistGradientBoostingClassifier(max_iter=5),
        RandomForestClassifier(5, random_state=0, n_jobs=1),
        LogisticRegression(),
        GaussianNB(),
    ):
        base = make_pipeline(StandardScaler(), model).fit(X[:600], y[:600])
        cal = CalibratedClassifier(FrozenEstimator(base)).fit(X[600:], y[600:])
        label, proba = run(to_onnx(cal, X[:5], dtype=dtype), X[:0], dtype)
        assert label.shape == (0,) and proba.shape == (0, 2)


def test_float32_data_behind_a_float64_interface():
    """A float32 DataFrame exported with dtype=float64 (the shared hook's check): the
    graph takes float64 but computes on the float32 values, as Python does on them;
    its probabilities are float64, not rounded to float32."""
    X, y = cents(3000, 10)
    df = pd.DataFrame(X, columns=list("abcd")).astype(np.float32)
    pre = ColumnTransformer([("n", StandardScaler(), list("abcd"))])
    for model in (HistGradientBoostingClassifier(max_iter=20), LogisticRegression()):
        base = Pipeline([("pre", pre), ("m", model)]).fit(df[:1500], y[:1500])
        cal = CalibratedClassifier(FrozenEstimator(base)).fit(df[1500:2200], y[1500:2200])
        onx = to_onnx(cal, df[:5], dtype=np.float64)
        assert {i.type.tensor_type.elem_type for i in onx.graph.input} == {11}
        label, proba = run(onx, df[2200:], np.float64)  # float64 feed of float32 values
        assert proba.dtype == np.float64
        assert np.abs(proba - cal.predict_proba(df[2200:])).max() <= 1e-12
        np.testing.assert_array_equal(label, cal.predict(df[2200:]))
