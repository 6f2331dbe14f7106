"""ONNX converter of :class:`bernonnx.MultivariateBernsteinCalibrator`
(mirrors ``bernonnx/calibrators/multivariate.py``).

Nodes emitted on a float64 score matrix ``s`` (N, M), one column per
classifier, all columns transformed at once (elementwise, so an infinite
score in one column never meets another column's slope)::

    s = Mul(Mul(s, 2^a), 2^b), a + b = score_exponent_ per column   (if any is not 0)
    d = Clip(s - shift, -1e300, 1e300)                                   (N, M)
    logistic  z = Max(d, 0) * scale + Min(d, 0) * scale_below
              uv = Sigmoid(Concat(z, -z))                   [u_1..u_M, v_1..v_M]
    minmax    u = Clip(d * scale, 0, 1);            uv = Concat(u, 1 - u)
    quantile  r = Clip((Gather(s, column of each knot) - knots) / widths, 0, 1)
              u = MatMul(r, block-diagonal diff(levels));  uv = Concat(u, 1 - u)
    uv = Max(uv, 1e-300)

    basis="exp" (default), the whole tensor basis in one product:
        B = Exp(Gemm(Log(uv), E, log C))     E[m, k] = k_m, E[M + m, k] = K_m - k_m
                                              log C[k] = sum_m log C(K_m, k_m)
    basis="pow": per column b_m = Pow(u_m, k) * Pow(v_m, K_m - k) * C(K_m, k),
        then B = b_1 (x) b_2 (x) ... row by row (Reshape and broadcast Mul)

    eta = Gemm(B, ravel(coef - c0), c0)                     c0 = coef[0, ..., 0]
    p   = Sigmoid(eta) (loss="log")  |  Clip(eta, 0, 1) (loss="squared")

This is the formula ``MultivariateBernsteinCalibrator.predict_proba``
evaluates (its Notes), column ``m`` of the coefficient tensor's C order being
axis ``m``. The ``1e-300`` floor keeps ``Log`` finite (see
``converters/bernstein.py``). A constant column has slope 0 (minmax,
logistic: ``u`` is constant) or no knots (quantile: ``u = 0``), as in Python.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from bernonnx._core.transforms import _MAX_DIFF
from bernonnx.converters._graph import GraphWriter, rescale_scores
from bernonnx.converters.bernstein import BASES, TINY, log_binomial, pow_basis


def _quantile_u(g: GraphWriter, s: str, cal) -> str:
    """``u`` (N, M) of the quantile transform: per column a sum of clipped ramps."""
    n_cols = len(cal.knots_)
    columns, lows, slopes, blocks = [], [], [], []
    for m, (knots, levels) in enumerate(zip(cal.knots_, cal.levels_, strict=True)):
        knots, levels = np.asarray(knots, np.float64), np.asarray(levels, np.float64)
        if knots.shape[0] < 2:
            continue  # a constant column: u = 0, no ramp
        columns.append(np.full(knots.shape[0] - 1, m))
        lows.append(knots[:-1])
        slopes.append(1.0 / np.diff(knots))
        block = np.zeros((knots.shape[0] - 1, n_cols))
        block[:, m] = np.diff(levels)
        blocks.append(block)
    zero, one = g.const("zero", 0.0), g.const("one", 1.0)
    if not columns:
        # every column constant: u = 0 (NaN stays NaN, +-inf gives 0)
        return g.node("Clip", [s, zero, zero], "u")
    index = g.const("knot_column", np.concatenate(columns), TensorProto.INT64)
    repeated = g.node("Gather", [s, index], axis=1)
    ramps = g.node(
        "Mul",
        [
            g.node("Sub", [repeated, g.const("knots", np.concatenate(lows)[None, :])]),
            g.const("slopes", np.concatenate(slopes)[None, :]),
        ],
    )
    ramps = g.node("Clip", [ramps, zero, one])
    # the block-diagonal product adds exact zeros from the other columns' ramps
    return g.node("MatMul", [ramps, g.const("dlevels", np.vstack(blocks))], "u")


def _uv(g: GraphWriter, s: str, cal) -> str:
    """``[u_1..u_M, v_1..v_M]`` (N, 2M), floored at 1e-300."""
    s = rescale_scores(g, s, getattr(cal, "score_exponent_", 0))
    if cal.score_transform == "quantile":
        u = _quantile_u(g, s, cal)
        uv = g.node("Concat", [u, g.node("Sub", [g.const("one", 1.0), u])], axis=1)
    else:
        d = g.node(
            "Clip",
            [
                g.node("Sub", [s, g.const("shift", np.asarray(cal.shift_)[None, :])]),
                g.const("lo", -_MAX_DIFF),
                g.const("hi", _MAX_DIFF),
            ],
        )
        zero = g.const("zero", 0.0)
        if cal.score_transform == "minmax":
            scaled = g.node("Mul", [d, g.const("scale", np.asarray(cal.scale_)[None, :])])
            u = g.node("Clip", [scaled, zero, g.const("one", 1.0)], "u")
            uv = g.node("Concat", [u, g.node("Sub", [g.const("one", 1.0), u])], axis=1)
        else:
            above = g.node("Mul", [g.node("Max", [d, zero]), g.const("scale", cal.scale_[None])])
            below = g.node(
                "Mul", [g.node("Min", [d, zero]), g.const("scale_below", cal.scale_below_[None])]
            )
            z = g.node("Add", [above, below], "z")
            uv = g.node("Sigmoid", [g.node("Concat", [z, g.node("Neg", [z])], axis=1)])
    return g.node("Max", [uv, g.const("tiny", TINY)], "uv")


def _tensor_index(degrees) -> np.ndarray:
    """``(P, M)`` multi-indices of the coefficient tensor in C order."""
    grids = np.meshgrid(*(np.arange(d + 1) for d in degrees), indexing="ij")
    return np.stack([grid.ravel() for grid in grids], axis=1)


def _basis_exp(g: GraphWriter, uv: str, degrees) -> str:
    k = _tensor_index(degrees).astype(np.float64)
    top = np.asarray(degrees, dtype=np.float64)
    exponents = np.vstack([k.T, (top - k).T])  # (2M, P)
    log_binom = log_binomial(top[None, :], k).sum(axis=1)
    exponent = g.node(
        "Gemm", [g.node("Log", [uv]), g.const("exponents", exponents), g.const("log_c", log_binom)]
    )
    return g.node("Exp", [exponent], "basis")


def _basis_pow(g: GraphWriter, uv: str, degrees) -> str:
    n_cols = len(degrees)
    out, width = None, 1
    for m, d in enumerate(degrees):
        b = pow_basis(g, g.column(uv, m), g.column(uv, n_cols + m), d)
        if out is None:
            out, width = b, d + 1
            continue
        # row-wise outer product, C order: (N, width, 1) * (N, 1, d + 1)
        left = g.node("Reshape", [out, g.const("shape_l", [0, width, 1], TensorProto.INT64)])
        right = g.node("Reshape", [b, g.const("shape_r", [0, 1, d + 1], TensorProto.INT64)])
        width *= d + 1
        out = g.node(
            "Reshape",
            [g.node("Mul", [left, right]), g.const("shape", [0, width], TensorProto.INT64)],
        )
    return out


def emit_multivariate(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Emit the calibrator on the float64 (N, M) score matrix ``scores``.

    Returns the (N, 1) float64 probability of the positive class, or with
    ``pair=True`` the (N, 2) ``[1 - p, p]`` in the same nodes (as
    ``converters.bernstein.emit_bernstein`` does).
    """
    if basis not in BASES:
        raise NotImplementedError(f"basis must be one of {BASES}, got {basis!r}")
    coef = np.asarray(cal.coef_, dtype=np.float64)
    degrees = tuple(int(d) for d in cal.degrees_)
    size = math.prod(d + 1 for d in degrees)
    c0 = float(coef.flat[0])
    rise = (coef.ravel() - c0).reshape(size, 1)
    bias = np.array([c0])
    if pair:
        rise = np.hstack([-rise, rise])
        bias = np.array([-c0, c0]) if cal.loss == "log" else np.array([1.0 - c0, c0])
    uv = _uv(g, scores, cal)
    b = (_basis_exp if basis == "exp" else _basis_pow)(g, uv, degrees)
    eta = g.node("Gemm", [b, g.const("rise", rise), g.const("c0", bias)], "eta")
    if cal.loss == "log":
        return g.node("Sigmoid", [eta], "p")
    return g.node("Clip", [eta, g.const("zero", 0.0), g.const("one", 1.0)], "p")
