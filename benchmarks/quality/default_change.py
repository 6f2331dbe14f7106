"""Does a change of the default fit change its quality? Paired, on the quality study's splits.
==============================================================================================

The quality study (``quality_study.py``) caches each case's base scores (``--cache``).
This script fits ``BernsteinCalibrator()`` (the default, on the non-saturating log-odds
the study's ``default`` reads) on every cached case's calibration rows with the
bernonnx that Python imports, and stores its test probabilities, degree and fit time
(``fit``); then compares two such files, paired (``compare``): per case (data set,
model; the log losses averaged over the seeds of a split) the new minus the old test
log loss, with its bootstrap standard error over test rows (each seed's test rows
resampled independently, the same resamples for both), on the study's three splits:
tuning (credit, magic, seeds 0-2), held out A (diabetes, shoppers, seeds 0-2) and held
out B (all four, seeds 3-5). A change is accepted when no case is worse by more than
two standard errors and no split's mean gets worse.

Run (the old version from a checkout of it, e.g. ``git worktree add /tmp/old main``)::

    PYTHONPATH=/tmp/old python benchmarks/quality/default_change.py fit \\
        --cache /tmp/qs/cache --out /tmp/old.npz
    python benchmarks/quality/default_change.py fit --cache /tmp/qs/cache --out /tmp/new.npz
    python benchmarks/quality/default_change.py compare /tmp/old.npz /tmp/new.npz
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SPLITS = {
    "tuning": (("credit", "magic"), (0, 1, 2)),
    "held out A": (("diabetes", "shoppers"), (0, 1, 2)),
    "held out B": (("credit", "diabetes", "magic", "shoppers"), (3, 4, 5)),
}
MODELS = ("LogisticRegression", "LinearSVC", "GaussianNB", "HistGradientBoosting", "RandomForest")
#: Differences below this are rounding, not a different fit.
ROUNDING = 1e-12


def _cached(cache: Path, data: str, model: str, seed: int, max_rows: int) -> Path:
    return cache / f"{data}_{model}_{seed}_{max_rows}.npz"


def fit(args) -> None:
    import bernonnx
    from bernonnx import BernsteinCalibrator

    out = {}
    for data, model, seed in _all_cases():
        with np.load(_cached(args.cache, data, model, seed, args.max_rows)) as case:
            start = time.perf_counter()
            cal = BernsteinCalibrator().fit(case["lp_cal"], case["y_cal"])
            seconds = time.perf_counter() - start
            key = f"{data}_{model}_{seed}"
            out[f"{key}|p"] = cal.predict_proba(case["lp_test"])[:, 1]
            out[f"{key}|degree"] = cal.degree_
            out[f"{key}|seconds"] = seconds
    np.savez(args.out, **out)
    print(f"{len(out) // 3} fits with {bernonnx.__file__} written to {args.out}")


def _all_cases():
    seen = set()
    for datasets, seeds in SPLITS.values():
        for data in datasets:
            for model in MODELS:
                for seed in seeds:
                    if (data, model, seed) not in seen:
                        seen.add((data, model, seed))
                        yield data, model, seed


def _log_loss(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


def compare(args) -> None:
    old, new = np.load(args.old), np.load(args.new)
    rng = np.random.default_rng(0)
    for split, (datasets, seeds) in SPLITS.items():
        print(f"\n## {split}\n")
        print("| case | old test log loss | new - old | bootstrap SE | z | same degree |")
        print("|---|---|---|---|---|---|")
        diffs, worst = [], 0.0
        for data in datasets:
            for model in MODELS:
                gap, boot, base, same = 0.0, np.zeros(args.n_boot), 0.0, 0
                for seed in seeds:
                    key = f"{data}_{model}_{seed}"
                    with np.load(_cached(args.cache, data, model, seed, args.max_rows)) as case:
                        y = case["y_test"]
                    lo, ln = _log_loss(y, old[f"{key}|p"]), _log_loss(y, new[f"{key}|p"])
                    d = ln - lo
                    gap += d.mean() / len(seeds)
                    base += lo.mean() / len(seeds)
                    draws = rng.integers(0, len(y), (args.n_boot, len(y)))
                    boot += d[draws].mean(axis=1) / len(seeds)
                    same += int(old[f"{key}|degree"] == new[f"{key}|degree"])
                se = float(boot.std(ddof=1))
                z = gap / se if abs(gap) >= ROUNDING and se > 0 else 0.0
                worst = max(worst, z)
                diffs.append(gap)
                print(
                    f"| {data} {model} | {base:.5f} | {gap:+.2e} | {se:.1e} | {z:+.2f} "
                    f"| {same}/{len(seeds)} |"
                )
        print(f"\nmean new - old {np.mean(diffs):+.2e}; largest z {worst:+.2f}")
    seconds = [sum(float(f[k]) for k in f.files if k.endswith("|seconds")) for f in (old, new)]
    print(f"\nfit time, all cases: old {seconds[0]:.2f} s, new {seconds[1]:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fit", "compare"):
        p = sub.add_parser(name)
        p.add_argument("--cache", type=Path, required=True, help="quality_study.py's --cache")
        p.add_argument("--max-rows", type=int, default=40_000)
    sub.choices["fit"].add_argument("--out", type=Path, required=True)
    sub.choices["compare"].add_argument("old", type=Path)
    sub.choices["compare"].add_argument("new", type=Path)
    sub.choices["compare"].add_argument("--n-boot", type=int, default=300)
    args = parser.parse_args()
    fit(args) if args.command == "fit" else compare(args)


if __name__ == "__main__":
    main()
