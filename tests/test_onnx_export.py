"""ONNX export: parity in onnxruntime, graph validity, options and bad input.

Tolerances: float32 graphs 1e-6 absolute on probabilities (the calibrators
compute in float64 inside the graph; the rest is the base model's own float32
arithmetic), float64 graphs 1e-12. Labels must be identical.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
import skl2onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import NearestCentroid
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.bernstein import MAX_DEGREE
from bernonnx.converters import register_converters
from bernonnx.export import check_parity, onnx_inputs, to_onnx

TOL = {np.float32: 1e-6, np.float64: 1e-12}


def session(onx):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        onx.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def run(onx, X):
    sess = session(onx)
    return sess.run(None, {sess.get_inputs()[0].name: X})


# ----------------------------------------------------------------------------- calibrator alone


def fitted_calibrator(degree, loss, transform, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(3, size=4000)
    y = (rng.random(4000) < 1 / (1 + np.exp(-2 * np.tanh(s)))).astype(int)
    return BernsteinCalibrator(degree=degree, loss=loss, score_transform=transform).fit(s, y), s


def probe_scores(s, dtype):
    """Held-out, between, outside and extreme finite scores."""
    big = np.finfo(dtype).max
    return np.r_[
        np.linspace(s.min(), s.max(), 3001),
        np.linspace(s.min() - 100, s.max() + 100, 501),
        [0.0, -1e-300, 1e-300, 1e10, -1e10, 1e30, -1e30, big, -big, big / 2, -big / 2],
    ].astype(dtype)


@pytest.mark.parametrize("basis", ["exp", "pow"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("transform", ["logistic", "quantile", "minmax"])
@pytest.mark.parametrize("degree", [1, 7, 25, MAX_DEGREE])
def test_calibrator_parity_everywhere(dtype, loss, transform, degree, basis):
    cal, s = fitted_calibrator(degree, loss, transform)
    onx = to_onnx(cal, s[:1, None], dtype=dtype, basis=basis)
    ops = {node.op_type for node in onx.graph.node}
    assert ("Pow" in ops) == (basis == "pow")
    grid = probe_scores(s, dtype)[:, None]
    label, proba = run(onx, grid)
    assert proba.dtype == dtype
    assert np.all(np.isfinite(proba)), "no NaN or inf for finite input"
    np.testing.assert_allclose(proba, cal.predict_proba(grid), rtol=0, atol=TOL[dtype])
    np.testing.assert_array_equal(label, cal.predict(grid))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    degree=st.integers(1, MAX_DEGREE),
    loss=st.sampled_from(["log", "squared"]),
    seed=st.integers(0, 2**31),
    shift=st.floats(-1e3, 1e3),
    log_scale=st.floats(-6, 6),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_parity_for_drawn_coefficients_and_inputs(degree, loss, seed, shift, log_scale, dtype):
    """Any monotone coefficients, any transform parameters, any inputs."""
    rng = np.random.default_rng(seed)
    lo, hi = (-15.0, 15.0) if loss == "log" else (0.0, 1.0)
    cal = BernsteinCalibrator(degree=degree, loss=loss)
    cal.coef_ = np.sort(rng.uniform(lo, hi, size=degree + 1))
    cal.degree_, cal.classes_, cal.n_features_in_ = degree, np.array([0, 1]), 1
    cal.shift_ = shift
    cal.scale_, cal.scale_below_ = 10.0**log_scale, 10.0 ** rng.uniform(-6, 6)
    x = (shift + rng.standard_cauchy(500) / 10.0**log_scale).astype(dtype)
    x = np.clip(x, -np.finfo(dtype).max, np.finfo(dtype).max)[:, None]
    label, proba = run(to_onnx(cal, x[:1], dtype=dtype), x)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba, cal.predict_proba(x), rtol=0, atol=TOL[dtype])
    np.testing.assert_array_equal(label, cal.predict(x))


def test_nan_and_inf_have_documented_results():
    cal, s = fitted_calibrator(10, "log", "logistic")
    onx = to_onnx(cal, s[:1, None], dtype=np.float64)
    x = np.array([[np.nan], [np.inf], [-np.inf], [0.0]])
    label, proba = run(onx, x)
    # Python refuses NaN/inf scores with a ValueError naming them ...
    with pytest.raises(ValueError, match="scores contains"):
        cal.predict_proba(x)
    # ... the graph cannot raise: NaN rows give NaN probabilities and classes_[0],
    # +-inf give the limits of the calibration map
    assert np.all(np.isnan(proba[0])) and label[0] == cal.classes_[0]
    big = np.finfo(np.float64).max
    np.testing.assert_allclose(proba[1:3], cal.predict_proba(np.array([big, -big])), atol=1e-12)


# ----------------------------------------------------------------------------- one graph


BASE_MODELS = {
    "LogisticRegression": lambda: LogisticRegression(),
    "LinearSVC": lambda: LinearSVC(),
    "SVC": lambda: SVC(),
    "SGDClassifier": lambda: SGDClassifier(random_state=0),
    "RandomForest": lambda: RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0),
    "ExtraTrees": lambda: ExtraTreesClassifier(n_estimators=15, max_depth=6, random_state=0),
    "GradientBoosting": lambda: GradientBoostingClassifier(n_estimators=15, random_state=0),
    "HistGradientBoosting": lambda: HistGradientBoostingClassifier(max_iter=15, random_state=0),
    "MLP": lambda: MLPClassifier((12,), max_iter=400, random_state=0),
    "GaussianNB": lambda: GaussianNB(),
}


#: Base models whose graphs compute in float32 where scikit-learn uses float64:
#: none since converters/exact.py (skl2onnx's SVMClassifier and tree ensembles did).
FLOAT32_INSIDE: set[str] = set()


def base_model_float32_error(base, X):
    """How far skl2onnx's own float32 export of ``base`` is from scikit-learn."""
    onx = skl2onnx.to_onnx(base, X[:1], options={id(base): {"zipmap": False}})
    return float(np.abs(run(onx, X)[1] - base.predict_proba(X)).max())


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "3-class"])
def data(request):
    X, y = make_classification(
        n_samples=1800, n_features=8, n_informative=5, n_classes=request.param, random_state=7
    )
    return X.astype(np.float32), y


@pytest.mark.parametrize("name", list(BASE_MODELS))
@pytest.mark.parametrize("mode", ["prefit", "cv"])
def test_one_graph_parity(name, mode, data):
    X, y = data
    base = BASE_MODELS[name]()
    calibrator = BernsteinCalibrator(degree=6)
    if mode == "prefit":
        clf = CalibratedClassifier(FrozenEstimator(base.fit(X[:800], y[:800])), calibrator)
        clf.fit(X[800:1300], y[800:1300])
    else:
        clf = CalibratedClassifier(base, calibrator, cv=2).fit(X[:1300], y[:1300])
    X_test = X[1300:]
    for dtype in (np.float32, np.float64):
        # the sample, and Python, on the data the graph receives (a float32
        # sample behind a float64 graph would reproduce Python on float32 data)
        onx = to_onnx(clf, X_test[:1].astype(dtype), dtype=dtype)
        report = check_parity(clf, onx, X_test.astype(dtype))
        tol = TOL[np.float32] if name in FLOAT32_INSIDE else TOL[dtype]
        if name == "GaussianNB" and dtype is np.float32:
            # fitted on float32 data, scikit-learn's GaussianNB computes its
            # logsumexp in float32 with numpy's own exp/log, which are not
            # correctly rounded (39% of float32 exp results differ from the
            # rounded float64 exp by an ulp); one ulp of a ~1e3 log-likelihood
            # moves a probability by ~1e-6. skl2onnx's own float32 export
            # bounds what any graph reaches here.
            fitted = clf.calibrated_classifiers_[0].estimator
            fitted = getattr(fitted, "estimator", fitted)
            tol = 2 * base_model_float32_error(fitted, X_test) + 1e-6
        assert report["max_abs_error"] <= tol, (name, mode, dtype, report)
        assert report["labels_equal"], (name, mode, dtype)


def diabetes_like_frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "Age": rng.integers(1, 14, n).astype(float),
            "BMI": rng.normal(28, 6, n),
            "GenHlth": rng.choice(["excellent", "very good", "good", "fair", "poor"], n),
            "HighBP": rng.integers(0, 2, n),
            "Income": rng.integers(1, 9, n),
        }
    )
    logit = 0.3 * (frame.Age - 7) + 0.1 * (frame.BMI - 28) + frame.HighBP
    logit += frame.GenHlth.map(
        {"excellent": -1, "very good": -0.5, "good": 0, "fair": 1, "poor": 2}
    )
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return frame, y


def seed_pipeline():
    return Pipeline(
        [
            (
                "features",
                ColumnTransformer(
                    [
                        (
                            "cat",
                            OneHotEncoder(handle_unknown="ignore"),
                            ["GenHlth", "HighBP", "Income"],
                        ),
                        ("num", MinMaxScaler(), ["Age", "BMI"]),
                    ]
                ),
            ),
            ("svm", LinearSVC()),
        ]
    )


@pytest.mark.parametrize("mode", ["prefit", "cv"])
@pytest.mark.parametrize("labels", ["int", "str"])
def test_column_transformer_pipeline_on_dataframe(mode, labels):
    frame, y = diabetes_like_frame()
    if labels == "str":
        y = np.where(y == 1, "diabetic", "healthy")
    if mode == "prefit":
        clf = CalibratedClassifier(FrozenEstimator(seed_pipeline().fit(frame[:1500], y[:1500])))
        clf.fit(frame[1500:2400], y[1500:2400])
    else:
        clf = CalibratedClassifier(seed_pipeline(), cv=3).fit(frame[:2400], y[:2400])
    test = frame[2400:]
    for dtype in (np.float32, np.float64):
        onx = to_onnx(clf, test[:1], dtype=dtype)
        assert [i.name for i in onx.graph.input] == list(frame.columns)
        report = check_parity(clf, onx, test)
        assert report["max_abs_error"] <= TOL[dtype] and report["labels_equal"], report


def test_multiclass_string_labels_and_pipeline_around_calibrated():
    X, y = make_classification(1500, n_features=6, n_informative=4, n_classes=3, random_state=3)
    names = np.array(["cat", "dog", "emu"])[y]
    model = make_pipeline(
        StandardScaler(), CalibratedClassifier(LogisticRegression(), BernsteinCalibrator(degree=5))
    ).fit(X[:1000], names[:1000])
    onx = to_onnx(model, X[:1], dtype=np.float64)
    report = check_parity(model, onx, X[1000:])
    assert report["max_abs_error"] <= 1e-12 and report["labels_equal"]


def test_graph_is_valid_and_described():
    X, y = make_classification(800, n_features=5, random_state=0)
    clf = CalibratedClassifier(LinearSVC(), cv=2).fit(X, y)
    onx = to_onnx(clf, X[:1])
    onnx.checker.check_model(onx, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(onx, check_type=True, strict_mode=True)
    shapes = {o.name: o.type.tensor_type for o in inferred.graph.output}
    assert shapes["probabilities"].elem_type == onnx.TensorProto.FLOAT
    assert shapes["label"].elem_type == onnx.TensorProto.INT64
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["calibrator"] == "BernsteinCalibrator"
    assert meta["loss"] == "log" and meta["n_fold_pairs"] == "2"
    assert meta["degree"] == ",".join(
        str(c.degree_) for pair in clf.calibrated_classifiers_ for c in pair.calibrators
    )
    assert {"bernonnx_version", "skl2onnx_version", "onnx_version"} <= set(meta)
    ops = {node.domain or "ai.onnx" for node in onx.graph.node}
    assert ops <= {"ai.onnx", "ai.onnx.ml"}


def test_plain_skl2onnx_after_one_registration_line():
    X, y = make_classification(600, n_features=4, random_state=1)
    clf = CalibratedClassifier(LogisticRegression(), cv=2).fit(X, y)
    register_converters()
    register_converters()  # idempotent
    onx = skl2onnx.to_onnx(clf, X[:1].astype(np.float32))
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    assert check_parity(clf, onx, X)["max_abs_error"] < 1e-6


def test_zipmap_on_request():
    X, y = make_classification(600, n_features=4, random_state=1)
    clf = CalibratedClassifier(LogisticRegression(), cv=2).fit(X, y)
    onx = to_onnx(clf, X[:1], zipmap=True)
    sess = session(onx)
    label, maps = sess.run(None, {sess.get_inputs()[0].name: X[:5].astype(np.float32)})
    np.testing.assert_allclose(
        [[row[c] for c in clf.classes_] for row in maps], clf.predict_proba(X[:5]), atol=1e-6
    )


def test_bad_export_input_is_named():
    X, y = make_classification(600, n_features=4, random_state=1)
    clf = CalibratedClassifier(LogisticRegression(), cv=2).fit(X, y)
    onx = to_onnx(clf, X[:1])
    with pytest.raises(ValueError, match="takes 4 columns"):
        onnx_inputs(onx, X[:, :3])
    frame, y2 = diabetes_like_frame(600)
    fclf = CalibratedClassifier(seed_pipeline(), cv=2).fit(frame, y2)
    with pytest.raises(ValueError, match=r"lacks the columns \['BMI'\]"):
        onnx_inputs(to_onnx(fclf, frame[:1]), frame.drop(columns="BMI"))
    with pytest.raises(ValueError, match="dtype must be"):
        to_onnx(clf, X[:1], dtype=np.int64)
    nc = CalibratedClassifier(NearestCentroid(), cv=2, response_method="decision_function")
    with pytest.raises(NotImplementedError, match="NearestCentroid"):
        to_onnx(nc.fit(X, y), X[:1])
