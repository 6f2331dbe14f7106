"""Generated scores and labels shared by the test modules (``from _scores import ...``).

The truth is increasing in every score, so a monotone calibrator can fit it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_score_columns", "make_scores"]


def make_scores(n, seed=0, *, scale=1.0, offset=1.0, ties=False, tail=False):
    """One score column ``s ~ scale * N(0, 1)`` and labels
    ``y ~ Bernoulli(sigmoid(2.5 tanh(s / scale) - offset))``.

    ``ties``: scores rounded to one decimal (many tied values); ``tail``: 1% of the
    scores, drawn after them, multiplied by 30 (far-out margins, as from a linear SVM).
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(size=n) * scale
    if ties:
        s = np.round(s, 1)
    if tail:
        s[rng.random(n) < 0.01] *= 30
    y = rng.random(n) < 1 / (1 + np.exp(-(2.5 * np.tanh(s / scale) - offset)))
    return s, y.astype(int)


def make_score_columns(n, n_cols=2, seed=0):
    """Correlated scores of ``n_cols`` classifiers; the truth is increasing in each."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n)
    s = latent[:, None] + rng.normal(scale=0.8, size=(n, n_cols))
    eta = 2.5 * np.tanh(s[:, 0]) + s[:, 1:].sum(axis=1) / max(n_cols - 1, 1) - 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return s, y
