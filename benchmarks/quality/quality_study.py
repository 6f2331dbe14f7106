"""Quality study: does the default calibrator beat scikit-learn's best?
====================================================================

Four shared data sets (credit, diabetes, magic, shoppers) x six base models
(LogisticRegression, LinearSVC, GaussianNB, HistGradientBoosting,
RandomForest, MLPClassifier), per seed a stratified 50/25/25 train /
calibration / test split. Each base model is fitted on the train part and
frozen; every calibrator is fitted on the calibration part (prefit) and
scored by test log loss. The reference is the better of scikit-learn's
``CalibratedClassifierCV(FrozenEstimator(model), method="sigmoid")`` and
``method="isotonic"`` on the same test rows; the gap of a calibrator is
``(its log loss - reference) / reference``: a win is a negative gap.

A *case* is one (data set, model) pair; its gap is that of the log losses
averaged over the seeds. The issue's target counts the 20 cases of the five
issue models (all but MLPClassifier): at least 18 wins and no gap above
+0.05%. The protocol: tune on credit and magic, seeds 0-2
(``--datasets credit,magic --seeds 0,1,2``); report on diabetes and shoppers, seeds
0-2, and on all four tables, seeds 3-5.

Calibrators compared (all fitted on the same scores, see ``_candidates.py``):

* ``default``: ``CalibratedClassifier(FrozenEstimator(model))``, i.e.
  ``BernsteinCalibrator()`` on ``decision_function`` when the model has one,
  else on ``predict_proba``, taken as non-saturating log-odds where the model
  gives log-probabilities (GaussianNB, MLPClassifier: ``log_odds="auto"``).
* ``previous``: the default before ``log_odds="auto"``: ``BernsteinCalibrator()``
  on the probabilities themselves for those two models (``log_odds=False``).
* ``platt``: ``PlattCalibrator()`` on the same scores.
* ``affine``: ``AffineBernstein()``: the Bernstein log-loss fit on an
  affine map of the score (min/max to 0/1, C1 linear continuation outside),
  degrees 1..20 by 5-fold CV with the one-standard-error rule. Degree 1 is
  Platt exactly.
* ``affine+lp``: the same on the log-odds a model's log-probabilities give
  without saturation (GaussianNB's joint log-likelihood, MLPClassifier's
  logit: ``CalibratedClassifier(log_odds=True)``'s scores); other models as
  ``affine``.
* ``default+lp``: ``BernsteinCalibrator()`` on those log-odds (the same as
  ``default`` since ``log_odds="auto"``; kept so old reports read alike).
* ``linear+bern``: ``LinearPlusBernstein()``: Platt's linear log-odds
  ``alpha * t`` (``alpha >= 0``, ``t`` affine in the score) plus the default's
  increasing Bernstein polynomial of the default "logistic" transform, the
  degree (0, i.e. Platt exactly, 2, 3, ..., 32) by 5-fold CV with the
  one-standard-error rule.
* ``linear+bern+lp``: the same on the non-saturating log-odds.
* ``linear+bern+lp-min``: the same, the degree of least CV log loss (no
  one-standard-error rule).
* ``platt-or-default``: ``PlattOrBernstein()``: the default or ``PlattCalibrator()``
  on the same scores, whichever has the lower 5-fold CV log loss (degree 0: Platt).
* ``shrunk``, ``shrunk32``, ``shrunk32-dense``, ``shrunk32-1se``, ``shrunk-2se``:
  ``ShrunkBernstein()`` (``_shrinkage.py``): Platt's linear log-odds on the score
  (far tails log-compressed) plus the default's Bernstein polynomial of degree 16 or
  32, its steps shrunk toward zero by a ridge penalty ``lam``; ``lam`` (infinite:
  Platt) by 5-fold CV, least mean loss or the most shrunk within one or two standard
  errors. The degree column shows the index of ``lam`` chosen (0: Platt).
* ``blend-50``, ``blend-cv``, ``blend-cv-1se``, ``blend-cv-1se-platt``, ``blend-p-cv``,
  ``bag``, ``bag-blend-cv``, ``stack``: ``PlattBernsteinBlend()`` (``_blend.py``): ``w``
  Platt + ``(1 - w)`` the default in log-odds (``-p-``: in probability), ``w`` fixed at
  0.5 or by 5-fold CV on the calibration rows (``-1se``: the smallest ``w`` within one
  standard error, ``-1se-platt`` the largest); ``bag``: the default's log-odds averaged
  with its five fold fits'; ``stack``: a logistic regression on both out-of-fold
  log-odds. The degree column shows ``10 w`` (10: Platt).

Besides the log-loss gaps, ECE and Brier, the report counts, over the fits, those
whose test AUC equals the raw score's exactly, and the new ties and decreases of
the calibrated probability among neighbouring distinct test scores (those the
calibrator read: the non-saturating log-odds where ``lp``).

Data: diabetes is a stratified subsample of ``--max-rows`` (default 40,000)
rows per seed; the others are used whole. Features: numeric columns
standard-scaled, categorical ones one-hot encoded, in a Pipeline. With
``--cache DIR`` the base models' scores are stored there and reused (the
study of the calibrators then takes seconds per seed).

Run (held-out seeds, about 3-5 minutes per seed on one core)::

    python benchmarks/quality/quality_study.py --seeds 3,4,5 --out quality.md

``--seeds 0,1,2`` gives the tuning seeds; ``--quick`` one small seed.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import threadpoolctl
from scipy.special import expit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier, PlattCalibrator, metrics
from bernonnx._meta import response_scores

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from _blend import PlattBernsteinBlend  # noqa: E402
from _candidates import AffineBernstein, LinearPlusBernstein, PlattOrBernstein  # noqa: E402
from _realdata import DEFAULT_DATA_DIR  # noqa: E402
from _shrinkage import DENSE, ShrunkBernstein  # noqa: E402

_DIABETES_CATEGORICAL = (
    "HighBP", "HighChol", "CholCheck", "Smoker", "Stroke", "HeartDiseaseorAttack",
    "PhysActivity", "Fruits", "Veggies", "HvyAlcoholConsump", "AnyHealthcare", "NoDocbcCost",
    "GenHlth", "DiffWalk", "Sex", "Education", "Income",
)  # fmt: skip

#: name -> (file, label column, positive label, categorical columns, dropped columns)
DATASETS = {
    "credit": (
        "uci_credit_card.csv.gz",
        "default.payment.next.month",
        1,
        ("SEX", "EDUCATION", "MARRIAGE"),
        ("ID",),
    ),
    "diabetes": ("diabetes_brfss2015.csv.gz", "Diabetes_binary", 1, _DIABETES_CATEGORICAL, ()),
    "magic": ("magic_gamma_telescope.csv.gz", "class", "h", (), ()),
    "shoppers": (
        "online_shoppers_intention.csv.gz",
        "Revenue",
        True,
        (
            "Month",
            "VisitorType",
            "Weekend",
            "OperatingSystems",
            "Browser",
            "Region",
            "TrafficType",
        ),
        (),
    ),
}

#: The five models of the quality target, then MLPClassifier.
ISSUE_MODELS = (
    "LogisticRegression",
    "LinearSVC",
    "GaussianNB",
    "HistGradientBoosting",
    "RandomForest",
)
MODELS = (*ISSUE_MODELS, "MLPClassifier")


def make_model(name: str, seed: int):
    """Fixed hyperparameters: modest, single-threaded, seeded."""
    return {
        "LogisticRegression": lambda: LogisticRegression(max_iter=1000),
        "LinearSVC": lambda: LinearSVC(random_state=seed),
        "GaussianNB": GaussianNB,
        "HistGradientBoosting": lambda: HistGradientBoostingClassifier(
            max_iter=100, random_state=seed
        ),
        "RandomForest": lambda: RandomForestClassifier(
            n_estimators=50, min_samples_leaf=3, n_jobs=1, random_state=seed
        ),
        "MLPClassifier": lambda: MLPClassifier(
            (32,), max_iter=100, early_stopping=True, random_state=seed
        ),
    }[name]()


def load(name: str, data_dir: Path, max_rows: int, seed: int):
    """Features (DataFrame), 0/1 labels and the preprocessing of data set ``name``."""
    file, label, positive, categorical, drop = DATASETS[name]
    path = Path(data_dir) / file
    if not path.is_file():
        raise SystemExit(
            f"error: {path} not found; pass --data pointing to the shared data folder"
        )
    df = pd.read_csv(path)
    if len(df) > max_rows:
        df, _ = train_test_split(df, train_size=max_rows, stratify=df[label], random_state=seed)
    y = (df[label] == positive).to_numpy().astype(np.int64)
    X = df.drop(columns=[label, *drop])
    numeric = [c for c in X.columns if c not in categorical]
    parts = [("num", StandardScaler(), numeric)]
    if categorical:
        one_hot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        parts.append(("cat", one_hot, list(categorical)))
        X[list(categorical)] = X[list(categorical)].astype(str)
    return X, y, ColumnTransformer(parts)


def split(X, y, seed: int):
    """50 / 25 / 25 train / calibration / test, stratified."""
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=seed
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed
    )
    return X_train, y_train, X_cal, y_cal, X_test, y_test


# --------------------------------------------------------------------------- base scores


def base_case(data: str, model: str, seed: int, data_dir: Path, max_rows: int) -> dict:
    """Fit one base model; its calibration/test scores and scikit-learn's two calibrations."""
    X, y, pre = load(data, data_dir, max_rows, seed)
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y, seed)
    pipe = Pipeline([("pre", pre), ("clf", make_model(model, seed))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_train, y_train)
    frozen = FrozenEstimator(pipe)
    classes = np.array([0, 1])
    case = {"y_cal": y_cal, "y_test": y_test}
    method = "decision_function" if hasattr(pipe, "decision_function") else "predict_proba"
    for part, Xp in (("cal", X_cal), ("test", X_test)):
        case[f"s_{part}"] = response_scores(frozen, Xp, method, False, classes)
        # the non-saturating log-odds of CalibratedClassifier(log_odds=True), where the
        # model has them (GaussianNB, MLPClassifier; LogisticRegression's equal s)
        case[f"lp_{part}"] = case[f"s_{part}"]
        if model in ("GaussianNB", "MLPClassifier"):
            case[f"lp_{part}"] = response_scores(frozen, Xp, "predict_proba", True, classes)
        # what CalArena's calibrators read: the model's predict_proba (LinearSVC has
        # none: the logistic of its decision value, a probability with those log-odds)
        if hasattr(pipe, "predict_proba"):
            case[f"pp_{part}"] = frozen.predict_proba(Xp)[:, 1]
        else:
            case[f"pp_{part}"] = expit(case[f"s_{part}"])
    for name in ("sigmoid", "isotonic", "temperature"):
        cal = CalibratedClassifierCV(frozen, method=name).fit(X_cal, y_cal)
        case[f"p_{name}"] = cal.predict_proba(X_test)[:, 1]
    ours = CalibratedClassifier(frozen).fit(X_cal, y_cal)
    case["p_default_cc"] = ours.predict_proba(X_test)[:, 1]
    return case


def cached_case(data, model, seed, args) -> dict:
    if args.cache is None:
        return base_case(data, model, seed, args.data, args.max_rows)
    path = Path(args.cache) / f"{data}_{model}_{seed}_{args.max_rows}.npz"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        case = base_case(data, model, seed, args.data, args.max_rows)
        np.savez(path, **case)
        return case
    with np.load(path) as f:
        # CalibratedClassifier's own probabilities are checked only when computed in
        # this run: a cache of base scores outlives changes to the library's default
        return {k: f[k] for k in f.files if k != "p_default_cc"}


# --------------------------------------------------------------------------- candidates


def _fit_predict(calibrator, s_cal, y_cal, s_test):
    start = time.perf_counter()
    calibrator.fit(s_cal, y_cal)
    seconds = time.perf_counter() - start
    return calibrator.predict_proba(s_test)[:, 1], seconds, getattr(calibrator, "degree_", None)


#: name -> (score key, calibrator factory)
CANDIDATES = {
    "default": ("lp", BernsteinCalibrator),
    "previous": ("s", BernsteinCalibrator),
    "platt": ("s", PlattCalibrator),
    "affine": ("s", AffineBernstein),
    "affine+lp": ("lp", AffineBernstein),
    "default+lp": ("lp", BernsteinCalibrator),
    "linear+bern": ("s", LinearPlusBernstein),
    "linear+bern+lp": ("lp", LinearPlusBernstein),
    "linear+bern+lp-min": ("lp", partial(LinearPlusBernstein, rule="min")),
    "platt-or-default": ("lp", PlattOrBernstein),
    "shrunk": ("lp", ShrunkBernstein),
    "shrunk-2se": ("lp", partial(ShrunkBernstein, rule="2se")),
    "shrunk32": ("lp", partial(ShrunkBernstein, degree=32)),
    "shrunk32-dense": ("lp", partial(ShrunkBernstein, degree=32, lambdas=DENSE)),
    "shrunk32-1se": ("lp", partial(ShrunkBernstein, degree=32, rule="1se")),
    "blend-50": ("lp", partial(PlattBernsteinBlend, 0.5)),
    "blend-cv": ("lp", PlattBernsteinBlend),
    "blend-cv-1se": ("lp", partial(PlattBernsteinBlend, rule="1se")),
    "blend-cv-1se-platt": ("lp", partial(PlattBernsteinBlend, rule="1se-platt")),
    "blend-p-cv": ("lp", partial(PlattBernsteinBlend, space="prob")),
    "bag": ("lp", partial(PlattBernsteinBlend, 0.0, bag=True)),
    "bag-blend-cv": ("lp", partial(PlattBernsteinBlend, bag=True)),
    "stack": ("lp", partial(PlattBernsteinBlend, "stack")),
}
#: What ``--candidates`` runs by default (the others are slower and lost on seeds 0-2).
DEFAULT_CANDIDATES = ("default", "previous", "platt", "linear+bern+lp", "linear+bern+lp-min")


def run_candidates(case: dict, names) -> dict:
    # one BLAS/OpenMP thread while timing, as benchmarks/run.py: our fits use one anyway,
    # and a LogisticRegression fit on real scores took up to 5x longer with two threads
    # on a 2-core machine, which flattered the fit-time ratios
    with threadpoolctl.threadpool_limits(1):
        out = {}
        for name in names:
            key, factory = CANDIDATES[name]
            out[name] = _fit_predict(
                factory(), case[f"{key}_cal"], case["y_cal"], case[f"{key}_test"]
            )
        # the reference fit time: scikit-learn's LogisticRegression on the same 1-D
        # scores, the median of three fits
        times = []
        for _ in range(3):
            start = time.perf_counter()
            LogisticRegression().fit(case["s_cal"][:, None], case["y_cal"])
            times.append(time.perf_counter() - start)
        out["_lr_time"] = float(np.median(times))
    if (
        "default" in out and "p_default_cc" in case
    ):  # the score-level default is CalibratedClassifier's
        np.testing.assert_allclose(out["default"][0], case["p_default_cc"], rtol=1e-9, atol=1e-12)
    return out


# --------------------------------------------------------------------------- report


def ranking(s, p, y) -> tuple[int, int, bool]:
    """New ties and decreases of ``p`` among neighbouring distinct test scores ``s``,
    and whether the test AUC of ``p`` equals that of ``s`` exactly."""
    order = np.argsort(s, kind="stable")
    distinct = np.diff(s[order]) > 0
    step = np.diff(p[order])[distinct]
    same_auc = roc_auc_score(y, p) == roc_auc_score(y, s)
    return int(np.sum(step == 0)), int(np.sum(step < 0)), bool(same_auc)


def _fmt_gap(g: float) -> str:
    return f"{100 * g:+.3f}%"


def summarise(records: list[dict], names) -> str:
    """Markdown: the summary per candidate, then the per-case gaps."""
    df = pd.DataFrame(records)
    df["ref"] = np.minimum(df["ll_sigmoid"], df["ll_isotonic"])
    per_case = df.groupby(["data", "model"], sort=False).mean(numeric_only=True)
    issue = per_case.index.get_level_values("model").isin(ISSUE_MODELS)
    lines = [
        f"Seeds {sorted(df['seed'].unique().tolist())}; gap = relative test log loss vs the "
        "better of scikit-learn's sigmoid and isotonic (per case: log losses averaged over "
        "the seeds); wins = negative gaps. ECE (10 bins) and Brier: means over all cases.",
        "",
        "| calibrator | wins /20 | worst /20 | mean gap /20 | wins /24 | worst /24 | "
        "mean gap /24 | wins per seed /" + str(len(df)) + " | ECE | Brier | "
        "fit time / LR fit (median) | AUC kept /" + str(len(df)) + " | new ties | decreases |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ref_ece = {k: df[f"ece_{k}"].mean() for k in ("sigmoid", "isotonic")}
    ref_brier = {k: df[f"brier_{k}"].mean() for k in ("sigmoid", "isotonic")}
    for ref in ("sigmoid", "isotonic"):
        gap = per_case[f"ll_{ref}"] / per_case["ref"] - 1
        lines.append(
            f"| sklearn {ref} | {(gap[issue] < 0).sum()} | {_fmt_gap(gap[issue].max())} | "
            f"{_fmt_gap(gap[issue].mean())} | {(gap < 0).sum()} | {_fmt_gap(gap.max())} | "
            f"{_fmt_gap(gap.mean())} | — | {ref_ece[ref]:.4f} | {ref_brier[ref]:.5f} | — | "
            f"{int(df[f'auc_{ref}'].sum())} | {int(df[f'ties_{ref}'].sum())} | "
            f"{int(df[f'down_{ref}'].sum())} |"
        )
    gaps = {}
    for name in names:
        gap = per_case[f"ll_{name}"] / per_case["ref"] - 1
        gaps[name] = gap
        seed_wins = int((df[f"ll_{name}"] < df["ref"]).sum())
        ratio = np.median(df[f"time_{name}"] / df["lr_time"])
        lines.append(
            f"| {name} | {(gap[issue] < 0).sum()} | {_fmt_gap(gap[issue].max())} | "
            f"{_fmt_gap(gap[issue].mean())} | {(gap < 0).sum()} | {_fmt_gap(gap.max())} | "
            f"{_fmt_gap(gap.mean())} | {seed_wins} | {df[f'ece_{name}'].mean():.4f} | "
            f"{df[f'brier_{name}'].mean():.5f} | {ratio:.1f}x | {int(df[f'auc_{name}'].sum())} | "
            f"{int(df[f'ties_{name}'].sum())} | {int(df[f'down_{name}'].sum())} |"
        )
    lines += [
        "",
        "Per-case gaps (and the degree picked, per seed):",
        "",
        "| data | model | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    degrees = df.groupby(["data", "model"], sort=False)
    for data, model in per_case.index:
        cells = []
        for name in names:
            deg = degrees.get_group((data, model))[f"deg_{name}"].tolist()
            deg = (
                ""
                if any(d is None or d != d for d in deg)
                else " (" + ",".join(str(int(d)) for d in deg) + ")"
            )
            cells.append(_fmt_gap(gaps[name][(data, model)]) + deg)
        lines.append(f"| {data} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="3,4,5", help="comma-separated split seeds")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="shared data folder")
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--candidates",
        default=",".join(DEFAULT_CANDIDATES),
        help=f"comma-separated, among {', '.join(CANDIDATES)}",
    )
    parser.add_argument("--max-rows", type=int, default=40_000, help="subsample above this")
    parser.add_argument("--cache", type=Path, help="folder to store/reuse the base scores")
    parser.add_argument("--quick", action="store_true", help="one seed, 4,000 rows (smoke run)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.quick:
        seeds, args.max_rows = seeds[:1], 4_000
    names = args.candidates.split(",")
    records = []
    for seed in seeds:
        for data in args.datasets.split(","):
            for model in args.models.split(","):
                case = cached_case(data, model, seed, args)
                fitted = run_candidates(case, names)
                rec = {"data": data, "model": model, "seed": seed, "lr_time": fitted["_lr_time"]}
                preds = {k: case[f"p_{k}"] for k in ("sigmoid", "isotonic")}
                preds.update({k: fitted[k][0] for k in names})
                for k, p in preds.items():
                    rec[f"ll_{k}"] = metrics.log_loss(case["y_test"], p)
                    rec[f"ece_{k}"] = metrics.expected_calibration_error(
                        case["y_test"], p, n_bins=10
                    )
                    rec[f"brier_{k}"] = metrics.brier_score(case["y_test"], p)
                    key = CANDIDATES[k][0] if k in CANDIDATES else "s"
                    ranked = ranking(case[f"{key}_test"], p, case["y_test"])
                    rec[f"ties_{k}"], rec[f"down_{k}"], rec[f"auc_{k}"] = ranked
                for k in names:
                    rec[f"time_{k}"], rec[f"deg_{k}"] = fitted[k][1], fitted[k][2]
                records.append(rec)
                ref = min(rec["ll_sigmoid"], rec["ll_isotonic"])
                gaps = " ".join(f"{k}={_fmt_gap(rec[f'll_{k}'] / ref - 1)}" for k in names)
                print(f"seed {seed} {data:9s} {model:21s} {gaps}", flush=True)
    text = summarise(records, names)
    print("\n" + text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
