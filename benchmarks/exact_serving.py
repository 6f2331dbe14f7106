"""Serving cost of the exact one-graph export, against skl2onnx's export of the same base model.

What: for each supported base model, on the shared credit data (StandardScaler in a
ColumnTransformer, one graph input per column, float32 features, prefit
``CalibratedClassifier`` with the default calibrator; ``benchmarks/_realdata.py`` builds
them), two float32 graphs run in onnxruntime on one thread:

1. ``base``: the fitted pipeline alone, ``skl2onnx.to_onnx`` with ``zipmap=False``
   (skl2onnx's own float32 converters; HistGradientBoosting fails there, see the table);
2. ``ours``: ``bernonnx.export.to_onnx`` of the calibrated model: the exact base-model
   converters (``converters/exact.py``) plus the calibrator, one graph.

How: batch-1 latency is the median of single-row calls over 1,000 distinct test rows
(after 200 warm-up calls), batch throughput the median of repeated 100,000-row runs (test
rows tiled); the two graphs interleaved as in ``onnx_serving.py``, whose timing helpers
this script uses. Parity: ``bernonnx.export.check_parity`` of ``ours`` on every test row.
Target (issue 9): ``ours`` keeps at least 50% of ``base``'s batch throughput.

Run from the repository root::

    python benchmarks/exact_serving.py            # about 3 minutes on 2 cores
    python benchmarks/exact_serving.py --quick    # three models, fewer repeats

The markdown table is printed and written to ``benchmarks/exact_serving.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import skl2onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _harness import load_average, md_table  # noqa: E402
from _realdata import BASE_MODELS, DEFAULT_DATA_DIR, Cell, fit_cell  # noqa: E402
from onnx_serving import make_session, time_calls  # noqa: E402

from bernonnx.converters.boosters import register_booster_converter  # noqa: E402
from bernonnx.export import check_parity, onnx_inputs, to_onnx  # noqa: E402

BATCH = 100_000
TARGET = 0.5
BASE_NOTE = (
    "Base alone: skl2onnx's graph of the same Pipeline without the calibrator (raw scores "
    "where the calibrator reads decision values); for XGBoost and LightGBM, onnxmltools' "
    "converters registered in skl2onnx as their documentation shows (they output "
    "probabilities: no raw-score option). skl2onnx's own HistGradientBoosting converter "
    "fails on this model, so that row has no ratio."
)


def _allowed_options(final) -> dict:
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common._registration import get_converter

    alias = sklearn_operator_name_map[type(final)]
    return get_converter(alias).get_allowed_options() or {}


def _tile(feed: dict, n: int) -> dict:
    reps = -(-n // len(next(iter(feed.values()))))
    return {k: np.concatenate([v] * reps)[:n] for k, v in feed.items()}


def measure(sessions: dict, feeds: dict, rows: int, warmup: int, repeats: int) -> dict:
    """Median batch-1 latency (µs) and batch throughput (rows/s) per session, interleaved.

    ``feeds[key]`` is session ``key``'s input, typed as its graph declares (skl2onnx
    declares integer columns int64 where ours are float32)."""
    singles = {
        key: [{k: v[i : i + 1] for k, v in feed.items()} for i in range(rows)]
        for key, feed in feeds.items()
    }
    big = {key: _tile(feed, BATCH) for key, feed in feeds.items()}
    out = {}
    for key, s in sessions.items():
        time_calls(lambda f, s=s: s.run(None, f), singles[key][:warmup])
        s.run(None, big[key])
    lat = {key: [] for key in sessions}
    thr = {key: [] for key in sessions}
    for r in range(repeats):
        for key, s in sessions.items() if r % 2 == 0 else reversed(sessions.items()):
            lat[key].append(time_calls(lambda f, s=s: s.run(None, f), singles[key]))
            thr[key].append(time_calls(lambda f, s=s: s.run(None, f), [big[key]])[0])
    for key in sessions:
        out[key] = (
            float(np.median(np.concatenate(lat[key]))) / 1e3,
            BATCH / (float(np.median(thr[key])) / 1e9),
        )
    return out


HEADERS = [
    "base model",
    "base alone (skl2onnx): batch-1",
    "ours: batch-1",
    "base: rows/s at 100k",
    "ours: rows/s at 100k",
    "ours ÷ base",
    "max \\|p − python\\|",
    "≥ 50%?",
]


def serving_row(name: str, rows: int, warmup: int, repeats: int) -> tuple[list[str], float | None]:
    """One row of the table for base model ``name``, and ours ÷ base (``None`` without base)."""
    print(f"[exact_serving] {name}", file=sys.stderr, flush=True)
    cell = Cell("credit", name, "float32")
    model, X_test, _ = fit_cell(cell, DEFAULT_DATA_DIR)
    ours = to_onnx(model, X_test[:5], dtype=np.float32)
    feeds = {"ours": onnx_inputs(ours, X_test, np.float32)}
    report = check_parity(model, ours, X_test)
    sessions = {"ours": make_session(ours)}
    base_note = ""
    try:
        pipeline = model.calibrated_classifiers_[0].estimator.estimator
        final = pipeline.steps[-1][1]
        # XGBoost and LightGBM: onnxmltools' converter, registered in skl2onnx
        register_booster_converter(final)
        # the score our graph calibrates: decision functions as raw scores
        method = model.calibrated_classifiers_[0].response_method
        # (onnxmltools' booster converters have no raw-score option: their graphs add the
        # sigmoid, which costs the competitor one elementwise node more than ours)
        allowed = _allowed_options(final)
        raw = method == "decision_function" and "raw_scores" in allowed
        options = {id(final): {"raw_scores": True} if raw else {}}
        if "zipmap" in allowed:
            options[id(final)]["zipmap"] = False
        base = skl2onnx.to_onnx(
            pipeline, X_test[:5], options=options, target_opset={"": 17, "ai.onnx.ml": 3}
        )
        feeds["base"] = onnx_inputs(base, X_test, np.float32)
        sessions["base"] = make_session(base)
        sessions["base"].run(None, {k: v[:2] for k, v in feeds["base"].items()})
    except Exception as exc:  # noqa: BLE001 - the table says skl2onnx fails
        sessions.pop("base", None)
        feeds.pop("base", None)
        base_note = f"skl2onnx fails: {type(exc).__name__}"
    timings = measure(sessions, feeds, rows, warmup, repeats)
    o_lat, o_thr = timings["ours"]
    ratio = None
    if "base" in timings:
        b_lat, b_thr = timings["base"]
        ratio = o_thr / b_thr
        cells = [f"{b_lat:.1f} µs", f"{o_lat:.1f} µs", f"{b_thr / 1e6:.2f} M", ""]
        verdict = "yes" if ratio >= TARGET else "**no**"
        ratio_text = f"{ratio:.2f}"
    else:
        cells = [base_note, f"{o_lat:.1f} µs", "—", ""]
        verdict, ratio_text = "—", "—"
    cells[3] = f"{o_thr / 1e6:.2f} M"
    return [name, *cells, ratio_text, f"{report['max_abs_error']:.1e}", verdict], ratio


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(HERE / "exact_serving.md"))
    args = parser.parse_args(argv)
    models = (
        ["LogisticRegression", "RandomForest", "HistGradientBoosting"]
        if args.quick
        else list(BASE_MODELS)
    )
    rows, warmup, repeats = (300, 100, 3) if args.quick else (1000, 200, 7)
    lines = [serving_row(name, rows, warmup, repeats)[0] for name in models]
    text = "\n".join(
        [
            "# Serving cost of the exact export (`python benchmarks/exact_serving.py`)",
            "",
            f"{datetime.date.today()}, onnxruntime {ort.__version__}, skl2onnx "
            f"{skl2onnx.__version__}, one thread, float32 graphs, credit data "
            f"(StandardScaler, 24 inputs), 7,500 test rows; load average at the end "
            f"{load_average()}.",
            "",
            BASE_NOTE,
            "",
            md_table(HEADERS, lines),
            "",
        ]
    )
    print(text)
    if not args.quick:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
