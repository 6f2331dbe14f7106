"""Exact rescaling by powers of two, for fits on scores or weights at extreme scales.

A fit whose solution is equivariant under scaling (a temperature, an unpenalised affine
map, a weighted sum's minimiser) can run on ``x * 2**e`` instead of ``x``: the product
is exact wherever it is a normal float, so the rescaled problem is the same problem,
and it keeps squares, reciprocals and sums in range. The estimators rescale only where
the magnitude is beyond ``2**LIMIT`` or below ``2**-LIMIT``, so that ordinary data
give the results they always gave, bit for bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LIMIT", "factors", "rescaled", "unit_exponent"]

#: Magnitudes beyond ``2**LIMIT`` or below ``2**-LIMIT`` are rescaled: their squares
#: (a Hessian, ``half_width ** 2``) or reciprocals (a slope per unit) leave float64.
LIMIT = 500


def factors(exponent: int) -> tuple[float, float]:
    """``2**exponent`` as two factors float64 holds (``2**1026`` is beyond its range);
    multiplying by each in turn is exact wherever the result is a normal float."""
    half = exponent // 2
    return 2.0**half, 2.0 ** (exponent - half)


def unit_exponent(magnitude: float) -> int:
    """The ``e`` with ``magnitude * 2**e`` in ``[0.5, 1)`` when ``magnitude`` is beyond
    ``2**LIMIT`` or below ``2**-LIMIT`` (and positive), else 0 (no rescaling)."""
    if not magnitude > 0 or not np.isfinite(magnitude):
        return 0
    exponent = int(np.frexp(magnitude)[1])
    return -exponent if abs(exponent) > LIMIT else 0


def rescaled(x: np.ndarray, exponent: int) -> np.ndarray:
    """``x * 2**exponent`` by :func:`factors` (over- and underflow allowed: +-inf, 0)."""
    if exponent == 0:
        return x
    first, second = factors(exponent)
    with np.errstate(over="ignore", under="ignore"):
        return (x * first) * second
