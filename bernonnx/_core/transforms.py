"""Score-to-[0, 1] transforms placed in front of a Bernstein polynomial.

A Bernstein polynomial lives on ``[0, 1]``; classifier scores do not. Each
transform is fitted on the calibration scores, is non-decreasing, and is
built from plain ONNX operators (Sub, Mul, Clip, Sigmoid, or a sum of
clipped ramps), so the converter emits the same formula.

``minmax``
    ``u = clip((s - shift) * scale, 0, 1)`` with ``shift = min``,
    ``scale = 1 / (max - min)`` (the blog post's scaling). Outliers squeeze the bulk of the
    data into a narrow slice of ``[0, 1]``; scores outside the fitted range
    are tied at 0 or 1.
``logistic``
    ``u = 1 / (1 + exp(-z))`` with ``z = scale * max(s - shift, 0) +
    scale_below * min(s - shift, 0)``: ``shift`` is the weighted median and
    the two slopes put the 10th and 90th percentiles on 0.1 and 0.9, so
    skewed scores (probabilities, boosted trees) are spread as well as
    symmetric ones, whatever their units. Strictly increasing on the whole
    real line: no clipping, no ties outside the fitted range. Measured
    against a symmetric IQR-scaled sigmoid, it kept the AUC of GaussianNB
    probabilities that the symmetric map saturated.
``quantile``
    The empirical CDF (Wang & Liu's choice) as a piecewise-linear map through
    ``n_knots + 1`` weighted quantiles ``knots`` to ``levels``, clipped to
    ``[0, 1]`` outside the fitted range.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from .quantiles import weighted_quantile

TRANSFORMS = ("logistic", "quantile", "minmax")

#: The logistic transform maps these percentiles to themselves.
_TAIL = 0.1
#: expit(z) = 1 - _TAIL at z = logit(1 - _TAIL).
_TAIL_LOGIT = float(logit(1 - _TAIL))


#: Scores whose largest magnitude lies outside ``[2^-SAFE_EXPONENT,
#: 2^SAFE_EXPONENT]`` are multiplied by a power of two first (see
#: :func:`score_exponent`); inside, nothing changes.
SAFE_EXPONENT = 500

#: Largest slope of a transform: spreads below ~1e-300 (subnormal scores)
#: would give an infinite slope and inf * 0 = NaN.
_MAX_SLOPE = 1e300
#: Score differences are clipped here before the slope multiplies them, so
#: that |s - shift| overflowing to inf (|s| near 1.8e308) cannot meet a zero
#: slope (constant scores) and give NaN.
_MAX_DIFF = 1e300


def score_exponent(s: np.ndarray) -> int:
    """The power of two ``e`` that brings extreme but finite scores near 1.

    Scores of 1e300 (spreads overflow, differences get clipped) or denormal
    ones (slopes overflow, products underflow) cannot be transformed as they
    are. Multiplying by ``2^e`` is exact (a change of exponent only, for
    results that are normal numbers), keeps the order and brings the largest
    magnitude into ``[0.5, 1)``. ``0`` unless the largest magnitude lies
    outside ``[2^-SAFE_EXPONENT, 2^SAFE_EXPONENT]``, so ordinary scores and
    the fitted parameters read from them are untouched.
    """
    # two reductions, no |s| array (a third of the time at n = 1e6)
    top = max(float(np.max(s)), -float(np.min(s))) if np.size(s) else 0.0
    if top == 0.0 or 2.0**-SAFE_EXPONENT <= top <= 2.0**SAFE_EXPONENT:
        return 0
    return -int(np.frexp(top)[1])


def exponent_factors(exponent: int) -> tuple[float, float]:
    """``2^exponent`` as two float64 factors (``2^1074`` alone overflows).

    Python and the ONNX graphs both multiply by the first, then the second,
    so they round alike.
    """
    half = int(exponent) // 2
    return 2.0**half, 2.0 ** (int(exponent) - half)


def rescale(s: np.ndarray, exponent) -> np.ndarray:
    """``s * 2^exponent`` in float64 (``exponent`` an int, or one per column)."""
    s = np.asarray(s, dtype=np.float64)
    exponent = np.asarray(exponent)
    if not exponent.any():
        return s
    first, second = np.vectorize(exponent_factors, otypes=[float, float])(exponent)
    # a score far beyond the fitted scale (1e300 after a fit on 1e-182) overflows
    # to +-inf, which the transforms map to their limits, as the graph's Mul does
    with np.errstate(over="ignore", under="ignore"):
        return s * first * second


def _slope(rise: float, spread: float) -> float:
    """``rise / spread`` capped at ``_MAX_SLOPE``; 0 for a zero spread."""
    if not spread > 0:
        return 0.0
    # compared before dividing: a subnormal spread (scores 1e-308 apart) would
    # overflow the quotient, and _MAX_SLOPE * spread overflows from spread 1.8e8
    if spread <= rise / _MAX_SLOPE:
        return _MAX_SLOPE
    return float(rise / spread)


def clipped_log_odds(p: np.ndarray, eps: float) -> np.ndarray:
    """``log(q) - log(1 - q)`` with ``q = clip(p, eps, 1 - eps)``: finite for
    probabilities 0 and 1 when ``eps > 0``. The ONNX graphs clip alike."""
    q = np.clip(p, eps, 1.0 - eps)
    return np.log(q) - np.log1p(-q)


def fit_transform_params(kind: str, s: np.ndarray, w: np.ndarray, n_knots: int = 64) -> dict:
    """Fit the parameters of transform ``kind`` on scores ``s`` with weights ``w``.

    Returns a dict of plain floats / arrays (``shift``, ``scale``,
    ``scale_below`` or ``knots``, ``levels``). Constant scores give ``scale = 0`` (minmax,
    logistic) or a single knot (quantile): the transform is then constant and
    the calibrator predicts the base rate, with no division by zero.
    """
    return transform_params(
        kind, float(s.min()), float(s.max()), lambda p: weighted_quantile(s, w, p), n_knots
    )


def transform_params(kind: str, lo: float, hi: float, quantiles, n_knots: int = 64) -> dict:
    """:func:`fit_transform_params` from the scores' range and ``quantiles(probs)``.

    ``quantiles`` returns the weighted quantiles of the scores at the levels
    ``probs``: in memory by sorting, elsewhere by passes over the data
    (:func:`bernonnx._core.quantiles.weighted_quantiles`).
    """
    if kind == "minmax":
        return {"shift": lo, "scale": _slope(1.0, hi - lo)}
    if kind == "logistic":
        q_lo, mid, q_hi = quantiles(np.array([_TAIL, 0.5, 1 - _TAIL]))
        # a percentile tied with the median (heavy ties) falls back to the
        # extreme on that side, then to the other side's spread
        below = mid - q_lo if q_lo < mid else mid - lo
        above = q_hi - mid if q_hi > mid else hi - mid
        below = below if below > 0 else above
        above = above if above > 0 else below
        return {
            "shift": float(mid),
            "scale": _slope(_TAIL_LOGIT, above),
            "scale_below": _slope(_TAIL_LOGIT, below),
        }
    if kind == "quantile":
        probs = np.linspace(0.0, 1.0, n_knots + 1)
        knots = np.array(quantiles(probs), dtype=np.float64)
        knots[0], knots[-1] = lo, hi
        knots, first = np.unique(knots, return_index=True)
        if knots.shape[0] == 1:
            return {"knots": knots, "levels": np.zeros(1)}
        # ties collapse several quantile levels onto one knot: keep the first
        # level, then stretch to [0, 1] so the full polynomial range is used
        levels = probs[first]
        levels = (levels - levels[0]) / (levels[-1] - levels[0])
        return {"knots": knots, "levels": levels}
    raise ValueError(f"transform must be one of {TRANSFORMS}, got {kind!r}")


def logistic_z(s: np.ndarray, params: dict) -> np.ndarray:
    """``z`` of the logistic transform, ``u = expit(z)``: two slopes around ``shift``.

    Products may overflow to +-inf (never NaN: the difference is clipped to a
    finite value first); ``expit`` sends +-inf to its limits 0 and 1.
    """
    with np.errstate(over="ignore"):
        d = np.subtract(s, params["shift"])
        np.minimum(d, _MAX_DIFF, out=d)
        np.maximum(d, -_MAX_DIFF, out=d)
        z = np.maximum(d, 0.0)
        z *= params["scale"]
        np.minimum(d, 0.0, out=d)
        d *= params["scale_below"]
        z += d
    return z


def logistic_neg_abs_z_into(s, params: dict, lower, out, scratch) -> None:
    """``lower = z <= 0`` and ``out = -|z|`` of :func:`logistic_z`, bit for bit, into buffers.

    What the Bernstein polynomial of the logistic transform reads (``u / v =
    e^z``), in five passes and two reductions instead of ``z``'s eight passes,
    two allocations, ``abs`` and ``negative``. With ``d`` the clipped ``s -
    shift``, ``z`` is ``d * scale`` for ``d > 0`` and ``d * scale_below``
    otherwise (the other product is a zero added exactly), so ``-|z| = min(d *
    -scale, d * scale_below)`` (one product is ``>= 0``, the other ``<= 0``;
    negating a factor negates a rounded product exactly) and ``z <= 0`` exactly
    where ``d * -scale >= 0`` (a product that underflows to 0 included).
    """
    with np.errstate(over="ignore"):
        np.subtract(s, params["shift"], out=scratch)
        # two reductions instead of two passes that store: the clip is rarely needed
        if scratch.size and not -_MAX_DIFF <= scratch.min() <= scratch.max() <= _MAX_DIFF:
            np.minimum(scratch, _MAX_DIFF, out=scratch)
            np.maximum(scratch, -_MAX_DIFF, out=scratch)
        np.multiply(scratch, -params["scale"], out=out)
        np.greater_equal(out, 0.0, out=lower)
        np.multiply(scratch, params["scale_below"], out=scratch)
        np.minimum(out, scratch, out=out)


def apply_transform(
    kind: str, s: np.ndarray, params: dict, with_v: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """Map scores to ``(u, v)`` with ``u`` in ``[0, 1]`` and ``v = 1 - u``; float64.

    ``v`` is computed on its own where that is more accurate: for the
    logistic transform ``v = expit(-z) = 1 / (1 + exp(z))``, which keeps full relative
    precision where ``u`` rounds to 1, so scores far in the upper tail stay
    distinct after calibration. ``with_v=False`` returns ``(u, None)``.
    """
    s = np.asarray(s, dtype=np.float64)
    if kind == "quantile":
        knots, levels = params["knots"], params["levels"]
        u = np.zeros_like(s) if knots.shape[0] == 1 else np.interp(s, knots, levels)
    elif kind == "minmax":
        # a product may overflow to +-inf (never NaN: d is finite); clip maps it to 0 or 1
        with np.errstate(over="ignore"):
            d = np.clip(s - params["shift"], -_MAX_DIFF, _MAX_DIFF)
            u = np.clip(d * params["scale"], 0.0, 1.0)
    else:
        z = logistic_z(s, params)
        return expit(z), expit(-z) if with_v else None
    return u, (1.0 - u) if with_v else None
