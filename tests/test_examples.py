"""Smoke-run the example scripts as a user would, on reduced sizes."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks._realdata import DEFAULT_DATA_DIR

#: each runs a script in a fresh interpreter (13 to 33 s): outside the quick run
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: $BERNONNX_SHARED_DATA, else the tables bundled in bernonnx.data
SHARED_DATA = DEFAULT_DATA_DIR
needs_shared = pytest.mark.skipif(
    not (SHARED_DATA / "diabetes_brfss2015.csv.gz").exists(),
    reason=f"the real data sets are not at {SHARED_DATA}",
)


def run(script, *args, folder="examples"):
    """Run ``<folder>/<script>`` as a user would; returns its standard output."""
    return run_done(script, *args, folder=folder).stdout


def run_done(script, *args, folder="examples", cwd=None):
    """``run``, from ``cwd``; returns the finished process (its stdout and stderr)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / folder / script), *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def run_study_on_the_bundled_copy(script, folder, *args):
    """A quick study as the README runs it, from the repository root, with ``--data``
    naming an empty ``folder``: a clone without the shared data folder. Every table the
    studies read ships with bernonnx (the same bytes as the shared copies), so the
    study must say it reads the bundled copy and run to the end."""
    folder.mkdir()
    done = run_done(script, "--quick", "--data", str(folder), *args, cwd=ROOT)
    assert "reading the copy bundled with bernonnx" in done.stderr
    return done.stdout


def test_quickstart_runs_exports_and_keeps_ranking(tmp_path):
    out = run("quickstart.py", "--quick", "--out", str(tmp_path))
    assert "bernonnx Bernstein (log-odds)" in out
    assert "ranking kept exactly: True" in out
    assert out.count("labels identical: True") == 2
    assert (tmp_path / "triton" / "credit_default" / "config.pbtxt").exists()


def test_diabetes_study_quick(tmp_path):
    # one run, also the README's fallback to the bundled table (was tests/test_readme.py)
    out = run_study_on_the_bundled_copy(
        "diabetes_study.py", tmp_path / "no-tables", "--out", str(tmp_path / "table.md")
    )
    assert "The blog post's study, CDC diabetes" in out
    assert "FAIL" not in out
    assert (tmp_path / "table.md").read_text().count("|") > 20


def test_credit_card_study_quick(tmp_path):
    # one run, also the README's fallback to the bundled table (was tests/test_readme.py)
    out = run_study_on_the_bundled_copy("credit_card_study.py", tmp_path / "no-tables")
    assert "FAIL" not in out
    assert "keeps the test AUC exactly" in out


def test_multiclass_study_quick(tmp_path):
    out = run("multiclass_study.py", "--quick", "--plot", str(tmp_path / "top.png"))
    assert "temperature keeps the network's accuracy: True" in out
    assert out.count("| sklearn ") == 3
    assert (tmp_path / "top.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "script", sorted(path.name for path in (ROOT / "examples").glob("plot_*.py"))
)
def test_gallery_figures_draw_on_the_bundled_data(script, tmp_path, monkeypatch):
    """Each figure script of the gallery runs headless and draws a figure that is not
    blank. In this process, as sphinx-gallery runs them when the docs are built
    (``runpy`` as ``__main__``, the Agg backend, the script's name alone in
    ``sys.argv``): a fresh interpreter added only its start and imports, about a third
    of each run."""
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = ROOT / "examples" / script
    plt.close("all")
    monkeypatch.setattr(sys, "argv", [str(path)])
    monkeypatch.chdir(tmp_path)  # whatever a script writes lands here
    try:
        runpy.run_path(str(path), run_name="__main__")
        numbers = plt.get_fignums()
        for number in numbers:
            plt.figure(number).savefig(tmp_path / f"{number}.png")
    finally:
        plt.close("all")
    assert len(numbers) >= 1
    assert all(png.stat().st_size > 20_000 for png in tmp_path.glob("*.png"))


def test_transform_study_quick():
    out = run("transform_study.py", "--quick")
    assert out.count("## ") == 4
    assert "loss=log, score_transform=logistic" in out


def test_benchmarks_quick_smoke(tmp_path):
    # runs the benchmark code path end to end; timings are reported, never asserted
    run("run.py", "--quick", "--out", str(tmp_path / "b.md"), folder="benchmarks")
    assert "## 1. Fit time vs IsotonicRegression" in (tmp_path / "b.md").read_text()


def test_onnx_serving_benchmark_quick_smoke(tmp_path):
    run("onnx_serving.py", "--quick", "--out", str(tmp_path / "s.md"), folder="benchmarks")
    report = (tmp_path / "s.md").read_text()
    assert "parity, ours max" in report and "PASS" in report.split("parity, ours max")[1][:200]


def test_fusion_study_quick_with_contour(tmp_path):
    out = run("fusion_study.py", "--quick", "--plot", str(tmp_path / "contour.png"))
    assert out.count("## ") >= 2 and "grid ECE" in out
    assert "nan" not in out.lower().replace("nanmean", "")
    assert (tmp_path / "contour.png").stat().st_size > 10_000


def test_fusion_scaling_benchmark_quick_smoke(tmp_path):
    # timings are reported, never asserted
    run("fusion_scaling.py", "--quick", "--out", str(tmp_path / "f.md"), folder="benchmarks")
    assert "## Slope in n" in (tmp_path / "f.md").read_text()


def test_quality_floor_quick():
    out = run(
        "quality_floor.py", "--quick", "--data", str(DEFAULT_DATA_DIR), folder="benchmarks/quality"
    )
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


def test_prior_shift_benchmark_quick_smoke(tmp_path):
    pytest.importorskip("quapy", reason="the benchmarks extra (QuaPy) is not installed")
    run("prior_shift.py", "--quick", "--out", str(tmp_path / "p.md"), folder="benchmarks")
    report = (tmp_path / "p.md").read_text()
    assert "export exact, priors baked in and as input (every case) | PASS" in report


def test_conformal_benchmark_quick_smoke(tmp_path):
    pytest.importorskip("mapie", reason="the benchmarks extra (MAPIE) is not installed")
    pytest.importorskip("crepes", reason="the benchmarks extra (crepes) is not installed")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from conformal import CORPUS, corpus_dir
    finally:
        sys.path.pop(0)
    try:
        corpus_dir()
    except SystemExit:
        pytest.skip(f"the corpus tables are not at {CORPUS} (set BERNONNX_CORPUS)")
    args = ["--quick", "--rows", "1500", "--out", str(tmp_path / "c.md")]
    run("conformal.py", *args, "--cache", str(tmp_path / "cache"), folder="benchmarks")
    report = (tmp_path / "c.md").read_text()
    assert "graph sets identical on every test row: met" in report


def _quality_module(name):
    folder = str(ROOT / "benchmarks" / "quality")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return __import__(name)


def test_nested_prototype_keeps_ranking_and_nests_its_maps():
    # the head-to-head study's binary prototype, on the bundled credit table as pandas reads it
    from importlib import resources

    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    nested = _quality_module("_nested")
    with resources.as_file(resources.files("bernonnx.data") / "uci_credit_card.csv.gz") as f:
        df = pd.read_csv(f)
    y = df.pop("default.payment.next.month").to_numpy()
    X_fit, X_cal, y_fit, y_cal = train_test_split(df, y, test_size=0.5, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X_fit, y_fit)
    t = model.decision_function(X_cal)
    t_cal, t_test, y_c, y_t = train_test_split(t, y_cal, test_size=0.5, random_state=0)
    out, info = nested.NestedBinary().fit_predict(t_cal, y_c, t_test)
    assert info["family"] in nested.FAMILIES
    order = np.argsort(t_test, kind="stable")
    distinct = np.diff(t_test[order]) > 1e-9 * np.abs(t_test).max()
    for name, p in out.items():
        steps = np.diff(p[order])
        assert np.all(steps >= 0), name  # never decreasing in the score
        assert np.all(steps[distinct] > 0) or name.startswith("nest-"), name
    # in-sample: Beta nests the affine map (a = b), so its log loss is never above it
    loss = {}
    for family in ("affine", "beta"):
        fit = nested._Increasing(family).fit(t_cal, y_c.astype(float))
        loss[family] = nested.row_loss(y_c, fit.log_odds(t_cal)).mean()
    assert loss["beta"] <= loss["affine"] + 1e-9


@needs_shared
def test_peers_quick(tmp_path):
    pytest.importorskip(
        "probmetrics", reason="the benchmarks extra: pip install -e '.[benchmarks]'"
    )
    report = tmp_path / "peers.md"
    run("peers.py", "--quick", "--preds", str(tmp_path / "p"), "--out", str(report),
        folder="benchmarks/quality")  # fmt: skip
    text = report.read_text()
    for peer in ("Beta", "Venn-Abers (IVAP)", "MLI spline", "SMS", "vector scaling"):
        assert f"| {peer} |" in text
    assert "nested prototype" in text and "| previous default |" in text
    assert "nan" not in text.replace("nanmean", "")
