"""Benchmark suite of ``bernonnx.BernsteinCalibrator``.

Every figure is reported next to the named competitor measured in the same run, as a ratio,
against a target, with PASS/FAIL:

1. fit time at n = 1e6, degree 20, ``loss="squared"`` and ``"log"``, vs
   ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip").fit``;
2. the "blog formulation" (full n x (d + 1) Bernstein matrix handed to cvxpy) vs ours: fit
   time and peak memory, each measured in a fresh subprocess with a 120 s timeout;
3. peak memory added by our fit at n = 1e6 (``tracemalloc``; numpy reports its buffers to it);
4. ``predict_proba`` time on 1e6 scores vs ``IsotonicRegression.predict``;
5. scaling of the fit time with n (1e4 .. 1e7) and the slope of log(time) vs log(n);
6. cost of ``degree="auto"`` (5-fold CV over the candidate degrees) at n = 1e3, 1e4, 1e5
   vs ``LogisticRegression().fit`` on the same scores, timed in alternation;
7. transform robustness on heavy-tailed scores: held-out ECE and log loss per transform;
8. real data: sections 1, 4 and 6 again on every row of the four shared data sets (the
   scores of a base model, out of fold), at their own sizes (12,330 to 253,680 rows);
9. calibration-set sizes and serving: the default ``BernsteinCalibrator()`` at n = 1e3 ..
   1e5 on heavy-tailed scores vs ``LogisticRegression().fit``, ``PlattCalibrator`` vs
   scikit-learn's sigmoid fit, the default's fit vs ``IsotonicRegression.fit`` on held-out
   decision scores of the shared data, and the exported graph's batch throughput vs the
   base model's own graph (``exact_serving.py``), each with the load average beside it.

Data (sections 1 to 7): scores ``s ~ N(0, 1)``, labels ``y ~ Bernoulli(sigmoid(3 s - 1))``,
fixed seed. The heavy-tailed variant multiplies 1% of the scores (chosen at random, after
drawing the labels) by 30, like the few far-out margins of a linear SVM.

Timings: ``time.perf_counter``, one warm-up call, then the median of at least ``--repeat``
calls (>= 3, default 3; short calls are repeated until 1 s is spent, at most 25 times). BLAS
and OpenMP pools are limited to one thread (threadpoolctl) for every timing: our fits run
their small products on one BLAS thread anyway, isotonic regression is single-threaded, and
with the default two threads on this 2-core machine a ``LogisticRegression`` fit on real
scores of 12,330 to 30,000 rows took 35 to 45 ms instead of 6.5 to 9.2 ms, which flattered
our ratios. The pools and the load average are recorded in the header.

Run from the repository root::

    python benchmarks/run.py            # full run, 3-10 minutes on 2 cores
    python benchmarks/run.py --quick    # smoke test (CI), under a minute
    python benchmarks/run.py --out PATH # write the report elsewhere

The markdown report is printed on stdout and written to ``benchmarks/run.md`` (or
``--out``); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import cvxpy as cp
import numpy as np
import scipy
import sklearn
import threadpoolctl
from _harness import (
    Verdicts,
    fmt_ratio,
    fmt_time,
    git_revision,
    machine,
    md_table,
    now,
    time_calls,
)
from scipy.stats import binom
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

import bernonnx
from bernonnx import BernsteinCalibrator
from bernonnx.calibrators.bernstein import AUTO_DEGREES
from bernonnx.metrics import expected_calibration_error, log_loss

SEED = 0
DEGREE = 20
LOSSES = ("squared", "log")
TRANSFORMS = ("minmax", "logistic", "quantile")
BLOG_TIMEOUT = 120.0
MB = 1e6  # memory is reported in MB = 10^6 bytes
#: timeit_median and interleaved_medians repeat short calls until this much time is spent;
#: main sets it from the run's Config (the quick run: 0, its ``repeat`` calls only)
MIN_SECONDS = 1.0
HERE = Path(__file__).resolve().parent
#: Targets of issue 12: fit and predict_proba at n = 1e6 against isotonic regression,
#: degree="auto" against a Platt (LogisticRegression) fit.
VS_ISOTONIC = 0.5
AUTO_VS_LOGISTIC = 3.0


@dataclass(frozen=True)
class Config:
    """Sizes of one run; ``FULL`` is the reference, ``QUICK`` the CI smoke test."""

    name: str
    repeat: int
    min_seconds: float  # MIN_SECONDS of this run
    fit_n: int  # tables 1, 3, 4
    blog_runs: tuple[tuple[str, int], ...]  # table 2: (loss, n)
    scaling_ns: tuple[int, ...]  # table 5
    auto_ns: tuple[int, ...]  # table 6
    robust_n: int  # table 7 (half fit, half held out)
    real_sets: tuple[str, ...]  # table 8: shared data sets


FULL = Config(
    name="full",
    repeat=3,
    min_seconds=1.0,
    fit_n=10**6,
    blog_runs=(("squared", 10**5), ("squared", 10**6), ("log", 10**5)),
    scaling_ns=(10**4, 10**5, 10**6, 10**7),
    auto_ns=(10**3, 10**4, 10**5),
    robust_n=300_000,
    real_sets=("shoppers", "magic", "credit", "diabetes", "diabetes x4"),
)
#: the code path end to end at small sizes (the test suite runs it): its ratios are
#: not the targets' (n = 1e6), which the full run measures; its timings, reported and
#: never checked, are the median of ``repeat`` calls, without the full run's one-second
#: floor per timing (about 20 such floors made a third of its time)
QUICK = Config(
    name="quick",
    repeat=3,
    min_seconds=0.0,
    fit_n=2 * 10**5,
    blog_runs=(("squared", 10**4),),
    scaling_ns=(10**4, 10**5),
    auto_ns=(10**3, 10**4),
    robust_n=30_000,
    real_sets=("shoppers",),
)


# ---------------------------------------------------------------------------- data, measurement


@cache
def make_data(n: int, heavy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``s ~ N(0, 1)`` and labels ``y ~ Bernoulli(sigmoid(3 s - 1))`` (float 0/1).

    ``heavy=True`` then multiplies 1% of the scores by 30 (labels unchanged). Cached: every
    table at the same ``n`` sees the same arrays, which are never modified.
    """
    rng = np.random.default_rng([SEED, n])
    s = rng.standard_normal(n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(3.0 * s - 1.0)))).astype(np.float64)
    if heavy:
        s = np.where(rng.random(n) < 0.01, 30.0 * s, s)
    return s, y


def timeit_median(
    fn: Callable[[], object],
    repeat: int,
    warmup: bool = True,
    min_seconds: float | None = None,
    max_repeat: int = 25,
) -> float:
    """Median wall time in seconds of calls of ``fn``, after one warm-up call.

    At least ``repeat`` calls, more (up to ``max_repeat``) until ``min_seconds`` (default
    :data:`MIN_SECONDS`) have been spent, so short timings on a shared machine get more
    samples.
    """
    return time_calls(
        fn,
        repeat,
        warmup=int(warmup),
        stat="median",
        min_seconds=MIN_SECONDS if min_seconds is None else min_seconds,
        max_repeat=max_repeat,
    )


def traced_peak(fn: Callable[[], object]) -> float:
    """Peak bytes allocated (as seen by ``tracemalloc``) while ``fn`` runs, above the start."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return float(peak - base)


DEFAULT_TRANSFORM = BernsteinCalibrator().get_params()["score_transform"]


def ours(loss: str, degree: int | str = DEGREE, transform: str | None = None):
    """Our calibrator; ``transform=None`` keeps the library default."""
    kwargs = {} if transform is None else {"score_transform": transform}
    return BernsteinCalibrator(degree=degree, loss=loss, **kwargs)


def isotonic() -> IsotonicRegression:
    return IsotonicRegression(out_of_bounds="clip")


@cache
def fit_time(loss: str, n: int, repeat: int, degree: int | str = DEGREE) -> tuple[float, int]:
    """Median fit time of ours on ``make_data(n)`` and the fitted degree (cached)."""
    s, y = make_data(n)
    progress(f"fit loss={loss} n={n:.0e} degree={degree}")
    fitted = []
    seconds = timeit_median(lambda: fitted.append(ours(loss, degree).fit(s, y)), repeat)
    return seconds, fitted[-1].degree_


@cache
def isotonic_fit_time(n: int, repeat: int) -> float:
    s, y = make_data(n)
    progress(f"isotonic fit n={n:.0e}")
    return timeit_median(lambda: isotonic().fit(s, y), repeat)


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- blog formulation


def blog_basis(scores: np.ndarray, degree: int) -> np.ndarray:
    lo, hi = scores.min(), scores.max()
    u = np.clip((scores - lo) / (hi - lo), 0, 1)
    return binom.pmf(np.arange(degree + 1), degree, u[:, None])


def blog_fit_squared(scores: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    V = blog_basis(scores, degree)
    c = cp.Variable(degree + 1, bounds=[0, 1])
    cp.Problem(cp.Minimize(cp.norm(V @ c - y)), [cp.diff(c) >= 0]).solve()
    return c.value


def blog_fit_log(scores: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    # elementwise y * z: the blog's ``y * (V @ u)`` is a matrix product, a bug
    V = blog_basis(scores, degree)
    c = cp.Variable(degree + 1, bounds=[-15, 15])
    z = V @ c
    cp.Problem(cp.Minimize(cp.sum(cp.logistic(z) - cp.multiply(y, z))), [cp.diff(c) >= 0]).solve()
    return c.value


def _proc_status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def child_main(method: str, loss: str, n: int, repeat: int) -> None:
    """Body of one subprocess measurement; prints one JSON line on stdout.

    After the data exist and a warm-up fit on 1000 rows, the resident-set high-water mark
    (``VmHWM``) is reset by writing 5 to ``/proc/self/clear_refs`` and the resident set
    (``VmRSS``) recorded; ``VmHWM`` after the timed fits minus that baseline is the peak memory
    the fit added. ``ru_maxrss`` is not used: on Linux a spawned child inherits its parent's
    high-water mark through exec, so it would report the benchmark process's own peak.
    """
    if method == "blog":
        fit = blog_fit_squared if loss == "squared" else blog_fit_log
    else:

        def fit(s, y, degree):
            return ours(loss, degree, transform="minmax").fit(s, y).coef_

    s, y = make_data(n)
    fit(s[:1000], y[:1000], DEGREE)
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    base_kb = _proc_status_kb("VmRSS")
    coef = []

    def run() -> None:
        coef[:] = fit(s, y, DEGREE).tolist()

    seconds = timeit_median(run, repeat, warmup=False, min_seconds=0.0 if repeat == 1 else None)
    added = (_proc_status_kb("VmHWM") - base_kb) * 1024
    print(json.dumps({"seconds": seconds, "added": added, "hwm_reset": reset, "coef": coef}))


def run_child(method: str, loss: str, n: int, repeat: int) -> dict | None:
    """Run :func:`child_main` in a fresh interpreter; ``None`` if it exceeds the timeout."""
    progress(f"subprocess {method} loss={loss} n={n:.0e}")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", method, loss, str(n)]
    cmd += ["--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BLOG_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- formatting


def fmt_mb(nbytes: float) -> str:
    return f"{nbytes / MB:.1f} MB"


class Report(Verdicts):
    """Collects markdown sections and the PASS/FAIL of every target."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []

    def add(self, title: str, text: str, table: str) -> None:
        self.sections.append(f"## {title}\n\n{text}\n\n{table}\n")


# ---------------------------------------------------------------------------- tables


def table_fit_vs_isotonic(cfg: Config, rep: Report) -> None:
    n = cfg.fit_n
    s, y = make_data(n)
    progress(f"fit vs isotonic n={n:.0e}")
    iso, times = fit_vs_isotonic(s, y, cfg.repeat)
    rows = []
    for loss, t in zip(LOSSES, times, strict=True):
        result = rep.check(f"1. fit time vs isotonic, loss={loss}", t <= VS_ISOTONIC * iso)
        target = f"≤ {VS_ISOTONIC:g}×"
        rows.append([loss, fmt_time(t), fmt_time(iso), fmt_ratio(t / iso), target, result])
    rep.add(
        "1. Fit time vs IsotonicRegression",
        f"n = {n:.0e}, degree {DEGREE}, default transform ({DEFAULT_TRANSFORM}); competitor "
        '`IsotonicRegression(out_of_bounds="clip").fit` on the same scores, timed in '
        "alternation (section 5 times the same fits apart). Ratio = ours / isotonic.",
        md_table(["loss", "ours", "isotonic", "ratio", "target", "result"], rows),
    )


def blog_curve(coef: list[float], loss: str) -> np.ndarray:
    """Fitted probability on a grid of 1001 points of the min-max-scaled score."""
    u = np.linspace(0.0, 1.0, 1001)
    eta = binom.pmf(np.arange(len(coef)), len(coef) - 1, u[:, None]) @ np.asarray(coef)
    return 1.0 / (1.0 + np.exp(-eta)) if loss == "log" else np.clip(eta, 0.0, 1.0)


def table_blog(cfg: Config, rep: Report) -> None:
    rows = []
    reset = True
    for loss, n in cfg.blog_runs:
        mine = run_child("ours", loss, n, cfg.repeat)
        blog = run_child("blog", loss, n, 1)
        if mine is None:
            raise RuntimeError(f"our fit did not finish in {BLOG_TIMEOUT:.0f} s at n={n}")
        reset &= mine["hwm_reset"]
        if blog is None:
            speed = BLOG_TIMEOUT / mine["seconds"]  # lower bound
            cells = [f"did not finish in {BLOG_TIMEOUT:.0f} s", f"> {fmt_ratio(speed)}"]
            cells += [fmt_mb(mine["added"]), "—", "—", "—"]
        else:
            reset &= blog["hwm_reset"]
            speed = blog["seconds"] / mine["seconds"]
            gap = np.abs(blog_curve(blog["coef"], loss) - blog_curve(mine["coef"], loss)).max()
            cells = [fmt_time(blog["seconds"]), fmt_ratio(speed), fmt_mb(mine["added"])]
            cells += [fmt_mb(blog["added"]), fmt_ratio(blog["added"] / mine["added"])]
            cells += [f"{gap:.1e}"]
        target, result = "—", "—"
        if loss == "squared" and n == 10**6:
            target = "≥ 100× faster"
            result = rep.check("2. ours >= 100x faster than blog (squared, n=1e6)", speed >= 100)
        rows.append([loss, f"{n:.0e}", fmt_time(mine["seconds"]), *cells, target, result])
    note = "" if reset else " (WARNING: the high-water mark could not be reset.)"
    rep.add(
        "2. Blog formulation (dense basis + cvxpy) vs ours",
        f'Degree {DEGREE}; ours with `transform="minmax"`, the blog\'s scaling, so both solve '
        "the same problem (max |Δp|: largest gap between the two fitted curves on a 1001-point "
        "grid). Each cell is measured in a fresh subprocess (timeout "
        f"{BLOG_TIMEOUT:.0f} s including interpreter start-up) after a warm-up fit on 1000 "
        "rows. Time: the blog fit once (too slow to repeat within the timeout), ours as "
        "elsewhere. Memory: peak resident set added by the fit = the child's `VmHWM` "
        "(/proc/self/status) after the fit minus its `VmRSS` just before, the high-water mark "
        "being reset with `/proc/self/clear_refs` first; RSS includes cvxpy's and the solver's "
        "native allocations, which tracemalloc would miss. (`ru_maxrss` is unusable here: a "
        "spawned child inherits the parent's high-water mark through exec.)"
        f"{note} Speed-up = blog / ours time; memory ratio = blog / ours.",
        md_table(
            [
                "loss",
                "n",
                "ours time",
                "blog time",
                "speed-up",
                "ours peak RSS added",
                "blog peak RSS added",
                "memory ratio",
                "max \\|Δp\\|",
                "target",
                "result",
            ],
            rows,
        ),
    )


def table_memory(cfg: Config, rep: Report) -> None:
    n = cfg.fit_n
    s, y = make_data(n)
    progress(f"tracemalloc n={n:.0e}")
    iso = traced_peak(lambda: isotonic().fit(s, y))
    rows = []
    for loss in LOSSES:
        peak = traced_peak(lambda loss=loss: ours(loss).fit(s, y))
        ok = peak <= 200 * MB
        rows.append(
            [
                loss,
                fmt_mb(peak),
                fmt_mb(iso),
                fmt_ratio(peak / iso),
                "≤ 200 MB",
                rep.check(f"3. peak memory added by fit, loss={loss}", ok),
            ]
        )
    rep.add(
        "3. Peak memory added by the fit",
        f"n = {n:.0e}, degree {DEGREE}. `tracemalloc` started after the data exist; peak traced "
        "bytes during `fit` above the level at start (numpy registers its array buffers with "
        f"tracemalloc). The data themselves take {fmt_mb(s.nbytes + y.nbytes)}. Competitor "
        "(reference only): the isotonic fit measured the same way. Ratio = ours / isotonic.",
        md_table(["loss", "ours", "isotonic", "ratio", "target", "result"], rows),
    )


def table_predict(cfg: Config, rep: Report) -> None:
    n = cfg.fit_n
    s, y = make_data(n)
    progress(f"predict n={n:.0e}")
    iso, ours_times = predict_vs_isotonic(s, y, cfg.repeat)
    rows = []
    for loss, t in zip(LOSSES, ours_times, strict=True):
        ok = t <= VS_ISOTONIC * iso
        rows.append(
            [
                loss,
                fmt_time(t),
                fmt_time(iso),
                fmt_ratio(t / iso),
                f"≤ {VS_ISOTONIC:g}×",
                rep.check(f"4. predict_proba vs isotonic predict, loss={loss}", ok),
            ]
        )
    rep.add(
        "4. Prediction time",
        f"`predict_proba` of {n:.0e} scores (degree {DEGREE}, returns the (n, 2) array) vs "
        "`IsotonicRegression.predict` (returns (n,)), both fitted on the same data, timed "
        "in alternation. Ratio = ours / isotonic.",
        md_table(["loss", "ours", "isotonic", "ratio", "target", "result"], rows),
    )


def table_scaling(cfg: Config, rep: Report) -> None:
    ns = cfg.scaling_ns
    rows = []
    times = {loss: [fit_time(loss, n, cfg.repeat)[0] for n in ns] for loss in LOSSES}
    iso = [isotonic_fit_time(n, cfg.repeat) for n in ns]
    for i, n in enumerate(ns):
        row = [f"{n:.0e}"]
        for loss in LOSSES:
            row += [fmt_time(times[loss][i]), fmt_time(times[loss][i] / (n / 1e6))]
        row += [fmt_time(iso[i]), fmt_time(iso[i] / (n / 1e6))]
        rows.append(row)
    large = [i for i, n in enumerate(ns) if n >= 10**5]
    slope_rows = []
    for name, ts in [*times.items(), ("isotonic", iso)]:
        slope = np.polyfit(np.log([ns[i] for i in large]), np.log([ts[i] for i in large]), 1)[0]
        if name == "isotonic":
            slope_rows.append([name, f"{slope:.2f}", "— (reference)", "—"])
        else:
            res = rep.check(f"5. at most linear scaling, loss={name}", slope <= 1.2)
            slope_rows.append([f"ours, loss={name}", f"{slope:.2f}", "≤ 1.2", res])
    sizes = ", ".join(f"{ns[i]:.0e}" for i in large)
    rep.add(
        "5. Scaling with n",
        f"Degree {DEGREE}, default transform ({DEFAULT_TRANSFORM}); median fit time and time "
        "per million rows. "
        f"Slope of log(time) vs log(n) by least squares over n = {sizes}. "
        "Target: at most linear growth (slope ≤ 1.2); a slope below 1 means fixed per-fit "
        "costs (transform quantiles, the binned log-loss solve, the QP) are still visible "
        "at these sizes, i.e. the time per row is still falling.",
        md_table(
            [
                "n",
                "squared",
                "squared / 1M rows",
                "log",
                "log / 1M rows",
                "isotonic",
                "isotonic / 1M rows",
            ],
            rows,
        )
        + "\n\n"
        + md_table(["fit", "slope", "target", "result"], slope_rows),
    )


def interleaved_medians(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Median wall time of each of ``fns``, called in turn (one warm-up round first).

    Rounds alternate the calls, so a change of machine load hits every function alike;
    at least ``repeat`` rounds, more (up to 25) until ``MIN_SECONDS`` have been spent.
    """
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    while len(times[0]) < repeat or (sum(map(sum, times)) < MIN_SECONDS and len(times[0]) < 25):
        for fn, out in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def fit_vs_isotonic(s: np.ndarray, y: np.ndarray, repeat: int) -> tuple[float, list[float]]:
    """Median times of ``IsotonicRegression.fit`` and of our degree-20 fit per loss.

    In alternation: runs timed apart gave isotonic 246 to 411 ms at n = 1e6 on this
    shared machine, and the ratio moved with it.
    """
    iso, *times = interleaved_medians(
        [lambda: isotonic().fit(s, y)]
        + [lambda loss=loss: ours(loss).fit(s, y) for loss in LOSSES],
        repeat,
    )
    return iso, times


def predict_vs_isotonic(s: np.ndarray, y: np.ndarray, repeat: int) -> tuple[float, list[float]]:
    """Median times of ``IsotonicRegression.predict`` and of our ``predict_proba`` per loss
    on every score, both fitted on ``s, y``.

    In alternation: isotonic's predict reads memory, ours computes exps, and a busy
    sibling core slows the two unequally (ratios 0.45-0.68 in runs timed apart).
    """
    iso_model = isotonic().fit(s, y)
    models = [ours(loss).fit(s, y) for loss in LOSSES]
    iso, *times = interleaved_medians(
        [lambda: iso_model.predict(s)] + [lambda m=m: m.predict_proba(s) for m in models],
        repeat,
    )
    return iso, times


def auto_vs_logistic(n: int, repeat: int) -> tuple[float, list[float], list]:
    """Median times of ``LogisticRegression().fit`` and of our ``degree="auto"`` fit per
    loss on ``make_data(n)``, in alternation; and our last fitted models."""
    s, y = make_data(n)
    column = s[:, None]
    progress(f'degree="auto" and LogisticRegression n={n:.0e}')
    fitted: dict[str, BernsteinCalibrator] = {}

    def fit(loss: str) -> None:
        fitted[loss] = ours(loss, "auto").fit(s, y)

    fns = [lambda: LogisticRegression().fit(column, y)]
    fns += [lambda loss=loss: fit(loss) for loss in LOSSES]
    t_logistic, *t_auto = interleaved_medians(fns, repeat)
    return t_logistic, t_auto, [fitted[loss] for loss in LOSSES]


def table_auto(cfg: Config, rep: Report) -> None:
    rows = []
    for n in cfg.auto_ns:
        t_logistic, t_auto, fitted = auto_vs_logistic(n, cfg.repeat)
        for loss, t, model in zip(LOSSES, t_auto, fitted, strict=True):
            ratio = t / t_logistic
            rows.append(
                [
                    f"{n:.0e}",
                    loss,
                    fmt_time(t),
                    model.degree_,
                    fmt_time(t_logistic),
                    fmt_ratio(ratio),
                    f"≤ {AUTO_VS_LOGISTIC:g}×",
                    rep.check(
                        f'6. degree="auto" vs LogisticRegression, n={n:.0e}, loss={loss}',
                        ratio <= AUTO_VS_LOGISTIC,
                    ),
                ]
            )
    rep.add(
        '6. Cost of degree="auto"',
        f"Default 5-fold CV over the {len(AUTO_DEGREES)} candidate degrees {AUTO_DEGREES} "
        "(every other one scored, smallest first, until two in a row bring no new least "
        "loss, the largest always; then the neighbours of the best until it has both; each "
        "scored candidate fitted once on the folds' bins, each fold's fit two Newton steps "
        "from there, the first on the fit's active face: `select_degree_by_steps`), then the "
        "final fit; competitor: "
        "`LogisticRegression().fit` (Platt scaling) on the same scores, timed in alternation "
        "with ours. Ratio = auto / logistic regression.",
        md_table(
            ["n", "loss", "auto time", "chosen degree", "logistic", "ratio", "target", "result"],
            rows,
        ),
    )


def table_robustness(cfg: Config, rep: Report) -> None:
    n = cfg.robust_n
    half = n // 2
    progress(f"transform robustness n={n:.0e}")
    data = [make_data(n, heavy=True), make_data(n)]

    def evaluate(model, predict) -> tuple[list[str], list]:
        """Held-out ECE and log loss on each data set; also the fitted models."""
        cells, fitted = [], []
        for s, y in data:
            fitted.append(model.fit(s[:half], y[:half]))
            p = predict(fitted[-1], s[half:])
            ece = expected_calibration_error(y[half:], p, n_bins=10)
            cells += [f"{ece:.4f}", f"{log_loss(y[half:], p, eps=1e-15):.4f}"]
            model = sklearn.clone(model)
        return cells, fitted

    rows = []
    for loss in LOSSES:
        for degree in (DEGREE, "auto"):
            for transform in TRANSFORMS:
                cells, fitted = evaluate(
                    ours(loss, degree, transform), lambda m, s: m.predict_proba(s)[:, 1]
                )
                chosen = " / ".join(str(m.degree_) for m in fitted)
                rows.append([loss, degree, transform, chosen, *cells])
    cells, _ = evaluate(isotonic(), lambda m, s: m.predict(s))
    rows.append(["isotonic (reference)", "—", "—", "—", *cells])
    rep.add(
        "7. Transform robustness (heavy-tailed scores)",
        f"n = {n:.0e}: fit on the first half, ECE and log loss on the held-out second half. "
        "Heavy-tailed: 1% of the scores multiplied by 30 after drawing the labels (far-out "
        "margins, as from a linear SVM); clean: the same generator without outliers, for "
        "contrast. ECE: `bernonnx.metrics.expected_calibration_error`, 10 equal-width bins "
        "of the predicted probability, sum over non-empty bins of (share of rows) × |mean "
        "predicted − positive rate|. Log loss: `bernonnx.metrics.log_loss` with p clipped to "
        "[1e-15, 1 − 1e-15] (isotonic can predict exact 0 or 1). "
        "Chosen degree: heavy / clean. No target: lower is better.",
        md_table(
            [
                "loss",
                "degree",
                "transform",
                "chosen degree",
                "ECE heavy",
                "log loss heavy",
                "ECE clean",
                "log loss clean",
            ],
            rows,
        ),
    )


#: base model whose out-of-fold scores section 8 calibrates
REAL_MODEL = "HistGradientBoosting"


@cache
def real_scores(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Out-of-fold ``decision_function`` of :data:`REAL_MODEL` on every row of a shared data
    set (2 stratified folds), and the labels as 0/1 floats; ``None`` without the data.

    The data sets, their categorical columns and the pipeline (standard scaling, one-hot)
    are ``_realdata.py``'s; every row is kept (diabetes: all 253,680). ``"diabetes
    x4"``: diabetes' scores and labels repeated 4 times (1,014,720 rows), the size of the
    targets of sections 1 and 4 on real scores.
    """
    import _realdata as rd  # beside this script
    import pandas as pd
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.preprocessing import LabelEncoder

    base, _, times = name.partition(" x")
    if times:
        data = real_scores(base)
        return None if data is None else tuple(np.tile(a, int(times)) for a in data)
    spec = rd.DATASETS[name]
    path = rd.DEFAULT_DATA_DIR / spec.file
    if not path.is_file():
        return None
    df = pd.read_csv(path)
    y = LabelEncoder().fit_transform(df[spec.label])
    X = df.drop(columns=[spec.label, *spec.drop])
    categorical = list(spec.categorical)
    numeric = [c for c in X.columns if c not in categorical]
    model = rd.make_pipeline("standard", REAL_MODEL, numeric, categorical)
    folds = StratifiedKFold(2, shuffle=True, random_state=SEED)
    s = cross_val_predict(model, X, y, cv=folds, method="decision_function")
    return np.ascontiguousarray(s, dtype=np.float64), y.astype(np.float64)


def real_timings(s: np.ndarray, y: np.ndarray, repeat: int) -> dict:
    """Section 8's medians on one data set's scores, each against its competitor."""
    column = s[:, None]
    iso_fit, fits = fit_vs_isotonic(s, y, repeat)
    iso_predict, predicts = predict_vs_isotonic(s, y, repeat)
    # degree="auto" vs a LogisticRegression fit, as section 6; and one fit at the
    # chosen degree (no search): what the final fit alone costs
    chosen = [ours(loss, "auto").fit(s, y).degree_ for loss in LOSSES]
    lr, *autos = interleaved_medians(
        [lambda: LogisticRegression().fit(column, y)]
        + [lambda loss=loss: ours(loss, "auto").fit(s, y) for loss in LOSSES]
        + [
            lambda loss=loss, d=d: ours(loss, d).fit(s, y)
            for loss, d in zip(LOSSES, chosen, strict=True)
        ],
        repeat,
    )
    return {
        "iso_fit": iso_fit,
        "fits": fits,
        "iso_predict": iso_predict,
        "predicts": predicts,
        "lr": lr,
        "auto": autos[: len(LOSSES)],
        "fixed": autos[len(LOSSES) :],
        "chosen": chosen,
    }


def table_real(cfg: Config, rep: Report) -> None:
    rows, missing = [], []
    for name in cfg.real_sets:
        progress(f"real data: {name} (base model scores, then timings)")
        data = real_scores(name)
        if data is None:
            missing.append(name)
            continue
        n = data[0].shape[0]
        r = real_timings(*data, cfg.repeat)
        iso_fit, fits, iso_predict, predicts = (
            r[k] for k in ("iso_fit", "fits", "iso_predict", "predicts")
        )
        lr, auto, fixed, chosen = (r[k] for k in ("lr", "auto", "fixed", "chosen"))
        verdicts = []
        for what, times, ref, bound in (
            ("fit vs isotonic fit", fits, iso_fit, VS_ISOTONIC),
            ("predict_proba vs isotonic predict", predicts, iso_predict, VS_ISOTONIC),
            ('degree="auto" vs LogisticRegression fit', auto, lr, AUTO_VS_LOGISTIC),
        ):
            verdicts.append(
                " / ".join(
                    rep.check(f"8. {name}, {what}, loss={loss}", t <= bound * ref)
                    for loss, t in zip(LOSSES, times, strict=True)
                )
            )

        def ratios(times, ref):
            return " / ".join(fmt_ratio(t / ref) for t in times)

        rows.append(
            [
                name,
                f"{n:,}",
                f"{ratios(fits, iso_fit)} (isotonic {fmt_time(iso_fit)})",
                f"{ratios(predicts, iso_predict)} (isotonic {fmt_time(iso_predict)})",
                f"{ratios(auto, lr)} (LR {fmt_time(lr)}; degrees "
                + " / ".join(map(str, chosen))
                + ")",
                ratios(fixed, lr),
                " · ".join(verdicts),
            ]
        )
    text = (
        f"Scores: the out-of-fold `decision_function` of `{REAL_MODEL}` (2 stratified folds; "
        "`benchmarks/_realdata.py`'s pipeline: standard scaling, one-hot categorical columns) on "
        "every row of each shared data set, at its own size; labels 0/1. Each cell: squared "
        "/ log loss, ours over the competitor timed in alternation with it (medians). Fit: "
        f"degree {DEGREE} against `IsotonicRegression.fit`; predict_proba on every row "
        'against `IsotonicRegression.predict`; degree="auto" against '
        "`LogisticRegression().fit` on the same scores, and, beside it, one fit at the "
        "degree auto chose (no search) against the same LR fit. Targets: the design bounds "
        f"(≤ {VS_ISOTONIC:g}× isotonic, ≤ {AUTO_VS_LOGISTIC:g}× LR), applied here at the "
        "data sets' sizes."
    )
    if missing:
        text += f" Not measured (shared data absent): {', '.join(missing)}."
    rep.add(
        "8. Real data: every row of the shared data sets",
        text,
        md_table(
            [
                "data",
                "rows",
                "fit, degree 20",
                "predict_proba",
                'degree="auto"',
                "one fit at that degree / LR",
                "result (fit · predict · auto)",
            ],
            rows,
        ),
    )


# ---------------------------------------------------------------------------- small sizes, serving

#: Bounds at calibration-set sizes: the default's fit against isotonic's on
#: real held-out scores, Platt against scikit-learn's sigmoid fit, and the exported
#: graph's batch throughput against the base model's own graph.
DEFAULT_VS_ISOTONIC = 3.0
PLATT_VS_SIGMOID = 1.2
THROUGHPUT_VS_BASE = 0.5
#: The multiclass default against scikit-learn's temperature scaling on the same frozen
#: model (20 classes, 10,000 calibration rows).
MULTICLASS_VS_TEMPERATURE = 3.0
MULTICLASS_CLASSES = 20
MULTICLASS_ROWS = 10_000


def multiclass_fits(n_classes: int = MULTICLASS_CLASSES, rows: int = MULTICLASS_ROWS):
    """The fits of the multiclass row: ours (the default) and scikit-learn's temperature.

    A ``LogisticRegression`` on ``make_classification`` (20 classes, 20 features, 10
    informative; seed 0) fitted on 10,000 rows and frozen; both calibrators fitted on
    10,000 other rows of the same draw (the quick run: 5 classes, 3,000 rows).
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator

    from bernonnx import CalibratedClassifier

    X, y = make_classification(
        n_samples=2 * rows,
        n_features=20,
        n_informative=10,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=SEED,
    )
    frozen = FrozenEstimator(LogisticRegression(max_iter=1000).fit(X[::2], y[::2]))
    Xc, yc = X[1::2], y[1::2]
    return (
        lambda: CalibratedClassifier(frozen).fit(Xc, yc),
        lambda: CalibratedClassifierCV(frozen, method="temperature").fit(Xc, yc),
    )


#: (data set, base model) of the held-out decision scores; ``_realdata.py``'s
#: calibration split (the rows neither the model nor the test set saw)
HELD_OUT = tuple(
    (data, model)
    for data in ("shoppers", "magic", "credit")
    for model in ("LogisticRegression", "HistGradientBoosting")
)


def held_out_scores(data: str, model: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``decision_function`` of ``model`` on ``data``'s calibration rows, labels 0/1."""
    import _realdata as rd  # beside this script
    from sklearn.ensemble import HistGradientBoostingClassifier

    estimator = (
        LogisticRegression(max_iter=1000)
        if model == "LogisticRegression"
        else HistGradientBoostingClassifier(random_state=SEED)
    )
    try:
        s, y = rd.calibration_scores(data, estimator, "decision_function")
    except rd.DataMissing:
        return None
    return np.asarray(s, dtype=np.float64), (y == np.unique(y)[1]).astype(np.float64)


def table_small_sizes(cfg: Config, rep: Report) -> None:
    from sklearn.calibration import _SigmoidCalibration

    from bernonnx import PlattCalibrator

    rows = []

    def row(figure: str, n: str, t: float, ref: float, bound: float) -> None:
        rows.append(
            [
                figure,
                n,
                f"{fmt_time(t)} / {fmt_time(ref)}",
                fmt_ratio(t / ref),
                f"≤ {bound:g}×",
                rep.check(f"9. {figure}, {n} rows", t <= bound * ref),
                f"{os.getloadavg()[0]:.1f}",
            ]
        )

    for n in cfg.auto_ns:
        progress(f"section 9: degree='auto' and Platt, heavy-tailed scores, n={n:.0e}")
        s, y = make_data(n, heavy=True)
        column = s[:, None]
        lr, auto, platt, sigmoid = interleaved_medians(
            [
                lambda c=column, y=y: LogisticRegression().fit(c, y),
                lambda s=s, y=y: BernsteinCalibrator().fit(s, y),
                lambda s=s, y=y: PlattCalibrator().fit(s, y),
                lambda s=s, y=y: _SigmoidCalibration().fit(s, y),
            ],
            cfg.repeat,
        )
        row(
            'default (degree="auto") fit vs LogisticRegression',
            f"{n:,}",
            auto,
            lr,
            AUTO_VS_LOGISTIC,
        )
        row(
            "PlattCalibrator fit vs scikit-learn's sigmoid",
            f"{n:,}",
            platt,
            sigmoid,
            PLATT_VS_SIGMOID,
        )
    k, n = (MULTICLASS_CLASSES, MULTICLASS_ROWS) if cfg.name == "full" else (5, 3_000)
    progress(f"section 9: multiclass default, {k} classes")
    ours_mc, temperature = interleaved_medians(list(multiclass_fits(k, n)), cfg.repeat)
    row(
        f"multiclass default ({k} classes) fit vs scikit-learn's "
        'CalibratedClassifierCV(method="temperature")',
        f"{n:,}",
        ours_mc,
        temperature,
        MULTICLASS_VS_TEMPERATURE,
    )
    for data, model in HELD_OUT if cfg.name == "full" else HELD_OUT[:1]:
        progress(f"section 9: held-out scores of {model} on {data}")
        scores = held_out_scores(data, model)
        if scores is None:
            continue
        s, y = scores
        iso, auto = interleaved_medians(
            [
                lambda s=s, y=y: isotonic().fit(s, y),
                lambda s=s, y=y: BernsteinCalibrator().fit(s, y),
            ],
            cfg.repeat,
        )
        row(
            f"default fit vs IsotonicRegression.fit, {model} on {data}",
            f"{len(s):,}",
            auto,
            iso,
            DEFAULT_VS_ISOTONIC,
        )
    from _realdata import DataMissing  # beside this script
    from exact_serving import serving_row

    models = ["SGDClassifier", "GaussianNB", "LogisticRegression"]
    if cfg.name == "full":
        from _realdata import BASE_MODELS  # beside this script

        models = list(BASE_MODELS)
    for model in models if cfg.name == "full" else models[:1]:
        progress(f"section 9: graph throughput at batch 100k, {model}")
        try:
            cells, ratio = serving_row(model, 100, 20, cfg.repeat)
        except DataMissing:  # the credit table of the shared data is not on this machine
            load = f"{os.getloadavg()[0]:.1f}"
            missing = "no shared data"
            rows.append([f"graph throughput, {model}", "100,000", missing, "—", "—", "—", load])
            continue
        if ratio is None:
            load = f"{os.getloadavg()[0]:.1f}"
            rows.append([f"graph throughput, {model}", "100,000", cells[1], "—", "—", "—", load])
            continue
        rows.append(
            [
                f"graph throughput vs base alone, {model}",
                "100,000",
                f"{cells[4]} / {cells[3]} rows/s",
                f"{ratio:.2f}",
                f"≥ {THROUGHPUT_VS_BASE:g}",
                rep.check(f"9. graph throughput, {model}", ratio >= THROUGHPUT_VS_BASE),
                f"{os.getloadavg()[0]:.1f}",
            ]
        )
    rep.add(
        "9. Calibration-set sizes and serving",
        "One BLAS thread; each ratio from calls timed in alternation with its competitor "
        "in this run (medians), the 1-minute load average beside it. Generated scores: "
        "section 6's with 1% of the scores times 30 (heavy tails). Held-out scores: "
        "`benchmarks/_realdata.py`'s calibration split (rows the model was not fitted on). "
        "Multiclass: `multiclass_fits` (a frozen LogisticRegression on make_classification, "
        "the classes and rows of its row; both calibrators fitted on the same rows, the "
        "base model's predictions included in both). "
        "Graph throughput: `exact_serving.py`'s float32 graphs on the credit data, ours "
        "(base model and default calibrator, one graph) over skl2onnx's base model alone "
        "(XGBoost and LightGBM: onnxmltools' converters registered in skl2onnx). "
        "The fit at n = 1e6 and `predict_proba` at 1e6 are sections 1 and 4.",
        md_table(
            ["figure", "rows", "ours / competitor", "ratio", "target", "result", "load"], rows
        ),
    )


# ---------------------------------------------------------------------------- report


def header(cfg: Config, load: tuple[float, float, float]) -> str:
    pools = sorted(threadpoolctl.threadpool_info(), key=lambda p: p["filepath"])
    blas = "; ".join(
        f"{p['internal_api']} {p.get('version')} ({Path(p['filepath']).name}): "
        f"{p['num_threads']} threads"
        for p in pools
    )
    lines = [
        f"# bernonnx benchmarks ({cfg.name} run)",
        "",
        f"- Command: `{shlex.join(['python', *sys.argv])}`",
        f"- Date: {now()}",
        f"- Machine: {machine()}",
        f"- Python {platform.python_version()} ({sys.executable})",
        f"- bernonnx {bernonnx.__version__} (git {git_revision()}), numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, cvxpy {cp.__version__}",
        "- Thread pools (threadpoolctl; limited to 1 thread while timing, except in section "
        f"2's subprocesses): {blas or 'none loaded'}",
        f"- Timings: `time.perf_counter`, one warm-up, then the median of at least {cfg.repeat} "
        + (f"runs (more, up to 25, until {MIN_SECONDS:.0f} s is spent)" if MIN_SECONDS else "runs")
        + f" unless noted; seed {SEED}; "
        "scores s ~ N(0, 1), labels y ~ Bernoulli(sigmoid(3 s − 1)).",
        f"- Load average (1 min) at start / end: {load[0]:.2f} / {os.getloadavg()[0]:.2f} "
        "(the machine may be shared: compare ratios, not absolute times)",
    ]
    return "\n".join(lines)


TABLES = (
    table_fit_vs_isotonic,
    table_blog,
    table_memory,
    table_predict,
    table_scaling,
    table_auto,
    table_robustness,
    table_real,
    table_small_sizes,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced run (< 60 s), for CI")
    parser.add_argument("--out", type=Path, default=HERE / "run.md", help="report path")
    parser.add_argument("--repeat", type=int, default=None, help="timing repeats (>= 3)")
    parser.add_argument(
        "--child", nargs=3, metavar=("METHOD", "LOSS", "N"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)

    if args.child:
        method, loss, n = args.child
        child_main(method, loss, int(n), args.repeat or 1)
        return 0

    cfg = QUICK if args.quick else FULL
    global MIN_SECONDS
    MIN_SECONDS = cfg.min_seconds
    if args.repeat is not None:
        if args.repeat < 3:
            parser.error("--repeat must be at least 3")
        cfg = replace(cfg, repeat=args.repeat)

    start, load = time.perf_counter(), os.getloadavg()
    rep = Report()
    with threadpoolctl.threadpool_limits(1):
        for table in TABLES:
            table(cfg, rep)
    elapsed = time.perf_counter() - start
    text = "\n\n".join(
        [header(cfg, load), rep.summary(), *rep.sections, f"_Total run time: {elapsed:.0f} s._\n"]
    )
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    progress(f"report written to {args.out} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
