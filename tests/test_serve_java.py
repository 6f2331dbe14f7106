"""examples/serve_java: the Java program gives Python's probabilities, row for row.

The program calls onnxruntime's C API from the JVM through JNA, on the library the
onnxruntime wheel ships, the one Python's onnxruntime loads: so besides Python's
``predict_proba`` (float64 1e-9, float32 1e-6, labels identical), its probabilities and
Venn-Abers intervals must equal Python's onnxruntime bit for bit. It reaches each C
function by its position in onnxruntime's ``struct OrtApi``: those positions are checked
against the header the C example builds with (``examples/serve_c/get_headers.sh``).

Built with ``javac`` against the JNA jar: ``$BERNONNX_JNA_JAR``, else the newest
``jna-<version>.jar`` in Maven's local repository (``~/.m2``), else Debian's
``libjna-java`` (``/usr/share/java/jna.jar``). Without a JDK or a JNA jar the tests skip,
naming which is missing; under CI (``CI=true``, where ``.ci/run`` installs both) they fail.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pandas as pd
import pytest
from _parity import PROMISED, typed
from _serving import (
    CASE_NAMES,
    case,
    header_folder,
    needs,
    read_output_csv,
    sets_case,
    wheel_library,
)
from onnx import TensorProto, helper
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import CalibratedClassifier, VennAbersCalibrator
from bernonnx.datasets import load_diabetes_brfss, load_magic_telescope
from bernonnx.deploy import run_onnx
from bernonnx.export import onnx_inputs, to_onnx

ROOT = Path(__file__).resolve().parents[1]
#: the xdist worker of the serving modules: javac once, and tests/_serving.py's graphs
#: (cached per process) fitted once for the C, web, mobile and Java tests
pytestmark = pytest.mark.xdist_group("serving")
EXAMPLE = ROOT / "examples" / "serve_java"
SOURCES = ["OrtApi.java", "Serve.java"]
MAVEN_JNA = Path.home() / ".m2" / "repository" / "net" / "java" / "dev" / "jna" / "jna"
DEBIAN_JNA = Path("/usr/share/java/jna.jar")
#: rows fitted and served by the quick cases (the slow test serves tests/_serving.py's)
FIT_ROWS, TEST_ROWS = 2000, 1000


def _version(text: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in text.split("."))


def jna_jar() -> Path | None:
    """$BERNONNX_JNA_JAR, else the newest JNA in ~/.m2, else Debian's libjna-java."""
    given = os.environ.get("BERNONNX_JNA_JAR")
    if given:
        return Path(given) if Path(given).is_file() else None
    jars = [d / f"jna-{d.name}.jar" for d in MAVEN_JNA.glob("*")] if MAVEN_JNA.is_dir() else []
    jars = sorted((j for j in jars if j.is_file()), key=lambda j: _version(j.parent.name))
    if jars:
        return jars[-1]
    return DEBIAN_JNA if DEBIAN_JNA.is_file() else None


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """``run(*args, check=True, env=None, jvm=())``: the program compiled by javac, then
    run (``jvm``: options for the JVM, before the class path)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        needs("no JDK: javac and java are not on PATH (apt-get install openjdk-17-jdk-headless)")
    jar = jna_jar()
    if jar is None:
        where = os.environ.get("BERNONNX_JNA_JAR") or f"{MAVEN_JNA}/<version>/ or {DEBIAN_JNA}"
        needs(f"no JNA jar: none at {where} (set BERNONNX_JNA_JAR, or apt-get install "
              "libjna-java)")  # fmt: skip
    classes = tmp_path_factory.mktemp("serve_java")
    done = subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-cp", str(jar), "-d", str(classes)]
        + [str(EXAMPLE / name) for name in SOURCES],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]

    def run(*args, check=True, env=None, jvm=()) -> subprocess.CompletedProcess:
        environment = {**os.environ, "ONNXRUNTIME_LIB": str(wheel_library()), **(env or {})}
        java = ["java", f"-XX:ErrorFile={classes}/hs_err_%p.log", *jvm]  # crash logs: not here
        done = subprocess.run(
            [*java, "-cp", f"{jar}{os.pathsep}{classes}", "Serve", *map(str, args)],
            capture_output=True, text=True, env=environment, timeout=300, check=False,
        )  # fmt: skip
        if check:
            assert done.returncode == 0, (done.stderr + done.stdout)[-3000:]
        return done

    return run


def read_java_csv(text: str, dtype) -> tuple[np.ndarray, np.ndarray, dict]:
    """The program's CSV: labels (text), probabilities at ``dtype``, and each further
    output as a float64 (N, values per row) array under its name."""
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert header[0] == "label"
    width = sum(1 for name in header if re.fullmatch(r"p\d+", name))
    assert header[1 : 1 + width] == [f"p{k}" for k in range(width)]
    labels = np.array([r[0] for r in body], dtype=object)
    # float64 first: a float widened to double prints exactly, then rounds back to float32
    proba = np.array([[float(v) for v in r[1 : 1 + width]] for r in body]).astype(dtype)
    extra: dict[str, list[int]] = {}
    for j, name in enumerate(header[1 + width :], start=1 + width):
        output, index = re.fullmatch(r"(.+)\[(\d+)\]", name).groups()
        assert int(index) == len(extra.setdefault(output, []))
        extra[output].append(j)
    values = {k: np.array([[float(r[j]) for j in js] for r in body]) for k, js in extra.items()}
    return labels, proba, values


# ------------------------------------------------- the graphs: default and Venn-Abers


def _split(X, y):
    order = np.random.default_rng(0).permutation(len(y))
    fit, test = order[:FIT_ROWS], order[FIT_ROWS : FIT_ROWS + TEST_ROWS]
    return X.iloc[fit], np.asarray(y)[fit], X.iloc[test]


def _venn_abers():
    return CalibratedClassifier(
        make_pipeline(StandardScaler(), LogisticRegression()),
        VennAbersCalibrator(),
        ensemble=False,
    )


@cache
def quick_case(name: str) -> dict:
    """A graph exported with to_onnx's defaults and Python's answers on the served rows:
    the magic telescope (binary, labels ``g``/``h``) and the diabetes table's five
    ``GenHlth`` classes, as pandas reads them (a DataFrame: one input ``X`` whose column
    order the graph's metadata records); ``CalibratedClassifier``'s default model or a
    Venn-Abers one (the extra output ``interval``); float64 and float32 graphs."""
    kind, table, dtype = name.split("_")
    if table == "magic":
        X, y = load_magic_telescope()
    else:
        X, _ = load_diabetes_brfss()
        X = X.iloc[:20_000]
        y = X.pop("GenHlth")
    X_fit, y_fit, X_test = _split(X, y)
    clf = (_venn_abers() if kind == "venn" else CalibratedClassifier()).fit(X_fit, y_fit)
    dtype = np.float32 if dtype == "f32" else np.float64
    X_test = typed(X_test, dtype)
    onx = to_onnx(clf, typed(X_fit.iloc[:5], dtype), dtype=dtype)
    ort = run_onnx(onx, onnx_inputs(onx, X_test))
    labels = np.asarray(clf.predict(X_test))
    out = {"onx": onx, "X": X_test, "dtype": dtype, "ort": ort, "labels": labels.astype(str)}
    out["proba"] = clf.predict_proba(X_test)
    if kind == "venn":
        out["interval"] = clf.predict_interval(X_test)
    return out


QUICK = ["default_magic_f64", "default_magic_f32", "default_diabetes_f64", "default_diabetes_f32",
         "venn_magic_f64", "venn_magic_f32", "venn_diabetes_f64"]  # fmt: skip


def _serve_quick(name, program, tmp_path, *options, jvm=()):
    c = quick_case(name)
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c["onx"], str(model))
    c["X"].to_csv(rows, index=False)
    return c, program(model, rows, "-", *options, jvm=jvm).stdout


@pytest.mark.parametrize("name", QUICK)
def test_program_gives_pythons_probabilities_and_intervals(name, program, tmp_path):
    c, text = _serve_quick(name, program, tmp_path, "--batch", "300")  # 4 runs of the session
    labels, proba, extra = read_java_csv(text, c["dtype"])
    assert proba.shape == c["proba"].shape == (TEST_ROWS, proba.shape[1])
    assert np.abs(proba - c["proba"]).max() <= PROMISED[np.dtype(c["dtype"])]
    assert (labels == c["labels"]).all()
    assert np.array_equal(proba, c["ort"]["probabilities"])  # the same library: the same bits
    # every output besides label and probabilities comes out, in graph order
    assert list(extra) == [o.name for o in c["onx"].graph.output][2:]
    if "interval" in c:
        interval = extra["interval"].reshape(c["interval"].shape)  # (N, 2) or (N, K, 2)
        assert np.abs(interval - c["interval"]).max() <= PROMISED[np.dtype(c["dtype"])]
        assert np.array_equal(interval, c["ort"]["interval"])


def test_program_prints_the_prediction_sets(program, tmp_path):
    """A ConformalClassifier's graph (APS sets around the five-class GenHlth model, the
    one the C, C++ and web tests serve): the boolean ``prediction_set`` comes out as
    ``prediction_set[k]`` columns of 0 and 1, every row's set the one Python gives."""
    onx, rows, expected, proba = sets_case()
    model, path = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(onx, str(model))
    rows.to_csv(path, index=False)
    _, got, extra = read_java_csv(program(model, path, "-", "--batch", "700").stdout, np.float64)
    assert np.abs(got - proba).max() <= PROMISED[np.dtype(np.float64)]
    assert set(np.unique(extra["prediction_set"])) <= {0.0, 1.0}
    np.testing.assert_array_equal(extra["prediction_set"] == 1.0, expected)


def test_batches_are_runs_of_the_session(program, tmp_path):
    """One run over all rows or one per 7 rows: each batch's numbers are those Python's
    onnxruntime gives on the same 7 rows, bit for bit (onnxruntime's kernels may round
    a batch of 7 differently from a batch of 1,000, within the tolerance)."""
    c, whole = _serve_quick("venn_diabetes_f64", program, tmp_path)
    _, batched = _serve_quick("venn_diabetes_f64", program, tmp_path, "--batch", "7")
    assert len(batched.splitlines()) == TEST_ROWS + 1
    labels, proba, extra = read_java_csv(batched, np.float64)
    options = onnxruntime.SessionOptions()  # as run_onnx: one thread, sequential
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    session = onnxruntime.InferenceSession(c["onx"].SerializeToString(), options)
    feed = onnx_inputs(c["onx"], c["X"])["X"]
    for start in range(0, TEST_ROWS, 7):
        _, p, interval = session.run(None, {"X": feed[start : start + 7]})
        assert np.array_equal(proba[start : start + 7], p)
        assert np.array_equal(extra["interval"][start : start + 7], interval.reshape(-1, 10))
    _, whole_proba, _ = read_java_csv(whole, np.float64)
    assert np.abs(proba - whole_proba).max() <= PROMISED[np.dtype(np.float64)]
    assert (labels == c["labels"]).all()


def test_library_outlives_the_garbage_collector(program, tmp_path):
    """JNA holds a loaded library weakly and closes it once the collector finds it
    unreachable; the program once kept no reference, and a collection mid-run left the
    function table pointing into unmapped memory (a JVM crash under CI=true). An 8 MB heap
    collects many times while 1,000 rows are served in batches of 7."""
    c, text = _serve_quick("default_magic_f64", program, tmp_path, "--batch", "7", jvm=["-Xmx8m"])
    labels, proba, _ = read_java_csv(text, np.float64)
    assert proba.shape == c["proba"].shape
    assert np.abs(proba - c["proba"]).max() <= PROMISED[np.dtype(np.float64)]
    assert (labels == c["labels"]).all()


def test_outputs_printed_by_element_type(program, tmp_path):
    """Extra outputs of any element type (a conformal ``prediction_set`` is bool) come out
    as Python's onnxruntime gives them: booleans and integers as integers, floats exact."""
    x = helper.make_tensor_value_info("X", TensorProto.DOUBLE, ["N", 3])
    nodes = [
        helper.make_node("Softmax", ["X"], ["probabilities"], axis=1),
        helper.make_node("ArgMax", ["X"], ["label"], axis=1, keepdims=0),
        helper.make_node("Greater", ["X", "zero"], ["prediction_set"]),
        helper.make_node("Cast", ["X"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["X"], ["as_int"], to=TensorProto.INT64),
    ]
    zero = helper.make_tensor("zero", TensorProto.DOUBLE, [], [0.0])
    outputs = [
        helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
        helper.make_tensor_value_info("probabilities", TensorProto.DOUBLE, ["N", 3]),
        helper.make_tensor_value_info("prediction_set", TensorProto.BOOL, ["N", 3]),
        helper.make_tensor_value_info("as_float", TensorProto.FLOAT, ["N", 3]),
        helper.make_tensor_value_info("as_int", TensorProto.INT64, ["N", 3]),
    ]
    graph = helper.make_graph(nodes, "types", [x], outputs, initializer=[zero])
    onx = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model, rows = tmp_path / "types.onnx", tmp_path / "rows.csv"
    onnx.save_model(onx, str(model))
    X = np.random.default_rng(0).normal(scale=10, size=(50, 3))
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(rows, index=False)
    labels, proba, extra = read_java_csv(program(model, rows).stdout, np.float64)
    ort = run_onnx(onx, {"X": X})
    assert (labels == ort["label"].astype(str)).all()
    assert np.array_equal(proba, ort["probabilities"])
    assert list(extra) == ["prediction_set", "as_float", "as_int"]
    assert np.array_equal(extra["prediction_set"], ort["prediction_set"].astype(np.float64))
    assert np.array_equal(extra["as_float"].astype(np.float32), ort["as_float"])
    assert np.array_equal(extra["as_int"], ort["as_int"].astype(np.float64))


# ------------------------------------------------------------ the C API's positions


def header_positions(text: str) -> list[str]:
    """struct OrtApi's members in order, read independently of the Java program's reader."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    body = text[text.index("struct OrtApi {") + len("struct OrtApi {") :]
    depth, members, start = 0, [], 0
    for i, char in enumerate(body):
        depth += char in "({"
        depth -= char == ")"
        if char == "}":
            if depth == 0:
                break
            depth -= 1
        if char == ";" and depth == 0:
            members.append(body[start:i].strip())
            start = i + 1
    names = []
    for member in members:
        found = re.match(r"ORT_API2_STATUS\(\s*(\w+)", member)
        release = re.match(r"ORT_CLASS_RELEASE\(\s*(\w+)", member)
        plain = re.search(r"\(\s*ORT_API_CALL\s*\*\s*(\w+)\s*\)", member)
        names.append(
            found.group(1) if found else "Release" + release.group(1) if release else plain[1]
        )
    return names


def test_api_positions_match_the_header(program, tmp_path):
    """Every OrtApi position the program calls is the one onnxruntime_c_api.h gives."""
    folder = header_folder()
    needs(None if folder else "onnxruntime's C headers are missing: run "
          "`sh examples/serve_c/get_headers.sh build/onnxruntime`")  # fmt: skip
    header = folder / "onnxruntime_c_api.h"
    done = program("--check-header", header, check=False)
    assert done.returncode == 0, done.stderr
    table = [line.split(" ", 1) for line in done.stdout.splitlines()]
    expected = header_positions(header.read_text())
    assert [name for _, name in table] == expected and len(expected) > 200
    assert [int(k) for k, _ in table] == list(range(len(expected)))
    source = (EXAMPLE / "OrtApi.java").read_text()
    enum = source[source.index("enum Fn {") : source.index("final int index;")]
    used = re.findall(r"^\s+(\w+)\((\d+)\)[,;]", enum, flags=re.M)
    assert len(used) > 40
    for name, index in used:
        assert expected.index(name) == int(index), name
    version = re.search(r"#define ORT_API_VERSION (\d+)", header.read_text())[1]
    assert f"API_VERSION = {version};" in source
    # a wrong position is caught: the same check on a header with one function moved
    moved = header.read_text().replace("ORT_API2_STATUS(CreateEnv,", "ORT_API2_STATUS(Moved,", 1)
    changed = tmp_path / "onnxruntime_c_api.h"
    changed.write_text(moved)
    bad = program("--check-header", changed, check=False)
    assert bad.returncode == 1 and "CreateEnv is at -1" in bad.stderr


# ------------------------------------------------------------------- clear errors


def test_errors_name_the_path_or_name(program, tmp_path):
    c = quick_case("default_magic_f64")
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c["onx"], str(model))
    c["X"].iloc[:20].to_csv(rows, index=False)

    def error(*args, code=1, env=None):
        done = program(*args, check=False, env=env)
        assert done.returncode == code, (done.returncode, done.stderr)  # no crash, no trace
        assert "Exception" not in done.stderr
        assert code == 2 or done.stderr.count("\n") == 1  # an error is one line
        return done.stderr

    assert "usage:" in error(model, code=2)
    absent = tmp_path / "absent" / "libonnxruntime.so"
    message = error(model, rows, env={"ONNXRUNTIME_LIB": str(absent)})
    assert f"cannot load onnxruntime from '{absent}' (set ONNXRUNTIME_LIB)" in message
    assert "has no OrtGetApiBase" in error(model, rows, env={"ONNXRUNTIME_LIB": "libm.so.6"})
    assert f"cannot open the model '{tmp_path / 'absent.onnx'}'" in error(
        tmp_path / "absent.onnx", rows
    )
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_text("not a model")
    # onnxruntime's own message, read from its OrtStatus
    assert f"loading the model '{corrupt}': " in error(corrupt, rows)
    assert f"cannot open the CSV file '{tmp_path / 'absent.csv'}'" in error(
        model, tmp_path / "absent.csv"
    )
    # a column the graph's input takes (its metadata names them) is missing
    narrow = tmp_path / "narrow.csv"
    c["X"].iloc[:20].drop(columns=["fAlpha"]).to_csv(narrow, index=False)
    assert "the CSV has no column 'fAlpha', which the graph's input 'X' takes" in error(
        model, narrow
    )
    words = tmp_path / "words.csv"
    frame = c["X"].iloc[:3].astype(object)
    frame.iloc[1, 4] = "abc"
    frame.to_csv(words, index=False)
    assert "row 2, input 'X': 'abc' is not a number" in error(model, words)
    # one input per column: an input name the CSV does not have
    per_column = tmp_path / "per_column.onnx"
    inputs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, ["N", 1]) for n in "ab"]
    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["probabilities"], axis=1),
         helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0)],
        "per_column", inputs,
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("probabilities", TensorProto.DOUBLE, ["N", 2])],
    )  # fmt: skip
    onx = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save_model(onx, str(per_column))
    pd.DataFrame({"a": [0.1, 0.2], "c": [0.9, 0.8]}).to_csv(rows, index=False)
    assert "the CSV has no column 'b', which the graph takes as an input" in error(
        per_column, rows
    )


@pytest.mark.slow  # a second javac
def test_quickstart_script(program, tmp_path):
    """examples/serve_java/quickstart.sh as the docs show it, from a copy of the folder:
    it builds with javac and finds the wheel's library itself."""
    folder = tmp_path / "serve_java"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    c = quick_case("venn_magic_f64")
    model, rows, out = tmp_path / "model.onnx", tmp_path / "rows.csv", tmp_path / "out.csv"
    onnx.save_model(c["onx"], str(model))
    c["X"].to_csv(rows, index=False)
    env = dict(os.environ, BERNONNX_JNA_JAR=str(jna_jar()))
    env.pop("ONNXRUNTIME_LIB", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["sh", str(folder / "quickstart.sh"), str(model), str(rows), str(out)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stderr + done.stdout)[-3000:]
    assert f"serve_java wrote {out}" in done.stdout
    labels, proba, extra = read_java_csv(out.read_text(), np.float64)
    assert np.array_equal(proba, c["ort"]["probabilities"]) and (labels == c["labels"]).all()
    assert np.array_equal(extra["interval"], c["ort"]["interval"])


# ------------------------------------------- every serving graph (shared with C, web)


@pytest.mark.slow
@pytest.mark.parametrize("name", CASE_NAMES)
def test_program_serves_every_serving_graph(name, program, tmp_path):
    """tests/_serving.py's graphs (per-column inputs, strings, booleans, XGBoost): the
    numbers the C program gives, from the JVM."""
    c = case(name)
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c.onx, str(model))
    c.write_csv(rows)
    labels, proba = read_output_csv(program(model, rows, "-", "--batch", "700").stdout, c.dtype)
    assert proba.shape == c.proba.shape
    assert np.abs(proba - c.proba).max() <= PROMISED[c.dtype]
    assert (labels == c.label_text).all()
    assert np.array_equal(proba, c.ort_proba)
