"""A BernsteinCalibrator fitted on 1e8 rows streamed from Parquet, and on Dask.

One command writes ``benchmarks/scale.md``:

1. **Data.** A Parquet file of ``--rows`` rows (default 1e8): ``score`` (float32,
   or float64 with ``--score-dtype float64``), ``z ~ N(0, 1)``, and ``label``
   (int8) ``~ Bernoulli(sigmoid(1.5 z - 2))``; written 2^22 rows at a time in
   row groups of 2^20 rows, so generating it needs bounded memory; into a
   temporary folder, or ``--dir`` (kept there, and reused when it has the
   right rows).
2. **Streamed fit.** ``BernsteinCalibrator()`` (log loss, ``degree="auto"``)
   fitted by ``_fit_source`` on a ``bernonnx._core.parquet.ParquetSource`` of the
   file, in a child process: its time, passes over the file and peak RSS
   (``resource.getrusage``: the child's high-water mark, interpreter and
   imports included).
3. **Per 1e7 rows, against the in-memory fit.** In one child process: the
   first 1e7 rows read into numpy arrays, then the ordinary in-memory ``fit``
   of them, and the streamed fit of the same arrays through
   ``_core.sources.ArraySource`` (the passes without the file reading). The
   streamed file fit's time per 1e7 rows is divided by each.
4. **Dask.** ``distributed.LocalCluster`` with 1 and then 2 workers (one
   thread each), ``dask.dataframe.read_parquet(..., split_row_groups=True)`` of
   the file's two columns (one partition per row group; by default dask reads
   it as one partition, which no second worker can share),
   ``BernsteinCalibrator().fit(df["score"], df["label"])``: each pass reads
   the file on the workers. Cluster start-up is not timed.

The 1, 5 and 15 minute load averages are printed beside every measurement:
the machine is shared, so a figure taken under load is slower than the
machine can do. ``--rows`` scales everything but the 1e7-row reference.

Run from the repository root::

    python benchmarks/scale.py                 # 1e8 rows: about 20 minutes on 2 cores
    python benchmarks/scale.py --rows 3e7 --dir /tmp/scale --no-dask
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bernonnx._core.points import SELECT_BINS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import HERE, fmt_ratio, git_revision, load_average, machine, md_table, now  # noqa: E402

REFERENCE_ROWS = int(os.environ.get("SCALE_REFERENCE_ROWS", 10_000_000))
WRITE_ROWS = 1 << 22
ROW_GROUP = 1 << 20


def generate(path: Path, rows: int, score_dtype: str, seed: int = 0) -> None:
    """Write the benchmark's Parquet file in blocks of WRITE_ROWS rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema(
        [("score", pa.from_numpy_dtype(np.dtype(score_dtype))), ("label", pa.int8())]
    )
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, WRITE_ROWS):
            n = min(WRITE_ROWS, rows - start)
            z = rng.standard_normal(n)
            label = (rng.random(n) < 1.0 / (1.0 + np.exp(-(1.5 * z - 2.0)))).astype(np.int8)
            table = pa.table({"score": z.astype(score_dtype), "label": label}, schema=schema)
            writer.write_table(table, row_group_size=ROW_GROUP)
    tmp.rename(path)


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(task: str, path: str) -> dict:
    """Run one measurement in a fresh interpreter (its own peak RSS); returns its JSON."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", task, path],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_stream(path: str) -> dict:
    from bernonnx import BernsteinCalibrator
    from bernonnx._core.parquet import ParquetSource

    pass_seconds = []

    def record(p):
        if p.done:
            pass_seconds.append(p.seconds)

    source = ParquetSource(path, "score", "label", progress=record)
    load = load_average()
    start = time.perf_counter()
    cal = BernsteinCalibrator()._fit_source(source)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "passes": source.passes,
        "rows": source.num_rows(),
        "peak_rss_mb": _peak_rss_mb(),
        "degree": int(cal.degree_),
        "load": load,
        "pass_seconds": pass_seconds,
    }


def child_memory(path: str) -> dict:
    """The first REFERENCE_ROWS rows in memory: the in-memory fit and ArraySource passes."""
    import pyarrow.parquet as pq

    from bernonnx import BernsteinCalibrator
    from bernonnx._core.sources import ArraySource

    batches, n = [], 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=ROW_GROUP):
        batches.append(batch)
        n += batch.num_rows
        if n >= REFERENCE_ROWS:
            break
    s = np.concatenate([b.column("score").to_numpy() for b in batches])[:REFERENCE_ROWS]
    y = np.concatenate([b.column("label").to_numpy() for b in batches])[:REFERENCE_ROWS]
    s = s.astype(np.float64)
    out = {"rows": int(s.shape[0]), "load": load_average()}
    start = time.perf_counter()
    memory = BernsteinCalibrator().fit(s, y)
    out["in_memory_seconds"] = time.perf_counter() - start
    source = ArraySource(s, y)
    start = time.perf_counter()
    passes = BernsteinCalibrator()._fit_source(source)
    out["array_source_seconds"] = time.perf_counter() - start
    grid = np.linspace(s.min(), s.max(), 10_001)
    out["max_abs_dp"] = float(
        np.abs(memory.predict_proba(grid)[:, 1] - passes.predict_proba(grid)[:, 1]).max()
    )
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def dask_fits(path: str, workers: list[int]) -> list[dict]:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from bernonnx import BernsteinCalibrator

    results = []
    for n in workers:
        with (
            LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None) as cluster,
            Client(cluster),
        ):
            # one partition per row group: by default dask reads this file as ONE partition
            df = dd.read_parquet(path, columns=["score", "label"], split_row_groups=True)
            load = load_average()
            start = time.perf_counter()
            cal = BernsteinCalibrator().fit(df["score"], df["label"])
            results.append(
                {
                    "workers": n,
                    "seconds": time.perf_counter() - start,
                    "degree": int(cal.degree_),
                    "load": load,
                }
            )
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8, help="rows of the file (default 1e8)")
    parser.add_argument("--dir", help="folder for the Parquet file (default: a temporary one)")
    parser.add_argument("--score-dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask fits")
    parser.add_argument("--out", default=str(HERE / "scale.md"), help="the report to write")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        task, path = args.child
        print(json.dumps({"stream": child_stream, "memory": child_memory}[task](path)))
        return
    rows = int(args.rows)
    with tempfile.TemporaryDirectory(prefix="bernonnx-scale-") as tmp:
        folder = Path(args.dir or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"scale-{rows}-{args.score_dtype}.parquet"
        if not path.exists():
            start = time.perf_counter()
            generate(path, rows, args.score_dtype)
            print(f"wrote {path} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        size_mb = path.stat().st_size / 2**20
        stream = _child("stream", str(path))
        print(f"streamed: {stream}", file=sys.stderr)
        memory = _child("memory", str(path))
        print(f"in memory: {memory}", file=sys.stderr)
        dask = [] if args.no_dask else dask_fits(str(path), [1, 2])
        print(f"dask: {dask}", file=sys.stderr)
    report(args, rows, size_mb, stream, memory, dask)


def report(args, rows, size_mb, stream, memory, dask) -> None:
    per_1e7 = stream["seconds"] * REFERENCE_ROWS / rows
    per_pass = sum(stream["pass_seconds"]) / stream["passes"]
    lines = [
        "# Scaling: BernsteinCalibrator on rows streamed from Parquet, and on Dask",
        "",
        "Generated by `python benchmarks/scale.py"
        + (f" --rows {args.rows:g}" if rows != 10**8 else "")
        + (" --no-dask" if args.no_dask else "")
        + f"` on {now()}, revision {git_revision()}; {machine()}.",
        "",
        f"Data: {rows:,} rows, `score` {args.score_dtype} ~ N(0, 1), `label` int8 ~ "
        f"Bernoulli(sigmoid(1.5 score - 2)); a {size_mb:,.0f} MB Parquet file (row groups of "
        f"{ROW_GROUP:,} rows). Fit: `BernsteinCalibrator()` (log loss, degree by 5-fold "
        "CV on per-fold bins, chosen degree "
        f"{stream['degree']}). Load averages (1 / 5 / 15 min) beside each figure: the "
        "machine is shared.",
        "",
        "## Streamed from the file (one process)",
        "",
        md_table(
            ["rows", "fit time", "passes", "s per pass", "driver s", "peak RSS", "load average"],
            [
                [
                    f"{rows:,}",
                    f"{stream['seconds']:.1f} s",
                    stream["passes"],
                    f"{per_pass:.2f} s",
                    f"{stream['seconds'] - sum(stream['pass_seconds']):.1f} s",
                    f"{stream['peak_rss_mb']:,.0f} MB",
                    stream["load"],
                ]
            ],
        ),
        "",
        "Seconds of each pass, in order (pass 1 the summary, then the transform's "
        "quantiles (radix passes), the per-fold bins of the degree search, the final "
        "fit's bins and its Newton steps on the rows; *driver s* is the fit's time "
        "between passes: the degree search on the bins, the QPs): "
        + ", ".join(f"{x:.1f}" for x in stream["pass_seconds"])
        + ".",
        "",
        f"## Per {REFERENCE_ROWS:,} rows, against the in-memory fit",
        "",
        f"The first {memory['rows']:,} rows, read into numpy in one child process "
        f"(peak RSS {memory['peak_rss_mb']:,.0f} MB; load {memory['load']}):",
        "",
        md_table(
            ["fit", f"time per {REFERENCE_ROWS:.0e} rows", "streamed file / this"],
            [
                [
                    "streamed from the file (above, scaled)",
                    f"{per_1e7:.2f} s",
                    "1.00×",
                ],
                [
                    "in memory, `fit(s, y)`",
                    f"{memory['in_memory_seconds']:.2f} s",
                    fmt_ratio(per_1e7 / memory["in_memory_seconds"]),
                ],
                [
                    "in memory, passes over `ArraySource` chunks",
                    f"{memory['array_source_seconds']:.2f} s",
                    fmt_ratio(per_1e7 / memory["array_source_seconds"]),
                ],
            ],
        ),
        "",
        f"The two in-memory fits agree to max |Δp| = {memory['max_abs_dp']:.1e} on a grid "
        "of 10,001 scores.",
        "",
    ]
    if dask:
        one = dask[0]["seconds"]
        lines += [
            "## Dask (LocalCluster, one thread per worker, `dask.dataframe.read_parquet`, "
            "one partition per row group)",
            "",
            md_table(
                ["workers", "fit time", "speed-up over 1 worker", "per pass", "load average"],
                [
                    [
                        d["workers"],
                        f"{d['seconds']:.1f} s",
                        fmt_ratio(one / d["seconds"]),
                        f"{d['seconds'] / stream['passes']:.2f} s",
                        d["load"],
                    ]
                    for d in dask
                ],
            ),
            "",
            "The Dask fit takes the same passes as the streamed one (plus one to learn the "
            "partitions' lengths); each pass reads the file again on the workers.",
            "",
        ]
    lines += [
        "## What a cluster changes",
        "",
        _cluster_paragraph(rows, stream, per_pass, dask),
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


def _cluster_paragraph(rows, stream, per_pass, dask) -> str:
    rate = rows / per_pass
    d = stream["degree"]
    driver = stream["seconds"] - sum(stream["pass_seconds"])
    text = (
        f"Measured here: a pass over the {rows:,} rows costs {per_pass:.1f} s on average in "
        f"one process (from {min(stream['pass_seconds']):.1f} to "
        f"{max(stream['pass_seconds']):.1f} s; "
        f"{rate / 1e6:,.1f} million rows per second: reading, decoding and the per-row "
        "arithmetic), and the fit takes "
        f"{stream['passes']} passes. Every pass is a sum over chunks, so it is "
        "embarrassingly parallel: on W workers each reads 1/W of the row groups and "
        "returns a summary whose size does not depend on the rows (1 + (d + 1) + (d + 1)^2 "
        f"sums for a Newton step, {1 + (d + 1) + (d + 1) ** 2:,} at the chosen degree {d}; "
        "2^16 buckets per pending quantile for the radix passes, "
        f"{SELECT_BINS:,} bins per fold and class for the degree search). The driver's "
        "work per pass is O(bins), not O(rows): adding W summaries and one small QP; "
        "measured here, the fit spent "
        f"{driver:.1f} s of {stream['seconds']:.0f} s between passes. On paper, a pass on W "
        f"workers costs about {per_pass:.1f} s / W plus the engine's per-pass latency "
        "(scheduling, collecting the summaries), so at 1e10 rows "
        f"({1e10 / rows:,.0f} times these data) and 100 workers the fit would take about "
        f"{stream['passes'] * per_pass * 1e10 / rows / 100 + driver:,.0f} s plus "
        f"{stream['passes']} such latencies, the passes still being the same number. What a "
        "cluster cannot remove is the passes' sequence (each needs the previous one's "
        "result): on small data the per-pass latency, not throughput, bounds the fit."
    )
    if len(dask) == 2:
        text += (
            f" Measured on Dask here: 2 workers took {dask[1]['seconds']:.1f} s against "
            f"{dask[0]['seconds']:.1f} s for 1 ({dask[0]['seconds'] / dask[1]['seconds']:.2f}× "
            "faster) on a 2-core machine shared with other work"
        )
        loads = [float(x["load"].split(" / ")[0]) for x in dask]
        if abs(loads[0] - loads[1]) > 1.0:
            text += (
                f"; the 1-minute load average was {loads[0]:.1f} for 1 worker and "
                f"{loads[1]:.1f} for 2, so part of that ratio is the machine's, not Dask's"
            )
        text += "."
    return text


if __name__ == "__main__":
    main()
