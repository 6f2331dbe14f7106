"""The ``bernonnx`` command line, run in process through ``bernonnx.cli.main``.

One test runs the installed console script in a subprocess; the others call
:func:`bernonnx.cli.main` with the arguments a user types, which is the same code
without an interpreter start per case.
"""

import csv
import json
import math
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

import bernonnx.export
from bernonnx import (
    BernsteinCalibrator,
    BetaCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    QuadraticScalingCalibrator,
    VennAbersCalibrator,
)
from bernonnx.cli import EXIT_FAILURE, EXIT_PARITY, EXIT_USAGE, main
from bernonnx.metrics import calibration_report

# the console script of this interpreter's environment, not whichever is first on PATH
SCRIPT = Path(sys.executable).with_name("bernonnx")
COMMAND = [str(SCRIPT)] if SCRIPT.is_file() else [sys.executable, "-m", "bernonnx"]
N_ROWS = 1500


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(limits=1):
        yield


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
def test_help(run, command, expected):
    out, _ = run(*command, "--help")
    for text in expected:
        assert text in out
    assert "2  bad usage or bad input" in out
    assert "3  the ONNX graph does not reproduce Python" in out


def test_console_script_smoke(scores_csv, tmp_path):
    # the one subprocess: the installed entry point and its exit status
    path, _, _ = scores_csv
    args = ["export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    args += ["--method", "platt", "--onnx", tmp_path / "p.onnx"]
    done = subprocess.run(
        [*COMMAND, "-q", *map(str, args)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "passed" in done.stdout and (tmp_path / "p.onnx").stat().st_size > 100


# --------------------------------------------------------------------------- demo


@pytest.mark.slow  # the whole demo: every calibrator, plots, export, Triton
def test_demo_quick_writes_plots_onnx_and_triton(run, tmp_path):
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
    # features cast to float32 at load: Python and the graph see the same numbers,
    # and the honest check (Python on the test rows as given) passes at 1e-6
    error = float(re.search(r"max \|p_onnx - p_python\| = (\S+) over", out).group(1))
    assert error <= 1e-6
    assert "tolerance 1.0e-06): passed" in out and "labels identical" in out
    # chosen on the validation rows, not on the test rows it is reported on
    assert "best bernonnx calibrator by validation log loss" in out
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


@pytest.mark.slow  # compare three times over every method and the fusion
def test_compare_formats_agree(run, scores_csv):
    path, _, _ = scores_csv
    table, _ = run(*compare_args(path))
    as_csv, _ = run(*compare_args(path, "--format", "csv"))
    as_json, _ = run(*compare_args(path, "--format", "json", methods=(*METHODS, "multivariate")))

    report = json.loads(as_json)
    results = report["results"]
    # s1 is a margin and s2 a probability: one-score calibrators run on each column
    # (never on their meaningless row mean), the fusion on the matrix
    runs = [(row["method"], row["input"]) for row in results]
    assert runs == [
        *((method, "s1") for method in METHODS),
        *((method, "s2") for method in METHODS),
        ("multivariate", "s1, s2"),
    ]
    assert all(finite_metrics(row) for row in results)
    assert report["positive_label"] == "yes"
    assert report["evaluation"] == {"mode": "holdout", "test_size": 0.3, "n_eval": 450}

    rows = list(csv.DictReader(as_csv.splitlines()))
    assert [(row["method"], row["input"]) for row in rows] == runs[:-1]
    for from_csv, from_json in zip(rows, results, strict=False):
        for key in ("ece", "mce", "brier", "log_loss", "auc"):
            assert float(from_csv[key]) == pytest.approx(from_json[key], rel=1e-12)
            assert f"{from_json[key]:.5f}" in table


def test_compare_holdout_metrics_are_the_held_out_rows(run, scores_csv, tmp_path):
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


@pytest.mark.slow  # every one-score method on 3 folds, and the plot
def test_compare_cross_validation_defaults_and_plot(run, scores_csv, tmp_path):
    path, _, _ = scores_csv
    out_file, plot = tmp_path / "cv.json", tmp_path / "cv.png"
    args = ["compare", path, "--label", "outcome", "--score", "s2", "--pos-label", "yes"]
    run(*args, "--cv", 3, "--format", "json", "--output", out_file, "--plot", plot)
    report = json.loads(out_file.read_text())
    assert report["evaluation"] == {"mode": "cv", "folds": 3, "n_eval": N_ROWS}
    methods = [row["method"] for row in report["results"]]
    # s2 is a probability: every one-score method runs, the reference and Platt on log-odds
    # too, and the CalArena leaders' binary maps
    assert methods == [
        "uncalibrated",
        "bernstein",
        "bernstein-squared",
        "platt",
        "platt-logodds",
        "beta",
        "quadratic-scaling",
        "venn-abers",
        "isotonic",
        "histogram",
        "platt-histogram",
        "sklearn-sigmoid",
        "sklearn-isotonic",
    ]
    assert all(finite_metrics(row) for row in report["results"])
    assert plot.stat().st_size > 10_000


def test_compare_the_binary_maps_by_their_calarena_names(run, scores_csv):
    path, _, _ = scores_csv
    # s2: probabilities, which affine-scaling (Platt on their log-odds) needs
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s2", "--pos-label", "yes"]
    # and the stack of those maps, which compare fits only when named (a slow fit)
    methods = ["beta", "quadratic-scaling", "venn-abers", "ivap", "affine-scaling", "stack"]
    out, _ = run(*args, *(x for m in methods for x in ("--method", m)))
    for name in ("beta", "quadratic-scaling", "venn-abers", "platt-logodds", "stack"):
        assert f"| {name} " in out


def test_compare_without_matplotlib_notes_and_continues(run, scores_csv, tmp_path, monkeypatch):
    path, _, _ = scores_csv
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    out, err = run(*args, "--method", "platt", "--plot", tmp_path / "p.png")
    assert "| platt " in out
    assert "no plot written" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.png").exists()


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize(
    "method, calibrator, dtype",
    [
        ("bernstein", BernsteinCalibrator(), "auto"),
        ("isotonic", IsotonicCalibrator(), "float64"),
        ("beta", BetaCalibrator(), "float64"),
        ("quadratic-scaling", QuadraticScalingCalibrator(), "auto"),
        # its graph has a third output, interval: the Triton config lists it too
        ("venn-abers", VennAbersCalibrator(), "float64"),
    ],
)
def test_export_reproduces_the_python_calibrator(
    run, scores_csv, tmp_path, method, calibrator, dtype
):
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
    assert "labels identical" in out and "passed" in out
    assert float(re.search(r"= (\S+) over", out).group(1)) <= 1e-6
    assert (tmp_path / "triton" / "cal" / "config.pbtxt").exists()

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: S[:, :1]}  # auto: the scores' float64
    label, proba = session.run(["label", "probabilities"], feed)
    # the same fit in this process, on the same scores
    expected = calibrator.fit(S[:, :1], y).predict_proba(S[:, :1])
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
def test_usage_errors_on_good_file(run, scores_csv, args, expected):
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
def test_bad_input_errors(run, bad_files, file, expected):
    _, err = run("-q", "compare", bad_files / file, "--label", "y", "--score", "s", expect=2)
    assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
    for text in expected:
        assert text in err


def test_export_refuses_a_method_without_onnx(run, scores_csv, tmp_path):
    path, _, _ = scores_csv
    args = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    onnx_path = tmp_path / "m.onnx"
    _, err = run(*args, "--method", "sklearn-isotonic", "--onnx", onnx_path, expect=EXIT_USAGE)
    assert "no ONNX export" in err and "bernstein" in err
    assert not (tmp_path / "m.onnx").exists()


def test_unexpected_failure_is_one_line_and_exit_1(monkeypatch, capsys, scores_csv):
    # a bug, simulated in process: no traceback unless asked for
    import bernonnx.cli._methods as cli

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


# --------------------------------------------------------------------------- parity (exit 3)


@pytest.fixture(scope="module")
def huge_csv(tmp_path_factory):
    """Scores near 1e8 that differ by O(1): a float32 graph holds them 8 apart."""
    rng = np.random.default_rng(5)
    s = 1e8 + rng.normal(size=800)
    y = rng.random(800) < 1 / (1 + np.exp(-2 * (s - 1e8)))
    path = tmp_path_factory.mktemp("huge") / "huge.csv"
    path.write_text(
        "y,s\n" + "".join(f"{int(t)},{v!r}\n" for t, v in zip(y, s.tolist(), strict=True))
    )
    return path


def test_export_refuses_a_float32_graph_that_would_flatten_the_scores(run, huge_csv, tmp_path):
    args = ["-q", "export", huge_csv, "--label", "y", "--score", "s", "--method", "platt"]
    _, err = run(*args, "--onnx", tmp_path / "f32.onnx", "--dtype", "float32", expect=EXIT_USAGE)
    assert "cannot carry" in err and "--dtype float64" in err
    assert not (tmp_path / "f32.onnx").exists()
    # left to bernonnx (--dtype auto), the graph is float64 and exact
    out, _ = run(*args, "--onnx", tmp_path / "auto.onnx")
    assert "float64" in out and "passed" in out


def test_export_exits_3_when_the_graph_cannot_reproduce_python(
    run, huge_csv, tmp_path, monkeypatch
):
    # a float32 graph built past the guard (its sample is float32 already)
    real_to_onnx = bernonnx.export.to_onnx

    def float32_past_the_guard(model, X_sample, dtype=None):
        return real_to_onnx(model, np.asarray(X_sample, np.float32), dtype=np.float32)

    monkeypatch.setattr(bernonnx.export, "to_onnx", float32_past_the_guard)
    args = ["-q", "export", huge_csv, "--label", "y", "--score", "s", "--method", "platt"]
    onnx_path = tmp_path / "f32.onnx"
    out, err = run(
        *args, "--onnx", onnx_path, "--triton", tmp_path / "tri", "--ort", expect=EXIT_PARITY
    )
    assert "FAILED" in out and "first divergence: calibrator" in out
    error = float(re.search(r"max \|p_onnx - p_python\| = (\S+) over", out).group(1))
    assert error > 0.01
    n_above = int(re.search(r"; (\d+) rows \(", out).group(1))
    assert n_above > 0
    # the graph is kept for inspection; nothing meant for serving is written
    assert onnx_path.exists()
    assert not (tmp_path / "tri").exists() and not list(tmp_path.glob("*.ort"))
    assert "--triton, --ort" in err


# --------------------------------------------------------------------------- outputs


def test_outputs_that_are_the_input_are_refused(run, scores_csv, tmp_path):
    path, _, _ = scores_csv
    before = path.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    export = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    compare = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    for args in (
        [*export, "--method", "platt", "--onnx", path],
        [*export, "--method", "platt", "--onnx", link],  # the input through a symlink
        [*compare, "--method", "platt", "--output", path],
        [*compare, "--method", "platt", "--output", link],
        [
            *compare,
            "--method",
            "platt",
            "--output",
            tmp_path / "a.png",
            "--plot",
            tmp_path / "a.png",
        ],
    ):
        _, err = run(*args, expect=EXIT_USAGE)
        assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
        assert "overwrite the input" in err or "the same file" in err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv"]


def test_files_are_written_whole_with_the_umask_mode(run, scores_csv, tmp_path):
    from bernonnx.deploy import write_triton_repository
    from bernonnx.export import to_onnx

    path, y, S = scores_csv
    old = os.umask(0o022)
    try:
        args = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
        run(*args, "--method", "platt", "--onnx", tmp_path / "m.onnx", "--triton", tmp_path / "t")
        cal = PlattCalibrator().fit(S[:, :1], y)
        folder = write_triton_repository(to_onnx(cal, S[:1, :1]), tmp_path / "direct", "p")
    finally:
        os.umask(old)
    written = [
        tmp_path / "m.onnx",
        tmp_path / "t" / "m" / "config.pbtxt",
        tmp_path / "t" / "m" / "1" / "model.onnx",
        folder / "config.pbtxt",
        folder / "1" / "model.onnx",
    ]
    for file in written:
        assert stat.S_IMODE(file.stat().st_mode) == 0o644, file  # not mkstemp's 0600
    # no temporary file is left beside them
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.parametrize("case", ["triton is a file", "name with a slash", "four rows"])
def test_bad_input_exits_2_before_writing_anything(run, scores_csv, tmp_path, case):
    path, _, _ = scores_csv
    args = ["-q", "export", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    args += ["--method", "platt", "--onnx", tmp_path / "out" / "m.onnx"]
    if case == "triton is a file":
        (tmp_path / "tfile").write_text("")
        args += ["--triton", tmp_path / "tfile"]
        expected = "is a file"
    elif case == "name with a slash":
        args += ["--triton", tmp_path / "repo", "--name", "a/b"]
        expected = "--name"
    else:
        small = tmp_path / "four.csv"
        small.write_text("y,s\n1,0.2\n0,0.4\n1,0.9\n0,0.1\n")
        args = ["-q", "compare", small, "--label", "y", "--score", "s"]
        args += ["--output", tmp_path / "out" / "r.json", "--plot", tmp_path / "out" / "r.png"]
        expected = "cannot be fitted on 2 rows"
    _, err = run(*args, expect=EXIT_USAGE)
    assert err.startswith("bernonnx: error:") and len(err.strip().splitlines()) == 1
    assert expected in err and "unexpected" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "repo").exists()


@pytest.mark.parametrize("given", ["folder", "plot.csv", "plot"])
def test_plot_takes_a_png_file_name(run, scores_csv, tmp_path, given):
    path, _, _ = scores_csv
    target = tmp_path / given
    if given == "folder":
        target.mkdir()
    args = ["-q", "compare", path, "--label", "outcome", "--score", "s1", "--pos-label", "yes"]
    _, err = run(*args, "--method", "platt", "--plot", target, expect=EXIT_USAGE)
    assert "--plot" in err and ".png" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["folder"] if given == "folder" else [])


# --------------------------------------------------------------------------- parsing


def test_rows_without_a_label_are_dropped_and_counted(run, scores_csv, tmp_path):
    path, y, S = scores_csv
    rng = np.random.default_rng(1)
    missing = set(rng.choice(N_ROWS, 60, replace=False).tolist())
    markers = ["NA", "", "nan", "N/A", "null"]
    with_na, without = tmp_path / "na.csv", tmp_path / "clean.csv"
    lines_na, lines_clean = ["y,s"], ["y,s"]
    for i in range(N_ROWS):
        line = f"{int(y[i])},{float(S[i, 0])!r}"
        lines_na.append(f"{markers[i % 5]},{float(S[i, 0])!r}" if i in missing else line)
        if i not in missing:
            lines_clean.append(line)
    with_na.write_text("\n".join(lines_na) + "\n")
    without.write_text("\n".join(lines_clean) + "\n")
    args = ["--label", "y", "--score", "s", "--pos-label", "1", "--method", "platt"]
    out, err = run("-q", "compare", with_na, *args, "--format", "json")
    # said even with -q: the rows were neither positives nor negatives
    assert "dropped 60 rows with a missing label" in err
    report = json.loads(out)
    assert report["n_rows"] == N_ROWS - 60 and report["n_missing_label"] == 60
    clean = json.loads(run("-q", "compare", without, *args, "--format", "json")[0])
    # the same as the file without those rows
    for key in ("ece", "mce", "brier", "log_loss", "auc"):
        assert report["results"][0][key] == clean["results"][0][key]


@pytest.mark.parametrize("text", ["1_000", "١٢", "0x10", "1,5"])
def test_scores_must_be_plain_decimal_numbers(run, tmp_path, text):
    file = tmp_path / "s.csv"
    file.write_text(f"y;s\n1;0.5\n0;{text}\n1;0.7\n")
    _, err = run(
        "-q", "compare", file, "--label", "y", "--score", "s", "--delimiter", ";", expect=2
    )
    assert "not numeric" in err and repr(text) in err and "line 3" in err
