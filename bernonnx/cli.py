"""The ``bernonnx`` command line: ``demo``, ``compare`` and ``export``.

Installed as the ``bernonnx`` console script (``python -m bernonnx`` runs the same
:func:`main`). Results go to standard output; progress lines and errors go to standard
error, errors as one line starting ``bernonnx: error:``.

Exit status: 0 success; 1 unexpected failure (``--traceback`` shows where); 2 bad usage
or bad input (unknown option or method, unreadable file, missing column, non-binary
labels, non-numeric or non-finite scores, an output path that is an input), as argparse
does for usage errors; 3 the ONNX graph does not reproduce Python (``export``, ``demo``).

Everything is checked before anything is written, and every file is written whole
(a temporary file in the same folder, then renamed).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import json
import math
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from . import __version__

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_PARITY", "EXIT_USAGE", "main"]

EXIT_OK = 0
#: an unexpected failure: a bug, or a library error the command line did not foresee
EXIT_FAILURE = 1
#: bad usage or bad input, the exit status argparse uses for usage errors
EXIT_USAGE = 2
#: the ONNX graph's outputs differ from Python's beyond the parity tolerance
EXIT_PARITY = 3

_EXIT_HELP = """\
exit status:
  0  success
  1  unexpected failure (add --traceback before the command to see where)
  2  bad usage or bad input: unknown option or method, unreadable or missing file,
     missing column, non-binary labels, non-numeric or non-finite scores, too few
     rows to fit, an output path that is an input; nothing is written
  3  the ONNX graph does not reproduce Python within the parity tolerance (export,
     demo): the report is printed, the .onnx file is written for inspection, the
     Triton repository and ORT files are not
"""

_METRICS = ("ece", "mce", "brier", "log_loss", "auc", "fit_seconds")
_HEADERS = {
    "ece": "ECE",
    "mce": "MCE",
    "brier": "Brier",
    "log_loss": "log loss",
    "auc": "AUC",
    "fit_seconds": "fit s",
}


class InputError(ValueError):
    """Bad command-line usage or bad input data: reported in one line, exit status 2."""


# --------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class _Method:
    """A calibration method the command line offers.

    ``kind`` is "1d" (a bernonnx calibrator of one score), "multi" (a calibrator of the
    score matrix), "sklearn" (scikit-learn's ``CalibratedClassifierCV``) or "reference"
    (the scores used as probabilities, no fit).
    """

    name: str
    summary: str
    kind: str
    make: Callable[[], object] | None = None
    needs_probabilities: bool = False

    @property
    def exportable(self) -> bool:
        return self.kind in ("1d", "multi")


def _bernonnx(name: str, **params) -> Callable[[], object]:
    def make():
        import bernonnx

        return getattr(bernonnx, name)(**params)

    return make


_METHOD_LIST = (
    _Method(
        "uncalibrated",
        "the scores themselves as probabilities (reference; scores in [0, 1])",
        "reference",
        needs_probabilities=True,
    ),
    _Method(
        "bernstein",
        "BernsteinCalibrator(): Bernstein polynomial, log loss, degree by 5-fold CV",
        "1d",
        _bernonnx("BernsteinCalibrator"),
    ),
    _Method(
        "bernstein-squared",
        "BernsteinCalibrator(loss='squared'): Bernstein polynomial, least squares",
        "1d",
        _bernonnx("BernsteinCalibrator", loss="squared"),
    ),
    _Method("platt", "PlattCalibrator(): Platt scaling", "1d", _bernonnx("PlattCalibrator")),
    _Method(
        "platt-logodds",
        "PlattCalibrator(log_odds=True): Platt on log-odds (scores must be in [0, 1])",
        "1d",
        _bernonnx("PlattCalibrator", log_odds=True),
        needs_probabilities=True,
    ),
    _Method(
        "isotonic",
        "IsotonicCalibrator(): isotonic regression",
        "1d",
        _bernonnx("IsotonicCalibrator"),
    ),
    _Method(
        "histogram",
        "HistogramCalibrator(): histogram binning, 15 bins",
        "1d",
        _bernonnx("HistogramCalibrator"),
    ),
    _Method(
        "platt-histogram",
        "PlattHistogramCalibrator(): scaling-binning (Kumar et al. 2019)",
        "1d",
        _bernonnx("PlattHistogramCalibrator"),
    ),
    _Method(
        "multivariate",
        "MultivariateBernsteinCalibrator(): tensor Bernstein fusion of all score\n"
        "                     columns, least squares on quantile-transformed scores",
        "multi",
        _bernonnx("MultivariateBernsteinCalibrator"),
    ),
    _Method(
        "multivariate-log",
        "MultivariateBernsteinCalibrator(loss='log', score_transform='logistic')",
        "multi",
        _bernonnx("MultivariateBernsteinCalibrator", loss="log", score_transform="logistic"),
    ),
    _Method("sklearn-sigmoid", "scikit-learn CalibratedClassifierCV(method='sigmoid')", "sklearn"),
    _Method(
        "sklearn-isotonic", "scikit-learn CalibratedClassifierCV(method='isotonic')", "sklearn"
    ),
)
_METHODS = {m.name: m for m in _METHOD_LIST}
_ALIASES = {
    "bernstein-log": "bernstein",
    "platt-log-odds": "platt-logodds",
    "scaling-binning": "platt-histogram",
    "none": "uncalibrated",
    "raw": "uncalibrated",
}
#: the bernonnx calibrators the demo fits through CalibratedClassifier
_DEMO_CALIBRATORS = tuple(m.name for m in _METHOD_LIST if m.kind == "1d")


def _method(name: str) -> _Method:
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _METHODS:
        raise InputError(f"unknown method {name!r}; choose from {', '.join(_METHODS)}")
    return _METHODS[key]


def _methods_help() -> str:
    width = max(len(m.name) for m in _METHOD_LIST)
    lines = [f"  {m.name:<{width}}  {m.summary}" for m in _METHOD_LIST]
    return "methods (--method):\n" + "\n".join(lines) + "\n"


class _ScoreColumn(ClassifierMixin, BaseEstimator):
    """A classifier whose decision function is its one input column.

    Lets scikit-learn's ``CalibratedClassifierCV`` (wrapped around a
    ``FrozenEstimator`` of it) calibrate precomputed scores.
    """

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]

    def predict(self, X):
        # cross_val_predict, inside CalibratedClassifierCV, insists on a predict method
        return self.classes_[(self.decision_function(X) > 0).astype(np.int64)]


# --------------------------------------------------------------------------- progress


class _Progress:
    """One stderr line per step with its elapsed seconds; silent when ``quiet``.

    On a terminal the step name is printed first and the time appended when the step
    ends, so a slow step shows what is running; elsewhere (logs, CI) one whole line is
    written when the step ends.
    """

    def __init__(self, quiet: bool = False, stream=None):
        self.quiet = quiet
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def note(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            print(f"bernonnx: {text}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def step(self, text: str) -> Iterator[None]:
        if self.quiet:
            yield
            return
        if self.tty:
            print(f"bernonnx: {text} ...", end="", file=self.stream, flush=True)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            if self.tty:
                print(" failed", file=self.stream, flush=True)
            raise
        seconds = time.perf_counter() - start
        if self.tty:
            print(f" {seconds:.1f} s", file=self.stream, flush=True)
        else:
            print(f"bernonnx: {text} ... {seconds:.1f} s", file=self.stream, flush=True)


# --------------------------------------------------------------------------- CSV input


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open("r", encoding="utf-8-sig", newline="")


def _choices(values: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


#: label cells that mean "no label": the rows are dropped, and counted
_MISSING_LABELS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
#: a decimal number as a person writes it; ``float()`` also takes ``1_000`` and
#: non-ASCII digits, which a score column should not hold
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NON_FINITE = frozenset({"nan", "inf", "infinity"})


def _parse_number(text: str) -> float | None:
    """``text`` as a float: plain decimal notation, nan or inf; None otherwise."""
    if _NUMBER.fullmatch(text) or text.lower().lstrip("+-") in _NON_FINITE:
        return float(text)
    return None


def _read_columns(path: Path, label: str, scores: Sequence[str], delimiter: str):
    """Labels (as text), the score matrix and the number of rows without a label.

    Rows whose label is missing (empty, NA, N/A, NaN, null, None, ?) are dropped:
    counting them as either class would be a guess.

    Raises
    ------
    InputError
        Unreadable file, a missing or duplicated column, a short row, a non-numeric
        (``1_000`` included) or non-finite score, naming the column and the first bad
        row.
    """
    if len(set(scores)) != len(scores):
        raise InputError(f"--score names a column twice: {list(scores)}")
    if label in scores:
        raise InputError(f"column {label!r} is given both as --label and as --score")
    try:
        with _open_text(path) as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path} is empty: expected a header row")
            header = [name.strip() for name in header]
            wanted = [label, *scores]
            for column in wanted:
                if column not in header:
                    hint = ""
                    if len(header) == 1 and any(c in header[0] for c in ";\t|"):
                        hint = " (is the file delimited by something else? see --delimiter)"
                    raise InputError(
                        f"column {column!r} is not in {path}; available columns: "
                        f"{_choices(header, limit=40)}{hint}"
                    )
                if header.count(column) > 1:
                    raise InputError(f"column {column!r} appears {header.count(column)} times")
            index = [header.index(column) for column in wanted]
            last = max(index)
            labels: list[str] = []
            rows: list[list[str]] = []
            n_missing = 0
            lines: list[int] = []
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) <= last:
                    raise InputError(
                        f"{path}: row {len(labels) + 1} (line {reader.line_num}) has "
                        f"{len(row)} fields, the header has {len(header)}"
                    )
                cell = row[index[0]].strip()
                if cell.lower() in _MISSING_LABELS:
                    n_missing += 1
                    continue
                labels.append(cell)
                rows.append([row[i] for i in index[1:]])
                lines.append(reader.line_num)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read {path}: {reason}") from exc
    if not labels:
        if n_missing:
            raise InputError(f"every one of the {n_missing} rows of {path} lacks a label")
        raise InputError(f"{path} has a header but no data rows")
    matrix = np.empty((len(rows), len(scores)), dtype=np.float64)
    for j, column in enumerate(scores):
        for i, row in enumerate(rows):
            text = row[j].strip()
            value = _parse_number(text)
            if value is None:
                raise InputError(
                    f"score column {column!r} is not numeric: row {i + 1} "
                    f"(line {lines[i]}) holds {text!r}"
                )
            if not math.isfinite(value):
                raise InputError(
                    f"score column {column!r} holds {text!r} at row {i + 1} (line "
                    f"{lines[i]}): scores must be finite numbers (no NaN or inf)"
                )
            matrix[i, j] = value
    return labels, matrix, n_missing


def _as_number(text: str) -> float | None:
    value = _parse_number(text)
    return value if value is not None and math.isfinite(value) else None


def _binary_target(labels: list[str], column: str, pos_label: str | None):
    """0/1 targets and the positive label's text.

    Labels that are all numbers are compared as numbers ("1" and "1.0" are one class).
    Without ``pos_label`` the column must hold exactly two values and, when they are
    numbers, the larger one is positive (0/1, -1/1, 1/2); text labels need
    ``--pos-label``. With ``pos_label`` that value is calibrated against all others.
    """
    texts = sorted(set(labels))
    numbers = {text: _as_number(text) for text in texts}
    numeric = None not in numbers.values()
    # one representative text per class, and each row's class key
    key = (lambda text: numbers[text]) if numeric else (lambda text: text)
    classes = {}
    for text in texts:
        classes.setdefault(key(text), text)
    values = [classes[k] for k in sorted(classes)]
    if pos_label is None:
        if len(values) != 2:
            raise InputError(
                f"label column {column!r} has {len(values)} distinct value"
                f"{'' if len(values) == 1 else 's'} ({_choices(values)}); calibration needs "
                "a binary label: pass --pos-label V to calibrate V against the rest"
            )
        if not numeric:
            raise InputError(
                f"label column {column!r} holds {values[0]!r} and {values[1]!r}: say which "
                "one is positive with --pos-label"
            )
        positive = values[1]
    else:
        wanted = pos_label.strip()
        positive_key = _as_number(wanted) if numeric else wanted
        if positive_key not in classes:
            raise InputError(
                f"--pos-label {pos_label!r} is not a value of column {column!r} "
                f"(values: {_choices(values)})"
            )
        positive = classes[positive_key]
        if len(values) < 2:
            raise InputError(
                f"label column {column!r} holds only {values[0]!r}: calibration needs both "
                "positive and negative rows"
            )
    target = key(positive)
    y = np.fromiter((key(text) == target for text in labels), dtype=np.int64, count=len(labels))
    return y, positive


@dataclass
class _Data:
    path: Path
    label: str
    scores: list[str]
    y: np.ndarray
    S: np.ndarray
    positive: str
    n_missing_label: int = 0


def _load(args, progress: _Progress) -> _Data:
    labels, S, n_missing = _read_columns(Path(args.csv), args.label, args.score, args.delimiter)
    if n_missing:
        progress.note(
            f"dropped {n_missing} row{'' if n_missing == 1 else 's'} with a missing label "
            f"(empty, NA, NaN, null, ...) in column {args.label!r}; {len(labels)} rows remain",
            always=True,
        )
    y, positive = _binary_target(labels, args.label, args.pos_label)
    return _Data(Path(args.csv), args.label, list(args.score), y, S, positive, n_missing)


# --------------------------------------------------------------------------- fitting


def _report(y, proba, n_bins: int) -> dict[str, float]:
    from .metrics import calibration_report

    report = calibration_report(y, proba, n_bins=n_bins)
    return {key: float(report[key]) for key in ("ece", "mce", "brier", "log_loss", "auc")}


def _check_probabilities(method: _Method, S: np.ndarray, what: str) -> None:
    low, high = float(S.min()), float(S.max())
    if low < 0.0 or high > 1.0:
        raise InputError(
            f"method {method.name!r} needs scores in [0, 1], but {what} ranges over "
            f"[{low:.4g}, {high:.4g}]"
        )


def _fit_scores(method: _Method, S: np.ndarray, y: np.ndarray):
    """Fit ``method`` on the score matrix ``S``; returns ``predict(S) -> probabilities``."""
    if method.kind == "reference":
        return lambda X: np.clip(X.mean(axis=1), 0.0, 1.0)
    if method.kind == "sklearn":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.frozen import FrozenEstimator

        X = S.mean(axis=1, keepdims=True)
        base = FrozenEstimator(_ScoreColumn().fit(X, y))
        model = CalibratedClassifierCV(base, method=method.name.split("-")[1]).fit(X, y)
        return lambda X: model.predict_proba(X.mean(axis=1, keepdims=True))[:, 1]
    calibrator = method.make()
    if method.kind == "multi":
        calibrator.fit(S, y)
        return lambda X: calibrator.predict_proba(X)[:, 1]
    calibrator.fit(S.mean(axis=1, keepdims=True), y)
    return lambda X: calibrator.predict_proba(X.mean(axis=1, keepdims=True))[:, 1]


def _fit(method: _Method, S: np.ndarray, y: np.ndarray):
    """:func:`_fit_scores`, a ``ValueError`` of the fit (too few rows for its folds or
    bins, say) reported as bad input."""
    try:
        return _fit_scores(method, S, y)
    except ValueError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"method {method.name!r} cannot be fitted on {len(y)} rows "
            f"({int(np.sum(y))} positive): {reason}"
        ) from exc


def _input_name(method: _Method, scores: list[str]) -> str:
    if len(scores) == 1:
        return scores[0]
    if method.kind == "multi":
        return ", ".join(scores)
    return f"mean({', '.join(scores)})"


def _select_methods(names: list[str] | None, data: _Data, progress: _Progress) -> list[_Method]:
    multi = data.S.shape[1] > 1
    where = f"column {data.scores[0]!r}" if not multi else "the row mean of the score columns"
    mean = data.S.mean(axis=1)
    if names:
        chosen = []
        for name in names:
            method = _method(name)
            if method not in chosen:
                chosen.append(method)
        for method in chosen:
            if method.needs_probabilities:
                _check_probabilities(method, mean[:, None], where)
        return chosen
    chosen = [m for m in _METHOD_LIST if m.kind != "multi" or multi]
    # the slow log-loss fusion only on request: a cvxpy solve per degree and fold
    chosen = [m for m in chosen if m.name != "multivariate-log"]
    in_unit = mean.min() >= 0.0 and mean.max() <= 1.0
    if not in_unit:
        skipped = [m.name for m in chosen if m.needs_probabilities]
        progress.note(
            f"{where} is not in [0, 1]: skipping {', '.join(skipped)} (they take probabilities)"
        )
        chosen = [m for m in chosen if not m.needs_probabilities]
    return chosen


def _evaluate(methods, data: _Data, args, progress: _Progress):
    """Held-out or cross-validated predictions and metrics of every method."""
    from sklearn.model_selection import StratifiedKFold, train_test_split

    n = data.y.shape[0]
    if args.cv is not None:
        if args.cv < 2:
            raise InputError(f"--cv needs at least 2 folds, got {args.cv}")
        if np.bincount(data.y).min() < args.cv:
            raise InputError(
                f"--cv {args.cv} needs at least {args.cv} rows of each class; the rarer class "
                f"has {np.bincount(data.y).min()}"
            )
        folds = list(
            StratifiedKFold(args.cv, shuffle=True, random_state=args.seed).split(data.S, data.y)
        )
        evaluation = {"mode": "cv", "folds": args.cv, "n_eval": n}
        eval_index = np.arange(n)
    else:
        try:
            train, test = train_test_split(
                np.arange(n), test_size=args.test_size, random_state=args.seed, stratify=data.y
            )
        except ValueError as exc:
            raise InputError(
                f"cannot split {n} rows with --test-size {args.test_size}: {exc}"
            ) from None
        folds = [(train, test)]
        evaluation = {"mode": "holdout", "test_size": args.test_size, "n_eval": len(test)}
        eval_index = np.sort(test)
    rows, predictions = [], {}
    for method in methods:
        out = np.empty(n)
        seconds = 0.0
        with progress.step(f"{method.name}: fitting on {len(folds)} split(s)"):
            for train, test in folds:
                start = time.perf_counter()
                predict = _fit(method, data.S[train], data.y[train])
                seconds += time.perf_counter() - start
                out[test] = predict(data.S[test])
        proba = out[eval_index]
        predictions[method.name] = proba
        row = {"method": method.name, "input": _input_name(method, data.scores)}
        row.update(_report(data.y[eval_index], proba, args.n_bins))
        row["fit_seconds"] = 0.0 if method.kind == "reference" else seconds / len(folds)
        rows.append(row)
    return rows, evaluation, data.y[eval_index], predictions


# --------------------------------------------------------------------------- output


def _format_value(key: str, value) -> str:
    if isinstance(value, str):
        return value
    if value is None or not math.isfinite(value):
        return "nan"
    return f"{value:.3f}" if key == "fit_seconds" else f"{value:.5f}"


def _table(rows: list[dict], first: Sequence[str] = ("method",)) -> str:
    """A markdown table, columns padded so it also reads well in a terminal."""
    keys = [*first, *_METRICS]
    header = [_HEADERS.get(k, k) for k in keys]
    body = [[_format_value(k, row[k]) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(keys))]

    def line(cells):
        padded = [
            c.ljust(w) if i < len(first) else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(
        "-" * (w + 1) + (":" if i >= len(first) else "-") for i, w in enumerate(widths)
    )
    return "\n".join([line(header), rule + "|", *(line(cells) for cells in body)]) + "\n"


def _csv_text(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    keys = ["method", "input", *_METRICS]
    writer.writerow(keys)
    for row in rows:
        writer.writerow([row[k] if isinstance(row[k], str) else repr(row[k]) for k in keys])
    return buffer.getvalue()


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: same resolved path (symlinks followed),
    or an existing hard link."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_outputs(inputs: Sequence[Path], outputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse, before anything is written, an output that would destroy an input or
    cannot be a file: an input file, a folder, two outputs on one path, a path whose
    nearest existing ancestor is not a folder.

    ``outputs`` pairs what the user gave (``"--onnx x.onnx"``) with the file written.
    """
    seen: list[tuple[str, Path]] = []
    for given, path in outputs:
        for source in inputs:
            if _same_file(path, source):
                raise InputError(f"{given} would overwrite the input file {source}")
        for other, earlier in seen:
            if _same_file(path, earlier):
                raise InputError(f"{given} and {other} would write the same file {path}")
        if path.is_dir():
            raise InputError(f"{given}: {path} is a folder; expected a file path")
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise InputError(f"{given}: {ancestor} is a file, so {path} cannot be created")
        seen.append((given, path))


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it when the block succeeds.

    A reader (a polling server, a user) sees the old file or the whole new one,
    never half of it; the new file has the umask's usual mode. An unwritable place
    is bad input (exit 2).
    """
    from .deploy import _new_file_mode

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
        os.close(fd)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        yield Path(tmp)
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write(path: Path, data: bytes | str) -> None:
    """Write a file whole (see :func:`_atomic_path`), its folder created."""
    with _atomic_path(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)


def _plot_path(text: str, flag: str = "--plot") -> Path:
    """``--plot`` takes the path of a PNG file to write: it must end in .png."""
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{flag} {text} is a folder; give a file name ending in .png")
    if path.suffix.lower() != ".png":
        raise InputError(
            f"{flag} takes the PNG file to write, a name ending in .png; got {text!r}"
        )
    return path


def _save_reliability(path: Path, y, predictions: dict, n_bins: int, title: str, progress):
    """Draw a reliability diagram into ``path``; a notice instead when matplotlib is absent."""
    try:
        from matplotlib.figure import Figure

        from .plotting import reliability_diagram
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "matplotlib"
        progress.note(
            f"no plot written to {path}: {missing} is not available "
            "(pip install 'bernonnx[plot]')",
            always=True,
        )
        return None
    with progress.step(f"drawing {path.name}"):
        # a Figure without pyplot: no GUI backend, no global state
        figure = Figure(figsize=(7.0, 8.0))
        drawn = reliability_diagram(
            y, predictions, n_bins=n_bins, ax=figure.add_subplot(), title=title
        )
        figure = getattr(drawn, "figure", None) or drawn
        with _atomic_path(path) as tmp:
            figure.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return path


# --------------------------------------------------------------------------- commands


def _cmd_compare(args, progress: _Progress) -> int:
    for name in args.method or ():
        _method(name)  # an unknown method fails before the file is read
    plot = _plot_path(args.plot) if args.plot else None
    outputs = [(f"--output {args.output}", Path(args.output))] if args.output else []
    if plot is not None:
        outputs.append((f"--plot {args.plot}", plot))
    _check_outputs([Path(args.csv)], outputs)
    with progress.step(f"reading {args.csv}"):
        data = _load(args, progress)
    methods = _select_methods(args.method, data, progress)
    rows, evaluation, y_eval, predictions = _evaluate(methods, data, args, progress)
    if args.format == "json":
        document = {
            "file": str(data.path),
            "n_rows": int(data.y.shape[0]),
            "n_missing_label": data.n_missing_label,
            "label": data.label,
            "positive_label": data.positive,
            "positive_rate": float(data.y.mean()),
            "scores": data.scores,
            "evaluation": evaluation,
            "n_bins": args.n_bins,
            "seed": args.seed,
            "results": [{k: _json_safe(v) for k, v in row.items()} for row in rows],
        }
        text = json.dumps(document, indent=2) + "\n"
    elif args.format == "csv":
        text = _csv_text(rows)
    else:
        if evaluation["mode"] == "cv":
            how = f"{evaluation['folds']}-fold cross-validated out-of-fold predictions"
        else:
            how = f"held-out {evaluation['n_eval']} rows (test size {args.test_size})"
        text = (
            f"{data.path}: {data.y.shape[0]} rows, positive label {data.positive!r} "
            f"(rate {data.y.mean():.4f}); metrics on {how}; ECE and MCE with "
            f"{args.n_bins} bins; fit s per fit\n\n" + _table(rows, ("method", "input"))
        )
    if args.output:
        _write(Path(args.output), text)
        progress.note(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    if plot is not None:
        _save_reliability(plot, y_eval, predictions, args.n_bins, data.path.name, progress)
    return EXIT_OK


def _triton_files(repository: Path, name: str) -> list[Path]:
    return [repository / name / "config.pbtxt", repository / name / "1" / "model.onnx"]


def _triton_name(name: str, flag: str) -> str:
    from .deploy import _check_model_name

    try:
        _check_model_name(name)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    return name


def _graph_dtype(onx) -> str:
    from onnx import TensorProto

    elem = onx.graph.input[0].type.tensor_type.elem_type
    return "float64" if elem == TensorProto.DOUBLE else "float32"


def _print_parity(parity: dict) -> None:
    from .export import format_parity

    print(format_parity(parity))


def _cmd_export(args, progress: _Progress) -> int:
    from skl2onnx.common.exceptions import MissingShapeCalculator

    from .deploy import to_ort_format, write_triton_repository
    from .export import check_parity, to_onnx

    method = _method(args.method)
    exportable = [m.name for m in _METHOD_LIST if m.exportable]
    if not method.exportable:
        raise InputError(
            f"method {method.name!r} has no ONNX export; choose from {', '.join(exportable)}"
        )
    if args.name and not args.triton:
        raise InputError("--name is the Triton model name: it needs --triton DIR")
    out = Path(args.onnx)
    outputs = [(f"--onnx {args.onnx}", out)]
    name = None
    if args.triton:
        if args.name:
            name = _triton_name(args.name, "--name")
        else:
            name = _triton_name(out.stem, f"the Triton model name (from --onnx {args.onnx})")
        triton = [(f"--triton {args.triton}", p) for p in _triton_files(Path(args.triton), name)]
        outputs += triton
    _check_outputs([Path(args.csv)], outputs)

    with progress.step(f"reading {args.csv}"):
        data = _load(args, progress)
    if method.kind == "1d" and data.S.shape[1] > 1:
        raise InputError(
            f"method {method.name!r} calibrates one score column but {len(data.scores)} were "
            "given; pass one --score, or a multivariate method"
        )
    if method.needs_probabilities:
        _check_probabilities(method, data.S, f"column {data.scores[0]!r}")
    dtype = {"auto": None, "float32": np.float32, "float64": np.float64}[args.dtype]
    calibrator = method.make()
    with progress.step(f"fitting {type(calibrator).__name__} on {data.y.shape[0]} rows"):
        try:
            calibrator.fit(data.S, data.y)
        except ValueError as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise InputError(
                f"method {method.name!r} cannot be fitted on {data.y.shape[0]} rows "
                f"({int(data.y.sum())} positive): {reason}"
            ) from exc
    try:
        with progress.step("converting to ONNX"):
            # every row as the sample: to_onnx checks that the graph's dtype carries them
            onx = to_onnx(calibrator, data.S, dtype=dtype)
    except ValueError as exc:
        if "cannot carry" not in str(exc):
            raise
        raise InputError(
            f"--dtype float32: {exc}".replace("use dtype=np.float64", "use --dtype float64")
        ) from None
    except MissingShapeCalculator:
        raise InputError(
            f"{type(calibrator).__name__} (method {method.name!r}) has no ONNX converter in "
            f"this version of bernonnx; exportable: "
            f"{', '.join(m.name for m in _METHOD_LIST if m.kind == '1d')}"
        ) from None
    with progress.step("checking parity in onnxruntime"):
        # the scores as read (float64): a float32 graph is charged with its rounding
        parity = check_parity(calibrator, onx, data.S)

    with tempfile.TemporaryDirectory(prefix="bernonnx-") as staging:
        ort_files = []
        if args.ort and parity["passed"]:
            staged = Path(staging) / (out.stem + ".onnx")
            staged.write_bytes(onx.SerializeToString())
            with progress.step("converting to the ORT format"):
                paths = to_ort_format(staged, Path(staging) / "ort")
            ort_files = [(paths[key], out.parent / paths[key].name) for key in ("ort", "config")]
            _check_outputs(
                [Path(args.csv)], [*outputs, *((f"--ort {dest}", dest) for _, dest in ort_files)]
            )
        _write(out, onx.SerializeToString())
        graph_input = onx.graph.input[0].name
        print(
            f"wrote {out}: {type(calibrator).__name__} on {', '.join(data.scores)} "
            f"(input {graph_input!r}, shape (N, {data.S.shape[1]}), {_graph_dtype(onx)}; outputs "
            f"'label', 'probabilities'; positive label {data.positive!r} is class 1)"
        )
        _print_parity(parity)
        if not parity["passed"]:
            skipped = [
                flag for flag, given in (("--triton", args.triton), ("--ort", args.ort)) if given
            ]
            progress.note(
                "the graph does not reproduce Python within the tolerance"
                + (f"; not written: {', '.join(skipped)}" if skipped else ""),
                always=True,
            )
            return EXIT_PARITY
        if args.triton:
            folder = write_triton_repository(onx, args.triton, name)
            print(f"wrote the Triton model repository {folder} (config.pbtxt, 1/model.onnx)")
        for source, dest in ort_files:
            _write(dest, source.read_bytes())
        if ort_files:
            print(f"wrote {ort_files[0][1]} and {ort_files[1][1]}")
    return EXIT_OK


def _demo_split(X, y, seed: int, quick: bool):
    from sklearn.model_selection import train_test_split

    if quick:
        # a stratified 6,000-row sample keeps the CI smoke run short
        X, _, y, _ = train_test_split(X, y, train_size=6000, random_state=seed, stratify=y)
    X_fit, X_test, y_fit, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y
    )
    X_train, X_cal, y_train, y_cal = train_test_split(
        X_fit, y_fit, test_size=0.25, random_state=seed, stratify=y_fit
    )
    return X_train, y_train, X_cal, y_cal, X_test, y_test


def _cmd_demo(args, progress: _Progress) -> int:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.frozen import FrozenEstimator
    from threadpoolctl import threadpool_limits

    from .calibration import CalibratedClassifier
    from .datasets import load_credit_default
    from .deploy import write_triton_repository
    from .export import check_parity, to_onnx

    out = Path(args.out)
    outputs = [(f"--out {args.out}", out / "model.onnx")]
    outputs += [
        (f"--out {args.out}", path) for path in _triton_files(out / "triton", "credit_default")
    ]
    if not args.no_plots:
        for filename in ("reliability_bernonnx.png", "reliability_vs_sklearn.png"):
            outputs.append((f"--out {args.out}", out / filename))
    _check_outputs([], outputs)
    with progress.step("loading the UCI credit-card default data (bundled)"):
        X, y, _ = load_credit_default()
        # The graph is float32, so a server hands it float32 features. Python sees the
        # same numbers (cast once, before fitting), and the parity check compares the
        # two on what the graph actually receives.
        X = X.astype(np.float32)
        X_train, y_train, X_cal, y_cal, X_test, y_test = _demo_split(X, y, args.seed, args.quick)
    base = HistGradientBoostingClassifier(
        max_iter=30 if args.quick else 100, random_state=args.seed
    )
    with progress.step(f"training HistGradientBoostingClassifier on {len(y_train)} rows"):
        # one OpenMP thread: on 18,000 rows the threads' synchronisation costs more than
        # it saves, and on a busy machine it slowed this fit from 0.5 s to 40 s
        with threadpool_limits(limits=1, user_api="openmp"):
            base.fit(X_train, y_train)
    frozen = FrozenEstimator(base)
    models = {"uncalibrated": (base, 0.0)}
    candidates = {
        name: CalibratedClassifier(
            frozen, calibrator=_METHODS[name].make(), response_method="predict_proba"
        )
        for name in _DEMO_CALIBRATORS
    }
    candidates["sklearn-sigmoid"] = CalibratedClassifierCV(frozen, method="sigmoid")
    candidates["sklearn-isotonic"] = CalibratedClassifierCV(frozen, method="isotonic")
    for name, model in candidates.items():
        with progress.step(f"calibrating: {name} on {len(y_cal)} rows"):
            start = time.perf_counter()
            model.fit(X_cal, y_cal)
            models[name] = (model, time.perf_counter() - start)
    predictions, rows = {}, []
    for name, (model, seconds) in models.items():
        predictions[name] = model.predict_proba(X_test)[:, 1]
        rows.append(
            {"method": name, **_report(y_test, predictions[name], 10), "fit_seconds": seconds}
        )

    print(
        f"UCI credit-card default (CC BY 4.0): {len(y_train)} train, {len(y_cal)} calibration, "
        f"{len(y_test)} test rows; HistGradientBoostingClassifier probabilities calibrated "
        f"on the calibration rows; metrics on the test rows (ECE, MCE: 10 bins)\n"
    )
    print(_table(rows))
    best = min(_DEMO_CALIBRATORS, key=lambda name: rows[list(models).index(name)]["log_loss"])
    best_loss = rows[list(models).index(best)]["log_loss"]
    print(f"best bernonnx calibrator by test log loss: {best} ({best_loss:.5f})")

    if not args.no_plots:
        ours = {"uncalibrated": predictions["uncalibrated"]}
        ours.update({name: predictions[name] for name in _DEMO_CALIBRATORS})
        versus = {
            name: predictions[name]
            for name in ("uncalibrated", "sklearn-sigmoid", "sklearn-isotonic", best)
        }
        for filename, curves, title in (
            ("reliability_bernonnx.png", ours, "bernonnx calibrators, test rows"),
            ("reliability_vs_sklearn.png", versus, f"{best} vs scikit-learn, test rows"),
        ):
            written = _save_reliability(out / filename, y_test, curves, 10, title, progress)
            if written is not None:
                print(f"wrote {written}")

    model = models[best][0]
    with progress.step(f"exporting {best} (HistGradientBoosting + calibrator) to ONNX"):
        onx = to_onnx(model, X_test[:1])
    with progress.step("checking parity in onnxruntime"):
        parity = check_parity(model, onx, X_test)
    path = out / "model.onnx"
    _write(path, onx.SerializeToString())
    _print_parity(parity)
    if not parity["passed"]:
        progress.note(
            f"wrote {path}, but the graph does not reproduce Python within the tolerance; "
            "no Triton repository written",
            always=True,
        )
        return EXIT_PARITY
    folder = write_triton_repository(onx, out / "triton", "credit_default")
    print(f"wrote {path} and the Triton model repository {folder}")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as :class:`InputError` (one line, exit 2)."""

    def error(self, message: str):
        raise InputError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {value}")
    return value


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("csv", metavar="SCORES.csv", help="CSV file with a header row (.gz too)")
    parser.add_argument("--label", required=True, metavar="COL", help="the label column")
    parser.add_argument(
        "--score",
        required=True,
        action="append",
        metavar="COL",
        help="a score column, higher meaning more positive (repeat for several)",
    )
    parser.add_argument(
        "--pos-label",
        metavar="V",
        help="the positive label (default: the larger of two numeric labels); with more "
        "than two label values, V is calibrated against the rest",
    )
    parser.add_argument(
        "--delimiter", default=",", metavar="C", help="field delimiter (default: ',')"
    )


def _build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="bernonnx",
        description="Monotone probability calibration of classifier scores, compared, "
        "exported to ONNX and laid out for Triton.",
        epilog=_EXIT_HELP,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"bernonnx {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", help="show the traceback of unexpected failures"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="the whole job on bundled data: train, calibrate, compare, plot, export",
        description="Train a HistGradientBoostingClassifier on the UCI credit-card default "
        "data (30,000 rows, shipped inside the package, licensed CC BY 4.0: I-C. Yeh, UCI "
        "Machine Learning Repository; no download), split train / calibration / test "
        "60/20/20 stratified; calibrate its probabilities with every bernonnx calibrator "
        "(CalibratedClassifier on the frozen model) and with scikit-learn's sigmoid and "
        "isotonic CalibratedClassifierCV; print ECE, MCE, Brier, log loss, AUC and fit "
        "time on the test rows; draw reliability diagrams; export the calibrator with the "
        "best test log loss, with the model, as one ONNX graph, check it in onnxruntime "
        "and write a Triton model repository.",
        epilog=_EXIT_HELP,
        formatter_class=formatter,
    )
    demo.add_argument(
        "--out",
        default="bernonnx-demo",
        metavar="DIR",
        help="folder for the PNGs, model.onnx and triton/ (default: ./bernonnx-demo)",
    )
    demo.add_argument(
        "--quick", action="store_true", help="6,000-row sample and a smaller model (CI smoke)"
    )
    demo.add_argument("--no-plots", action="store_true", help="skip the reliability diagrams")
    demo.add_argument("--seed", type=int, default=0, help="split and model seed (default: 0)")

    compare = commands.add_parser(
        "compare",
        help="compare calibrators on your own scores (CSV)",
        description="Fit calibrators on scores from a CSV file and compare them on held-out "
        "rows (default) or by K-fold cross-validated out-of-fold predictions. With one "
        "--score column the one-score calibrators run on it; with several, "
        "'multivariate' fuses the score matrix and the one-score calibrators run on the "
        "row mean. Default methods: all but multivariate-log (slow); the ones taking "
        "probabilities are skipped when the scores are not in [0, 1].",
        epilog=_methods_help() + "\n" + _EXIT_HELP,
        formatter_class=formatter,
    )
    _add_data_arguments(compare)
    compare.add_argument(
        "--method",
        action="append",
        metavar="M",
        help="a method to compare (repeat for several; default: all that apply)",
    )
    split = compare.add_mutually_exclusive_group()
    split.add_argument(
        "--test-size",
        type=_fraction,
        default=0.3,
        metavar="F",
        help="held-out fraction, stratified (default: 0.3)",
    )
    split.add_argument(
        "--cv",
        type=_positive_int,
        metavar="K",
        help="K-fold cross-validation (K >= 2) instead of one held-out split",
    )
    compare.add_argument("--seed", type=int, default=0, help="split seed (default: 0)")
    compare.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="output format"
    )
    compare.add_argument("--output", metavar="FILE", help="write there instead of stdout")
    compare.add_argument(
        "--plot",
        metavar="FILE.png",
        help="write a reliability diagram of all methods to this PNG file (the name must "
        "end in .png; a folder is refused)",
    )
    compare.add_argument(
        "--n-bins", type=_positive_int, default=10, metavar="N", help="bins of ECE/MCE/plot"
    )

    export = commands.add_parser(
        "export",
        help="fit one calibrator on a CSV of scores and write its ONNX graph",
        description="Fit one calibrator on all rows of a CSV file and write its ONNX graph "
        "(input: the raw score(s), shape (N, n_scores); outputs 'label' and "
        "'probabilities'). Parity with Python is checked in onnxruntime on the file's "
        "scores as read (Python on them as they are, the graph on them cast to --dtype) "
        "and printed; when a row's probability differs by more than 1e-6 (float32) or "
        "1e-9 (float64), or a label differs, the command exits 3 and writes only the "
        ".onnx file. Rows whose label is empty or NA are dropped and counted. "
        "Optionally writes a Triton model repository and the ORT "
        "format for onnxruntime-mobile.",
        epilog=_methods_help() + "\n" + _EXIT_HELP,
        formatter_class=formatter,
    )
    _add_data_arguments(export)
    export.add_argument("--method", required=True, metavar="M", help="the calibrator to fit")
    export.add_argument("--onnx", required=True, metavar="OUT.onnx", help="ONNX file to write")
    export.add_argument(
        "--dtype",
        choices=("auto", "float32", "float64"),
        default="auto",
        help="graph input and output type (default: auto, float32 unless float32 cannot carry "
        "the scores, then float64; float32 is then refused with exit 2)",
    )
    export.add_argument("--triton", metavar="DIR", help="also write a Triton model repository")
    export.add_argument(
        "--name", metavar="NAME", help="Triton model name (default: the ONNX file's stem)"
    )
    export.add_argument(
        "--ort", action="store_true", help="also write the ORT format next to the ONNX file"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bernonnx`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, default=None
        The arguments after the program name; ``sys.argv[1:]`` if None.

    Returns
    -------
    status : int
        :data:`EXIT_OK` (0) on success, :data:`EXIT_USAGE` (2) for bad usage or bad
        input, :data:`EXIT_FAILURE` (1) for anything unexpected. Errors are printed to
        standard error as one line starting ``bernonnx: error:``.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import numpy as np
    >>> from bernonnx.cli import main
    >>> rng = np.random.default_rng(0)
    >>> score = rng.normal(size=400)
    >>> label = rng.random(400) < 1 / (1 + np.exp(-2 * score))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data, result = os.path.join(tmp, "s.csv"), os.path.join(tmp, "r.json")
    ...     np.savetxt(data, np.c_[label, score], delimiter=",", header="y,s", comments="")
    ...     status = main(["-q", "compare", data, "--label", "y", "--score", "s",
    ...                    "--method", "platt", "--method", "isotonic",
    ...                    "--format", "json", "--output", result])
    ...     report = json.load(open(result))
    >>> status, [row["method"] for row in report["results"]]
    (0, ['platt', 'isotonic'])
    >>> main(["-q", "compare", "no-such-file.csv", "--label", "y", "--score", "s"])
    2
    """
    parser = _build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        progress = _Progress(quiet=args.quiet)
        command = {"demo": _cmd_demo, "compare": _cmd_compare, "export": _cmd_export}
        return command[args.command](args, progress)
    except InputError as exc:
        print(f"bernonnx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("bernonnx: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except Exception as exc:
        if args is not None and args.traceback:
            traceback.print_exc()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(
            f"bernonnx: error: unexpected {type(exc).__name__}: {message} "
            "(rerun as 'bernonnx --traceback ...' to see where)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
