"""LAC, the least ambiguous set-valued classifier (Sadinle, Lei & Wasserman 2019).

A class's conformity score is one minus its probability; the set holds every class
whose probability is at least ``1 - threshold``. Of the split-conformal sets with the
guaranteed marginal coverage, these are the smallest on average when the probabilities
are right, and they may be empty.

References
----------
M. Sadinle, J. Lei and L. Wasserman, "Least ambiguous set-valued classifiers with
bounded error levels", Journal of the American Statistical Association 114(525), 2019.
"""

from __future__ import annotations

import numpy as np

__all__ = ["class_scores"]


def class_scores(proba: np.ndarray) -> np.ndarray:
    """``1 - proba``: every class's LAC score, (n, K) float64 (the graph's ``Sub``)."""
    return 1.0 - np.asarray(proba, dtype=np.float64)
