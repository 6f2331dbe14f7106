"""``bernonnx.attach``: a calibrator appended to a model that ships as ONNX.

Parity: the merged graph's probabilities equal the calibrator's ``predict_proba`` run on
the model's own ONNX scores, on every test row of a shared data set, within the README's
bounds (1e-6 for float32 graphs, 1e-9 for float64).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from skl2onnx import to_onnx as skl2onnx_to_onnx
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks._realdata import DEFAULT_DATA_DIR, DataMissing, as_float, load, split
from bernonnx import (
    BernsteinCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    StackedCalibrator,
    TemperatureCalibrator,
    attach,
)
from bernonnx.deploy import run_onnx

TOLERANCE = {np.float32: 1e-6, np.float64: 1e-9}


def _data(name: str, task: str = "binary"):
    try:
        X, y, categorical = load(name, DEFAULT_DATA_DIR, task=task)
    except DataMissing as exc:
        pytest.skip(str(exc))
    return X.drop(columns=categorical), y


@pytest.fixture(scope="module")
def magic():
    """A float32 skl2onnx LogisticRegression pipeline on the MAGIC telescope data."""
    X, y = _data("magic")
    X = as_float(X, np.float32).to_numpy()
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
    onx = skl2onnx_to_onnx(
        model, X_train[:1], options={"zipmap": False}, target_opset={"": 15, "ai.onnx.ml": 1}
    )
    return onx, X_cal, y_cal, X_test


def _scores(onx, X, output="probabilities"):
    return run_onnx(onx, {onx.graph.input[0].name: X})[output]


def _check(merged, cal, X, scores, dtype):
    out = run_onnx(merged, {merged.graph.input[0].name: X})
    expected = cal.predict_proba(scores)
    assert out["probabilities"].dtype == dtype
    assert out["probabilities"].shape == expected.shape
    np.testing.assert_allclose(out["probabilities"], expected, rtol=0, atol=TOLERANCE[dtype])
    np.testing.assert_array_equal(out["label"], cal.predict(scores))
    return out


@pytest.mark.parametrize(
    "make", [BernsteinCalibrator, PlattCalibrator, IsotonicCalibrator, StackedCalibrator]
)
def test_binary_column_parity_on_every_row(magic, make):
    onx, X_cal, y_cal, X_test = magic
    cal = make().fit(_scores(onx, X_cal)[:, 1], y_cal)
    merged = attach(onx, cal, output="probabilities", column=1)
    assert [i.name for i in merged.graph.input] == [i.name for i in onx.graph.input]
    assert [o.name for o in merged.graph.output] == ["label", "probabilities"]
    _check(merged, cal, X_test, _scores(onx, X_test)[:, 1], np.float32)


def test_kept_outputs_are_renamed_when_they_clash(magic):
    onx, X_cal, y_cal, X_test = magic
    cal = PlattCalibrator().fit(_scores(onx, X_cal)[:, 1], y_cal)
    merged = attach(onx, cal, output="probabilities", column=1, keep_outputs=True)
    names = [o.name for o in merged.graph.output]
    assert names == ["label", "probabilities", "model_label", "model_probabilities"]
    out = run_onnx(merged, {"X": X_test})
    original = run_onnx(onx, {"X": X_test})
    np.testing.assert_array_equal(out["model_probabilities"], original["probabilities"])
    np.testing.assert_array_equal(out["model_label"], original["label"])
    meta = {p.key: p.value for p in merged.metadata_props}
    assert meta["attach_output"] == "probabilities"
    assert meta["attach_column"] == "1"
    assert meta["calibrator"] == "PlattCalibrator"
    assert meta["attach_renamed"] == "label->model_label,probabilities->model_probabilities"


def test_opsets_are_the_models_and_no_unused_ml_domain():
    rng = np.random.default_rng(0)
    model = _hand_model(15)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    s = _scores(model, X, "score")
    cal = BernsteinCalibrator(degree=4).fit(s, (s[:, 0] + rng.normal(size=300) > 0).astype(int))
    merged = attach(model, cal, output="score")
    assert {e.domain: e.version for e in merged.opset_import} == {"": 15}
    assert len(merged.opset_import) == 1


def _hand_model(opset: int) -> onnx.ModelProto:
    """A small onnx.helper graph whose node and tensor names clash with attach's own:
    internal tensors called ``probabilities`` and ``label``, nodes called like ours."""
    rng = np.random.default_rng(opset)
    weights = numpy_helper.from_array(rng.normal(size=(3, 1)).astype(np.float32), "column")
    bias = numpy_helper.from_array(np.array([0.5], np.float32), "shape")
    nodes = [
        helper.make_node("MatMul", ["X", "column"], ["probabilities"], name="adapter"),
        helper.make_node("Add", ["probabilities", "shape"], ["label"], name="bernonnx_Cast"),
        helper.make_node("Identity", ["label"], ["score"], name="cal_Cast"),
    ]
    graph = helper.make_graph(
        nodes,
        "hand",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 1])],
        [weights, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset <= 13 else 8
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_hand_built_graph_other_opset_clashing_names(opset):
    rng = np.random.default_rng(1)
    model = _hand_model(opset)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    s = _scores(model, X, "score")
    y = (s[:, 0] + rng.normal(size=2000) > 0).astype(int)
    cal = BernsteinCalibrator(degree=6).fit(s[:1000], y[:1000])
    merged = attach(model, cal, output="score", keep_outputs=True)
    assert {e.domain: e.version for e in merged.opset_import} == {"": max(opset, 13)}
    out = _check(merged, cal, X, s, np.float32)
    np.testing.assert_array_equal(out["score"], s)


def test_multi_score_calibrator_reads_the_whole_output():
    from bernonnx import MultivariateBernsteinCalibrator

    rng = np.random.default_rng(2)
    weights = numpy_helper.from_array(rng.normal(size=(3, 2)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["scores"])],
        "two_scores",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 2])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    X = rng.normal(size=(1500, 3)).astype(np.float32)
    S = _scores(model, X, "scores")
    y = (S.sum(axis=1) + rng.normal(size=1500) > 0).astype(int)
    cal = MultivariateBernsteinCalibrator().fit(S[:1000], y[:1000])
    merged = attach(model, cal, output="scores")
    _check(merged, cal, X, S, np.float32)


@pytest.fixture(scope="module")
def genhlth():
    """A float64 multinomial LogisticRegression on diabetes ``GenHlth`` (5 classes),
    exported with its raw scores: the (N, 5) logits."""
    X, y = _data("diabetes", task="multiclass")
    X = X.to_numpy(dtype=np.float64)
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    model.fit(X_train, y_train)
    onx = skl2onnx_to_onnx(
        model,
        X_train[:1],
        options={LogisticRegression: {"zipmap": False, "raw_scores": True}},
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    return onx, X_cal, y_cal, X_test


@pytest.mark.parametrize("input_kind", ["logits", "proba"])
def test_multiclass_temperature_parity_on_every_row(genhlth, input_kind):
    onx, X_cal, y_cal, X_test = genhlth
    scores_cal, scores_test = _scores(onx, X_cal), _scores(onx, X_test)
    assert scores_cal.dtype == np.float64 and scores_cal.shape[1] == 5
    if input_kind == "proba":
        from scipy.special import softmax

        scores_cal, scores_test = softmax(scores_cal, axis=1), softmax(scores_test, axis=1)
        onx = _append_softmax(onx)
    output = "proba" if input_kind == "proba" else "probabilities"
    cal = TemperatureCalibrator(input=input_kind).fit(scores_cal, y_cal)
    merged = attach(onx, cal, output=output)
    out = run_onnx(merged, {"X": X_test})
    expected = cal.predict_proba(_scores(onx, X_test, output))
    np.testing.assert_allclose(out["probabilities"], expected, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(out["label"], cal.classes_[np.argmax(expected, axis=1)])
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, atol=1e-12)


def _append_softmax(onx):
    """The model with one more output, ``proba``: the softmax of its logits."""
    model = onnx.ModelProto()
    model.CopyFrom(onx)
    model.graph.node.append(
        helper.make_node("Softmax", ["probabilities"], ["proba"], axis=1, name="softmax")
    )
    model.graph.output.append(
        helper.make_tensor_value_info("proba", TensorProto.DOUBLE, [None, 5])
    )
    return model


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"output": "nope", "column": 1}, "output must name one of the model's outputs"),
        ({"output": "label", "column": 1}, "must be a float or double tensor"),
        ({"output": "probabilities"}, "pass column="),
        ({"output": "probabilities", "column": 2}, "out of range"),
        ({"output": "probabilities", "column": 1.0}, "column must be an int"),
    ],
)
def test_bad_requests_are_named(magic, kwargs, match):
    onx, X_cal, y_cal, _ = magic
    cal = PlattCalibrator().fit(_scores(onx, X_cal)[:, 1], y_cal)
    with pytest.raises(ValueError, match=match):
        attach(onx, cal, **kwargs)


def test_multiclass_calibrator_refuses_a_column(genhlth):
    onx, X_cal, y_cal, _ = genhlth
    cal = TemperatureCalibrator().fit(_scores(onx, X_cal), y_cal)
    with pytest.raises(ValueError, match="column must be None"):
        attach(onx, cal, output="probabilities", column=0)


def test_reads_a_path_and_leaves_the_model_alone(magic, tmp_path):
    onx, X_cal, y_cal, X_test = magic
    before = onx.SerializeToString()
    path = tmp_path / "model.onnx"
    onnx.save(onx, path)
    cal = PlattCalibrator().fit(_scores(onx, X_cal)[:, 1], y_cal)
    merged = attach(str(path), cal, output="probabilities", column=-1)
    assert onx.SerializeToString() == before
    _check(merged, cal, X_test, _scores(onx, X_test)[:, 1], np.float32)


def test_attach_is_lazy_and_public():
    import subprocess
    import sys

    code = (
        "import sys, bernonnx\n"
        "assert 'onnx' not in sys.modules and 'skl2onnx' not in sys.modules\n"
        "from bernonnx import attach\n"
        "assert callable(attach) and attach.__name__ == 'attach'\n"
        "assert 'attach' in bernonnx.__all__ and 'attach' in dir(bernonnx)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
