"""How ``MultivariateBernsteinCalibrator.fit`` scales with M, the degrees and n.

For M = 2, 3, 4 score columns, fixed equal degrees on every axis and n = 1e4, 1e5, 1e6
generated rows, both losses, it reports the fit time, the peak memory of the fit
(``tracemalloc``; numpy reports its buffers to it), the number of coefficients
``prod_m (K_m + 1)``, and ratios measured in the same run against

(a) the 1-D ``BernsteinCalibrator`` with the same degree and loss, fitted on the first
    column of the same n rows, and
(b) logistic-regression stacking: ``sklearn.linear_model.LogisticRegression`` on the same
    M columns.

It adds one ``degree="auto"`` row per M (and loss) at n = 1e5 and the slope of
log(fit time) against log(n) per configuration, over all n and between the two largest:
the n-dependent work is one chunked pass over the rows per moment evaluation, so the
slope approaches 1 once that pass outweighs the QP on ``prod_m (K_m + 1)`` unknowns,
whose cost does not depend on n.

Degrees: 3, 5 and 8 for M=2; 3 and 5 for M=3; 2 and 3 for M=4. M=4 at degree 5 (1,296
coefficients) is timed at n = 1e4 only: the dense QP dominates there (Clarabel's
factorisation grows as the cube of the coefficient count), not n.

Data: a latent ``z ~ N(0, 1)``, columns ``s_m = z + N(0, 0.8^2)``, labels ``y ~
Bernoulli(sigmoid(sum_m s_m / sqrt(M) - 1))``, seed 0. Timings: ``time.perf_counter``
after one warm-up fit of each estimator; the median of 3 fits for n <= 1e4 (one if it
takes over 2 s), one fit above; memory is measured in a separate fit with
``tracemalloc`` started after the data exist.

Run from the repository root::

    python benchmarks/fusion_scaling.py           # full run, about 10 minutes on 2 cores
    python benchmarks/fusion_scaling.py --quick   # smoke test (CI), under 30 s

The markdown report is printed and, for a full run, written to
``benchmarks/fusion_scaling.md`` (or ``--out``; a quick run writes only with ``--out``);
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import shlex
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sklearn
from _harness import md_table
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from bernonnx import BernsteinCalibrator, MultivariateBernsteinCalibrator

HERE = Path(__file__).resolve().parent
LOSSES = ("squared", "log")


@dataclass(frozen=True)
class Plan:
    """What one run measures: ``(M, degree) -> ns``, and the n of the auto rows."""

    configs: dict[tuple[int, int], tuple[int, ...]]
    auto_ms: tuple[int, ...]
    auto_n: int
    auto_losses: tuple[str, ...] = LOSSES
    #: Timed fits per measurement for n <= 1e4 (the median is reported).
    repeat: int = 3
    #: A full garbage collection before each timing and memory trace (off in the quick
    #: run, whose figures are reported, never checked: its 54 collections were a quarter
    #: of its time).
    collect: bool = True


FULL = Plan(
    configs={
        (2, 3): (10**4, 10**5, 10**6),
        (2, 5): (10**4, 10**5, 10**6),
        (2, 8): (10**4, 10**5, 10**6),
        (3, 3): (10**4, 10**5, 10**6),
        (3, 5): (10**4, 10**5, 10**6),
        (4, 2): (10**4, 10**5, 10**6),
        (4, 3): (10**4, 10**5, 10**6),
        (4, 5): (10**4,),
    },
    auto_ms=(2, 3, 4),
    auto_n=10**5,
)
QUICK = Plan(
    configs={(2, 3): (2_000, 20_000), (3, 2): (2_000, 20_000)},
    auto_ms=(2,),
    auto_n=2_000,
    auto_losses=("squared",),
    repeat=1,
    collect=False,
)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def make_data(n: int, m_axes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n)
    s = latent[:, None] + rng.normal(scale=0.8, size=(n, m_axes))
    eta = s.sum(axis=1) / np.sqrt(m_axes) - 1.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    return s, y


def timed(fn: Callable[[], object], repeat: int, collect: bool = True) -> float:
    """Median wall time of up to ``repeat`` calls of ``fn``; one call if it takes > 2 s.
    ``collect``: a full garbage collection before each call."""
    times = []
    for _ in range(repeat):
        if collect:
            gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if times[0] > 2.0:
            break
    return float(np.median(times))


def peak_bytes(fn: Callable[[], object], collect: bool = True) -> int:
    """Peak bytes traced by ``tracemalloc`` while ``fn`` runs, above the start
    (``collect``: after a full garbage collection)."""
    if collect:
        gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return max(peak - base, 0)


def stacking(s, y):
    with warnings.catch_warnings():
        # lbfgs on unscaled generated scores converges; keep any warning out of the table
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression().fit(s, y)


def measure(s, y, m_axes: int, degree, loss: str, repeat: int, collect: bool = True) -> dict:
    """Fit time and peak memory of ours and of both competitors on the same rows
    (``collect``: see :attr:`Plan.collect`)."""
    n = s.shape[0]
    repeat = repeat if n <= 10**4 else 1
    ours = MultivariateBernsteinCalibrator(degree=degree, loss=loss)
    one_d = BernsteinCalibrator(degree=degree, loss=loss)
    col = s[:, 0].copy()
    row = {"M": m_axes, "loss": loss, "n": n}
    row["ours_s"] = timed(lambda: ours.fit(s, y), repeat, collect)
    row["ours_mb"] = peak_bytes(lambda: ours.fit(s, y), collect) / 2**20
    row["degrees"] = ours.degrees_
    row["coef"] = int(ours.coef_.size)
    row["one_d_s"] = timed(lambda: one_d.fit(col, y), repeat, collect)
    row["one_d_mb"] = peak_bytes(lambda: one_d.fit(col, y), collect) / 2**20
    row["lr_s"] = timed(lambda: stacking(s, y), repeat, collect)
    row["lr_mb"] = peak_bytes(lambda: stacking(s, y), collect) / 2**20
    return row


def run(plan: Plan) -> tuple[list[dict], list[dict]]:
    fixed, auto = [], []
    # one warm-up of every code path (imports, cvxpy's first problem), off the clock
    warm_s, warm_y = make_data(2_000, 2, seed=1)
    for loss in LOSSES:
        MultivariateBernsteinCalibrator(degree=2, loss=loss).fit(warm_s, warm_y)
        BernsteinCalibrator(degree=2, loss=loss).fit(warm_s[:, 0], warm_y)
    stacking(warm_s, warm_y)
    for (m_axes, degree), ns in plan.configs.items():
        for loss in LOSSES:
            for n in ns:
                s, y = make_data(n, m_axes)
                progress(f"M={m_axes} degree={degree} loss={loss} n={n:.0e}")
                fixed.append(measure(s, y, m_axes, degree, loss, plan.repeat, plan.collect))
    for m_axes in plan.auto_ms:
        s, y = make_data(plan.auto_n, m_axes)
        for loss in plan.auto_losses:
            progress(f"M={m_axes} degree=auto loss={loss} n={plan.auto_n:.0e}")
            auto.append(measure(s, y, m_axes, "auto", loss, plan.repeat, plan.collect))
    return fixed, auto


# --------------------------------------------------------------------------- report


def slope(ns: Sequence[int], times: Sequence[float]) -> float:
    """Least-squares slope of log(time) against log(n)."""
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def fixed_table(rows: list[dict]) -> str:
    headers = [
        "M",
        "degrees",
        "loss",
        "n",
        "coefficients",
        "fit (s)",
        "peak MB",
        "vs 1-D Bernstein: time / memory",
        "vs LR stacking: time / memory",
    ]
    lines = [
        [
            r["M"],
            r["degrees"],
            r["loss"],
            f"{r['n']:.0e}",
            f"{r['coef']:,}",
            f"{r['ours_s']:.3f}",
            f"{r['ours_mb']:.1f}",
            f"{r['ours_s'] / r['one_d_s']:.1f}x / {r['ours_mb'] / r['one_d_mb']:.1f}x",
            f"{r['ours_s'] / r['lr_s']:.1f}x / {r['ours_mb'] / r['lr_mb']:.1f}x",
        ]
        for r in rows
    ]
    return md_table(headers, lines)


def slope_table(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["M"], r["degrees"], r["loss"]), []).append(r)
    headers = [
        "M",
        "degrees",
        "loss",
        "n range",
        "slope of log(time) vs log(n), all n",
        "slope between the two largest n",
        "time ratio, largest / smallest n",
    ]
    lines = []
    for (m_axes, degrees, loss), rs in groups.items():
        if len(rs) < 2:
            continue
        ns, ts = [r["n"] for r in rs], [r["ours_s"] for r in rs]
        lines.append(
            [
                m_axes,
                degrees,
                loss,
                f"{min(ns):.0e} .. {max(ns):.0e}",
                f"{slope(ns, ts):.2f}",
                f"{slope(ns[-2:], ts[-2:]):.2f}",
                f"{ts[-1] / ts[0]:.1f}x for {ns[-1] / ns[0]:.0f}x rows",
            ]
        )
    return md_table(headers, lines)


def auto_table(rows: list[dict]) -> str:
    headers = [
        "M",
        "loss",
        "n",
        "degrees chosen",
        "fit (s)",
        "peak MB",
        "vs 1-D Bernstein (auto): time / memory",
        "vs LR stacking: time",
    ]
    lines = [
        [
            r["M"],
            r["loss"],
            f"{r['n']:.0e}",
            r["degrees"],
            f"{r['ours_s']:.2f}",
            f"{r['ours_mb']:.1f}",
            f"{r['ours_s'] / r['one_d_s']:.1f}x / {r['ours_mb'] / r['one_d_mb']:.1f}x",
            f"{r['ours_s'] / r['lr_s']:.0f}x",
        ]
        for r in rows
    ]
    return md_table(headers, lines)


def header(argv: Sequence[str], quick: bool, loads: tuple[float, float]) -> list[str]:
    command = shlex.join(["python", "benchmarks/fusion_scaling.py", *argv])
    return [
        f"# MultivariateBernsteinCalibrator fit scaling ({'quick' if quick else 'full'} run)",
        "",
        f"- Command: `{command}`",
        f"- Date: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- Machine: {platform.platform()}, os.cpu_count() = {os.cpu_count()}; load average "
        f"(1 min) at start / end: {loads[0]:.2f} / {loads[1]:.2f} (shared machine: compare "
        "ratios, not absolute times)",
        f"- Python {platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}",
        "- Data: latent z ~ N(0, 1), s_m = z + N(0, 0.8²), y ~ Bernoulli(sigmoid(Σ s_m / √M − "
        "1)), seed 0. Times: median of 3 fits for n ≤ 1e4 (1 if over 2 s), one fit above, "
        "after a warm-up of each estimator; peak MB: a separate fit under `tracemalloc` "
        "(numpy buffers included), data allocated before. Ratios are ours / competitor, "
        "measured in the same run on the same rows: 1-D `BernsteinCalibrator` with the same "
        "degree and loss on column 0, and `LogisticRegression()` on the M columns.",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (< 30 s), for CI")
    parser.add_argument(
        "--out",
        type=Path,
        help="report path (default: benchmarks/fusion_scaling.md for a full run; a quick run "
        "writes nothing unless asked, so it cannot overwrite the full report)",
    )
    args = parser.parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    load_start = os.getloadavg()[0]
    fixed, auto = run(QUICK if args.quick else FULL)
    text = "\n".join(
        [
            *header(argv, args.quick, (load_start, os.getloadavg()[0])),
            "",
            "## Fixed degrees",
            "",
            fixed_table(fixed),
            "",
            "## Slope in n",
            "",
            slope_table(fixed),
            "",
            '## `degree="auto"` (5-fold CV over equal degrees)',
            "",
            auto_table(auto),
        ]
    )
    print(text)
    out = args.out if args.out is not None or args.quick else HERE / "fusion_scaling.md"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        progress(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
