"""Deployment artefacts: Triton repositories, ORT-format files, Node.js/WASM parity.

The graphs are plain skl2onnx exports (zipmap=False) of small scikit-learn classifiers;
the library's own converters plug into the same tests later.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from skl2onnx import to_onnx
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC, LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.deploy import run_onnx, to_ort_format, write_triton_repository
from bernonnx.deploy import triton as deploy
from bernonnx.export import to_onnx as bernonnx_to_onnx

NODE_DIR = Path(__file__).parent / "node"
NODE_PACKAGES = ("onnxruntime-node", "onnxruntime-web")
NODE_INSTALL_HINT = "run `cd tests/node && ONNXRUNTIME_NODE_INSTALL=skip npm ci`"

#: Largest |difference| allowed between two runtimes, per floating dtype: a few ulps at
#: probabilities of order 1 (float32 ulp(1) = 1.2e-7, float64 2.2e-16).
TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}

N_FEATURES = 4


# --------------------------------------------------------------------------- models


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=400,
        n_features=N_FEATURES,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    # Held-out rows, plus rows far outside the training range where probabilities
    # saturate and rounding differences would show.
    X_eval = np.vstack([X[300:], 25.0 * X[300:310]])
    return X[:300], y[:300], X_eval


def _export(estimator, X, dtype):
    if isinstance(estimator, CalibratedClassifier):
        return bernonnx_to_onnx(estimator, X[:1].astype(dtype), dtype=dtype)
    return to_onnx(estimator, X[:1].astype(dtype), options={id(estimator): {"zipmap": False}})


# name -> (builder(X, y) -> fitted estimator, input dtype, label dtype, n_classes)
MODELS = {
    "logreg_binary_f32": ("logreg_binary", np.float32, np.int64, 2),
    "logreg_binary_f64": ("logreg_binary", np.float64, np.int64, 2),
    "logreg_3class_f32": ("logreg", np.float32, np.int64, 3),
    "logreg_3class_f64": ("logreg", np.float64, np.int64, 3),
    "forest_3class_f32": ("forest", np.float32, np.int64, 3),
    "forest_strings_f32": ("forest_strings", np.float32, np.str_, 3),
    # bernonnx graphs: base model(s) + Bernstein calibrators in one graph
    "bernstein_binary_f32": ("calibrated_binary", np.float32, np.int64, 2),
    "bernstein_3class_f64": ("calibrated_nb", np.float64, np.int64, 3),
    "bernstein_strings_f32": ("calibrated_strings", np.float32, np.str_, 3),
    # exact graphs with a Loop over row blocks and CumSum (SVC), CumSum over trees (boosting)
    "svc_binary_f64": ("calibrated_svc", np.float64, np.int64, 2),
    "boosting_binary_f32": ("calibrated_boosting", np.float32, np.int64, 2),
}


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _ = data
    return {
        "logreg_binary": LogisticRegression(max_iter=1000).fit(X, (y == 1).astype(int)),
        "logreg": LogisticRegression(max_iter=1000).fit(X, y),
        "forest": RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0).fit(X, y),
        "forest_strings": RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0).fit(
            X, np.array(["setosa", "versicolor", "virginica"])[y]
        ),
        "calibrated_binary": CalibratedClassifier(LogisticRegression(), cv=3).fit(
            X, (y == 1).astype(int)
        ),
        # GaussianNB computes in float64 in a double graph (tree ensembles do not)
        "calibrated_nb": CalibratedClassifier(
            GaussianNB(),
            BernsteinCalibrator(degree=8),
            cv=3,
            log_odds=True,
        ).fit(X, y),
        "calibrated_strings": CalibratedClassifier(
            LinearSVC(), BernsteinCalibrator(degree=6), cv=3
        ).fit(X, np.array(["setosa", "versicolor", "virginica"])[y]),
        "calibrated_svc": CalibratedClassifier(SVC(), cv=3).fit(X, (y == 1).astype(int)),
        "calibrated_boosting": CalibratedClassifier(
            GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0), cv=3
        ).fit(X, (y == 1).astype(int)),
    }


@pytest.fixture(scope="module")
def exported(fitted, data):
    X, _, _ = data
    return {
        name: _export(fitted[estimator], X, dtype)
        for name, (estimator, dtype, _, _) in MODELS.items()
    }


def _feeds(model_name, data):
    dtype = MODELS[model_name][1]
    return {"X": data[2].astype(dtype)}


def test_double_export_is_a_double_graph(exported):
    # The float64 cases must really exercise float64 arithmetic end to end.
    for name in ("logreg_binary_f64", "logreg_3class_f64"):
        graph = exported[name].graph
        assert graph.input[0].type.tensor_type.elem_type == TensorProto.DOUBLE
        assert graph.output[1].type.tensor_type.elem_type == TensorProto.DOUBLE


# --------------------------------------------------------------------------- run_onnx


def test_run_onnx_returns_outputs_by_name(exported, data, tmp_path):
    model = exported["forest_strings_f32"]
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    from_proto = run_onnx(model, _feeds("forest_strings_f32", data))
    from_path = run_onnx(path, _feeds("forest_strings_f32", data))
    assert list(from_proto) == ["label", "probabilities"]
    assert set(from_proto["label"]) <= {"setosa", "versicolor", "virginica"}
    for name in from_proto:
        np.testing.assert_array_equal(from_proto[name], from_path[name])


def test_run_onnx_rejects_wrong_input_names(exported, data):
    with pytest.raises(ValueError, match=r"inputs.*missing \['X'\].*unknown \['x'\]"):
        run_onnx(exported["logreg_3class_f32"], {"x": data[2].astype(np.float32)})
    with pytest.raises(ValueError, match="inputs must be a mapping"):
        run_onnx(exported["logreg_3class_f32"], [data[2].astype(np.float32)])


# --------------------------------------------------------------------------- Triton


def _triton_config(folder: Path):
    config_class = deploy._triton_model_config_class()
    if config_class is None:
        pytest.skip(
            "tritonclient is not installed (pip install tritonclient): config.pbtxt "
            "cannot be parsed with Triton's ModelConfig schema"
        )
    from google.protobuf import text_format

    return text_format.Parse((folder / "config.pbtxt").read_text(), config_class())


def _tiny_graph(shape, opset=17):
    graph = helper.make_graph(
        [helper.make_node("Neg", ["X"], ["Y"])],
        "neg",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_triton_config_matches_graph(model_name, exported, tmp_path):
    _, dtype, label_dtype, n_classes = MODELS[model_name]
    folder = write_triton_repository(exported[model_name], tmp_path, model_name)
    config = _triton_config(folder)
    fp = {np.float32: "TYPE_FP32", np.float64: "TYPE_FP64"}[dtype]
    label = {np.int64: "TYPE_INT64", np.str_: "TYPE_STRING"}[label_dtype]
    data_types = config.DESCRIPTOR.file.enum_types_by_name["DataType"]
    kinds = config.instance_group.add().DESCRIPTOR.enum_types_by_name["Kind"]
    del config.instance_group[-1]

    def summary(entry):
        reshape = list(entry.reshape.shape) if entry.HasField("reshape") else None
        return (
            entry.name,
            data_types.values_by_number[entry.data_type].name,
            list(entry.dims),
            reshape,
        )

    assert config.name == model_name
    assert config.backend == "onnxruntime"
    assert config.max_batch_size == 1024
    assert [summary(i) for i in config.input] == [("X", fp, [N_FEATURES], None)]
    assert [summary(o) for o in config.output] == [
        ("label", label, [1], []),
        ("probabilities", fp, [n_classes], None),
    ]
    assert config.HasField("dynamic_batching")
    assert [(g.count, kinds.values_by_number[g.kind].name) for g in config.instance_group] == [
        (1, "KIND_CPU")
    ]


@pytest.mark.parametrize("model_name", ["logreg_3class_f64", "forest_strings_f32"])
def test_triton_layout_and_model_bytes(model_name, exported, tmp_path):
    model = exported[model_name]
    folder = write_triton_repository(model, tmp_path / "repo", "calibrated", version=3)
    assert folder == tmp_path / "repo" / "calibrated"
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    assert files == ["3", "3/model.onnx", "config.pbtxt"]
    assert (folder / "3" / "model.onnx").read_bytes() == model.SerializeToString()
    assert 'name: "calibrated"' in (folder / "config.pbtxt").read_text()

    # A path is copied byte for byte, whatever onnx would re-serialise.
    exported_file = tmp_path / "exported.onnx"
    exported_file.write_bytes(model.SerializeToString())
    folder = write_triton_repository(exported_file, tmp_path / "repo2", "from_path")
    assert (folder / "1" / "model.onnx").read_bytes() == exported_file.read_bytes()


def test_triton_refuses_zipmap(fitted, data, tmp_path):
    zipmap = to_onnx(fitted["logreg"], data[0][:1].astype(np.float32))
    assert zipmap.graph.output[1].type.HasField("sequence_type")
    with pytest.raises(ValueError, match=r"'output_probability'.*zipmap=False"):
        write_triton_repository(zipmap, tmp_path, "zipmap")
    assert not (tmp_path / "zipmap").exists()


def test_triton_fixed_leading_dimension(tmp_path):
    fixed = _tiny_graph([1, N_FEATURES])
    with pytest.raises(ValueError, match=r"'X'.*first dimension.*max_batch_size=0"):
        write_triton_repository(fixed, tmp_path, "fixed")
    assert not (tmp_path / "fixed").exists()
    folder = write_triton_repository(fixed, tmp_path, "fixed", max_batch_size=0)
    config = _triton_config(folder)
    assert config.max_batch_size == 0
    assert [list(t.dims) for t in (*config.input, *config.output)] == [[1, N_FEATURES]] * 2
    # No batch dimension, nothing for the dynamic batcher to stack along.
    assert not config.HasField("dynamic_batching")


def test_triton_unbatched_keeps_full_shapes(exported, tmp_path):
    folder = write_triton_repository(
        exported["logreg_3class_f32"], tmp_path, "m", max_batch_size=0
    )
    config = _triton_config(folder)
    assert [list(t.dims) for t in config.input] == [[-1, N_FEATURES]]
    assert [(list(t.dims), t.HasField("reshape")) for t in config.output] == [
        ([-1], False),
        ([-1, 3], False),
    ]


def test_triton_options(exported, tmp_path):
    folder = write_triton_repository(
        exported["logreg_binary_f32"],
        tmp_path,
        "m",
        max_batch_size=8,
        version=2,
        dynamic_batching=False,
        instance_count=3,
    )
    assert (folder / "2" / "model.onnx").is_file()
    config = _triton_config(folder)
    assert config.max_batch_size == 8
    assert not config.HasField("dynamic_batching")
    assert [g.count for g in config.instance_group] == [3]


@pytest.mark.parametrize("name", ["", "a/b", "a\\b", "..", ".", " padded", "new\nline"])
def test_triton_refuses_unusable_names(name, exported, tmp_path):
    with pytest.raises(ValueError, match="name must be"):
        write_triton_repository(exported["logreg_3class_f32"], tmp_path / "repo", name)
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        ({"max_batch_size": -1}, "max_batch_size"),
        ({"version": 0}, "version"),
        ({"instance_count": 0}, "instance_count"),
        ({"instance_count": True}, "instance_count"),
    ],
)
def test_triton_refuses_bad_integers(kwargs, argname, exported, tmp_path):
    with pytest.raises(ValueError, match=argname):
        write_triton_repository(exported["logreg_3class_f32"], tmp_path, "m", **kwargs)


def test_triton_quotes_tensor_names(tmp_path):
    model = _tiny_graph(["N", 2])
    model.graph.input[0].name = 'we"ird\\name'
    model.graph.node[0].input[0] = 'we"ird\\name'
    folder = write_triton_repository(model, tmp_path, "m")
    assert [t.name for t in _triton_config(folder).input] == ['we"ird\\name']


def test_triton_schema_validation_catches_bad_config(exported, tmp_path, monkeypatch):
    if deploy._triton_model_config_class() is None:
        pytest.skip("tritonclient is not installed (pip install tritonclient): nothing validates")
    bad_config = 'name: "m"\nbackend: "onnxruntime"\nbogus: 1\n'
    monkeypatch.setattr(deploy, "_triton_config_text", lambda *args, **kwargs: bad_config)
    with pytest.raises(RuntimeError, match="bogus"):
        write_triton_repository(exported["logreg_3class_f32"], tmp_path, "m")
    assert not (tmp_path / "m").exists()


# --------------------------------------------------------------------------- ORT format


def _assert_same_outputs(actual, expected, tolerance=None):
    assert list(actual) == list(expected)
    for name, want in expected.items():
        got = actual[name]
        assert got.dtype == want.dtype, name
        assert got.shape == want.shape, name
        if want.dtype.kind == "f":
            atol = TOLERANCE[want.dtype] if tolerance is None else tolerance
            np.testing.assert_allclose(got, want, rtol=0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_to_ort_format_matches_onnx(model_name, exported, data, tmp_path):
    model = exported[model_name]
    paths = to_ort_format(model, tmp_path / "ort")
    assert paths == {
        "ort": tmp_path / "ort" / "model.ort",
        "config": tmp_path / "ort" / "model.required_operators.config",
    }
    feeds = _feeds(model_name, data)
    _assert_same_outputs(run_onnx(paths["ort"], feeds), run_onnx(model, feeds), tolerance=1e-7)
    operators = [
        line
        for line in paths["config"].read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert operators, "required_operators config lists no operator"


def test_to_ort_format_from_path_and_runtime_style(exported, data, tmp_path):
    source = tmp_path / "calibrated.onnx"
    source.write_bytes(exported["forest_3class_f32"].SerializeToString())
    fixed = to_ort_format(source, tmp_path / "out")
    assert fixed["ort"] == tmp_path / "out" / "calibrated.ort"
    runtime = to_ort_format(source, tmp_path / "out", optimization_style="Runtime")
    assert runtime == {
        "ort": tmp_path / "out" / "calibrated.with_runtime_opt.ort",
        "config": tmp_path / "out" / "calibrated.required_operators.with_runtime_opt.config",
    }
    feeds = _feeds("forest_3class_f32", data)
    expected = run_onnx(source, feeds)
    for paths in (fixed, runtime):
        assert paths["config"].stat().st_size > 0
        _assert_same_outputs(run_onnx(paths["ort"], feeds), expected, tolerance=1e-7)


def test_to_ort_format_reports_converter_failure(tmp_path):
    model = _tiny_graph(["N", 2])
    model.graph.node[0].op_type = "NoSuchOp"
    model.graph.node[0].domain = "example.invalid"
    model.opset_import.append(helper.make_opsetid("example.invalid", 1))
    with pytest.raises(RuntimeError, match=r"convert_onnx_models_to_ort failed(.|\n)*NoSuchOp"):
        to_ort_format(model, tmp_path)


def test_to_ort_format_rejects_unknown_style(exported, tmp_path):
    with pytest.raises(ValueError, match="optimization_style"):
        to_ort_format(exported["logreg_3class_f32"], tmp_path, optimization_style="fixed")


# --------------------------------------------------------------------------- Node.js


def _node_skip_reason() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not on PATH: the Node.js parity tests need Node.js >= 18"
    missing = [
        package
        for package in NODE_PACKAGES
        if not (NODE_DIR / "node_modules" / package / "package.json").is_file()
    ]
    if missing:
        return f"tests/node/node_modules lacks {', '.join(missing)}: {NODE_INSTALL_HINT}"
    return None


@pytest.fixture(scope="module")
def node_runner():
    reason = _node_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    return NODE_DIR / "parity.mjs"


def _encode(array: np.ndarray) -> dict:
    """The parity.mjs JSON form of an array (see the header of tests/node/parity.mjs)."""
    array = np.asarray(array)
    flat = array.ravel().tolist()
    if array.dtype.kind == "f":
        # float32 -> Python float is exact; JSON has no NaN/Infinity literals.
        data = [
            v if math.isfinite(v) else repr(v).replace("inf", "Infinity").replace("nan", "NaN")
            for v in flat
        ]
        dtype = array.dtype.name
    elif array.dtype.kind in "US" or array.dtype == object:
        data, dtype = [str(v) for v in flat], "string"
    elif array.dtype in (np.int64, np.uint64):
        data, dtype = [str(v) for v in flat], array.dtype.name  # beyond 2**53
    else:
        data, dtype = flat, array.dtype.name
    return {"dtype": dtype, "shape": list(array.shape), "data": data}


def _decode(spec: dict) -> np.ndarray:
    dtype, shape, data = spec["dtype"], spec["shape"], spec["data"]
    if dtype in ("float32", "float64"):
        # float() reads "NaN", "Infinity", "-Infinity" and "-0".
        values = np.array([float(v) for v in data], dtype=np.float64).astype(dtype)
    elif dtype in ("int64", "uint64"):
        values = np.array([int(v) for v in data], dtype=dtype)
    elif dtype == "string":
        values = np.array(data, dtype=object)
    else:
        values = np.array(data, dtype=dtype)
    return values.reshape(shape)


def _run_node(script: Path, runtime: str, model, inputs: dict, workdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    model_path = workdir / "model.onnx"
    model_path.write_bytes(model.SerializeToString())
    inputs_path, outputs_path = workdir / "inputs.json", workdir / "outputs.json"
    inputs_path.write_text(json.dumps({k: _encode(v) for k, v in inputs.items()}))
    result = subprocess.run(
        ["node", script.name, runtime, str(model_path), str(inputs_path), str(outputs_path)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"parity.mjs {runtime} failed:\n{result.stderr}"
    return {k: _decode(v) for k, v in json.loads(outputs_path.read_text()).items()}


@pytest.mark.parametrize("runtime", ["node", "web"])
@pytest.mark.parametrize("model_name", list(MODELS))
def test_node_parity(model_name, runtime, node_runner, exported, data, tmp_path):
    model = exported[model_name]
    feeds = _feeds(model_name, data)
    expected = run_onnx(model, feeds)
    actual = _run_node(node_runner, runtime, model, feeds, tmp_path)
    _assert_same_outputs(actual, expected)


@pytest.mark.parametrize("runtime", ["node", "web"])
@pytest.mark.parametrize("model_name", [m for m in MODELS if m.startswith("bernstein")])
def test_node_gives_pythons_probabilities(
    model_name, runtime, node_runner, fitted, exported, data, tmp_path
):
    """Without Python: Node reproduces scikit-learn + bernonnx's own predict_proba."""
    estimator, dtype = fitted[MODELS[model_name][0]], MODELS[model_name][1]
    feeds = _feeds(model_name, data)
    actual = _run_node(node_runner, runtime, exported[model_name], feeds, tmp_path)
    X = feeds["X"]
    np.testing.assert_allclose(
        actual["probabilities"],
        estimator.predict_proba(X),
        rtol=0,
        atol=TOLERANCE[np.dtype(dtype)],
    )
    np.testing.assert_array_equal(actual["label"], estimator.predict(X))


@pytest.mark.parametrize("runtime", ["node", "web"])
@pytest.mark.parametrize("model_name", ["svc_binary_f64", "bernstein_3class_f64"])
def test_node_runs_the_row_block_loop(
    model_name, runtime, node_runner, fitted, exported, data, tmp_path
):
    """The exact SVC and GaussianNB graphs compute on blocks of rows in a Loop. With more
    rows than a block holds (GaussianNB here: 17,476), Node's and the browser's runtimes
    run the Loop's body, which the other tests' 110 rows never reach, and give Python's
    probabilities."""
    estimator, dtype = fitted[MODELS[model_name][0]], MODELS[model_name][1]
    X_eval = data[2]
    spread = np.linspace(-0.5, 0.5, 400 * len(X_eval))[:, None]
    X = (np.repeat(X_eval, 400, axis=0) + spread).astype(dtype)
    assert any(node.op_type == "Loop" for node in exported[model_name].graph.node)
    actual = _run_node(node_runner, runtime, exported[model_name], {"X": X}, tmp_path)
    np.testing.assert_allclose(
        actual["probabilities"],
        estimator.predict_proba(X),
        rtol=0,
        atol=TOLERANCE[np.dtype(dtype)],
    )
    np.testing.assert_array_equal(actual["label"], estimator.predict(X))


@pytest.mark.parametrize("runtime", ["node", "web"])
def test_node_json_round_trip_is_exact(runtime, node_runner, tmp_path):
    # Identity over every dtype parity.mjs handles, with the values a naive JSON
    # encoding would damage: non-finite floats, -0.0, subnormals, int64 beyond 2**53.
    values = {
        "f32": np.array([[np.nan, np.inf], [-np.inf, -0.0], [1e-45, np.pi]], dtype=np.float32),
        "f64": np.array([np.nan, -np.inf, -0.0, 5e-324, np.pi, 1e308], dtype=np.float64),
        "i64": np.array([2**62 + 1, -(2**63), 2**53 + 1, 0], dtype=np.int64),
        "str": np.array(["", "é\u00e9", 'quote"\\', "multi\nline"], dtype=object),
        "flag": np.array([True, False], dtype=bool),
    }
    elem = {
        "f32": TensorProto.FLOAT,
        "f64": TensorProto.DOUBLE,
        "i64": TensorProto.INT64,
        "str": TensorProto.STRING,
        "flag": TensorProto.BOOL,
    }
    graph = helper.make_graph(
        [helper.make_node("Identity", [k], [k + "_out"]) for k in values],
        "identity",
        [helper.make_tensor_value_info(k, elem[k], list(v.shape)) for k, v in values.items()],
        [
            helper.make_tensor_value_info(k + "_out", elem[k], list(v.shape))
            for k, v in values.items()
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    actual = _run_node(node_runner, runtime, model, values, tmp_path)
    for key, want in values.items():
        got = actual[key + "_out"]
        assert got.shape == want.shape, key
        if want.dtype.kind == "f":
            assert got.dtype == want.dtype, key
            np.testing.assert_array_equal(got, want, err_msg=key)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=key)
        else:
            assert got.tolist() == want.tolist(), key
