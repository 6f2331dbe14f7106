"""Class-prior shift: the EM estimate against QuaPy and BBSE, and what adapting gains.

Each case is a (table, base model): the shared real tables (binary: credit, magic,
shoppers, diabetes; multiclass: diabetes ``GenHlth``, five classes), a ColumnTransformer
pipeline of LogisticRegression or HistGradientBoosting fitted on 50 % of the rows,
frozen, calibrated on 25 % by each bernonnx calibrator (and left uncalibrated), and a
test pool of the other 25 % (``_realdata.split``, stratified).

The test rows' class balance is shifted by subsampling the pool within each class
(without replacement, so the rows of a class are the table's own: a prior shift by
construction) to each target of a grid: positive rates 0.05, 0.1, 0.2, ..., 0.9, 0.95
(binary) or Dirichlet(1, ..., 1) draws (multiclass), plus the training balance itself
(no shift), ``--draws`` draws of up to ``--rows`` rows each. On every draw:

* the target priors estimated by ``PriorShiftAdapter`` with its defaults on the
  calibrated probabilities (``prior_``, the priors it adapts to; EM's own estimate
  ``prior_em_`` beside it as "raw EM"), by QuaPy's
  EMQ, ACC and PACC on the same frozen base model and the same calibration rows
  (``fit_classifier=False``), and by BBSE (Lipton, Wang & Smola 2018: the confusion
  matrix of the base model's hard predictions on the calibration rows, inverted against
  the target's predicted-class shares, clipped at 0 and renormalised); absolute error
  averaged over the classes;
* log loss and smooth calibration error (binary: ``smooth_calibration_error``;
  multiclass: ``top_label_smooth_calibration_error``) on the shifted rows of the
  probabilities unadapted, adapted to the true priors (the oracle) and adapted to the
  estimate, for every calibrator and for none.

Also: the exported graph (``to_onnx``, priors baked in and as the ``priors`` input,
per-row priors fed) against Python on the test pool; the time of ``PriorShiftAdapter``
with given priors (no refit) and of an estimate from 100,000 unlabeled diabetes rows,
side by side with one calibrator fit on the same rows.

Run from the repository root (``pip install quapy`` first: the ``benchmarks`` extra)::

    OMP_NUM_THREADS=1 python benchmarks/prior_shift.py --out benchmarks/prior_shift.md
    python benchmarks/prior_shift.py --quick  # credit, GenHlth: LR, 1 draw, default calibrator
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import LabelEncoder

from bernonnx import BernsteinCalibrator, CalibratedClassifier, PriorShiftAdapter, to_onnx
from bernonnx._core.priors import (
    adapt_proba,
    class_prior,
    em_priors,
)
from bernonnx._registry import CALIBRATORS
from bernonnx.deploy import run_onnx
from bernonnx.export import check_parity, onnx_inputs
from bernonnx.metrics import (
    log_loss,
    multiclass_log_loss,
    smooth_calibration_error,
    top_label_smooth_calibration_error,
)
from bernonnx.shift import UncalibratedModelWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Verdicts, git_revision, load_average, machine, md_table, now  # noqa: E402
from _realdata import DATASETS, DEFAULT_DATA_DIR, load, make_pipeline, split  # noqa: E402

RATES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
N_DIRICHLET = 11
BINARY = ("credit", "magic", "shoppers", "diabetes")
MODELS = ("LogisticRegression", "HistGradientBoosting")
MIN_ROWS = 100  # PriorShiftAdapter's MIN_TARGET_ROWS
SHARE_OF_CELLS = 0.8  # target: no worse than QuaPy's best in this share of cells
RECOVERY = 0.9  # target: share of the oracle's log-loss gain


def arms(multiclass: bool) -> dict:
    """Every bernonnx calibrator (first variant of each one-score or multiclass entry:
    for ``TemperatureBernsteinCalibrator`` the multiclass default, ``scaling="sms"``; the
    default first) and ``None`` for no calibration."""
    out = {}
    default = "TemperatureBernsteinCalibrator" if multiclass else "BernsteinCalibrator"
    order = sorted(CALIBRATORS, key=lambda e: e.name != default)
    for entry in order:
        if entry.multi or (entry.multiclass and not multiclass):
            continue
        variant = entry.variants[0]
        out[variant.cli_name] = entry.make(variant)
    out["none"] = None
    return out


class PoolLookup(ClassifierMixin, BaseEstimator):
    """A fitted classifier whose input is a row's position in the test pool and whose
    output the frozen base model's probabilities there: QuaPy's methods then run on the
    same probabilities as ours without scoring the same rows again for every draw."""

    def __init__(self, proba=None, classes=None):
        self.proba = proba
        self.classes = classes

    def fit(self, X, y):
        return self

    def __sklearn_is_fitted__(self):
        return True

    @property
    def classes_(self):
        return self.classes

    def predict_proba(self, X):
        return self.proba[np.asarray(X, dtype=np.int64).ravel()]

    def predict(self, X):
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]


def bbse(cal_pred, y_cal, target_pred, n_classes):
    """Black-box shift estimation (Lipton, Wang & Smola 2018): ``w = C^-1 mu``, where
    ``C[i, j] = P(pred = i, y = j)`` on the calibration rows and ``mu`` the target's
    predicted-class shares; priors ``w * pi_train``, clipped at 0 and renormalised."""
    C = np.zeros((n_classes, n_classes))
    np.add.at(C, (cal_pred, y_cal), 1.0)
    C /= len(y_cal)
    mu = np.bincount(target_pred, minlength=n_classes) / len(target_pred)
    w = np.linalg.lstsq(C, mu, rcond=None)[0]
    prior = np.maximum(w * np.bincount(y_cal, minlength=n_classes) / len(y_cal), 0.0)
    return prior / prior.sum() if prior.sum() > 0 else np.full(n_classes, 1.0 / n_classes)


def targets(y_pool, n_classes, multiclass, train_prior, rng):
    """The grid: (label, target priors); the training balance first (no shift)."""
    grid = [("no shift", train_prior)]
    if multiclass:
        draws = rng.dirichlet(np.ones(n_classes), size=N_DIRICHLET)
        grid += [(f"dir{i}", p) for i, p in enumerate(draws)]
    else:
        grid += [(f"{r:.2f}", np.array([1 - r, r])) for r in RATES]
    return grid


def draw(y_pool, prior, rows, rng):
    """Rows of the pool with class shares ``prior``, without replacement; as many as the
    scarcest class allows, up to ``rows``."""
    counts = np.bincount(y_pool, minlength=len(prior))
    n = int(min(rows, np.min(np.where(prior > 0, counts / np.maximum(prior, 1e-12), np.inf))))
    per_class = np.floor(prior * n).astype(int)
    per_class[np.argmax(prior)] += n - per_class.sum()
    per_class = np.minimum(per_class, counts)
    picked = [
        rng.choice(np.flatnonzero(y_pool == k), m, replace=False)
        for k, m in enumerate(per_class)
        if m > 0
    ]
    return np.concatenate(picked)


def losses(y, proba, multiclass):
    """Log loss and smooth calibration error of (N, K) probabilities."""
    labels = np.arange(proba.shape[1])
    if multiclass:
        return (
            multiclass_log_loss(y, proba, labels=labels),
            top_label_smooth_calibration_error(y, proba, labels=labels),
        )
    return log_loss(y, proba[:, 1]), smooth_calibration_error(y, proba[:, 1])


def row_losses(y, proba):
    return -np.log(np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0))


def run_case(table, model, multiclass, args, rng):
    """Every grid cell of one (table, model): estimates, log losses, export parity."""
    import quapy as qp  # noqa: F401 - a benchmark dependency (the benchmarks extra)
    from quapy.method.aggregative import ACC, EMQ, PACC

    X, y, categorical = load(table, args.data, task="multiclass" if multiclass else "binary")
    y = LabelEncoder().fit_transform(y)
    n_classes = int(y.max()) + 1
    numeric = [c for c in X.columns if c not in categorical]
    X_train, y_train, X_cal, y_cal, X_pool, y_pool = split(X, y)
    base = make_pipeline("standard", model, numeric, categorical).fit(X_train, y_train)
    frozen = FrozenEstimator(base)
    train_prior = class_prior(y_cal, n_classes)
    base_pool = base.predict_proba(X_pool)
    pool_idx = np.arange(len(y_pool))[:, None]
    lookup = PoolLookup(base_pool, np.arange(n_classes))
    cal_lookup = PoolLookup(base.predict_proba(X_cal), np.arange(n_classes))
    # QuaPy's methods fitted on the calibration rows with the frozen base model
    quapy = {}
    for name, cls in (("EMQ", EMQ), ("ACC", ACC), ("PACC", PACC)):
        q = cls(cal_lookup, fit_classifier=False, val_split=None)
        q.fit(np.arange(len(y_cal))[:, None], y_cal)
        q.classifier = lookup  # the same model, now reading the test pool's rows
        quapy[name] = q
    cal_pred = np.argmax(cal_lookup.proba, axis=1)

    pool, fitted = {}, {}
    candidates = arms(multiclass)
    if args.quick:  # a smoke run: the default calibrator (the first) and none
        candidates = {k: v for i, (k, v) in enumerate(candidates.items()) if i == 0 or v is None}
    for name, cal in candidates.items():
        if cal is None:
            pool[name] = base_pool
            continue
        clf = CalibratedClassifier(frozen, cal).fit(X_cal, y_cal)
        fitted[name] = clf
        pool[name] = clf.predict_proba(X_pool)
        train_prior_cal = clf.calibration_prior_
        assert np.allclose(train_prior_cal, train_prior)

    rows = []
    for label, target in targets(y_pool, n_classes, multiclass, train_prior, rng):
        for d in range(args.draws):
            idx = draw(y_pool, target, args.rows, rng)
            if len(idx) < MIN_ROWS:
                continue
            truth = class_prior(y_pool[idx], n_classes)
            row = {"table": table, "model": model, "cell": label, "draw": d, "n": len(idx)}
            row["truth"] = truth
            for name, q in quapy.items():
                est = np.asarray(q.predict(pool_idx[idx]), dtype=float)
                row[f"ae_{name}"] = float(np.mean(np.abs(est - truth)))
            est = bbse(cal_pred, y_cal, np.argmax(base_pool[idx], axis=1), n_classes)
            row["ae_BBSE"] = float(np.mean(np.abs(est - truth)))
            for name, proba in pool.items():
                p = proba[idx]
                # the priors PriorShiftAdapter adapts to with its defaults (prior_: the
                # posterior mean given EM's standard error, one row added per class), on
                # the same probabilities; the calibration rows widen the standard error
                # as they do for a CalibratedClassifier. Its prior_em_ is EM's own
                # estimate (em_priors with its defaults, on these rows)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    adapter = PriorShiftAdapter(
                        PoolLookup(proba, np.arange(n_classes)),  # the rows by position
                        train_prior=train_prior,
                        calibration_rows=None if name == "none" else float(len(y_cal)),
                        n_bootstrap=0,
                    ).fit(pool_idx[idx])
                raw, est = adapter.prior_em_, adapter.prior_
                row[f"ae_{name}"] = float(np.mean(np.abs(est - truth)))
                row[f"ae_raw_{name}"] = float(np.mean(np.abs(raw - truth)))
                yy = y_pool[idx]
                oracle = adapt_proba(p, train_prior, truth)
                adapted = adapt_proba(p, train_prior, est)
                raw_adapted = adapt_proba(p, train_prior, raw)
                kinds = (("un", p), ("or", oracle), ("est", adapted), ("raw", raw_adapted))
                for kind, q in kinds:
                    row[f"ll_{kind}_{name}"], row[f"sce_{kind}_{name}"] = losses(yy, q, multiclass)
                if label == "no shift":
                    diff = row_losses(yy, adapted) - row_losses(yy, p)
                    boot = rng.integers(0, len(diff), (200, len(diff)))
                    row[f"zero_diff_{name}"] = float(diff.mean())
                    row[f"zero_se_{name}"] = float(diff[boot].mean(axis=1).std(ddof=1))
                    diff = row_losses(yy, raw_adapted) - row_losses(yy, p)
                    row[f"zero_rawdiff_{name}"] = float(diff.mean())
                    row[f"zero_rawse_{name}"] = float(diff[boot].mean(axis=1).std(ddof=1))
            rows.append(row)
    default = next(iter(fitted))
    export = export_parity(fitted[default], X_pool, y_pool, n_classes, rng)
    draws = 2 if args.quick else 6
    coverage = interval_coverage(
        fitted[default], X_pool, y_pool, train_prior, multiclass, rng, draws=draws
    )
    return rows, {"table": table, "model": model, "calibrator": default, **export, **coverage}


def export_parity(clf, X_pool, y_pool, n_classes, rng):
    """Max |graph - Python| on the pool: priors baked in, as input (default), and per
    row priors fed to the input."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adapter = PriorShiftAdapter(clf, n_bootstrap=0).fit(X_pool.iloc[:2000])
    out = {}
    for key, flag in (("baked", False), ("input", True)):
        onx = to_onnx(adapter, X_pool[:5], priors_input=flag)
        report = check_parity(adapter, onx, X_pool)
        out[f"err_{key}"] = report["max_abs_error"]
        out[f"labels_{key}"] = report["labels_equal"]
        out["dtype"] = report["dtype"]
    per_row = rng.dirichlet(np.ones(n_classes), size=len(X_pool))
    got = run_onnx(onx, {**onnx_inputs(onx, X_pool), "priors": per_row})["probabilities"]
    expected = adapt_proba(clf.predict_proba(X_pool), adapter.train_prior_, per_row)
    out["err_per_row"] = float(np.abs(got - expected).max())
    return out


def interval_coverage(clf, X_pool, y_pool, train_prior, multiclass, rng, draws=6):
    """How often ``prior_interval_`` (95 %, 200 resamples) holds the true priors, over
    ``draws`` shifted draws of the test pool."""
    hits = total = 0
    n_classes = len(train_prior)
    for i in range(draws):
        target = (
            rng.dirichlet(np.ones(n_classes))
            if multiclass
            else np.array([1 - RATES[2 * i], RATES[2 * i]])
        )
        idx = draw(y_pool, target, 2000, rng)
        if len(idx) < MIN_ROWS:
            continue
        truth = class_prior(y_pool[idx], n_classes)
        adapter = PriorShiftAdapter(clf, random_state=0).fit(X_pool.iloc[idx])
        low, high = adapter.prior_interval_.T
        hits += int(np.sum((low <= truth) & (truth <= high)))
        total += n_classes
    return {"coverage": hits / total if total else float("nan"), "coverage_n": total}


def timing(args):
    """Estimate from 100,000 unlabeled diabetes rows against one calibrator fit on them;
    given priors against the same fit."""
    spec = DATASETS["diabetes"]
    df = pd.read_csv(Path(args.data) / spec.file)
    y = df.pop(spec.label).to_numpy()
    numeric = ["Age", "BMI", "MentHlth", "PhysHlth"]
    categorical = [c for c in df.columns if c not in numeric]
    base = make_pipeline("standard", "LogisticRegression", numeric, categorical)
    base.fit(df.iloc[:50_000], y[:50_000])
    X, yy = df.iloc[50_000:150_000], y[50_000:150_000]
    frozen = FrozenEstimator(base)
    t = time.perf_counter()
    clf = CalibratedClassifier(frozen, BernsteinCalibrator()).fit(X, yy)
    fit_time = time.perf_counter() - t
    scores = base.decision_function(X)
    t = time.perf_counter()
    clone(BernsteinCalibrator()).fit(scores, yy)
    cal_only = time.perf_counter() - t
    t = time.perf_counter()
    adapter = PriorShiftAdapter(clf, random_state=0).fit(X)
    est_time = time.perf_counter() - t
    proba = clf.predict_proba(X)
    t = time.perf_counter()
    em_priors(proba, clf.calibration_prior_)
    em_time = time.perf_counter() - t
    t = time.perf_counter()
    PriorShiftAdapter(clf, n_bootstrap=0).fit(X)
    point_time = time.perf_counter() - t
    t = time.perf_counter()
    given = PriorShiftAdapter(clf, priors=[0.5, 0.5]).fit()
    given_time = time.perf_counter() - t
    return {
        "rows": len(X),
        "calibrated fit (score + BernsteinCalibrator)": fit_time,
        "BernsteinCalibrator.fit on the scores alone": cal_only,
        "PriorShiftAdapter.fit (score + EM + 200 bootstrap)": est_time,
        "PriorShiftAdapter.fit, n_bootstrap=0 (score + EM)": point_time,
        "EM alone on the probabilities": em_time,
        "PriorShiftAdapter(priors=...).fit()": given_time,
        "n_iter": adapter.n_iter_,
        "given_is_same_model": given.estimator_ is clf,
    }


def _fmt(x, digits=4):
    return f"{x:.{digits}f}"


def _se_ratio(diff, se) -> np.ndarray:
    """Mean log-loss difference in bootstrap SEs (0 where nothing moved)."""
    diff, se = np.asarray(diff, dtype=float), np.asarray(se, dtype=float)
    return np.divide(diff, se, out=np.zeros_like(diff), where=se > 0)


def report(rows, extras, times, args) -> str:
    df = pd.DataFrame(rows)
    verdicts = Verdicts()
    out = [
        "# Class-prior shift: estimate, adaptation, export",
        "",
        f"{now()}, {git_revision(short=True)}, {machine()}, load average {load_average()}; "
        f"up to {args.rows} target rows per draw, {args.draws} draws per grid cell, seed "
        f"{args.seed}. Reproduce: `OMP_NUM_THREADS=1 python benchmarks/prior_shift.py "
        f"--out benchmarks/prior_shift.md`.",
        "",
    ]
    df["task"] = np.where(df["table"].str.contains("GenHlth"), "multiclass", "binary")
    df["default"] = np.where(df["task"] == "multiclass", "sms-bernstein", "bernstein")
    df["ae_ours"] = [r[f"ae_{d}"] for d, (_, r) in zip(df["default"], df.iterrows(), strict=True)]
    df["ae_raw_ours"] = [
        r[f"ae_raw_{d}"] for d, (_, r) in zip(df["default"], df.iterrows(), strict=True)
    ]
    for col in ("ll_un", "ll_or", "ll_est", "ll_raw", "sce_un", "sce_or", "sce_est"):
        df[f"{col}_ours"] = [
            r[f"{col}_{d}"] for d, (_, r) in zip(df["default"], df.iterrows(), strict=True)
        ]
    keys = ["table", "model", "cell"]
    cells = df.groupby(keys, sort=False).mean(numeric_only=True).reset_index()
    best_q = cells[["ae_EMQ", "ae_ACC", "ae_PACC"]].min(axis=1)
    cells["beats_quapy"] = cells["ae_ours"] <= best_q
    share = float(cells["beats_quapy"].mean())

    out += ["## Prior estimate: mean absolute error per cell (default calibrator)", ""]
    table_rows = []
    for (table, model), g in cells.groupby(["table", "model"], sort=False):
        table_rows.append(
            [
                table,
                model,
                len(g),
                _fmt(g["ae_ours"].mean()),
                _fmt(g["ae_raw_ours"].mean()),
                _fmt(g["ae_EMQ"].mean()),
                _fmt(g["ae_ACC"].mean()),
                _fmt(g["ae_PACC"].mean()),
                _fmt(g["ae_BBSE"].mean()),
                f"{g['beats_quapy'].mean():.0%}",
            ]
        )
    out += [
        md_table(
            [
                "table",
                "model",
                "cells",
                "ours (prior_, calibrated)",
                "raw EM",
                "QuaPy EMQ",
                "QuaPy ACC",
                "QuaPy PACC",
                "BBSE",
                "cells ours ≤ best QuaPy",
            ],
            table_rows,
        ),
        "",
    ]
    v1 = verdicts.check(
        f"MAE ≤ best of EMQ/ACC/PACC in ≥ {SHARE_OF_CELLS:.0%} of cells (got {share:.0%} of "
        f"{len(cells)})",
        share >= SHARE_OF_CELLS,
    )
    per_case = cells.groupby(["table", "model"])[["ae_ours", "ae_BBSE"]].mean()
    overall_ours, overall_bbse = cells["ae_ours"].mean(), cells["ae_BBSE"].mean()
    v2 = verdicts.check(
        f"mean MAE ≤ BBSE's over all cells ({overall_ours:.4f} vs {overall_bbse:.4f})",
        overall_ours <= overall_bbse,
    )
    behind = [f"{t} {m}" for (t, m), r in per_case.iterrows() if r["ae_ours"] > r["ae_BBSE"]]
    out += [
        f"Cells where ours ≤ the best QuaPy method: {share:.1%} ({v1}). Mean MAE over all "
        f"cells: ours {overall_ours:.4f}, BBSE {overall_bbse:.4f} ({v2}); cases where "
        f"BBSE's mean is lower: {', '.join(behind) or 'none'}.",
        "",
    ]

    out += ["### Per target prior (all cases)", ""]
    by_cell = cells.groupby("cell", sort=False)[
        ["ae_ours", "ae_raw_ours", "ae_EMQ", "ae_ACC", "ae_PACC", "ae_BBSE"]
    ].mean()
    out += [
        md_table(
            ["target", "ours", "raw EM", "EMQ", "ACC", "PACC", "BBSE"],
            [[c, *(_fmt(v) for v in r)] for c, r in by_cell.iterrows()],
        ),
        "",
    ]

    out += [
        "## Adapted probabilities (default calibrator)",
        "",
        "Log loss on the shifted rows, averaged over the grid; recovery = mean gain of the "
        "estimated adaptation over the unadapted / mean gain of the oracle's.",
        "",
    ]
    rec_rows, gains = [], {"binary": [0.0, 0.0], "multiclass": [0.0, 0.0]}
    for (table, model), g in cells[cells["cell"] != "no shift"].groupby(
        ["table", "model"], sort=False
    ):
        gain_or = (g["ll_un_ours"] - g["ll_or_ours"]).mean()
        gain_est = (g["ll_un_ours"] - g["ll_est_ours"]).mean()
        gain_raw = (g["ll_un_ours"] - g["ll_raw_ours"]).mean()
        task = "multiclass" if "GenHlth" in table else "binary"
        gains[task][0] += gain_est
        gains[task][1] += gain_or
        rec_rows.append(
            [
                table,
                model,
                _fmt(g["ll_un_ours"].mean()),
                _fmt(g["ll_or_ours"].mean()),
                _fmt(g["ll_est_ours"].mean()),
                f"{gain_est / gain_or:.1%}",
                f"{gain_raw / gain_or:.1%}",
                _fmt(g["sce_un_ours"].mean()),
                _fmt(g["sce_or_ours"].mean()),
                _fmt(g["sce_est_ours"].mean()),
            ]
        )
    recovery = (gains["binary"][0] + gains["multiclass"][0]) / (
        gains["binary"][1] + gains["multiclass"][1]
    )
    by_task = {k: v[0] / v[1] for k, v in gains.items() if v[1] > 0}
    out += [
        md_table(
            [
                "table",
                "model",
                "log loss unadapted",
                "oracle",
                "estimated",
                "recovery",
                "recovery, raw EM",
                "smooth ECE unadapted",
                "oracle",
                "estimated",
            ],
            rec_rows,
        ),
        "",
    ]
    v3 = verdicts.check(
        f"estimated adaptation recovers ≥ {RECOVERY:.0%} of the oracle's log-loss gain "
        f"(got {recovery:.1%}; binary {by_task.get('binary', float('nan')):.1%}, "
        f"multiclass {by_task.get('multiclass', float('nan')):.1%})",
        recovery >= RECOVERY,
    )
    zero = df[df["cell"] == "no shift"]
    zd = [r[f"zero_diff_{d}"] for d, (_, r) in zip(zero["default"], zero.iterrows(), strict=True)]
    zs = [r[f"zero_se_{d}"] for d, (_, r) in zip(zero["default"], zero.iterrows(), strict=True)]
    z_ratio = _se_ratio(zd, zs)
    zr = [
        r[f"zero_rawdiff_{d}"] for d, (_, r) in zip(zero["default"], zero.iterrows(), strict=True)
    ]
    zrs = [
        r[f"zero_rawse_{d}"] for d, (_, r) in zip(zero["default"], zero.iterrows(), strict=True)
    ]
    raw_ratio = _se_ratio(zr, zrs)
    held = (zero["table"] != "credit").to_numpy()  # credit tunes in the corpus study
    pairs = zip(zero["table"], zero["model"], z_ratio, strict=True)
    z_cases = sorted({f"{t} {m}" for t, m, r in pairs if r > 2})
    v4 = verdicts.check(
        "no shift: adapted never worse than unadapted by > 2 bootstrap SE "
        f"(worst {z_ratio.max():+.2f} SE over {len(z_ratio)} draws)",
        bool(np.all(z_ratio <= 2.0)),
    )
    shifted_cells = cells[cells["cell"] != "no shift"]
    raw_rec = {}
    for task, part in (
        ("all", shifted_cells),
        ("binary", shifted_cells[~shifted_cells["table"].str.contains("GenHlth")]),
        ("multiclass", shifted_cells[shifted_cells["table"].str.contains("GenHlth")]),
    ):
        gain_or = (
            (part["ll_un_ours"] - part["ll_or_ours"])
            .groupby([part["table"], part["model"]])
            .mean()
        )
        gain_raw = (
            (part["ll_un_ours"] - part["ll_raw_ours"])
            .groupby([part["table"], part["model"]])
            .mean()
        )
        raw_rec[task] = gain_raw.sum() / gain_or.sum() if len(part) else float("nan")
    tuned = cells["table"] == "credit"
    rest = cells[~tuned & (cells["cell"] != "no shift")]
    held_rec = (rest["ll_un_ours"] - rest["ll_est_ours"]).mean() / (
        rest["ll_un_ours"] - rest["ll_or_ours"]
    ).mean()
    held_raw = (rest["ll_un_ours"] - rest["ll_raw_ours"]).mean() / (
        rest["ll_un_ours"] - rest["ll_or_ours"]
    ).mean()
    out += [
        f"Recovery over all cases: {recovery:.1%} ({v3}). No shift: {v4}; draws more than "
        f"2 SE worse in: {', '.join(z_cases) or 'none'} ({int(np.sum(z_ratio > 2))} of "
        f"{len(z_ratio)} draws). Adapted to EM's raw estimate (`prior_em_`): recovery "
        f"{raw_rec['all']:.1%} (binary {raw_rec['binary']:.1%}, multiclass "
        f"{raw_rec['multiclass']:.1%}); worst no-shift draw {raw_ratio.max():+.2f} SE "
        f"({int(np.sum(raw_ratio > 2))} of {len(raw_ratio)} draws above 2 SE).",
        "",
        "The adapter's rule (each prior's posterior mean given EM's estimate and its "
        "standard error, then one row added per class) was chosen in "
        "`benchmarks/prior_shift_corpus.py` on that study's tuning tables, of which credit "
        "is one here; on the other cases the recovery is "
        f"{held_rec:.1%} (raw EM {held_raw:.1%}) and the worst no-shift draw "
        f"{z_ratio[held].max():+.2f} SE (raw EM {raw_ratio[held].max():+.2f} SE).",
        "",
    ]

    out += [
        "## Every calibrator, and none",
        "",
        "Mean over the grid (no-shift cells excluded) of each case: MAE of the adapter's "
        "`prior_` on that calibrator's probabilities, log loss unadapted / oracle / estimated, "
        "recovery, smooth ECE of the estimated adaptation.",
        "",
    ]
    arm_names = sorted({c[3:] for c in df.columns if c.startswith("ae_")} - {
        "EMQ", "ACC", "PACC", "BBSE", "ours"
    } - {c[3:] for c in df.columns if c.startswith("ae_raw_")})  # fmt: skip
    arm_rows = []
    shifted = cells[cells["cell"] != "no shift"]
    for (table, model), g in shifted.groupby(["table", "model"], sort=False):
        for name in arm_names:
            if f"ae_{name}" not in g or g[f"ae_{name}"].isna().all():
                continue
            gain_or = (g[f"ll_un_{name}"] - g[f"ll_or_{name}"]).mean()
            gain_est = (g[f"ll_un_{name}"] - g[f"ll_est_{name}"]).mean()
            arm_rows.append(
                [
                    table,
                    model,
                    name,
                    _fmt(g[f"ae_{name}"].mean()),
                    _fmt(g[f"ll_un_{name}"].mean()),
                    _fmt(g[f"ll_or_{name}"].mean()),
                    _fmt(g[f"ll_est_{name}"].mean()),
                    f"{gain_est / gain_or:.1%}" if gain_or > 0 else "n/a",
                    _fmt(g[f"sce_est_{name}"].mean()),
                ]
            )
    out += [
        md_table(
            [
                "table",
                "model",
                "calibrator",
                "MAE",
                "log loss unadapted",
                "oracle",
                "estimated",
                "recovery",
                "smooth ECE estimated",
            ],
            arm_rows,
        ),
        "",
    ]

    out += ["## Export and interval", ""]
    ex_rows = []
    exact = True
    for e in extras:
        tol = 1e-9 if e["dtype"] == "float64" else 1e-6
        ok = max(e["err_baked"], e["err_input"], e["err_per_row"]) <= tol and (
            e["labels_baked"] and e["labels_input"]
        )
        exact &= ok
        ex_rows.append(
            [
                e["table"],
                e["model"],
                e["calibrator"],
                e["dtype"],
                f"{e['err_baked']:.1e}",
                f"{e['err_input']:.1e}",
                f"{e['err_per_row']:.1e}",
                "yes" if ok else "NO",
                f"{e['coverage']:.0%} of {e['coverage_n']}",
            ]
        )
    out += [
        md_table(
            [
                "table",
                "model",
                "calibrator",
                "graph",
                "max error, priors baked in",
                "priors input (default)",
                "per-row priors fed",
                "exact",
                "95% interval holds the truth",
            ],
            ex_rows,
        ),
        "",
    ]
    verdicts.check("export exact, priors baked in and as input (every case)", exact)

    if times:
        out += ["## Time (one thread; diabetes, 100,000 unlabeled rows)", ""]
        out += [
            md_table(
                ["step", "seconds"],
                [[k, f"{v:.3f}"] for k, v in times.items() if isinstance(v, float)],
            ),
            "",
        ]
        est = times["PriorShiftAdapter.fit, n_bootstrap=0 (score + EM)"]
        boot = times["PriorShiftAdapter.fit (score + EM + 200 bootstrap)"]
        fit = times["calibrated fit (score + BernsteinCalibrator)"]
        verdicts.check(
            f"estimate from 100,000 rows faster than one calibrator fit on them "
            f"({est:.2f} s vs {fit:.2f} s)",
            est < fit,
        )
        out += [
            f"With its 200-resample bootstrap interval the estimate takes {boot:.2f} s, "
            f"{boot / fit:.1f} times the calibrator fit: each resample is an EM run "
            "(`n_bootstrap` sets the cost; 0 for the point estimate alone).",
            "",
        ]
        given = times["PriorShiftAdapter(priors=...).fit()"] * 1e3
        verdicts.check(
            f"given priors: no refit (the same model object; {given:.2f} ms)",
            bool(times["given_is_same_model"]),
        )
    out.insert(4, verdicts.summary())
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--data", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--csv", type=Path, default=None, help="every draw's row, as CSV")
    args = parser.parse_args(argv)
    cases = [(t, m, False) for t in BINARY for m in MODELS] + [
        ("diabetes", m, True) for m in MODELS
    ]
    if args.quick:
        cases = [("credit", "LogisticRegression", False), ("diabetes", "LogisticRegression", True)]
        args.draws = 1
    rows, extras = [], []
    for table, model, multiclass in cases:
        t = time.perf_counter()
        # each case its own stream of draws, named by the case: a change that moves
        # one case's use of random numbers leaves the other cases' draws as they were
        rng = np.random.default_rng([args.seed, *map(ord, f"{table}/{model}/{multiclass}")])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncalibratedModelWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            r, e = run_case(table, model, multiclass, args, rng)
        name = f"{table}-GenHlth" if multiclass else table
        for row in r:
            row["table"] = name
        e["table"] = name
        rows += r
        extras.append(e)
        print(f"{name} {model}: {len(r)} draws in {time.perf_counter() - t:.0f} s", flush=True)
    times = {} if args.quick else timing(args)
    text = report(rows, extras, times, args)
    if args.csv:
        pd.DataFrame(rows).drop(columns=["truth"]).to_csv(args.csv, index=False)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
