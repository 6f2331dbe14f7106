"""Exported graphs are safe from onnxruntime's rewrites that change a float64 result.

onnxruntime's ``NoopElimination`` drops ``x + c``, ``x - c`` for a one-element float64
``c`` that float32 rounds to 0, and ``x * c``, ``x / c`` for one it rounds to 1;
``DivMulFusion`` turns ``Div(1, x) * y`` into ``y / x``. The first tests pin the rules
of ``bernonnx.export._ort_rewrites`` to onnxruntime itself (the graph run with its
optimiser off, and at the default level); the others export fitted models whose
constants meet the condition, data as users hold them.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from _parity import run_onnx, tolerance
from onnx import TensorProto, helper, numpy_helper
from scipy.special import expit
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    PlattCalibrator,
    TemperatureCalibrator,
    attach,
)
from bernonnx.converters._graph import GraphWriter
from bernonnx.export import _attach, convert, to_onnx
from bernonnx.export._ort_rewrites import find_hazards, make_safe

NEAR_ONE = 1 + 2e-8  # float32 rounds it to 1
TINY = 1e-50  # float32 rounds it to 0


def _graph(nodes, initializers) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None, 1])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None, 1])
    graph = helper.make_graph(nodes, "g", [x], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _const(name, value, dtype=np.float64):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _run(model: onnx.ModelProto, x, optimise: bool, output: str = "y") -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimise
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run([output], {"x": x})[0]


def _same_bits(a, b) -> bool:
    return np.array_equal(a.view(np.int64), b.view(np.int64))


# x - 1 first (onnxruntime leaves a node reading a graph input alone), the node, then
# a product (nor does it drop a node giving a graph output)
X = np.array([[1.0], [1.5], [3.0], [-2.0], [1e-3]])


def _around(op, constant_first, value, dtype=np.float64):
    inputs = ["c", "z"] if constant_first else ["z", "c"]
    nodes = [
        helper.make_node("Sub", ["x", "one"], ["z"]),
        helper.make_node(op, inputs, ["w"], name="target"),
        helper.make_node("Mul", ["w", "three"], ["y"]),
    ]
    return _graph(nodes, [_const("one", 1.0), _const("three", 3.0), _const("c", value, dtype)])


CASES = [
    # op, constant first, value, dtype, onnxruntime changes it
    *[("Add", first, TINY, np.float64, True) for first in (False, True)],
    ("Sub", False, TINY, np.float64, True),
    ("Sub", True, TINY, np.float64, False),  # c - x is never dropped
    *[("Mul", first, NEAR_ONE, np.float64, True) for first in (False, True)],
    ("Mul", False, 1 - 2e-8, np.float64, True),
    ("Div", False, NEAR_ONE, np.float64, True),
    ("Div", True, NEAR_ONE, np.float64, False),
    # true no-ops, values float32 keeps, and float32 constants compared as they are
    ("Add", False, 0.0, np.float64, False),
    ("Mul", False, 1.0, np.float64, False),
    ("Add", False, 1e-30, np.float64, False),
    ("Mul", False, 1 + 1e-7, np.float64, False),
]


@pytest.mark.parametrize(("op", "first", "value", "dtype", "changed"), CASES)
def test_the_rules_are_onnxruntime_s(op, first, value, dtype, changed):
    model = _around(op, first, value, dtype)
    if dtype != np.float64:
        pytest.skip("a float32 constant cannot meet a float64 input")
    reference = _run(model, X, optimise=False)
    assert (not _same_bits(_run(model, X, optimise=True), reference)) == changed
    assert [h.node for h in find_hazards(model)] == (["target"] if changed else [])
    make_safe(model)
    onnx.checker.check_model(model, full_check=True)
    assert find_hazards(model) == []
    assert _same_bits(_run(model, X, optimise=True), reference)


def test_constant_nodes_and_folded_constants_are_constants():
    # onnxruntime turns a Constant node into an initializer, and folds Neg(initializer)
    value = helper.make_tensor("v", TensorProto.DOUBLE, [], [NEAR_ONE])
    nodes = [
        helper.make_node("Constant", [], ["c"], value=value),
        helper.make_node("Neg", ["minus_tiny"], ["d"]),
        helper.make_node("Sub", ["x", "one"], ["z"]),
        helper.make_node("Mul", ["z", "c"], ["w"], name="scaled"),
        helper.make_node("Sub", ["w", "d"], ["v"], name="shifted"),
        helper.make_node("Mul", ["v", "three"], ["y"]),
    ]
    inits = [_const("one", 1.0), _const("three", 3.0), _const("minus_tiny", -TINY)]
    model = _graph(nodes, inits)
    x = np.vstack([X, [[1.0]]])  # z = 0: 0 * c - (-1e-50) = 1e-50
    reference = _run(model, x, optimise=False)
    assert not _same_bits(_run(model, x, optimise=True), reference)
    assert sorted(h.node for h in find_hazards(model)) == ["scaled", "shifted"]
    make_safe(model)
    onnx.checker.check_model(model, full_check=True)
    assert _same_bits(_run(model, x, optimise=True), reference)


def test_subgraphs_are_rewritten_too():
    # an If branch multiplying by the outer graph's constant: onnxruntime's rules run
    # in subgraphs, which see the outer initializers as constants
    branch = helper.make_graph(
        [
            helper.make_node("Mul", ["z", "c"], ["w"], name="inner"),
            helper.make_node("Mul", ["w", "three"], ["b"]),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("b", TensorProto.DOUBLE, [None, 1])],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["z"], ["b2"])],
        "else",
        [],
        [helper.make_tensor_value_info("b2", TensorProto.DOUBLE, [None, 1])],
    )
    nodes = [
        helper.make_node("Sub", ["x", "one"], ["z"]),
        helper.make_node("If", ["yes"], ["y"], then_branch=branch, else_branch=other),
    ]
    inits = [
        _const("one", 1.0),
        _const("three", 3.0),
        _const("c", NEAR_ONE),
        numpy_helper.from_array(np.array(True), "yes"),
    ]
    model = _graph(nodes, inits)
    reference = _run(model, X, optimise=False)
    assert not _same_bits(_run(model, X, optimise=True), reference)
    assert [(h.graph, h.node) for h in find_hazards(model)] == [("then", "inner")]
    make_safe(model)
    onnx.checker.check_model(model, full_check=True)
    assert find_hazards(model) == []
    assert _same_bits(_run(model, X, optimise=True), reference)


def test_a_float32_constant_node_is_compared_as_float32():
    # Constant(value_float=...) is a float32 tensor: onnxruntime compares it as it is
    nodes = [
        helper.make_node("Constant", [], ["c"], value_float=1.0000001),
        helper.make_node("Cast", ["x"], ["x32"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x32", "c"], ["w"], name="scaled"),
        helper.make_node("Cast", ["w"], ["y"], to=TensorProto.DOUBLE),
    ]
    model = _graph(nodes, [])
    assert find_hazards(model) == []
    assert make_safe(model) == []


def test_a_reciprocal_times_a_value_keeps_its_two_roundings():
    # DivMulFusion: Div(1, x) * y becomes y / x, one rounding fewer
    nodes = [
        helper.make_node("Add", ["x", "p"], ["shifted"]),
        helper.make_node("Div", ["one", "x"], ["r"], name="inverse"),
        helper.make_node("Mul", ["r", "shifted"], ["y"]),
    ]
    model = _graph(nodes, [_const("one", 1.0), _const("p", 0.1)])
    x = np.random.default_rng(0).uniform(0.1, 10, (1000, 1))
    reference = _run(model, x, optimise=False)
    assert not _same_bits(_run(model, x, optimise=True), reference)
    assert [(h.node, h.rule) for h in find_hazards(model)] == [("inverse", "DivMulFusion")]
    make_safe(model)
    assert _same_bits(_run(model, x, optimise=True), reference)


def test_an_empty_constant_is_refused_by_name():
    model = _around("Add", False, np.zeros(0))
    with pytest.raises(ValueError, match="'target'.*'c'"):
        make_safe(model)


def _weighted_logits(beta, n=2000, seed=0):
    """Logits and labels whose weighted maximum-likelihood temperature is ``1 / beta``:
    each score twice, labelled 1 with weight expit(beta z) and 0 with the rest."""
    z = np.random.default_rng(seed).normal(0, 3, n)
    p = expit(beta * z)
    scores = np.concatenate([z, z])[:, None]
    y = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    return scores, y, np.r_[p, 1 - p]


def _without_rewrites(monkeypatch):
    """Both protections off: the rewrite of finished graphs and the converters' own
    safe forms (``GraphWriter._kept``)."""
    monkeypatch.setattr(convert, "make_safe", lambda model: [])
    monkeypatch.setattr(_attach, "make_safe", lambda model: [])
    monkeypatch.setattr(GraphWriter, "_kept", lambda self, op_type, inputs: (op_type, inputs))


@pytest.fixture(scope="module")
def near_one_temperature():
    """A CalibratedClassifier whose fitted inverse temperature is 1 + 2e-8: the logistic
    regression's log-odds, relabelled so that their weighted maximum-likelihood
    temperature lands there."""
    X, y = make_classification(4000, n_features=5, random_state=0)
    base = LogisticRegression().fit(X[:2000], y[:2000])
    p = expit(NEAR_ONE * base.decision_function(X[2000:]))
    X_cal = np.vstack([X[2000:], X[2000:]])
    y_cal = np.r_[np.ones(2000, dtype=int), np.zeros(2000, dtype=int)]
    clf = CalibratedClassifier(FrozenEstimator(base), TemperatureCalibrator())
    clf.fit(X_cal, y_cal, sample_weight=np.r_[p, 1 - p])
    beta = clf.calibrated_classifiers_[0].calibrators[0].inverse_temperature_
    assert beta != 1 and np.float32(beta) == 1  # the hazard is in the fitted model
    return clf, X


def test_a_temperature_of_one_plus_2e_8(near_one_temperature, monkeypatch):
    clf, X = near_one_temperature
    onx = to_onnx(clf, X[:5])
    assert find_hazards(onx) == []
    label, proba = run_onnx(onx, X)  # onnxruntime's default optimisation level
    assert np.abs(proba - clf.predict_proba(X)).max() <= tolerance(np.float64)
    np.testing.assert_array_equal(label, clf.predict(X))
    _without_rewrites(monkeypatch)
    with pytest.raises(NotImplementedError, match="differs from Python"):
        to_onnx(clf, X)  # every row: the first five may be within 1e-9


def test_plain_skl2onnx_with_the_registered_converters_is_safe(near_one_temperature):
    # the converters write the temperature's product as a computation onnxruntime keeps,
    # so skl2onnx.to_onnx's graph needs no rewrite (on main it was 4.5e-9 off)
    import skl2onnx

    from bernonnx.converters import register_converters

    clf, X = near_one_temperature
    register_converters()
    onx = skl2onnx.to_onnx(clf, X[:5])
    assert find_hazards(onx) == []
    for level in (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    ):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(onx.SerializeToString(), options)
        _, proba = session.run(None, {session.get_inputs()[0].name: X})
        assert np.abs(proba - clf.predict_proba(X)).max() <= tolerance(np.float64)


def test_plain_skl2onnx_base_steps_need_make_safe(one_column_frame):
    # skl2onnx's own StandardScaler converter divides by 1 + 2e-8, which onnxruntime
    # drops; make_safe (public, as the serving docs say) rewrites it
    import skl2onnx

    from bernonnx.converters import register_converters
    from bernonnx.export import make_safe as public_make_safe

    X, y = one_column_frame
    half = len(X) // 2
    base = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:half], y[:half])
    clf = CalibratedClassifier(FrozenEstimator(base), PlattCalibrator()).fit(X[half:], y[half:])
    X64 = X.to_numpy()
    register_converters()
    onx = skl2onnx.to_onnx(clf, X64[:5])
    assert [h.op_type for h in find_hazards(onx)] == ["Div"]
    _, off = run_onnx(onx, X64)
    assert np.abs(off - clf.predict_proba(X64)).max() > 1e-9  # what onnxruntime did
    assert [h.op_type for h in public_make_safe(onx)] == ["Div"]
    _, proba = run_onnx(onx, X64)
    assert np.abs(proba - clf.predict_proba(X64)).max() <= tolerance(np.float64)


def test_attach_keeps_a_temperature_of_one_plus_2e_8(monkeypatch):
    scores, y, w = _weighted_logits(NEAR_ONE)
    cal = TemperatureCalibrator().fit(scores, y, sample_weight=w)
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None, 1])
    out = helper.make_tensor_value_info("logits", TensorProto.DOUBLE, [None, 1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["logits"])], "m", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = cal.predict_proba(scores)

    merged = attach(model, cal, output="logits")
    assert find_hazards(merged) == []
    proba = _run(merged, scores, optimise=True, output="probabilities")
    assert np.abs(proba - expected).max() <= tolerance(np.float64)

    _without_rewrites(monkeypatch)
    merged = attach(model, cal, output="logits")
    proba = _run(merged, scores, optimise=True, output="probabilities")
    assert np.abs(proba - expected).max() > 1e-9


@pytest.fixture(scope="module")
def one_column_frame(tmp_path_factory):
    """A one-feature table as pandas reads it from a CSV, whose training half has a
    standard deviation of 1 + 2e-8: a fitted StandardScaler divides by it."""
    rng = np.random.default_rng(0)
    n = 3000
    u = rng.normal(size=n)
    u = (u - u[: n // 2].mean()) / u[: n // 2].std()
    y = (rng.random(n) < expit(2 * u)).astype(int)
    path = tmp_path_factory.mktemp("one_column") / "table.csv"
    pd.DataFrame({"x": u * NEAR_ONE + 3.0, "label": y}).to_csv(path, index=False)
    frame = pd.read_csv(path)
    return frame[["x"]], frame["label"]


@pytest.mark.parametrize("calibrator", [PlattCalibrator(), BernsteinCalibrator(degree=5)])
def test_a_scaler_dividing_by_one_plus_2e_8(one_column_frame, calibrator, monkeypatch):
    X, y = one_column_frame
    half = len(X) // 2
    base = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:half], y[:half])
    scale = base[0].scale_[0]
    assert scale != 1 and np.float32(scale) == 1  # the hazard is in the fitted model
    clf = CalibratedClassifier(FrozenEstimator(base), calibrator).fit(X[half:], y[half:])
    onx = to_onnx(clf, X[:5])
    assert find_hazards(onx) == []
    label, proba = run_onnx(onx, X)
    assert np.abs(proba - clf.predict_proba(X)).max() <= tolerance(np.float64)
    np.testing.assert_array_equal(label, clf.predict(X))
    _without_rewrites(monkeypatch)
    with pytest.raises(NotImplementedError, match="differs from Python"):
        to_onnx(clf, X[:5])


def test_saturated_scores_keep_the_horner_graph(monkeypatch):
    # a bare MLP's saturated probabilities put the logistic transform's shift near
    # 1e-106; the Horner graph (no Gemm) now stays, its scalar constants rewritten
    rng = np.random.default_rng(0)
    n = 4000
    s = np.where(rng.random(n) < 0.3, 0.0, 10.0 ** -rng.uniform(0, 300, n))
    y = (rng.random(n) < np.where(s > 1e-50, 0.6, 0.1)).astype(int)
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    assert cal.shift_ != 0 and np.float32(cal.shift_) == 0
    onx = to_onnx(cal, s[:5, None])
    ops = {node.op_type for node in onx.graph.node}
    assert "Gemm" not in ops and "Sum" in ops
    _, proba = run_onnx(onx, s[:, None])
    assert np.abs(proba - cal.predict_proba(s[:, None])).max() <= tolerance(np.float64)
    _without_rewrites(monkeypatch)
    # without them the hazard is in the graph; onnxruntime happens to keep this Sub
    # (once it has removed the no-op Cast before it, the Sub reads the graph input,
    # and NoopElimination leaves such a node), so find_hazards is the check here
    unsafe = to_onnx(cal, s[:, None])
    assert [h.constant for h in find_hazards(unsafe)] == ["cal_shift"]
