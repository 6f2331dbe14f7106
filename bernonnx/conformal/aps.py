"""APS, adaptive prediction sets (Romano, Sesia & Candes 2020).

A class's score is the probability mass of the classes ranked above it plus its own:
the set grows from the most probable class until the mass reaches the threshold. Classes
whose probabilities differ by at most ``tie`` count as tied (neither is above the
other), so the score does not depend on how a sort breaks ties, and a graph whose
probabilities differ from Python's in the last bit ranks the classes as Python does.

Deterministic by default: the score is the mass strictly above the class (Romano et
al.'s score at ``u = 0`` in their notation), on the conformalization rows and on new rows
alike. A set then holds the classes ranked before the one that crosses the threshold
and that one too, it is never empty, and its coverage is at least the asked one (more
where many rows share a score: every row's top class scores 0). Randomised: the mass
above plus ``(1 - u)`` times the class's own probability, one uniform draw ``u`` per row,
on both sides (the graph takes the new rows' draws as its ``uniforms`` input): coverage
as asked on average, and the sets equal MAPIE's ``include_last_label="randomized"`` sets
for the same draws where no two probabilities tie.

MAPIE's deterministic APS (``include_last_label=True``) scores the conformalization
rows with random draws and new rows with ``u = 1``: the two sides differ, it covers more
than asked, and its sets are larger than these.

References
----------
Y. Romano, M. Sesia and E. Candes, "Classification with valid and adaptive coverage",
NeurIPS 2020.
"""

from __future__ import annotations

import numpy as np

from .quantile import TIE

__all__ = ["above_and_rank", "class_scores", "own"]

#: Rows per block of the (rows, K, K) comparison, so memory stays at about 2 ** 12 K^2.
_BLOCK = 4096


def above_and_rank(proba: np.ndarray, tie: float = TIE):
    """Mass of the classes above each class (``p_j - p_k > tie``) and each class's rank
    (1 + how many are above), both (n, K).

    The graph computes ``Sub(p_j, p_k)``, ``Greater(., tie)``, a masked ``ReduceSum``
    and a count, as here.
    """
    proba = np.asarray(proba, dtype=np.float64)
    mass = np.empty_like(proba)
    rank = np.empty(proba.shape, dtype=np.float64)
    for start in range(0, proba.shape[0], _BLOCK):
        p = proba[start : start + _BLOCK]
        above = (p[:, None, :] - p[:, :, None]) > tie  # [row, k, j]: j above k
        mass[start : start + _BLOCK] = np.sum(np.where(above, p[:, None, :], 0.0), axis=2)
        rank[start : start + _BLOCK] = 1.0 + above.sum(axis=2)
    return mass, rank


def class_scores(proba: np.ndarray, uniforms=None, tie: float = TIE) -> np.ndarray:
    """Every class's APS score, (n, K): the mass above it plus ``(1 - u)`` times its own
    probability, ``u`` one draw per row (``uniforms``); None is ``u = 1``, the mass
    above alone (the deterministic sets)."""
    proba = np.asarray(proba, dtype=np.float64)
    mass, _ = above_and_rank(proba, tie)
    return own(mass, proba, uniforms)


def own(mass: np.ndarray, proba: np.ndarray, uniforms=None) -> np.ndarray:
    """``mass + p - u p`` (the graph's ``Add``, ``Mul``, ``Sub``), or ``mass`` alone
    for ``uniforms=None`` (``u = 1``)."""
    if uniforms is None:
        return mass
    return mass + proba - np.asarray(uniforms, dtype=np.float64)[:, None] * proba
