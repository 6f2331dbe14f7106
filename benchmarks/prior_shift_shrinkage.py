"""Choosing ``PriorShiftAdapter``'s ``shrinkage`` on cases kept apart from the benchmark's.

The strength ``c`` of the shrinkage of the EM estimate toward the training priors
(``bernonnx._core.priors.shrink_priors``: each log prior ratio ``d`` of Fisher variance
``v`` multiplied by ``max(0, 1 - c v / d**2)``) is chosen here, on the credit table with
LogisticRegression (binary) and a generated five-class case (``make_classification``,
overlapping classes, LogisticRegression), and ``benchmarks/prior_shift.py`` reports
every other case (the other binary tables, HistGradientBoosting, the diabetes
``GenHlth`` five-class cases) as held out. Same grid, draws and measures as
``prior_shift.py``: recovery of the oracle's log-loss gain, and at zero shift the
adapted log loss minus the unadapted in bootstrap standard errors (target: never
above 2).

Run from the repository root::

    OMP_NUM_THREADS=1 python benchmarks/prior_shift_shrinkage.py \
        --out benchmarks/prior_shift_shrinkage.md
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import LabelEncoder

from bernonnx import CalibratedClassifier
from bernonnx._core.priors import (
    adapt_proba,
    class_prior,
    em_priors,
    prior_covariance,
    shrink_priors,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import git_revision, load_average, machine, md_table, now  # noqa: E402
from _realdata import DEFAULT_DATA_DIR, load, make_pipeline, split  # noqa: E402
from prior_shift import arms, draw, row_losses, targets  # noqa: E402

STRENGTHS = (0.0, 1.0, 1.5, 2.0, 3.0, 4.0)


def cases(data):
    X, y, categorical = load("credit", data, task="binary")
    y = LabelEncoder().fit_transform(y)
    numeric = [c for c in X.columns if c not in categorical]
    X_train, y_train, X_cal, y_cal, X_pool, y_pool = split(X, y)
    base = make_pipeline("standard", "LogisticRegression", numeric, categorical)
    base.fit(X_train, y_train)
    clf = CalibratedClassifier(FrozenEstimator(base), next(iter(arms(False).values())))
    clf.fit(X_cal, y_cal)
    yield "credit LogisticRegression", clf.predict_proba(X_pool), y_pool, clf, False
    X, y = make_classification(
        40000,
        n_features=10,
        n_informative=4,
        n_classes=5,
        n_clusters_per_class=1,
        class_sep=0.6,
        weights=[0.35, 0.25, 0.2, 0.12, 0.08],
        random_state=0,
    )
    base = LogisticRegression(max_iter=500).fit(X[:20000], y[:20000])
    clf = CalibratedClassifier(FrozenEstimator(base), next(iter(arms(True).values())))
    clf.fit(X[20000:30000], y[20000:30000])
    yield (
        "generated five-class LogisticRegression",
        clf.predict_proba(X[30000:]),
        y[30000:],
        clf,
        True,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--data", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(args.seed)
    table = []
    for name, P, Y, clf, multiclass in cases(args.data):
        k, tp = P.shape[1], clf.calibration_prior_
        gains = {s: [] for s in STRENGTHS}
        zero = {s: [] for s in STRENGTHS}
        mae = {s: [] for s in STRENGTHS}
        oracle = []
        for label, target in targets(Y, k, multiclass, tp, rng):
            for _ in range(args.draws):
                idx = draw(Y, target, args.rows, rng)
                if len(idx) < 100:
                    continue
                p, y = P[idx], Y[idx]
                truth = class_prior(y, k)
                raw, _, _ = em_priors(p, tp)
                var = np.diag(prior_covariance(p, tp, raw))
                unadapted = row_losses(y, p)
                if label != "no shift":
                    oracle.append(
                        unadapted.mean() - row_losses(y, adapt_proba(p, tp, truth)).mean()
                    )
                for s in STRENGTHS:
                    est = shrink_priors(raw, tp, var, s)
                    diff = row_losses(y, adapt_proba(p, tp, est)) - unadapted
                    mae[s].append(np.abs(est - truth).mean())
                    if label == "no shift":
                        boot = diff[rng.integers(0, len(diff), (200, len(diff)))].mean(1)
                        se = boot.std(ddof=1)
                        zero[s].append(diff.mean() / se if se > 0 else 0.0)
                    else:
                        gains[s].append(-diff.mean())
        for s in STRENGTHS:
            table.append(
                [
                    name,
                    f"{s:g}",
                    f"{np.mean(gains[s]) / np.mean(oracle):.1%}",
                    f"{max(zero[s]):+.2f}",
                    f"{sum(z > 2 for z in zero[s])} of {len(zero[s])}",
                    f"{np.mean(mae[s]):.4f}",
                ]
            )
    text = "\n".join(
        [
            "# Prior shift: choosing the shrinkage strength",
            "",
            f"{now()}, {git_revision(short=True)}, {machine()}, load average "
            f"{load_average()}; up to {args.rows} rows per draw, {args.draws} draws per "
            f"grid cell, seed {args.seed}. Reproduce: `OMP_NUM_THREADS=1 python "
            "benchmarks/prior_shift_shrinkage.py --out benchmarks/prior_shift_shrinkage.md`.",
            "",
            md_table(
                [
                    "case",
                    "shrinkage",
                    "recovery of the oracle's gain",
                    "worst no-shift draw (SE)",
                    "no-shift draws > 2 SE",
                    "MAE of the prior",
                ],
                table,
            ),
            "",
        ]
    )
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
