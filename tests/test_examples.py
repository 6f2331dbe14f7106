"""Smoke-run the example scripts as a user would, on reduced sizes."""

import subprocess
import sys
from pathlib import Path

import pytest

#: each runs a script in a fresh interpreter (13 to 33 s): outside the quick run
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
needs_shared = pytest.mark.skipif(
    not (SHARED_DATA / "diabetes_brfss2015.csv.gz").exists(),
    reason=f"the seeds' data sets are not at {SHARED_DATA} (they sit beside the checkout in CI)",
)


def run(script, *args, folder="examples"):
    """Run ``<folder>/<script>`` as a user would; returns its standard output."""
    done = subprocess.run(
        [sys.executable, str(ROOT / folder / script), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_quickstart_runs_exports_and_keeps_ranking(tmp_path):
    out = run("quickstart.py", "--quick", "--out", str(tmp_path))
    assert "bernonnx Bernstein (log-odds)" in out
    assert "ranking kept exactly: True" in out
    assert out.count("labels identical: True") == 2
    assert (tmp_path / "triton" / "credit_default" / "config.pbtxt").exists()


@needs_shared
def test_diabetes_study_quick(tmp_path):
    out = run("diabetes_study.py", "--quick", "--out", str(tmp_path / "table.md"))
    assert "FAIL" not in out
    assert (tmp_path / "table.md").read_text().count("|") > 20


@needs_shared
def test_credit_card_study_quick():
    out = run("credit_card_study.py", "--quick")
    assert "FAIL" not in out
    assert "keeps the test AUC exactly" in out


@needs_shared
def test_multiclass_study_quick(tmp_path):
    out = run("multiclass_study.py", "--quick", "--plot", str(tmp_path / "top.png"))
    assert "temperature keeps the network's accuracy: True" in out
    assert out.count("| sklearn ") == 3
    assert (tmp_path / "top.png").stat().st_size > 10_000


def test_transform_study_quick():
    out = run("transform_study.py", "--quick")
    assert out.count("## ") == 4
    assert "loss=log, score_transform=logistic" in out


def test_benchmarks_quick_smoke(tmp_path):
    # runs the benchmark code path end to end; timings are reported, never asserted
    run("run.py", "--quick", "--out", str(tmp_path / "b.md"), folder="benchmarks")
    assert "## 1. Fit time vs IsotonicRegression" in (tmp_path / "b.md").read_text()


@needs_shared
def test_onnx_serving_benchmark_quick_smoke(tmp_path):
    run("onnx_serving.py", "--quick", "--out", str(tmp_path / "s.md"), folder="benchmarks")
    report = (tmp_path / "s.md").read_text()
    assert "parity, ours max" in report and "PASS" in report.split("parity, ours max")[1][:200]


@needs_shared
def test_fusion_study_quick_with_contour(tmp_path):
    out = run("fusion_study.py", "--quick", "--plot", str(tmp_path / "contour.png"))
    assert out.count("## ") >= 2 and "grid ECE" in out
    assert "nan" not in out.lower().replace("nanmean", "")
    assert (tmp_path / "contour.png").stat().st_size > 10_000


def test_fusion_scaling_benchmark_quick_smoke(tmp_path):
    # timings are reported, never asserted
    run("fusion_scaling.py", "--quick", "--out", str(tmp_path / "f.md"), folder="benchmarks")
    assert "## Slope in n" in (tmp_path / "f.md").read_text()


@needs_shared
def test_quality_floor_quick():
    out = run("quality_floor.py", "--quick")
    rows = {line.split(" | ")[0][2:]: line for line in out.splitlines() if line.startswith("| ")}
    # the oracle is the better of sigmoid and isotonic per fit, so neither of them, nor a
    # rule that picks one of them, can be strictly below it
    for rule in ("sigmoid", "isotonic", "cv-choice"):
        assert rows[rule].split(" | ")[1] == "0 / 5"
    assert "default-best-degree" in rows and "blend-cv" in rows
    assert "calibration-row 5-fold CV vs test rows: agrees on" in out


def test_prior_shift_example_estimates_adapts_and_serves(tmp_path):
    out = run("prior_shift.py", "--figure", str(tmp_path / "shift.png"))
    estimate = float(out.split("estimated default rate this year: ")[1].split()[0])
    assert abs(estimate - 0.45) < 0.06  # this year's rows hold 45 % defaults
    before, after = (
        float(line.split("log loss ")[1].split(",")[0])
        for line in out.splitlines()
        if "log loss" in line
    )
    assert after < before
    assert "passed" in out and (tmp_path / "shift.png").stat().st_size > 10_000


@needs_shared
def test_prior_shift_benchmark_quick_smoke(tmp_path):
    pytest.importorskip("quapy", reason="the benchmarks extra (QuaPy) is not installed")
    run("prior_shift.py", "--quick", "--out", str(tmp_path / "p.md"), folder="benchmarks")
    report = (tmp_path / "p.md").read_text()
    assert "export exact, priors baked in and as input (every case) | PASS" in report
