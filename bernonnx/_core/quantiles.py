"""Weighted order statistics shared by the transforms and the metrics."""

from __future__ import annotations

import numpy as np

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
