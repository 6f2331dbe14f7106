"""Vector, matrix and structured (SVS, SMS) scaling: fit time against probmetrics, and
quality against the multiclass default.

``--timing``: fit time of each of our four scalings and of its probmetrics 1.3.0
counterpart (``get_calibrator("sms")``, ``get_calibrator("svs")``,
``MatrixScalingCalibrator()``, ``VectorScalingCalibrator()``; Berta, Holzmüller, Jordan and
Bach's code, fed ``predict_proba`` as CalArena feeds it) on the same rows, side by side in
one run, at 1e3 / 1e4 / 1e5 rows x 3 / 10 / 20 classes: generated logits of a
miscalibrated model (class-dependent scales and shifts), ``softmax`` for probmetrics and
``log p`` floored at float32's tiny (its own logits) for ours. One thread for numpy and
torch; the load average is printed per cell. Needs ``pip install torch==2.13.0 numba
probmetrics==1.3.0``.

``--quality``: the cases of ``benchmarks/multiclass_default.py`` (diabetes ``GenHlth``,
``Income``, ``Age``; digits; generated data; a frozen base model fitted on 50 %, the
calibrators on 25 %, scored on 25 %). Each new calibrator in
``CalibratedClassifier(frozen, calibrator)`` reads the scores the default reads, next to
the default (``TemperatureBernsteinCalibrator``), temperature scaling and the uncalibrated
model: test log loss and top-label calibration error (15 equal-width bins), each with
the paired bootstrap standard error (200 resamples of the test rows) of its difference to
the default's.

Run from the repository root::

    python benchmarks/multiclass_scaling.py --timing --out benchmarks/multiclass_scaling_timing.md
    python benchmarks/multiclass_scaling.py --quality --out benchmarks/multiclass_scaling.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from scipy.special import softmax  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from bernonnx import (  # noqa: E402
    CalibratedClassifier,
    MatrixScalingCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from bernonnx.metrics import top_label_calibration_error  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import git_revision, machine, md_table, now  # noqa: E402
from _realdata import DEFAULT_DATA_DIR  # noqa: E402
from multiclass_default import HELD_OUT, QUICK, TUNING, split_case  # noqa: E402

OURS = {
    "sms": StructuredMatrixScalingCalibrator,
    "svs": StructuredVectorScalingCalibrator,
    "matrix": MatrixScalingCalibrator,
    "vector": VectorScalingCalibrator,
}
N_RESAMPLES = 200


def _theirs(name: str):
    from probmetrics.calibrators import (
        MatrixScalingCalibrator as TheirMatrix,
    )
    from probmetrics.calibrators import (
        VectorScalingCalibrator as TheirVector,
    )
    from probmetrics.calibrators import get_calibrator

    return {
        "sms": lambda: get_calibrator("sms"),
        "svs": lambda: get_calibrator("svs"),
        "matrix": TheirMatrix,
        "vector": TheirVector,
    }[name]()


def generated(n: int, k: int, seed: int = 0):
    """Probabilities of a miscalibrated model and labels: class-dependent scales, shifts."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = (2.0 * np.eye(k)[y] + rng.normal(size=(n, k))) * np.linspace(0.5, 3.0, k)
    return softmax(z + 0.3 * np.arange(k), axis=1), y


def timing(sizes, classes) -> str:
    import torch

    torch.set_num_threads(1)
    warm_p, warm_y = generated(200, 3)
    for name in OURS:  # numba and torch warm-up, not timed
        _theirs(name).fit(warm_p, warm_y)
    rows = []
    for n in sizes:
        for k in classes:
            p, y = generated(n, k)
            z = np.clip(np.log(p), np.log(np.finfo(np.float32).tiny), None)
            for name, cls in OURS.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    cls().fit(z, y)
                    ours = time.perf_counter() - start
                    start = time.perf_counter()
                    _theirs(name).fit(p, y)
                    theirs = time.perf_counter() - start
                row = [f"{n:,}", k, name, f"{ours:.3f}", f"{theirs:.3f}", f"{ours / theirs:.2f}"]
                rows.append(row + [f"{os.getloadavg()[0]:.1f}"])
                print(" | ".join(map(str, rows[-1])), flush=True)
    headers = ["rows", "K", "method", "ours (s)", "probmetrics (s)", "ratio", "load (1 min)"]
    return md_table(headers, rows)


def _paired(y, base, other, labels, rng_seed=0) -> tuple[float, float, float, float]:
    """(log loss difference, its SE, top-label ECE difference, its SE): other - base."""
    n = len(y)

    def ll(p, w):
        return float(w @ -np.log(np.maximum(p[np.arange(n), y], 1e-300)) / w.sum())

    def ece(p, w):
        return top_label_calibration_error(y, p, n_bins=15, labels=labels, sample_weight=w)

    ones = np.ones(n)
    d_ll, d_ece = ll(other, ones) - ll(base, ones), ece(other, ones) - ece(base, ones)
    rng = np.random.default_rng(rng_seed)
    samples = []
    for _ in range(N_RESAMPLES):
        w = rng.multinomial(n, np.full(n, 1.0 / n)).astype(float)
        samples.append((ll(other, w) - ll(base, w), ece(other, w) - ece(base, w)))
    se = np.std(np.array(samples), axis=0, ddof=1)
    return d_ll, float(se[0]), d_ece, float(se[1])


def quality_case(target, model_name, seed, rows, data_dir) -> dict:
    frozen, X_cal, y_cal, X_test, y_test = split_case(target, model_name, seed, rows, data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = CalibratedClassifier(frozen).fit(X_cal, y_cal)
        kind = default.calibrated_classifiers_[0].calibrators[0].input
        proba = {"uncalibrated": frozen.predict_proba(X_test), "default": None}
        proba["default"] = default.predict_proba(X_test)
        times = {}
        methods = {
            "temperature": TemperatureCalibrator(input="proba" if kind != "logits" else kind)
        }
        methods.update({name: cls(input=kind) for name, cls in OURS.items()})
        for name, cal in methods.items():
            start = time.perf_counter()
            clf = CalibratedClassifier(frozen, cal).fit(X_cal, y_cal)
            times[name] = time.perf_counter() - start
            proba[name] = clf.predict_proba(X_test)
    labels = np.arange(proba["uncalibrated"].shape[1])
    out = {}
    for name, p in proba.items():
        n = len(y_test)
        ll = float(-np.mean(np.log(np.maximum(p[np.arange(n), y_test], 1e-300))))
        ece = top_label_calibration_error(y_test, p, n_bins=15, labels=labels)
        diff = _paired(y_test, proba["default"], p, labels) if name != "default" else None
        out[name] = (ll, ece, diff)
    return {
        "case": f"{target} {model_name} s{seed}",
        "K": len(labels),
        "metrics": out,
        "times": times,
    }


def quality(cases, rows, data_dir, n_jobs) -> str:
    results = Parallel(n_jobs=n_jobs)(
        delayed(quality_case)(*case, rows, data_dir) for case in cases
    )
    names = ["uncalibrated", "temperature", "vector", "matrix", "svs", "sms"]
    headers = ["case", "K", "default: log loss", "top-label ECE"]
    for name in names:
        headers += [f"{name}: log loss - default (SE)", "ECE - default (SE)"]
    table, tally = [], {name: [0, 0, 0, 0] for name in names}
    for r in results:
        m = r["metrics"]
        row = [r["case"], r["K"], f"{m['default'][0]:.5f}", f"{m['default'][1]:.4f}"]
        for name in names:
            d_ll, se_ll, d_ece, se_ece = m[name][2]
            row += [f"{d_ll:+.5f} ({se_ll:.5f})", f"{d_ece:+.4f} ({se_ece:.4f})"]
            tally[name][0] += d_ll < -2 * se_ll  # better than the default by 2 SE
            tally[name][1] += d_ll > 2 * se_ll  # worse by 2 SE
            tally[name][2] += d_ece < -2 * se_ece
            tally[name][3] += d_ece > 2 * se_ece
        table.append(row)
    summary = md_table(
        [
            "method",
            "log loss: better than default by > 2 SE",
            "worse by > 2 SE",
            "top-label ECE: better by > 2 SE",
            "worse by > 2 SE",
            "mean log loss - default",
            "mean fit time (s)",
        ],
        [
            [
                name,
                *tally[name],
                f"{np.mean([r['metrics'][name][2][0] for r in results]):+.5f}",
                f"{np.mean([r['times'].get(name, np.nan) for r in results]):.3f}"
                if name != "uncalibrated"
                else "",
            ]
            for name in names
        ],
    )
    return md_table(headers, table) + "\n\n" + summary + f"\n\n{len(results)} cases"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--quick", action="store_true", help="small grids")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--rows", type=int, default=40_000, help="diabetes subsample")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    lines = [
        "# Vector, matrix and structured scaling",
        "",
        f"{now()}, {git_revision()}, {machine()}; load average at start "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}.",
    ]
    if args.timing:
        sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
        classes = (3, 10) if args.quick else (3, 10, 20)
        lines += ["", "## Fit time against probmetrics 1.3.0", "", timing(sizes, classes)]
    if args.quality:
        cases = QUICK if args.quick else TUNING + HELD_OUT
        rows = 8_000 if args.quick else args.rows
        lines += [
            "",
            "## Quality against the multiclass default",
            "",
            f"Diabetes subsample {rows:,} rows; differences are the method's minus the "
            "default's (negative: better), paired bootstrap standard errors over the test "
            "rows in brackets.",
            "",
            quality(cases, rows, args.data, args.n_jobs),
        ]
    lines += ["", f"total {time.perf_counter() - start:.0f} s"]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
