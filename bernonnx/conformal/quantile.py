"""The finite-sample conformal quantile, weighted, and where the threshold is placed.

Split conformal prediction (Vovk, Gammerman & Shafer 2005; Lei et al. 2018) keeps a
class in a row's set when the class's conformity score is at most the
``ceil((n + 1) c)``-th smallest of the ``n`` conformalization scores. With weights (a
sample weight ``k`` counting a row ``k`` times, or the prior ratios of Podkopaev &
Ramdas 2021) the order statistic becomes the weighted quantile of Tibshirani et al.
(2019): the smallest score whose cumulative weight reaches ``c (W + w_test)``, where
``W`` is the rows' total weight and ``w_test`` the weight of the row being predicted
(1 for sample weights; the prior ratio of the candidate class under prior shift).

The threshold itself is not that score: the conformalization rows' own scores sit
exactly on it, and a graph whose probabilities differ from Python's in the last bit
would decide those rows the other way. It is placed ``tie`` above the top of the run of
scores that starts at the order statistic and whose gaps are all at most ``2 tie``
(:func:`place_threshold`). Every conformalization score is then at least ``tie`` away
from the threshold, the rows at or below the order statistic stay in their sets (so the
coverage guarantee holds: the threshold is never below the order statistic), and the
sets equal MAPIE's, which compares ``score - q <= 1e-8``, except for a score within
``2 tie`` of a conformalization score.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIE", "finite_sample_quantile", "place_threshold"]

#: Half the smallest gap the threshold keeps from every conformalization score, and the
#: probability difference under which two classes count as tied in APS and RAPS. A
#: float64 graph reproduces Python's probabilities to about 1e-15, a float32 graph
#: (float64 inside) about as well; ``to_onnx`` measures it and refuses above ``TIE / 10``.
#: MAPIE's own slack in the same comparisons is 1e-8.
TIE = 1e-8


def finite_sample_quantile(
    scores: np.ndarray, confidence: float, weights=None, test_weight: float = 1.0
) -> float:
    """The conformal order statistic of ``scores`` at ``confidence``; ``inf`` when the
    rows are too few (every set is then every class).

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Conformity scores of the conformalization rows (their true classes).
    confidence : float
        The coverage asked for, ``c`` in (0, 1).
    weights : ndarray of shape (n,), default=None
        Row weights; None for one each.
    test_weight : float, default=1.0
        The weight the row being predicted carries.

    Returns
    -------
    float
        With unit weights, the ``ceil((n + 1) c)``-th smallest score (numpy's
        ``quantile(scores, ceil((n + 1) c) / n, method="lower")``, as MAPIE computes
        it); with weights, the smallest score whose cumulative weight reaches
        ``c (W + test_weight)`` (rounded up to an integer when every weight is one).

    Examples
    --------
    >>> finite_sample_quantile(np.arange(1.0, 11.0), 0.8)  # ceil(11 * 0.8) = 9th
    9.0
    >>> finite_sample_quantile(np.arange(1.0, 11.0), 0.95)  # ceil(11 * 0.95) = 11 > 10
    inf
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    if n == 0:
        return np.inf
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    if weights is None:
        rank = int(np.ceil((n + 1) * confidence))
        return float(ordered[rank - 1]) if rank <= n else np.inf
    w = np.asarray(weights, dtype=np.float64)[order]
    cumulative = np.cumsum(w)
    level = confidence * (cumulative[-1] + test_weight)
    if np.all(w == np.round(w)) and float(test_weight) == round(test_weight):
        level = np.ceil(level)  # integer weights are repetitions: the unit-weight rank
    index = int(np.searchsorted(cumulative, level, side="left"))
    return float(ordered[index]) if index < n else np.inf


def place_threshold(scores: np.ndarray, quantile: float, tie: float = TIE) -> float:
    """The threshold the sets compare against: ``tie`` above the run of ``scores``
    that starts at ``quantile`` with every gap at most ``2 tie``.

    Examples
    --------
    >>> round(place_threshold(np.array([0.1, 0.2, 0.2 + 1e-9, 0.7]), 0.2) - 0.2, 12)  # 1e-9 + tie
    1.1e-08
    """
    if not np.isfinite(quantile):
        return float(quantile)
    above = np.unique(np.asarray(scores, dtype=np.float64))
    above = above[above >= quantile]
    top = quantile
    if above.size:
        gaps = np.diff(above)
        wide = np.flatnonzero(gaps > 2.0 * tie)
        top = float(above[wide[0]] if wide.size else above[-1])
    return top + tie
