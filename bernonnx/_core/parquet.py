"""A Parquet file as a fit's :class:`~bernonnx._core.chunks.Source`: passes over its row batches.

Each :meth:`ParquetSource.reduce` reads the file once, in batches of
``batch_rows`` rows and only the columns it needs (pyarrow's
``ParquetFile.iter_batches``), so memory is bounded by a batch and a row
group whatever the file's size. ``pip install "bernonnx[parquet]"`` brings
pyarrow; it is imported on first use.

Rows without a label (null, NaN, or text such as ``""``, ``NA``, ``null``)
are dropped, as the command line drops them from a CSV. A row's *position*
is its index among the remaining rows: what ``fold_of`` and the command
line's held-out split hash. A ``keep`` rule selects rows by position, and
the kept rows are numbered again from 0 in the chunks' ``start``, so a fit
on them equals the in-memory fit of ``X[keep]``, folds included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .chunks import Chunk, add_all

#: Rows per batch read from the file.
BATCH_ROWS = 1 << 20

#: Label text meaning "no label" (trimmed, lower case), as in the command line's CSV reader.
MISSING_LABELS = ("", "na", "n/a", "nan", "null", "none", "?")


def require_pyarrow():
    """``(pyarrow, pyarrow.parquet, pyarrow.compute)``; an ImportError naming the extra."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            'reading Parquet files needs pyarrow: pip install "bernonnx[parquet]"'
        ) from exc
    return pa, pq, pc


def _decoded(column):
    """A dictionary-encoded Arrow column (pandas' categoricals, Spark's and DuckDB's
    string columns often) as plain values: label rules and ``is_in`` read those."""
    pa, _, _ = require_pyarrow()
    if pa.types.is_dictionary(column.type):
        return column.dictionary_decode()
    return column


class PassProgress(NamedTuple):
    """What a progress callback receives after every batch of a pass."""

    #: 1 for the first pass over the file
    pass_number: int
    #: rows of the file read so far in this pass
    rows: int
    #: rows in the file
    total: int
    seconds: float
    done: bool


@dataclass
class ParquetSource:
    """The rows of a Parquet file as a ``_passes.Source``.

    Parameters
    ----------
    path : str or Path
        The Parquet file.
    score : str or sequence of str
        The score column; with several, each row's score is their mean.
    label : str
        The label column.
    weight : str, default=None
        A sample-weight column.
    positive : sequence, default=None
        Label values meaning class 1: the chunks' ``y`` is then 0/1 (int64);
        ``None`` leaves the labels as stored.
    keep : callable, default=None
        ``keep(positions) -> bool mask``: the rows to read, by position.
    batch_rows : int, default=BATCH_ROWS
    progress : callable, default=None
        Called with a :class:`PassProgress` after every batch.

    Raises
    ------
    ValueError
        From ``reduce``: a missing column, a null or non-finite score, a
        negative or non-finite weight, naming the column and the file row.
    """

    path: object
    score: str | Sequence[str]
    label: str
    weight: str | None = None
    positive: Sequence | None = None
    keep: Callable[[np.ndarray], np.ndarray] | None = None
    batch_rows: int = BATCH_ROWS
    progress: Callable[[PassProgress], None] | None = None
    passes: int = field(default=0, init=False)

    @property
    def scores(self) -> list[str]:
        return [self.score] if isinstance(self.score, str) else list(self.score)

    def num_rows(self) -> int:
        """Rows in the file (with or without a label), from its footer."""
        _, pq, _ = require_pyarrow()
        return pq.ParquetFile(self.path).metadata.num_rows

    def columns(self) -> list[str]:
        _, pq, _ = require_pyarrow()
        return list(pq.ParquetFile(self.path).schema_arrow.names)

    def _batches(self):
        _, pq, _ = require_pyarrow()
        wanted = [*self.scores, self.label] + ([self.weight] if self.weight else [])
        names = self.columns()
        for column in wanted:
            if column not in names:
                raise ValueError(
                    f"column {column!r} is not in {self.path}; available columns: "
                    f"{', '.join(repr(n) for n in names[:40])}"
                )
        if len(set(wanted)) != len(wanted):
            raise ValueError(f"a column is named twice among score, label and weight: {wanted}")
        handle = pq.ParquetFile(self.path)
        return handle.iter_batches(batch_size=self.batch_rows, columns=wanted)

    def _labelled(self, labels) -> np.ndarray:
        """Mask of the rows of an Arrow label array that hold a label."""
        pa, _, pc = require_pyarrow()
        present = pc.is_valid(labels)
        if pa.types.is_floating(labels.type):
            present = pc.and_(present, pc.invert(pc.is_nan(labels)))
        elif pa.types.is_string(labels.type) or pa.types.is_large_string(labels.type):
            text = pc.utf8_lower(pc.utf8_trim_whitespace(labels))
            missing = pc.is_in(text, value_set=pa.array(MISSING_LABELS, type=labels.type))
            present = pc.and_(present, pc.invert(missing))
        return present.to_numpy(zero_copy_only=False).astype(bool, copy=False)

    def _numbers(self, column, present, name: str, first_row: int, what: str) -> np.ndarray:
        """The labelled rows of a numeric column as float64, checked."""
        rows = np.flatnonzero(present)
        if column.null_count:
            null = column.is_null().to_numpy(zero_copy_only=False)[rows]
            if null.any():
                bad = int(rows[np.argmax(null)])
                raise ValueError(
                    f"{what} column {name!r} is empty (null) at row {first_row + bad + 1}"
                )
            column = column.fill_null(0)
        values = column.to_numpy(zero_copy_only=False)
        if values.dtype.kind not in "biuf":
            raise ValueError(f"{what} column {name!r} is not numeric: it holds {column.type}")
        values = values[rows].astype(np.float64, copy=False)
        finite = np.isfinite(values)
        if not finite.all():
            bad = int(np.argmin(finite))
            raise ValueError(
                f"{what} column {name!r} holds {values[bad]!r} at row "
                f"{first_row + int(rows[bad]) + 1}: {what}s must be finite numbers "
                "(no NaN or inf)"
            )
        return values

    def _rows(self):
        """Per batch: the labelled rows' score columns, labels (Arrow), weights, and
        the rows of the file read so far; one pass, progress reported."""
        pa, _, _ = require_pyarrow()
        self.passes += 1
        total = self.num_rows() if self.progress else 0
        started = time.perf_counter()
        file_row = 0
        for batch in self._batches():
            labels = _decoded(batch.column(self.label))
            present = self._labelled(labels)
            scores = [
                self._numbers(_decoded(batch.column(c)), present, c, file_row, "score")
                for c in self.scores
            ]
            w = None
            if self.weight:
                column = _decoded(batch.column(self.weight))
                w = self._numbers(column, present, self.weight, file_row, "weight")
                if (w < 0).any():
                    raise ValueError(f"weight column {self.weight!r} has negative values")
            file_row += batch.num_rows
            yield scores, labels.filter(pa.array(present)), w
            if self.progress:
                seconds = time.perf_counter() - started
                self.progress(PassProgress(self.passes, file_row, total, seconds, False))
        if self.progress:
            seconds = time.perf_counter() - started
            self.progress(PassProgress(self.passes, file_row, total, seconds, True))

    def _target(self, labels) -> np.ndarray:
        if self.positive is None:
            return labels.to_numpy(zero_copy_only=False)
        pa, _, pc = require_pyarrow()
        value_set = pa.array(list(self.positive), type=labels.type)
        return (
            pc.is_in(labels, value_set=value_set).to_numpy(zero_copy_only=False).astype(np.int64)
        )

    def chunks(self) -> Iterator[Chunk]:
        """The file's chunks, one per batch, in order; one pass."""
        position = kept = 0
        for scores, labels, w in self._rows():
            s = scores[0] if len(scores) == 1 else np.column_stack(scores).mean(axis=1)
            y = self._target(labels)
            m = s.shape[0]
            if self.keep is not None:
                mask = np.asarray(self.keep(np.arange(position, position + m)), dtype=bool)
                s, y = s[mask], y[mask]
                w = None if w is None else w[mask]
            position += m
            if s.shape[0]:
                yield Chunk(s, y, w, kept)
            kept += s.shape[0]

    def read(self):
        """All the labelled rows in memory: ``(S, y, w)``, ``S`` of shape
        ``(n, n_scores)`` (no row mean), ``y`` as :attr:`positive` says; ``keep``
        is not applied."""
        parts = [(np.column_stack(s), self._target(y), w) for s, y, w in self._rows()]
        if not parts:
            return np.empty((0, len(self.scores))), np.empty(0), None
        S = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        w = None if self.weight is None else np.concatenate([p[2] for p in parts])
        return S, y, w

    def reduce(self, fn):
        """``fn`` of every chunk, added in file order, pairwise (``_passes.add_all``)."""
        return add_all(fn(chunk) for chunk in self.chunks())
