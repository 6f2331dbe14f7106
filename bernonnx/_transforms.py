"""Score-to-[0, 1] transforms placed in front of a Bernstein polynomial.

A Bernstein polynomial lives on ``[0, 1]``; classifier scores do not. Each
transform is fitted on the calibration scores, is non-decreasing, and is
built from plain ONNX operators (Sub, Mul, Clip, Sigmoid, or a sum of
clipped ramps), so the converter emits the same formula.

``minmax``
    ``u = clip((s - shift) * scale, 0, 1)`` with ``shift = min``,
    ``scale = 1 / (max - min)`` (seed 000). Outliers squeeze the bulk of the
    data into a narrow slice of ``[0, 1]``; scores outside the fitted range
    are tied at 0 or 1.
``logistic``
    ``u = 1 / (1 + exp(-(s - shift) * scale))`` with ``shift`` the weighted
    median and ``scale = 2 ln 3 / IQR``, so the quartiles land on 0.25 and
    0.75 whatever the units of the score. Strictly increasing on the whole
    real line: no clipping, no ties outside the fitted range.
``quantile``
    The empirical CDF (seed 002) as a piecewise-linear map through
    ``n_knots + 1`` weighted quantiles ``knots`` to ``levels``, clipped to
    ``[0, 1]`` outside the fitted range.
"""

from __future__ import annotations

import numpy as np

from ._stats import weighted_quantile

TRANSFORMS = ("logistic", "quantile", "minmax")

#: Quartiles -> 0.25 / 0.75: sigmoid(z) = 0.75 at z = ln 3.
_LOGISTIC_IQR_FACTOR = 2.0 * np.log(3.0)
#: IQR of a normal distribution in standard deviations (fallback when IQR = 0).
_NORMAL_IQR = 1.3489795003921634


def fit_transform_params(kind: str, s: np.ndarray, w: np.ndarray, n_knots: int = 64) -> dict:
    """Fit the parameters of transform ``kind`` on scores ``s`` with weights ``w``.

    Returns a dict of plain floats / arrays (``shift``, ``scale`` or
    ``knots``, ``levels``). Constant scores give ``scale = 0`` (minmax,
    logistic) or a single knot (quantile): the transform is then constant and
    the calibrator predicts the base rate, with no division by zero.
    """
    lo, hi = float(s.min()), float(s.max())
    if kind == "minmax":
        return {"shift": lo, "scale": 1.0 / (hi - lo) if hi > lo else 0.0}
    if kind == "logistic":
        q25, q50, q75 = weighted_quantile(s, w, np.array([0.25, 0.5, 0.75]))
        spread = q75 - q25
        if not spread > 0:
            mean = np.average(s, weights=w)
            spread = _NORMAL_IQR * np.sqrt(np.average((s - mean) ** 2, weights=w))
        if not spread > 0:
            spread = hi - lo
        scale = _LOGISTIC_IQR_FACTOR / spread if spread > 0 else 0.0
        return {"shift": float(q50), "scale": float(scale)}
    if kind == "quantile":
        probs = np.linspace(0.0, 1.0, n_knots + 1)
        knots = weighted_quantile(s, w, probs)
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


def apply_transform(kind: str, s: np.ndarray, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """Map scores to ``(u, v)`` with ``u`` in ``[0, 1]`` and ``v = 1 - u``; float64.

    ``v`` is computed on its own where that is more accurate: for the
    logistic transform ``v = 1 / (1 + exp(z))``, which keeps full relative
    precision where ``u`` rounds to 1, so scores far in the upper tail stay
    distinct after calibration.
    """
    s = np.asarray(s, dtype=np.float64)
    if kind == "quantile":
        knots, levels = params["knots"], params["levels"]
        u = np.zeros_like(s) if knots.shape[0] == 1 else np.interp(s, knots, levels)
        return u, 1.0 - u
    z = (s - params["shift"]) * params["scale"]
    if kind == "minmax":
        u = np.clip(z, 0.0, 1.0)
        return u, 1.0 - u
    # exp overflows to inf beyond |z| > 709: 1 / inf = 0, the correct limit
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z)), 1.0 / (1.0 + np.exp(z))
