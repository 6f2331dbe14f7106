"""Fit time of the binary maps of the CalArena leaders against their reference packages.

For n = 1e3, 1e4 and 1e5 scores (probabilities ``p ~ U(0, 1)`` with labels
``y ~ Bernoulli(p^0.7)``, seed 0; every score distinct), in one run, one thread:

- ``BetaCalibrator()`` against ``betacal.BetaCalibration("abm")`` (what ``probmetrics``'
  ``"beta"`` wraps);
- ``QuadraticScalingCalibrator()`` against ``probmetrics``' ``"quadratic-scaling"`` (an
  unpenalised ``LogisticRegression`` on ``[1, l, l^2]``), fed ``predict_proba`` columns as
  CalArena feeds it;
- ``PlattCalibrator(log_odds=True)`` against ``probmetrics``' ``"affine-scaling"``;
- ``VennAbersCalibrator()`` against ``venn_abers.VennAbers().fit`` (the ``p0``/``p1``
  tables both compute; ``probmetrics``' ``"ivap"`` defers that work to
  ``predict_proba``);
- ``StackedCalibrator()``, the five maps stacked, against ``BernsteinCalibrator()``, the
  default it is an alternative to (no package computes the stack).

Each time is the best of 3 fits after one warm-up fit. The ratio is ours over theirs
(below 1: ours is faster). The references are test-only/benchmark dependencies
(``pip install betacal venn-abers probmetrics``; probmetrics needs torch and numba).

Run from the repository root::

    OMP_NUM_THREADS=1 python benchmarks/binary_maps.py > benchmarks/binary_maps.md
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread for everyone

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import fmt_ratio, fmt_time, git_revision, load_average, md_table, time_calls  # noqa: E402

from bernonnx import (  # noqa: E402
    BernsteinCalibrator,
    BetaCalibrator,
    PlattCalibrator,
    QuadraticScalingCalibrator,
    StackedCalibrator,
    VennAbersCalibrator,
)


def _data(n: int):
    rng = np.random.default_rng(0)
    p = rng.random(n)
    return p, (rng.random(n) < p**0.7).astype(int)


def _pairs():
    from betacal import BetaCalibration
    from probmetrics.calibrators import get_calibrator
    from venn_abers import VennAbers

    two = lambda p: np.column_stack([1 - p, p])  # noqa: E731 - CalArena's input
    return [
        ("beta", BetaCalibrator, "betacal abm", lambda p, y: BetaCalibration("abm").fit(p, y)),
        (
            "quadratic-scaling",
            QuadraticScalingCalibrator,
            "probmetrics quadratic-scaling",
            lambda p, y: get_calibrator("quadratic-scaling").fit(two(p), y),
        ),
        (
            "affine-scaling",
            lambda: PlattCalibrator(log_odds=True),
            "probmetrics affine-scaling",
            lambda p, y: get_calibrator("affine-scaling").fit(two(p), y),
        ),
        (
            "venn-abers",
            VennAbersCalibrator,
            "venn-abers VennAbers",
            lambda p, y: VennAbers().fit(two(p), y),
        ),
        (
            "stack",
            StackedCalibrator,
            "bernonnx BernsteinCalibrator()",
            lambda p, y: BernsteinCalibrator().fit(p, y),
        ),
    ]


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore")  # the reference packages' own warnings, this script only
    rows = []
    for name, ours, ref_name, ref in _pairs():
        for n in (1_000, 10_000, 100_000):
            p, y = _data(n)
            t_ours = time_calls(lambda ours=ours, p=p, y=y: ours().fit(p, y), repeat=3)
            t_ref = time_calls(lambda ref=ref, p=p, y=y: ref(p, y), repeat=3)
            rows.append(
                [
                    name,
                    f"{n:,}",
                    fmt_time(t_ours),
                    ref_name,
                    fmt_time(t_ref),
                    fmt_ratio(t_ours / t_ref),
                ]
            )
    print("# Binary maps: fit time against the reference packages\n")
    print(
        f"Commit {git_revision()}; load average at the end {load_average()} (1/5/15 min), "
        f"os.cpu_count() = {os.cpu_count()}, OMP_NUM_THREADS="
        f"{os.environ['OMP_NUM_THREADS']}, OPENBLAS_NUM_THREADS="
        f"{os.environ['OPENBLAS_NUM_THREADS']}.\n"
    )
    print(md_table(["method", "n", "bernonnx", "reference", "reference time", "ratio"], rows))


if __name__ == "__main__":
    main()
