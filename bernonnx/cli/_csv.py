"""Reading a CSV of labels and scores, checked cell by cell, and the label rules.

Parquet files are read by :mod:`._stream`, with the same label rules (:func:`_binary_rule`);
:func:`bernonnx.cli._files._load` chooses between the two for every command.
"""

from __future__ import annotations

import csv
import gzip
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._base import InputError, _Progress


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
#: label values a label column may hold (more: it is not a label column)
MAX_LABELS = 1000


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


def _label_number(value) -> float | None:
    """A label's value as a number (numbers, and text that reads as one), else None."""
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    return _as_number(str(value))


def _binary_rule(distinct, column: str, pos_label: str | None) -> tuple[list, str]:
    """The label values that are class 1, and the positive label as text.

    ``distinct``: the label values present (text from a CSV; numbers, booleans or
    text from Parquet). Labels that are all numbers are compared as numbers ("1" and
    "1.0" are one class). Without ``pos_label`` the column must hold exactly two
    values and, when they are numbers, the larger one is positive (0/1, -1/1, 1/2);
    text labels need ``--pos-label``. With ``pos_label`` that value is calibrated
    against all others.
    """
    texts = sorted(set(distinct), key=lambda v: (str(type(v)), v))
    numbers = {text: _label_number(text) for text in texts}
    numeric = None not in numbers.values()
    # one representative value per class, and each value's class key
    key = (lambda text: numbers[text]) if numeric else (lambda text: str(text))
    classes = {}
    for text in texts:
        classes.setdefault(key(text), text)
    values = [str(classes[k]) for k in sorted(classes)]
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
        target = max(classes)
    else:
        wanted = pos_label.strip()
        target = _as_number(wanted) if numeric else wanted
        if target is None and all(isinstance(v, (bool, np.bool_)) for v in texts):
            # a boolean column (Parquet): --pos-label True / False, as it prints them
            target = {"true": 1.0, "false": 0.0}.get(wanted.lower())
        if target not in classes:
            raise InputError(
                f"--pos-label {pos_label!r} is not a value of column {column!r} "
                f"(values: {_choices(values)})"
            )
        if len(values) < 2:
            raise InputError(
                f"label column {column!r} holds only {values[0]!r}: calibration needs both "
                "positive and negative rows"
            )
    return [text for text in texts if key(text) == target], str(classes[target])


def _binary_target(labels, column: str, pos_label: str | None):
    """0/1 targets and the positive label's text (see :func:`_binary_rule`).

    ``labels``: a CSV's label texts (a list), or a Parquet column's values (an array).
    """
    if isinstance(labels, np.ndarray):
        distinct = np.unique(labels)
        if distinct.shape[0] > MAX_LABELS:
            raise InputError(f"label column {column!r} has over {MAX_LABELS} distinct values")
        values = [v.item() if hasattr(v, "item") else v for v in distinct]
        positives, positive = _binary_rule(values, column, pos_label)
        y = np.isin(labels, np.asarray(positives, dtype=labels.dtype)).astype(np.int64)
        return y, positive
    positives, positive = _binary_rule(labels, column, pos_label)
    wanted = set(positives)
    y = np.fromiter((text in wanted for text in labels), dtype=np.int64, count=len(labels))
    return y, positive


def _note_missing(progress: _Progress, n_missing: int, label: str, remain: int) -> None:
    if n_missing:
        progress.note(
            f"dropped {n_missing:,} row{'' if n_missing == 1 else 's'} with a missing label "
            f"(empty, NA, NaN, null, ...) in column {label!r}; {remain:,} rows remain",
            always=True,
        )


@dataclass
class _Data:
    path: Path
    label: str
    scores: list[str]
    y: np.ndarray
    S: np.ndarray
    positive: str
    n_missing_label: int = 0
