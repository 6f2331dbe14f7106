"""Parquet input, loaded into memory or streamed: fits as passes over the file.

A small Parquet file loads like a CSV (:func:`_load_parquet`). A large one
(``--stream``, by default above :data:`STREAM_ROWS` rows) is never held in
memory: :func:`_scan` reads it once for the labels, the score range and a
sample of rows, every fit reads it in passes (``calibrator._fit_source`` on a
:class:`bernonnx._core.parquet.ParquetSource`), and ``compare`` adds its held-out
metrics up in one more pass (:func:`_evaluate_streamed`).

The held-out rows of a streamed ``compare`` are chosen by a hash of the row's
position (its index among the rows with a label) and ``--seed``: a rule each
batch applies on its own, so the fit reads the other rows without a shuffle.
``--cv K`` puts each row in fold ``floor(K u)`` of the same hash ``u``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._base import InputError, _Progress
from ._csv import MAX_LABELS, _binary_rule, _note_missing
from ._methods import _METHOD_LIST, _check_probabilities, _Method

#: a Parquet file with more rows than this streams unless --no-stream is given
STREAM_ROWS = 10_000_000
#: rows of a streamed ``export`` that ``to_onnx`` and the parity check run on
SAMPLE_ROWS = 200_000
#: probability bins of a streamed held-out AUC (ties within a bin count one half)
AUC_BINS = 1 << 18

_PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET_SUFFIXES


def _source(args, progress: _Progress | None = None, what: str = "", **kwargs):
    """A :class:`~bernonnx._core.parquet.ParquetSource` over the file of ``args``."""
    try:
        from bernonnx._core import parquet as _parquet

        _parquet.require_pyarrow()
    except ImportError as exc:
        raise InputError(f"{args.csv} is a Parquet file: {exc}") from None
    if len(set(args.score)) != len(args.score):
        raise InputError(f"--score names a column twice: {list(args.score)}")
    if args.label in args.score:
        raise InputError(f"column {args.label!r} is given both as --label and as --score")
    report = None if progress is None or progress.quiet else _pass_reporter(progress, what)
    kwargs.setdefault("batch_rows", _parquet.BATCH_ROWS)
    return _parquet.ParquetSource(
        args.csv, list(args.score), args.label, progress=report, **kwargs
    )


@contextlib.contextmanager
def _reading_errors(path):
    """Unreadable file or bad cells, from pyarrow or the source: bad input (exit 2)."""
    try:
        yield
    except InputError:
        raise
    except (ValueError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {path}: {reason}") from exc


def _pass_reporter(progress: _Progress, what: str):
    """The callback printing a pass's rows: updated in place on a terminal, one line
    per pass elsewhere."""

    def report(p) -> None:
        if p.done:
            back = "\r" if progress.tty else ""
            print(
                f"{back}bernonnx: {what}pass {p.pass_number}: {p.rows:,} rows in "
                f"{p.seconds:.1f} s",
                file=progress.stream,
                flush=True,
            )
        elif progress.tty:
            print(
                f"\rbernonnx: {what}pass {p.pass_number}: {p.rows:,} of {p.total:,} rows",
                end="",
                file=progress.stream,
                flush=True,
            )

    return report


def _streams(args) -> bool:
    """Whether the input streams: ``--stream``/``--no-stream``, else a Parquet file of
    more than :data:`STREAM_ROWS` rows."""
    path = Path(args.csv)
    if not _is_parquet(path):
        if args.stream:
            raise InputError(
                f"--stream reads Parquet files (.parquet); {path} is read as CSV, into "
                "memory: convert it to Parquet to stream it"
            )
        return False
    if args.stream is not None:
        return args.stream
    with _reading_errors(path):
        return _source(args).num_rows() > STREAM_ROWS


def _read_parquet(args) -> tuple[np.ndarray, np.ndarray, int]:
    """A Parquet file's labelled rows in memory: the label values, the score matrix and
    the number of rows without a label, as :func:`bernonnx.cli._csv._read_columns`."""
    with _reading_errors(args.csv):
        source = _source(args)
        S, labels, _ = source.read()
        n_file = source.num_rows()
    if labels.shape[0] == 0:
        if n_file:
            raise InputError(f"every one of the {n_file} rows of {args.csv} lacks a label")
        raise InputError(f"{args.csv} has no data rows")
    return labels, S, n_file - labels.shape[0]


# --------------------------------------------------------------------------
# the first pass: labels, score range, a sample
# --------------------------------------------------------------------------


def _position_hash(positions: np.ndarray, seed: int) -> np.ndarray:
    """Uniform numbers in [0, 1) from the rows' positions and ``seed`` (splitmix64)."""
    from bernonnx._core.points import position_hash

    x = position_hash(positions, int(seed) * 0xD1B54A32D192ED03 + 0x9E3779B97F4A7C15)
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


@dataclass
class _Counts:
    """Rows per label value, the score range and the sampled scores; adds."""

    labels: dict = field(default_factory=dict)
    lo: float = np.inf
    hi: float = -np.inf
    sample: list = field(default_factory=list)

    def __add__(self, other: _Counts) -> _Counts:
        labels = dict(self.labels)
        for key, count in other.labels.items():
            labels[key] = labels.get(key, 0) + count
        if len(labels) > MAX_LABELS:
            raise InputError(f"the label column has over {MAX_LABELS} distinct values")
        return _Counts(
            labels, min(self.lo, other.lo), max(self.hi, other.hi), self.sample + other.sample
        )


@dataclass
class _Scanned:
    """What the first pass over a streamed file found."""

    path: Path
    label: str
    scores: list[str]
    positives: list
    positive: str
    rows: int
    n_missing: int
    n_positive: int
    lo: float
    hi: float
    #: scores of about SAMPLE_ROWS rows (hashed positions), the extremes' rows included
    sample: np.ndarray


def _scan(args, progress: _Progress) -> _Scanned:
    source = _source(args, progress, "reading labels and scores: ")
    with _reading_errors(args.csv):
        n_file = source.num_rows()
        rate = SAMPLE_ROWS / max(n_file, 1)

        def count(chunk):
            values, counts = np.unique(chunk.y, return_counts=True)
            labels = {
                (v.item() if hasattr(v, "item") else v): int(c)
                for v, c in zip(values, counts, strict=True)
            }
            positions = np.arange(chunk.start, chunk.start + chunk.s.shape[0])
            sample = chunk.s[_position_hash(positions, -1) < rate]
            return _Counts(labels, float(chunk.s.min()), float(chunk.s.max()), [sample])

        counts = source.reduce(count)
    rows = 0 if counts is None else sum(counts.labels.values())
    if rows == 0:
        if n_file:
            raise InputError(f"every one of the {n_file} rows of {args.csv} lacks a label")
        raise InputError(f"{args.csv} has no data rows")
    positives, positive = _binary_rule(list(counts.labels), args.label, args.pos_label)
    n_missing = n_file - rows
    _note_missing(progress, n_missing, args.label, rows)
    sample = np.concatenate(counts.sample)
    # the extremes' rows, unless a sampled row has their score: the sample stays a
    # sample of rows (it held all 3,000 rows and the two extremes again: "3,002 of 3,000")
    extremes = [v for v in dict.fromkeys([counts.lo, counts.hi]) if not np.any(sample == v)]
    sample = np.concatenate([sample, extremes])
    return _Scanned(
        Path(args.csv),
        args.label,
        list(args.score),
        positives,
        positive,
        rows,
        n_missing,
        sum(counts.labels[v] for v in positives),
        counts.lo,
        counts.hi,
        sample,
    )


# --------------------------------------------------------------------------
# streamed fits
# --------------------------------------------------------------------------


def _streamable(method: _Method) -> bool:
    if method.kind == "reference":
        return True
    return method.kind == "1d" and hasattr(method.make(), "_fit_source")


_UNBOUNDED = (
    "{}: its streamed fit holds a table of the distinct scores, so its memory grows with "
    "the file's distinct scores (about one entry per row for continuous scores)"
)


def _bounded(method: _Method) -> bool:
    """Whether a streamed fit of ``method`` needs memory independent of the rows.

    Not so for the fits on a table of the distinct scores (isotonic, histogram):
    with continuous scores it has about one entry per row.
    """
    from bernonnx._base import TableFitMixin

    return _streamable(method) and not (
        method.make is not None and isinstance(method.make(), TableFitMixin)
    )


def _refuse_unstreamable(method: _Method, args) -> None:
    if _streamable(method):
        return
    streamable = ", ".join(m.name for m in _METHOD_LIST if _streamable(m))
    why = "--stream" if args.stream else f"it has over {STREAM_ROWS:,} rows, so it streams"
    raise InputError(
        f"method {method.name!r} cannot be fitted in passes over {args.csv} ({why}); "
        f"methods that stream: {streamable}; or pass --no-stream to load the file into memory"
    )


def _fit_streamed(method: _Method, args, scanned: _Scanned, progress: _Progress, keep=None):
    """``method`` fitted in passes over the file's rows (those ``keep`` selects)."""
    if method.kind == "reference":
        return None
    calibrator = method.make()
    source = _source(args, progress, f"{method.name}: ", positive=scanned.positives, keep=keep)
    try:
        calibrator._fit_source(source)
    except InputError:
        raise
    except ValueError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"method {method.name!r} cannot be fitted on the rows of {args.csv}: {reason}"
        ) from exc
    return calibrator


def _predict(calibrator, s: np.ndarray) -> np.ndarray:
    if calibrator is None:
        return np.clip(s, 0.0, 1.0)
    return calibrator.predict_proba(s[:, None])[:, 1]


# --------------------------------------------------------------------------
# held-out metrics as sums
# --------------------------------------------------------------------------


def _held_out_sums(p: np.ndarray, y: np.ndarray, n_bins: int):
    """The sums behind ECE, MCE, Brier, log loss and AUC (unit weights), as
    :func:`bernonnx.metrics.calibration_report` computes them."""
    inner = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    # right-closed bins, as the report (and sklearn's calibration_curve)
    binids = np.searchsorted(inner, p)
    weight = np.bincount(binids, minlength=n_bins).astype(np.float64)
    sum_pred = np.bincount(binids, weights=p, minlength=n_bins)
    sum_pos = np.bincount(binids, weights=y, minlength=n_bins)
    eps = float(np.finfo(np.float64).eps)
    q = np.clip(np.where(y == 1, p, 1.0 - p), eps, 1.0 - eps)
    cells = np.minimum((p * AUC_BINS).astype(np.int64), AUC_BINS - 1) * 2 + (y == 1)
    auc = np.bincount(cells, minlength=2 * AUC_BINS).astype(np.float64)
    return weight, sum_pred, sum_pos, float(np.sum((y - p) ** 2)), float(-np.log(q).sum()), auc


def _metrics(sums) -> dict[str, float]:
    weight, sum_pred, sum_pos, brier, log_loss, auc = sums
    total = weight.sum()
    nonempty = weight > 0
    gap = np.abs(sum_pred[nonempty] / weight[nonempty] - sum_pos[nonempty] / weight[nonempty])
    neg, pos = auc[0::2], auc[1::2]
    if pos.sum() == 0 or neg.sum() == 0:
        area = float("nan")
    else:
        below = np.cumsum(neg) - neg
        area = float(np.sum(pos * (below + 0.5 * neg)) / (pos.sum() * neg.sum()))
    return {
        "ece": float(np.sum(weight[nonempty] / total * gap)),
        "mce": float(gap.max()),
        "brier": brier / total,
        "log_loss": log_loss / total,
        "auc": area,
    }


def _evaluate_streamed(methods, args, scanned: _Scanned, progress: _Progress):
    """Fits on the training rows of each split, then one pass adding up the held-out
    metrics of every method. Returns the rows of the table and the evaluation."""
    seed, k = args.seed, args.cv
    if k is not None and k < 2:
        raise InputError(f"--cv needs at least 2 folds, got {k}")

    def fold(positions):
        u = _position_hash(positions, seed)
        if k is None:
            return (u >= args.test_size).astype(np.int64)  # 0: held out, 1: training
        return np.minimum((u * k).astype(np.int64), k - 1)

    splits = [0] if k is None else list(range(k))
    fitted, seconds = [], []
    for method in methods:
        start = time.perf_counter()
        if method.kind != "reference":
            progress.note(f"{method.name}: fitting in passes over {scanned.path.name}")
        fitted.append(
            [
                _fit_streamed(method, args, scanned, progress, lambda p, j=j: fold(p) != j)
                for j in splits
            ]
        )
        seconds.append((time.perf_counter() - start) / len(splits))
        if method.kind != "reference":
            progress.note(f"{method.name}: fitted in {seconds[-1] * len(splits):.1f} s")

    def held_out(chunk):
        f = fold(np.arange(chunk.start, chunk.start + chunk.s.shape[0]))
        out = []
        for calibrators in fitted:
            if k is None:
                test = f == 0
                s, y = chunk.s[test], chunk.y[test]
                p = _predict(calibrators[0], s) if s.shape[0] else s
            else:
                y, p = chunk.y, np.empty(chunk.s.shape[0])
                for j, calibrator in enumerate(calibrators):
                    rows = f == j
                    if rows.any():
                        p[rows] = _predict(calibrator, chunk.s[rows])
            out.append(_held_out_sums(p, y, args.n_bins))
        return out

    source = _source(args, progress, "held-out metrics: ", positive=scanned.positives)
    with _reading_errors(args.csv):
        sums = source.reduce(held_out)
    n_eval = int(sums[0][0].sum())
    rows = []
    for method, sum_, fit_seconds in zip(methods, sums, seconds, strict=True):
        row = {"method": method.name, "input": None}
        row.update(_metrics(sum_))
        row["fit_seconds"] = 0.0 if method.kind == "reference" else fit_seconds
        rows.append(row)
    split = "a hash of the row position and --seed"
    if k is None:
        evaluation = {"mode": "holdout", "test_size": args.test_size, "n_eval": n_eval}
    else:
        evaluation = {"mode": "cv", "folds": k, "n_eval": n_eval}
    evaluation.update({"streamed": True, "split": split, "auc_bins": AUC_BINS})
    return rows, evaluation


def _check_method_scores(method: _Method, scanned: _Scanned) -> None:
    if method.needs_probabilities:
        where = (
            "the row mean of the score columns"
            if len(scanned.scores) > 1
            else (f"column {scanned.scores[0]!r}")
        )
        _check_probabilities(method, np.array([[scanned.lo], [scanned.hi]]), where)
