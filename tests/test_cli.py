"""The ``bernonnx`` console script, run in a subprocess as a user runs it."""

import csv
import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.model_selection import train_test_split

from bernonnx import BernsteinCalibrator, IsotonicCalibrator, PlattCalibrator
from bernonnx.cli import EXIT_FAILURE, EXIT_USAGE, main
from bernonnx.metrics import calibration_report

SCRIPT = shutil.which("bernonnx")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "bernonnx"]
N_ROWS = 1500


def run(*args, cwd=None, env=None, expect=0):
    """Run ``bernonnx *args``; returns (stdout, stderr) after checking the exit status."""
    done = subprocess.run(
        [*COMMAND, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == expect, (done.returncode, done.stderr[-3000:])
    return done.stdout, done.stderr


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory):
    """Two noisy scores of a logistic model: s1 a raw margin, s2 a probability."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=N_ROWS)
    y = rng.random(N_ROWS) < 1.0 / (1.0 + np.exp(-(1.5 * x - 1.0)))
    s1 = x + rng.normal(scale=0.5, size=N_ROWS)
    s2 = 1.0 / (1.0 + np.exp(-(x + rng.normal(scale=0.7, size=N_ROWS))))
    path = tmp_path_factory.mktemp("cli") / "scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "outcome", "s1", "s2"])
        for i in range(N_ROWS):
            writer.writerow([i, "yes" if y[i] else "no", f"{s1[i]:.9g}", f"{s2[i]:.9g}"])
    # the scores as the command line reads them back
    stored = np.array([[float(f"{v:.9g}") for v in row] for row in np.c_[s1, s2]])
    return path, y.astype(np.int64), stored


def finite_metrics(row):
    return all(math.isfinite(row[k]) for k in ("ece", "mce", "brier", "log_loss", "auc"))


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize(
    "command, expected",
    [
        ((), ["demo", "compare", "export", "exit status"]),
        (("demo",), ["CC BY 4.0", "--quick", "--no-plots", "exit status"]),
        (("compare",), ["--test-size", "--cv", "multivariate", "platt-histogram", "exit status"]),
        (("export",), ["--onnx", "--triton", "--ort", "--dtype", "exit status"]),
    ],
)
def test_help(command, expected):
    out, _ = run(*command, "--help")
    for text in expected:
        assert text in out
    assert "2  bad usage or bad input" in out


def test_python_dash_m_is_the_same_program():
    done = subprocess.run(
        [sys.executable, "-m", "bernonnx", "export", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: bernonnx export")


# --------------------------------------------------------------------------- demo


def test_demo_quick_writes_plots_onnx_and_triton(tmp_path):
    out, err = run("demo", "--quick", "--out", tmp_path / "demo")
    folder = tmp_path / "demo"
    for name in ("reliability_bernonnx.png", "reliability_vs_sklearn.png"):
        assert (folder / name).stat().st_size > 10_000
    assert (folder / "model.onnx").stat().st_size > 1_000
    config = (folder / "triton" / "credit_default" / "config.pbtxt").read_text()
    assert 'name: "credit_default"' in config
    assert (folder / "triton" / "credit_default" / "1" / "model.onnx").exists()
    # every calibrator and both scikit-learn competitors are in the table
    for name in ("uncalibrated", "bernstein", "platt-histogram", "sklearn-isotonic"):
        assert re.search(rf"^\| {name} ", out, re.M), name
    error = float(re.search(r"max \|p_onnx - p_python\| = (\S+) over", out).group(1))
    assert error <= 1e-5
    assert "labels identical" in out
    assert "best bernonnx calibrator by test log loss" in out
    assert "training HistGradientBoostingClassifier" in err  # progress on stderr


# --------------------------------------------------------------------------- compare

# cheap methods for the format round trip; the fusion runs in the JSON case only
METHODS = ("bernstein-squared", "isotonic", "sklearn-sigmoid")


def compare_args(path, *extra, methods=METHODS):
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--score", "s2"]
    args += ["--pos-label", "yes", *extra]
    for method in methods:
        args += ["--method", method]
    return args


def test_compare_formats_agree(scores_csv):
    path, _, _ = scores_csv
    table, _ = run(*compare_args(path))
    as_csv, _ = run(*compare_args(path, "--format", "csv"))
    as_json, _ = run(*compare_args(path, "--format", "json", methods=(*METHODS, "multivariate")))

    report = json.loads(as_json)
    results = report["results"]
    assert [row["method"] for row in results] == [*METHODS, "multivariate"]
    assert all(finite_metrics(row) for row in results)
    assert report["positive_label"] == "yes"
    assert report["evaluation"] == {"mode": "holdout", "test_size": 0.3, "n_eval": 450}
    # one-score calibrators see the row mean, the fusion the matrix
    inputs = {row["method"]: row["input"] for row in results}
    assert inputs["multivariate"] == "s1, s2" and inputs["isotonic"] == "mean(s1, s2)"

    rows = list(csv.DictReader(as_csv.splitlines()))
    assert [row["method"] for row in rows] == list(METHODS)
    for from_csv, from_json in zip(rows, results, strict=False):
        for key in ("ece", "mce", "brier", "log_loss", "auc"):
            assert float(from_csv[key]) == pytest.approx(from_json[key], rel=1e-12)
            assert f"{from_json[key]:.5f}" in table


def test_compare_holdout_metrics_are_the_held_out_rows(scores_csv, tmp_path):
    # recompute one method by hand: stratified 70/30 split with the seed, fit on 70%
    path, y, S = scores_csv
    out_file = tmp_path / "r.json"
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    run(*args, "--method", "platt", "--seed", 3, "--format", "json", "--output", out_file)
    row = json.loads(out_file.read_text())["results"][0]
    train, test = train_test_split(np.arange(N_ROWS), test_size=0.3, random_state=3, stratify=y)
    cal = PlattCalibrator().fit(S[train, :1], y[train])
    expected = calibration_report(y[np.sort(test)], cal.predict_proba(S[np.sort(test), :1])[:, 1])
    for key in ("ece", "mce", "brier", "log_loss", "auc"):
        assert row[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12)


def test_compare_cross_validation_defaults_and_plot(scores_csv, tmp_path):
    path, _, _ = scores_csv
    out_file, plot = tmp_path / "cv.json", tmp_path / "cv.png"
    args = ["compare", path, "--label", "outcome", "--score", "s2", "--pos-label", "yes"]
    run(*args, "--cv", 3, "--format", "json", "--output", out_file, "--plot", plot)
    report = json.loads(out_file.read_text())
    assert report["evaluation"] == {"mode": "cv", "folds": 3, "n_eval": N_ROWS}
    methods = [row["method"] for row in report["results"]]
    # s2 is a probability: every one-score method runs, the reference and Platt on log-odds too
    assert methods == [
        "uncalibrated",
        "bernstein",
        "bernstein-squared",
        "platt",
        "platt-logodds",
        "isotonic",
        "histogram",
        "platt-histogram",
        "sklearn-sigmoid",
        "sklearn-isotonic",
    ]
    assert all(finite_metrics(row) for row in report["results"])
    assert plot.stat().st_size > 10_000


def test_compare_without_matplotlib_notes_and_continues(scores_csv, tmp_path, monkeypatch):
    path, _, _ = scores_csv
    blocker = tmp_path / "block"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text("raise ImportError('blocked')\n")
    monkeypatch.setenv("PYTHONPATH", str(blocker))
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    out, err = run(*args, "--method", "platt", "--plot", tmp_path / "p.png")
    assert "| platt " in out
    assert "no plot written" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.png").exists()


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize(
    "method, calibrator, dtype",
    [
        ("bernstein", BernsteinCalibrator(), "float32"),
        ("isotonic", IsotonicCalibrator(), "float64"),
    ],
)
def test_export_reproduces_the_python_calibrator(scores_csv, tmp_path, method, calibrator, dtype):
    path, y, S = scores_csv
    onnx_path = tmp_path / "out" / "cal.onnx"
    args = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    out, _ = run(
        *args,
        "--method",
        method,
        "--onnx",
        onnx_path,
        "--dtype",
        dtype,
        "--triton",
        tmp_path / "triton",
        "--name",
        "cal",
    )
    assert "labels identical" in out
    assert float(re.search(r"= (\S+) over", out).group(1)) <= 1e-6
    assert (tmp_path / "triton" / "cal" / "config.pbtxt").exists()

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: S[:, :1].astype(dtype)}
    label, proba = session.run(["label", "probabilities"], feed)
    # the same fit in this process, on the same scores
    expected = calibrator.fit(S[:, :1], y).predict_proba(S[:, :1].astype(dtype))
    assert np.max(np.abs(proba - expected)) <= 1e-6
    assert np.array_equal(label, np.argmax(expected, axis=1))


# --------------------------------------------------------------------------- errors


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    files = {
        "nan.csv": "y,s\n1,0.2\n0,0.4\n1,nan\n",
        "text.csv": "y,s\n1,0.2\n0,high\n",
        "three.csv": "y,s\na,0.1\nb,0.2\nc,0.3\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--score", "margin"], ["'margin'", "available columns", "'s1'", "'s2'"]),
        (["--score", "s1", "--pos-label", "maybe"], ["'maybe'", "'no', 'yes'"]),
        (["--score", "s1", "--method", "magic"], ["'magic'", "bernstein", "platt-histogram"]),
    ],
)
def test_usage_errors_on_good_file(scores_csv, args, expected):
    path, _, _ = scores_csv
    base = ["-q", "compare", path, "--label", "outcome", "--pos-label", "yes"]
    _, err = run(*base, *args, expect=EXIT_USAGE)
    assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    for text in expected:
        assert text in err


@pytest.mark.parametrize(
    "file, expected",
    [
        ("nan.csv", ["score column 's'", "row 3", "nan"]),
        ("text.csv", ["score column 's'", "not numeric", "row 2", "'high'"]),
        ("three.csv", ["3 distinct values", "--pos-label"]),
        ("missing.csv", ["missing.csv", "No such file"]),
    ],
)
def test_bad_input_errors(bad_files, file, expected):
    _, err = run("-q", "compare", bad_files / file, "--label", "y", "--score", "s", expect=2)
    assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
    for text in expected:
        assert text in err


def test_export_refuses_a_method_without_onnx(scores_csv, tmp_path):
    path, _, _ = scores_csv
    args = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    onnx_path = tmp_path / "m.onnx"
    _, err = run(*args, "--method", "sklearn-isotonic", "--onnx", onnx_path, expect=EXIT_USAGE)
    assert "no ONNX export" in err and "bernstein" in err
    assert not (tmp_path / "m.onnx").exists()


def test_unexpected_failure_is_one_line_and_exit_1(monkeypatch, capsys, scores_csv):
    # a bug, simulated in process: no traceback unless asked for
    import bernonnx.cli as cli

    def broken(*args, **kwargs):
        raise RuntimeError("solver exploded\nsecond line")

    monkeypatch.setattr(cli, "_fit_scores", broken)
    path, _, _ = scores_csv
    args = ["compare", str(path), "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    assert main(["-q", *args, "--method", "platt"]) == EXIT_FAILURE
    err = capsys.readouterr().err
    assert err == (
        "bernonnx: error: unexpected RuntimeError: solver exploded "
        "(rerun as 'bernonnx --traceback ...' to see where)\n"
    )
    assert main(["-q", "--traceback", *args, "--method", "platt"]) == EXIT_FAILURE
    assert "Traceback (most recent call last)" in capsys.readouterr().err
