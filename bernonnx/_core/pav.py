"""Pool-adjacent-violators: the weighted least-squares monotone fit of a sequence.

The solver of :class:`bernonnx.IsotonicCalibrator` (on the distinct scores) and of
the monotone bins of :class:`bernonnx.HistogramCalibrator` (``increasing=True``).
"""

from __future__ import annotations

import numpy as np

#: Vectorised pooling rounds of the PAV before the exact stack pass finishes
#: off the (by then few) remaining blocks; a constant, so the PAV stays O(n).
_PAV_ROUNDS = 8


def _pav_stack(starts, bw, bwy):
    """Exact stack PAV over blocks: each block is pushed and popped at most once."""
    st, sw, swy = [], [], []
    for s0, w0, wy0 in zip(starts.tolist(), bw.tolist(), bwy.tolist(), strict=True):
        while sw and swy[-1] / sw[-1] >= wy0 / w0:
            s0, w0, wy0 = st.pop(), w0 + sw.pop(), wy0 + swy.pop()
        st.append(s0)
        sw.append(w0)
        swy.append(wy0)
    return np.asarray(st, dtype=np.intp), np.asarray(sw), np.asarray(swy)


def _pav(y: np.ndarray, w: np.ndarray, increasing: bool = True) -> np.ndarray:
    """Weighted least-squares monotone fit of ``y`` in the given order (positive ``w``).

    Pool-adjacent-violators, ties (equal neighbours) pooled too, as in
    scikit-learn. A few vectorised rounds each pool every maximal
    non-increasing run of block means at once (pooling any adjacent
    violators is valid PAV: the optimum is unique); a stack pass over the
    remaining blocks then finishes exactly. O(n) overall.
    """
    if not increasing:
        return _pav(y[::-1], w[::-1])[::-1]
    n = y.shape[0]
    starts, bw, bwy = np.arange(n), w.astype(np.float64), w * y
    for _ in range(_PAV_ROUNDS):
        mean = bwy / bw
        pool = mean[:-1] >= mean[1:]
        if not pool.any():
            break
        first = np.flatnonzero(np.r_[True, ~pool])
        starts = starts[first]
        bw, bwy = np.add.reduceat(bw, first), np.add.reduceat(bwy, first)
    else:
        starts, bw, bwy = _pav_stack(starts, bw, bwy)
    return np.repeat(bwy / bw, np.diff(np.r_[starts, n]))
