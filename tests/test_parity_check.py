"""``check_parity`` tells the truth: Python runs on the caller's data, the graph on its feed.

The graph's feed is cast to its input type; Python is not. Precision a float32 graph
loses therefore counts as error, and a failing report says where the graph first
leaves Python ("base model" or "calibrator").
"""

import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    FusionClassifier,
    MultivariateBernsteinCalibrator,
)
from bernonnx.export import check_parity, format_parity, to_onnx

KEYS = {
    "passed",
    "max_abs_error",
    "tolerance",
    "n_rows",
    "n_above",
    "share_above",
    "worst_rows",
    "labels_equal",
    "n_label_mismatches",
    "stage",
}


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(limits=1):
        yield


def consistent(report):
    """What every report satisfies, whatever the data."""
    assert KEYS <= set(report)
    listed_above = sum(error > report["tolerance"] for _, error in report["worst_rows"])
    assert listed_above == min(report["n_above"], len(report["worst_rows"]))
    assert report["share_above"] == pytest.approx(report["n_above"] / report["n_rows"])
    errors = [e for _, e in report["worst_rows"]]
    assert errors == sorted(errors, reverse=True)
    assert not errors or errors[0] == report["max_abs_error"]
    assert report["labels_equal"] == (report["n_label_mismatches"] == 0)
    assert report["passed"] == (report["n_above"] == 0 and report["labels_equal"])
    assert (report["stage"] is None) == report["passed"]


@pytest.fixture(scope="module")
def huge_scores():
    """Scores near 1e8 that differ by O(1): float32 holds them 8 apart."""
    rng = np.random.default_rng(0)
    s = 1e8 + rng.normal(size=(3000, 1))
    y = rng.random(3000) < 1 / (1 + np.exp(-2 * (s[:, 0] - 1e8)))
    return s, y, BernsteinCalibrator(degree=6).fit(s, y)


def test_float32_graph_cannot_hide_the_rounding_of_huge_scores(huge_scores):
    s, _, cal = huge_scores
    with pytest.raises(ValueError, match="cannot carry"):  # to_onnx's guard sees it first
        to_onnx(cal, s[:2], dtype=np.float32)
    # a sample that is float32 already slips past the guard; the check still tells
    onx = to_onnx(cal, s[:2].astype(np.float32), dtype=np.float32)
    report = check_parity(cal, onx, s)
    consistent(report)
    # the old check cast the scores for Python too and reported 0.0 here
    assert report["max_abs_error"] > 0.1
    assert not report["passed"]
    assert report["tolerance"] == 1e-6 and report["dtype"] == "float32"
    assert report["share_above"] > 0.5
    assert report["stage"] == "calibrator"
    assert "FAILED" in report.summary() and "calibrator" in report.summary()


def test_float64_graph_of_the_same_scores_passes(huge_scores):
    s, _, cal = huge_scores
    report = check_parity(cal, to_onnx(cal, s[:2], dtype=np.float64), s)
    consistent(report)
    assert report["passed"] and report["stage"] is None
    assert report["tolerance"] == 1e-9 and report["max_abs_error"] <= 1e-9
    assert report["n_above"] == 0 and report["n_rows"] == len(s)
    assert "passed" in format_parity(report)


def test_the_float32_caller_gets_what_a_float32_server_gives(huge_scores):
    # data already float32: Python and the graph see the same numbers
    s, _, cal = huge_scores
    s32 = s.astype(np.float32)
    report = check_parity(cal, to_onnx(cal, s32[:2], dtype=np.float32), s32)
    consistent(report)
    assert report["passed"], report


def test_worst_rows_are_the_rows_float32_moves():
    # scores near 1e4 sit 1/1024 apart in float32
    rng = np.random.default_rng(1)
    s = 1e4 + rng.normal(size=(2000, 1))
    y = rng.random(2000) < 1 / (1 + np.exp(-2 * (s[:, 0] - 1e4)))
    cal = BernsteinCalibrator(degree=5).fit(s, y)
    probe = s.astype(np.float32).astype(np.float64)  # float32 changes none of these...
    moved = [5, 50, 500, 1234]
    probe[moved, 0] += [3e-4, -4e-4, 2e-4, -1e-4]  # ...and rounds these four
    onx = to_onnx(cal, probe[:2].astype(np.float32), dtype=np.float32)
    report = check_parity(cal, onx, probe)
    consistent(report)
    assert {row for row, _ in report["worst_rows"][:4]} == set(moved)
    assert report["n_above"] == 4 and not report["passed"]
    assert report["share_above"] == 4 / 2000
    # with a looser tolerance the same graph passes
    assert check_parity(cal, onx, probe, tol=1e-2)["passed"]


def test_explicit_dtype_and_bad_tolerance(huge_scores):
    s, _, cal = huge_scores
    onx = to_onnx(cal, s[:2], dtype=np.float64)
    assert check_parity(cal, onx, s[:50], dtype=np.float64)["dtype"] == "float64"
    with pytest.raises(ValueError, match="tol"):
        check_parity(cal, onx, s[:50], tol=-1.0)
    with pytest.raises(ValueError, match="dtype"):
        check_parity(cal, onx, s[:50], dtype=np.int64)


# --------------------------------------------------------------------------- meta-estimators


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(1600, n_features=5, random_state=0)
    return X, y


@pytest.mark.parametrize("base", ["LinearSVC", "LogisticRegression-proba", "multiclass"])
def test_base_scores_are_found_and_match(base, data):
    X, y = data
    if base == "LinearSVC":
        clf = CalibratedClassifier(LinearSVC(), cv=2).fit(X[:1000], y[:1000])
    elif base == "multiclass":
        y3 = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
        clf = CalibratedClassifier(LogisticRegression(), cv=3).fit(X[:1000], y3[:1000])
    else:
        clf = CalibratedClassifier(LogisticRegression(), response_method="predict_proba", cv=2)
        clf.fit(X[:1000], y[:1000])
    report = check_parity(clf, to_onnx(clf, X[:1], dtype=np.float64), X[1000:])
    consistent(report)
    assert report["passed"], report
    # one score error per fold pair, each tiny: the right tensor and the right column
    assert len(report["base_max_abs_error"]) == len(clf.calibrated_classifiers_)
    assert max(report["base_max_abs_error"]) < 1e-9


def test_float32_graph_of_large_features_diverges_in_the_base_model(data):
    X, y = data
    X = X + 1e4  # float32 holds these 1e-3 apart
    clf = CalibratedClassifier(make_pipeline(StandardScaler(), LogisticRegression()), cv=2)
    clf.fit(X[:1000], y[:1000])
    report = check_parity(clf, to_onnx(clf, X[:1].astype(np.float32), dtype=np.float32), X[1000:])
    consistent(report)
    assert not report["passed"]
    assert report["stage"] == "base model"
    assert max(report["base_max_abs_error"]) > report["tolerance"]


def _ancestors(graph, tensor):
    """Names of the nodes and initializers the tensor ``tensor`` is computed from."""
    producer = {out: node for node in graph.node for out in node.output}
    seen, stack = set(), [tensor]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in producer:
            stack.extend(producer[name].input)
    return seen


def _corrupt(onx, where):
    """A copy with one float weight changed, in the base model or in the calibrator."""
    copy = onnx.ModelProto()
    copy.CopyFrom(onx)
    graph = copy.graph
    base = set()
    for node in graph.node:
        base |= {o for o in node.output if o.startswith("base_scores")}
    upstream = set().union(*(_ancestors(graph, name) for name in base))
    floats = [
        init
        for init in graph.initializer
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
        and onnx.numpy_helper.to_array(init).size >= 2
        and ((init.name in upstream) == (where == "base model"))
    ]
    if floats:
        init = floats[0]
        values = onnx.numpy_helper.to_array(init)
        init.CopyFrom(onnx.numpy_helper.from_array(values * 1.5 + 0.25, init.name))
        return copy
    # the calibrator's weights inside an If's branches (the default's two forms of the
    # polynomial): one weight in each branch, whichever the batch takes
    branches = [
        attribute.g
        for node in graph.node
        if node.op_type == "If" and where == "calibrator"
        for attribute in node.attribute
    ]
    for branch in branches:
        init = next(
            i
            for i in branch.initializer
            if i.data_type == onnx.TensorProto.DOUBLE and onnx.numpy_helper.to_array(i).size >= 2
        )
        values = onnx.numpy_helper.to_array(init)
        init.CopyFrom(onnx.numpy_helper.from_array(values * 1.5 + 0.25, init.name))
    if branches:
        return copy
    # base models whose weights are node attributes (ai.onnx.ml LinearClassifier)
    for node in graph.node:
        if set(node.output) & upstream and where == "base model":
            for attribute in node.attribute:
                if attribute.floats:
                    values = [v * 1.5 + 0.25 for v in attribute.floats]
                    del attribute.floats[:]
                    attribute.floats.extend(values)
                    return copy
    raise AssertionError(f"no weight of the {where} found to corrupt")


@pytest.mark.parametrize("where", ["base model", "calibrator"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stage_names_the_corrupted_part(where, dtype, data):
    X, y = data
    base = LogisticRegression().fit(X[:800], y[:800])
    clf = CalibratedClassifier(FrozenEstimator(base), BernsteinCalibrator(degree=5))
    model = make_pipeline(StandardScaler(), clf).fit(X[800:1300], y[800:1300])
    onx = to_onnx(model, X[:1].astype(dtype), dtype=dtype)
    test = X[1300:].astype(dtype)  # what the graph receives: only corruption can differ
    assert check_parity(model, onx, test)["passed"]
    report = check_parity(model, _corrupt(onx, where), test)
    consistent(report)
    assert not report["passed"]
    assert report["stage"] == where, report


def test_dataframe_is_given_to_python_as_is():
    rng = np.random.default_rng(3)
    n = 1500
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),  # int64 column
            "income": 1e4 + rng.normal(size=n),  # float32 keeps 1e-3 of this
            "score": rng.normal(size=n),
        }
    )
    y = (frame.score + (frame.income - 1e4) + rng.normal(size=n) > 0).astype(int)
    features = ColumnTransformer([("num", StandardScaler(), list(frame.columns))])
    clf = CalibratedClassifier(make_pipeline(features, LogisticRegression()), cv=2)
    clf.fit(frame[:1000], y[:1000])
    test = frame[1000:]
    exact = check_parity(clf, to_onnx(clf, test[:1], dtype=np.float64), test)
    consistent(exact)
    assert exact["passed"] and exact["n_rows"] == len(test), exact
    # a float32 interface cannot hold the income column: to_onnx refuses it by name
    with pytest.raises(ValueError, match=r"cannot carry.*\['income', 'score'\]"):
        to_onnx(clf, test[:1], dtype=np.float32)
    # a graph built for float32 data, fed the float64 frame cast to float32
    as_float32 = test.astype({"income": np.float32, "score": np.float32})
    rounded = check_parity(clf, to_onnx(clf, as_float32[:1], dtype=np.float32), test)
    consistent(rounded)
    # the float32 feed rounds the income column; Python saw it in float64
    assert rounded["max_abs_error"] > exact["max_abs_error"]
    assert rounded["stage"] in (None, "base model")


def test_fusion_failure_stage_is_unknown(data):
    X, y = data
    bases = [
        ("lr", FrozenEstimator(LogisticRegression().fit(X[:600], y[:600]))),
        ("svm", FrozenEstimator(LinearSVC().fit(X[:600], y[:600]))),
    ]
    fusion = FusionClassifier(bases, calibrator=MultivariateBernsteinCalibrator(degree=3))
    fusion.fit(X[600:1200], y[600:1200])
    onx = to_onnx(fusion, X[:1].astype(np.float32), dtype=np.float32)
    report = check_parity(fusion, onx, X[1200:], tol=0.0)  # float32 rounding fails tol 0
    consistent(report)
    assert not report["passed"] and report["stage"] == "unknown"


@pytest.mark.parametrize("n_classes", [2, 3])
def test_base_stage_of_log_odds_from_log_probabilities(n_classes):
    """GaussianNB with log_odds=True: the graph's base tensor holds log-odds, and the
    check compares it with the log-odds Python's calibrators see."""
    from sklearn.naive_bayes import GaussianNB

    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 4))
    y = rng.integers(0, n_classes, 1500)
    X[np.arange(1500), y] += 2.0
    base = GaussianNB().fit(X[:500], y[:500])
    cal = CalibratedClassifier(FrozenEstimator(base), log_odds=True).fit(X[500:1000], y[500:1000])
    onx = to_onnx(cal, X[:5], dtype=np.float64)
    report = check_parity(cal, onx, X[1000:])
    consistent(report)
    assert report["passed"] and max(report["base_max_abs_error"]) <= 1e-9, report
