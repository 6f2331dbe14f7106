"""The multiclass default against the uncalibrated model and temperature scaling (issue 24).

Each case: a base model fitted on 50 % of the rows, frozen (prefit), every calibrator
fitted on 25 % and scored on the other 25 % (stratified splits, the case's seed):

* uncalibrated: the model's own probabilities;
* temperature: ``CalibratedClassifier(frozen, TemperatureCalibrator())`` on its logits;
* default: ``CalibratedClassifier(frozen)``, i.e. ``TemperatureBernsteinCalibrator``
  (the identity, temperature scaling, or temperature then per-class Bernstein maps,
  by 5-fold log loss on the calibration rows), with the candidate it chose;
* one-vs-rest Bernstein (the default before issue 24) and scikit-learn's
  ``CalibratedClassifierCV`` sigmoid and isotonic (one-vs-rest).

Metrics: test log loss, top-label ECE (15 equal-width bins), multiclass Brier.
The goal: the default's log loss at most 1.0005 times the better of uncalibrated and
temperature, its top-label ECE at most 0.002 above theirs; better than both where the
model is miscalibrated.

Cases are split into **tuning** (what the default's design was chosen on: diabetes
``GenHlth`` and ``Income``, seeds 0 and 1) and **held out** (never looked at while
designing: diabetes ``Age``, and ``GenHlth``/``Income`` at seed 2; scikit-learn's bundled
``load_digits`` with a naive Bayes and a weak logistic regression on 8 pixels;
``make_classification``). Diabetes is a stratified subsample of ``--rows`` rows; its
features are the other 21 columns, ``Diabetes_binary`` included.

Run from the repository root::

    python benchmarks/multiclass_default.py --out benchmarks/multiclass_default.md
    python benchmarks/multiclass_default.py --quick     # two small cases
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits, make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import BernsteinCalibrator, CalibratedClassifier, TemperatureCalibrator
from bernonnx.metrics import (
    multiclass_brier_score,
    multiclass_log_loss,
    top_label_calibration_error,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import git_revision, machine, md_table, now  # noqa: E402
from _realdata import DEFAULT_DATA_DIR  # noqa: E402

LOG_LOSS_RATIO = 1.0005
ECE_MARGIN = 0.002

TUNING = [
    (target, model, seed)
    for target in ("GenHlth", "Income")
    for model in ("LR", "HGB")
    for seed in (0, 1)
]
HELD_OUT = [
    ("Age", "LR", 0),
    ("Age", "HGB", 0),
    ("Age", "LR", 2),
    ("Age", "HGB", 2),
    ("GenHlth", "LR", 2),
    ("GenHlth", "HGB", 2),
    ("Income", "LR", 2),
    ("Income", "HGB", 2),
    ("digits", "NB", 0),
    ("digits", "NB", 3),
    ("digits", "LR8", 0),
    ("digits", "HGB", 0),
    ("generated", "LR", 0),
    ("generated", "HGB", 0),
    ("generated", "NB", 0),
    ("generated", "NB", 4),
]
QUICK = [("GenHlth", "LR", 0), ("digits", "NB", 0)]


def load(target: str, seed: int, rows: int, data_dir: Path):
    """Features and labels 0..K-1 of a case."""
    if target == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y
    if target == "generated":
        return make_classification(
            20_000,
            n_features=20,
            n_informative=8,
            n_classes=6,
            n_clusters_per_class=2,
            flip_y=0.05,
            random_state=seed,
        )
    df = pd.read_csv(data_dir / "diabetes_brfss2015.csv.gz")
    df, _ = train_test_split(df, train_size=rows, stratify=df[target], random_state=seed)
    y = np.unique(df[target].to_numpy(), return_inverse=True)[1]
    return df.drop(columns=[target]).to_numpy(dtype=np.float64), y


def base_model(name: str):
    if name == "NB":
        return GaussianNB()
    if name == "HGB":
        return HistGradientBoostingClassifier(random_state=0)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))


def split_case(target, model_name, seed, rows, data_dir):
    """One case's rows split half / quarter / quarter (train, calibration, test, stratified
    by seed) and its base model fitted on the first half and frozen: ``(frozen, X_cal,
    y_cal, X_test, y_test)``, the same for every study that reads these cases."""
    X, y = load(target, seed, rows, data_dir)
    if model_name == "LR8":  # a weak model: 8 of the 64 pixels
        X = X[:, 28:36]
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=seed
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        frozen = FrozenEstimator(base_model(model_name).fit(X_train, y_train))
    return frozen, X_cal, y_cal, X_test, y_test


def run_case(target, model_name, seed, rows, data_dir) -> dict:
    frozen, X_cal, y_cal, X_test, y_test = split_case(target, model_name, seed, rows, data_dir)
    methods = {
        # on the logits; a model without them (naive Bayes): on its log-probabilities
        "temperature": CalibratedClassifier(
            frozen,
            TemperatureCalibrator(
                input="logits" if hasattr(frozen, "decision_function") else "proba"
            ),
        ),
        "default": CalibratedClassifier(frozen),
        "one-vs-rest Bernstein": CalibratedClassifier(frozen, BernsteinCalibrator()),
        "sklearn sigmoid": CalibratedClassifierCV(frozen, method="sigmoid"),
        "sklearn isotonic": CalibratedClassifierCV(frozen, method="isotonic"),
    }
    proba = {"uncalibrated": frozen.predict_proba(X_test)}
    times = {}
    for name, model in methods.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X_cal, y_cal)
        times[name] = time.perf_counter() - start
        proba[name] = model.predict_proba(X_test)
    labels = np.arange(proba["uncalibrated"].shape[1])
    metrics = {
        name: (
            multiclass_log_loss(y_test, p, labels=labels),
            top_label_calibration_error(y_test, p, n_bins=15, labels=labels),
            multiclass_brier_score(y_test, p, labels=labels),
        )
        for name, p in proba.items()
    }
    chosen = methods["default"].calibrated_classifiers_[0].calibrators[0].method_
    return {
        "case": f"{target} {model_name} s{seed}",
        "K": len(labels),
        "n_cal": len(y_cal),
        "metrics": metrics,
        "chosen": chosen,
        "fit_time": times["default"],
    }


def verdict(result) -> tuple[bool, bool, bool]:
    """(log loss within 1.0005x, ECE within +0.002, log loss below both)."""
    m = result["metrics"]
    reference = [m["uncalibrated"], m["temperature"]]
    best_ll = min(r[0] for r in reference)
    best_ece = min(r[1] for r in reference)
    ll, ece = m["default"][0], m["default"][1]
    return ll <= LOG_LOSS_RATIO * best_ll, ece <= best_ece + ECE_MARGIN, ll < best_ll


def table(results) -> str:
    headers = [
        "case",
        "K",
        "chosen",
        "log loss: uncal.",
        "temperature",
        "default (gap to best of the two)",
        "OvR Bernstein",
        "sk sigmoid",
        "sk isotonic",
        "top-label ECE: uncal.",
        "temperature",
        "default",
        "OvR Bernstein",
        "Brier: uncal.",
        "temperature",
        "default",
        "goal met",
    ]
    rows = []
    for r in results:
        m = r["metrics"]
        best = min(m["uncalibrated"][0], m["temperature"][0])
        ll_ok, ece_ok, beats = verdict(r)
        gap = 100 * (m["default"][0] / best - 1)
        rows.append(
            [
                r["case"],
                r["K"],
                r["chosen"],
                f"{m['uncalibrated'][0]:.5f}",
                f"{m['temperature'][0]:.5f}",
                f"{m['default'][0]:.5f} ({gap:+.3f}%)",
                f"{m['one-vs-rest Bernstein'][0]:.5f}",
                f"{m['sklearn sigmoid'][0]:.5f}",
                f"{m['sklearn isotonic'][0]:.5f}",
                f"{m['uncalibrated'][1]:.4f}",
                f"{m['temperature'][1]:.4f}",
                f"{m['default'][1]:.4f}",
                f"{m['one-vs-rest Bernstein'][1]:.4f}",
                f"{m['uncalibrated'][2]:.5f}",
                f"{m['temperature'][2]:.5f}",
                f"{m['default'][2]:.5f}",
                ("yes" if ll_ok and ece_ok else "NO") + (", beats both" if beats else ""),
            ]
        )
    return md_table(headers, rows)


def summary(name: str, results) -> str:
    verdicts = [verdict(r) for r in results]
    met = sum(a and b for a, b, _ in verdicts)
    beats = sum(c for _, _, c in verdicts)
    gaps = []
    for r in results:
        m = r["metrics"]
        gaps.append(100 * (m["default"][0] / min(m["uncalibrated"][0], m["temperature"][0]) - 1))
    return (
        f"{name}: goal met in {met} / {len(results)}; log loss below both in {beats}; "
        f"gap to the better of uncalibrated and temperature: mean {np.mean(gaps):+.3f}%, "
        f"worst {max(gaps):+.3f}%"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--rows", type=int, default=40_000, help="diabetes subsample")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    groups = {"quick": QUICK} if args.quick else {"tuning": TUNING, "held out": HELD_OUT}
    rows = 8_000 if args.quick else args.rows
    start = time.perf_counter()
    lines = [
        "# The multiclass default",
        "",
        f"{now()}, {git_revision()}, {machine()}; diabetes subsample {rows:,} rows.",
        "Log loss gap: the default's against the better of uncalibrated and temperature "
        f"scaling (goal: at most {100 * (LOG_LOSS_RATIO - 1):.2f}%); ECE goal: at most "
        f"{ECE_MARGIN} above the better of the two. 'chosen': the default's candidate.",
    ]
    for name, cases in groups.items():
        results = Parallel(n_jobs=args.n_jobs)(
            delayed(run_case)(*case, rows, args.data) for case in cases
        )
        lines += ["", f"## {name}", "", table(results), "", summary(name, results)]
    lines += ["", f"total {time.perf_counter() - start:.0f} s"]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
