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
    keep = w > 0
    if not keep.all():
        x, w = x[keep], w[keep]
    n = x.shape[0]
    if probs.shape[0] <= 8 and np.all(w == w[0]):
        # F at the i-th smallest row is w (i + 1): first i with i + 1 >= n (p - slack)
        idx = np.clip(np.ceil(n * (probs - _SLACK)).astype(np.int64) - 1, 0, n - 1)
        part = np.partition(x, np.unique(idx))
        return part[idx]
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    cdf = np.cumsum(ws)
    total = cdf[-1]
    idx = np.searchsorted(cdf, total * (probs - _SLACK), side="left")
    return xs[np.minimum(idx, n - 1)]
