"""The same exported graph served from C, from Python and from a browser: latency and throughput.

One run measures, side by side on this machine and one thread each:

* **C**: ``examples/serve_c/serve_c`` (built here with the example's Makefile) on the
  library inside the onnxruntime wheel, the one Python loads; its ``--time`` sums the
  seconds spent creating the input tensors and in ``Run`` after the first batch (the
  session's warm-up), CSV parsing excluded;
* **Python**: ``onnxruntime.InferenceSession.run`` on numpy feeds (``onnx_inputs``);
* **browser**: ``examples/web/serve.mjs``'s ``benchmark`` in headless Chromium with
  onnxruntime-web's WebAssembly build (one thread), the page served on 127.0.0.1 by
  ``http.server``; the page posts its timings back to that server.

Batch-1 latency: the first 1,000 rows one at a time (mean per call; the browser's clock
is coarsened to 0.1 ms per reading, so its calls are timed in bulk). Throughput: 100,000
rows in one call; the credit data has 30,000 rows, so its rows are repeated. Three
rounds, each timing the three runtimes in turn; each figure is the best of its rounds.
Graphs: a calibrated HistGradientBoosting on the bundled credit data (one float64 input
``X``, 23 columns) and a calibrated LogisticRegression Pipeline with a ColumnTransformer
fitted on a DataFrame (23 float64 inputs, one per column).

Needs what the serving tests need (``tests/test_serve_c.py``, ``test_serve_web.py``):
onnxruntime's headers (``sh examples/serve_c/get_headers.sh build/onnxruntime``),
Chromium (``apt-get install chromium``) and ``cd examples/web && npm ci``::

    python benchmarks/serving_runtimes.py --out benchmarks/serving_runtimes.md
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._harness import (  # noqa: E402
    fmt_ratio,
    fmt_time,
    git_revision,
    load_average,
    machine,
    md_table,
    now,
    time_calls,
)
from bernonnx import CalibratedClassifier, to_onnx  # noqa: E402
from bernonnx.datasets import load_credit_default  # noqa: E402
from bernonnx.export import onnx_inputs  # noqa: E402

SERVE_C = ROOT / "examples" / "serve_c"
WEB = ROOT / "examples" / "web"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")
SINGLE, ROWS, ROUNDS = 1_000, 100_000, 3

BENCH_PAGE = """<!doctype html><meta charset="utf-8"><body><script type="module">
import { benchmark } from './serve.mjs';
const results = {};
for (const name of %s) {
  const model = await (await fetch(`${name}.onnx`)).arrayBuffer();
  const csv = await (await fetch(`${name}.csv`)).text();
  results[name] = await benchmark(model, csv, { single: %d, repeats: 1 });
}
await fetch('/results', { method: 'POST', body: JSON.stringify(results) });
</script>"""


def graphs() -> dict:
    """name -> (exported graph, the 100,000 rows as the model takes them)."""
    X, y, names = load_credit_default()
    rows = np.resize(np.arange(len(X)), ROWS)  # every row, then again from the start
    hgb = CalibratedClassifier(HistGradientBoostingClassifier(max_iter=100, random_state=0))
    hgb.fit(X[:10_000], y[:10_000])
    frame = pd.DataFrame(X, columns=names)
    categorical = ["SEX", "EDUCATION", "MARRIAGE"]
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
                ("num", StandardScaler(), [c for c in names if c not in categorical]),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    logreg = CalibratedClassifier(pipe).fit(frame.iloc[:10_000], y[:10_000])
    return {
        "hgb_X": (to_onnx(hgb, X[:5]), X[rows]),
        "logreg_columns": (to_onnx(logreg, frame.iloc[:5]), frame.iloc[rows]),
    }


class PythonRunner:
    """Python's onnxruntime on one thread; ``round()`` times batch-1 calls and one batch."""

    def __init__(self, onx, X):
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.session = ort.InferenceSession(
            onx.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        take = (lambda i: X.iloc[i : i + 1]) if hasattr(X, "iloc") else (lambda i: X[i : i + 1])
        self.singles = [onnx_inputs(onx, take(i)) for i in range(SINGLE)]
        self.everything = onnx_inputs(onx, X)
        self.session.run(None, self.everything)  # warm-up

    def round(self) -> tuple[float, float]:
        def one_by_one():
            for feeds in self.singles:
                self.session.run(None, feeds)

        latency = time_calls(one_by_one, repeat=1, warmup=0) / SINGLE
        return latency, time_calls(lambda: self.session.run(None, self.everything), repeat=1)


def build_c(folder: Path) -> Path:
    headers = os.environ.get("ONNXRUNTIME_INCLUDE") or str(
        ROOT / "build" / "onnxruntime" / "include" / "onnxruntime"
    )
    for name in ("serve.c", "Makefile"):
        shutil.copy(SERVE_C / name, folder / name)
    subprocess.run(
        ["make", "-s", "-C", str(folder), f"ORT_INCLUDE={headers}", "serve_c"], check=True
    )
    return folder / "serve_c"


def c_seconds(program: Path, model: Path, rows: Path, *args: str) -> float:
    """The program's ``--time``: seconds in every batch but the first (its warm-up)."""
    import onnxruntime

    library = sorted((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))[0]
    done = subprocess.run(
        [str(program), str(model), str(rows), os.devnull, "--time", *args],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, ONNXRUNTIME_LIB=str(library)),
    )  # fmt: skip
    return float(re.search(r"after_first_seconds=(\S+)", done.stderr).group(1))


def c_times(program: Path, model: Path, rows: Path, first: Path) -> tuple[float, float]:
    """Batch-1 latency over rows 2..1001 of ``first``; 100,000 rows (the second batch)."""
    latency = c_seconds(program, model, first, "--batch", "1") / SINGLE
    return latency, c_seconds(program, model, rows, "--batch", str(ROWS))


class _Collect(http.server.SimpleHTTPRequestHandler):
    results: dict = {}

    def do_POST(self):  # the page's timings
        length = int(self.headers["Content-Length"])
        type(self).results.update(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def browser_times(folder: Path, names: list[str], profile: Path) -> tuple[dict, str]:
    """One Chromium start timing every graph once: {name: (latency, batch)}, its version."""
    _Collect.results = {}
    for name in ("serve.mjs", "node_modules"):
        if not (folder / name).exists():
            (folder / name).symlink_to(WEB / name)
    (folder / "bench.html").write_text(BENCH_PAGE % (json.dumps(names), SINGLE))
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Collect, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/bench.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}"]  # fmt: skip
    version = subprocess.run(
        [CHROMIUM, "--version"], capture_output=True, text=True
    ).stdout.strip()
    browser = subprocess.Popen(
        [CHROMIUM, *flags, url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(1200):
            if set(names) <= set(_Collect.results):
                break
            threading.Event().wait(0.5)
        else:
            raise RuntimeError("the browser posted no timings within 10 minutes")
    finally:
        browser.terminate()
        browser.wait(timeout=60)
        server.shutdown()
    return {
        n: (_Collect.results[n]["latency"], _Collect.results[n]["batch"]) for n in names
    }, version


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    args = parser.parse_args(argv)
    cases = graphs()
    with tempfile.TemporaryDirectory(prefix="bernonnx-serving-") as tmp:
        folder = Path(tmp)
        program = build_c(folder)
        runners = {}
        for name, (onx, X) in cases.items():
            model = folder / f"{name}.onnx"
            onnx.save_model(onx, str(model))
            frame = (
                X
                if hasattr(X, "columns")
                else pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
            )
            # the C program's first batch warms its session up: one batch more, not timed
            pd.concat([frame, frame]).to_csv(folder / f"{name}.csv", index=False)
            frame.iloc[: SINGLE + 1].to_csv(folder / f"{name}.first.csv", index=False)
            runners[name] = PythonRunner(onx, X)
        # rounds alternate the runtimes, so that a change of load hits all of them; each
        # figure is the best of its rounds
        rounds = {name: {"C": [], "Python": [], "browser (WASM)": []} for name in cases}
        for r in range(ROUNDS):
            for name in cases:
                first, rows = folder / f"{name}.first.csv", folder / f"{name}.csv"
                rounds[name]["C"].append(c_times(program, folder / f"{name}.onnx", rows, first))
                rounds[name]["Python"].append(runners[name].round())
            web, chromium_version = browser_times(folder, list(cases), folder / f"profile{r}")
            for name in cases:
                rounds[name]["browser (WASM)"].append(web[name])
    measured = {
        name: {runtime: tuple(np.min(times, axis=0)) for runtime, times in by_runtime.items()}
        for name, by_runtime in rounds.items()
    }
    web_version = json.loads(
        (WEB / "node_modules" / "onnxruntime-web" / "package.json").read_text()
    )["version"]
    rows = []
    for name, by_runtime in measured.items():
        base_latency, base_batch = by_runtime["Python"]
        for runtime, (latency, batch) in by_runtime.items():
            throughput = f"{ROWS / batch:,.0f}"
            rows.append([name, runtime, fmt_time(latency), fmt_ratio(latency / base_latency),
                         throughput, fmt_ratio(base_batch / batch)])  # fmt: skip
    report = "\n".join(
        [
            "# Serving runtimes: C, Python and the browser "
            "(`python benchmarks/serving_runtimes.py`)",
            "",
            f"{now()}, commit {git_revision()}; {machine()}; load average at the end "
            f"{load_average()} (a shared machine: other jobs ran beside this one).",
            f"onnxruntime {ort.__version__} (Python, and the C program on the wheel's own "
            f"library); onnxruntime-web {web_version} (WebAssembly, one thread) in "
            f"{chromium_version}, headless. One thread everywhere.",
            "",
            "Latency: mean of 1,000 batch-1 calls (the first 1,000 rows, one at a time). "
            "Throughput: 100,000 rows in one call. Three rounds, each timing C, Python and "
            "the browser in turn; each figure is the best of its three rounds. Ratios "
            "against Python in the same run: latency ÷ Python's latency (below 1: faster "
            "than Python); rows/s ÷ Python's rows/s (above 1: faster than Python).",
            "",
            md_table(
                [
                    "graph",
                    "runtime",
                    "batch-1 latency",
                    "÷ Python",
                    "rows/s (100k in one call)",
                    "× Python",
                ],
                rows,
            ),
            "",
            "Graphs: `hgb_X` is a calibrated HistGradientBoosting (the default 5-fold "
            "ensemble: five models of 100 iterations, each with its calibrator) on the bundled "
            "credit data, one float64 input `X` of 23 columns; `logreg_columns` a calibrated "
            "LogisticRegression Pipeline with a ColumnTransformer fitted on a DataFrame, 23 "
            "float64 inputs, one per column. C's times cover creating the input tensors and "
            "`Run`, after one untimed batch (the session's warm-up, as for the others); "
            "Python's `session.run` on numpy feeds; the browser's `session.run` on tensors "
            "built beforehand. CSV parsing is outside every timing.",
        ]
    )
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
