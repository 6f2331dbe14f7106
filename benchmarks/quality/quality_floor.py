"""The noise floor of the quality target: what can a rule see from the calibration rows?
=====================================================================================

The quality study (``quality_study.py``) scores a calibrator against an oracle:
per fit, the better of scikit-learn's sigmoid and isotonic *on the test rows*.
The target is at least 18 of 20 wins and no case worse than +0.05%. This
script measures what the data can resolve, on the study's three splits and its
cached base scores (same cases, same seeds, same gap):

(a) ``cv-choice``: sigmoid or isotonic, whichever has the lower 5-fold
    cross-validated log loss on the calibration rows (the default's folds, a
    hash of the row position), refitted on all of them. It can at best tie the
    oracle (gap 0); its worst gap is what choosing between the oracle's own two
    candidates costs when the choice sees only the calibration rows.
(b) the bootstrap standard error, over test rows (each seed resampled
    independently, ``--n-boot`` times), of each case's gap (the default, the
    blend candidate and ``cv-choice`` against the oracle, the oracle recomputed
    on every resample) and of sigmoid against isotonic; the share of
    resamples in which the default wins; the between-seed standard error of the
    default's gap (the spread of its three per-seed gaps over sqrt(3), which also
    holds the calibration rows' and the base model's variation); and how often
    the sign of sigmoid minus isotonic on the calibration-row CV agrees with the
    test rows. Per rule, the share of resamples (independent across cases) on
    which its worst case gap is within +0.05% and on which it also wins at least
    90% of the cases: the plug-in bootstrap's chance that the target is met on
    another draw of test rows of the same size, the fits held fixed; and the
    cases whose gap is above two bootstrap standard errors (worse than the
    oracle beyond test-row noise).
(c) ``default-best-degree``: ``BernsteinCalibrator(degree=d)`` at the degree of
    least test log loss, per fit, among the default's 13 candidates.

Wins are counted two ways: a negative gap (the quality study's rule) and a gap
of at most +0.001% (1e-5 relative; the issue's rule "within 1e-5 or below",
under which a rule that always picks the oracle's choice wins).

Run (about a minute per split with the cache of ``quality_study.py``)::

    python benchmarks/quality/quality_floor.py --cache /tmp/qb/cache \
        --out benchmarks/quality/quality_floor.md
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import threadpoolctl
from scipy.stats import norm
from sklearn.calibration import _SigmoidCalibration
from sklearn.isotonic import IsotonicRegression

from bernonnx import BernsteinCalibrator, metrics
from bernonnx._core.points import fold_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blend import PlattBernsteinBlend  # noqa: E402
from quality_study import DEFAULT_DATA_DIR, ISSUE_MODELS, cached_case  # noqa: E402

#: name -> (tables, seeds), as in quality_study.md
SPLITS = {
    "tuning": (("credit", "magic"), (0, 1, 2)),
    "held out A": (("diabetes", "shoppers"), (0, 1, 2)),
    "held out B": (("credit", "diabetes", "magic", "shoppers"), (3, 4, 5)),
}
DEGREES = (2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)
TARGET = 5e-4  # +0.05%
TIE = 1e-5
EPS = np.finfo(np.float64).eps


def row_loss(y, p):
    """Per-row log loss, clipped as ``bernonnx.metrics.log_loss`` clips."""
    p_true = np.clip(np.where(y == 1, p, 1.0 - p), EPS, 1.0 - EPS)
    return -np.log(p_true)


def sklearn_pair(s_fit, y_fit, s_eval):
    """scikit-learn's sigmoid and isotonic calibrations (as ``CalibratedClassifierCV``'s)."""
    sigmoid = _SigmoidCalibration().fit(s_fit, y_fit).predict(s_eval)
    isotonic = IsotonicRegression(out_of_bounds="clip").fit(s_fit, y_fit).predict(s_eval)
    return sigmoid, isotonic


def cv_sigmoid_minus_isotonic(s, y, n_folds=5):
    """Out-of-fold log loss of sigmoid minus that of isotonic on the calibration rows."""
    folds = fold_of(0, s.shape[0], n_folds)
    diff = np.empty(n_folds)
    for k in range(n_folds):
        train, held = folds != k, folds == k
        sig, iso = sklearn_pair(s[train], y[train], s[held])
        diff[k] = row_loss(y[held], sig).mean() - row_loss(y[held], iso).mean()
    return float(diff.mean())


def one_fit(case):
    """Per-row test losses of each rule, and the calibration-row CV sign."""
    y, s_cal, s_test = case["y_test"], case["s_cal"], case["s_test"]
    lp_cal, lp_test = case["lp_cal"], case["lp_test"]
    sig, iso = sklearn_pair(s_cal, case["y_cal"], s_test)
    # the cache holds CalibratedClassifierCV's own probabilities: same fits
    np.testing.assert_allclose(sig, case["p_sigmoid"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(iso, case["p_isotonic"], rtol=0, atol=1e-12)
    losses = {"sigmoid": row_loss(y, sig), "isotonic": row_loss(y, iso)}
    cv_diff = cv_sigmoid_minus_isotonic(s_cal, case["y_cal"])
    losses["cv-choice"] = losses["sigmoid" if cv_diff < 0 else "isotonic"]
    y_cal = case["y_cal"]
    default = BernsteinCalibrator().fit(lp_cal, y_cal)
    p_default = default.predict_proba(lp_test)[:, 1]
    losses["default"] = row_loss(y, p_default)
    # the per-row loss is bernonnx's log loss, row by row
    assert np.isclose(losses["default"].mean(), metrics.log_loss(y, p_default), rtol=1e-12)
    by_degree = []
    for d in DEGREES:
        fixed = BernsteinCalibrator(degree=d).fit(lp_cal, y_cal)
        by_degree.append(row_loss(y, fixed.predict_proba(lp_test)[:, 1]))
    best = int(np.argmin([b.mean() for b in by_degree]))
    losses["default-best-degree"] = by_degree[best]
    blend = PlattBernsteinBlend().fit(lp_cal, y_cal)
    losses["blend-cv"] = row_loss(y, blend.predict_proba(lp_test)[:, 1])
    test_diff = losses["sigmoid"].mean() - losses["isotonic"].mean()
    info = {
        "cv_diff": cv_diff,
        "test_diff": test_diff,
        "best_degree": DEGREES[best],
        "default_degree": default.degree_,
    }
    return losses, info


RULES = ("sigmoid", "isotonic", "cv-choice", "default", "default-best-degree", "blend-cv")


def resample_counts(n, rng, n_boot):
    """How often each of ``n`` test rows is drawn, per resample: shape (n_boot, n)."""
    idx = rng.integers(0, n, size=(n_boot, n))
    return np.stack([np.bincount(row, minlength=n) for row in idx]).astype(np.float64)


def bootstrap_means(losses, rng, n_boot, rules=RULES):
    """Resampled mean loss of each rule over the test rows: shape (n_boot, rules)."""
    L = np.stack([losses[r] for r in rules])  # the same resampled rows for every rule
    n = L.shape[1]
    return resample_counts(n, rng, n_boot) @ L.T / n


def case_summary(fits, rng, n_boot):
    """Gaps, their standard errors and the CV-sign agreement of one (table, model) case."""
    means = np.array([[losses[r].mean() for r in RULES] for losses, _ in fits])  # (seeds, rules)
    boot = np.stack(
        [bootstrap_means(losses, rng, n_boot) for losses, _ in fits]
    )  # (seeds, B, rules)
    i_sig, i_iso = RULES.index("sigmoid"), RULES.index("isotonic")

    def gaps(m):  # m: (seeds, ..., rules) -> gaps against the per-seed oracle, seeds averaged
        ref = np.minimum(m[..., i_sig], m[..., i_iso]).mean(axis=0)
        return m.mean(axis=0) / ref[..., None] - 1.0

    gap, boot_gap = gaps(means), gaps(boot)
    i_def = RULES.index("default")
    per_seed = means[:, i_def] / np.minimum(means[:, i_sig], means[:, i_iso]) - 1.0
    sig_iso = means[:, i_sig].mean() / means[:, i_iso].mean() - 1.0
    boot_sig_iso = boot[..., i_sig].mean(axis=0) / boot[..., i_iso].mean(axis=0) - 1.0
    infos = [info for _, info in fits]
    return {
        **{f"gap_{r}": gap[k] for k, r in enumerate(RULES)},
        **{f"se_{r}": boot_gap[:, k].std(ddof=1) for k, r in enumerate(RULES)},
        "p_win_default": float(np.mean(boot_gap[:, i_def] < 0)),
        "seed_se_default": per_seed.std(ddof=1) / np.sqrt(len(fits)),
        "sig_iso": sig_iso,
        "se_sig_iso": boot_sig_iso.std(ddof=1),
        "agree": sum(np.sign(i["cv_diff"]) == np.sign(i["test_diff"]) for i in infos),
        "n_seeds": len(fits),
        "boot_gap": boot_gap,
        "per_seed": means / np.minimum(means[:, [i_sig]], means[:, [i_iso]]) - 1.0,
        "best_degrees": ",".join(str(i["best_degree"]) for i in infos),
        "default_degrees": ",".join(str(i["default_degree"]) for i in infos),
    }


def pct(x):
    return f"{100 * x:+.3f}%"


def pm(x, se):
    return f"{pct(x)} ± {100 * se:.3f}"


def split_report(name, cases):
    df = pd.DataFrame(cases)
    lines = [
        f"## {name}",
        "",
        "| rule | wins (gap < 0) | wins (gap ≤ +0.001%) | worst gap | mean gap | "
        "P(worst ≤ +0.05%) | P(target met) | cases worse by > 2 SE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    boot = np.stack(df["boot_gap"].to_list())  # (cases, B, rules)
    for k, r in enumerate(RULES):
        g = df[f"gap_{r}"]
        worst = df.loc[g.idxmax()]
        # resamples of the test rows (independent across cases) on which the rule's worst
        # case gap stays within the target, and on which it also wins >= 90% of the cases
        b_worst = boot[:, :, k].max(axis=0) <= TARGET
        b_wins = (boot[:, :, k] < 0).sum(axis=0) >= 0.9 * len(df)
        lines.append(
            f"| {r} | {(g < 0).sum()} / {len(df)} | {(g <= TIE).sum()} / {len(df)} | "
            f"{pct(g.max())} ({worst['data']} {worst['model']}) | {pct(g.mean())} | "
            f"{b_worst.mean():.2f} | {(b_worst & b_wins).mean():.2f} | "
            f"{int((g > 2 * df[f'se_{r}']).sum())} |"
        )
    se = df["se_default"]
    seed_se = df["seed_se_default"]
    # a calibrator whose true gap is 0 in every case, measured with the default's noise
    p_zero = 1.0 - np.prod(norm.cdf(TARGET / se))
    p_zero_seed = 1.0 - np.prod(norm.cdf(TARGET / seed_se))
    agree, fits = int(df["agree"].sum()), int(df["n_seeds"].sum())
    lines += [
        "",
        f"- Bootstrap SE of the default's case gap (test rows only): median "
        f"{100 * se.median():.3f}%, largest {100 * se.max():.3f}%; between-seed SE: median "
        f"{100 * seed_se.median():.3f}%, largest {100 * seed_se.max():.3f}%.",
        f"- Cases whose default gap is within 2 bootstrap SE of 0: "
        f"{int((df['gap_default'].abs() < 2 * se).sum())} / {len(df)}; cases whose "
        f"sigmoid-isotonic difference is within 2 SE of 0 (the oracle picks on noise): "
        f"{int((df['sig_iso'].abs() < 2 * df['se_sig_iso']).sum())} / {len(df)}.",
        f"- Sign of sigmoid minus isotonic, calibration-row 5-fold CV vs test rows: agrees on "
        f"{agree} / {fits} fits.",
        f"- A calibrator with true gap 0 in every case, measured with the default's noise, "
        f"would show a worst gap above +0.05% with probability {p_zero:.2f} (bootstrap SE, "
        f"test rows only) or {p_zero_seed:.2f} (between-seed SE), cases independent and normal.",
        "",
        "| data | model | sigmoid vs isotonic | CV sign agrees | cv-choice | default "
        "(between-seed SE) | P(default wins) | default-best-degree (degrees) | blend-cv |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, c in df.iterrows():
        lines.append(
            f"| {c['data']} | {c['model']} | {pm(c['sig_iso'], c['se_sig_iso'])} | "
            f"{c['agree']} / {c['n_seeds']} | {pm(c['gap_cv-choice'], c['se_cv-choice'])} | "
            f"{pm(c['gap_default'], c['se_default'])} ({100 * c['seed_se_default']:.3f}) | "
            f"{c['p_win_default']:.2f} | {pct(c['gap_default-best-degree'])} "
            f"({c['best_degrees']}) | {pm(c['gap_blend-cv'], c['se_blend-cv'])} |"
        )
    losing = df[(df["gap_default"] > 0) | (df["gap_blend-cv"] > 0)]
    if len(losing):
        lines += [
            "",
            "Per seed, the cases where the default or blend-cv loses (gap against that seed's "
            "oracle; default's degree in brackets):",
            "",
            "| data | model | seed | " + " | ".join(RULES) + " |",
            "|---|---|---|" + "---|" * len(RULES),
        ]
        for _, c in losing.iterrows():
            degrees = c["default_degrees"].split(",")
            for j, row in enumerate(c["per_seed"]):
                cells = [pct(g) for g in row]
                cells[RULES.index("default")] += f" ({degrees[j]})"
                lines.append(
                    f"| {c['data']} | {c['model']} | {c['seeds'][j]} | " + " | ".join(cells) + " |"
                )
    return "\n".join(lines)


HEADER = """# The noise floor of the quality target

Produced by `benchmarks/quality/quality_floor.py` (see its docstring for the rules) on the
cached base scores of `benchmarks/quality/quality_study.py`: the three splits of
`quality_study.md`, the five issue models. A case's gap is its test log loss (averaged over
the split's seeds) relative to the oracle's, the better of scikit-learn's sigmoid and
isotonic per fit on the test rows; `± x` is the bootstrap standard error over test rows
({n_boot} resamples, in percentage points). In the per-case tables, "sigmoid vs isotonic" is
sigmoid's log loss relative to isotonic's (negative: sigmoid better), "CV sign agrees" counts
the seeds whose calibration-row CV ranked the two as the test rows did, and the degrees are
the best in hindsight per seed.
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, help="quality_study.py's cache of base scores")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="shared data folder")
    parser.add_argument("--max-rows", type=int, default=40_000, help="as quality_study.py")
    parser.add_argument("--splits", default=",".join(SPLITS), help="comma-separated")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    parser.add_argument("--quick", action="store_true", help="credit, 4,000 rows, 2 seeds")
    args = parser.parse_args(argv)
    splits = {name: SPLITS[name] for name in args.splits.split(",")}
    if args.quick:
        splits, args.max_rows, args.n_boot = {"quick": (("credit",), (0, 1))}, 4_000, 100
    rng = np.random.default_rng(0)
    parts = [HEADER.format(n_boot=args.n_boot)]
    with threadpoolctl.threadpool_limits(1):
        for split, (tables, seeds) in splits.items():
            cases = []
            for data in tables:
                for model in ISSUE_MODELS:
                    fits = [one_fit(cached_case(data, model, seed, args)) for seed in seeds]
                    cases.append(
                        {"data": data, "model": model, "seeds": seeds}
                        | case_summary(fits, rng, args.n_boot)
                    )
                    c = cases[-1]
                    print(
                        f"{split}: {data} {model} default {pm(c['gap_default'], c['se_default'])} "
                        f"cv-choice {pct(c['gap_cv-choice'])} load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
            parts.append(split_report(split, cases))
    text = "\n\n".join(parts)
    print("\n" + text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
