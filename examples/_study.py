"""Helpers shared by the calibration studies in this folder (not a public API).

Data loading, the command line every study accepts, the metrics of the seed
documents (from ``bernonnx.metrics``: its 10-bin uniform ECE bins exactly as
seed 000's code and scikit-learn's ``calibration_curve`` do) and a markdown
results table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from bernonnx import metrics
from bernonnx.calibration import LOG_ODDS_EPS

#: ``<checkout>/../shared/data``: the data folder sits next to the repository.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Rows kept by ``--quick`` (stratified), small enough for a CI smoke run.
QUICK_ROWS = 20_000

#: Table columns: key -> (header, format). Missing values print as a dash.
COLUMNS = {
    "calibrator": ("calibrator", "{}"),
    "ece": ("ECE (10 bins)", "{:.4f}"),
    "rms_ce": ("RMS cal. error (15 bins)", "{:.4f}"),
    "brier": ("Brier", "{:.5f}"),
    "log_loss": ("log loss", "{:.5f}"),
    "auc": ("test AUC", "{:.6f}"),
    "distinct": ("distinct outputs", "{:,}"),
    "degree": ("degree", "{}"),
    "fit_time": ("fit time (s)", "{:.3f}"),
}


# --------------------------------------------------------------------------- command line


def study_parser(description: str) -> argparse.ArgumentParser:
    """Parser with the options every study takes: ``--data-dir``, ``--out``, ``--quick``."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"folder holding the .csv.gz data sets (default: {DEFAULT_DATA_DIR})",
    )
    parser.add_argument("--out", type=Path, help="also write the results table (markdown) here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"stratified subsample of {QUICK_ROWS:,} rows and fewer calibrators (smoke run)",
    )
    return parser


def load_csv(data_dir: Path, filename: str) -> pd.DataFrame:
    """Read ``data_dir / filename``; exit with code 2 and a clear message if it is absent."""
    path = Path(data_dir) / filename
    if not path.is_file():
        print(
            f"error: data file {path} not found. Pass --data-dir pointing to the folder that "
            f"holds {filename} (by default the shared data folder next to the checkout, "
            f"{DEFAULT_DATA_DIR}).",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return pd.read_csv(path)


def stratified_subsample(
    df: pd.DataFrame, label: str, n_rows: int, random_state: int = 0
) -> pd.DataFrame:
    """``n_rows`` rows of ``df`` with the class proportions of ``df[label]`` kept."""
    if n_rows >= len(df):
        return df
    subsample, _ = train_test_split(
        df, train_size=n_rows, stratify=df[label], random_state=random_state
    )
    return subsample


# --------------------------------------------------------------------------- metrics


def log_odds(p: np.ndarray) -> np.ndarray:
    """``log(p / (1 - p))`` with ``p`` clipped to ``[1e-15, 1 - 1e-15]``."""
    p = np.clip(np.asarray(p, dtype=np.float64), LOG_ODDS_EPS, 1.0 - LOG_ODDS_EPS)
    return np.log(p) - np.log1p(-p)


def equal_width_bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index in ``0 .. n_bins - 1`` of each probability, bins ``((k-1)/M, k/M]``.

    The binning of scikit-learn's ``calibration_curve`` and of seed 000's ``ece``:
    ``np.searchsorted`` on the inner edges, so an edge value joins the lower bin.
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], p)


def evaluate(y, p, *, probability: bool = True, rms_bins: int | None = None) -> dict:
    """Metrics of one column of predictions ``p`` on labels ``y``.

    ``probability=False`` (raw decision values) gives the AUC and the number
    of distinct outputs only; ``rms_bins`` adds the RMS calibration error.
    """
    p = np.asarray(p, dtype=np.float64)
    row = {"auc": roc_auc_score(y, p), "distinct": int(np.unique(p).size)}
    if probability:
        # uniform bins binned as calibration_curve does: seed 000's ECE exactly
        row["ece"] = metrics.expected_calibration_error(y, p, n_bins=10)
        row["brier"] = metrics.brier_score(y, p)
        row["log_loss"] = metrics.log_loss(y, p)
        if rms_bins is not None:
            row["rms_ce"] = metrics.rms_calibration_error(y, p, n_bins=rms_bins)
    return row


def timed(fn: Callable, *args, **kwargs):
    """``(fn(*args, **kwargs), seconds)`` measured with ``time.perf_counter``."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


# --------------------------------------------------------------------------- reporting


def markdown_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """Rows (dicts keyed like ``COLUMNS``) as a markdown table; missing cells are dashes."""
    lines = [
        "| " + " | ".join(COLUMNS[key][0] for key in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        cells = [
            COLUMNS[key][1].format(row[key]) if row.get(key) is not None else "—"
            for key in columns
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


class ResultTable:
    """Rows of a study: the metrics of each calibrator's test predictions.

    ``preds[name]`` keeps the predictions for cross-checks between rows.
    """

    def __init__(self, y_test, *, rms_bins: int | None = None):
        self.y_test = np.asarray(y_test)
        self.rms_bins = rms_bins
        self.rows: list[dict] = []
        self.preds: dict[str, np.ndarray] = {}

    def add(self, name: str, p, *, degree=None, fit_time=None, probability: bool = True):
        """Evaluate ``p`` on the test labels and append a row named ``name``."""
        p = np.asarray(p, dtype=np.float64)
        metrics = evaluate(self.y_test, p, probability=probability, rms_bins=self.rms_bins)
        self.rows.append({"calibrator": name, **metrics, "degree": degree, "fit_time": fit_time})
        self.preds[name] = p
        return self.rows[-1]

    def markdown(self, columns: Sequence[str]) -> str:
        """The rows as a markdown table with ``columns``."""
        return markdown_table(self.rows, columns)


def best_rows(rows: Sequence[dict], metrics: Sequence[str] = ("ece", "brier", "log_loss")):
    """Lines naming the row with the lowest value of each metric."""
    lines = []
    for key in metrics:
        scored = [row for row in rows if row.get(key) is not None]
        if scored:
            best = min(scored, key=lambda row: row[key])
            fmt = COLUMNS[key][1]
            lines.append(f"best {COLUMNS[key][0]}: {fmt.format(best[key])} ({best['calibrator']})")
    return lines


def check_line(ok: bool, message: str) -> str:
    """A ``PASS: ...`` or ``FAIL: ...`` line."""
    return f"{'PASS' if ok else 'FAIL'}: {message}"


def report(text: str, out: Path | None) -> None:
    """Print ``text`` and, with ``--out``, write it to that file."""
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"\nwrote {out}")
