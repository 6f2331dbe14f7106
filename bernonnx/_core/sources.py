"""Fits as passes over chunks of rows: the one implementation behind every engine.

A :class:`~bernonnx._core.chunks.Source` holds ``(score, label, weight)`` rows in
chunks it can read again: in-memory arrays (:class:`ArraySource`), the partitions of a Dask
collection (:mod:`bernonnx.dask`), a Spark DataFrame (:mod:`bernonnx.spark`)
or the row groups of a Parquet file (:mod:`bernonnx._core.parquet`, read by the CLI). It
offers one operation, ``reduce``: apply a function to every chunk and add
the results. A fit reads the data through nothing else, so each engine
contributes only the way it runs a function on its chunks.

A fit takes as many passes as the exact in-memory fit needs, and computes the
same quantities in the same way; only the order of additions differs (about
1e-16 relative). A Bernstein fit (``BernsteinCalibrator._fit_source``):

1. :func:`summarise`: counts, classes, weight per class, score range;
2. the transform's weighted quantiles, exactly
   (:func:`~bernonnx._core.quantiles.weighted_quantiles`, four radix passes on the
   order-preserving integer keys of the scores);
3. the per-fold bins of the degree search (folds by a hash of the row's
   position, :func:`bernonnx._core.points.fold_of`): the same folds as in memory;
4. the final fit, by the fitting core itself on :class:`RowPasses`: the
   least-squares moments (one pass), or the log loss's bins and then one
   pass per projected Newton step on the rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from bernonnx._validation import _finite_or_raise

from . import loss
from .chunks import Chunk, Source, add, add_all, target_of, weights_of
from .points import SELECT_BINS, Points, bin_sums, fold_of, points_from_sums

#: Rows per chunk of an :class:`ArraySource`.
CHUNK_ROWS = 1 << 20


@dataclass
class ArraySource:
    """In-memory rows read in chunks of ``chunk_rows``: the other engines, in one process."""

    s: np.ndarray
    y: np.ndarray
    w: np.ndarray | None = None
    chunk_rows: int = CHUNK_ROWS

    def chunks(self) -> Iterator[Chunk]:
        n = self.s.shape[0]
        for start in range(0, max(n, 1), self.chunk_rows):
            sl = slice(start, start + self.chunk_rows)
            w = None if self.w is None else self.w[sl]
            yield Chunk(np.asarray(self.s[sl], dtype=np.float64), self.y[sl], w, start)

    def reduce(self, fn):
        return add_all(fn(chunk) for chunk in self.chunks())


def _missing(values: np.ndarray) -> np.ndarray:
    """Mask of the missing entries (None, NaN, ``pd.NA``, ``NaT``) of a 1-D array."""
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind != "O":
        return np.zeros(values.shape[0], dtype=bool)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with every engine
        return np.fromiter((v is None or v != v for v in values), bool, values.shape[0])
    return np.asarray(pd.isna(values), dtype=bool)


def _floats(values, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array, missing entries (``pd.NA``, None) as NaN, so
    that the finiteness check names them rather than numpy's TypeError."""
    if hasattr(values, "to_numpy"):  # pandas: nullable dtypes hold pd.NA
        try:
            return values.to_numpy(dtype=np.float64, na_value=np.nan).reshape(-1)
        except (TypeError, ValueError):
            pass
    try:
        return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        pass
    raw = np.asarray(values, dtype=object).reshape(-1)
    missing = _missing(raw)
    try:
        out = np.where(missing, np.nan, raw).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be numbers; got values such as {raw[~missing][:3]!r}"
        ) from None
    return out


def chunk_arrays(s, y, w, start: int) -> Chunk:
    """A :class:`Chunk` of any array-likes (pandas, Arrow), scores checked finite, no
    missing labels (``ValueError`` naming them, not numpy's TypeError on ``pd.NA``)."""
    s = _floats(s, "scores")
    _finite_or_raise(s, "scores")
    if w is not None:
        w = _floats(w, "sample_weight")
        _finite_or_raise(w, "sample_weight")
        if (w < 0).any():
            raise ValueError("sample_weight has negative values; weights must be >= 0")
    y = np.asarray(y).reshape(-1)
    missing = _missing(y)
    if missing.any():
        raise ValueError(
            f"y contains {int(missing.sum())} missing labels (NaN, None or pd.NA), the "
            f"first at row {start + int(np.argmax(missing))}; drop or fill them first"
        )
    if y.shape[0] != s.shape[0] or (w is not None and w.shape[0] != s.shape[0]):
        raise ValueError(
            f"scores, y and sample_weight must have the same length; got {s.shape[0]}, "
            f"{y.shape[0]} and {None if w is None else w.shape[0]}"
        )
    return Chunk(s, y, w, int(start))


@dataclass
class Fingerprint:
    """What one pass read: rows, score range, and exact checksums of the scores and
    weights, each mixed with its row's position; adds, in any order.

    The checksums (:func:`_checksum`) are wrapping uint64 sums of each value's
    bits mixed with its position: integer sums are exact in any order, so two
    passes over the same rows in the same order agree bit for bit, and rows
    that move, change or go missing change them.
    """

    rows: int = 0
    lo: float = np.inf
    hi: float = -np.inf
    scores: int = 0
    weights: int = 0

    @classmethod
    def of(cls, chunk: Chunk) -> Fingerprint:
        n = chunk.s.shape[0]
        if n == 0:
            return cls()
        return cls(
            n,
            float(chunk.s.min()),
            float(chunk.s.max()),
            _checksum(chunk.s, chunk.start),
            0 if chunk.w is None else _checksum(chunk.w, chunk.start),
        )

    def __add__(self, other: Fingerprint) -> Fingerprint:
        return Fingerprint(
            self.rows + other.rows,
            min(self.lo, other.lo),
            max(self.hi, other.hi),
            (self.scores + other.scores) % (1 << 64),
            (self.weights + other.weights) % (1 << 64),
        )

    def describe(self) -> str:
        return f"{self.rows:,} rows with scores in [{self.lo:.6g}, {self.hi:.6g}]"


def _checksum(values: np.ndarray, start: int) -> int:
    """Wrapping uint64 sum of each value's bits times ``2 * position + 1``: exact in any
    order of addition, and changed by a value that changes or moves (about 5% of the
    time of a degree-12 Newton pass's sums on the same rows)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    odd = np.arange(2 * start + 1, 2 * (start + bits.shape[0]) + 1, 2, dtype=np.uint64)
    return int(np.add.reduce(bits * odd, dtype=np.uint64))


class PassCheck:
    """Compares every pass's :class:`Fingerprint` with the first one's.

    A fit reads its data once per pass and trusts every pass to read the same
    rows in the same order; data computed anew on each read (an unpersisted
    collection built on unseeded randomness, a table being appended to) break
    that, and the fit would end in an obscure error or a silently wrong
    result. ``engine_hint`` says how to make the data stable.
    """

    def __init__(self, engine_hint: str):
        self.engine_hint = engine_hint
        self.first: Fingerprint | None = None
        self.passes = 0

    def __call__(self, fingerprint: Fingerprint | None) -> None:
        fingerprint = Fingerprint() if fingerprint is None else fingerprint
        self.passes += 1
        if self.first is None:
            self.first = fingerprint
            return
        if fingerprint != self.first:
            what = (
                "the same rows and score range but other values or another order"
                if (fingerprint.rows, fingerprint.lo, fingerprint.hi)
                == (self.first.rows, self.first.lo, self.first.hi)
                else fingerprint.describe()
            )
            raise ValueError(
                f"the data changed between passes: pass 1 read {self.first.describe()}, "
                f"pass {self.passes} read {what}. A fit reads its data once per pass and "
                f"needs the same rows in the same order each time: {self.engine_hint}"
            )


# --------------------------------------------------------------------------
# pass 1: what the data hold
# --------------------------------------------------------------------------


@dataclass
class Extremes:
    """Smallest and largest value; adds by min and max."""

    lo: float = np.inf
    hi: float = -np.inf

    def __add__(self, other: Extremes) -> Extremes:
        return Extremes(min(self.lo, other.lo), max(self.hi, other.hi))

    @property
    def constant(self) -> bool:
        return self.lo == self.hi


@dataclass
class Summary:
    """Pass 1: rows, label weights, and the range of the positive-weight rows."""

    rows: int = 0
    kept: int = 0
    #: label -> (rows, weight) over all rows
    labels: dict = field(default_factory=dict)
    scores: Extremes = field(default_factory=Extremes)
    weights: Extremes = field(default_factory=Extremes)

    def __add__(self, other: Summary) -> Summary:
        labels = dict(self.labels)
        for key, value in other.labels.items():
            labels[key] = add(labels.get(key), value)
        return Summary(
            self.rows + other.rows,
            self.kept + other.kept,
            labels,
            self.scores + other.scores,
            self.weights + other.weights,
        )


def _summary(chunk: Chunk) -> Summary:
    w = np.ones(chunk.s.shape[0]) if chunk.w is None else chunk.w
    keep = w > 0
    values, inverse = np.unique(chunk.y, return_inverse=True)
    if values.shape[0] > 2:
        # more than two classes: no need to carry every label to the driver
        values, inverse = values[:3], np.minimum(inverse, 2)
    counts = np.bincount(inverse, minlength=values.shape[0])
    sums = np.bincount(inverse, weights=w, minlength=values.shape[0])
    keys = [v.item() if isinstance(v, np.generic) else v for v in values]
    labels = {k: (int(c), float(t)) for k, c, t in zip(keys, counts, sums, strict=True)}
    s, wk = chunk.s[keep], w[keep]
    return Summary(
        chunk.s.shape[0],
        int(keep.sum()),
        labels,
        Extremes(float(s.min()), float(s.max())) if s.size else Extremes(),
        Extremes(float(wk.min()), float(wk.max())) if wk.size else Extremes(),
    )


@dataclass(frozen=True)
class Described:
    """The checked outcome of :func:`summarise`."""

    classes: np.ndarray
    rows: int
    kept: int
    lo: float
    hi: float
    weight: float
    positive_weight: float
    equal_weights: bool


def summarise(source: Source, estimator_name: str) -> Described:
    """Pass 1 and its checks: two classes, both with positive weight, scores present."""
    summary = source.reduce(_summary)
    if summary is None or summary.rows == 0:
        raise ValueError(f"{estimator_name}: the data have no rows")
    labels = sorted(summary.labels)
    if len(labels) < 2:
        raise ValueError(
            f"y contains a single class ({labels[0]!r}); {estimator_name} needs both "
            "classes of a binary problem to fit a calibration curve"
        )
    if len(labels) > 2:
        raise ValueError(
            f"Only binary classification is supported; y has more than two classes "
            f"({labels[:3]!r}, ...): {estimator_name} calibrates one class against the rest"
        )
    (_, w_neg), (_, w_pos) = summary.labels[labels[0]], summary.labels[labels[1]]
    if not (w_neg > 0 and w_pos > 0):
        raise ValueError(
            "y contains a single class among the rows with positive sample_weight; "
            f"{estimator_name} needs both classes"
        )
    return Described(
        np.asarray(labels),
        summary.rows,
        summary.kept,
        summary.scores.lo,
        summary.scores.hi,
        w_neg + w_pos,
        w_pos,
        summary.weights.lo == summary.weights.hi,
    )


# --------------------------------------------------------------------------
# distinct scores: the exact statistics of isotonic and histogram fits
# --------------------------------------------------------------------------


@dataclass
class ScoreTable:
    """Distinct scores (sorted) and the weight of each class at each: mergeable.

    Every fit whose rows may be replaced by their weights (weight ``k`` equals
    ``k`` repeated rows) fits the same on these rows. It holds one entry per
    distinct score, as Spark MLlib's ``IsotonicRegression`` groups them, so
    its size is that of the scores' distinct values, not of the rows.
    """

    s: np.ndarray
    w0: np.ndarray
    w1: np.ndarray

    @classmethod
    def group(cls, s, w0, w1) -> ScoreTable:
        values, inverse = np.unique(s, return_inverse=True)
        n = values.shape[0]
        return cls(
            values,
            np.bincount(inverse, weights=w0, minlength=n),
            np.bincount(inverse, weights=w1, minlength=n),
        )

    @classmethod
    def of_rows(cls, s, target, w) -> ScoreTable:
        """The table of rows with a 0/1 ``target`` and weights (``None``: ones)."""
        w = np.ones(s.shape[0]) if w is None else w
        keep = w > 0
        target, w = target[keep], w[keep]
        return cls.group(s[keep], w * (1.0 - target), w * target)

    @classmethod
    def of_chunk(cls, chunk: Chunk, classes: np.ndarray) -> ScoreTable:
        return cls.of_rows(chunk.s, target_of(chunk, classes), chunk.w)

    def __add__(self, other: ScoreTable) -> ScoreTable:
        return ScoreTable.group(
            np.concatenate([self.s, other.s]),
            np.concatenate([self.w0, other.w0]),
            np.concatenate([self.w1, other.w1]),
        )

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Scores, 0/1 target and weights: one row per distinct (score, class)."""
        neg, pos = self.w0 > 0, self.w1 > 0
        s = np.concatenate([self.s[neg], self.s[pos]])
        target = np.concatenate([np.zeros(int(neg.sum())), np.ones(int(pos.sum()))])
        return s, target, np.concatenate([self.w0[neg], self.w1[pos]])


# --------------------------------------------------------------------------
# the rows as the fitting core's points
# --------------------------------------------------------------------------


class RowPasses:
    """The rows of a source as :class:`~bernonnx._core.points.Rows` of the fitting core:
    each evaluation of the log loss is one pass (``u`` from ``to_u(chunk.s)``)."""

    one_score = True

    def __init__(self, source: Source, to_u, described: Described):
        self.source, self.to_u = source, to_u
        self.classes, self.kept = described.classes, described.kept
        self.ends = np.array([described.lo, described.hi])
        #: weighted mean label (:func:`bernonnx._core.newton.base_rate`)
        self.rate = described.positive_weight / described.weight

    def __len__(self) -> int:
        return self.kept

    def map(self, fn):
        """Sum over chunks of ``fn(u, y, w)`` on the positive-weight rows."""

        # the function sent to the engine's workers holds what it reads, not the source
        to_u, classes = self.to_u, self.classes

        def one(chunk):
            w = weights_of(chunk)
            keep = w > 0
            if not keep.any():  # an empty or all-zero-weight chunk adds nothing
                return None
            u = to_u(chunk.s[keep])
            return fn(u, target_of(chunk, classes)[keep], w[keep], chunk)

        return self.source.reduce(one)

    def logistic_terms(self, coef: np.ndarray, hessian: bool):
        return self.map(lambda u, y, w, _: loss.logistic_terms(u, 1.0 - u, y, w, coef, hessian))

    def squared_terms(self, degree: int):
        return self.map(lambda u, y, w, _: loss.least_squares_terms(u, y, w, degree)[:2])

    def fold_bins(self, n_folds: int, folds=None):
        """Per-fold bins (:func:`bernonnx._core.degree.fold_bins`) by the rows' positions.

        ``folds`` must be None: a row's fold is the hash of its position in the source.
        """
        if folds is not None:
            raise ValueError("folds of rows read in passes come from their positions")

        to_u, classes = self.to_u, self.classes

        def one(chunk):
            w = weights_of(chunk)
            keep = w > 0
            if not keep.any():
                return None
            u = to_u(chunk.s[keep])
            folds = fold_of(chunk.start, chunk.s.shape[0], n_folds)[keep]
            y = target_of(chunk, classes)[keep]
            return bin_sums(Points(u, 1.0 - u, y, w[keep]), SELECT_BINS, folds, n_folds)

        return self.source.reduce(one)

    def bins(self, n_bins: int) -> Points:
        wt, wu = self.map(lambda u, y, w, _: bin_sums(Points(u, 1.0 - u, y, w), n_bins))
        return points_from_sums(wt[0], wu[0], True)

    def constant(self) -> bool:
        """Whether every row has the same ``u``, from :meth:`u_range` (no pass)."""
        return self.u_range().constant

    def u_range(self) -> Extremes:
        """The range of ``u``: the transform of the scores' range, with no pass.

        Every transform is non-decreasing and computed element by element, so
        the smallest and largest score give the smallest and largest ``u``.
        """
        lo, hi = self.to_u(self.ends)
        return Extremes(float(lo), float(hi))
