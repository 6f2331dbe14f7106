"""Parity of the exported graph with Python on every test row of the shared real data sets.

Issue 9: the graph must give ``predict_proba``'s probabilities on every row, for every
supported base model. For each cell of the matrix below this fits a
``CalibratedClassifier`` around a realistic Pipeline (ColumnTransformer: a scaler on the
numeric columns, one-hot on the categorical ones; pandas DataFrame in, one graph input
per column), exports it with ``bernonnx.export.to_onnx``, runs the graph in onnxruntime
(CPU, one thread) on every test row and reports:

- max |p_onnx - p_python| over every test row and class;
- rows (number and share) with any class above the tolerance: 1e-6 for float32 graphs,
  1e-9 for float64 graphs. Python runs on the same float32 (float64) features the graph
  receives: numeric columns are cast before fitting and before predicting;
- label mismatches; fit and export time; export failures (stage, exception, message).

The matrix (``full``; data sets, splits, models, preprocessing: ``tests/_realdata.py``):

1. standard preprocessing, binary, prefit: 4 data sets x 10 base models x 2 dtypes;
2. the same, 3-fold ensemble (``cv=3``): credit and shoppers;
3. multiclass (diabetes ``GenHlth``, 5 classes), prefit, 10 models;
4. ``log_odds=True`` on the ``predict_proba`` models (RandomForest, ExtraTrees, MLP,
   GaussianNB), prefit, 4 data sets;
5. other preprocessing, prefit, 10 models: MinMaxScaler (diabetes, seed 000's),
   RobustScaler (magic), SimpleImputer + StandardScaler on NaN-holed columns (credit).

With the ``boosters`` extra installed, XGBoost and LightGBM join the 10 base models
wherever they appear: 272 cells instead of 232.

Every cell uses the default calibrator (``BernsteinCalibrator()``). ``--quick`` runs the
cells ``tests/test_real_parity.py`` enforces (``_realdata.quick_cells``): credit and
shoppers, five models, prefit, both dtypes, plus one k-fold and one multiclass cell.

Run::

    python benchmarks/real_parity.py                 # full matrix, 272 cells, ~7 min
    python benchmarks/real_parity.py --quick         # 24 cells, ~1 min, prints only
    python benchmarks/real_parity.py --data ../shared/data --out benchmarks/real_parity.md

``--data`` defaults to ``../shared/data`` beside the checkout (in a ``git worktree``,
beside the main checkout; ``$BERNONNX_SHARED_DATA`` overrides).

Measured here (one thread, 2 cores shared with other jobs): full run 6.5 to 7.0 min, quick run
0.7 to 1.1 min. The report also goes to a ``.csv`` beside ``--out``, one row per cell, for
diffing two runs.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pandas as pd
import skl2onnx
import sklearn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import _realdata as rd  # noqa: E402
from _harness import md_table  # noqa: E402
from _parity import PROMISED, tolerance  # noqa: E402

import bernonnx  # noqa: E402

MODELS = tuple(rd.BASE_MODELS)
DTYPES = ("float32", "float64")
#: The fields naming a cell, in table order.
KEYS = ("dataset", "task", "preprocessing", "model", "mode", "calibration", "dtype")


def full_matrix() -> list[rd.Cell]:
    cells = []
    for dtype in DTYPES:
        for dataset in rd.DATASETS:
            cells += [rd.Cell(dataset, model, dtype) for model in MODELS]
        for dataset in ("credit", "shoppers"):
            cells += [rd.Cell(dataset, model, dtype, mode="kfold") for model in MODELS]
        cells += [rd.Cell("diabetes", model, dtype, task="multiclass") for model in MODELS]
        for dataset in rd.DATASETS:
            cells += [
                rd.Cell(dataset, model, dtype, calibration="log_odds") for model in rd.PROBA_MODELS
            ]
        for dataset, preprocessing in (
            ("diabetes", "minmax"),
            ("magic", "robust"),
            ("credit", "impute"),
        ):
            cells += [
                rd.Cell(dataset, model, dtype, preprocessing=preprocessing) for model in MODELS
            ]
    return cells


# --------------------------------------------------------------------------- report


def _sci(x) -> str:
    return "—" if pd.isna(x) else f"{x:.1e}"


def _above(row) -> str:
    if pd.isna(row["n_above"]):
        return "—"
    n = int(row["n_above"])
    return f"{n:,} ({n / row['n_test']:.1%})"


def _labels(row) -> str:
    if pd.isna(row["n_label_mismatch"]):
        return "—"
    n = int(row["n_label_mismatch"])
    return "identical" if n == 0 else f"{n:,} differ"


def summary_table(results: pd.DataFrame) -> str:
    """Worst error per base model and dtype over every data set and mode; rows above tol."""
    lines = []
    for model in MODELS:
        line = [model]
        for dtype in DTYPES:
            part = results[(results.model == model) & (results.dtype == dtype)]
            if part.empty:
                line += ["—", "—"]
                continue
            ok = part[part.error.isna()]
            failed = len(part) - len(ok)
            worst = ok.max_abs_error.max() if len(ok) else float("nan")
            above = int(ok.n_above.sum()) if len(ok) else 0
            rows = int(ok.n_test.sum())
            mismatch = int(ok.n_label_mismatch.sum()) if len(ok) else 0
            text = f"{_sci(worst)}; {above:,} / {rows:,} rows"
            if mismatch:
                text += f"; {mismatch:,} labels differ"
            if failed:
                text += f"; {failed} cell(s) fail"
            line += [text, f"{int((ok.n_above > 0).sum() + failed)} / {len(part)}"]
        lines.append(line)
    header = ["base model"]
    for dtype in DTYPES:
        header += [
            f"{dtype}: worst \\|Δp\\|; rows > {tolerance(dtype, PROMISED):g}",
            f"{dtype} cells failing",
        ]
    return md_table(header, lines)


def full_table(results: pd.DataFrame) -> str:
    lines = []
    for _, row in results.iterrows():
        lines.append(
            [
                *(str(row[key]) for key in KEYS),
                f"{row['n_test']:,}",
                _sci(row["max_abs_error"]),
                _above(row),
                _labels(row),
                f"{row['fit_time']:.1f}",
                "—" if math.isnan(row["export_time"]) else f"{row['export_time']:.2f}",
                row["error"].replace("|", "\\|") if isinstance(row["error"], str) else "",
            ]
        )
    header = [
        "data",
        "task",
        "preprocessing",
        "model",
        "mode",
        "calibration",
        "dtype",
        "test rows",
        "max \\|Δp\\|",
        "rows > tol",
        "labels",
        "fit s",
        "export s",
        "failure",
    ]
    return md_table(header, lines)


def _git_commit() -> str:
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return commit + (" (uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(results: pd.DataFrame, *, command: str, seconds: float, note: str | None) -> str:
    ok = results[results.error.isna()]
    n_fail = int(results.error.notna().sum())
    n_bad = int((ok.n_above > 0).sum())
    versions = (
        f"bernonnx {bernonnx.__version__}, scikit-learn {sklearn.__version__}, "
        f"skl2onnx {skl2onnx.__version__}, onnx {onnx.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, numpy {np.__version__}, "
        f"pandas {pd.__version__}, Python {platform.python_version()}"
    )
    worst = ok.sort_values("max_abs_error", ascending=False).head(10)
    parts = [
        "# Parity of the exported graph with Python on real data (issue 9)",
        "",
        f"`{command}`, {datetime.date.today().isoformat()}, git {_git_commit()}, "
        f"{seconds / 60:.1f} min on one thread.",
        "",
        versions + ".",
        "",
    ]
    if note:
        parts += [f"**{note}**", ""]
    parts += [
        f"{len(results)} cells, {int(ok.n_test.sum()):,} test rows compared: "
        f"{n_bad} cells have rows above tolerance (float32 graph 1e-6, float64 graph "
        f"1e-9), {int((ok.n_label_mismatch > 0).sum())} cells have label mismatches, "
        f"{n_fail} cells fail to export or run. The data, splits, pipelines and models "
        "are described in `tests/_realdata.py`; Python runs on the same float32 (float64) "
        "features the graph receives.",
        "",
        "## Summary: worst max |p_onnx − p_python| per base model and graph dtype",
        "",
        "Over every data set, mode, preprocessing and calibration of the run; "
        "rows above tolerance summed over those cells.",
        "",
        summary_table(results),
        "",
        "## Worst cells",
        "",
        full_table(worst),
        "",
        "## Every cell",
        "",
        full_table(results),
        "",
    ]
    return "\n".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=rd.DEFAULT_DATA_DIR,
        help=f"folder holding the shared .csv.gz data sets (default: {rd.DEFAULT_DATA_DIR})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="markdown report (default: benchmarks/real_parity.md for the full run; --quick "
        "writes no file unless given one); the same numbers go to a .csv beside it",
    )
    parser.add_argument(
        "--quick", action="store_true", help="the 24 cells the test enforces (about 1 min)"
    )
    parser.add_argument("--note", help="a line printed in bold under the report's header")
    args = parser.parse_args(argv)

    missing = [s.file for s in rd.DATASETS.values() if not (args.data / s.file).is_file()]
    if missing:
        parser.error(
            f"data set(s) {', '.join(missing)} not found in {args.data}; pass --data with the "
            "folder holding the shared data (see its README.md)"
        )
    cells = rd.quick_cells() if args.quick else full_matrix()
    if args.out is None and not args.quick:
        args.out = ROOT / "benchmarks" / "real_parity.md"
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = []
    for i, cell in enumerate(cells, 1):
        with warnings.catch_warnings():
            # skl2onnx's SVC converter reads SVC.probA_, deprecated in scikit-learn 1.9
            warnings.filterwarnings("ignore", category=FutureWarning, message=".*probA_|.*probB_")
            row = rd.run_cell(cell, args.data)
        rows.append(row)
        status = row["error"] or (
            f"max {_sci(row['max_abs_error'])}, {row['n_above']} rows > tol, "
            f"{row['n_label_mismatch']} labels differ"
        )
        print(f"[{i}/{len(cells)}] {cell.id}: {status}", flush=True)
    seconds = time.perf_counter() - start
    results = pd.DataFrame(rows).drop(columns="traceback", errors="ignore")
    print(f"\n{summary_table(results)}\n\n{len(cells)} cells in {seconds / 60:.1f} min")
    if args.out is not None:
        command = "python benchmarks/real_parity.py" + (" --quick" if args.quick else "")
        args.out.write_text(report(results, command=command, seconds=seconds, note=args.note))
        # the same numbers, one row per cell, for diffing a run before and after a change
        results.to_csv(args.out.with_suffix(".csv"), index=False)
        print(f"wrote {args.out} and {args.out.with_suffix('.csv').name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
