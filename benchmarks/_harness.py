"""What every benchmark script shares: timing, the machine's state, tables and verdicts.

- Timing: :func:`time_calls` (warm-up calls, then best of k or the median, with more calls
  for short timings on a shared machine); :func:`load_average` for the report header.
- Tables: :func:`md_table` writes a markdown table; :func:`fmt_time`, :func:`fmt_ratio`.
- Verdicts: a :class:`Verdicts` collects each target (a ratio against a named competitor
  and the bound it must meet) as PASS/FAIL and writes the summary table.

Benchmarks report ratios measured in one run; tests never assert wall-clock times.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

__all__ = [
    "Verdicts",
    "fmt_ratio",
    "fmt_time",
    "git_revision",
    "load_average",
    "machine",
    "md_table",
    "now",
    "time_calls",
    "verdict",
]

# ---------------------------------------------------------------------------- timing


def time_calls(
    fn: Callable[[], object],
    repeat: int = 5,
    *,
    warmup: int = 1,
    stat: str = "min",
    min_seconds: float = 0.0,
    max_repeat: int | None = None,
) -> float:
    """Wall time in seconds of one call of ``fn``: best of ``repeat`` (``stat="min"``) or
    their ``"median"``, after ``warmup`` calls.

    With ``min_seconds``, calls go on past ``repeat`` (up to ``max_repeat``) until that
    much time is spent, so short timings on a shared machine get more samples.
    """
    if stat not in ("min", "median"):
        raise ValueError(f"stat must be 'min' or 'median', got {stat!r}")
    for _ in range(warmup):
        fn()
    max_repeat = repeat if max_repeat is None else max(max_repeat, repeat)
    times: list[float] = []
    while len(times) < repeat or (sum(times) < min_seconds and len(times) < max_repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.min(times) if stat == "min" else np.median(times))


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as the reports print them."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available on this platform
        return "unknown"


# ---------------------------------------------------------------------------- header lines


def git_revision(short: bool = False) -> str:
    """``git describe --always --dirty`` of the checkout (short: the commit), or "unknown"."""
    cmd = ["git", "-C", str(HERE)]
    cmd += ["rev-parse", "--short", "HEAD"] if short else ["describe", "--always", "--dirty"]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def now() -> str:
    """The local date and time, to the second, ISO 8601."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def machine() -> str:
    """Platform, architecture and CPU count."""
    return f"{platform.platform()}, {platform.machine()}, os.cpu_count() = {os.cpu_count()}"


# ---------------------------------------------------------------------------- tables


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table: one header row, a separator, one line per row."""
    lines = ["| " + " | ".join(str(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(r: float) -> str:
    return f"{r:.2f}×" if r < 10 else f"{r:.3g}×" if r < 100 else f"{r:.0f}×"


# ---------------------------------------------------------------------------- verdicts


def verdict(ok: bool) -> str:
    return "PASS" if ok else "**FAIL**"


class Verdicts:
    """Every target of a run, met or not, and the summary table of them."""

    def __init__(self) -> None:
        self.checks: list[tuple[str, bool]] = []

    def check(self, name: str, ok: bool) -> str:
        """Record target ``name`` as met (``ok``) or not; returns PASS or **FAIL**."""
        self.checks.append((name, bool(ok)))
        return verdict(ok)

    def ratio(
        self, name: str, ours: float, competitor: float, target: float, *, of: str = ""
    ) -> tuple[float, str]:
        """``ours / competitor`` must be at most ``target``; returns (ratio, verdict).

        ``of`` names the competitor in the summary (``"<name>: ratio vs <of> <= target"``).
        """
        ratio = ours / competitor
        label = f"{name}: ratio vs {of} ≤ {target:g}" if of else name
        return ratio, self.check(label, ratio <= target)

    @property
    def failed(self) -> int:
        return sum(not ok for _, ok in self.checks)

    def summary(self) -> str:
        """``## Summary: k of n targets met`` and the table of targets."""
        rows = [[name, verdict(ok)] for name, ok in self.checks]
        met = len(self.checks) - self.failed
        return (
            f"## Summary: {met} of {len(self.checks)} targets met\n\n"
            + md_table(["target", "result"], rows)
            + "\n"
        )
