"""RAPS, regularised adaptive prediction sets (Angelopoulos, Bates, Malik & Jordan 2021).

The APS score plus a penalty ``lam * max(0, rank - k_reg)`` on classes ranked below the
``k_reg``-th, which keeps the sets of a model with many unlikely classes small. When
``lam`` or ``k_reg`` is not given, both are chosen as the paper does, on a stratified
share of the conformalization rows that is then left out of the quantile: ``k_reg`` is
the conformal quantile of the true classes' ranks at the asked confidence, and ``lam``
the value of ``LAMBDAS`` (the paper's grid, which MAPIE also uses) with the smallest mean
set size on those rows, the smallest value winning ties.

References
----------
A. Angelopoulos, S. Bates, J. Malik and M. I. Jordan, "Uncertainty sets for image
classifiers using conformal prediction", ICLR 2021.
"""

from __future__ import annotations

import numpy as np

from .aps import above_and_rank, own
from .quantile import TIE, finite_sample_quantile, place_threshold

__all__ = ["LAMBDAS", "choose", "class_scores", "penalised"]

#: The paper's grid for ``lam``.
LAMBDAS = (0.001, 0.01, 0.1, 0.2, 0.5)


def penalised(scores, rank, lam: float, k_reg: int):
    """``scores + lam * max(rank - k_reg, 0)`` (the graph's ``Max``, ``Mul``, ``Add``)."""
    return scores + lam * np.maximum(rank - float(k_reg), 0.0)


def class_scores(proba, lam: float, k_reg: int, uniforms=None, tie: float = TIE):
    """Every class's RAPS score, (n, K)."""
    proba = np.asarray(proba, dtype=np.float64)
    mass, rank = above_and_rank(proba, tie)
    return penalised(own(mass, proba, uniforms), rank, lam, k_reg)


def choose(proba, y_index, confidence: float, uniforms, *, lam=None, k_reg=None, tie: float = TIE):
    """``(lam, k_reg)`` chosen on tuning rows (their probabilities, true classes and,
    for randomised scores, one uniform draw each; None for the deterministic ones).

    ``k_reg``: the finite-sample quantile of the true classes' ranks at ``confidence``
    (capped at K); ``lam``: the grid value with the smallest mean deterministic set
    size on these rows, each from the threshold of their randomised scores.
    """
    proba = np.asarray(proba, dtype=np.float64)
    rows = np.arange(proba.shape[0])
    mass, rank = above_and_rank(proba, tie)
    if k_reg is None:
        found = finite_sample_quantile(rank[rows, y_index], confidence)
        k_reg = int(min(found, proba.shape[1])) if np.isfinite(found) else proba.shape[1]
    if lam is None:
        drawn = own(mass, proba, uniforms)[rows, y_index]
        best = np.inf
        for candidate in LAMBDAS:
            true = penalised(drawn, rank[rows, y_index], candidate, k_reg)
            threshold = place_threshold(true, finite_sample_quantile(true, confidence), tie)
            scores = penalised(mass, rank, candidate, k_reg)
            size = float(np.mean(np.sum(scores <= threshold, axis=1)))
            if size < best:
                best, lam = size, candidate
    return float(lam), int(k_reg)
