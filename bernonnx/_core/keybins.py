"""A mergeable, transform-free summary of scores: bins of order-preserving float keys.

:class:`KeyBins` keeps, per bin of raw scores, the weight of each class (per fold
of the degree search), each class's weighted sum of the scores' offsets in the
bin, and the bin's smallest and largest score. A bin is a prefix of
:func:`bernonnx._core.quantiles.float_keys`: the ``64 - shift`` leading bits of the
key. It starts with ``shift = 0`` (one bin per distinct score: the rows
themselves, weights summed) and, whenever more than :data:`MAX_BINS` bins are
occupied, drops one more bit (merges neighbouring bins), so:

* the resolution adapts to the data without knowing their range: a bin spans a
  fixed fraction ``2^(shift - 52)`` of its scores' magnitude (within a binade),
  so scores crowded near 0.99 or near 1000 are split as finely as scores near 0;
* the final ``shift`` is the smallest one at which all the rows occupy at most
  :data:`MAX_BINS` bins (a row never leaves its bin, and the occupied bins of more
  rows are a superset), and each bin holds the sums of its rows: the summary is a
  function of the rows, whatever their order and chunking, up to the rounding of
  the sums. Merging two summaries is the same union, then coarsening.

What the fit reads from it (:meth:`KeyBins.points`, :meth:`KeyBins.quantiles`) is chosen at fit
time, so the score transform comes from all the rows, as ``fit`` chooses it.
"""

from __future__ import annotations

import numpy as np

from .points import Points
from .quantiles import _SLACK, float_keys, key_floats
from .transforms import apply_transform, rescale, score_exponent, transform_params

#: Most occupied bins (memory: ``(2 n_folds + 4) * 8 + 8`` bytes a bin).
MAX_BINS = 1 << 17
#: Keys below this one are those of -inf and the NaNs.
_FINITE_KEY = np.uint64(0x0010000000000000)
_EMPTY = np.empty(0)


def anchors(keys: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The lowest score of each bin (``a``) and a power of two ``h >= |a|`` (1 at 0).

    A bin's offsets ``(s - a) / h`` lie in ``[0, 1]`` while the bin stays within a
    binade (``s - a`` is then exact); dividing by ``h`` keeps sums of offsets of
    scores near the largest float finite.
    """
    base = np.maximum(np.asarray(keys, dtype=np.uint64) << np.uint64(shift), _FINITE_KEY)
    a = key_floats(base)
    return a, np.ldexp(1.0, np.frexp(a)[1])


class KeyBins:
    """Occupied bins of scores, sorted by score; see the module docstring.

    Arrays, one row per bin: ``keys`` (uint64 prefixes), ``lo``/``hi`` (smallest and
    largest score), ``wt`` (shape ``(bins, n_folds, 2)``: weight per fold and class),
    ``wd`` (shape ``(bins, 2)``: per class, the weighted sum of the offsets ``(s - a)
    / h`` of :func:`anchors`). Rows of zero weight are left out by the caller.
    """

    def __init__(self, n_folds: int, max_bins: int | None = None):
        self.n_folds, self.shift = int(n_folds), 0
        self.max_bins = int(MAX_BINS if max_bins is None else max_bins)
        self.keys = np.empty(0, dtype=np.uint64)
        self.lo, self.hi = _EMPTY, _EMPTY
        self.wt = np.empty((0, self.n_folds, 2))
        self.wd = np.empty((0, 2))

    def __len__(self) -> int:
        return self.keys.shape[0]

    def copy(self) -> KeyBins:
        out = KeyBins(self.n_folds, self.max_bins)
        out.shift, out.keys, out.lo, out.hi = self.shift, self.keys, self.lo, self.hi
        out.wt, out.wd = self.wt.copy(), self.wd.copy()
        return out

    # ---------------------------------------------------------------- adding

    def add_rows(self, s: np.ndarray, y: np.ndarray, w: np.ndarray, fold: np.ndarray) -> None:
        """Add rows (scores, 0/1 labels, positive weights, folds below ``n_folds``)."""
        if s.shape[0] == 0:
            return
        keys = float_keys(s) >> np.uint64(self.shift)
        order = np.argsort(keys, kind="stable")
        keys, s, w = keys[order], s[order], w[order]
        cls = (y[order] > 0.5).astype(np.int64)
        new = np.empty(keys.shape[0], dtype=bool)
        new[0] = True
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        bin_of = np.cumsum(new) - 1
        n = starts.shape[0]
        a, h = anchors(keys[starts], self.shift)
        d = (s - a[bin_of]) / h[bin_of]
        wt = np.bincount(
            (bin_of * self.n_folds + fold[order]) * 2 + cls,
            weights=w,
            minlength=2 * n * self.n_folds,
        )
        wd = np.bincount(bin_of * 2 + cls, weights=w * d, minlength=2 * n)
        other = KeyBins(self.n_folds, self.max_bins)
        other.shift, other.keys = self.shift, keys[starts]
        other.lo, other.hi = np.minimum.reduceat(s, starts), np.maximum.reduceat(s, starts)
        other.wt, other.wd = wt.reshape(n, self.n_folds, 2), wd.reshape(n, 2)
        self._union(other)

    def merge(self, other: KeyBins) -> KeyBins:
        """The bins of both (a new object), at the coarser resolution of the two or coarser."""
        out, other = self.copy(), other.copy()
        out.max_bins = max(out.max_bins, other.max_bins)
        if out.shift < other.shift:
            out._coarsen(other.shift - out.shift)
        if other.shift < out.shift:
            other._coarsen(out.shift - other.shift)
        out._union(other)
        return out

    def _union(self, other: KeyBins) -> None:
        # two sorted runs: a stable sort (timsort) merges them in linear time
        keys = np.sort(np.concatenate([self.keys, other.keys]), kind="stable")
        if keys.shape[0] > 1:
            keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
        mine, theirs = np.searchsorted(keys, self.keys), np.searchsorted(keys, other.keys)
        n = keys.shape[0]
        lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
        wt, wd = np.zeros((n, self.n_folds, 2)), np.zeros((n, 2))
        for idx, part in ((mine, self), (theirs, other)):
            lo[idx] = np.minimum(lo[idx], part.lo)
            hi[idx] = np.maximum(hi[idx], part.hi)
            wt[idx] += part.wt
            wd[idx] += part.wd
        self.keys, self.lo, self.hi, self.wt, self.wd = keys, lo, hi, wt, wd
        if len(self) > self.max_bins:
            # the fewest more bits that bring the bins within the cap: the same shift as
            # dropping one bit at a time (bins at shift k are counted from the keys)
            low, high = self.shift + 1, 63
            while low < high:
                mid = (low + high) // 2
                kept = self.keys >> np.uint64(mid - self.shift)
                if 1 + int(np.count_nonzero(kept[1:] != kept[:-1])) <= self.max_bins:
                    high = mid
                else:
                    low = mid + 1
            self._coarsen(low - self.shift)

    def _coarsen(self, bits: int = 1) -> None:
        """Drop ``bits`` bits of the keys: neighbouring bins join, offsets move to new anchors."""
        a, h = anchors(self.keys, self.shift)
        self.shift += bits
        keys = self.keys >> np.uint64(bits)
        new = np.empty(keys.shape[0], dtype=bool)
        new[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        parent = np.cumsum(new) - 1
        pa, ph = anchors(keys[starts], self.shift)
        # s = a + h d = pa + ph d': d' = (a - pa) / ph + (h / ph) d
        shift_by = ((a - pa[parent]) / ph[parent])[:, None]
        wd = shift_by * self.wt.sum(axis=1) + (h / ph[parent])[:, None] * self.wd
        self.keys = keys[starts]
        self.lo = np.minimum.reduceat(self.lo, starts)
        self.hi = np.maximum.reduceat(self.hi, starts)
        self.wt = np.add.reduceat(self.wt, starts, axis=0)
        self.wd = np.add.reduceat(wd, starts, axis=0)

    # ---------------------------------------------------------------- reading

    def means(self) -> np.ndarray:
        """Per bin and class, the weighted mean score (shape ``(bins, 2)``; lo where empty)."""
        a, h = anchors(self.keys, self.shift)
        total = self.wt.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = a[:, None] + h[:, None] * (self.wd / total)
        # a bin of one distinct score gives it exactly; rounding stays within the bin
        mean = np.where(total > 0, mean, self.lo[:, None])
        return np.clip(mean, self.lo[:, None], self.hi[:, None])

    def quantiles(self, probs: np.ndarray, slack: float) -> np.ndarray:
        """Weighted quantiles (``F(x) >= W (p - slack)``), interpolated inside a bin.

        Exact where the bin reached holds one distinct score (always at ``shift =
        0``); elsewhere within the bin's ``[lo, hi]``, linearly in the weight.
        """
        weight = self.wt.sum(axis=(1, 2))
        cum = np.cumsum(weight)
        targets = cum[-1] * (np.asarray(probs, dtype=np.float64) - slack)
        j = np.minimum(np.searchsorted(cum, targets, side="left"), len(self) - 1)
        below = np.where(j > 0, cum[j - 1], 0.0)
        frac = np.clip((targets - below) / weight[j], 0.0, 1.0)
        return np.where(
            self.lo[j] == self.hi[j], self.lo[j], self.lo[j] + frac * (self.hi[j] - self.lo[j])
        )

    def points(self, kind: str, n_knots: int):
        """What a fit from the bins reads: ``(exponent, params, points, folds)``.

        The transform ``kind`` as ``fit`` chooses it: the range is exact; the
        quantiles are exact where they fall in a bin of one distinct score and
        interpolated inside the bin otherwise. Each bin and class becomes one
        point, its weighted mean score through the transform (per fold for a
        degree search; ``folds`` is None for one fold).
        """
        exponent = score_exponent(np.array([self.lo[0], self.hi[-1]]))
        lo, hi = rescale(np.array([self.lo[0], self.hi[-1]]), exponent)
        params = transform_params(
            kind,
            float(lo),
            float(hi),
            lambda p: rescale(self.quantiles(p, _SLACK), exponent),
            n_knots,
        )
        means = rescale(self.means(), exponent)
        u = apply_transform(kind, means.reshape(-1), params, with_v=False)[0].reshape(means.shape)
        shape = self.wt.shape  # (bins, folds, 2)
        u = np.broadcast_to(u[:, None, :], shape)
        y = np.broadcast_to(np.array([0.0, 1.0]), shape)
        fold = np.broadcast_to(np.arange(shape[1])[None, :, None], shape)
        keep = self.wt > 0
        points = Points(u[keep], 1.0 - u[keep], y[keep], self.wt[keep])
        return exponent, params, points, fold[keep] if shape[1] > 1 else None
