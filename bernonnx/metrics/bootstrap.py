"""Bootstrap intervals of the metrics: rows resampled as weights; the interval is the hull
of the basic (reverse percentile) and the percentile intervals."""

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


def _interval(estimate: float, samples, confidence: float) -> tuple[float, float]:
    """The hull of the basic and the percentile bootstrap intervals, clipped below at 0.

    With ``q_lo`` and ``q_hi`` the resamples' quantiles, the basic interval
    ``(2 t - q_hi, 2 t - q_lo)`` corrects for the bias the resamples show, the percentile
    interval ``(q_lo, q_hi)`` does not (Davison and Hinkley, eqs. 5.6 and 5.18). A
    calibration error's estimate is biased upwards by noise and, through its bandwidth or
    bins, downwards by smoothing; the resamples see only the first, so neither interval
    alone covers: on 3,000 rows of a miscalibrated model (true smooth ECE 0.036 to 0.059)
    the basic 90% interval covered the truth in 78-88% of draws, the percentile one in
    78-93%, the hull in 85-95%. The hull also always contains the estimate ``t`` (each of
    the two contains it exactly when ``q_lo <= t <= q_hi``; otherwise one lies on each
    side), so a report never prints an interval that excludes its own number. Every
    metric here is non-negative, hence the clip.
    """
    finite = np.asarray(samples, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    lower = min(2 * estimate - hi, lo, estimate)
    upper = max(2 * estimate - lo, hi, estimate)
    return float(max(lower, 0.0)), float(max(upper, 0.0))


def _bootstrap_intervals(
    statistic: Callable[[np.ndarray], dict[str, float]],
    w: np.ndarray,
    keys: list[str],
    *,
    confidence: float,
    n_resamples: int,
    random_state,
) -> dict[str, tuple[float, float]]:
    """Bootstrap interval (:func:`_interval`) of each ``statistic(weights)[key]``.

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
    return {key: _interval(estimate[key], values[key], confidence) for key in keys}
