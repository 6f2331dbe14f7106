"""Which score transform should BernsteinCalibrator use by default? The evidence.
==============================================================================

Four score sets, each split into calibration and test halves:

* heavy-tailed LinearSVC decision values (synthetic, features with 0.2 %
  outliers: the case where the blog post's min-max scaling breaks down);
* gradient-boosting probabilities on the credit-card data (skewed towards 0);
* the same as log-odds;
* GaussianNB probabilities (piled up near 0 and 1).

For each: isotonic regression as the reference, and every loss x transform
with ``degree="auto"``. Prints held-out ECE, log loss, Brier and whether the
test AUC of the raw scores is kept exactly.

Run: ``python examples/transform_study.py`` (about a minute), ``--quick``
for a reduced smoke run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import LinearSVC

from bernonnx import BernsteinCalibrator
from bernonnx.datasets import load_credit_default

# the documentation's gallery runs this file without __file__, from the examples folder
sys.path.insert(0, str(Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()))
from _study import ResultTable, log_odds, report, study_parser, timed  # noqa: E402

COLUMNS = ("calibrator", "ece", "brier", "log_loss", "auc", "degree", "fit_time")


def thirds(X, y, seed=0):
    """Train / calibration / test split (1/3 each), stratified."""
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=2 / 3, random_state=seed, stratify=y
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest
    )
    return X_train, y_train, X_cal, y_cal, X_test, y_test


def score_sets(n_rows: int):
    """Yield ``(name, calibration scores, labels, test scores, labels)``."""
    X, y = make_classification(
        n_rows, n_features=20, n_informative=8, weights=[0.85], flip_y=0.05, random_state=0
    )
    X[np.random.default_rng(0).random(X.shape) < 0.002] *= 40
    Xt, yt, Xc, yc, Xs, ys = thirds(X, y)
    svc = LinearSVC().fit(Xt, yt)
    yield "LinearSVC, heavy tails", svc.decision_function(Xc), yc, svc.decision_function(Xs), ys

    X, y, _ = load_credit_default()
    Xt, yt, Xc, yc, Xs, ys = thirds(X, y)
    gbm = HistGradientBoostingClassifier(max_depth=6, max_iter=30, random_state=0).fit(Xt, yt)
    pc, ps = gbm.predict_proba(Xc)[:, 1], gbm.predict_proba(Xs)[:, 1]
    yield "credit GBM probabilities", pc, yc, ps, ys
    yield "credit GBM log-odds", log_odds(pc), yc, log_odds(ps), ys

    X, y = make_classification(
        n_rows // 5, n_features=20, n_informative=6, weights=[0.95], random_state=1
    )
    Xt, yt, Xc, yc, Xs, ys = thirds(X, y)
    nb = GaussianNB().fit(Xt, yt)
    yield (
        "GaussianNB probabilities",
        nb.predict_proba(Xc)[:, 1],
        yc,
        nb.predict_proba(Xs)[:, 1],
        ys,
    )


def study(name, s_cal, y_cal, s_test, y_test) -> str:
    table = ResultTable(y_test)
    raw_auc = table.add("raw scores", s_test, probability=False)["auc"]
    iso, seconds = timed(IsotonicRegression(out_of_bounds="clip").fit, s_cal, y_cal)
    table.add("isotonic", np.clip(iso.predict(s_test), 1e-15, 1 - 1e-15), fit_time=seconds)
    for loss in ("log", "squared"):
        for transform in ("logistic", "quantile", "minmax"):
            cal = BernsteinCalibrator(loss=loss, score_transform=transform)
            cal, seconds = timed(cal.fit, s_cal, y_cal)
            row = table.add(
                f"loss={loss}, score_transform={transform}",
                cal.predict_proba(s_test)[:, 1],
                degree=cal.degree_,
                fit_time=seconds,
            )
            row["calibrator"] += "" if row["auc"] == raw_auc else " (AUC changed)"
    return f"## {name}\n\n{len(y_cal):,} calibration / {len(y_test):,} test rows\n\n" + (
        table.markdown(COLUMNS)
    )


def main(argv=None) -> int:
    parser = study_parser(__doc__)
    args = parser.parse_args(argv)
    n_rows = 30_000 if args.quick else 300_000
    sections = [study(*scores) for scores in score_sets(n_rows)]
    report("\n\n".join(sections), args.out)
    return 0


if __name__ == "__main__":
    # exit only on failure: the documentation's gallery runs this file inside Sphinx,
    # where SystemExit(0) would end the whole build early, and successfully
    if status := main():
        sys.exit(status)
