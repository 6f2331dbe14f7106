"""The strictly increasing tail term of the logistic-transform Bernstein calibrator.

A monotone Bernstein polynomial of ``u = expit(z)`` is bounded: it tends to
``c_0`` and ``c_d`` as ``z`` goes to -inf and +inf. In floating point it reaches
them: once ``u`` (or ``1 - u``) is below the rounding unit of the log-odds, every
score further out gets the same probability. Naive Bayes log-odds, which span
-5e8 to 1e4, land there by the hundred (measured: up to 239 new ties among the
test scores of one table, and the test AUC moved by up to 3e-5).

The term ``tail_slope * sign(z) * log(1 + min(|z|, TAIL_CAP))`` added to the
polynomial keeps the map strictly increasing where the polynomial is flat in
floating point, and still bounded: at most ``tail_slope * 230`` (0.023 at the
default slope) for any score. Its increments between two scores are
``tail_slope * dz / (1 + |z|)``: at ``tail_slope = 1e-4`` they exceed the
rounding of a log-odds of magnitude 4 (``8.9e-16``) down to gaps ``dz`` of
``1e-11 (1 + |z|)``. On the quality study's 120 fits this kept apart every pair
of neighbouring test scores more than 4 ulps apart (naive Bayes scores near -5e8
are ``1e-10`` apart relative). Scores a few units in the last place apart
(a random forest's averaged votes) cannot be kept apart by any computation
that subtracts a shift first.

The cap makes ``+-inf`` (which the ONNX graph meets, and Python refuses) reach
the same limit as the largest finite scores: after the exponent rescaling of
:func:`bernonnx._core.transforms.score_exponent`, ``|z|`` of a score of 1e308 is
above 1e149.
"""

from __future__ import annotations

import numpy as np

#: Slope of the tail term in log-odds per unit of ``log(1 + |z|)``. Unfitted: on
#: the quality study's 120 fits it moved the test log loss by at most 6e-6 relative.
TAIL_SLOPE = 1e-4
#: ``|z|`` is capped here before the log: the term is bounded by ``TAIL_SLOPE * 230``.
TAIL_CAP = 1e100


def log_tail_into(
    neg_abs_z: np.ndarray, lower: np.ndarray, slope: float, out, scratch=None
) -> np.ndarray:
    """``out = slope * sign(z) * log(1 + min(|z|, TAIL_CAP))`` from ``-|z|`` and ``z <= 0``.

    ``log(1 - max(-|z|, -cap)) * slope``, negated where ``z <= 0`` (a zero at ``z =
    0`` either way): the ONNX converter emits these operations
    (``converters/bernstein.py``, ``_tail``). ``scratch`` (float64, the shape of
    ``out``) is a work buffer, allocated when None.

    Bit for bit the same as the plain sequence of those operations, cheaper: the
    ``max`` is one reduction when no ``|z|`` reaches the cap (it is the identity
    then), and the slope and the negation are one product by ``-slope`` or
    ``slope`` (``x * -s`` is ``-(x * s)`` exactly: rounding is symmetric), the
    factor built as ``lower * -2s + s`` (exact: ``-2s + s = -s``, ``0 + s = s``).
    A masked ``negative(where=lower)`` took 25 to 30 ns a score, more than the log.
    """
    if neg_abs_z.size and neg_abs_z.min() < -TAIL_CAP:
        np.maximum(neg_abs_z, -TAIL_CAP, out=out)
        np.subtract(1.0, out, out=out)
    else:
        np.subtract(1.0, neg_abs_z, out=out)
    np.log(out, out=out)
    factor = np.empty_like(out) if scratch is None else scratch
    np.multiply(lower, -2.0 * slope, out=factor)
    factor += slope
    out *= factor
    return out
