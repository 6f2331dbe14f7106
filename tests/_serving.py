"""What the tests of the runtimes without Python share: the graphs, the CSV, the readers.

``serving_cases()`` fits and exports, once per process, the graphs the C, C++ and
browser tests run: binary and multiclass, float32 and float64 graphs, one ``X`` input
(an array, or a DataFrame into a bare model: metadata ``input_columns``) and one input
per column (a DataFrame into a ColumnTransformer, strings and booleans included), labels
as integers and as strings. Base models: HistGradientBoosting, LogisticRegression in a
Pipeline with a ColumnTransformer over the credit data as pandas reads it, XGBoost,
and the multiclass default (``CalibratedClassifier`` on five classes).

``needs(what, hint)`` skips a test whose tool is missing, naming what to install, and
fails it instead under CI (``CI=true``), where ``.ci/run`` installs everything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from bernonnx import CalibratedClassifier
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import run_onnx
from bernonnx.export import onnx_inputs, to_onnx

ROOT = Path(__file__).resolve().parents[1]
#: rows fitted (base model and calibrators, 5 folds) and rows served, per case
FIT_ROWS, TEST_ROWS = 3000, 1500


def needs(missing: str | None) -> None:
    """Skip with ``missing`` (what to install) locally; fail with it under CI."""
    if missing is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run this test, but {missing}")
    pytest.skip(missing)


def header_folder() -> Path | None:
    """onnxruntime_c_api.h's folder: $ONNXRUNTIME_INCLUDE, build/onnxruntime, /usr/include
    (``sh examples/serve_c/get_headers.sh build/onnxruntime`` fetches it)."""
    candidates = [
        os.environ.get("ONNXRUNTIME_INCLUDE", ""),
        ROOT / "build" / "onnxruntime" / "include" / "onnxruntime",
        "/usr/include/onnxruntime",
    ]
    for folder in candidates:
        if folder and (Path(folder) / "onnxruntime_cxx_api.h").is_file():
            return Path(folder)
    return None


def wheel_library() -> Path:
    """The libonnxruntime.so.* inside the onnxruntime wheel, which Python's API loads."""
    import onnxruntime

    found = sorted((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))
    assert found, "the onnxruntime wheel ships no libonnxruntime.so.*"
    return found[0]


@dataclass
class Case:
    """One exported graph: the fitted model, the rows to serve, Python's answers."""

    name: str
    onx: object  # onnx.ModelProto
    X: object  # the rows as Python's model takes them: an array or a DataFrame
    frame: pd.DataFrame  # the rows as the CSV holds them (header: column names)
    proba: np.ndarray  # Python's predict_proba
    labels: np.ndarray  # Python's predict
    ort_proba: np.ndarray  # Python's onnxruntime on the same graph, one thread

    @property
    def label_text(self) -> np.ndarray:
        """Python's labels as the graph writes them: text, a bool class as 0/1."""
        labels = self.labels.astype(np.int64) if self.labels.dtype == bool else self.labels
        return labels.astype(str)

    @property
    def dtype(self) -> np.dtype:
        return self.ort_proba.dtype

    def write_csv(self, path) -> None:
        # pandas writes the shortest text that reads back as the same float (float32 too)
        self.frame.to_csv(path, index=False)


def _case(name, clf, X_fit_sample, X_test, dtype) -> Case:
    onx = to_onnx(clf, X_fit_sample, dtype=dtype)
    outputs = run_onnx(onx, onnx_inputs(onx, X_test))
    frame = X_test if hasattr(X_test, "columns") else pd.DataFrame(X_test)
    if not hasattr(X_test, "columns"):
        frame.columns = [f"x{j}" for j in range(frame.shape[1])]
    return Case(
        name,
        onx,
        X_test,
        frame,
        clf.predict_proba(X_test),
        np.asarray(clf.predict(X_test)),
        outputs["probabilities"],
    )


def _typed(X, dtype):
    """``X`` held at ``dtype``: an array cast, or a frame's numeric and boolean columns."""
    if not hasattr(X, "columns"):
        return np.asarray(X, dtype=dtype)
    X = X.copy()
    for column in X.columns:
        if X[column].dtype.kind in "biuf":
            X[column] = X[column].astype(dtype)
    return X


def _shared(file: str) -> pd.DataFrame:
    from benchmarks._realdata import default_data_dir

    path = default_data_dir() / file
    if not path.is_file():
        needs(f"shared data file {path} not found (set BERNONNX_SHARED_DATA)")
    return pd.read_csv(path)


def _split(X, y):
    """Fitting and serving rows drawn at random (some files are sorted by label)."""
    order = np.random.default_rng(0).permutation(len(y))
    fit, test = order[:FIT_ROWS], order[FIT_ROWS : FIT_ROWS + TEST_ROWS]
    if hasattr(X, "iloc"):
        return X.iloc[fit], y[fit], X.iloc[test]
    return X[fit], y[fit], X[test]


def _hgb():
    return HistGradientBoostingClassifier(max_iter=40, random_state=0)


@lru_cache(maxsize=1)
def serving_cases() -> tuple[Case, ...]:
    """The graphs every serving runtime is tested on (fitted once per process)."""
    cases = []
    # HistGradientBoosting on the bundled credit data, a float64 array: one input X
    X, y, _ = load_credit_default()
    X_fit, y_fit, X_test = _split(X, y)
    hgb = CalibratedClassifier(_hgb()).fit(X_fit, y_fit)
    cases.append(_case("hgb_array_f64", hgb, X_fit[:5], X_test, np.float64))
    X32 = X_test.astype(np.float32)
    cases.append(_case("hgb_array_f32", hgb, X32[:5], X32, np.float32))

    # LogisticRegression in a Pipeline with a ColumnTransformer, the credit CSV as pandas
    # reads it (int64 columns): one graph input per column
    credit = _shared("uci_credit_card.csv.gz")
    y = credit.pop("default.payment.next.month").to_numpy()
    credit = credit.drop(columns=["ID"])
    categorical = ["SEX", "EDUCATION", "MARRIAGE"]
    numeric = [c for c in credit.columns if c not in categorical]
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
                ("num", StandardScaler(), numeric),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    F_fit, y_fit, F_test = _split(credit, y)
    logreg = CalibratedClassifier(pipe).fit(F_fit, y_fit)
    cases.append(_case("logreg_frame_f64", logreg, F_fit.iloc[:5], F_test, np.float64))
    F32 = _typed(F_test, np.float32)
    cases.append(_case("logreg_frame_f32", logreg, F32.iloc[:5], F32, np.float32))

    # strings and booleans: online shoppers' Month, VisitorType (str) and Weekend (bool)
    shoppers = _shared("online_shoppers_intention.csv.gz")
    y = shoppers.pop("Revenue").to_numpy()
    strings = ["Month", "VisitorType"]
    other = [c for c in shoppers.columns if c not in strings]
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("cat", OneHotEncoder(handle_unknown="ignore"), strings),
                ("num", StandardScaler(), other),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    S_fit, y_fit, S_test = _split(shoppers, y)
    strings_clf = CalibratedClassifier(pipe).fit(S_fit, y_fit)
    cases.append(_case("logreg_strings_f64", strings_clf, S_fit.iloc[:5], S_test, np.float64))

    # the multiclass default on five classes (GenHlth), a DataFrame into a bare model:
    # one input X whose columns the graph's metadata names; string labels on magic
    diabetes = _shared("diabetes_brfss2015.csv.gz").iloc[:20_000]
    y = diabetes.pop("GenHlth").to_numpy()
    D_fit, y_fit, D_test = _split(diabetes, y)
    multi = CalibratedClassifier(_hgb()).fit(D_fit, y_fit)
    cases.append(_case("multiclass_frame_f64", multi, D_fit.iloc[:5], D_test, np.float64))
    magic = _shared("magic_gamma_telescope.csv.gz")
    y = magic.pop("class").to_numpy().astype(str)
    M_fit, y_fit, M_test = _split(magic, y)
    magic_clf = CalibratedClassifier(_hgb()).fit(M_fit, y_fit)
    cases.append(_case("string_labels_f64", magic_clf, M_fit.iloc[:5], M_test, np.float64))

    # XGBoost (the boosters extra), float64 and float32
    try:
        from xgboost import XGBClassifier
    except ImportError:
        return tuple(cases)
    X, y, _ = load_credit_default()
    X_fit, y_fit, X_test = _split(X, y)
    xgb = CalibratedClassifier(XGBClassifier(n_estimators=30, max_depth=3, n_jobs=1))
    xgb.fit(X_fit, y_fit)
    cases.append(_case("xgboost_array_f64", xgb, X_fit[:5], X_test, np.float64))
    X32 = X_test.astype(np.float32)
    cases.append(_case("xgboost_array_f32", xgb, X32[:5], X32, np.float32))
    return tuple(cases)


CASE_NAMES = [
    "hgb_array_f64",
    "hgb_array_f32",
    "logreg_frame_f64",
    "logreg_frame_f32",
    "logreg_strings_f64",
    "multiclass_frame_f64",
    "string_labels_f64",
    "xgboost_array_f64",
    "xgboost_array_f32",
]


def case(name: str) -> Case:
    """The case called ``name``; skipped (failed under CI) when its extra is missing."""
    found = {c.name: c for c in serving_cases()}
    if name not in found:
        needs(f"{name} needs xgboost: pip install -e '.[boosters]'")
    return found[name]


def read_output_csv(text: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The runtimes' output CSV (``label,p0,p1,...``, then ``s0,s1,...`` for a graph with
    prediction sets): labels as text, probabilities at ``dtype`` (each printed with
    enough digits to read back the exact float)."""
    lines = text.strip().splitlines()
    header = lines[0].split(",")
    k = sum(name.startswith("p") for name in header)
    sets = len(header) - 1 - k
    assert header[0] == "label" and header[1 : k + 1] == [f"p{j}" for j in range(k)]
    assert sets in (0, k) and header[k + 1 :] == [f"s{j}" for j in range(sets)]
    rows = [line.rsplit(",", len(header) - 1) for line in lines[1:]]
    labels = np.array([r[0].strip('"') for r in rows], dtype=object)
    # float64 first: "%.9g" of a float32 reads back exactly once rounded to float32
    proba = np.array([[float(v) for v in r[1 : k + 1]] for r in rows]).astype(dtype)
    return labels, proba


def read_output_sets(text: str) -> np.ndarray:
    """The ``s0,s1,...`` columns of the runtimes' output CSV as a boolean matrix."""
    lines = text.strip().splitlines()
    header = lines[0].split(",")
    columns = [j for j, name in enumerate(header) if name.startswith("s")]
    assert columns, "the output has no prediction-set columns"
    rows = [line.rsplit(",", len(header) - 1) for line in lines[1:]]
    return np.array([[r[j] == "1" for j in columns] for r in rows])


@lru_cache(maxsize=1)
def sets_case():
    """A ``ConformalClassifier`` (APS) around the five-class GenHlth model, its graph
    (the output ``prediction_set``), the rows to serve as a frame, and Python's sets."""
    from bernonnx import ConformalClassifier

    diabetes = _shared("diabetes_brfss2015.csv.gz").iloc[:20_000]
    y = diabetes.pop("GenHlth").to_numpy()
    order = np.random.default_rng(1).permutation(len(y))
    fit, conf, test = order[:3000], order[3000:5000], order[5000:6500]
    model = CalibratedClassifier(_hgb()).fit(diabetes.iloc[fit], y[fit])
    sets = ConformalClassifier(model, confidence=0.9, score="aps")
    sets.fit(diabetes.iloc[conf], y[conf])
    rows = diabetes.iloc[test]
    return to_onnx(sets, rows.iloc[:5]), rows, sets.predict_set(rows), sets.predict_proba(rows)
