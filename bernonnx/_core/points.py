"""The statistics a fit reads: weighted labelled points, their bins and folds.

A fit reads the data only as :class:`Rows`: the points themselves (:class:`Points`)
or rows read in passes. Binning (:func:`compress`; per cell and class, the weighted
mean point and the total weight) keeps the sufficient statistics of a fit, so a fit
of binned points is the same code as a fit of rows. The folds of the degree search
are a hash of each row's position (:func:`fold_of`), and each fold's bins are sums
(:func:`bin_sums`), so chunks of the data produce them independently and they merge
by addition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from . import loss

#: Bins of each fold in the degree search, one score. A bin keeps its points'
#: weight and mean, so the fold losses move by the square of the bin width: at
#: 256 against 4,096 bins, by at most 5e-5 relative in the quality study's 144
#: fits (3,000 to 10,000 rows; the candidates differ in the third digit), and no
#: degree chosen there or on the benchmark's data changes. The search's cost is that
#: of the bins, not of the rows: at 128 against 256 bins, the losses of all 13
#: candidates moved by at most 2.4e-4 relative (median 4e-5) on the quality study's
#: 120 cached fits, where their spread is 1.2e-3 to 7e-2 relative; the default
#: chose the same degree in 119 of them, with the same test log loss on the tuning
#: split and a lower mean on both held-out ones, in about 15% less time.
SELECT_BINS = 1 << 7
#: The same for tensor products (cells of the grid over ``[0, 1]^M``).
TENSOR_SELECT_BINS = 1 << 12


@dataclass(frozen=True)
class Points:
    """Weighted labelled points: the rows of the data, or their bins.

    ``u`` has shape ``(n,)`` (one score) or ``(n, M)``; ``v = 1 - u``, more
    accurate where the transform knows it; ``y`` in ``{0, 1}``; ``w >= 0``.
    """

    u: np.ndarray
    v: np.ndarray
    y: np.ndarray
    w: np.ndarray

    def __len__(self) -> int:
        return self.u.shape[0]

    def take(self, rows: np.ndarray) -> Points:
        return Points(self.u[rows], self.v[rows], self.y[rows], self.w[rows])

    # ---- the Rows protocol, answered from the points themselves

    @property
    def rate(self) -> float:
        """Weighted mean label."""
        return float(np.average(self.y, weights=self.w))

    @property
    def one_score(self) -> bool:
        return self.u.ndim == 1

    def constant(self) -> bool:
        return bool(np.ptp(self.u) == 0)

    def squared_terms(self, degree: int) -> tuple[np.ndarray, np.ndarray]:
        gram, rhs, _ = loss.least_squares_terms(self.u, self.y, self.w, degree)
        return gram, rhs

    def logistic_terms(self, coef: np.ndarray, hessian: bool):
        return loss.logistic_terms(self.u, self.v, self.y, self.w, coef, hessian)

    def bins(self, n_bins: int) -> Points:
        return compress(self, n_bins)

    def fold_bins(self, n_folds: int, folds=None):
        if folds is None:
            folds = fold_of(0, len(self), n_folds)
        n_bins = SELECT_BINS if self.u.ndim == 1 else TENSOR_SELECT_BINS
        return bin_sums(self, n_bins, folds, n_folds)


class Rows(Protocol):
    """What the fitting core reads of its data: in-memory :class:`Points` or rows in passes.

    :mod:`bernonnx._core.newton` and :mod:`bernonnx._core.degree` take ``Rows``.
    :class:`Points` answers from its arrays; ``bernonnx._core.sources.RowPasses``
    (the rows of a :class:`~bernonnx._core.chunks.Source`, one pass per question)
    answers the same questions by passes. ``squared_terms`` and ``logistic_terms``
    are those of the one-score basis (:mod:`bernonnx._core.loss`); tensor-product
    fits read :class:`Points` only. The 1-D degree search's ``_FoldStack`` stands in
    for rows in the Newton steps it takes (``rate``, ``logistic_terms``, ``len``)
    and nowhere else.
    """

    #: weighted mean label
    rate: float
    #: one score (``u`` of shape ``(n,)``) rather than ``M``
    one_score: bool

    def __len__(self) -> int:
        """Number of points (rows of positive weight)."""

    def constant(self) -> bool:
        """Whether all points share one ``u`` (constant scores: nothing to rank)."""

    def squared_terms(self, degree: int) -> tuple[np.ndarray, np.ndarray]:
        """``(G, r)`` of the 1-D least squares at ``degree``."""

    def logistic_terms(self, coef: np.ndarray, hessian: bool):
        """Log loss of the 1-D polynomial ``coef``, its gradient and Hessian."""

    def bins(self, n_bins: int) -> Points:
        """The points binned on about ``n_bins`` cells (:func:`compress`)."""

    def fold_bins(self, n_folds: int, folds=None):
        """Per-fold :func:`bin_sums` of the degree search; ``folds`` by position by default."""


def fold_of(start: int, n: int, n_folds: int) -> np.ndarray:
    """Fold of the rows at positions ``start, ..., start + n - 1``: a hash of the position.

    The fold rule of the degree search. It reads nothing but a row's position
    in the data, so a chunk of rows (a partial_fit call, a Dask or Spark
    partition) knows its rows' folds from its offset alone, with no sort and
    no other chunk: every engine forms the same folds as the in-memory fit.
    The hash (splitmix64's finaliser) spreads any order of the rows, sorted by
    score or by label, evenly over the folds.
    """
    x = position_hash(np.arange(start, start + n, dtype=np.uint64), 0x9E3779B97F4A7C15)
    return (x % np.uint64(n_folds)).astype(np.int64)


def position_hash(positions: np.ndarray, offset: int) -> np.ndarray:
    """splitmix64's finaliser of ``positions + offset``: uint64, well spread.

    The folds of the degree search (:func:`fold_of`) and the command line's
    held-out rows of a streamed file hash row positions with it.
    """
    x = np.asarray(positions).astype(np.uint64)
    with np.errstate(over="ignore"):
        x += np.uint64(offset % (1 << 64))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def cells_per_axis(n_bins: int, m_axes: int) -> int:
    """Intervals per column of the grid of :func:`bin_sums`: ``round(n_bins^(1/M))``, >= 2."""
    return max(2, int(round(n_bins ** (1.0 / m_axes))))


def bin_sums(points: Points, n_bins: int, groups=None, n_groups: int = 1):
    """Per-(group, cell, class) sums of ``w`` and ``w u``: the mergeable form of :func:`compress`.

    Returns ``(wt, wu)`` of shapes ``(n_groups, 2 C)`` and ``(n_groups, 2 C,
    M)``, ``C`` cells, class in the last bit of the index. Sums of two sets
    of rows are the sums of the rows together, so bins merge by addition;
    ``groups`` (ints below ``n_groups``, one per row) are the folds.
    """
    u, y, w = points.u, points.y, points.w
    cols = u.reshape(u.shape[0], -1)
    m_axes = cols.shape[1]
    per = cells_per_axis(n_bins, m_axes)
    idx = np.zeros(u.shape[0], dtype=np.int64)
    scaled = np.empty(u.shape[0])
    for m in range(m_axes):
        idx *= per
        np.multiply(cols[:, m], per, out=scaled)
        idx += np.minimum(scaled, per - 1, out=scaled).astype(np.int64)  # floor: u >= 0
    size = 2 * per**m_axes
    idx *= 2
    idx += y > 0.5
    if groups is not None:
        idx += size * np.asarray(groups, dtype=np.int64)
    total = size * n_groups
    # unit weights (no sample_weight): counts and sums of u, the same floats as
    # sums of 1.0 and of 1.0 * u, without a weighted pass
    unit = bool(np.all(w == 1.0))
    if unit:
        wt = np.bincount(idx, minlength=total).astype(np.float64)
    else:
        wt = np.bincount(idx, weights=w, minlength=total)
    wu = np.stack(
        [
            np.bincount(idx, weights=cols[:, m] if unit else w * cols[:, m], minlength=total)
            for m in range(m_axes)
        ],
        axis=-1,
    ).reshape(n_groups, size, m_axes)
    return wt.reshape(n_groups, size), wu


def coarsen(wt: np.ndarray, wu: np.ndarray, factor: int):
    """Sums of :func:`bin_sums` on a grid ``factor`` times coarser per axis (1-D grids only).

    Exact: ``floor(u * per / f) = floor(floor(u * per) / f)`` for a power-of-two
    ``per`` and ``f``, so the coarse sums are those of ``bin_sums`` at ``per / f``.
    """
    n_groups, size = wt.shape
    shape = (n_groups, size // (2 * factor), factor, 2)
    return wt.reshape(shape).sum(axis=2).reshape(n_groups, -1), wu.reshape(
        *shape, wu.shape[-1]
    ).sum(axis=2).reshape(n_groups, -1, wu.shape[-1])


def points_from_sums(wt: np.ndarray, wu: np.ndarray, one_score: bool) -> Points:
    """The bins of summed ``wt`` (shape ``(2 C,)``) and ``wu`` as points: weighted means."""
    keep = wt > 0
    means = wu[keep] / wt[keep, None]
    if one_score:
        means = means[:, 0]
    return Points(means, 1.0 - means, (np.flatnonzero(keep) % 2).astype(np.float64), wt[keep])


def compress(points: Points, n_bins: int) -> Points:
    """Per-(cell, class) weighted means of ``u`` on a grid of about ``n_bins`` cells.

    Each column of ``[0, 1]^M`` is cut into ``round(n_bins^(1/M))`` equal
    intervals (``n_bins`` of them for one score); at most ``2 n_bins`` points
    come out, weights summed. The mean point of a bin keeps the bin's first
    moment, so a fit on bins differs from the fit on rows by the spread of
    the points inside a bin only.
    """
    wt, wu = bin_sums(points, n_bins)
    return points_from_sums(wt[0], wu[0], points.u.ndim == 1)
