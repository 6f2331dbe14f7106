"""Calibrating XGBoost on credit-card defaults: the "Probability Calibration" notebook
=====================================================================================

Reproduces the calibration comparison of the notebook "Probability
Calibration" (Ethen Liu, in his machine-learning notebooks) on the UCI
"Default of credit card clients" data
(30,000 rows, label ``default.payment.next.month``, ``ID`` dropped), with the
notebook's splits: 10 % stratified test split, then 30 % of the rest as the
validation (calibration) split, ``random_state=1234`` both times.

The notebook's base model is ``XGBClassifier(learning_rate=0.1, max_depth=6,
n_estimators=30)``, which this study fits when xgboost is installed
(``pip install -e ".[boosters]"``). Without it, the study says so and uses
scikit-learn's ``HistGradientBoostingClassifier(learning_rate=0.1,
max_depth=6, max_iter=30, random_state=0)`` on the same raw columns, with
``early_stopping=False`` so that, like the notebook's model, it builds all 30
trees on the whole training split (the "auto" default would hold out 10 % of
it to stop early); its numbers differ from the notebook's.

Calibrators, fitted on the validation split and compared on the test split:

* uncalibrated ``predict_proba[:, 1]``;
* ``IsotonicRegression(out_of_bounds="clip")`` bounded to the validation
  probability range, as in the notebook;
* scikit-learn ``CalibratedClassifierCV(FrozenEstimator(model),
  method="sigmoid")`` (it calibrates the model's ``decision_function``, the
  raw log-odds of the boosted trees);
* Platt scaling on the log-odds (a ``LogisticRegression`` on ``logit(p)``);
* histogram binning with 15 equal-width bins;
* ``bernonnx.BernsteinCalibrator()`` on the probabilities and on the log-odds
  ``logit(clip(p, 1e-15, 1 - 1e-15))``;
* ``bernonnx.CalibratedClassifier(FrozenEstimator(model),
  response_method="predict_proba", log_odds=True)``, which must match the
  previous row;
* with XGBoost, ``bernonnx.CalibratedClassifier(FrozenEstimator(model))``: its
  default score, the raw margin ``predict(output_margin=True)``, which the
  ONNX export reproduces bit for bit.

Metrics: ECE with 10 equal-width bins (the L1 definition of the blog post "A
Bernstein SkLearn model calibrator"), the RMS
calibration error with 15 equal-width bins that the notebook defines
(``sqrt(sum_b w_b (mean_pred_b - pos_rate_b)^2)``), Brier score, log loss, AUC
and the number of distinct outputs.

Data: ``uci_credit_card.csv.gz``, the UCI data set 350 in its Kaggle layout
(uciml/default-of-credit-card-clients-dataset), bundled with bernonnx
(:func:`bernonnx.datasets.load_credit_default`); ``--data PATH`` or
``$BERNONNX_SHARED_DATA`` names another folder holding it.

Run from the repository root::

    python examples/credit_card_study.py               # full study, about 10 s
    python examples/credit_card_study.py --quick       # 20,000-row smoke run
    python examples/credit_card_study.py --out credit.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from bernonnx import BernsteinCalibrator, CalibratedClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import (  # noqa: E402
    QUICK_ROWS,
    ResultTable,
    best_rows,
    check_line,
    equal_width_bins,
    load_csv,
    log_odds,
    report,
    stratified_subsample,
    study_parser,
    timed,
)

DATA_FILE = "uci_credit_card.csv.gz"
LABEL = "default.payment.next.month"
CAT_COLS = ["EDUCATION", "SEX", "MARRIAGE"]
NUM_COLS = [
    "LIMIT_BAL", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6",
]  # fmt: skip
INPUT_COLS = NUM_COLS + CAT_COLS
N_BINS = 15
COLUMNS = [
    "calibrator", "ece", "rms_ce", "brier", "log_loss", "auc", "distinct", "degree", "fit_time",
]  # fmt: skip
OURS_MARGIN = "bernonnx CalibratedClassifier() on the raw margin (default)"
OURS_LOG_ODDS = "bernonnx BernsteinCalibrator() on log-odds"
OURS_META = "bernonnx CalibratedClassifier(predict_proba, log_odds=True)"


def load_splits(data_dir: Path, quick: bool):
    """The notebook's stratified train / validation / test split."""
    df = load_csv(data_dir, DATA_FILE).drop(columns="ID")
    if quick:
        df = stratified_subsample(df, LABEL, QUICK_ROWS)
    df_train, df_test = train_test_split(df, test_size=0.1, random_state=1234, stratify=df[LABEL])
    df_train, df_val = train_test_split(
        df_train, test_size=0.3, random_state=1234, stratify=df_train[LABEL]
    )
    return [(part[INPUT_COLS], part[LABEL].to_numpy()) for part in (df_train, df_val, df_test)]


def make_model():
    """The notebook's ``XGBClassifier`` (30 trees of depth 6, learning rate 0.1), or
    HistGradientBoosting with the same settings when xgboost is not installed."""
    try:
        from xgboost import XGBClassifier
    except ImportError:
        print(
            "xgboost is not installed (pip install -e '.[boosters]'): "
            "HistGradientBoosting stands in for the notebook's XGBClassifier",
            file=sys.stderr,
        )
        return HistGradientBoostingClassifier(
            learning_rate=0.1, max_depth=6, max_iter=30, early_stopping=False, random_state=0
        )
    return XGBClassifier(learning_rate=0.1, max_depth=6, n_estimators=30, random_state=0)


def model_name(model) -> str:
    return "XGBoost" if type(model).__name__ == "XGBClassifier" else "HistGradientBoosting"


def fit_isotonic(p_val, y_val):
    """The notebook's isotonic regression, outputs bounded to the validation range."""
    iso = IsotonicRegression(out_of_bounds="clip", y_min=p_val.min(), y_max=p_val.max())
    return iso.fit(p_val, y_val).predict


def fit_platt_log_odds(p_val, y_val):
    """Platt scaling on ``logit(p)``, unregularised as in the notebook (``C=1e10``)."""
    platt = LogisticRegression(C=1e10).fit(log_odds(p_val)[:, None], y_val)
    return lambda p: platt.predict_proba(log_odds(p)[:, None])[:, 1]


def fit_histogram(p_val, y_val, n_bins: int = N_BINS):
    """Histogram binning: each equal-width bin predicts its validation positive rate.

    A bin without validation rows predicts its centre (no evidence, no change).
    """
    ids = equal_width_bins(p_val, n_bins)
    total = np.bincount(ids, minlength=n_bins)
    positives = np.bincount(ids, weights=y_val, minlength=n_bins)
    centres = (np.arange(n_bins) + 0.5) / n_bins
    rate = np.divide(positives, total, out=centres, where=total > 0)
    return lambda p: rate[equal_width_bins(p, n_bins)]


def add_baseline_rows(table, model, X_val, y_val, p_val, p_test, X_test):
    """The uncalibrated model and the calibrators of the notebook and scikit-learn."""
    table.add(f"{model_name(model)}, uncalibrated", p_test)
    predict, seconds = timed(fit_isotonic, p_val, y_val)
    table.add("sklearn isotonic (clip, validation range)", predict(p_test), fit_time=seconds)
    sigmoid = CalibratedClassifierCV(FrozenEstimator(model), method="sigmoid")
    sigmoid, seconds = timed(sigmoid.fit, X_val, y_val)
    table.add(
        "sklearn sigmoid (CalibratedClassifierCV)",
        sigmoid.predict_proba(X_test)[:, 1],
        fit_time=seconds,
    )
    predict, seconds = timed(fit_platt_log_odds, p_val, y_val)
    table.add("Platt on log-odds", predict(p_test), fit_time=seconds)
    predict, seconds = timed(fit_histogram, p_val, y_val)
    table.add(f"histogram binning, {N_BINS} equal-width bins", predict(p_test), fit_time=seconds)


def add_bernstein_rows(table, model, X_val, y_val, p_val, p_test, X_test):
    """``BernsteinCalibrator()`` on probabilities and log-odds, and the meta-estimator."""
    for name, transform in (
        ("bernonnx BernsteinCalibrator() on probabilities", lambda p: p),
        (OURS_LOG_ODDS, log_odds),
    ):
        calibrator, seconds = timed(BernsteinCalibrator().fit, transform(p_val), y_val)
        table.add(
            name,
            calibrator.predict_proba(transform(p_test))[:, 1],
            degree=calibrator.degree_,
            fit_time=seconds,
        )
    meta = CalibratedClassifier(
        FrozenEstimator(model), response_method="predict_proba", log_odds=True
    )
    meta, seconds = timed(meta.fit, X_val, y_val)
    table.add(
        OURS_META,
        meta.predict_proba(X_test)[:, 1],
        degree=meta.calibrated_classifiers_[0].calibrators[0].degree_,
        fit_time=seconds,
    )
    if model_name(model) == "XGBoost":
        margin, seconds = timed(CalibratedClassifier(FrozenEstimator(model)).fit, X_val, y_val)
        table.add(
            OURS_MARGIN,
            margin.predict_proba(X_test)[:, 1],
            degree=margin.calibrated_classifiers_[0].calibrators[0].degree_,
            fit_time=seconds,
        )


def check_lines(table, y_test, p_test) -> list[str]:
    """The meta-estimator matches the direct fit; Bernstein rows keep the model's AUC."""
    auc_raw = roc_auc_score(y_test, p_test)
    diff = np.max(np.abs(table.preds[OURS_META] - table.preds[OURS_LOG_ODDS]))
    lines = [
        check_line(
            diff <= 1e-12,
            f"CalibratedClassifier(log_odds=True) matches BernsteinCalibrator() on log-odds "
            f"(max |difference| {diff:.2e})",
        )
    ]
    for row in table.rows:
        if row["calibrator"].startswith("bernonnx"):
            lines.append(
                check_line(
                    row["auc"] == auc_raw,
                    f"{row['calibrator']} keeps the test AUC exactly: "
                    f"uncalibrated {auc_raw:.9f}, calibrated {row['auc']:.9f}",
                )
            )
    return lines


def run(data_dir: Path, quick: bool) -> str:
    """Fit everything and return the markdown report."""
    (X_train, y_train), (X_val, y_val), (X_test, y_test) = load_splits(data_dir, quick)
    model, train_seconds = timed(make_model().fit, X_train, y_train)
    p_val = model.predict_proba(X_val)[:, 1]
    p_test = model.predict_proba(X_test)[:, 1]

    table = ResultTable(y_test, rms_bins=N_BINS)
    add_baseline_rows(table, model, X_val, y_val, p_val, p_test, X_test)
    add_bernstein_rows(table, model, X_val, y_val, p_val, p_test, X_test)

    mode = f"--quick: stratified subsample of {QUICK_ROWS:,} rows" if quick else "full data"
    lines = [
        f"## The notebook's study, UCI credit-card default, {model_name(model)} ({mode})",
        "",
        f"train {len(y_train):,} / validation {len(y_val):,} / test {len(y_test):,} rows; "
        f"model fitted in {train_seconds:.1f} s.",
        "",
        table.markdown(COLUMNS),
        "",
        "Fit times of the CalibratedClassifierCV and CalibratedClassifier rows include "
        "scoring the validation rows with the model; the others are calibrator fits on "
        "precomputed probabilities.",
        "",
        *(f"- {line}" for line in best_rows(table.rows, ("ece", "rms_ce", "brier", "log_loss"))),
        "",
        # blank lines keep the checks on separate lines in rendered markdown
        "\n\n".join(check_lines(table, y_test, p_test)),
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = study_parser(__doc__.splitlines()[0]).parse_args(argv)
    report(run(args.data_dir, args.quick), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
