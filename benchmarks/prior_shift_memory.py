"""Peak memory of a prior estimate on a million rows: ``PriorShiftAdapter.fit`` and
``bernonnx adapt``, each with the default 200 bootstrap resamples.

- ``fit``: the shared credit table's rows, drawn with replacement to 1,000,000 target
  rows at half positives, as pandas reads them; a logistic-regression pipeline
  calibrated by ``CalibratedClassifier`` (Bernstein). Peak measured by ``tracemalloc``
  (numpy's and pandas' allocations) from the moment the input frame exists: what the
  fit needs beyond its input.
- ``bernonnx adapt``: a calibration CSV of 10,000 scores and a Parquet file of 1,000,000
  target scores, the command run with ``--onnx`` (its parity check on every target
  row included) in a child process, after the imports; its peak RSS (``VmHWM``, reset
  by ``/proc/self/clear_refs`` once the modules are loaded) minus the RSS then, minus
  the 8 MB of the input column itself.

Target: at most 256 MB beyond the input for both. Times are printed with the load
average (the machine may be shared). Run from the repository root::

    OMP_NUM_THREADS=1 python benchmarks/prior_shift_memory.py \
        --out benchmarks/prior_shift_memory.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR  # noqa: E402
from bernonnx import BernsteinCalibrator, CalibratedClassifier, PriorShiftAdapter  # noqa: E402

MB = 2**20
ROWS = 1_000_000
CATEGORICAL = ["SEX", "EDUCATION", "MARRIAGE"]

_CHILD = """
import sys
import numpy as np, pandas as pd
import bernonnx.cli, bernonnx.export, bernonnx.shift, onnxruntime  # noqa: F401
from bernonnx.cli import main


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024


before = status("VmRSS")
# reset the peak RSS (VmHWM) to the current RSS: the peak below is the command's own
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
code = main(sys.argv[1:])
assert code == 0, code
print(before, status("VmHWM"))
"""


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _credit():
    spec = DATASETS["credit"]
    df = pd.read_csv(DEFAULT_DATA_DIR / spec.file).sample(frac=1.0, random_state=0)
    y = df.pop(spec.label).to_numpy()
    return df.drop(columns=list(spec.drop)), y


def library_fit() -> dict:
    X, y = _credit()
    numeric = [c for c in X.columns if c not in CATEGORICAL]
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
        ]
    )
    base = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X[:10000], y[:10000])
    clf = CalibratedClassifier(FrozenEstimator(base), BernsteinCalibrator(degree=6))
    clf.fit(X[10000:20000], y[10000:20000])
    rest = np.arange(20000, len(X))
    rng = np.random.default_rng(0)
    pos, neg = rest[y[rest] == 1], rest[y[rest] == 0]
    rows = np.concatenate([rng.choice(pos, ROWS // 2), rng.choice(neg, ROWS - ROWS // 2)])
    target = X.iloc[rows].reset_index(drop=True)
    input_mb = target.memory_usage(deep=True).sum() / MB
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    load, start = _load(), time.perf_counter()
    adapter = PriorShiftAdapter(clf, random_state=0).fit(target)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "what": "PriorShiftAdapter(clf).fit(X), n_bootstrap=200",
        "input_mb": input_mb,
        "beyond_mb": (peak - before) / MB,
        "seconds": seconds,
        "load": load,
        "estimate": f"{adapter.prior_[1]:.4f} [{adapter.prior_interval_[1, 0]:.4f}, "
        f"{adapter.prior_interval_[1, 1]:.4f}] (true 0.5000)",
    }


def _child(args) -> tuple[int, int]:
    """RSS after the imports and the peak RSS of the command run after them (Linux)."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True
    )
    before, peak = out.stdout.strip().splitlines()[-1].split()
    return int(before), int(peak)


def cli_adapt() -> dict:
    X, y = _credit()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X[:10000], y[:10000])
    s = model.decision_function(X)
    rng = np.random.default_rng(1)
    rest = np.arange(20000, len(X))
    pos, neg = rest[y[rest] == 1], rest[y[rest] == 0]
    rows = np.concatenate([rng.choice(pos, ROWS // 2), rng.choice(neg, ROWS - ROWS // 2)])
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        cal, target = folder / "cal.csv", folder / "target.parquet"
        pd.DataFrame({"default": y[10000:20000], "score": s[10000:20000]}).to_csv(cal, index=False)
        pd.DataFrame({"score": s[rows]}).to_parquet(target)
        args = ["-q", "adapt", str(cal), "--label", "default", "--score", "score"]
        args += ["--target", str(target), "--onnx", str(folder / "out.onnx")]
        load, start = _load(), time.perf_counter()
        before, peak = _child(args)
        seconds = time.perf_counter() - start
    return {
        "what": "bernonnx adapt (Parquet target, --onnx, 200 resamples)",
        "input_mb": ROWS * 8 / MB,
        "beyond_mb": (peak - before) / MB - ROWS * 8 / MB,
        "seconds": seconds,
        "load": load,
        "estimate": f"peak RSS {peak / MB:.0f} MB, {before / MB:.0f} MB after the imports",
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results = [library_fit(), cli_adapt()]
    lines = [
        "# Prior estimate on 1,000,000 rows: peak memory",
        "",
        "`python benchmarks/prior_shift_memory.py` (target: at most 256 MB beyond the input; "
        "times under the load shown, the machine shared).",
        "",
        "| what | input (MB) | peak beyond the input (MB) | time (s) | load | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['what']} | {r['input_mb']:.0f} | {r['beyond_mb']:.0f} | "
            f"{r['seconds']:.1f} | {r['load']} | {r['estimate']} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
