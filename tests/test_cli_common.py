"""One behaviour across ``compare``, ``export`` and ``attach``: the same default method,
the same input formats (one loader), the same report of the graph's inputs, and
``compare``'s rows with several score columns. Data as users hold it: a pandas frame
of int labels, float64 and int score columns, written to CSV and Parquet by pandas."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from _parity import TOLERANCE
from skl2onnx import to_onnx as skl2onnx_to_onnx
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from bernonnx import BernsteinCalibrator
from bernonnx.cli._parser import _build_parser
from bernonnx.deploy import run_onnx

pd = pytest.importorskip("pandas")
N_ROWS = 1200


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A LogisticRegression shipped as ONNX, and a frame of its held-out rows: the label
    (int64), its probability and margin (float64), a bucketed score (int64) and a
    score exact in float32 (multiples of 2^-10), as CSV and (with pyarrow) Parquet."""
    folder = tmp_path_factory.mktemp("common")
    X, y = make_classification(2 * N_ROWS, n_features=8, random_state=3)
    X = X.astype(np.float32)  # the model ships as a float32 graph: its input type
    model = LogisticRegression().fit(X[:N_ROWS], y[:N_ROWS])
    onx = skl2onnx_to_onnx(model, X[:1], options={"zipmap": False}, target_opset=15)
    onnx.save(onx, folder / "model.onnx")
    held_out = X[N_ROWS:]
    proba = run_onnx(onx, {"X": held_out})["probabilities"][:, 1]
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": [f"row-{i}" for i in range(N_ROWS)],
            "y": y[N_ROWS:].astype(np.int64),
            "proba": proba.astype(np.float64),
            "margin": model.decision_function(held_out).astype(np.float64),
            "bucket": np.minimum((proba * 10).astype(np.int64), 9),
            "exact32": rng.integers(-4096, 4096, size=N_ROWS) / 1024.0,
        }
    )
    frame.to_csv(folder / "scores.csv", index=False)
    paths = {"csv": folder / "scores.csv"}
    try:
        frame.to_parquet(folder / "scores.parquet")
        paths["parquet"] = folder / "scores.parquet"
    except ImportError:
        pass
    return folder, paths, held_out


def read_back(path: Path):
    """The frame as a user reads it back with pandas."""
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


@pytest.fixture(params=["csv", "parquet"])
def fmt(request, files):
    if request.param not in files[1]:
        pytest.skip("Parquet needs pyarrow (bernonnx[parquet])")
    return request.param


def feed_call(out: str) -> str:
    (line,) = re.findall(r"^  feed: (.+)$", out, re.M)
    return line


# --------------------------------------------------------------------------- defaults


def test_export_and_attach_default_to_the_library_calibrator(run, files, tmp_path):
    folder, paths, held_out = files
    parser = _build_parser()
    common = [str(paths["csv"]), "--label", "y", "--score", "proba", "--onnx", "x.onnx"]
    export = parser.parse_args(["export", *common])
    attach = parser.parse_args(["attach", "m.onnx", *common, "--output", "probabilities"])
    assert export.method == attach.method == "bernstein"

    frame = read_back(paths["csv"])
    expected = BernsteinCalibrator().fit(frame[["proba"]].to_numpy(), frame["y"].to_numpy())
    out, _ = run("export", *common[:-1], tmp_path / "e.onnx")
    assert "wrote" in out and "BernsteinCalibrator on proba" in out
    session = onnxruntime.InferenceSession(str(tmp_path / "e.onnx"))
    (proba,) = session.run(["probabilities"], {"X": frame[["proba"]].to_numpy()})
    want = expected.predict_proba(frame[["proba"]].to_numpy())
    assert np.max(np.abs(proba - want)) <= TOLERANCE[np.dtype(np.float64)]

    args = ["attach", folder / "model.onnx", *common[:-1], tmp_path / "a.onnx"]
    out, _ = run(*args, "--output", "probabilities", "--column", 1)
    assert "BernsteinCalibrator on output 'probabilities' column 1" in out
    merged = run_onnx(onnx.load(tmp_path / "a.onnx"), {"X": held_out})["probabilities"]
    # the graph reads the model's float32 probabilities, as the file holds them
    model_p = run_onnx(onnx.load(folder / "model.onnx"), {"X": held_out})["probabilities"]
    want = expected.predict_proba(model_p[:, 1:].astype(np.float64))
    assert np.max(np.abs(merged - want)) <= TOLERANCE[np.dtype(np.float32)]


# --------------------------------------------------------------------------- input formats


def test_attach_reads_parquet_as_it_reads_csv(run, files, tmp_path):
    folder, paths, _ = files
    if "parquet" not in paths:
        pytest.skip("Parquet needs pyarrow (bernonnx[parquet])")
    graphs = []
    for key in ("csv", "parquet"):
        path = tmp_path / f"{key}.onnx"
        args = ["attach", folder / "model.onnx", paths[key], "--label", "y", "--score", "proba"]
        run(*args, "--output", "probabilities", "--column", 1, "--method", "platt", "--onnx", path)
        graphs.append(path.read_bytes())
    # the same rows, the same fit, the same graph
    assert graphs[0] == graphs[1]


def test_one_loader_for_every_command():
    """Every command reads its input through ``_files._read_labelled`` (no cycle among
    the command line's modules: tests/test_layers.py)."""
    folder = Path(__import__("bernonnx.cli").cli.__file__).parent
    for command in ("compare", "export", "attach"):
        tree = ast.parse((folder / f"{command}.py").read_text())
        names = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
            for alias in node.names
        }
        assert names & {"_load", "_read_labelled"}, command
        assert not names & {"_read_columns", "_read_parquet"}, command


# --------------------------------------------------------------------------- reporting


def test_export_reports_the_input_type_and_a_feed_that_runs(run, files, fmt, tmp_path):
    _, paths, _ = files
    path = tmp_path / "m.onnx"
    out, _ = run("export", paths[fmt], "--label", "y", "--score", "margin", "--onnx", path)
    assert "  input 'X': double[N, 1]" in out
    assert "  output 'probabilities': double[N, 2]" in out
    assert "--dtype float32 makes a float32 graph when float32 holds every score" in out
    call = feed_call(out)
    assert "'X': scores.astype(np.float64)" in call
    frame = read_back(paths[fmt])
    scores = frame[["margin"]].to_numpy()
    label, proba = eval(call, {"np": np, "onnxruntime": onnxruntime, "scores": scores})
    expected = BernsteinCalibrator().fit(scores, frame["y"].to_numpy()).predict_proba(scores)
    assert np.max(np.abs(proba - expected)) <= TOLERANCE[np.dtype(np.float64)]
    assert np.array_equal(label, np.argmax(expected, axis=1))


def test_export_float32_graph_reports_float_and_casts_in_the_feed(run, files, tmp_path):
    # a test about float32: scores that float32 holds exactly, a float32 graph
    _, paths, _ = files
    path = tmp_path / "m32.onnx"
    args = ["export", paths["csv"], "--label", "y", "--score", "exact32", "--method", "platt"]
    out, _ = run(*args, "--onnx", path, "--dtype", "float32")
    assert "  input 'X': float[N, 1]" in out and "--dtype float64" in out
    call = feed_call(out)
    assert "'X': scores.astype(np.float32)" in call
    frame = read_back(paths["csv"])
    scores = frame[["exact32"]].to_numpy()  # float64 as read: the feed line casts them
    _, proba = eval(call, {"np": np, "onnxruntime": onnxruntime, "scores": scores})
    assert proba.dtype == np.float32
    session = onnxruntime.InferenceSession(str(path))
    with pytest.raises(Exception, match="(?i)type"):
        session.run(None, {"X": scores})  # what the report warns about


def test_attach_reports_the_models_inputs_and_a_feed_that_runs(run, files, fmt, tmp_path):
    folder, paths, held_out = files
    path = tmp_path / "attached.onnx"
    args = ["attach", folder / "model.onnx", paths[fmt], "--label", "y", "--score", "proba"]
    out, _ = run(*args, "--output", "probabilities", "--column", 1, "--onnx", path)
    assert "  input 'X': float[N, 8]" in out
    assert "  output 'probabilities': float[N, 2]" in out
    call = feed_call(out)
    assert "'X': X.astype(np.float32)" in call
    features = held_out.astype(np.float64)  # as a server may hold them
    _, proba = eval(call, {"np": np, "onnxruntime": onnxruntime, "X": features})
    np.testing.assert_array_equal(
        proba, run_onnx(onnx.load(path), {"X": held_out})["probabilities"]
    )


# --------------------------------------------------------------------------- compare


def test_compare_several_scores_of_mixed_kinds_keeps_columns_apart(run, files, tmp_path):
    _, paths, _ = files
    report = tmp_path / "mixed.json"
    args = ["compare", paths["csv"], "--label", "y", "--score", "proba", "--score", "margin"]
    for method in ("uncalibrated", "platt", "isotonic"):
        args += ["--method", method]
    _, err = run(*args, "--format", "json", "--output", report)
    rows = [(r["method"], r["input"]) for r in json.loads(report.read_text())["results"]]
    # per column (the raw probability only where it is one), never the meaningless mean
    assert rows == [
        ("uncalibrated", "proba"),
        ("platt", "proba"),
        ("isotonic", "proba"),
        ("platt", "margin"),
        ("isotonic", "margin"),
    ]
    assert "no mean(proba, margin) rows" in err and "different kinds of score" in err
    assert "margin is not in [0, 1]: uncalibrated skipped there" in err


def test_compare_several_scores_of_one_kind_adds_their_mean(run, files, fmt, tmp_path):
    _, paths, _ = files
    report, plot = tmp_path / "same.json", tmp_path / "same.png"
    args = ["compare", paths[fmt], "--label", "y", "--score", "margin", "--score", "bucket"]
    args += ["--method", "platt", "--method", "isotonic", "--format", "json"]
    run(*args, "--output", report, "--plot", plot)
    results = json.loads(report.read_text())["results"]
    rows = [(r["method"], r["input"]) for r in results]
    assert rows == [
        (method, column)
        for column in ("margin", "bucket", "mean(margin, bucket)")
        for method in ("platt", "isotonic")
    ]
    # the per-column rows are those of a one-column comparison
    alone = tmp_path / "alone.json"
    run(*args[:6], *args[8:], "--output", alone)
    single = json.loads(alone.read_text())["results"]
    for key in ("ece", "brier", "log_loss", "auc"):
        assert [r[key] for r in results[:2]] == [r[key] for r in single]
    assert plot.stat().st_size > 10_000


def test_streamed_compare_of_several_scores_says_it_reads_their_mean(run, files, tmp_path):
    _, paths, _ = files
    if "parquet" not in paths:
        pytest.skip("Parquet needs pyarrow (bernonnx[parquet])")
    report = tmp_path / "streamed.json"
    args = ["compare", paths["parquet"], "--label", "y", "--score", "margin", "--score", "proba"]
    _, err = run(*args, "--stream", "--method", "platt", "--format", "json", "--output", report)
    rows = [(r["method"], r["input"]) for r in json.loads(report.read_text())["results"]]
    assert rows == [("platt", "mean(margin, proba)")]
    assert "the one-score methods read the row mean of margin, proba" in err
    assert "--no-stream" in err


# --------------------------------------------------------------------------- the plot extra


_BLOCKER = r"""
import importlib.abc, importlib.metadata as md, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

def closure(name, extras):
    seen, todo = set(), [(name, tuple(extras))]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in seen:
            continue
        seen.add((canonicalize_name(name), extras))
        try:
            requires = md.distribution(name).requires or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, tuple(sorted(req.extras))))
    return {key for key, _ in seen}

allowed = closure("bernonnx", ["plot"])
blocked = {
    top for top, dists in md.packages_distributions().items()
    if top != "bernonnx" and not any(canonicalize_name(d) in allowed for d in dists)
}

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in blocked:
            message = f"No module named {name!r} (not in bernonnx[plot])"
            raise ModuleNotFoundError(message, name=name)

sys.meta_path.insert(0, Block())
print("blocked:", " ".join(sorted(blocked)), flush=True)
from bernonnx.cli import main
sys.exit(main(["-q", "--traceback", "demo", "--quick", "--out", sys.argv[1]]))
"""


@pytest.mark.slow
def test_demo_needs_nothing_beyond_the_plot_extra(tmp_path):
    """``pip install 'bernonnx[plot]'`` is enough for the demo and its figures: it runs
    with every installed distribution outside the requirements of bernonnx[plot]
    (pandas, pyarrow, ...) made unimportable."""
    pytest.importorskip("packaging")
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKER, str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (blocked,) = re.findall(r"^blocked: (.*)$", done.stdout, re.M)
    assert "pandas" in blocked.split()  # installed here (imported above), not in the extra
    for name in ("reliability_bernonnx.png", "reliability_vs_sklearn.png", "model.onnx"):
        assert (tmp_path / "demo" / name).stat().st_size > 1_000
