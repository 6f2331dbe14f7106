"""Fit controls and degree selection shared by the Bernstein calibrators.

:class:`bernonnx.BernsteinCalibrator` and
:class:`bernonnx.MultivariateBernsteinCalibrator` bin large data the same
way, bound degrees the same way and pick the degree by the same rule.
"""

from __future__ import annotations

import numpy as np

#: Highest degree accepted. The float32 ONNX graph keeps C(d, k) finite up
#: to d = 131; 100 leaves room and is far above any degree CV picks.
MAX_DEGREE = 100
#: Most folds of a degree search. Each fold fits every candidate degree, so
#: the cost grows with the folds; ``n_folds=10**6`` used to become
#: leave-one-out (39 s on 500 rows) instead of an error.
MAX_FOLDS = 20
#: Candidate degrees of the 1-D ``degree="auto"``.
AUTO_DEGREES = (2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)
#: Above this many rows the log-loss fit first solves on binned data, then
#: polishes with exact passes over all rows.
COMPRESS_ABOVE = 1 << 15
#: Bins of that first solve, and of each fold in the degree search.
FIT_BINS = 1 << 14
SELECT_BINS = 1 << 12
#: Fitted parameters of the score transforms (``<key>_`` attributes).
TRANSFORM_KEYS = ("shift", "scale", "scale_below", "knots", "levels")


def mean_log_loss(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean log loss of probabilities ``p`` (clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -float(w @ (y * np.log(p) + (1 - y) * np.log1p(-p))) / float(w.sum())


def one_standard_error_choice(fold_losses: np.ndarray) -> int:
    """Index of the smallest candidate within one standard error of the best.

    The standard error is that of the per-fold loss difference to the best
    candidate (paired across folds), so fold-to-fold noise common to all
    degrees does not hide real differences. Candidates are sorted by degree.
    """
    mean = fold_losses.mean(axis=0)
    best = int(np.argmin(mean))
    k = fold_losses.shape[0]
    if k < 2:
        return best
    diff = fold_losses - fold_losses[:, [best]]
    se = diff.std(axis=0, ddof=1) / np.sqrt(k)
    return int(np.flatnonzero(diff.mean(axis=0) <= se)[0])
