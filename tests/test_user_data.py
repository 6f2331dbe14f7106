"""Export on data as users hold it (issue 21): exact by default, or refused.

Nothing here is cast before fitting: frames come from ``pandas.read_csv`` with their own
int64, float64, bool and string columns, arrays from the bundled loader in float64. The
default export (``dtype=None``) is fed each column at its declared input type, and every
row must be within 1e-9 (float64 graph) or 1e-6 (float32 graph) of ``predict_proba`` with
identical labels; or ``to_onnx`` refuses with an error the test asserts. The one test that
casts to float32 (``test_float32_frames_keep_a_float32_graph``) is about float32 data.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import onnx
import pandas as pd
import pytest
from _parity import PROMISED
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    StackingClassifier,
    VotingClassifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MinMaxScaler,
    OneHotEncoder,
    PolynomialFeatures,
    PowerTransformer,
    QuantileTransformer,
    SplineTransformer,
    StandardScaler,
)
from sklearn.svm import LinearSVC

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR
from bernonnx import CalibratedClassifier
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import run_onnx
from bernonnx.export import InexactExportWarning, check_parity, onnx_inputs, to_onnx

HAS_DATA = all((DEFAULT_DATA_DIR / spec.file).is_file() for spec in DATASETS.values())
needs_data = pytest.mark.skipif(
    not HAS_DATA,
    reason=f"the real data sets are not at {DEFAULT_DATA_DIR} (check BERNONNX_SHARED_DATA)",
)
ROWS = 3000  # per table: every one of its test rows is compared


def read(name: str, rows: int = ROWS):
    """A shared table as pandas reads it (nothing cast), ``rows`` of it, and its labels."""
    spec = DATASETS[name]
    df = pd.read_csv(DEFAULT_DATA_DIR / spec.file)
    df = df.sample(rows, random_state=0) if rows < len(df) else df
    y = df.pop(spec.label).to_numpy()
    return df.drop(columns=list(spec.drop)), y


def assert_exact(model, X, dtype=None):
    """Export with ``X[:5]`` as the sample, then every row of ``X`` within the promise."""
    onx = to_onnx(model, X[:5], dtype=dtype)
    report = check_parity(model, onx, X)
    tol = PROMISED[np.dtype(report["dtype"])]
    assert report["max_abs_error"] <= tol, report.summary()
    assert report["labels_equal"], report.summary()
    return onx, report


def fit(base, X, y, mode):
    half = len(X) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if mode == "prefit":
            base.fit(X[:half], y[:half])
            return CalibratedClassifier(FrozenEstimator(base)).fit(X[half:], y[half:])
        return CalibratedClassifier(base, cv=2).fit(X, y)


def models():
    return {
        "HistGradientBoosting": HistGradientBoostingClassifier(max_iter=20, random_state=0),
        "RandomForest": RandomForestClassifier(20, min_samples_leaf=5, random_state=0, n_jobs=1),
        "LogisticRegression": LogisticRegression(max_iter=300),
        "GaussianNB": GaussianNB(),
    }


# ------------------------------------------------------------------ layouts


@needs_data
@pytest.mark.parametrize("model", list(models()))
@pytest.mark.parametrize("layout", ["bare", "pipeline", "column_transformer"])
@pytest.mark.parametrize("dataset", ["credit", "magic"])
def test_frames_as_read_are_exact_by_default(dataset, layout, model):
    X, y = read(dataset)
    base = models()[model]
    if layout == "pipeline":
        base = make_pipeline(StandardScaler(), base)
    elif layout == "column_transformer":
        base = make_pipeline(ColumnTransformer([("num", StandardScaler(), list(X.columns))]), base)
    clf = fit(base, X[: ROWS * 2 // 3], y[: ROWS * 2 // 3], "prefit")
    onx, report = assert_exact(clf, X[ROWS * 2 // 3 :])
    assert report["dtype"] == "float64"  # int64 and float64 columns: a float64 graph
    if layout == "column_transformer":
        assert [i.name for i in onx.graph.input] == list(X.columns)
    else:
        assert [i.name for i in onx.graph.input] == ["X"]
        meta = {p.key: p.value for p in onx.metadata_props}
        assert meta["input_columns"].startswith(f'["{X.columns[0]}"')


@needs_data
@pytest.mark.parametrize("mode", ["prefit", "kfold"])
@pytest.mark.parametrize("model", ["HistGradientBoosting", "RandomForest"])
def test_bundled_loader_array_in_a_pipeline(model, mode):
    X, y, _ = load_credit_default()
    X, y = X[:3000], y[:3000]
    clf = fit(make_pipeline(StandardScaler(), models()[model]), X[:2000], y[:2000], mode)
    assert X.dtype == np.float64
    assert_exact(clf, X[2000:])


@needs_data
@pytest.mark.parametrize("model", ["HistGradientBoosting", "LogisticRegression"])
def test_shoppers_strings_bools_and_integer_categories(model):
    """Month and VisitorType (strings), Weekend (bool), OperatingSystems (int) one-hot
    encoded as read; the rest scaled."""
    X, y = read("shoppers")
    categorical = ["Month", "VisitorType", "Weekend", "OperatingSystems", "TrafficType"]
    numeric = [c for c in X.columns if c not in categorical]
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
        ]
    )
    clf = fit(make_pipeline(pre, models()[model]), X[:2000], y[:2000], "kfold")
    onx, _ = assert_exact(clf, X[2000:])
    types = {i.name: i.type.tensor_type.elem_type for i in onx.graph.input}
    assert types["Month"] == onnx.TensorProto.STRING
    assert types["Weekend"] == types["Administrative"] == onnx.TensorProto.DOUBLE


@needs_data
def test_seed_setup_with_infrequent_categories_and_multiclass():
    """Diabetes with the seed's one-hot (infrequent categories) and LinearSVC; then a
    5-class target (GenHlth)."""
    X, y = read("diabetes", 4000)
    categorical = ["HighBP", "HighChol", "Smoker", "GenHlth", "Education", "Income"]
    numeric = ["Age", "BMI", "MentHlth", "PhysHlth"]
    pre = ColumnTransformer(
        [
            (
                "cat",
                OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=10),
                categorical,
            ),
            ("num", MinMaxScaler(), numeric),
        ]
    )
    X = X[categorical + numeric]
    clf = fit(make_pipeline(pre, LinearSVC()), X[:3000], y[:3000], "prefit")
    assert_exact(clf, X[3000:])
    target = X.pop("GenHlth").to_numpy()
    pre = ColumnTransformer([("num", StandardScaler(), list(X.columns))])
    clf = fit(
        make_pipeline(pre, LogisticRegression(max_iter=300)), X[:3000], target[:3000], "kfold"
    )
    assert len(clf.classes_) == 5
    assert_exact(clf, X[3000:])


# ------------------------------------------------------------------ column types


def typed_frame(n=1500, seed=0):
    """Every column type pandas gives users: int64, float64, bool, nullable Int64,
    Float64 and boolean (with missing values), category (strings and integers), str."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "count": rng.integers(0, 40, n),
            "amount": rng.lognormal(3, 1, n),
            "flag": rng.random(n) < 0.3,
            "visits": pd.array(rng.integers(0, 9, n), dtype="Int64"),
            "ratio": pd.array(rng.random(n), dtype="Float64"),
            "member": pd.array(rng.random(n) < 0.5, dtype="boolean"),
            "plan": pd.Categorical(rng.choice(["basic", "plus", "pro"], n)),
            "tier": pd.Categorical(rng.choice([1, 2, 3], n)),
            "city": rng.choice(["Oslo", "Lima", "Pune"], n),
        }
    )
    frame.loc[frame.index[::17], "visits"] = pd.NA
    frame.loc[frame.index[::13], "ratio"] = pd.NA
    frame.loc[frame.index[::11], "member"] = pd.NA
    logit = 0.05 * (frame["count"] - 20) + (frame["plan"] == "pro") + frame["flag"]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit.to_numpy(dtype=float)))).astype(int)
    return frame, y


NUMERIC = ["count", "amount", "flag"]
NULLABLE = ["visits", "ratio", "member"]
CATEGORICAL = ["plan", "tier", "city"]


def test_every_column_type_through_a_column_transformer():
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline

    frame, y = typed_frame()
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), NUMERIC),
            (
                "nullable",
                Pipeline([("impute", SimpleImputer()), ("scale", StandardScaler())]),
                NULLABLE,
            ),
            ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
        ]
    )
    clf = fit(make_pipeline(pre, LogisticRegression()), frame[:1000], y[:1000], "prefit")
    onx, _ = assert_exact(clf, frame[1000:])
    types = {i.name: i.type.tensor_type.elem_type for i in onx.graph.input}
    assert types["plan"] == types["city"] == onnx.TensorProto.STRING
    assert types["tier"] == types["visits"] == types["member"] == onnx.TensorProto.DOUBLE
    for one_row in (frame[1000:1001], frame[1016:1017]):  # one with missing values
        onx = to_onnx(clf, one_row)
        assert check_parity(clf, onx, frame[1000:])["passed"]


@pytest.mark.parametrize("model", ["HistGradientBoosting", "GaussianNB"])
def test_nullable_numeric_frame_into_a_bare_model(model):
    frame, y = typed_frame()
    frame = frame[NUMERIC + NULLABLE]
    if model == "GaussianNB":  # it takes no missing values
        frame = frame.dropna()
        y = y[frame.index]
    base = models()[model]
    clf = fit(base, frame[:900], y[:900], "prefit")
    onx, _ = assert_exact(clf, frame[900:])
    feed = onnx_inputs(onx, frame[900:])
    assert list(feed) == ["X"] and feed["X"].dtype == np.float64
    assert feed["X"].shape == (len(frame) - 900, 6)


def test_strings_into_a_bare_model_are_named():
    frame, y = typed_frame()
    base = HistGradientBoostingClassifier(max_iter=5).fit(frame[NUMERIC], y)
    clf = CalibratedClassifier(FrozenEstimator(base)).fit(frame[NUMERIC], y)
    with pytest.raises(ValueError, match=r"non-numeric columns \['city'\]"):
        to_onnx(clf, frame[[*NUMERIC, "city"]][:3])
    with pytest.raises(ValueError, match="not the columns"):
        to_onnx(clf, frame[NUMERIC[::-1]][:3])


def test_float32_frames_keep_a_float32_graph():
    """The float32 test: a frame the user holds in float32 gets a float32 graph."""
    frame, y = typed_frame()
    frame = frame[NUMERIC].astype(np.float32)
    clf = fit(make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=20)),
              frame[:1000], y[:1000], "prefit")  # fmt: skip
    onx, report = assert_exact(clf, frame[1000:])
    assert report["dtype"] == "float32"
    assert onnx_inputs(onx, frame[1000:])["X"].dtype == np.float32


# ------------------------------------------------------------------ explicit dtypes


@needs_data
def test_explicit_float32_accepted_only_where_exact():
    X, y = read("credit")  # integer columns: float32 holds every value
    clf = fit(make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=20)),
              X[:2000], y[:2000], "prefit")  # fmt: skip
    onx, report = assert_exact(clf, X[2000:], dtype=np.float32)
    assert report["dtype"] == "float32"
    assert {i.type.tensor_type.elem_type for i in onx.graph.input} == {onnx.TensorProto.FLOAT}
    X, y = read("magic")  # many decimals: float32 rounds them
    clf = fit(make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=20)),
              X[:2000], y[:2000], "prefit")  # fmt: skip
    with pytest.raises(ValueError, match=r"cannot carry.*columns \['fLength', 'fWidth'"):
        to_onnx(clf, X[2000:2005], dtype=np.float32)


def test_onnx_inputs_reads_the_declared_types():
    frame, y = typed_frame()
    clf = fit(LogisticRegression(), frame[NUMERIC], y, "kfold")
    onx = to_onnx(clf, frame[NUMERIC][:2])
    feed = onnx_inputs(onx, frame[NUMERIC])
    assert feed["X"].dtype == np.float64
    label, proba = (run_onnx(onx, feed)[k] for k in ("label", "probabilities"))
    np.testing.assert_allclose(proba, clf.predict_proba(frame[NUMERIC]), rtol=0, atol=1e-12)


# ------------------------------------------------------------------ refused


def _refused_cases():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    lr = LogisticRegression()
    bases = {
        "OneVsRestClassifier": OneVsRestClassifier(LogisticRegression()),
        "BaggingClassifier": BaggingClassifier(LogisticRegression(), n_estimators=3),
        "StackingClassifier": StackingClassifier([("lr", LogisticRegression())], cv=2),
        "VotingClassifier": VotingClassifier([("lr", lr)], voting="soft"),
        "KNeighborsClassifier": KNeighborsClassifier(),
        "AdaBoostClassifier": AdaBoostClassifier(n_estimators=3),
        "PolynomialFeatures": make_pipeline(PolynomialFeatures(), LogisticRegression()),
        "KBinsDiscretizer": make_pipeline(
            KBinsDiscretizer(4, encode="ordinal", quantile_method="averaged_inverted_cdf"),
            LogisticRegression(),
        ),
        "PowerTransformer": make_pipeline(PowerTransformer(), LogisticRegression()),
        "QuantileTransformer": make_pipeline(QuantileTransformer(n_quantiles=50), lr),
        "SplineTransformer": make_pipeline(SplineTransformer(), LogisticRegression()),
        "FunctionTransformer": make_pipeline(FunctionTransformer(np.tanh), LogisticRegression()),
    }
    from sklearn.calibration import CalibratedClassifierCV

    bases["CalibratedClassifierCV"] = CalibratedClassifierCV(LogisticRegression(), cv=2)
    return X, y, bases


REFUSED = [
    "OneVsRestClassifier",
    "CalibratedClassifierCV",
    "BaggingClassifier",
    "StackingClassifier",
    "VotingClassifier",
    "KNeighborsClassifier",
    "AdaBoostClassifier",
    "PolynomialFeatures",
    "KBinsDiscretizer",
    "PowerTransformer",
    "QuantileTransformer",
    "SplineTransformer",
    "FunctionTransformer",
]


@pytest.mark.parametrize("name", REFUSED)
def test_estimators_without_an_exact_converter_are_refused(name):
    X, y, bases = _refused_cases()
    clf = CalibratedClassifier(FrozenEstimator(bases[name].fit(X[:150], y[:150])))
    clf.fit(X[150:], y[150:])
    with pytest.raises(NotImplementedError, match=rf"\({name}\).*allow_inexact=True"):
        to_onnx(clf, X[:5])


@pytest.mark.parametrize("name", ["KNeighborsClassifier", "OneVsRestClassifier"])
def test_allow_inexact_exports_and_warns_with_the_gap(name):
    X, y, bases = _refused_cases()
    clf = CalibratedClassifier(FrozenEstimator(bases[name].fit(X[:150], y[:150])))
    clf.fit(X[150:], y[150:])
    with pytest.warns(InexactExportWarning, match=rf"\({name}\).*max \|p_onnx - p_python\|"):
        onx = to_onnx(clf, X[:20], allow_inexact=True)
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]


def test_a_graph_that_fails_the_full_check_is_never_returned():
    X, y, bases = _refused_cases()
    clf = CalibratedClassifier(FrozenEstimator(bases["AdaBoostClassifier"].fit(X, y))).fit(X, y)
    with pytest.raises(NotImplementedError, match="full check|differs|AdaBoost"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactExportWarning)
            onx = to_onnx(clf, X[:5], dtype=np.float64, allow_inexact=True)
            onnx.checker.check_model(onx, full_check=True)  # reached only if it was valid


def test_allow_inexact_must_be_a_bool():
    X, y, bases = _refused_cases()
    clf = CalibratedClassifier(LogisticRegression(), cv=2).fit(X, y)
    with pytest.raises(ValueError, match="allow_inexact must be True or False"):
        to_onnx(clf, X[:5], allow_inexact="yes")


# ------------------------------------------------------------------ the CLI


def test_cli_export_default_passes_its_own_check(tmp_path):
    rng = np.random.default_rng(0)
    s = rng.standard_normal(3000)
    y = (rng.random(3000) < 1 / (1 + np.exp(-2 * s))).astype(int)
    csv = tmp_path / "scores.csv"
    pd.DataFrame({"score": s, "label": y}).to_csv(csv, index=False)
    done = subprocess.run(
        [sys.executable, "-m", "bernonnx", "export", str(csv), "--method", "isotonic",
         "--score", "score", "--label", "label", "--onnx", str(tmp_path / "iso.onnx")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout and "float64" in done.stdout


# ------------------------------------------------------------------ an adversarial pass


@needs_data
def test_float32_refused_for_float64_columns_even_when_the_sample_is_integral():
    """A sample of integer-valued rows says nothing of later rows: float64 columns are
    refused a float32 interface whatever X_sample holds (0.105 off before)."""
    X, y = read("shoppers")
    numeric = X.select_dtypes("number")
    clf = fit(make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=20)),
              numeric[:2000], y[:2000], "prefit")  # fmt: skip
    integral = numeric.round(0)[:3]  # still float64 columns
    with pytest.raises(ValueError, match=r"cannot carry.*'Administrative_Duration'"):
        to_onnx(clf, integral, dtype=np.float32)


@needs_data
def test_passthrough_columns_export_as_the_identity():
    X, y = read("shoppers")
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["Month", "VisitorType"])],
        remainder="passthrough",
    )
    clf = fit(make_pipeline(pre, HistGradientBoostingClassifier(max_iter=20)), X[:2000],
              y[:2000], "prefit")  # fmt: skip
    assert_exact(clf, X[2000:])


def test_categorical_splits_are_refused_with_the_reason():
    frame, y = typed_frame()
    X = frame[NUMERIC].to_numpy(dtype=float)
    hgb = HistGradientBoostingClassifier(max_iter=5, categorical_features=[0]).fit(X, y)
    clf = CalibratedClassifier(FrozenEstimator(hgb)).fit(X, y)
    with pytest.raises(NotImplementedError, match="categorical splits are not exported"):
        to_onnx(clf, X[:3])
