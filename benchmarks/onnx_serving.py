"""ONNX serving benchmark: bernonnx's calibrated graph vs the bare model and skl2onnx's.

What: four float32 ONNX graphs of seed 000's diabetes model (one-hot categoricals, min-max
scaled numericals, ``LinearSVC``), all with tensor outputs (no ZipMap), run in onnxruntime on
one thread:

1. ``base``: the fitted pipeline alone, exported by skl2onnx (LinearSVC decision function,
   ``raw_scores=True``; no calibration);
2. ``ours``: ``bernonnx.export.to_onnx`` of ``CalibratedClassifier(FrozenEstimator(pipeline))``
   with the default calibrator ``BernsteinCalibrator()``;
3. ``sigmoid``: skl2onnx's export of sklearn's ``CalibratedClassifierCV(method="sigmoid")`` on
   the same fitted pipeline and calibration rows;
4. ``isotonic``: the same with ``method="isotonic"``.

skl2onnx 1.20 converts neither ``FrozenEstimator`` nor a Pipeline base estimator, so graphs 3
and 4 come from an equivalent model (see :func:`sklearn_calibrated`): the pipeline's fitted
ColumnTransformer followed by a ``CalibratedClassifierCV(FrozenEstimator(linear_svc))`` fitted
on the transformed calibration rows, whose ``FrozenEstimator`` is then swapped for the bare
fitted ``LinearSVC``. The report states how far it is from the user's model (0 when built).

How: batch-1 latency is the median and p99 of single-row ``InferenceSession.run`` calls over
distinct test rows, after a warm-up, the graphs interleaved in blocks (rotating order) so that
a shared machine's load hits them alike; batch throughput is rows/s of the median of repeated
100,000-row runs (the test rows tiled), again interleaved. One timing helper,
``time.perf_counter_ns``, garbage collector paused. Parity compares each graph with its own
scikit-learn model on the test rows, both fed the same float32 values. The report ends with
onnxruntime profiles (``SessionOptions.enable_profiling``) of every graph at batch 1 and
100,000: per-node kernel times, the calibration stage separated from the shared nodes.

Run from the repository root::

    python benchmarks/onnx_serving.py           # full run, well under a minute on 2 cores
    python benchmarks/onnx_serving.py --quick   # 40,000-row subsample, smoke test (< 60 s)
    python benchmarks/onnx_serving.py --out PATH      # the bundled data, or --data-dir PATH

The markdown report is printed on stdout and written to ``benchmarks/onnx_serving.md`` (or
``--out``); progress goes to stderr. Exit code 0 whether the targets pass or not.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import skl2onnx
import sklearn
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline

import bernonnx

# seed 000's data, split and pipeline, shared with the diabetes study
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _harness import Verdicts, load_average, md_table, now  # noqa: E402
from _realdata import DEFAULT_DATA_DIR  # noqa: E402
from diabetes_study import DATA_FILE, load_splits, make_pipeline  # noqa: E402

from bernonnx import CalibratedClassifier, IsotonicCalibrator
from bernonnx.export import DEFAULT_OPSET, check_parity, onnx_inputs, to_onnx

HERE = Path(__file__).resolve().parent
SEED = 0
BATCH = 100_000
LATENCY_BLOCK = 100  # single-row calls per graph before switching to the next graph
OFF_TOL = 1e-4  # parity: fraction of rows off by more than this
# Targets
PARITY_TARGET = 1e-6
THROUGHPUT_TARGET = 0.5  # ours / base
LATENCY_TARGET = 1.0  # ours / sigmoid
# Measured earlier on this machine (shared/ONNX-NOTES.md), quoted for reference only.
EARLIER_LATENCY_US = {"base": 5.5, "sigmoid": 8.4}


@dataclass(frozen=True)
class Config:
    """Sizes of one run; ``FULL`` is the reference, ``QUICK`` the smoke test."""

    name: str
    max_rows: int | None  # stratified subsample of the data set (None: all rows)
    latency_rows: int  # distinct test rows timed at batch 1
    latency_passes: int  # passes over those rows (samples per graph = rows * passes)
    warmup_calls: int  # single-row calls per graph before timing
    batch_repeats: int  # timed 100k-row runs per graph (after one warm-up run)
    profile_runs: int  # profiled batch runs per graph
    profile_rows: int  # profiled single-row runs per graph


FULL = Config("full", None, 2000, 10, 500, 11, 10, 1000)
QUICK = Config("quick", 40_000, 2000, 1, 200, 3, 2, 100)


@dataclass
class Graph:
    """One ONNX graph under test, with the scikit-learn model it must reproduce."""

    key: str
    title: str
    onnx_model: onnx.ModelProto
    expected: Callable[[pd.DataFrame], np.ndarray]  # sklearn output to compare with
    expected_labels: Callable[[pd.DataFrame], np.ndarray]
    output_meaning: str
    session: ort.InferenceSession | None = None
    rebuild_gap: float | None = None  # sklearn competitors: rebuilt vs user's model
    library_parity: dict | None = None  # ours: bernonnx.export.check_parity


def progress(message: str) -> None:
    print(f"[onnx_serving] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- data and models


def as_float32(X: pd.DataFrame) -> pd.DataFrame:
    """Every column as float32: what the graphs take, and what sklearn is fed for parity."""
    return X.astype(np.float32)


def sklearn_calibrated(pipeline: Pipeline, X_cal, y_cal, method: str, X_check: pd.DataFrame):
    """sklearn's ``CalibratedClassifierCV`` on ``pipeline`` and its skl2onnx export.

    The user's model is ``CalibratedClassifierCV(FrozenEstimator(pipeline), method=method)``.
    skl2onnx 1.20 converts neither ``FrozenEstimator`` nor a Pipeline base estimator, so the
    exported model is rebuilt from the same fitted parts: a ``CalibratedClassifierCV(
    FrozenEstimator(linear_svc), method=method)`` fitted on the calibration rows transformed
    by the pipeline's fitted ColumnTransformer (same decision values, same labels, hence the
    same calibrator), then its ``FrozenEstimator`` replaced by the bare fitted ``LinearSVC``
    (in ``estimator`` and in every ``calibrated_classifiers_[i].estimator``), and
    ``Pipeline([("feature_transformer", column_transformer), ("calibrated", ...)])`` converted
    with ``skl2onnx.to_onnx(..., options={id(calibrated): {"zipmap": False}})``.

    Returns the user's model, the ONNX graph, and the max |difference| of ``predict_proba``
    between the user's model and the rebuilt one on ``X_check``.
    """
    user_model = CalibratedClassifierCV(FrozenEstimator(pipeline), method=method)
    user_model.fit(X_cal, y_cal)

    features = pipeline.named_steps["feature_transformer"]
    linear_svc = pipeline.named_steps["classifier"]
    calibrated = CalibratedClassifierCV(FrozenEstimator(linear_svc), method=method)
    calibrated.fit(features.transform(X_cal), y_cal)
    calibrated.estimator = linear_svc
    for pair in calibrated.calibrated_classifiers_:
        pair.estimator = linear_svc
    rebuilt = Pipeline([("feature_transformer", features), ("calibrated", calibrated)])
    gap = np.max(np.abs(rebuilt.predict_proba(X_check) - user_model.predict_proba(X_check)))

    onx = skl2onnx.to_onnx(
        rebuilt,
        X_check.iloc[:5],
        options={id(calibrated): {"zipmap": False}},
        target_opset=DEFAULT_OPSET,
    )
    return user_model, onx, float(gap)


def build_graphs(X_cal, y_cal, X_train, y_train, X_test32: pd.DataFrame) -> list[Graph]:
    """Fit seed 000's pipeline, the three calibrated models, and export the four graphs."""
    pipeline = make_pipeline().fit(X_train, y_train)
    linear_svc = pipeline.named_steps["classifier"]
    base_onnx = skl2onnx.to_onnx(
        pipeline,
        X_test32.iloc[:5],
        options={id(linear_svc): {"raw_scores": True}},
        target_opset=DEFAULT_OPSET,
    )
    graphs = [
        Graph(
            "base",
            "base: pipeline alone (skl2onnx, LinearSVC decision function)",
            base_onnx,
            pipeline.decision_function,
            pipeline.predict,
            "decision function (`probabilities[:, 1]` output with `raw_scores=True`)",
        )
    ]

    ours = CalibratedClassifier(FrozenEstimator(pipeline)).fit(X_cal, y_cal)
    ours_onnx = to_onnx(ours, X_test32.iloc[:5], dtype=np.float32)
    graphs.append(
        Graph(
            "ours",
            "ours: bernonnx `to_onnx(CalibratedClassifier(FrozenEstimator(pipeline)))`",
            ours_onnx,
            ours.predict_proba,
            ours.predict,
            "probabilities",
            library_parity=check_parity(ours, ours_onnx, X_test32),
        )
    )

    # our isotonic calibrator: exact interpolation, sqrt(T) lookup (issue 4's comparison
    # with skl2onnx's nearest-threshold isotonic export)
    ours_iso = CalibratedClassifier(FrozenEstimator(pipeline), IsotonicCalibrator()).fit(
        X_cal, y_cal
    )
    ours_iso_onnx = to_onnx(ours_iso, X_test32.iloc[:5], dtype=np.float32)
    graphs.append(
        Graph(
            "ours_isotonic",
            "ours, isotonic: bernonnx `CalibratedClassifier(..., IsotonicCalibrator())`",
            ours_iso_onnx,
            ours_iso.predict_proba,
            ours_iso.predict,
            "probabilities",
            library_parity=check_parity(ours_iso, ours_iso_onnx, X_test32),
        )
    )

    for method in ("sigmoid", "isotonic"):
        model, onx, gap = sklearn_calibrated(pipeline, X_cal, y_cal, method, X_test32)
        graphs.append(
            Graph(
                method,
                f"skl2onnx `CalibratedClassifierCV(method={method!r})`",
                onx,
                model.predict_proba,
                model.predict,
                "probabilities",
                rebuild_gap=gap,
            )
        )
    return graphs


# ---------------------------------------------------------------------------- measurement


def make_session(onx: onnx.ModelProto, profile_prefix: str | None = None):
    """Single-thread, sequential onnxruntime CPU session (default graph optimizations)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(
        onx.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def time_calls(fn: Callable[[object], object], args: Sequence[object]) -> np.ndarray:
    """Wall time (ns, ``time.perf_counter_ns``) of ``fn(a)`` for each ``a``, gc paused."""
    times = np.empty(len(args), dtype=np.int64)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i, arg in enumerate(args):
            start = time.perf_counter_ns()
            fn(arg)
            times[i] = time.perf_counter_ns() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return times


def runner(session: ort.InferenceSession) -> Callable[[dict], object]:
    """``feed -> session.run(None, feed)``: every output, as a server would fetch them."""
    return lambda feed: session.run(None, feed)


def row_feeds(feed: dict[str, np.ndarray], rows: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Single-row feeds (contiguous (1, 1) slices) of the given rows of a column feed."""
    return [{name: column[i : i + 1] for name, column in feed.items()} for i in rows]


def interleaved(graphs: list[Graph], batches: Sequence[Sequence[object]]) -> dict[str, list]:
    """Per graph, the times of every batch of arguments, graphs rotating order each batch."""
    times: dict[str, list] = {g.key: [] for g in graphs}
    for b, batch in enumerate(batches):
        for k in range(len(graphs)):
            graph = graphs[(b + k) % len(graphs)]
            times[graph.key].append(time_calls(runner(graph.session), batch))
    return times


def measure_latency(graphs: list[Graph], feed: dict, cfg: Config) -> dict[str, np.ndarray]:
    """Single-row call times (ns) per graph, over ``cfg.latency_rows`` distinct test rows."""
    n_test = len(next(iter(feed.values())))
    rng = np.random.default_rng(SEED)
    rows = rng.choice(n_test, size=min(cfg.latency_rows, n_test), replace=False)
    feeds = row_feeds(feed, rows)
    for graph in graphs:
        time_calls(runner(graph.session), feeds[: cfg.warmup_calls])
    blocks = [
        feeds[start : start + LATENCY_BLOCK]
        for _ in range(cfg.latency_passes)
        for start in range(0, len(feeds), LATENCY_BLOCK)
    ]
    return {key: np.concatenate(t) for key, t in interleaved(graphs, blocks).items()}


def measure_throughput(graphs: list[Graph], feed: dict, cfg: Config) -> dict[str, np.ndarray]:
    """Times (ns) of ``cfg.batch_repeats`` runs of the whole ``feed`` per graph, after warm-up."""
    for graph in graphs:
        time_calls(runner(graph.session), [feed])
    times = interleaved(graphs, [[feed]] * cfg.batch_repeats)
    return {key: np.concatenate(t) for key, t in times.items()}


def measure_parity(graph: Graph, X32: pd.DataFrame) -> dict:
    """ONNX vs scikit-learn on the same float32 rows: max |error|, rows off, labels."""
    label, out = graph.session.run(["label", "probabilities"], onnx_inputs(graph.onnx_model, X32))
    expected = np.asarray(graph.expected(X32), dtype=np.float64)
    got = out[:, 1] if expected.ndim == 1 else out
    err = np.abs(got.astype(np.float64) - expected).reshape(len(X32), -1).max(axis=1)
    return {
        "max_abs_error": float(err.max()),
        "frac_off": float(np.mean(err > OFF_TOL)),
        "labels_equal": float(np.mean(label.ravel() == graph.expected_labels(X32))),
    }


def profile_nodes(graph: Graph, feeds: Sequence[dict]) -> dict[str, dict]:
    """Per-node kernel time (onnxruntime profiler), mean µs per run over ``feeds[1:]``.

    ``feeds[0]`` is a warm-up run whose events are dropped. Returns ``{node name: {"op",
    "us"}}``.
    """
    runs = len(feeds) - 1
    with tempfile.TemporaryDirectory() as tmp:
        session = make_session(graph.onnx_model, profile_prefix=str(Path(tmp) / graph.key))
        for feed in feeds:
            session.run(None, feed)
        events = json.loads(Path(session.end_profiling()).read_text())
    warmup = min(
        (e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
        key=lambda e: e["ts"],
    )
    nodes: dict[str, dict] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        if event["ts"] < warmup["ts"] + warmup["dur"]:
            continue
        node = nodes.setdefault(
            name.removesuffix("_kernel_time"),
            {"op": event.get("args", {}).get("op_name", "?"), "us": 0.0},
        )
        node["us"] += event["dur"] / runs
    return nodes


# ---------------------------------------------------------------------------- report


def header(cfg: Config, load_start: str, n_rows: dict) -> str:
    return "\n".join(
        [
            f"# bernonnx ONNX serving benchmark ({cfg.name} run)",
            "",
            f"- Command: `{shlex.join(['python', *sys.argv])}`",
            f"- Date: {now()}",
            f"- Machine: {platform.platform()}, {platform.machine()}, "
            f"{cpu_model()}, os.cpu_count() = {os.cpu_count()}",
            f"- Python {platform.python_version()}; bernonnx {bernonnx.__version__}, "
            f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, "
            f"skl2onnx {skl2onnx.__version__}, scikit-learn {sklearn.__version__}, "
            f"numpy {np.__version__}, pandas {pd.__version__}",
            f"- Load average (1 / 5 / 15 min) at start: {load_start}; at end: "
            + load_average()
            + " (the machine may be shared: compare the ratios, measured in one run)",
            "- Data: the diabetes setup of the blog post "
            f'"A Bernstein SkLearn model calibrator", `{DATA_FILE}`'
            + (f" (stratified subsample of {cfg.max_rows:,} rows)" if cfg.max_rows else "")
            + f"; train / calibration / test = {n_rows['train']:,} / {n_rows['cal']:,} / "
            f"{n_rows['test']:,} rows.",
            "- onnxruntime: CPUExecutionProvider, `intra_op_num_threads = 1`, "
            "`inter_op_num_threads = 1`, `ORT_SEQUENTIAL`, default graph optimizations; "
            "every graph float32 in, tensor outputs (no ZipMap), `session.run(None, feed)` "
            "(all outputs), one (N, 1) input per column.",
            f"- Timing: `time.perf_counter_ns` around each `run`, gc paused. Batch 1: "
            f"{cfg.warmup_calls} warm-up calls per graph, then {cfg.latency_passes} pass(es) "
            f"over {cfg.latency_rows:,} distinct test rows, graphs interleaved in blocks of "
            f"{LATENCY_BLOCK} calls (rotating order). Batch {BATCH:,}: test rows tiled, one "
            f"warm-up run, then median of {cfg.batch_repeats} interleaved runs per graph.",
        ]
    )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def graph_description(graphs: list[Graph]) -> str:
    ours = next(g for g in graphs if g.key == "ours")
    meta = {p.key: p.value for p in ours.onnx_model.metadata_props}
    lines = ["## Graphs", ""]
    for g in graphs:
        lines.append(f"- `{g.key}`: {g.title}; compared output: {g.output_meaning}.")
    lines += [
        "",
        f"Our calibrator: {meta.get('calibrator')} degree {meta.get('degree')}, loss "
        f"{meta.get('loss')}, score transform {meta.get('score_transform')}, fitted on "
        f"{meta.get('response_method')} (`log_odds={meta.get('log_odds')}`).",
        "",
        "skl2onnx 1.20 converts neither `FrozenEstimator` nor a Pipeline base estimator, so "
        "the `sigmoid` and `isotonic` graphs are exports of a rebuilt, equivalent model: "
        "`CalibratedClassifierCV(FrozenEstimator(linear_svc), method=...)` fitted on the "
        "calibration rows transformed by the pipeline's fitted ColumnTransformer, its "
        "`FrozenEstimator` then replaced by the bare fitted `LinearSVC` (in `estimator` and in "
        "each `calibrated_classifiers_[i].estimator`), and "
        '`Pipeline([("feature_transformer", column_transformer), ("calibrated", ...)])` '
        'converted by `skl2onnx.to_onnx` with `options={id(calibrated): {"zipmap": False}}`. '
        "Max |predict_proba| difference between the rebuilt model and the user's "
        "`CalibratedClassifierCV(FrozenEstimator(pipeline), method=...)` on the test rows: "
        + ", ".join(f"{g.key} {g.rebuild_gap:.1e}" for g in graphs if g.rebuild_gap is not None)
        + ". Parity below is against the user's model.",
        "",
        "The base graph is `skl2onnx.to_onnx(pipeline, options={id(linear_svc): "
        '{"raw_scores": True}})`; skl2onnx declares its `probabilities` output (N, 1) while '
        "LinearClassifier emits (N, 2) = [-df, df], so onnxruntime logs 'Error merging shape "
        "info ... Falling back to lenient merge' when loading it; column 1 is the decision "
        "function. All graphs use opset ai.onnx 17, ai.onnx.ml 3.",
    ]
    return "\n".join(lines)


def results_section(graphs, latency, throughput, parity) -> tuple[str, list[tuple[str, bool]]]:
    us = {k: v / 1e3 for k, v in latency.items()}
    median = {k: float(np.median(v)) for k, v in us.items()}
    rows_per_s = {k: BATCH / (float(np.median(v)) / 1e9) for k, v in throughput.items()}

    lat_rows = [
        [
            f"`{g.key}`",
            f"{median[g.key]:.1f}",
            f"{np.percentile(us[g.key], 99):.1f}",
            f"{np.min(us[g.key]):.1f}",
            f"{median[g.key] / median['base']:.2f}",
            f"{median[g.key] / median['sigmoid']:.2f}",
            f"{len(us[g.key]):,}",
        ]
        for g in graphs
    ]
    thr = [
        [
            f"`{g.key}`",
            f"{rows_per_s[g.key]:,.0f}",
            f"{np.median(throughput[g.key]) / 1e6:.1f}",
            f"{np.min(throughput[g.key]) / 1e6:.1f} – {np.max(throughput[g.key]) / 1e6:.1f}",
            f"{rows_per_s[g.key] / rows_per_s['base']:.2f}",
        ]
        for g in graphs
    ]
    par_rows = [
        [
            f"`{g.key}`",
            g.output_meaning.split(" ")[0],
            f"{parity[g.key]['max_abs_error']:.2e}",
            f"{parity[g.key]['frac_off']:.4%}",
            f"{parity[g.key]['labels_equal']:.4%}",
            f"{len(g.onnx_model.SerializeToString()):,}",
            f"{len(g.onnx_model.graph.node)}",
        ]
        for g in graphs
    ]

    lat_ratio = median["ours"] / median["sigmoid"]
    thr_ratio = rows_per_s["ours"] / rows_per_s["base"]
    ours_err, iso_err = parity["ours"]["max_abs_error"], parity["isotonic"]["max_abs_error"]
    checks = [
        (
            f"batch-1 median latency, ours <= skl2onnx sigmoid: {median['ours']:.1f} vs "
            f"{median['sigmoid']:.1f} µs, ratio {lat_ratio:.2f} (target <= {LATENCY_TARGET:.2f})",
            lat_ratio <= LATENCY_TARGET,
        ),
        (
            f"batch-{BATCH:,} throughput, ours >= {THROUGHPUT_TARGET:.0%} of base: "
            f"{rows_per_s['ours']:,.0f} vs {rows_per_s['base']:,.0f} rows/s, ratio "
            f"{thr_ratio:.2f} (target >= {THROUGHPUT_TARGET:.2f})",
            thr_ratio >= THROUGHPUT_TARGET,
        ),
        (
            f"parity, ours max |error| <= {PARITY_TARGET:.0e}: {ours_err:.2e} "
            f"(skl2onnx isotonic: {iso_err:.2e}, {iso_err / max(ours_err, 1e-300):,.0f}x ours)",
            ours_err <= PARITY_TARGET,
        ),
    ]
    earlier = ", ".join(f"{k} {v} µs" for k, v in EARLIER_LATENCY_US.items())
    text = "\n\n".join(
        [
            "## Batch-1 latency (µs per `run`, single row)",
            md_table(
                ["graph", "median", "p99", "min", "÷ base", "÷ sigmoid", "samples"], lat_rows
            ),
            f"Earlier single-input measurements (shared/ONNX-NOTES.md: {earlier}) fed one "
            "(1, k) tensor; here every graph takes 21 column inputs, whose Python-side "
            "feeding is part of each call and the same for all four graphs.",
            f"## Batch-{BATCH:,} throughput",
            md_table(["graph", "rows/s (median)", "median ms", "min – max ms", "÷ base"], thr),
            "## Parity and graph size",
            "Each graph against its own scikit-learn model on the test rows, both fed the "
            "same float32 DataFrame (`X_test.astype(np.float32)`); error is max over classes "
            f"of |ONNX − sklearn| per row; 'rows off' is the fraction with error > {OFF_TOL:g}.",
            md_table(
                ["graph", "output", "max abs error", "rows off", "labels equal", "bytes", "nodes"],
                par_rows,
            ),
        ]
    )
    return text, checks


#: The issue's serving set-up: batch sizes and the 7 numeric columns of the data.
SMALL_BATCHES = (1, 10, 1000)
SMALL_COLUMNS = ("BMI", "GenHlth", "MentHlth", "PhysHlth", "Age", "Education", "Income")


def node_count(graph: onnx.GraphProto) -> str:
    """The graph's node count, and the nodes of each ``If`` branch (only one of which runs)."""
    branches = [
        f"{attr.name.split('_')[0]} {len(attr.g.node)}"
        for node in graph.node
        if node.op_type == "If"
        for attr in node.attribute
    ]
    return f"{len(graph.node)}" + (f" (`If` branches: {', '.join(branches)})" if branches else "")


def small_model_section(X_train, y_train, X_cal, y_cal, X_test, cfg: Config) -> str:
    """Latency at batches 1, 10 and 1,000 of one (N, 7) float32 input.

    ``StandardScaler + LinearSVC`` on seven numeric columns; graphs: ours (the
    default calibrator), ours with ``PlattCalibrator``, and skl2onnx's conversion of
    ``Pipeline([scaler, CalibratedClassifierCV(LinearSVC(), method="sigmoid")])``
    (skl2onnx converts neither ``FrozenEstimator`` nor a Pipeline inside the
    calibration, so its model is fitted with ``cv=2`` on the training rows: the same
    graph shape, which is what the latency measures).
    """
    from sklearn.pipeline import make_pipeline as sk_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from bernonnx import PlattCalibrator

    cols = [c for c in SMALL_COLUMNS if c in X_train.columns][:7]
    Xt, Xc = X_train[cols].to_numpy(np.float64), X_cal[cols].to_numpy(np.float64)
    X32 = X_test[cols].to_numpy(np.float32)
    pipe = sk_pipeline(StandardScaler(), LinearSVC()).fit(Xt, y_train)
    frozen = FrozenEstimator(pipe)
    models = {
        "ours": CalibratedClassifier(frozen).fit(Xc, y_cal),
        "ours_platt": CalibratedClassifier(frozen, PlattCalibrator()).fit(Xc, y_cal),
    }
    graphs = {key: to_onnx(m, X32) for key, m in models.items()}
    calibrated = CalibratedClassifierCV(LinearSVC(), method="sigmoid", cv=2)
    sigmoid = sk_pipeline(StandardScaler(), calibrated).fit(Xt, y_train)
    graphs["sigmoid"] = skl2onnx.to_onnx(
        sigmoid,
        X32[:1],
        options={id(calibrated): {"zipmap": False}},
        target_opset=DEFAULT_OPSET,
    )
    sessions = {key: make_session(g) for key, g in graphs.items()}
    names = {key: s.get_inputs()[0].name for key, s in sessions.items()}
    ours_p = sessions["ours"].run(None, {names["ours"]: X32})[1]
    err = float(
        np.abs(ours_p[:, 1] - models["ours"].predict_proba(X32.astype(np.float64))[:, 1]).max()
    )
    rows = []
    rng = np.random.default_rng(SEED)
    for batch in SMALL_BATCHES:
        calls = max(200, cfg.latency_rows // batch) if batch < 1000 else 100
        starts = rng.integers(0, len(X32) - batch, size=calls)
        feeds = {k: [{names[k]: X32[i : i + batch]} for i in starts] for k in graphs}
        for key in graphs:
            time_calls(runner(sessions[key]), feeds[key][: min(50, calls)])
        times = {key: [] for key in graphs}
        for b in range(0, calls, LATENCY_BLOCK):
            for k in range(len(graphs)):
                key = list(graphs)[(b // LATENCY_BLOCK + k) % len(graphs)]
                times[key].append(
                    time_calls(runner(sessions[key]), feeds[key][b : b + LATENCY_BLOCK])
                )
        med = {key: float(np.median(np.concatenate(t))) / 1e3 for key, t in times.items()}
        rows.append(
            [
                f"{batch:,}",
                *(f"{med[key]:.1f}" for key in graphs),
                f"{med['ours'] / med['sigmoid']:.2f}",
                f"{os.getloadavg()[0]:.1f}",
            ]
        )
    nodes = ", ".join(f"`{key}` {node_count(g.graph)}" for key, g in graphs.items())
    degree = models["ours"].calibrated_classifiers_[0].calibrators[0].degree_
    return "\n\n".join(
        [
            "## Batch 1, 10 and 1,000: one (N, 7) float32 input",
            f"`StandardScaler + LinearSVC` on {', '.join(cols)} (the diabetes splits above). "
            "Graphs: `ours` = `to_onnx(CalibratedClassifier(FrozenEstimator(pipe)))` (the "
            f"default, degree {degree}), `ours_platt` = the "
            "same with `PlattCalibrator()`, `sigmoid` = skl2onnx's conversion of "
            "`Pipeline([StandardScaler(), CalibratedClassifierCV(LinearSVC(), method='sigmoid', "
            "cv=2)])` (skl2onnx converts no FrozenEstimator; same graph shape). Median µs per "
            f"`run`, graphs interleaved in blocks of {LATENCY_BLOCK} calls, the 1-minute load "
            f"beside each batch. Nodes: {nodes}. Max |ours − predict_proba| on the test rows: "
            f"{err:.2e} (float32 output).",
            md_table(["batch", *(f"`{k}` µs" for k in graphs), "ours ÷ sigmoid", "load"], rows),
        ]
    )


def profile_section(
    graphs: list[Graph], batch_feed: dict, test_feed: dict, cfg: Config, top: int = 10
) -> str:
    """onnxruntime profiles of every graph at batch 1 and at batch ``BATCH``.

    The calibration stage of a graph is its nodes whose names are not in the base graph
    (the preprocessing and LinearSVC nodes carry the same names in all four graphs).
    """
    base_names = {node.name for node in graphs[0].onnx_model.graph.node}
    single = row_feeds(test_feed, np.arange(cfg.profile_rows + 1))
    profiles = {
        g.key: (profile_nodes(g, single), profile_nodes(g, [batch_feed] * (cfg.profile_runs + 1)))
        for g in graphs
    }

    def split(nodes: dict[str, dict]) -> tuple[float, float, int]:
        stage = [v["us"] for n, v in nodes.items() if n not in base_names]
        return sum(v["us"] for v in nodes.values()), sum(stage), len(stage)

    rows = []
    for g in graphs:
        one, big = (split(nodes) for nodes in profiles[g.key])
        rows.append(
            [
                f"`{g.key}`",
                f"{one[0]:.1f}",
                f"{one[1]:.1f} ({one[2]} nodes)",
                f"{big[0] / 1e3:.2f}",
                f"{big[1] / 1e3:.2f}",
            ]
        )

    def top_rows(nodes: dict[str, dict], scale: float, stage_only: bool) -> list[list[str]]:
        total = sum(v["us"] for v in nodes.values())
        ranked = sorted(nodes.items(), key=lambda kv: kv[1]["us"], reverse=True)
        if stage_only:
            ranked = [(n, v) for n, v in ranked if n not in base_names]
        return [
            [f"`{n}`", v["op"], f"{v['us'] / scale:.2f}", f"{v['us'] / total:.1%}"]
            for n, v in ranked[:top]
        ]

    ours_single, ours_batch = profiles["ours"]
    ops: dict[str, float] = {}
    for v in ours_batch.values():
        ops[v["op"]] = ops.get(v["op"], 0.0) + v["us"]
    ours_total = sum(ops.values())
    op_rows = [
        [op, f"{t / 1e3:.2f}", f"{t / ours_total:.1%}"]
        for op, t in sorted(ops.items(), key=lambda kv: kv[1], reverse=True)[:top]
    ]
    return "\n\n".join(
        [
            "## onnxruntime profiles (`SessionOptions.enable_profiling`)",
            f"Sum of node kernel times per run (no session or Python overhead), mean over "
            f"{cfg.profile_rows} single-row runs and over {cfg.profile_runs} batch-{BATCH:,} "
            "runs, after a warm-up run; profiler timestamps inflate the batch-1 figures. "
            "'Calibration stage': the nodes whose names are not in the base graph.",
            md_table(
                [
                    "graph",
                    "batch 1: all nodes µs",
                    "of which calibration stage µs",
                    f"batch {BATCH:,}: all nodes ms",
                    "of which calibration stage ms",
                ],
                rows,
            ),
            f"Slowest {top} nodes of `ours` at batch {BATCH:,}:",
            md_table(["node", "op", "ms / run", "share"], top_rows(ours_batch, 1e3, False)),
            f"`ours` by op type at batch {BATCH:,}:",
            md_table(["op", "ms / run", "share"], op_rows),
            f"Slowest {top} calibration-stage nodes of `ours` at batch 1:",
            md_table(["node", "op", "µs / run", "share"], top_rows(ours_single, 1.0, True)),
        ]
    )


def summary(checks: list[tuple[str, bool]]) -> str:
    verdicts = Verdicts()
    for text, ok in checks:
        verdicts.check(text, ok)
    return verdicts.summary().rstrip("\n")


# ---------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="40,000-row subsample, fewer samples (< 60 s)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "onnx_serving.md", help="report path")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"folder holding {DATA_FILE} (default: {DEFAULT_DATA_DIR})",
    )
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL

    start, load_start = time.perf_counter(), load_average()
    progress(f"{cfg.name} run: loading data and fitting")
    X_train, y_train, X_cal, y_cal, X_test, _ = load_splits(args.data_dir, cfg.max_rows)
    n_rows = {"train": len(X_train), "cal": len(X_cal), "test": len(X_test)}
    X_test32 = as_float32(X_test)
    graphs = build_graphs(X_cal, y_cal, X_train, y_train, X_test32)
    fit_seconds = time.perf_counter() - start

    names = [[i.name for i in g.onnx_model.graph.input] for g in graphs]
    if any(n != names[0] for n in names):
        raise RuntimeError(f"the graphs take different inputs: {names}")
    for graph in graphs:
        graph.session = make_session(graph.onnx_model)
    test_feed = onnx_inputs(graphs[0].onnx_model, X_test32)
    batch_feed = onnx_inputs(graphs[0].onnx_model, X_test32.iloc[np.arange(BATCH) % len(X_test)])

    progress("parity")
    parity = {g.key: measure_parity(g, X_test32) for g in graphs}
    progress("batch-1 latency")
    latency = measure_latency(graphs, test_feed, cfg)
    progress(f"batch-{BATCH:,} throughput")
    throughput = measure_throughput(graphs, batch_feed, cfg)
    progress("batch 1, 10 and 1,000 of one (N, 7) input")
    small = small_model_section(X_train, y_train, X_cal, y_cal, X_test, cfg)
    progress("profiling")
    profile = profile_section(graphs, batch_feed, test_feed, cfg)
    results, checks = results_section(graphs, latency, throughput, parity)

    ours = next(g for g in graphs if g.key == "ours")
    elapsed = time.perf_counter() - start
    text = "\n\n".join(
        [
            header(cfg, load_start, n_rows),
            summary(checks),
            graph_description(graphs),
            results,
            f"`bernonnx.export.check_parity(ours, onx, X_test32)`: {ours.library_parity}",
            small,
            profile,
            f"_Total run time: {elapsed:.0f} s (data, fitting and export: {fit_seconds:.0f} s)._",
        ]
    )
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    progress(f"report written to {args.out} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
