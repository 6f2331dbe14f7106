"""Helpers shared by the calibration studies in this folder (not a public API).

Data loading, the command line every study accepts, the metrics of the seed
documents (from ``bernonnx.metrics``: its 10-bin uniform ECE bins exactly as
the blog post's code and scikit-learn's ``calibration_curve`` do) and a markdown
results table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from bernonnx import metrics
from bernonnx._meta import LOG_ODDS_EPS

#: Environment variable naming the data folder, read when ``--data`` is not given.
DATA_ENV = "BERNONNX_SHARED_DATA"
#: The shared data folder: ``$BERNONNX_SHARED_DATA``, else ``<checkout>/../shared/data``
#: (CI puts it next to the repository).
DEFAULT_DATA_DIR = (
    Path(os.environ[DATA_ENV])
    if os.environ.get(DATA_ENV)
    else Path(__file__).resolve().parents[2] / "shared" / "data"
)
#: Where each data file comes from: the public page to download it from, and what to save.
DATA_SOURCES = {
    "diabetes_brfss2015.csv.gz": (
        "CDC BRFSS 2015 Diabetes Health Indicators, the full unbalanced binary version "
        "(diabetes_binary_health_indicators_BRFSS2015.csv, 253,680 rows), from Kaggle "
        "(https://www.kaggle.com/datasets/alexteboul/diabetes-health-indicators-dataset) "
        "or the UCI repository (https://archive.ics.uci.edu/dataset/891); gzip it as "
        "diabetes_brfss2015.csv.gz"
    ),
    "uci_credit_card.csv.gz": (
        'UCI "Default of credit card clients" in its Kaggle layout (UCI_Credit_Card.csv, '
        "30,000 rows, https://www.kaggle.com/datasets/uciml/default-of-credit-card-clients-"
        "dataset; also https://archive.ics.uci.edu/dataset/350); gzip it as "
        "uci_credit_card.csv.gz"
    ),
}
#: Rows kept by ``--quick`` (stratified), small enough for a CI smoke run.
QUICK_ROWS = 20_000

#: Table columns: key -> (header, format). Missing values print as a dash.
COLUMNS = {
    "calibrator": ("calibrator", "{}"),
    "ece": ("ECE (10 bins)", "{:.4f}"),
    "smece": ("smooth ECE [90% CI]", "{}"),
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
    """Parser with the options every study takes: ``--data``, ``--out``, ``--quick``.

    ``--data`` lands in ``args.data_dir``; ``--data-dir`` is its older spelling.
    """
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        "--data-dir",
        dest="data_dir",
        metavar="PATH",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=(
            f"folder holding the .csv.gz data sets (default: ${DATA_ENV} if set, else the "
            f"shared data folder next to the checkout, {DEFAULT_DATA_DIR})"
        ),
    )
    parser.add_argument("--out", type=Path, help="also write the results table (markdown) here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"stratified subsample of {QUICK_ROWS:,} rows and fewer calibrators (smoke run)",
    )
    return parser


def load_csv(data_dir: Path, filename: str) -> pd.DataFrame:
    """Read ``data_dir / filename``; exit with code 2 and a clear message if it is absent.

    The message says where the file comes from (:data:`DATA_SOURCES`) and how to point
    the study at it.
    """
    path = Path(data_dir) / filename
    bundled = resources.files("bernonnx.data").joinpath(filename)
    if not path.is_file() and bundled.is_file():
        # the credit data ship with bernonnx: a clone without the shared folder still runs
        print(f"note: {path} not found; reading the copy bundled with bernonnx", file=sys.stderr)
        with resources.as_file(bundled) as bundled_path:
            return pd.read_csv(bundled_path)
    if not path.is_file():
        source = DATA_SOURCES.get(filename, "see the data folder's README.md")
        print(
            f"error: data file {path} not found. It is {source}. Pass --data PATH naming the "
            f"folder that holds {filename}, or set ${DATA_ENV} to it (default: the shared "
            f"data folder next to the checkout, {DEFAULT_DATA_DIR}).",
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

    The binning of scikit-learn's ``calibration_curve`` and of the blog post's ``ece``:
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
        # uniform bins binned as calibration_curve does: the blog post's ECE exactly
        row["ece"] = metrics.expected_calibration_error(y, p, n_bins=10)
        # the smooth ECE (Błasiok and Nakkiran) and its bootstrap interval; a
        # modest, seeded bootstrap keeps the study's runtime and its table reproducible
        curve = metrics.smooth_calibration_curve(
            y, p, n_points=2, confidence=0.9, n_resamples=50, random_state=0
        )
        low, high = curve["smooth_ece_ci"]
        row["smece"] = f"{curve['smooth_ece']:.4f} [{low:.4f}, {high:.4f}]"
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
