"""ONNX parity: the graph ``to_onnx`` writes gives Python's probabilities and labels.

Every calibrator alone (held-out scores, scores between and beyond the fitted range,
extreme finite values; float32 and float64 graphs), one graph holding a base model or a
Pipeline and the calibrator (binary and multiclass, prefit and cross-validated, on arrays
and DataFrames), base models built to break a float32 or nearest-rounded graph, and the
FusionClassifier's graph of several base models.

Tolerances (``_parity.TOLERANCE``): float32 graphs 1e-6 absolute on probabilities (the
calibrators compute in float64 inside the graph; the rest is the base model's own
float32 arithmetic), float64 graphs 1e-12; the exact base-model cases are held to the
library's promise (``_parity.PROMISED``: 1e-6 and 1e-9), float32 graphs against Python
run on the same float32 features. Labels must be identical. Real data:
``test_real_parity.py``; what ``check_parity`` reports: ``test_parity_check.py``.
"""

from functools import cache

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
import skl2onnx
from _parity import PROMISED, assert_every_row, run_onnx, tolerance, typed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import NearestCentroid
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    FusionClassifier,
    HistogramCalibrator,
    IsotonicCalibrator,
    MultivariateBernsteinCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
)
from bernonnx._base import MAX_DEGREE
from bernonnx.converters import register_converters
from bernonnx.converters.bernstein import SMALL_BATCH
from bernonnx.converters.exact_trees import round_down_float32
from bernonnx.deploy import run_onnx as run_named
from bernonnx.export import check_parity, onnx_inputs, to_onnx

# -------------------------------------------------------- Bernstein graph alone


@cache  # one fit per (degree, loss, transform), shared by both dtypes and bases
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


def run_small_batches(onx, x, rows: int = SMALL_BATCH - 1) -> list:
    """The graph's outputs on ``x`` (one input) fed ``rows`` rows at a time, stacked:
    below ``SMALL_BATCH`` rows the default logistic graph sums the polynomial's terms
    at once, from it by Horner, so every row is checked through both branches."""
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    runs = [session.run(None, {name: x[i : i + rows]}) for i in range(0, len(x), rows)]
    return [np.concatenate(parts) for parts in zip(*runs, strict=True)]


@pytest.mark.parametrize("basis", ["exp", "pow"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("transform", ["logistic", "quantile", "minmax"])
@pytest.mark.parametrize("degree", [1, 7, 25, MAX_DEGREE])
def test_calibrator_parity_everywhere(dtype, loss, transform, degree, basis):
    cal, s = fitted_calibrator(degree, loss, transform)
    onx = to_onnx(cal, typed(s[:1, None], dtype), dtype=dtype, basis=basis)
    ops = {node.op_type for node in onx.graph.node}
    assert ("Pow" in ops) == (basis == "pow")
    assert ("If" in ops) == (basis == "exp" and transform == "logistic")
    grid = probe_scores(s, dtype)[:, None]
    expected = cal.predict_proba(grid)
    for label, proba in (run_onnx(onx, grid), run_small_batches(onx, grid)):
        assert proba.dtype == dtype
        assert np.all(np.isfinite(proba)), "no NaN or inf for finite input"
        np.testing.assert_allclose(proba, expected, rtol=0, atol=tolerance(dtype))
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
    cal.tail_slope_ = 1e-4 if loss == "log" else 0.0  # as fit sets it
    x = (shift + rng.standard_cauchy(500) / 10.0**log_scale).astype(dtype)
    x = np.clip(x, -np.finfo(dtype).max, np.finfo(dtype).max)[:, None]
    onx = to_onnx(cal, typed(x[:1], dtype), dtype=dtype)
    for label, proba in (run_onnx(onx, x), run_small_batches(onx, x)):
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba, cal.predict_proba(x), rtol=0, atol=tolerance(dtype))
        np.testing.assert_array_equal(label, cal.predict(x))


def test_nan_and_inf_have_documented_results():
    cal, s = fitted_calibrator(10, "log", "logistic")
    onx = to_onnx(cal, s[:1, None], dtype=np.float64)
    x = np.array([[np.nan], [np.inf], [-np.inf], [0.0]])
    # Python refuses NaN/inf scores with a ValueError naming them, and so does the feed
    # onnx_inputs builds (what the model refuses is recorded at export) ...
    with pytest.raises(ValueError, match="scores contains"):
        cal.predict_proba(x)
    with pytest.raises(ValueError, match="refuses in Python"):
        run_onnx(onx, x)
    # ... the graph itself cannot raise: fed them anyway, NaN rows give NaN
    # probabilities and classes_[0], +-inf give the limits of the calibration map
    outputs = run_named(onx, {onx.graph.input[0].name: x})
    label, proba = outputs["label"], outputs["probabilities"]
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


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "3-class"])
def classification(request):
    X, y = make_classification(
        n_samples=1800, n_features=8, n_informative=5, n_classes=request.param, random_state=7
    )
    # float32 data on purpose: each test exports both graph types of float32 data
    # (float64 and integer data as users read them: tests/test_user_data.py)
    return X.astype(np.float32), y


@pytest.mark.parametrize("name", list(BASE_MODELS))
@pytest.mark.parametrize("mode", ["prefit", "cv"])
def test_one_graph_parity(name, mode, classification):
    X, y = classification
    base = BASE_MODELS[name]()
    calibrator = BernsteinCalibrator(degree=6)
    if mode == "prefit":
        clf = CalibratedClassifier(FrozenEstimator(base.fit(X[:800], y[:800])), calibrator)
        clf.fit(X[800:1300], y[800:1300])
    else:
        clf = CalibratedClassifier(base, calibrator, cv=2).fit(X[:1300], y[:1300])
    X_test = X[1300:]
    for dtype in (np.float32, np.float64):
        if name == "MLP" and dtype is np.float32:
            # fitted on float32 data, its float32 layers round differently with the
            # batch size (BLAS): no graph repeats them within 1e-6, so it is refused
            with pytest.raises(NotImplementedError, match="MLPClassifier was fitted on float32"):
                to_onnx(clf, X_test[:1], dtype=dtype)
            continue
        # the sample, and Python, on the data the graph receives (a float32
        # sample behind a float64 graph would reproduce Python on float32 data)
        onx = to_onnx(clf, X_test[:1].astype(dtype), dtype=dtype)
        report = check_parity(clf, onx, X_test.astype(dtype))
        tol = tolerance(np.float32) if name in FLOAT32_INSIDE else tolerance(dtype)
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
        onx = to_onnx(clf, typed(test[:1], dtype), dtype=dtype)
        assert [i.name for i in onx.graph.input] == list(frame.columns)
        report = check_parity(clf, onx, test)
        assert report["max_abs_error"] <= tolerance(dtype) and report["labels_equal"], report


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
    assert shapes["probabilities"].elem_type == onnx.TensorProto.DOUBLE  # float64 data
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
    with pytest.raises(ValueError, match="zipmap=True needs a float32 graph"):
        to_onnx(clf, X[:1], zipmap=True)  # float64 data: float64 probabilities
    onx = to_onnx(clf, X[:1].astype(np.float32), zipmap=True)  # ZipMap takes float32
    label, maps = run_onnx(onx, X[:5].astype(np.float32))
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


# --------------------------------------------------------- baseline calibrators


BASELINES = {
    "platt": lambda: PlattCalibrator(),
    "platt_free_slope": lambda: PlattCalibrator(increasing=False),
    "platt_log_odds": lambda: PlattCalibrator(log_odds=True),
    "histogram_uniform": lambda: HistogramCalibrator(n_bins=12),
    "histogram_quantile_monotone": lambda: HistogramCalibrator(
        strategy="quantile", increasing=True
    ),
    "platt_histogram": lambda: PlattHistogramCalibrator(n_bins=10),
    "platt_histogram_log_odds": lambda: PlattHistogramCalibrator(log_odds=True),
    "isotonic": lambda: IsotonicCalibrator(),
    "isotonic_decreasing": lambda: IsotonicCalibrator(increasing=False),
}


def baseline_scores(n, seed, probability):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-1.5 * s))).astype(int)
    if probability:
        s = 1 / (1 + np.exp(-2.5 * s))  # skewed probabilities in (0, 1)
    return s, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(BASELINES))
def test_calibrator_alone(name, dtype):
    probability = "log_odds" in name
    s, y = baseline_scores(3000, 0, probability)
    cal = BASELINES[name]().fit(s, y)
    grid, _ = baseline_scores(4000, 1, probability)
    extremes = [0.0, 1.0, 1e-300, 1 - 1e-16] if probability else [-1e30, 1e30, 0.0]
    grid = np.r_[grid, extremes].astype(dtype)[:, None]
    onx = to_onnx(cal, typed(grid[:1], dtype), dtype=dtype)
    label, proba = run_onnx(onx, grid)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba, cal.predict_proba(grid), atol=tolerance(dtype), rtol=0)
    np.testing.assert_array_equal(label, cal.predict(grid))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(
    "name", ["platt", "histogram_uniform", "platt_histogram_log_odds", "isotonic"]
)
def test_inside_calibrated_classifier(name, n_classes):
    X, y = make_classification(
        1500, n_features=6, n_informative=4, n_classes=n_classes, random_state=2
    )
    log_odds = "log_odds" in name
    # the calibrator takes the log-odds itself: the meta-estimator passes probabilities
    base = GaussianNB() if log_odds else LogisticRegression()
    clf = CalibratedClassifier(base, BASELINES[name](), cv=2).fit(X[:1000], y[:1000])
    for dtype in (np.float32, np.float64):
        report = check_parity(clf, to_onnx(clf, typed(X[:1], dtype), dtype=dtype), X[1000:])
        tol = tolerance(dtype)
        if dtype is np.float32 and (log_odds or name == "isotonic"):
            # the base model's float32 scores differ from Python's float64 ones by
            # ~1e-7 relative (GaussianNB's own float32 export: ~1e-6), and isotonic's
            # steep segments multiply that by their slope; float64 graphs are exact
            slopes = [
                np.max(np.diff(c.y_thresholds_) / np.diff(c.x_thresholds_))
                for pair in clf.calibrated_classifiers_
                for c in pair.calibrators
                if hasattr(c, "x_thresholds_") and c.x_thresholds_.shape[0] > 1
            ]
            tol = 5e-6 + 2e-6 * max(slopes, default=0.0)
        assert report["max_abs_error"] <= tol and report["labels_equal"], report


@pytest.mark.parametrize("n_rows", [1, 2, 3, 50, 20000])
def test_isotonic_interpolates_exactly_without_a_threshold_matrix(n_rows):
    s, y = baseline_scores(max(n_rows, 2), 4, False)
    y[:2] = [0, 1]
    cal = IsotonicCalibrator().fit(s[:n_rows] if n_rows > 1 else s[:2], y[: max(n_rows, 2)])
    grid = np.r_[np.linspace(s.min() - 1, s.max() + 1, 5001), cal.x_thresholds_, -1e30, 1e30]
    onx = to_onnx(cal, grid[:1, None], dtype=np.float64)
    _, proba = run_onnx(onx, grid[:, None])
    np.testing.assert_allclose(proba, cal.predict_proba(grid), atol=1e-12, rtol=0)
    # comparisons per row grow like sqrt(T), not T
    sizes = [int(np.prod([d for d in init.dims])) for init in onx.graph.initializer]
    assert max(sizes) <= cal.x_thresholds_.shape[0] + 2 * np.ceil(
        np.sqrt(cal.x_thresholds_.shape[0])
    )


def test_isotonic_out_of_bounds_nan_and_raise():
    s, y = baseline_scores(800, 5, False)
    cal = IsotonicCalibrator(out_of_bounds="nan").fit(s, y)
    grid = np.r_[s.min() - 1, np.linspace(s.min(), s.max(), 101), s.max() + 1][:, None]
    label, proba = run_onnx(to_onnx(cal, grid[:1], dtype=np.float64), grid)
    np.testing.assert_allclose(proba, cal.predict_proba(grid), atol=1e-12)
    assert np.isnan(proba[[0, -1]]).all()
    np.testing.assert_array_equal(label, cal.predict(grid))
    with pytest.raises(NotImplementedError, match="out_of_bounds='raise'"):
        to_onnx(IsotonicCalibrator(out_of_bounds="raise").fit(s, y), grid[:1])


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
@pytest.mark.parametrize("log_odds", [False, True])
def test_platt_histogram_graph_bins_the_fitted_rows_as_python(strategy, log_odds):
    """Quantile edges are fitted values: a row on an edge must land in the same bin in
    the graph. Binning on sigmoid(a) put 0.3% of fitted rows in the neighbouring bin
    (onnxruntime's Sigmoid rounds differently from scipy's expit): 0.055 off."""
    rng = np.random.default_rng(11)
    s = rng.normal(size=5000)
    if log_odds:
        s = 1 / (1 + np.exp(-2 * s))
    y = rng.random(5000) < 1 / (1 + np.exp(-2 * (s - (0.5 if log_odds else 0.0))))
    cal = PlattHistogramCalibrator(n_bins=15, strategy=strategy, log_odds=log_odds).fit(s, y)
    report = check_parity(cal, to_onnx(cal, s[:50, None], dtype=np.float64), s[:, None])
    assert report["max_abs_error"] <= 1e-12 and report["labels_equal"], report


# ------------------------------------------------------ multivariate calibrator


LOSSES = ("squared", "log")
TRANSFORMS = ("quantile", "logistic", "minmax")
BIG = {np.float32: float(np.finfo(np.float32).max), np.float64: float(np.finfo(np.float64).max)}


def tensor_scores(n=3000, m=2, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=(n, m)) * np.arange(1, m + 1)
    eta = np.tanh(s).sum(axis=1) * 1.5
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return s, y


def tensor_probe(s, dtype):
    """Held-out-like rows, rows between and beyond the fitted range, extreme finite values."""
    rng = np.random.default_rng(1)
    lo, hi = s.min(axis=0), s.max(axis=0)
    m = s.shape[1]
    inside = rng.uniform(lo, hi, size=(500, m))
    outside = np.vstack([lo - 10 * (hi - lo), hi + 10 * (hi - lo)])
    big = BIG[dtype]
    extreme = np.array(
        [[big] * m, [-big] * m, [big] + [0.0] * (m - 1), [1e30] + [-1e30] * (m - 1)]
    )
    return np.vstack([s[:200], inside, outside, extreme]).astype(dtype)


@cache  # one fit per (loss, transform), shared by both dtypes and bases
def fitted_tensor_calibrator(loss, transform):
    s, y = tensor_scores()
    cal = MultivariateBernsteinCalibrator(degree=(4, 6), loss=loss, score_transform=transform)
    return cal.fit(s, y), s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("basis", ["exp", "pow"])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_parity_every_transform_loss_basis_and_dtype(transform, loss, basis, dtype):
    cal, s = fitted_tensor_calibrator(loss, transform)
    onx = to_onnx(cal, typed(s[:3], dtype), dtype=dtype, basis=basis)
    onnx.checker.check_model(onx, full_check=True)
    onnx.shape_inference.infer_shapes(onx, strict_mode=True)
    X = tensor_probe(s, dtype)
    result = check_parity(cal, onx, X)
    assert result["max_abs_error"] <= tolerance(dtype), result
    assert result["labels_equal"]
    _, proba = run_onnx(onx, X)
    assert np.isfinite(proba).all()
    assert proba.dtype == dtype


@pytest.mark.parametrize("m", [3, 4])
def test_parity_three_and_four_scores(m):
    s, y = tensor_scores(n=4000, m=m, seed=m)
    cal = MultivariateBernsteinCalibrator(degree=2, loss="log", score_transform="logistic")
    cal.fit(s, y)
    for dtype in (np.float32, np.float64):
        result = check_parity(
            cal, to_onnx(cal, typed(s[:3], dtype), dtype=dtype), tensor_probe(s, dtype)
        )
        assert result["max_abs_error"] <= tolerance(dtype), (dtype, result)


@pytest.mark.parametrize("loss", LOSSES)
def test_parity_at_the_top_degree(loss):
    # one axis at the top degree 100 (the float32 C(d, k) overflow concerns
    # one axis at a time; the product of binomials is taken in log space)
    s, y = tensor_scores(n=6000)
    cal = MultivariateBernsteinCalibrator(
        degree=(100, 3), loss=loss, score_transform="logistic"
    ).fit(s, y)
    for dtype in (np.float32, np.float64):
        result = check_parity(
            cal, to_onnx(cal, typed(s[:3], dtype), dtype=dtype), tensor_probe(s, dtype)
        )
        assert result["max_abs_error"] <= tolerance(dtype), (dtype, result)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_constant_columns_are_finite_for_any_input(transform):
    s, y = tensor_scores()
    s[:, 1] = 3.0  # one constant column
    cal = MultivariateBernsteinCalibrator(degree=3, score_transform=transform).fit(s, y)
    both = MultivariateBernsteinCalibrator(degree=3, score_transform=transform)
    both.fit(np.full_like(s, 2.0), y)  # every column constant
    for model, data in ((cal, s), (both, np.full_like(s, 2.0))):
        for dtype in (np.float32, np.float64):
            X = np.vstack([data[:50], tensor_probe(s, dtype)]).astype(dtype)
            result = check_parity(model, to_onnx(model, typed(data[:3], dtype), dtype=dtype), X)
            assert result["max_abs_error"] <= tolerance(dtype), (dtype, result)


def test_nan_gives_nan_probabilities_and_the_first_class():
    s, y = tensor_scores()
    cal = MultivariateBernsteinCalibrator(degree=3, loss="log").fit(s, y)
    onx = to_onnx(cal, s[:3], dtype=np.float64)
    X = np.array([[np.nan, 0.0], [0.0, np.nan], [0.0, 0.0]])
    # Python refuses NaN, and so does the feed onnx_inputs builds; the graph itself,
    # fed NaN anyway, gives NaN probabilities and the first class
    with pytest.raises(ValueError, match="NaN"):
        cal.predict_proba(X)
    with pytest.raises(ValueError, match="refuses in Python"):
        run_onnx(onx, X)
    outputs = run_named(onx, {onx.graph.input[0].name: X})
    label, proba = outputs["label"], outputs["probabilities"]
    assert np.isnan(proba[:2]).all() and np.isfinite(proba[2]).all()
    assert label[:2].tolist() == [cal.classes_[0]] * 2


def test_mismatched_input_width_is_named():
    s, y = tensor_scores()
    cal = MultivariateBernsteinCalibrator(degree=2).fit(s, y)
    with pytest.raises(ValueError, match=r"X_sample must have shape \(n, 2\)"):
        to_onnx(cal, s[:3, :1])
    onx = to_onnx(cal, s[:3])
    with pytest.raises(ValueError, match="takes 2 columns"):
        check_parity(cal, onx, np.zeros((3, 3)))


def test_string_labels_and_metadata():
    s, y = tensor_scores()
    labels = np.array(["no", "yes"])[y]
    cal = MultivariateBernsteinCalibrator(degree=(2, 3)).fit(s, labels)
    onx = to_onnx(cal, s[:3])
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["calibrator"] == "MultivariateBernsteinCalibrator"
    assert meta["degree"] == "(2, 3)"
    assert check_parity(cal, onx, s)["labels_equal"]


@st.composite
def monotone_problem(draw):
    m = draw(st.integers(2, 3))
    degrees = tuple(draw(st.integers(1, 8 if m == 2 else 4)) for _ in range(m))
    loss = draw(st.sampled_from(LOSSES))
    transform = draw(st.sampled_from(TRANSFORMS))
    seed = draw(st.integers(0, 2**16))
    return m, degrees, loss, transform, seed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=monotone_problem())
def test_parity_for_drawn_degrees_coefficients_and_inputs(problem):
    m, degrees, loss, transform, seed = problem
    rng = np.random.default_rng(seed)
    s, y = tensor_scores(n=400, m=m, seed=seed)
    cal = MultivariateBernsteinCalibrator(degree=1, loss=loss, score_transform=transform)
    cal.fit(s, y)
    # replace the fit by drawn coefficients, non-decreasing along every axis
    steps = rng.exponential(size=tuple(d + 1 for d in degrees))
    coef = steps
    for axis in range(m):
        coef = np.cumsum(coef, axis=axis)
    lo, hi = (-15.0, 15.0) if loss == "log" else (0.0, 1.0)
    cal.coef_ = lo + (hi - lo) * (coef - coef.min()) / (coef.max() - coef.min())
    cal.degrees_ = degrees
    X = np.vstack([s, rng.normal(scale=rng.choice([1.0, 100.0, 1e6]), size=(300, m))])
    for dtype in (np.float32, np.float64):
        result = check_parity(cal, to_onnx(cal, typed(s[:3], dtype), dtype=dtype), X.astype(dtype))
        assert result["max_abs_error"] <= tolerance(dtype), (dtype, result)


# -------------------------------------------------- exact base models (issue 9)


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
    assert_every_row(cal, X[2200:], dtype, PROMISED)


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
        assert_every_row(cal, X[1700:], dtype, PROMISED)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(
    "model",
    [
        HistGradientBoostingClassifier(max_iter=40, random_state=0),
        GradientBoostingClassifier(n_estimators=40, random_state=0),
        RandomForestClassifier(25, random_state=0, n_jobs=1),
    ],
    ids=lambda m: type(m).__name__,
)
def test_tree_sums_in_scikit_learns_order(model, n_classes):
    """The graph adds the trees one after the other from the start value, as
    scikit-learn does, so the base model's scores are Python's bit for bit (a sum
    in any other order, or the start value added last, is off by an ulp)."""
    X, y = make_classification(
        4000, 8, n_informative=5, n_classes=n_classes, random_state=n_classes
    )
    base = clone(model).fit(X[:2000], y[:2000])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(X[2000:3000], y[2000:3000])
    report = check_parity(cal, to_onnx(cal, X[:5]), X[3000:])
    assert report["base_max_abs_error"] == [0.0]
    assert report["labels_equal"]


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
    assert_every_row(cal, X[2200:], dtype, PROMISED)


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
    assert_every_row(cal, df[2200:], dtype, PROMISED)


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
    assert_every_row(cal, X[3000:], dtype, PROMISED)


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
    assert_every_row(cal, X[1000:], dtype, PROMISED)


@pytest.mark.parametrize("ensemble", [True, False])
def test_log_odds_from_logits_under_cross_validation(ensemble):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(900, 6))
    y = rng.integers(0, 3, 900)
    X[np.arange(900), y] += 2.0
    for model in (GaussianNB(), LogisticRegression(), MLPClassifier((8,), max_iter=300)):
        # a fixed degree: the default degree="auto" ran a 5-fold search in each of the
        # 9 (fold, class) calibrators, the slowest case of the suite, and the log-odds
        # path this test is about does not depend on how the degree was chosen
        cal = CalibratedClassifier(
            model,
            BernsteinCalibrator(degree=6),
            response_method="predict_proba",
            log_odds=True,
            cv=3,
            ensemble=ensemble,
        ).fit(X[:600], y[:600])
        assert {p.log_odds_from for p in cal.calibrated_classifiers_} == {"log_proba"}
        assert_every_row(cal, X[600:], np.float64, PROMISED)


def test_float32_guard_refuses_scores_it_would_flatten():
    rng = np.random.default_rng(5)
    s = (1e8 + rng.standard_normal(3000)).reshape(-1, 1)
    y = rng.random(3000) < 1 / (1 + np.exp(-2 * (s[:, 0] - 1e8)))
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    with pytest.raises(ValueError, match=r"dtype=np.float32 cannot carry.*columns \[0\]"):
        to_onnx(cal, s[:50], dtype=np.float32)
    onx = to_onnx(cal, s[:50])  # left to us: float64
    assert onx.graph.input[0].type.tensor_type.elem_type == 11
    _, proba = run_onnx(onx, s, np.float64)
    assert np.abs(proba - cal.predict_proba(s)).max() <= 1e-9


def test_default_dtype_follows_the_data():
    rng = np.random.default_rng(6)
    s = rng.standard_normal((500, 1))
    cal = BernsteinCalibrator(degree=4).fit(s, s[:, 0] + rng.standard_normal(500) > 0)
    assert to_onnx(cal, s[:50]).graph.input[0].type.tensor_type.elem_type == 11
    f32 = to_onnx(cal, s[:50].astype(np.float32))  # float32 data: a float32 graph
    assert f32.graph.input[0].type.tensor_type.elem_type == 1


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
        label, proba = run_onnx(to_onnx(cal, X[:5], dtype=dtype), X[:0], dtype)
        assert label.shape == (0,) and proba.shape == (0, 2)


def test_float32_data_behind_a_float64_interface():
    """A float32 DataFrame exported with dtype=float64 (the shared hook's check): the
    graph takes float64 but computes on the float32 values, as Python does on them;
    its probabilities are float64, not rounded to float32. A LogisticRegression fitted
    on float32 data computes its scores in float32 with BLAS, whose summation order
    (it changes with the batch size) no graph repeats: refused in float64."""
    X, y = cents(3000, 10)
    df = pd.DataFrame(X, columns=list("abcd")).astype(np.float32)
    pre = ColumnTransformer([("n", StandardScaler(), list("abcd"))])
    base = Pipeline([("pre", pre), ("m", HistGradientBoostingClassifier(max_iter=20))])
    base.fit(df[:1500], y[:1500])
    cal = CalibratedClassifier(FrozenEstimator(base)).fit(df[1500:2200], y[1500:2200])
    onx = to_onnx(cal, df[:5], dtype=np.float64)
    assert {i.type.tensor_type.elem_type for i in onx.graph.input} == {11}
    label, proba = run_onnx(onx, df[2200:], np.float64)  # float64 feed of float32 values
    assert proba.dtype == np.float64
    assert np.abs(proba - cal.predict_proba(df[2200:])).max() <= 1e-12
    np.testing.assert_array_equal(label, cal.predict(df[2200:]))
    linear = Pipeline([("pre", pre), ("m", LogisticRegression())]).fit(df[:1500], y[:1500])
    cal = CalibratedClassifier(FrozenEstimator(linear)).fit(df[1500:2200], y[1500:2200])
    with pytest.raises(NotImplementedError, match="LogisticRegression was fitted on float32"):
        to_onnx(cal, df[:5], dtype=np.float64)
    assert check_parity(cal, to_onnx(cal, df[:5]), df[2200:])["passed"]  # float32: 1e-6


# ------------------------------------------------------------- FusionClassifier


def fusion_data(n=3000, n_classes=2, seed=0):
    return make_classification(
        n, n_features=8, n_informative=5, n_classes=n_classes, random_state=seed
    )


@cache  # the slowest fit of this module: once per n_classes, shared by both dtypes
def fitted_three_model_fusion(n_classes):
    X, y = fusion_data(n_classes=n_classes)
    labels = np.array(["ant", "bee", "cat"])[y]
    fusion = FusionClassifier(
        [
            ("svc", LinearSVC()),
            ("mlp", MLPClassifier((8,), max_iter=300, random_state=0)),
            ("tree", DecisionTreeClassifier(max_depth=4, random_state=0)),
        ],
        calibrator=MultivariateBernsteinCalibrator(degree=2, loss="log"),
        cv=3,
    )
    return fusion.fit(X, labels), X


@pytest.mark.slow  # every supported base model, folds and a fusion in one graph
# one xdist worker for the four cases, so the cached fit above serves both dtypes: sent
# to two workers, each case refitted (6 s each, the export and check 0.1 to 1 s)
@pytest.mark.xdist_group("three_model_fusion")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_one_graph_holds_every_base_model_and_the_fusion(n_classes, dtype):
    fusion, X = fitted_three_model_fusion(n_classes)
    onx = to_onnx(fusion, typed(X[:3], dtype), dtype=dtype)
    onnx.checker.check_model(onx, full_check=True)
    onnx.shape_inference.infer_shapes(onx, strict_mode=True)
    ops = {node.op_type for node in onx.graph.node}
    assert {"TreeEnsembleRegressor", "Relu"} <= ops  # the tree, the MLP (and LinearSVC)
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["model"] == "FusionClassifier"
    assert meta["calibrator"] == "MultivariateBernsteinCalibrator"
    X_probe = np.vstack([X[:500], 5 * X[:50], -5 * X[:50]])
    result = check_parity(fusion, onx, X_probe)
    # float64: the tree computes in float32 inside ai.onnx.ml even in double
    # graphs; float32: the MLP's and LinearSVC's own float32 scores are off by
    # up to ~1e-6 relative before the fusion sees them (measured 2.5e-6 here)
    tol = 5e-6 if dtype == np.float32 else 2e-7
    assert result["max_abs_error"] <= tol, result
    assert result["labels_equal"]


def frozen_pipelines(second_model):
    X, y = fusion_data(n=2000)
    frame = pd.DataFrame(X[:, :4], columns=list("abcd"))
    frame["colour"] = np.array(["red", "green", "blue"])[
        (X[:, 5] > 0).astype(int) + (X[:, 6] > 0.5)
    ]
    pre = ColumnTransformer(
        [("num", StandardScaler(), list("abcd")), ("cat", OneHotEncoder(), ["colour"])]
    )
    first = make_pipeline(clone(pre), LogisticRegression()).fit(frame[:1000], y[:1000])
    second = make_pipeline(clone(pre), second_model).fit(frame[1000:], y[1000:])
    return frame, y, [("lr", FrozenEstimator(first)), ("second", FrozenEstimator(second))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frozen_pipelines_on_a_dataframe(dtype):
    frame, y, estimators = frozen_pipelines(LinearSVC())
    fusion = FusionClassifier(
        estimators, calibrator=MultivariateBernsteinCalibrator(degree=(3, 2))
    ).fit(frame, y)
    onx = to_onnx(fusion, typed(frame[:3], dtype), dtype=dtype)
    result = check_parity(fusion, onx, frame)
    assert result["max_abs_error"] <= tolerance(dtype), result
    assert result["labels_equal"]


def test_probabilities_as_log_odds_in_a_double_graph():
    # GaussianNB's probabilities crowd within 1e-6 of 0 and 1, where the
    # fitted transform is steepest: its own skl2onnx export, about 1e-16
    # relative off in p, moves the fused probability by up to ~4e-12 in
    # float64, and float32 probabilities (6e-8 apart near 1) cannot resolve
    # those scores at all (measured 2.6e-3): serve such models in float64
    frame, y, estimators = frozen_pipelines(GaussianNB())
    fusion = FusionClassifier(
        estimators,
        calibrator=MultivariateBernsteinCalibrator(degree=(3, 2)),
        response_method="predict_proba",
        log_odds=True,
    ).fit(frame, y)
    onx = to_onnx(fusion, frame[:3], dtype=np.float64)
    result = check_parity(fusion, onx, frame)
    assert result["max_abs_error"] <= 1e-10, result
    assert result["labels_equal"]


def test_scalar_constants_onnxruntime_would_drop_keep_parity():
    # onnxruntime's NoopElimination casts a one-element initializer to float32 and drops
    # x - c for float32(c) == 0 and x * c for float32(c) == 1: saturated probabilities
    # (half of them below 1e-100, as a bare MLP on raw features gives) put the logistic
    # transform's shift at about 1e-106, and a Horner graph subtracting it was 0.08 off
    rng = np.random.default_rng(0)
    n = 4000
    s = np.where(rng.random(n) < 0.3, 0.0, 10.0 ** -rng.uniform(0, 300, n))
    y = (rng.random(n) < np.where(s > 1e-50, 0.6, 0.1)).astype(int)
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    assert cal.shift_ != 0 and np.float32(cal.shift_) == 0  # the hazard is present
    onx = to_onnx(cal, s[:, None])  # its self-check runs the graph at onnxruntime's defaults
    report = check_parity(cal, onx, s[:, None])
    assert report["passed"], report
