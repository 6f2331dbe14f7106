"""Parity of the exported graph with Python on every test row of the shared real data sets.

Issues 9 and 21: on data as users hold it, the graph must give ``predict_proba``'s
probabilities on every row, for every supported base model, or ``to_onnx`` must refuse.
The tables are read as pandas reads them, nothing cast (int64, float64, bool and string
columns); credit's array is the bundled loader's (float64). For each cell of the matrix
below this fits a ``CalibratedClassifier`` on the data as held, exports it with
``bernonnx.export.to_onnx(model, X_test[:5], dtype=...)``, feeds the graph every test row
at its declared input types (``onnx_inputs``) in onnxruntime (CPU, one thread) and
reports:

- the graph's dtype (of its declared inputs) and max |p_onnx - p_python| over every
  test row and class, Python run on the same rows as held;
- rows (number and share) with any class above the tolerance: 1e-6 for float32 graphs,
  1e-9 for float64 graphs; label mismatches; fit and export time;
- the outcome: ``exact``, ``off`` (rows above tolerance or labels differ), ``refused``
  (``to_onnx`` raised "cannot carry": expected, and only then, for an explicit float32
  export of values float32 cannot hold: magic, shoppers) or ``error`` (stage, exception).

The matrix (``full``; data sets, splits, layouts, models: ``benchmarks/_realdata.py``). Parts
1 to 5 on the data as read, ColumnTransformer layout, default dtype (a float64 graph):

1. standard preprocessing, binary, prefit: 4 data sets x 12 base models;
2. the same, 3-fold ensemble (``cv=3``): credit and shoppers;
3. multiclass (diabetes ``GenHlth``, 5 classes), prefit;
4. ``log_odds=True`` on the ``predict_proba`` models (RandomForest, ExtraTrees, MLP,
   GaussianNB), prefit, 4 data sets;
5. other preprocessing, prefit: MinMaxScaler (diabetes, seed 000's), RobustScaler
   (magic), SimpleImputer + StandardScaler on NaN-holed columns (credit);
6. layouts: the numeric columns into a plain ``Pipeline(StandardScaler, model)``, a bare
   model, and as a float64 array into the pipeline (credit: the bundled loader's),
   credit and shoppers, prefit, every model;
7. dtypes, part 1's cells: float32 data (every numeric column cast, the float32 test:
   a float32 graph); an explicit ``dtype=np.float32`` on the data as read (accepted on
   credit and diabetes, int64 columns; refused on magic and shoppers), also in the other
   layouts; an explicit ``dtype=np.float64`` on float32 data (four models).

The 12 base models are the 10 of scikit-learn plus XGBoost and LightGBM (the
``boosters`` extra), when installed. Every cell uses the default calibrator
(``BernsteinCalibrator()``). ``--quick`` runs the cells ``tests/test_real_parity.py``
enforces (``_realdata.quick_cells``: every layout, every dtype case, one k-fold, one
multiclass).

Run::

    OMP_NUM_THREADS=1 python benchmarks/real_parity.py     # full matrix, ~340 cells
    python benchmarks/real_parity.py --quick               # 24 cells, < 1 min, prints only
    python benchmarks/real_parity.py --out benchmarks/real_parity.md

``--data`` defaults to the tables bundled with bernonnx (``bernonnx/data``, see
:mod:`bernonnx.datasets`); ``$BERNONNX_SHARED_DATA`` overrides, as ``--data`` does.

The report also goes to a ``.csv`` beside ``--out``, one row per cell, for diffing two
runs; its header gives the run time.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import subprocess
import time
import warnings
from pathlib import Path

import _realdata as rd
import numpy as np
import onnx
import onnxruntime
import pandas as pd
import skl2onnx
import sklearn
from _harness import md_table

import bernonnx
from bernonnx.export import PARITY_TOLERANCE

ROOT = Path(__file__).resolve().parents[1]

MODELS = tuple(rd.BASE_MODELS)
#: Graph dtypes, as the graph declares its inputs.
GRAPH_DTYPES = ("float32", "float64")
#: The fields naming a cell, in table order.
KEYS = (
    "dataset",
    "task",
    "layout",
    "preprocessing",
    "model",
    "mode",
    "calibration",
    "data",
    "dtype",
)
#: The models of part 7's explicit float64 export of float32 data, and of the other
#: layouts' explicit float32 cells (one per family, to keep the run under 10 min).
FEW = ("LogisticRegression", "RandomForest", "HistGradientBoosting", "MLPClassifier")


def full_matrix() -> list[rd.Cell]:
    Cell = rd.Cell
    cells = []
    # 1-5: the data as read, ColumnTransformer, default dtype
    for dataset in rd.DATASETS:
        cells += [Cell(dataset, model) for model in MODELS]
    for dataset in ("credit", "shoppers"):
        cells += [Cell(dataset, model, mode="kfold") for model in MODELS]
    cells += [Cell("diabetes", model, task="multiclass") for model in MODELS]
    for dataset in rd.DATASETS:
        cells += [Cell(dataset, model, calibration="log_odds") for model in rd.PROBA_MODELS]
    for dataset, preprocessing in (
        ("diabetes", "minmax"),
        ("magic", "robust"),
        ("credit", "impute"),
    ):
        cells += [Cell(dataset, model, preprocessing=preprocessing) for model in MODELS]
    # 6: layouts
    for layout in ("pipeline", "bare", "array"):
        preprocessing = "none" if layout == "bare" else "standard"
        for dataset in ("credit", "shoppers"):
            cells += [
                Cell(dataset, model, layout=layout, preprocessing=preprocessing)
                for model in MODELS
            ]
    # 7: dtypes
    for dataset in rd.DATASETS:
        cells += [Cell(dataset, model, data="float32") for model in MODELS]
    for dataset in rd.DATASETS:
        cells += [Cell(dataset, model, dtype="float32") for model in MODELS]
    for layout in ("pipeline", "bare", "array"):
        preprocessing = "none" if layout == "bare" else "standard"
        for dataset in ("credit", "shoppers"):
            models = FEW if dataset == "credit" else FEW[:1]  # shoppers: refused
            cells += [
                Cell(dataset, m, dtype="float32", layout=layout, preprocessing=preprocessing)
                for m in models
            ]
    for dataset in rd.DATASETS:
        cells += [Cell(dataset, model, dtype="float64", data="float32") for model in FEW]
    # 8: the binary maps of the CalArena leaders, every model, binary and multiclass
    for calibration in rd.CALIBRATIONS:
        for dataset in rd.DATASETS:
            cells += [Cell(dataset, model, calibration=calibration) for model in MODELS]
        cells += [
            Cell("diabetes", model, task="multiclass", calibration=calibration) for model in MODELS
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


def _failing(part: pd.DataFrame) -> pd.DataFrame:
    """Cells whose outcome is not the expected one (errors included)."""
    return part[~part.passed.astype(bool)]


def summary_table(results: pd.DataFrame) -> str:
    """Worst error per base model and graph dtype over every cell; refusals; failures."""
    lines = []
    for model in MODELS:
        mine = results[results.model == model]
        if mine.empty:
            continue
        line = [model]
        for graph in GRAPH_DTYPES:
            part = mine[mine.graph_dtype == graph]
            if part.empty:
                line += ["—"]
                continue
            above = int(part.n_above.sum())
            mismatch = int(part.n_label_mismatch.sum())
            text = f"{_sci(part.max_abs_error.max())}; {above:,} / {int(part.n_test.sum()):,} rows"
            if mismatch:
                text += f"; {mismatch:,} labels differ"
            line.append(text)
        refused = mine[mine.outcome == "refused"]
        line += [
            str(len(mine)),
            f"{len(refused)} ({len(_failing(refused))} unexpected)" if len(refused) else "0",
            f"{len(_failing(mine))} / {len(mine)}",
        ]
        lines.append(line)
    header = ["base model"]
    header += [
        f"{g} graph: worst \\|Δp\\|; rows > {PARITY_TOLERANCE[np.dtype(g)]:g}"
        for g in GRAPH_DTYPES
    ]
    header += ["cells", "refused", "cells not as expected"]
    return md_table(header, lines)


def _group_line(label: list[str], part: pd.DataFrame) -> list[str]:
    graphs = sorted(set(part.graph_dtype.dropna()))
    worst = "; ".join(
        f"{g} {_sci(part[part.graph_dtype == g].max_abs_error.max())}" for g in graphs
    )
    return [
        *label,
        str(len(part)),
        ", ".join(graphs) or "—",
        worst or "—",
        str(int((part.outcome == "exact").sum())),
        str(int((part.outcome == "refused").sum())),
        str(len(_failing(part))),
    ]


def axes_table(results: pd.DataFrame) -> str:
    """One line per (layout, data, dtype argument) met in the run."""
    lines = []
    for (layout, data, dtype), part in results.groupby(["layout", "data", "dtype"], sort=False):
        lines.append(_group_line([layout, data, dtype], part))
    header = [
        "layout",
        "data",
        "dtype=",
        "cells",
        "graph",
        "worst \\|Δp\\|",
        "exact",
        "refused",
        "not as expected",
    ]
    return md_table(header, lines)


def full_table(results: pd.DataFrame) -> str:
    lines = []
    for _, row in results.iterrows():
        problem = row["error"] if isinstance(row["error"], str) else ""
        if not problem and isinstance(row["refusal"], str):
            problem = "refused: " + row["refusal"]
        lines.append(
            [
                *(str(row[key]) for key in KEYS),
                str(row["graph_dtype"]) if isinstance(row["graph_dtype"], str) else "—",
                f"{row['n_test']:,}",
                _sci(row["max_abs_error"]),
                _above(row),
                _labels(row),
                f"{row['outcome']}" + ("" if row["passed"] else f" (expected {row['expected']})"),
                f"{row['fit_time']:.1f}",
                "—" if math.isnan(row["export_time"]) else f"{row['export_time']:.2f}",
                problem.replace("|", "\\|"),
            ]
        )
    header = [
        "data set",
        "task",
        "layout",
        "preprocessing",
        "model",
        "mode",
        "calibration",
        "data",
        "dtype=",
        "graph",
        "test rows",
        "max \\|Δp\\|",
        "rows > tol",
        "labels",
        "outcome",
        "fit s",
        "export s",
        "failure or refusal",
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
    compared = results[results.outcome.isin(["exact", "off"])]
    n_fail = len(_failing(results))
    refused = results[results.outcome == "refused"]
    versions = (
        f"bernonnx {bernonnx.__version__}, scikit-learn {sklearn.__version__}, "
        f"skl2onnx {skl2onnx.__version__}, onnx {onnx.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, numpy {np.__version__}, "
        f"pandas {pd.__version__}, Python {platform.python_version()}"
    )
    by_error = compared.assign(
        ratio=compared.max_abs_error / compared.tolerance.astype(float)
    ).sort_values("ratio", ascending=False)
    worst = pd.concat([_failing(results), by_error.head(10).drop(columns="ratio")])
    worst = worst[~worst.index.duplicated()]
    per_graph = "; ".join(
        f"{g} graphs: {int((compared.graph_dtype == g).sum())} cells, worst "
        f"{_sci(compared[compared.graph_dtype == g].max_abs_error.max())}"
        for g in GRAPH_DTYPES
    )
    parts = [
        "# Parity of the exported graph with Python on real data as read",
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
        f"{len(results)} cells: {len(compared)} exported and compared on "
        f"{int(compared.n_test.sum()):,} test rows ({per_graph}), "
        f"{len(refused)} refused by `to_onnx` (explicit float32 on values float32 cannot "
        f"hold), {int(results.error.notna().sum())} errors; "
        f"**{n_fail} cells not as expected** (rows above tolerance, float32 graph 1e-6, "
        "float64 graph 1e-9, labels differing, a refusal where exactness was expected or "
        "the reverse, or an error). The tables are read as pandas reads them, nothing "
        "cast, except the `data=float32` cells (the float32 test); Python's "
        "`predict_proba` runs on the test rows as held, the graph is fed them at its "
        "declared input types. Data, splits, layouts and models: `benchmarks/_realdata.py`.",
        "",
        "## By layout, data and dtype argument",
        "",
        axes_table(results),
        "",
        "## By base model: worst max |p_onnx − p_python| per graph dtype",
        "",
        "Over every data set, layout, mode, preprocessing and calibration of the run; "
        "rows above tolerance summed over those cells.",
        "",
        summary_table(results),
        "",
        "## Cells not as expected, then the worst cells (by error over tolerance)",
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
        "--quick", action="store_true", help="the 24 cells the test enforces (under 1 min)"
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
            f"refused ({row['expected']} expected)"
            if row["outcome"] == "refused"
            else f"{row['graph_dtype']} graph, max {_sci(row['max_abs_error'])}, "
            f"{row['n_above']} rows > tol, {row['n_label_mismatch']} labels differ"
        )
        if not row["passed"]:
            status = "NOT AS EXPECTED: " + status + "\n" + row.get("traceback", "")
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
