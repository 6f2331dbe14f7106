"""Mergeable statistics of calibration data: streaming ``partial_fit`` and fits in pieces.

A statistics object summarises ``(score, label, weight)`` rows seen so far in
bounded (Bernstein) or distinct-score (the baselines) memory. It is updated
chunk by chunk (:meth:`~CalibrationStats.update`), merged (``a + b`` or
:meth:`~CalibrationStats.merge`: the rows of ``a``, then those of ``b``),
saved (:meth:`~CalibrationStats.to_bytes`, :meth:`~CalibrationStats.from_bytes`:
numpy arrays and JSON, no pickle) and turned into a fitted calibrator
(:meth:`~CalibrationStats.fit`). ``partial_fit`` of the calibrators keeps one
in ``stats_`` and only updates it; the fit from it happens once, on first use
after an update (:class:`bernonnx._base.PartialFitMixin`).

:func:`stats_for` gives the statistics of a calibrator:

:class:`BernsteinStats` (:class:`~bernonnx.BernsteinCalibrator`)
    Keeps the rows themselves up to :data:`BUFFER_ROWS` rows: until then its
    fit *is* the in-memory fit of the rows seen. Past that, it keeps key bins
    of the raw scores (:class:`bernonnx._core.keybins.KeyBins`): bins of the
    order-preserving integer keys of the scores, one per distinct score until
    more than :data:`~bernonnx._core.keybins.MAX_BINS` (``2^17``) are occupied, then
    the fewest leading bits that keep them within it; per bin, the weight of
    each class (per fold for a degree search), each class's sum of the scores'
    offsets in the bin, and the bin's smallest and largest score. Nothing in
    them depends on a transform, and they are a function of the rows, not of
    their order, chunks or merges (up to the rounding of sums). The fit
    chooses the transform from them as ``fit`` does (the exact range; the
    quantiles exact in a bin of one distinct score, else interpolated inside
    the bin), then fits each bin and class as one point at its mean score.
    Memory: at most ``2^17`` bins of 56 bytes (one degree) or ``16 + 8 (2 *
    n_folds + 3)`` bytes (a degree search: 15.7 MB at 5 folds), whatever the
    rows.

    Precision, past the buffer: while the distinct scores fit in the bins, the
    fit is ``fit``'s to rounding (1e-15 measured on real scores streamed
    sorted). Beyond, a bin spans ``2^(shift - 52)`` of its scores' magnitude
    and the gap to ``fit`` comes from the quantiles interpolated inside a bin
    and, to second order, from a bin's mean standing for its rows; measured
    on 2e6 rows at degree 12 (shift 40, 80,550 bins), shuffled or drifting
    (first half N(0, 1), second N(1, 1.5^2)): at most 5.8e-7 with the logistic
    transform and 5.3e-6 with the quantile one, both losses. The degree search
    sees each fold's weight per bin at the bin's mean: the same folds as
    ``fit`` at one bin per distinct score, an approximation of them beyond.

:class:`ScoreStats` (Platt, isotonic, histogram, Platt-histogram)
    The distinct scores with the weight of each class (as Spark MLlib's
    isotonic regression groups them): the fit is the in-memory fit, exactly
    (weights equal repetition). Memory grows with the number of distinct
    scores, not rows: bounded for tree models and rounded scores, up to the
    rows for continuous ones. (Their fits on Dask, Spark and Parquet sources
    need no such table for Platt: it reads the data in passes.)

Row positions: rows are numbered in the order they arrive; the folds of the
degree search are a hash of that number (:func:`bernonnx._core.points.fold_of`),
as in ``fit``.

Saved statistics are data, never code: :meth:`CalibrationStats.from_bytes`
looks the calibrator up among the registry's entries with statistics and
checks every field and array before reading it (see there).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from ._blob import BlobError, read, show, write
from ._blob_header import FORMAT_VERSION, bad, integer, open_header, params_of, stats_header
from ._core.keybins import MAX_BINS, KeyBins
from ._core.points import fold_of
from ._core.quantiles import float_keys
from ._core.sources import ScoreTable, chunk_arrays
from ._registry import CALIBRATORS, entry_for, resolve
from ._validation import check_classes, float_scores, label_array, labels_against

__all__ = [
    "BUFFER_ROWS",
    "FORMAT_VERSION",
    "BernsteinStats",
    "CalibrationStats",
    "ScoreStats",
    "stats_for",
]

#: Rows a :class:`BernsteinStats` keeps as they are before it fixes its transform.
BUFFER_ROWS = 1 << 20
#: Rows that wait, once the transform is fixed, to be binned together (a stream of
#: single rows would otherwise pay the binning's fixed cost per row).
PENDING_ROWS = 1 << 16


class CalibrationStats:
    """Base class: what :class:`BernsteinStats` and :class:`ScoreStats` share."""

    def __init__(self, calibrator, classes):
        self.calibrator = clone(calibrator)
        self.classes = np.asarray(classes)
        self.rows = 0

    def update(self, scores, y, sample_weight=None):
        """Add rows (1-D scores or one column, labels among ``classes``); returns self."""
        w = None if sample_weight is None else float_scores(sample_weight, "sample_weight")
        chunk = chunk_arrays(float_scores(scores), label_array(y, "y"), w, self.rows)
        self._update(chunk.s, labels_against(chunk.y, self.classes), chunk.w, self.rows)
        self.rows += chunk.s.shape[0]
        return self

    def __add__(self, other: CalibrationStats) -> CalibrationStats:
        return self.merge(other)

    def merge(self, other: CalibrationStats) -> CalibrationStats:
        """Statistics of this object's rows followed by ``other``'s (a new object)."""
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(self).__name__} with {type(other).__name__}")
        if (
            type(self.calibrator) is not type(other.calibrator)
            or params_of(self.calibrator) != params_of(other.calibrator)
            or not np.array_equal(self.classes, other.classes)
        ):
            raise ValueError("merged statistics must come from the same calibrator and classes")
        return self._merge(other)

    def class_weights(self) -> tuple[float, float]:
        """Total weight of the negative and of the positive class so far."""
        raise NotImplementedError

    def fit(self):
        """A fitted calibrator (a clone of the template) from the statistics."""
        if self.rows == 0:
            raise ValueError("the statistics hold no rows yet: update them first")
        negative, positive = self.class_weights()
        if not (negative > 0 and positive > 0):
            raise ValueError(one_class_message(self, negative, positive))
        return self._fit(clone(self.calibrator))

    # ------------------------------------------------------------ serialisation

    def to_bytes(self) -> bytes:
        """Serialised statistics: a zip of ``.npy`` arrays and a JSON header, no pickle.

        The header names the format version (:data:`FORMAT_VERSION`), the
        calibrator (its registry name and parameters), the classes and the shape
        of every array; :meth:`from_bytes` checks all of it before reading them.
        The bytes are deterministic: equal statistics give equal blobs.
        """
        return write(stats_header(self), self._arrays())

    @staticmethod
    def from_bytes(blob: bytes) -> CalibrationStats:
        """Statistics saved by :meth:`to_bytes`; anything else raises one ``ValueError``.

        The blob is data, never code: the calibrator it names is looked up among
        the registry's calibrators with streaming statistics
        (:data:`bernonnx._registry.CALIBRATORS`), its parameters must be the
        class's own (JSON numbers, strings, lists) and pass the estimator's
        validation. The header is checked (format version, kind against the
        calibrator's family, the two classes in sorted order, integers in range,
        finite numbers), every array's ``.npy`` header against the shape the
        header implies, and the blob may not expand beyond a cap (64 MB, or 64
        times its size) before any array is read; then the values (finite,
        non-negative weights, 0/1 targets, increasing knots).
        """
        opened = []

        def declared(header):
            stats, shapes = open_header(header)
            opened.append(stats)
            return shapes

        header, arrays = read(blob, declared)
        stats = opened[0]
        for name, value in arrays.items():
            if not np.isfinite(value).all():
                raise BlobError(f"statistics blob: array {name} holds NaN or infinity")
        stats._check_arrays(arrays)
        stats._restore(header, arrays)
        return stats


def one_class_message(stats, negative, positive) -> str:
    name = type(stats.calibrator).__name__
    if negative > 0 or positive > 0:
        seen = stats.classes.tolist()[1 if positive > 0 else 0]
        what = f"positive weight for class {seen!r} only"
    else:
        what = "no row with positive sample_weight"
    return (
        f"{name} needs both classes {stats.classes.tolist()!r} with positive weight; "
        f"the {stats.rows} rows seen so far have {what}"
    )


class ScoreStats(CalibrationStats):
    """Distinct scores and class weights (:class:`bernonnx._core.sources.ScoreTable`); exact."""

    HEADER_KEYS: frozenset = frozenset()

    def __init__(self, calibrator, classes):
        super().__init__(calibrator, classes)
        self._table = ScoreTable(np.empty(0), np.empty(0), np.empty(0))
        self._pending: list[tuple] = []  # (s, target, w) chunks not yet in the table
        self._pending_rows = 0

    @property
    def table(self) -> ScoreTable:
        """The distinct scores so far (chunks waiting to be grouped are added first)."""
        if self._pending:
            s, target, w = (np.concatenate(parts) for parts in zip(*self._pending, strict=True))
            self._table = self._table + ScoreTable.of_rows(s, target, w)
            self._pending, self._pending_rows = [], 0
        return self._table

    @table.setter
    def table(self, value: ScoreTable):
        self._table, self._pending, self._pending_rows = value, [], 0

    def _update(self, s, target, w, start):
        # grouping is a sort: chunks wait until they hold as many rows as the table
        # (and 4,096 at least), so a stream of small chunks costs O(n log n), not O(n^2)
        self._pending.append((s, target, np.ones(s.shape[0]) if w is None else w))
        self._pending_rows += s.shape[0]
        if self._pending_rows >= max(self._table.s.shape[0], 4096):
            self.table  # noqa: B018 - groups the waiting chunks

    def class_weights(self):
        table = self.table
        return float(table.w0.sum()), float(table.w1.sum())

    def _merge(self, other):
        out = ScoreStats(self.calibrator, self.classes)
        out.table, out.rows = self.table + other.table, self.rows + other.rows
        return out

    def _header(self):
        return {}

    def _arrays(self):
        table = self.table
        return {"s": table.s, "w0": table.w0, "w1": table.w1}

    def _declared(self, header, declared):
        n = declared.get("s", [0])[0] if isinstance(declared.get("s"), list) else 0
        if n > self.rows:
            bad(f"{n} distinct scores from {self.rows} rows")
        return {"s": (n,), "w0": (n,), "w1": (n,)}

    def _check_arrays(self, arrays):
        if (np.diff(arrays["s"]) <= 0).any():
            raise BlobError("statistics blob: the distinct scores s are not increasing")
        if (arrays["w0"] < 0).any() or (arrays["w1"] < 0).any():
            raise BlobError("statistics blob: negative class weights w0 or w1")

    def _restore(self, header, arrays):
        self.table = ScoreTable(arrays["s"], arrays["w0"], arrays["w1"])

    def _fit(self, est):
        s, target, w = self.table.rows()
        return est.fit(s, self.classes[target.astype(np.intp)], w)


class BernsteinStats(CalibrationStats):
    """Statistics of :class:`~bernonnx.BernsteinCalibrator`: see the module docstring."""

    HEADER_KEYS = frozenset({"binned", "shift", "kept"})

    def __init__(self, calibrator, classes):
        super().__init__(calibrator, classes)
        self.buffer: list[tuple] = []  # (s, target, w) chunks, all rows (positions)
        self.buffered = 0
        self._binned: KeyBins | None = None  # past the buffer
        self.kept = 0  # rows of positive weight in the bins
        self._pending: list[tuple] = []  # (s, target, w, start) chunks waiting for bins
        self._pending_rows = 0

    @property
    def binned(self) -> dict | None:
        """The bins once the transform is fixed (None while the rows are buffered)."""
        if self._pending:
            parts = self._pending
            self._pending, self._pending_rows = [], 0
            s, target, w = (np.concatenate(p) for p in zip(*(c[:3] for c in parts), strict=True))
            self._bin(s, target, w, parts[0][3])
        return self._binned

    # ---------------------------------------------------------------- updates

    def _update(self, s, target, w, start):
        # copies: the caller's arrays may change after the update
        s, target = np.array(s), np.array(target)
        w = np.ones(s.shape[0]) if w is None else np.array(w)
        if self._binned is None:
            self.buffer.append((s, target, w))
            self.buffered += s.shape[0]
            # chunks of similar size are joined (sizes halve along the list): a stream
            # of single rows keeps O(log n) arrays and copies each row O(log n) times
            while len(self.buffer) > 1 and _rows(self.buffer[-2]) <= 2 * _rows(self.buffer[-1]):
                last, before = self.buffer.pop(), self.buffer.pop()
                self.buffer.append(
                    tuple(np.concatenate(p) for p in zip(before, last, strict=True))
                )
            if self.buffered > BUFFER_ROWS:
                self._start_bins()
            return
        self._pending.append((s, target, w, start))
        self._pending_rows += s.shape[0]
        if self._pending_rows >= PENDING_ROWS:
            self.binned  # noqa: B018 - bins the waiting chunks

    def _buffer_rows(self):
        if not self.buffer:
            return np.empty(0), np.empty(0), np.empty(0)
        return tuple(np.concatenate(parts) for parts in zip(*self.buffer, strict=True))

    def class_weights(self):
        b = self.binned
        if b is None:
            _, target, w = self._buffer_rows()
            positive = float(w @ target)
            return float(w.sum()) - positive, positive
        total = b.wt.sum(axis=(0, 1))
        return float(total[0]), float(total[1])

    def _search_folds(self) -> int:
        """Folds the bins keep apart: those of the degree search, 1 for one degree."""
        cal = self.calibrator
        return int(cal.n_folds) if len(cal._candidate_degrees()) > 1 else 1

    def _start_bins(self):
        """Empty bins (:class:`~bernonnx._core.keybins.KeyBins`); the buffer goes in them."""
        s, target, w = self._buffer_rows()
        self._binned = KeyBins(self._search_folds())
        self.kept = 0
        self.buffer, self.buffered = [], 0
        self._bin(s, target, w, 0)

    def _bin(self, s, target, w, start):
        folds = self._binned.n_folds
        keep = w > 0
        fold = fold_of(start, s.shape[0], folds)[keep]
        self._binned.add_rows(s[keep], target[keep], w[keep], fold)
        self.kept += int(keep.sum())

    # ------------------------------------------------------------ merge, save

    def _merge(self, other):
        out = BernsteinStats(self.calibrator, self.classes)
        out.rows = self.rows
        out.buffer, out.buffered = list(self.buffer), self.buffered
        mine, theirs = self.binned, other.binned
        if mine is not None:
            out._binned, out.kept = mine.copy(), self.kept
        if theirs is not None:
            if out._binned is None:
                out._start_bins()  # this side's buffer goes into bins too
            out._binned = out._binned.merge(theirs)
            out.kept += other.kept
        # the other's buffered rows come after this side's rows: their positions move
        for s, target, w in other.buffer:
            out._update(s, target, w, out.rows)
            out.rows += s.shape[0]
        out.rows = self.rows + other.rows
        return out

    def _header(self):
        b = self.binned
        if b is None:
            return {"binned": False, "shift": None, "kept": None}
        return {"binned": True, "shift": int(b.shift), "kept": int(self.kept)}

    def _arrays(self):
        b = self.binned
        if b is None:
            s, target, w = self._buffer_rows()
            return {"s": s, "target": target, "w": w}
        return {"lo": b.lo, "hi": b.hi, "wt": b.wt, "wd": b.wd}

    def _declared(self, header, declared):
        binned = header["binned"]
        if type(binned) is not bool:
            bad(f"binned must be true or false, got {show.repr(binned)}")
        if not binned:
            if header["shift"] is not None or header["kept"] is not None:
                bad("buffered statistics carry no bins (shift and kept must be null)")
            if self.rows > BUFFER_ROWS:
                bad(f"{self.rows} buffered rows: at most BUFFER_ROWS = {BUFFER_ROWS}")
            return {name: (self.rows,) for name in ("s", "target", "w")}
        integer(header, "shift", 0, 63)
        kept = integer(header, "kept", 1, self.rows)
        lo = declared.get("lo")
        n = lo[0] if isinstance(lo, list) and len(lo) == 1 else -1
        if not 1 <= n <= min(MAX_BINS, kept):
            bad(f"lo of shape {show.repr(lo)}: 1 to {MAX_BINS} bins, at most one a kept row")
        return {"lo": (n,), "hi": (n,), "wt": (n, self._search_folds(), 2), "wd": (n, 2)}

    def _check_arrays(self, arrays):
        if "target" in arrays:
            if not np.isin(arrays["target"], (0.0, 1.0)).all():
                raise BlobError("statistics blob: target holds values other than 0 and 1")
            if (arrays["w"] < 0).any():
                raise BlobError("statistics blob: negative sample weights w")
            return
        if (arrays["wt"] < 0).any() or not (arrays["wt"].sum(axis=(1, 2)) > 0).all():
            raise BlobError("statistics blob: bin weights wt negative, or a bin without weight")
        if (arrays["wd"] < 0).any():
            raise BlobError("statistics blob: negative offset sums wd")

    def _restore(self, header, arrays):
        if not header["binned"]:
            if self.rows:
                self.buffer = [(arrays["s"], arrays["target"], arrays["w"])]
            self.buffered = self.rows
            return
        bins = KeyBins(self._search_folds())
        bins.shift = header["shift"]
        lo, hi = arrays["lo"], arrays["hi"]
        keys = float_keys(lo) >> np.uint64(bins.shift)
        # each bin's lo and hi share its key; the keys increase (the bins are sorted)
        if not (
            (lo <= hi).all()
            and np.array_equal(float_keys(hi) >> np.uint64(bins.shift), keys)
            and (keys[1:] > keys[:-1]).all()
        ):
            raise BlobError("statistics blob: bins lo and hi are not sorted bins of the shift")
        bins.keys, bins.lo, bins.hi, bins.wt, bins.wd = keys, lo, hi, arrays["wt"], arrays["wd"]
        self._binned, self.kept = bins, header["kept"]

    # -------------------------------------------------------------------- fit

    def _fit(self, est):
        b = self.binned
        if b is None:
            s, target, w = self._buffer_rows()
            return est.fit(s, self.classes[target.astype(np.intp)], w)
        est.classes_, est.n_features_in_ = self.classes, 1
        return est._fit_points(*b.points(est.score_transform, est.n_knots))


def _rows(chunk: tuple) -> int:
    return chunk[0].shape[0]


def stats_for(calibrator, classes) -> CalibrationStats:
    """Empty statistics for ``calibrator`` (its parameters; unfitted) and two ``classes``.

    The statistics type is the one its registry entry names
    (:attr:`bernonnx._registry.Entry.stats`).
    """
    entry = entry_for(calibrator)
    if entry.stats is None:
        names = ", ".join(e.name for e in CALIBRATORS if e.stats is not None)
        raise TypeError(
            f"no streaming statistics for {type(calibrator).__name__}; they exist for {names}"
        )
    return resolve(entry.stats)(calibrator, check_classes(None, classes))
