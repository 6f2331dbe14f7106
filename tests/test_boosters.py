"""Issue 14: XGBoost and LightGBM classifiers calibrate and export out of the box.

Their default score is the raw margin (``predict(output_margin=True)``,
``predict(raw_score=True)``), which ``converters/exact_boosters.py`` reproduces bit
for bit: on every test row of the shared data (prefit and 3-fold, binary and
5-class, the tables as read (float64 graphs) and cast to float32 (float32 graphs)) and
on generated edge cases (NaN, values on a threshold and one ulp either side).
``response_method="predict_proba"`` goes through onnxmltools' converters, close but not
exact: ``to_onnx`` refuses it unless ``allow_inexact=True``.

Needs the ``boosters`` extra (``pip install -e ".[boosters]"``; CI installs it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR, Cell, run_cell
from bernonnx import CalibratedClassifier, FusionClassifier, MultivariateBernsteinCalibrator
from bernonnx._meta import response_scores
from bernonnx.export import InexactExportWarning, check_parity, to_onnx

EXTRA = "the boosters extra is not installed (pip install -e '.[boosters]')"
xgb = pytest.importorskip("xgboost", reason=EXTRA)
lgb = pytest.importorskip("lightgbm", reason=EXTRA)
pytest.importorskip("onnxmltools", reason=EXTRA)

TOLERANCE = {np.float32: 1e-6, np.float64: 1e-9}
HAS_DATA = all((DEFAULT_DATA_DIR / spec.file).is_file() for spec in DATASETS.values())


def _boosters():
    return {
        "XGBoost": xgb.XGBClassifier(n_estimators=30, max_depth=4, n_jobs=1, random_state=0),
        "LightGBM": lgb.LGBMClassifier(
            n_estimators=30, num_leaves=15, n_jobs=1, random_state=0, verbose=-1
        ),
    }


def _data(n_classes=2, n=3000, nan_every=0, seed=0):
    X, y = make_classification(
        n, n_features=6, n_informative=4, n_classes=n_classes, random_state=seed
    )
    if nan_every:
        X[::nan_every, 1] = np.nan
        X[1::nan_every, 4] = np.nan
    return X, y


def _margins(model, X):
    if type(model).__module__.startswith("xgboost"):
        return model.predict(X, output_margin=True)
    return model.predict(X, raw_score=True)


def _assert_exact(clf, X, dtype):
    onx = to_onnx(clf, X[:5], dtype=dtype)
    result = check_parity(clf, onx, X)
    assert result["passed"], result
    assert result["labels_equal"]
    # the margins themselves, bit for bit
    assert max(result["base_max_abs_error"]) == 0.0, result
    return result


# --------------------------------------------------------------------------- default score


@pytest.mark.parametrize("name", ["XGBoost", "LightGBM"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_default_score_is_the_raw_margin(name, n_classes):
    X, y = _data(n_classes)
    base = _boosters()[name].fit(X[:1500], y[:1500])
    clf = CalibratedClassifier(FrozenEstimator(base)).fit(X[1500:], y[1500:])
    assert clf.response_method_ == "decision_function"
    scores = response_scores(base, X, "decision_function", clf.log_odds_, clf.classes_)
    np.testing.assert_array_equal(scores, _margins(base, X))
    # explicit decision_function names the same score
    explicit = CalibratedClassifier(FrozenEstimator(base), response_method="decision_function")
    explicit.fit(X[1500:], y[1500:])
    np.testing.assert_array_equal(explicit.predict_proba(X), clf.predict_proba(X))


# --------------------------------------------------------------------------- generated data


@pytest.mark.parametrize(
    "dtype, mode",
    # 3-fold float64 runs on the shared data below
    [(np.float32, "prefit"), (np.float64, "prefit"), (np.float32, "kfold")],
)
@pytest.mark.parametrize("name", ["XGBoost", "LightGBM"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_exact_with_missing_values(dtype, mode, name, n_classes):
    X, y = _data(n_classes, nan_every=7)
    X = X.astype(dtype)
    base = _boosters()[name]
    if mode == "prefit":
        clf = CalibratedClassifier(FrozenEstimator(base.fit(X[:1500], y[:1500])))
        clf.fit(X[1500:2500], y[1500:2500])
    else:
        clf = CalibratedClassifier(base, cv=3).fit(X[:2500], y[:2500])
    _assert_exact(clf, X[2500:], dtype)


def _xgboost_thresholds(model):
    trees = json.loads(model.get_booster().save_raw("json"))["learner"]["gradient_booster"]
    out = []
    for tree in trees["model"]["trees"]:
        left = np.asarray(tree["left_children"])
        out += list(
            zip(
                np.asarray(tree["split_indices"])[left >= 0],
                np.asarray(tree["split_conditions"], dtype=np.float32)[left >= 0],
                strict=True,
            )
        )
    return out


def _lightgbm_thresholds(model):
    out = []

    def visit(node):
        if "split_feature" in node:
            out.append((node["split_feature"], float(node["threshold"])))
            visit(node["left_child"])
            visit(node["right_child"])

    for info in model.booster_.dump_model()["tree_info"]:
        visit(info["tree_structure"])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["XGBoost", "LightGBM"])
def test_exact_on_thresholds_and_one_ulp_either_side(dtype, name):
    X, y = _data(3, nan_every=11)
    base = _boosters()[name].fit(X[:1500], y[:1500])
    clf = CalibratedClassifier(FrozenEstimator(base)).fit(X[1500:], y[1500:])
    found = _xgboost_thresholds(base) if name == "XGBoost" else _lightgbm_thresholds(base)
    rows = []
    for i, (feature, t) in enumerate(found[:400]):
        t = np.asarray(t, dtype=dtype)
        for value in (t, np.nextafter(t, dtype(-np.inf)), np.nextafter(t, dtype(np.inf))):
            row = X[i % len(X)].astype(dtype)
            row[feature] = value
            rows.append(row)
    _assert_exact(clf, np.asarray(rows, dtype=dtype), dtype)


def test_pipeline_and_early_stopping():
    X, y = _data(2, n=4000)
    model = xgb.XGBClassifier(
        n_estimators=200, max_depth=3, early_stopping_rounds=5, n_jobs=1, random_state=0
    )
    model.fit(X[:1500], y[:1500], eval_set=[(X[1500:2000], y[1500:2000])], verbose=False)
    assert model.best_iteration < 199  # predict uses the best iteration's trees only
    clf = CalibratedClassifier(FrozenEstimator(model)).fit(X[2000:3000], y[2000:3000])
    _assert_exact(clf, X[3000:], np.float64)

    # a float32 graph: float32 data (float64 data is refused, "cannot carry")
    X32 = X.astype(np.float32)
    lgbm = make_pipeline(StandardScaler(), _boosters()["LightGBM"])
    clf = CalibratedClassifier(lgbm, cv=3).fit(X32[:3000], y[:3000])
    _assert_exact(clf, X32[3000:], np.float32)


def test_fusion_of_both_exports_exactly():
    X, y = _data(2)
    bases = [(n, FrozenEstimator(m.fit(X[:1500], y[:1500]))) for n, m in _boosters().items()]
    fusion = FusionClassifier(bases, MultivariateBernsteinCalibrator(degree=4))
    fusion.fit(X[1500:2500], y[1500:2500])
    assert fusion.response_methods_ == ["decision_function", "decision_function"]
    result = check_parity(fusion, to_onnx(fusion, X[:5], dtype=np.float64), X[2500:])
    assert result["passed"], result


@pytest.mark.parametrize("name", ["XGBoost", "LightGBM"])
def test_probabilities_through_onnxmltools(name):
    X, y = _data(3)
    base = _boosters()[name].fit(X[:1500], y[:1500])
    clf = CalibratedClassifier(FrozenEstimator(base), response_method="predict_proba")
    clf.fit(X[1500:2500], y[1500:2500])
    with pytest.raises(NotImplementedError, match="allow_inexact"):
        to_onnx(clf, X[:5])  # not shown exact: refused by default
    X32 = X.astype(np.float32)  # float32 data: a float32 graph
    with pytest.warns(InexactExportWarning):
        onx = to_onnx(clf, X32[:5], allow_inexact=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = check_parity(clf, onx, X32[2500:])
    # onnxmltools computes in float32: close, not exact (measured 4e-7)
    assert result["max_abs_error"] < 1e-5, result


def test_sklearn_exports_import_no_booster_library():
    code = (
        "import sys, numpy as np\n"
        "from sklearn.linear_model import LogisticRegression\n"
        "from bernonnx import CalibratedClassifier\n"
        "from bernonnx.export import to_onnx\n"
        "X = np.random.default_rng(0).normal(size=(200, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "to_onnx(CalibratedClassifier(LogisticRegression()).fit(X, y), X[:5])\n"
        "print(sorted(m for m in ('xgboost', 'lightgbm', 'onnxmltools') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- shared data


def _cells():
    """The shared tables as read (a float64 graph) and cast to float32 (a float32 graph)."""
    cells = []
    for model in ("XGBoost", "LightGBM"):
        for data in ("as_read", "float32"):
            for dataset in DATASETS:
                cells.append(Cell(dataset, model, data=data))
            cells.append(Cell("credit", model, mode="kfold", data=data))
            cells.append(Cell("diabetes", model, task="multiclass", data=data))
        cells.append(Cell("diabetes", model, mode="kfold", task="multiclass", data="float32"))
    return cells


@pytest.mark.slow
@pytest.mark.skipif(not HAS_DATA, reason=f"no shared real data at {DEFAULT_DATA_DIR}")
@pytest.mark.parametrize("cell", _cells(), ids=lambda cell: cell.id)
def test_graph_equals_python_on_every_test_row(cell):
    result = run_cell(cell)
    assert result["error"] is None, result.get("traceback")
    assert result["n_test"] > 0
    assert result["graph_dtype"] == ("float64" if cell.data == "as_read" else "float32")
    assert result["n_above"] == 0, result
    assert result["n_label_mismatch"] == 0, result
    assert result["passed"], result
