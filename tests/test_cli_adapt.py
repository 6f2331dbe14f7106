"""``bernonnx adapt``: calibration scores in a CSV, unlabeled target scores in a CSV or
Parquet file, the estimate and its interval printed, the adapted graph written.

The scores are a logistic regression's on the shared credit table (read by pandas as it
comes); the target rows are the table's own rows subsampled to another class balance.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR
from bernonnx import BernsteinCalibrator, PriorShiftAdapter
from bernonnx.cli import main
from bernonnx.deploy import run_onnx
from bernonnx.shift import adapt_proba

pytestmark = pytest.mark.skipif(
    not (DEFAULT_DATA_DIR / DATASETS["credit"].file).is_file(),
    reason=f"the shared credit table is not at {DEFAULT_DATA_DIR} (set BERNONNX_SHARED_DATA)",
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    spec = DATASETS["credit"]
    # rows in random order: the file's order is not exchangeable (its IDs run by period)
    df = pd.read_csv(DEFAULT_DATA_DIR / spec.file).sample(frac=1.0, random_state=0)
    y = df.pop(spec.label).to_numpy()
    X = df.drop(columns=list(spec.drop))
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X[:10000], y[:10000])
    s = model.decision_function(X)
    folder = tmp_path_factory.mktemp("adapt")
    cal = folder / "cal.csv"
    pd.DataFrame({"default": y[10000:20000], "score": s[10000:20000]}).to_csv(cal, index=False)
    rng = np.random.default_rng(0)
    rest = np.arange(20000, 30000)
    pos, neg = rest[y[rest] == 1], rest[y[rest] == 0]
    rows = np.concatenate([rng.choice(pos, 1000, replace=False), rng.choice(neg, 1000, False)])
    target = folder / "target.csv"
    pd.DataFrame({"score": s[rows], "other": 1}).to_csv(target, index=False)
    parquet = folder / "target.parquet"
    pd.DataFrame({"score": s[rows]}).to_parquet(parquet)
    return folder, cal, target, parquet, s[rows], y[10000:20000], s[10000:20000]


def _estimate(out: str) -> tuple[float, float, float]:
    found = re.search(r": (\d\.\d+) \(95% interval (\d\.\d+) to (\d\.\d+)\)", out)
    assert found, out
    return tuple(float(v) for v in found.groups())


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_adapt_estimates_prints_and_exports(files, kind, capsys):
    folder, cal, target, parquet, s_target, y_cal, s_cal = files
    out_path = folder / f"adapted_{kind}.onnx"
    args = ["-q", "adapt", str(cal), "--label", "default", "--score", "score"]
    args += ["--target", str(target if kind == "csv" else parquet), "--seed", "1"]
    args += ["--onnx", str(out_path), "--priors-input"]
    assert main(args) == 0
    out = capsys.readouterr().out
    prior, low, high = _estimate(out)
    assert low <= prior <= high and abs(prior - 0.5) < 0.06  # the target is half positive
    assert "calibration rows: 0.2" in out and "passed" in out
    onx = onnx.load(out_path)
    assert [i.name for i in onx.graph.input] == ["X", "priors"]
    # the graph is the library's adapter on the same rows: same probabilities
    calibrator = BernsteinCalibrator().fit(s_cal, y_cal)
    train = [1 - y_cal.mean(), y_cal.mean()]
    adapter = PriorShiftAdapter(calibrator, train_prior=train, random_state=1).fit(s_target)
    assert adapter.prior_[1] == pytest.approx(prior, abs=1e-4)
    got = run_onnx(onx, {"X": s_target[:, None], "priors": np.array([[0.3, 0.7]])})
    expected = adapt_proba(calibrator.predict_proba(s_target), train, [0.3, 0.7])
    assert np.abs(got["probabilities"] - expected).max() <= 1e-9


def test_adapt_with_given_priors_and_bad_input(files, capsys):
    folder, cal, target, _, _, _, _ = files
    base = ["-q", "adapt", str(cal), "--label", "default", "--score", "score"]
    assert main([*base, "--target", str(target), "--priors", "0.4,0.6"]) == 0
    assert "0.6000, given" in capsys.readouterr().out
    assert main([*base, "--target", str(target), "--priors", "0.4,0.7"]) == 2
    assert "priors must sum to 1" in capsys.readouterr().err
    few = folder / "few.csv"
    pd.DataFrame({"score": np.linspace(-2, 2, 40)}).to_csv(few, index=False)
    assert main([*base, "--target", str(few)]) == 2
    assert "at least 100 target rows" in capsys.readouterr().err
    holes = folder / "holes.csv"
    pd.DataFrame({"score": [np.nan] * 3 + list(np.linspace(-2, 2, 200))}).to_csv(holes)
    assert main([*base, "--target", str(holes)]) == 2
    assert "missing values in 3 of its 203" in capsys.readouterr().err
    assert main([*base, "--target", str(folder / "none.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    wrong = folder / "wrong.csv"
    pd.DataFrame({"s2": np.linspace(-2, 2, 200)}).to_csv(wrong, index=False)
    assert main([*base, "--target", str(wrong)]) == 2
    assert "--target" in capsys.readouterr().err


def test_adapt_without_resamples_prints_no_interval(files, capsys):
    # --n-bootstrap 0 has no interval: none is printed (it printed "0.0000 to 0.0000")
    folder, cal, target, *_ = files
    args = ["-q", "adapt", str(cal), "--label", "default", "--score", "score"]
    assert main([*args, "--target", str(target), "--n-bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "interval" not in out.split("raw EM")[0] and "prior of" in out
