"""Calibrating a LinearSVC on CDC diabetes data: the Bernstein blog post's table, reproduced
===========================================================================================

Reproduces the results table of the blog post "A Bernstein SkLearn model
calibrator" (Alex Shtoff) on the full BRFSS 2015 diabetes data (253,680 rows,
label ``Diabetes_binary``) with the post's exact setup: one-hot encoded
categorical columns, min-max scaled ``Age, BMI, MentHlth, PhysHlth``, a
``LinearSVC()`` fitted on 70 % of the rows, calibrators fitted on its decision
values on a 15 % calibration split and evaluated on the 15 % test split
(38,052 rows). All calibrators see the same fitted pipeline and rows:

* scikit-learn's ``CalibratedClassifierCV(FrozenEstimator(pipeline))``,
  ``method="sigmoid"`` (Platt) and ``method="isotonic"``;
* the blog's own formulations, re-implemented faithfully with cvxpy: min-max
  scaling fitted on the calibration scores (clipped), ``scipy.stats.binom``
  basis, monotone least squares at degrees 10 and 20, and monotone logistic
  regression at degree 10 (with the elementwise ``cp.multiply`` the post
  intends; its ``y * (V @ u)`` is a matrix product in current cvxpy);
* ``bernonnx.BernsteinCalibrator()`` (the default), a grid of its loss and
  transform options, its blog-equivalent setting (``degree=20,
  loss="squared", score_transform="minmax"``) and ``bernonnx.CalibratedClassifier``.

It ends with PASS/FAIL lines: does the default match or beat isotonic
regression on log loss and Brier score, stay within 0.001 of its ECE, and keep
the raw test AUC exactly? The exit code is 0 either way: this is a study.

Data: ``diabetes_brfss2015.csv.gz``, the CDC's "Diabetes Health Indicators"
(BRFSS 2015, public domain), binary version, bundled with bernonnx
(:func:`bernonnx.datasets.load_diabetes_brfss`); ``--data PATH`` or
``$BERNONNX_SHARED_DATA`` names another folder holding it.

Run from the repository root::

    python examples/diabetes_study.py                  # full study, about 30 s
    python examples/diabetes_study.py --quick          # 20,000-row smoke run, no cvxpy
    python examples/diabetes_study.py --out diabetes.md
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import binom
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder
from sklearn.svm import LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import (  # noqa: E402
    QUICK_ROWS,
    ResultTable,
    best_rows,
    check_line,
    load_csv,
    report,
    stratified_subsample,
    study_parser,
    timed,
)

DATA_FILE = "diabetes_brfss2015.csv.gz"
LABEL = "Diabetes_binary"
CATEGORICAL_COLS = [
    "HighBP", "HighChol", "CholCheck", "Smoker", "Stroke", "HeartDiseaseorAttack",
    "PhysActivity", "Fruits", "Veggies", "HvyAlcoholConsump", "AnyHealthcare", "NoDocbcCost",
    "GenHlth", "DiffWalk", "Sex", "Education", "Income",
]  # fmt: skip
NUMERICAL_COLS = ["Age", "BMI", "MentHlth", "PhysHlth"]
COLUMNS = ["calibrator", "ece", "brier", "log_loss", "auc", "distinct", "degree", "fit_time"]
DEFAULT_NAME = "bernonnx BernsteinCalibrator() (default)"
ISOTONIC_NAME = "sklearn isotonic"
#: Measured with this setup and recorded in shared/data/README.md.
REFERENCE = """\
| calibrator | ECE (10 bins) | Brier | log loss | test AUC | distinct outputs |
|---|---|---|---|---|---|
| sklearn sigmoid | 0.0197 | 0.09800 | 0.31632 | 0.825974 | 36,695 |
| sklearn isotonic | 0.0052 | 0.09717 | 0.31259 | 0.825638 | 96 |
| blog Bernstein least squares d=10 | 0.0092 | 0.09719 | 0.31306 | 0.825974 | 36,695 |
| blog Bernstein least squares d=20 | 0.0055 | 0.09714 | 0.31231 | 0.825974 | 36,695 |
| blog Bernstein logistic d=10 | 0.0055 | 0.09714 | 0.31235 | 0.825974 | 36,695 |"""


def load_splits(data_dir: Path, max_rows: int | None = None):
    """The post's 70 / 15 / 15 train / calibration / test split of the diabetes data.

    ``max_rows`` first keeps a stratified subsample of that many rows.
    """
    df = load_csv(data_dir, DATA_FILE)
    if max_rows is not None:
        df = stratified_subsample(df, LABEL, max_rows)
    X, y = df.drop(columns=LABEL), df[LABEL].to_numpy()
    X_remain, X_test, y_remain, y_test = train_test_split(X, y, test_size=0.15, random_state=42)
    X_train, X_calib, y_train, y_calib = train_test_split(
        X_remain, y_remain, test_size=0.15 / 0.85, random_state=43
    )
    return X_train, y_train, X_calib, y_calib, X_test, y_test


def make_pipeline() -> Pipeline:
    """The post's pipeline: one-hot categoricals, min-max numericals, ``LinearSVC()``."""
    features = ColumnTransformer(
        [
            (
                "categorical",
                OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=10),
                CATEGORICAL_COLS,
            ),
            ("numerical", MinMaxScaler(), NUMERICAL_COLS),
        ]
    )
    return Pipeline([("feature_transformer", features), ("classifier", LinearSVC())])


class BlogBernstein:
    """The post's Bernstein calibrators, on precomputed scores.

    Min-max scaling fitted on the calibration scores and clipped, a
    ``binom.pmf`` Vandermonde matrix, and one cvxpy problem with non-decreasing
    coefficients: least squares ``||V c - y||`` with ``0 <= c <= 1`` (output
    clipped to ``[0, 1]``), or logistic loss with ``-15 <= c <= 15`` (output
    through a sigmoid). The post's logistic subclass overrides ``_compute_coef``
    while ``fit`` calls ``_fit_coef``; this follows the objective it states.
    """

    def __init__(self, degree: int, *, logistic: bool = False):
        self.degree = degree
        self.logistic = logistic

    def _bernvander(self, scores):
        scaled = np.clip((scores - self.min_) / (self.max_ - self.min_), 0, 1)
        return binom.pmf(np.arange(1 + self.degree), self.degree, scaled[:, None])

    def fit(self, scores, y):
        # cvxpy is only needed for these rows, which --quick skips
        import cvxpy as cp

        self.min_, self.max_ = np.min(scores), np.max(scores)
        vander = self._bernvander(scores)
        if self.logistic:
            coef = cp.Variable(self.degree + 1, bounds=[-15, 15])
            z = vander @ coef
            objective = cp.sum(cp.logistic(z) - cp.multiply(y, z))
        else:
            coef = cp.Variable(self.degree + 1, bounds=[0, 1])
            objective = cp.norm(vander @ coef - y)
        problem = cp.Problem(cp.Minimize(objective), [cp.diff(coef) >= 0])
        problem.solve()
        if coef.value is None:
            raise RuntimeError(f"cvxpy did not solve the blog problem: status {problem.status}")
        if problem.status != cp.OPTIMAL:
            warnings.warn(f"cvxpy status {problem.status!r} for {self!r}", stacklevel=2)
        self.coef_ = coef.value
        return self

    def predict(self, scores):
        eta = self._bernvander(scores) @ self.coef_
        return expit(eta) if self.logistic else np.clip(eta, 0, 1)

    def __repr__(self):
        return f"BlogBernstein(degree={self.degree}, logistic={self.logistic})"


def add_sklearn_rows(table, pipeline, X_calib, y_calib, X_test):
    """``CalibratedClassifierCV(FrozenEstimator(pipeline))``, sigmoid and isotonic."""
    for method in ("sigmoid", "isotonic"):
        model = CalibratedClassifierCV(FrozenEstimator(pipeline), method=method)
        model, seconds = timed(model.fit, X_calib, y_calib)
        table.add(f"sklearn {method}", model.predict_proba(X_test)[:, 1], fit_time=seconds)


def add_blog_rows(table, s_calib, y_calib, s_test):
    """The blog's cvxpy formulations: least squares d=10, d=20, logistic d=10."""
    for degree, logistic in ((10, False), (20, False), (10, True)):
        blog, seconds = timed(BlogBernstein(degree, logistic=logistic).fit, s_calib, y_calib)
        kind = "logistic" if logistic else "least squares"
        table.add(
            f"blog Bernstein {kind} d={degree}",
            blog.predict(s_test),
            degree=degree,
            fit_time=seconds,
        )


def add_bernstein_row(table, name, calibrator, s_calib, y_calib, s_test):
    """Fit a ``BernsteinCalibrator`` on the calibration scores, evaluate on the test scores."""
    calibrator, seconds = timed(calibrator.fit, s_calib, y_calib)
    table.add(
        name,
        calibrator.predict_proba(s_test)[:, 1],
        degree=calibrator.degree_,
        fit_time=seconds,
    )


def add_variant_rows(table, s_calib, y_calib, s_test):
    """Every loss x transform with ``degree="auto"``, then the blog's d=20 setting."""
    for loss in ("log", "squared"):
        for transform in ("logistic", "quantile", "minmax"):
            if (loss, transform) == ("log", "logistic"):
                continue  # the default, already in the table
            add_bernstein_row(
                table,
                f"bernonnx loss={loss}, transform={transform}",
                BernsteinCalibrator(loss=loss, score_transform=transform),
                s_calib,
                y_calib,
                s_test,
            )
    add_bernstein_row(
        table,
        "bernonnx degree=20, loss=squared, transform=minmax",
        BernsteinCalibrator(degree=20, loss="squared", score_transform="minmax"),
        s_calib,
        y_calib,
        s_test,
    )


def add_meta_estimator_row(table, pipeline, X_calib, y_calib, X_test):
    """``CalibratedClassifier(FrozenEstimator(pipeline))`` with its default calibrator."""
    model, seconds = timed(CalibratedClassifier(FrozenEstimator(pipeline)).fit, X_calib, y_calib)
    table.add(
        "bernonnx CalibratedClassifier(FrozenEstimator(pipeline))",
        model.predict_proba(X_test)[:, 1],
        degree=model.calibrated_classifiers_[0].calibrators[0].degree_,
        fit_time=seconds,
    )


def consistency_lines(table) -> list[str]:
    """Max abs differences between rows that should agree."""
    pairs = [
        (
            "bernonnx degree=20, loss=squared, transform=minmax",
            "blog Bernstein least squares d=20",
            "bernonnx d=20 squared minmax vs blog least squares d=20",
        ),
        (
            "bernonnx CalibratedClassifier(FrozenEstimator(pipeline))",
            DEFAULT_NAME,
            "CalibratedClassifier(FrozenEstimator) vs BernsteinCalibrator() on the scores",
        ),
    ]
    lines = []
    for a, b, label in pairs:
        if a in table.preds and b in table.preds:
            diff = np.max(np.abs(table.preds[a] - table.preds[b]))
            lines.append(f"max |difference| of test predictions, {label}: {diff:.2e}")
    return lines


def check_lines(table, y_test, s_test) -> list[str]:
    """PASS/FAIL of the default against isotonic regression and the raw AUC."""
    rows = {row["calibrator"]: row for row in table.rows}
    ours, iso = rows[DEFAULT_NAME], rows[ISOTONIC_NAME]
    auc_raw = roc_auc_score(y_test, s_test)
    auc_ours = roc_auc_score(y_test, table.preds[DEFAULT_NAME])
    return [
        check_line(
            ours["log_loss"] <= iso["log_loss"],
            f"default log loss {ours['log_loss']:.5f} <= isotonic {iso['log_loss']:.5f}",
        ),
        check_line(
            ours["brier"] <= iso["brier"],
            f"default Brier {ours['brier']:.5f} <= isotonic {iso['brier']:.5f}",
        ),
        check_line(
            ours["ece"] <= iso["ece"] + 0.001,
            f"default ECE {ours['ece']:.5f} <= isotonic ECE {iso['ece']:.5f} + 0.001",
        ),
        check_line(
            auc_ours == auc_raw,
            f"default keeps the raw test AUC exactly: raw {auc_raw:.9f}, "
            f"calibrated {auc_ours:.9f}",
        ),
    ]


def run(data_dir: Path, quick: bool) -> str:
    """Fit everything and return the markdown report."""
    X_train, y_train, X_calib, y_calib, X_test, y_test = load_splits(
        data_dir, QUICK_ROWS if quick else None
    )
    pipeline, train_seconds = timed(make_pipeline().fit, X_train, y_train)
    s_calib, score_seconds = timed(pipeline.decision_function, X_calib)
    s_test = pipeline.decision_function(X_test)

    table = ResultTable(y_test)
    table.add("LinearSVC decision values (raw)", s_test, probability=False)
    add_sklearn_rows(table, pipeline, X_calib, y_calib, X_test)
    if not quick:
        add_blog_rows(table, s_calib, y_calib, s_test)
    add_bernstein_row(table, DEFAULT_NAME, BernsteinCalibrator(), s_calib, y_calib, s_test)
    if not quick:
        add_variant_rows(table, s_calib, y_calib, s_test)
        add_meta_estimator_row(table, pipeline, X_calib, y_calib, X_test)

    mode = f"--quick: stratified subsample of {QUICK_ROWS:,} rows" if quick else "full data"
    lines = [
        f"## The blog post's study, CDC diabetes, LinearSVC ({mode})",
        "",
        f"train {len(y_train):,} / calibration {len(y_calib):,} / test {len(y_test):,} rows; "
        f"pipeline fitted in {train_seconds:.1f} s.",
        "",
        table.markdown(COLUMNS),
        "",
        "Fit times of the sklearn and CalibratedClassifier rows include scoring the "
        f"calibration rows with the pipeline ({score_seconds:.3f} s); the others are "
        "calibrator fits on precomputed scores.",
        "",
        *(f"- {line}" for line in best_rows(table.rows) + consistency_lines(table)),
        "",
        "Reference (shared/data/README.md, full data, same setup):",
        "",
        REFERENCE,
        "",
        # blank lines keep the checks on separate lines in rendered markdown
        "\n\n".join(check_lines(table, y_test, s_test)),
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = study_parser(__doc__.splitlines()[0]).parse_args(argv)
    report(run(args.data_dir, args.quick), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
