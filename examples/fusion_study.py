"""Fusing two neural networks' scores: Wang & Liu's protocol on our data
======================================================================

Wang & Liu (IJCAI 2020, section 5.2) calibrate the scores of two classifiers
jointly with a coordinate-wise monotone Bernstein polynomial
("BernPolyFusion"). Their protocol, repeated ``--repeats`` times per data set:

* draw three disjoint sets of 500 rows: one trains classifier 1, one
  classifier 2 (one-hidden-layer ``MLPClassifier`` networks, the paper's
  "three-layer feed-forward networks", 10 and 20 hidden units, different
  seeds, on standardised features), one fits the calibrators on the pair of
  scores ``(s1, s2)``; every other row is a test row;
* map each score to ``[0, 1]`` by its empirical CDF on the calibration rows,
  cut ``[0, 1]^2`` into a 10 x 10 grid (the same grid for every method), and
  in every cell holding at least ``min_count`` test rows compare the positive
  rate with the method's prediction at the cell centre
  (:func:`bernonnx.metrics.grid_calibration_error` with a callable);
* report grid MCE, grid ECE and the Brier score over all test rows, in
  percent, mean +- standard deviation over the repeats.

Methods, all fitted on the same 500 calibration rows:

* ``MultivariateBernsteinCalibrator(loss="squared", score_transform="quantile")``:
  the paper's BernPolyFusion (least squares, empirical-CDF transform, degrees
  by 5-fold cross-validation);
* ``MultivariateBernsteinCalibrator(loss="log", score_transform="logistic")``:
  our choice of loss and the 1-D calibrator's default transform;
* logistic-regression stacking on the two scores' log-odds;
* 1-D ``IsotonicCalibrator`` and ``BernsteinCalibrator()`` on the mean of the
  two scores;
* the uncalibrated mean score, for reference.

Data: the CDC BRFSS 2015 diabetes data (253,680 rows; ``min_count`` 1000 as
in the paper) and the UCI credit-card default data (30,000 rows, 28,500 test
rows; ``min_count`` 250, see the notes the script prints). The diabetes file,
``diabetes_brfss2015.csv.gz``, and the credit data ship with bernonnx
(:mod:`bernonnx.datasets`); ``--data PATH`` or ``$BERNONNX_SHARED_DATA`` names another
folder holding them.

Run from the repository root::

    python examples/fusion_study.py --out examples/fusion_study.md   # full, ~8 min
    python examples/fusion_study.py --quick                            # CI smoke run, 1 repeat
    python examples/fusion_study.py --quick --plot fusion.png          # contour plot too
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import BernsteinCalibrator, IsotonicCalibrator, MultivariateBernsteinCalibrator
from bernonnx.datasets import load_credit_default
from bernonnx.metrics import brier_score, grid_calibration_error

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import load_csv, log_odds, report, study_parser  # noqa: E402

DIABETES_FILE = "diabetes_brfss2015.csv.gz"
DIABETES_LABEL = "Diabetes_binary"
#: Rows per set (classifier 1, classifier 2, calibration), as in the paper.
SET_ROWS = 500
N_BINS = 10
#: Test rows kept by ``--quick`` (random subset) and its lowered cell minimum.
QUICK_TEST_ROWS = 20_000
QUICK_MIN_COUNT = 100
PAPER_NAME = "BernPolyFusion: squared + quantile (paper)"
#: Wang & Liu, Table 1, BernPolyFusion rows (percent, mean +- sd over 10 repeats).
PAPER_TABLE = """\
| data set (paper) | MCE | ECE | Brier |
|---|---|---|---|
| Adult | 5.613 ± 0.650 | 2.226 ± 0.309 | 14.375 ± 0.854 |
| Census | 6.241 ± 0.565 | 3.587 ± 0.370 | 18.966 ± 0.724 |
| Covertypes | 5.367 ± 0.434 | 2.847 ± 0.231 | 16.095 ± 0.577 |
| Dota2 | 5.591 ± 0.528 | 2.799 ± 0.268 | 16.811 ± 0.434 |
| SUSY | 5.054 ± 0.394 | 2.432 ± 0.241 | 15.539 ± 0.473 |
| mean | 5.573 ± 0.514 | 2.727 ± 0.284 | 16.357 ± 0.612 |"""


@dataclass
class DataSet:
    name: str
    X: np.ndarray
    y: np.ndarray
    #: Smallest number of test rows in a kept grid cell.
    min_count: int
    #: Why that minimum, printed under the table.
    note: str


def load_data_sets(data_dir: Path) -> list[DataSet]:
    """The diabetes data (shared folder) and the credit data (shipped with bernonnx)."""
    df = load_csv(data_dir, DIABETES_FILE)
    X_diab = df.drop(columns=DIABETES_LABEL).to_numpy(dtype=np.float64)
    y_diab = df[DIABETES_LABEL].to_numpy().astype(np.int64)
    X_credit, y_credit, _ = load_credit_default()
    return [
        DataSet(
            "CDC diabetes (BRFSS 2015)",
            X_diab,
            y_diab,
            1000,
            "minimum 1000 test rows per cell, as in the paper",
        ),
        DataSet(
            "UCI credit default",
            X_credit,
            y_credit,
            250,
            "minimum 250 test rows per cell, not the paper's 1000: the 28,500 test rows are "
            "a ninth of the diabetes test set, and 1000 kept only 2 cells (10 % of the "
            "rows) in trial repeats; 250 keeps about half the cells while the standard "
            "error of a cell's positive rate stays at most 3.2 points (1000 rows: 1.6; 100 "
            "rows would keep 95 % of the rows but at 5 points, drowning the differences)",
        ),
    ]


# --------------------------------------------------------------------------- one repeat


def train_networks(X, y, rows1, rows2, seed: int):
    """Two one-hidden-layer networks on disjoint rows; different sizes and seeds."""
    nets = []
    for rows, hidden, offset in ((rows1, 10, 0), (rows2, 20, 1)):
        net = make_pipeline(
            StandardScaler(),
            MLPClassifier(
                hidden_layer_sizes=(hidden,),
                alpha=1e-2,
                max_iter=500,
                random_state=2 * seed + offset,
            ),
        )
        with warnings.catch_warnings():
            # 500 rows: Adam may stop at max_iter before its tolerance, which is fine here
            warnings.simplefilter("ignore", ConvergenceWarning)
            net.fit(X[rows], y[rows])
        nets.append(net)
    return nets


def scores_of(nets, X) -> np.ndarray:
    """``(n, 2)`` matrix of the networks' positive-class probabilities."""
    return np.column_stack([net.predict_proba(X)[:, 1] for net in nets])


class EmpiricalCDF:
    """Per-column empirical CDF of the calibration scores, and its inverse.

    ``F(s) = #{calibration scores <= s} / n``: the paper's map of each score
    to ``[0, 1]``, the coordinates of the evaluation grid. ``inverse(u)``
    returns, per column, the smallest calibration score ``x`` with
    ``F(x) >= u``, so a cell centre maps back to a score inside that cell.
    """

    def __init__(self, scores: np.ndarray):
        self.sorted = np.sort(scores, axis=0)

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        n = self.sorted.shape[0]
        return np.column_stack(
            [
                np.searchsorted(self.sorted[:, m], scores[:, m], side="right") / n
                for m in range(scores.shape[1])
            ]
        )

    def inverse(self, u: np.ndarray) -> np.ndarray:
        n = self.sorted.shape[0]
        idx = np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)
        return np.column_stack([self.sorted[idx[:, m], m] for m in range(u.shape[1])])


def fusion_methods():
    """``name -> fit(S, y) -> predict(S)`` for a score matrix ``S`` of shape (n, 2)."""

    def bernstein_multi(**params):
        def fit(S, y):
            cal = MultivariateBernsteinCalibrator(**params).fit(S, y)
            return lambda T: cal.predict_proba(T)[:, 1], cal

        return fit

    def stacking(S, y):
        lr = LogisticRegression().fit(log_odds(S), y)
        return lambda T: lr.predict_proba(log_odds(T))[:, 1], lr

    def on_mean(cls):
        def fit(S, y):
            cal = cls().fit(S.mean(axis=1), y)
            return lambda T: cal.predict_proba(T.mean(axis=1))[:, 1], cal

        return fit

    return {
        PAPER_NAME: bernstein_multi(loss="squared", score_transform="quantile"),
        "Multivariate Bernstein: log + logistic (ours)": bernstein_multi(
            loss="log", score_transform="logistic"
        ),
        "logistic regression on the 2 log-odds": stacking,
        "isotonic on the mean score": on_mean(IsotonicCalibrator),
        "BernsteinCalibrator() on the mean score": on_mean(BernsteinCalibrator),
        "mean score, uncalibrated": lambda S, y: (lambda T: T.mean(axis=1), None),
    }


def one_repeat(data: DataSet, seed: int, *, test_rows: int | None, min_count: int):
    """Metrics of every method on one random draw; also the fitted paper calibrator."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(data.y.shape[0])
    rows1, rows2, rows_cal = (perm[k * SET_ROWS : (k + 1) * SET_ROWS] for k in range(3))
    rows_test = perm[3 * SET_ROWS :]
    if test_rows is not None:
        rows_test = rows_test[:test_rows]
    nets = train_networks(data.X, data.y, rows1, rows2, seed)
    S_cal, y_cal = scores_of(nets, data.X[rows_cal]), data.y[rows_cal]
    S_test, y_test = scores_of(nets, data.X[rows_test]), data.y[rows_test]

    cdf = EmpiricalCDF(S_cal)
    coords = cdf(S_test)
    results, fitted = {}, {}
    for name, fit in fusion_methods().items():
        start = time.perf_counter()
        predict, model = fit(S_cal, y_cal)
        fit_time = time.perf_counter() - start
        p_test = predict(S_test)
        at_centres = grid_calibration_error(
            y_test,
            lambda centres, predict=predict: predict(cdf.inverse(centres)),
            coords,
            n_bins=N_BINS,
            min_count=min_count,
        )
        from_rows = grid_calibration_error(
            y_test, p_test, coords, n_bins=N_BINS, min_count=min_count
        )
        cells = at_centres["cells"]
        rate, weight = cells["fraction_positive"], cells["weight"]
        results[name] = {
            "mce": at_centres["mce"],
            "ece": at_centres["ece"],
            "ece_rows": from_rows["ece"],
            "brier": brier_score(y_test, p_test),
            "fit_time": fit_time,
            "n_cells": at_centres["n_cells"],
            # E|rate - truth| of a cell rate from W rows is about sqrt(2 / pi) * its s.e.
            "share": float(weight.sum() / y_test.shape[0]),
            "noise": float(np.mean(np.sqrt(2 / np.pi * rate * (1 - rate) / weight))),
            "degrees": getattr(model, "degrees_", None),
        }
        fitted[name] = model
    return results, fitted[PAPER_NAME], S_cal


# --------------------------------------------------------------------------- report


def _pm(values, scale=100.0, digits=3) -> str:
    v = scale * np.asarray(values, dtype=np.float64)
    return f"{np.mean(v):.{digits}f} ± {np.std(v, ddof=1) if v.size > 1 else 0.0:.{digits}f}"


def summary_table(runs: list[dict]) -> str:
    """Markdown table: per method, mean +- sd over the repeats."""
    lines = [
        "| method | grid MCE (%) | grid ECE (%) | grid ECE, cell means (%) | Brier (%) "
        "| best in repeats: MCE / ECE / Brier | fit time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    wins = {key: _wins(runs, key) for key in ("mce", "ece", "brier")}
    for name in runs[0]:
        col = {key: [run[name][key] for run in runs] for key in runs[0][name]}
        best = " / ".join(str(wins[key][name]) for key in ("mce", "ece", "brier"))
        lines.append(
            f"| {name} | {_pm(col['mce'])} | {_pm(col['ece'])} | {_pm(col['ece_rows'])} "
            f"| {_pm(col['brier'])} | {best} | {_pm(col['fit_time'], scale=1.0)} |"
        )
    return "\n".join(lines)


def _wins(runs: list[dict], key: str) -> dict[str, int]:
    """Per method, the number of repeats in which it had the lowest ``key``."""
    wins = dict.fromkeys(runs[0], 0)
    for run in runs:
        wins[min(run, key=lambda name: run[name][key])] += 1
    return wins


def data_set_section(data: DataSet, runs: list[dict], min_count: int, n_test: int) -> str:
    cells = [next(iter(run.values()))["n_cells"] for run in runs]
    share = [next(iter(run.values()))["share"] for run in runs]
    noise = [next(iter(run.values()))["noise"] for run in runs]
    degrees = [run[PAPER_NAME]["degrees"] for run in runs]
    ours = [run["Multivariate Bernstein: log + logistic (ours)"]["degrees"] for run in runs]
    return "\n".join(
        [
            f"## {data.name}: {len(runs)} repeats, {n_test:,} test rows, "
            f"cells with >= {min_count:,} test rows",
            "",
            summary_table(runs),
            "",
            f"- {data.note if min_count == data.min_count else 'minimum lowered for --quick'}",
            f"- kept grid cells: {np.mean(cells):.1f} of {N_BINS**2} on average "
            f"(min {min(cells)}, max {max(cells)}), holding {100 * np.mean(share):.0f} % of "
            "the test rows; sampling noise of the cell rates alone "
            f"gives a grid ECE of about {100 * np.mean(noise):.2f} % for a perfect calibrator",
            f"- degrees chosen by 5-fold CV, paper's fit: {_counts(degrees)}; "
            f"log + logistic: {_counts(ours)}",
        ]
    )


def _counts(items) -> str:
    keys = sorted({tuple(int(d) for d in k) for k in items})
    counts = {k: sum(tuple(int(d) for d in i) == k for i in items) for k in keys}
    return ", ".join(f"{k} x{v}" for k, v in counts.items())


def draw_contour(calibrator, scores, path: Path, title: str) -> None:
    """The paper's Figure 1: contours of the fitted fusion over the two scores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bernonnx.plotting import plot_contour

    fig, ax = plt.subplots(figsize=(6, 5))
    plot_contour(calibrator, scores=scores, ax=ax, title=title)
    ax.set_xlabel("network 1 (10 hidden units): P(y=1)")
    ax.set_ylabel("network 2 (20 hidden units): P(y=1)")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def run(args) -> str:
    # --quick: one repeat per data set (each repeat is half the run's time; the smoke
    # test reads the tables, not the spread over repeats)
    repeats = 1 if args.quick else args.repeats
    command = "python examples/fusion_study.py" + (" --quick" if args.quick else "")
    if not args.quick and repeats != 10:
        command += f" --repeats {repeats}"
    sections = [
        "# Wang & Liu's protocol: fusing two networks' scores",
        "",
        f"Generated by `{command}" + (f" --out {args.out}`" if args.out else "`") + ".",
        "Three disjoint 500-row sets per repeat train network 1, network 2 and the "
        "calibrators; every other row is a test row. Grid MCE and ECE: 10 x 10 grid of the "
        "scores' empirical CDFs fitted on the calibration rows, prediction at the cell "
        "centre (the paper's definition); 'cell means' instead averages the predictions of "
        "the test rows in the cell. Brier over all test rows. Percent, mean ± sd over the "
        "repeats; fit time in seconds on a shared 2-core machine.",
    ]
    plot_done = False
    for data in load_data_sets(args.data_dir):
        min_count = QUICK_MIN_COUNT if args.quick else data.min_count
        test_rows = QUICK_TEST_ROWS if args.quick else None
        runs = []
        for seed in range(repeats):
            results, paper_cal, S_cal = one_repeat(
                data, seed, test_rows=test_rows, min_count=min_count
            )
            runs.append(results)
            print(f"{data.name}: repeat {seed + 1}/{repeats} done", file=sys.stderr)
            if args.plot is not None and not plot_done:
                draw_contour(paper_cal, S_cal, args.plot, f"{PAPER_NAME}, {data.name}")
                plot_done = True
        n_test = min(test_rows or data.y.shape[0], data.y.shape[0] - 3 * SET_ROWS)
        sections += ["", data_set_section(data, runs, min_count, n_test)]
    sections += [
        "",
        "## The paper's Table 1, BernPolyFusion (other data sets, for scale)",
        "",
        PAPER_TABLE,
    ]
    if args.plot is not None:
        print(f"contour of the first repeat's paper fit: {args.plot}", file=sys.stderr)
    return "\n".join(sections)


def main(argv=None) -> int:
    parser = study_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="repeats per data set")
    parser.add_argument("--plot", type=Path, help="draw the first fit's contours to this PNG")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    report(run(args), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
