"""Multiclass calibration of a neural network on the CDC diabetes data (5 classes).
=================================================================================

The way deep-learning users calibrate: an ``MLPClassifier`` predicts the
self-rated general health ``GenHlth`` (1 excellent ... 5 poor) of the BRFSS 2015
respondents from the other 21 columns (``Diabetes_binary`` included). The
network is fitted on 60 % of the rows; every calibrator is fitted on its
outputs on a 20 % calibration split (the network frozen) and scored on the
20 % test split:

* ``bernonnx.TemperatureCalibrator`` (Guo et al. 2017): one temperature on the
  network's log-probabilities (``input="proba"``: the logits up to a row
  constant), exact 1-D convex fit;
* one-vs-rest ``bernonnx.BernsteinCalibrator`` on each class's log-odds
  (``CalibratedClassifier(log_odds=True)``), rows renormalised;
* scikit-learn's ``CalibratedClassifierCV`` with ``method="sigmoid"``,
  ``"isotonic"`` (both one-vs-rest) and ``"temperature"``.

Metrics (``bernonnx.metrics.calibration_report`` on the (n, 5) probabilities):
top-label ECE and classwise ECE (15 equal-width bins), multiclass Brier score,
log loss and accuracy. Temperature scaling keeps every row's class ranking, so
its accuracy equals the network's; one-vs-rest calibrators may change it.

Data: ``diabetes_brfss2015.csv.gz``, bundled with bernonnx
(:func:`bernonnx.datasets.load_diabetes_brfss`); ``--data PATH`` or
``$BERNONNX_SHARED_DATA`` names another folder holding it.

Run from the repository root::

    python examples/multiclass_study.py                  # 100,000 rows, minutes (the MLP)
    python examples/multiclass_study.py --quick          # 20,000 rows, smaller network
    python examples/multiclass_study.py --plot top_label.png --out multiclass.md
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import BernsteinCalibrator, CalibratedClassifier, TemperatureCalibrator
from bernonnx.metrics import calibration_report

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import QUICK_ROWS, load_csv, report, stratified_subsample, study_parser  # noqa: E402

LABEL = "GenHlth"
FULL_ROWS = 100_000
N_BINS = 15
COLUMNS = (
    ("method", "method", "{}"),
    ("ece", f"top-label ECE ({N_BINS} bins)", "{:.4f}"),
    ("classwise_ece", "classwise ECE", "{:.4f}"),
    ("brier", "Brier (multiclass)", "{:.5f}"),
    ("log_loss", "log loss", "{:.5f}"),
    ("accuracy", "accuracy", "{:.4f}"),
    ("fit_time", "fit time (s)", "{:.3f}"),
)


def _table(rows) -> str:
    lines = [
        "| " + " | ".join(header for _, header, _ in COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        cells = [fmt.format(row[key]) if key in row else "—" for key, _, fmt in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = study_parser(__doc__.split("\n")[0])
    parser.add_argument("--plot", type=Path, help="write the top-label reliability diagram here")
    args = parser.parse_args(argv)
    df = load_csv(args.data_dir, "diabetes_brfss2015.csv.gz")
    df = stratified_subsample(df, LABEL, QUICK_ROWS if args.quick else FULL_ROWS)
    # classes 0..4 stand for GenHlth 1..5: scikit-learn 1.9's method="temperature" reads
    # the labels as column indices, and labels 1..5 send its temperature to its bound
    y = df[LABEL].to_numpy().astype(np.int64) - 1
    X = df.drop(columns=[LABEL]).to_numpy(dtype=np.float64)
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.4, stratify=y, random_state=0
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=0
    )
    network = make_pipeline(
        StandardScaler(),
        MLPClassifier(
            hidden_layer_sizes=(32,) if args.quick else (64, 64),
            max_iter=15 if args.quick else 80,
            random_state=0,
        ),
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        # a fixed number of epochs: an over-trained, over-confident network is the point
        warnings.simplefilter("ignore", ConvergenceWarning)
        network.fit(X_train, y_train)
    print(
        f"GenHlth (5 classes), {len(y_train):,} train / {len(y_cal):,} calibration / "
        f"{len(y_test):,} test rows; MLP fitted in {time.perf_counter() - start:.1f} s\n"
    )
    frozen = FrozenEstimator(network)
    methods = {
        "temperature (bernonnx)": CalibratedClassifier(
            frozen, TemperatureCalibrator(input="proba")
        ),
        "one-vs-rest Bernstein (bernonnx, log-odds)": CalibratedClassifier(
            frozen, BernsteinCalibrator(), log_odds=True
        ),
        "sklearn sigmoid (one-vs-rest)": CalibratedClassifierCV(frozen, method="sigmoid"),
        "sklearn isotonic (one-vs-rest)": CalibratedClassifierCV(frozen, method="isotonic"),
        "sklearn temperature": CalibratedClassifierCV(frozen, method="temperature"),
    }
    predictions = {"uncalibrated MLP": network.predict_proba(X_test)}
    rows = [{"method": "uncalibrated MLP"}]
    for name, model in methods.items():
        start = time.perf_counter()
        model.fit(X_cal, y_cal)
        rows.append({"method": name, "fit_time": time.perf_counter() - start})
        predictions[name] = model.predict_proba(X_test)
    for row in rows:
        metrics = calibration_report(y_test, predictions[row["method"]], n_bins=N_BINS)
        row.update(metrics)

    ours = methods["temperature (bernonnx)"].calibrated_classifiers_[0].calibrators[0]
    theirs = methods["sklearn temperature"].calibrated_classifiers_[0].calibrators[0]
    lines = [
        _table(rows),
        "",
        f"fitted temperature: bernonnx {ours.temperature_:.8f}, scikit-learn "
        f"{1.0 / float(theirs.beta_):.8f}",
        "temperature keeps the network's accuracy: "
        + str(bool(np.isclose(rows[1]["accuracy"], rows[0]["accuracy"]))),
    ]
    report("\n".join(lines), args.out)
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from bernonnx.plotting import reliability_diagram

        shown = ("uncalibrated MLP", "temperature (bernonnx)", "sklearn isotonic (one-vs-rest)")
        ax = reliability_diagram(
            y_test,
            {name: predictions[name] for name in shown},
            n_bins=N_BINS,
            title="GenHlth, top-label reliability (test rows)",
        )
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
        plt.close(ax.figure)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
