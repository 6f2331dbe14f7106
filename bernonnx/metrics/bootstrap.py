"""Bootstrap intervals of the metrics: rows resampled as weights, basic (reverse percentile)
intervals."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator

import numpy as np

from bernonnx._validation import check_int


def _check_confidence(confidence) -> None:
    if (
        not isinstance(confidence, numbers.Real)
        or isinstance(confidence, bool)
        or not 0 < confidence < 1
    ):
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}.")


def _resample_weights(w: np.ndarray, n_resamples: int, random_state) -> Iterator[np.ndarray]:
    """The weights of ``n_resamples`` bootstrap resamples of the rows.

    A resample draws ``n`` rows with replacement; a row drawn ``k`` times keeps its weight
    times ``k``, which the metrics read as the row repeated ``k`` times. Rows of weight
    zero are absent from the data, so they are never drawn.
    """
    check_int(n_resamples, "n_resamples", 1)
    rng = np.random.default_rng(random_state)
    present = np.flatnonzero(w > 0)
    for _ in range(n_resamples):
        counts = np.zeros(w.shape[0])
        counts[present] = rng.multinomial(
            present.shape[0], np.full(present.shape[0], 1.0 / present.shape[0])
        )
        yield w * counts


def _basic_interval(estimate: float, samples, confidence: float) -> tuple[float, float]:
    """The basic bootstrap interval ``(2 t - q_hi, 2 t - q_lo)``, clipped below at 0.

    A calibration error is biased upwards, and a resample (which repeats rows) more so:
    the percentile interval ``(q_lo, q_hi)`` then sits above the estimate, while the
    basic interval moves it down by the bias the resamples show (Davison and Hinkley,
    eq. 5.6). Every metric here is non-negative, hence the clip.
    """
    finite = np.asarray(samples, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(max(2 * estimate - hi, 0.0)), float(max(2 * estimate - lo, 0.0))


def _bootstrap_intervals(
    statistic: Callable[[np.ndarray], dict[str, float]],
    w: np.ndarray,
    keys: list[str],
    *,
    confidence: float,
    n_resamples: int,
    random_state,
) -> dict[str, tuple[float, float]]:
    """Basic bootstrap interval of each ``statistic(weights)[key]`` around ``statistic(w)``.

    NaN resamples (an AUC of a resample with one class) are left out of a key's
    quantiles; a key with no finite resample gets ``(nan, nan)``.
    """
    _check_confidence(confidence)
    estimate = statistic(w)
    values = {key: [] for key in keys}
    for weights in _resample_weights(w, n_resamples, random_state):
        result = statistic(weights)
        for key in keys:
            values[key].append(result[key])
    return {key: _basic_interval(estimate[key], values[key], confidence) for key in keys}
