"""Weighted order statistics shared by the transforms and the metrics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chunks import Source, weights_of

#: Relative slack on cumulative weights: sums of fractional weights round
#: (ten weights of 0.1 do not add up to exactly 1), and without slack a level
#: reached exactly can be missed by one value. Integer weights give exact sums
#: at least 1/len(probs) away from a non-integer level, so the slack changes
#: nothing for them below a total weight of about 1e10.
_SLACK = 1e-10


def weighted_quantile(x: np.ndarray, w: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Weighted inverted-CDF quantiles: the smallest ``x`` with ``F(x) >= p W``.

    ``F(x)`` is the weight of the values ``<= x`` and ``W`` the total weight;
    rows with zero weight are ignored. Integer weights give exactly the
    quantiles of the repeated rows, and scaling all weights changes nothing.
    With equal weights and few levels a partial sort (``np.partition``, O(n))
    finds the order statistics.

    Parameters
    ----------
    x : ndarray of shape (n,)
    w : ndarray of shape (n,), non-negative with a positive sum
    probs : ndarray of shape (m,), levels in [0, 1]

    Returns
    -------
    ndarray of shape (m,)
    """
    probs = np.asarray(probs, dtype=np.float64)
    if not w.min() > 0:
        keep = w > 0
        x, w = x[keep], w[keep]
    n = x.shape[0]
    if probs.shape[0] <= 8 and w.min() == w.max():
        # F at the i-th smallest row is w (i + 1): first i with i + 1 >= n (p - slack)
        idx = np.clip(np.ceil(n * (probs - _SLACK)).astype(np.int64) - 1, 0, n - 1)
        return order_statistics(x, idx)
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    cdf = np.cumsum(ws)
    total = cdf[-1]
    idx = np.searchsorted(cdf, total * (probs - _SLACK), side="left")
    return xs[np.minimum(idx, n - 1)]


#: From this many values on, :func:`order_statistics` brackets the ranks from a sample.
_BRACKET_FROM = 1 << 18
#: Values in the sample that brackets the ranks: the ranks it gives have a standard
#: deviation below sqrt(_SAMPLE) / 2 = 128 (a random sample), and the brackets reach
#: _MARGIN = 4 of those on either side, 1.6% of the values each.
_SAMPLE = 1 << 16
_MARGIN = 512


def order_statistics(x: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """``np.sort(x)[ranks]``, exactly, for a few ``ranks`` (ints in ``[0, n)``).

    ``np.partition`` takes about 20 ns per value for three ranks (20 ms at n = 1e6,
    the largest cost of a logistic transform's fit). From :data:`_BRACKET_FROM`
    values on, the order statistics of an evenly strided sample bracket each rank
    in ``[lo, hi]``; comparisons count the values below ``lo`` and gather the few
    inside, where a partition of about 3% of the values settles the rank. A
    bracket that misses its rank (a sample unlike the whole, such as periodic
    data) falls back to ``np.partition``: the result is exact either way.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    n = x.shape[0]
    if n < _BRACKET_FROM:
        return np.partition(x, np.unique(ranks))[ranks]
    sample = x[:: n // _SAMPLE].copy()
    m = sample.shape[0]
    at = ranks * m // n
    lo_at, hi_at = np.maximum(at - _MARGIN, 0), np.minimum(at + _MARGIN, m - 1)
    sample.partition(np.unique(np.concatenate([lo_at, hi_at])))
    # a bracket at the sample's end reaches past it: values beyond the sample's extremes
    lo = np.where(lo_at > 0, sample[lo_at], -np.inf)
    hi = np.where(hi_at < m - 1, sample[hi_at], np.inf)
    out = np.empty(ranks.shape[0], dtype=x.dtype)
    for i, (k, a, b) in enumerate(zip(ranks, lo, hi, strict=True)):
        below = x < a
        inside = np.less_equal(x, b)
        inside &= ~below
        first = int(np.count_nonzero(below))
        values = x[inside]
        if not first <= k < first + values.shape[0]:
            return np.partition(x, np.unique(ranks))[ranks]
        out[i] = np.partition(values, k - first)[k - first]
    return out


# --------------------------------------------------------------------------
# the same quantiles of rows in chunks, exactly, by a radix select
# --------------------------------------------------------------------------

_DIGIT_BITS = 16


_DIGITS = 64 // _DIGIT_BITS


def float_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of float64 values (``-0.0`` as ``0.0``)."""
    bits = (np.asarray(x, dtype=np.float64) + 0.0).view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | np.uint64(1 << 63))


def key_floats(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`float_keys`."""
    keys = np.asarray(keys, dtype=np.uint64)
    positive = (keys >> np.uint64(63)).astype(bool)
    return np.where(positive, keys & np.uint64((1 << 63) - 1), ~keys).view(np.float64)


def weighted_quantiles(source: Source, probs, described, transform=None) -> np.ndarray:
    """:func:`weighted_quantile` of the positive-weight rows' values in ``source``, exactly.

    ``described`` is the source's :func:`~bernonnx._core.sources.summarise`.

    The values are ``transform(chunk.s)`` (the scores by default). A radix
    select on :func:`float_keys`: four passes, each adding per-chunk
    histograms of the next 16 bits of the keys that share the prefix found so
    far (one histogram per distinct prefix). Chooses, like the in-memory
    function, the smallest value whose cumulative weight reaches ``W (p -
    slack)``; with few levels and equal weights it counts rows instead, as
    that function does.
    """
    probs = np.asarray(probs, dtype=np.float64)
    by_count = probs.shape[0] <= 8 and described.equal_weights
    total = float(described.kept) if by_count else described.weight
    targets = total * (probs - _SLACK)
    prefixes = np.zeros(probs.shape[0], dtype=np.uint64)
    below = np.zeros(probs.shape[0])
    for digit in range(_DIGITS):
        shift = np.uint64(64 - _DIGIT_BITS * (digit + 1))
        wanted = sorted(set(prefixes.tolist()))

        def histograms(chunk, shift=shift, digit=digit, wanted=wanted):
            w = weights_of(chunk)
            keep = w > 0
            values = chunk.s if transform is None else transform(chunk.s)
            keys = float_keys(values[keep])
            w = np.ones(keys.shape[0]) if by_count else w[keep]
            digits = ((keys >> shift) & np.uint64(0xFFFF)).astype(np.int64)
            out = {}
            for prefix in wanted:
                if digit == 0:
                    mask = slice(None)
                else:
                    mask = (keys >> (shift + np.uint64(_DIGIT_BITS))) == np.uint64(prefix)
                out[prefix] = np.bincount(digits[mask], weights=w[mask], minlength=1 << 16)
            return _Histograms(out)

        hist = source.reduce(histograms).hists
        for j in range(probs.shape[0]):
            h = hist[int(prefixes[j])]
            present = np.flatnonzero(h > 0)
            cum = below[j] + np.cumsum(h[present])
            k = min(int(np.searchsorted(cum, targets[j], side="left")), present.shape[0] - 1)
            below[j] = cum[k - 1] if k > 0 else below[j]
            prefixes[j] = (prefixes[j] << np.uint64(_DIGIT_BITS)) | np.uint64(present[k])
    return key_floats(prefixes)


@dataclass
class _Histograms:
    hists: dict

    def __add__(self, other: _Histograms) -> _Histograms:
        out = dict(self.hists)
        for key, value in other.hists.items():
            out[key] = out[key] + value if key in out else value
        return _Histograms(out)
