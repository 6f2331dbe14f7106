"""The loss terms of a one-score Bernstein fit, from one pass over the rows.

Least squares as a quadratic form (:func:`least_squares_terms`, from the moments
of :func:`moments`) and the log loss with its gradient and Hessian
(:func:`logistic_terms`), in blocks of rows, in powers of the ratio of
:mod:`bernonnx._core.basis`.

Two identities make fitting independent of the sample size ``n`` after one
pass over the data:

* product rule: ``b_{j,d} b_{k,d} = C(d,j) C(d,k) / C(2d, j+k) b_{j+k,2d}``,
  so the Gram matrix ``sum_i w_i b(u_i) b(u_i)^T`` is a function of the
  ``2d + 1`` moments ``m_l = sum_i w_i b_{l,2d}(u_i)``;
* degree elevation: ``b_{j,d} = sum_k E[j, k] b_{k,D}`` for ``D >= d``, so
  the right-hand side ``sum_i w_i y_i b(u_i)`` also follows from degree-2d
  moments, and a lower-degree Gram matrix follows from a higher-degree one.
"""

from __future__ import annotations

import numpy as np

from .basis import (
    EVAL_BLOCK,
    _blocks,
    _eta_into,
    _int_power,
    _powers,
    _ratio_into,
    _rise_pair,
    _Work,
    binomial_row,
    elevation_matrix,
)


def _split_lower(x, lower, lo, up) -> None:
    """``lo = x`` on the lower rows (0 elsewhere), ``up = x`` on the others.

    Products by 1 and 0 and a difference with 0 or with itself: exact, so a
    column multiplied by ``lo`` equals the column multiplied by ``x``, then
    masked.
    """
    np.multiply(x, lower, out=lo)
    np.subtract(x, lo, out=up)


def _half_sums(powers: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``S[l] = sum_i t_i^l cols[j, i]`` for ``l = 0..2h`` (shape ``(2h + 1, k)``).

    ``cols`` has ``2k`` rows, the last ``k`` free: they receive the first
    ``k`` times ``t^h`` (``t^(h + j) = t^h t^j``), so one matrix product with
    the table of powers up to ``h`` gives all ``2h + 1`` sums.
    """
    half = powers.shape[0] - 1
    k = cols.shape[0] // 2
    np.multiply(cols[:k], powers[half], out=cols[k:])
    both = powers @ cols.T
    return np.concatenate([both[:, :k], both[1:, k:]])


def moments(
    u: np.ndarray, weights: np.ndarray, degree: int, values: np.ndarray | None = None
) -> np.ndarray:
    """Weighted sums of the degree-``degree`` basis over the data.

    Returns ``M`` of shape ``(degree + 1, c)`` with ``M[l, 0] = sum_i w_i
    b_{l,degree}(u_i)`` and, when ``values`` (shape ``(n,)`` or ``(n, c - 1)``)
    is given, ``M[l, j + 1] = sum_i w_i values_ij b_{l,degree}(u_i)``. One pass
    over ``u`` in blocks of ``basis.BLOCK`` rows: the only work that grows with ``n``.
    """
    u = np.asarray(u, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if values is not None:
        values = np.asarray(values, dtype=np.float64)
        values = values[:, None] if values.ndim == 1 else values
    c = 1 if values is None else 1 + values.shape[1]
    half = (degree + 1) // 2
    acc = np.zeros((2 * half + 1, 2 * c))
    for work, sl in _blocks(u.shape[0]):
        uc = u[sl]
        vc = np.subtract(1.0, uc, out=work.vec("v"))
        lower, big, t = work.vec("lower", bool), work.vec("big"), work.vec("t")
        _ratio_into(uc, vc, lower, big, t)
        powers = _powers(t, half, work.mat("powers", half + 1, fill_first=True))
        lead = _int_power(big, degree, work.vec("lead"), work.vec("square"))
        # rows 0..c-1: [w, w values] * big^D on the lower rows; c..2c-1: on the others
        cols = work.mat("cols", 4 * c)
        lo, up = cols[0], cols[c]
        _split_lower(lead, lower, lo, up)
        wc = w[sl]
        for j in range(1, c):
            np.multiply(values[sl, j - 1], wc, out=cols[j])
            np.multiply(cols[j], up, out=cols[c + j])
            np.multiply(cols[j], lo, out=cols[j])
        np.multiply(wc, up, out=up)
        np.multiply(wc, lo, out=lo)
        acc += _half_sums(powers, cols)
    # lower rows: b_l = C(D, l) v^D t^l; the others: b_l = C(D, l) u^D t^(D - l)
    return binomial_row(degree)[:, None] * (acc[: degree + 1, :c] + acc[degree::-1, c:])


def gram_from_moments(m2d: np.ndarray, degree: int) -> np.ndarray:
    """Gram matrix ``G[j, k] = sum_i w_i b_{j,d}(u_i) b_{k,d}(u_i)``.

    ``m2d`` holds the ``2d + 1`` weighted moments of the degree-``2d`` basis
    (first column of :func:`moments` at degree ``2 * degree``). Uses the
    product rule of the module docstring.
    """
    c = binomial_row(degree)
    c2 = binomial_row(2 * degree)
    idx = np.arange(degree + 1)
    s = idx[:, None] + idx[None, :]
    return np.outer(c, c) / c2[s] * m2d[s]


def least_squares_terms(
    u: np.ndarray, y: np.ndarray, weights: np.ndarray, degree: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Quadratic form of ``sum_i w_i (b(u_i)^T c - y_i)^2`` from one data pass.

    Returns ``(G, h, r)`` with the objective equal to ``c^T G c - 2 h^T c + r``.
    """
    m = moments(u, weights, 2 * degree, values=y)
    gram = gram_from_moments(m[:, 0], degree)
    h = elevation_matrix(degree, 2 * degree) @ m[:, 1]
    r = float(np.dot(weights, np.asarray(y, dtype=np.float64) ** 2))
    return gram, h, r


#: Factors per product of :func:`_sum_log`: 64 values in ``[1, 2]`` multiply to at
#: most ``2^64``, far from overflow.
_LOG_GROUP = 64


def _sum_log(x: np.ndarray) -> float:
    """``sum(log(x))`` for contiguous ``x`` in ``[1, 2]``: one ``log`` per 64 values.

    The log of products of 64 factors instead of a log per value (8 to 10 ns each,
    the largest cost of a pass over the rows); a product's 63 roundings move its log
    by at most ``7e-15``.
    """
    k = x.shape[0] - x.shape[0] % _LOG_GROUP
    heads = np.multiply.reduce(x[:k].reshape(_LOG_GROUP, -1), axis=0)
    return float(np.log(heads).sum() + np.log(x[k:]).sum())


def _log_loss_rows(eta, ys, ws, uniform: bool, work: _Work) -> tuple[float, np.ndarray]:
    """``sum w [log(1 + e^eta) - y eta]`` and ``p = expit(eta)`` (in a buffer of ``work``).

    One ``exp``: ``e = exp(-|eta|)``, ``log(1 + e^eta) = max(eta, 0) + log(1 + e)``
    and ``q = 1 / (1 + e) = max(p, 1 - p)``; ``p = 1/2 + sign(eta) (q - 1/2)`` is
    ``q`` or ``1 - q``, both exact for ``q`` in ``[1/2, 1]``: ``p`` is within
    ``6e-17`` of the true value, which is what the gradient ``sum w (p - y) b``
    needs. ``uniform`` (all weights equal) sums the logs by :func:`_sum_log`.
    """
    e, den, tmp = work.vec("e"), work.vec("den"), work.vec("tmp")
    np.abs(eta, out=e)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.maximum(eta, 0.0, out=tmp)
    tmp -= np.multiply(ys, eta, out=den)
    f = float(ws @ tmp)
    np.add(e, 1.0, out=den)
    if uniform:
        f += float(ws[0]) * _sum_log(den)
    else:
        f += float(ws @ np.log1p(e, out=tmp))
    p = np.divide(1.0, den, out=den)
    p -= 0.5
    np.copysign(p, eta, out=p)
    p += 0.5
    return f, p


def _all_equal(w: np.ndarray) -> bool:
    return bool(w.shape[0]) and w.min() == w.max()


def logistic_terms(
    u: np.ndarray,
    v: np.ndarray | None,
    y: np.ndarray,
    weights: np.ndarray,
    coef: np.ndarray,
    hessian: bool = True,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Sum of ``w [log(1 + e^eta) - y eta]``, its gradient and Hessian (or ``None``).

    ``eta = b(u)^T coef``; one pass over the rows in blocks of ``basis.BLOCK``,
    in powers of ``t`` (:func:`_ratio_into`). The Hessian ``sum_i w_i p_i (1 -
    p_i) b b^T`` is exact and cheap: ``b_j b_k`` depends on ``j + k`` only (up
    to binomials), so it needs ``2d + 1`` weighted sums of powers, not ``(d +
    1)^2`` products per row. Without the Hessian (the passes over all rows of a
    log-loss fit), :func:`_loss_gradient`.
    """
    if not hessian:
        return (*_loss_gradient(u, v, y, weights, coef), None)
    d = coef.shape[0] - 1
    binom = binomial_row(d)
    pair = _rise_pair(coef)
    uniform = _all_equal(weights)
    f = 0.0
    # rows of cols: gradient (lower, upper), then curvature (lower, upper) and its t^d copies
    acc = np.zeros((d + 1, 6))
    for work, sl in _blocks(u.shape[0]):
        uc = u[sl]
        vc = np.subtract(1.0, uc, out=work.vec("v")) if v is None else v[sl]
        lower, big, t = work.vec("lower", bool), work.vec("big"), work.vec("t")
        _ratio_into(uc, vc, lower, big, t)
        powers = _powers(t, d, work.mat("powers", d + 1, fill_first=True))
        lead = _int_power(big, d, work.vec("lead"), work.vec("square"))
        eta = _eta_into(pair, coef[0], powers, lead, lower, work.mat("both", 2), work.vec("eta"))
        ws, ys = weights[sl], y[sl]
        fb, p = _log_loss_rows(eta, ys, ws, uniform, work)
        f += fb
        cols, tmp = work.mat("cols", 6), work.vec("tmp")
        r = np.subtract(p, ys, out=cols[1])  # w (p - y) big^d
        r *= ws
        r *= lead
        _split_lower(r, lower, cols[0], cols[1])
        a = np.multiply(ws, p, out=cols[3])  # w p (1 - p) big^(2d)
        a *= np.subtract(1.0, p, out=tmp)
        a *= np.multiply(lead, lead, out=tmp)
        _split_lower(a, lower, cols[2], cols[3])
        np.multiply(cols[2:4], powers[d], out=cols[4:6])
        acc += powers @ cols.T
    # lower rows: b_k = C(d, k) v^d t^k; the others: b_k = C(d, k) u^d t^(d - k)
    g = binom * (acc[:, 0] + acc[::-1, 1])
    # b_j b_k = C(d, j) C(d, k) big^(2d) t^(j + k) (or t^(2d - j - k)): a Hankel matrix
    low = np.concatenate([acc[:, 2], acc[1:, 4]])
    high = np.concatenate([acc[:, 3], acc[1:, 5]])
    m2 = low + high[::-1]
    idx = np.arange(d + 1)
    h = np.outer(binom, binom) * m2[idx[:, None] + idx[None, :]]
    return f, g, h


def _loss_gradient(u, v, y, weights, coef) -> tuple[float, np.ndarray]:
    """The log loss and its gradient (:func:`logistic_terms` without the Hessian).

    Each block's lower rows and the others are gathered apart (blocks of
    ``basis.EVAL_BLOCK`` rows), so each group needs one product with its table of
    powers for ``eta`` (its own coefficients) and one for the gradient, where
    the whole block needed two of each (both polynomials, then the masked
    gradients). Measured at n = 1e6, degree 20: 0.6x the time of that pass,
    0.8x the time of Horner's ``eta`` and powers of ``t`` taken one at a time.
    The table takes ``(d + 1) * EVAL_BLOCK * 8`` bytes at most (26 MB at degree
    100).
    """
    d = coef.shape[0] - 1
    pair = _rise_pair(coef)
    uniform = _all_equal(weights)
    f = 0.0
    acc = np.zeros((2, d + 1))  # sums of r t^k over the lower rows, the others
    for work, sl in _blocks(u.shape[0], EVAL_BLOCK):
        uc, yc, wc = u[sl], y[sl], weights[sl]
        vc = np.subtract(1.0, uc, out=work.vec("v")) if v is None else v[sl]
        lower = np.less_equal(uc, vc, out=work.vec("lower", bool))
        groups = (np.flatnonzero(lower), np.flatnonzero(~lower))
        for g, idx in enumerate(groups):
            if not idx.shape[0]:
                continue
            work.trim(idx.shape[0])
            # t = min(u, v) / max(u, v) and lead = max(u, v)^d, as _ratio_into
            small, large = (uc, vc) if g == 0 else (vc, uc)
            # mode="clip": with out= and the default "raise", take copies twice
            big = np.take(large, idx, out=work.vec("big"), mode="clip")
            t = np.take(small, idx, out=work.vec("t"), mode="clip")
            t /= big
            ys = np.take(yc, idx, out=work.vec("ys"), mode="clip")
            ws = np.take(wc, idx, out=work.vec("ws"), mode="clip")
            powers = _powers(t, d, work.mat("powers", d + 1, fill_first=True))
            lead = _int_power(big, d, work.vec("lead"), work.vec("square"))
            eta = np.matmul(pair[g], powers, out=work.vec("eta"))
            eta *= lead
            eta += coef[0]
            fg, p = _log_loss_rows(eta, ys, ws, uniform, work)
            f += fg
            r = np.subtract(p, ys, out=p)  # w (p - y) big^d
            r *= ws
            r *= lead
            acc[g] += powers @ r
    # lower rows: b_k = C(d, k) v^d t^k; the others: b_k = C(d, k) u^d t^(d - k)
    return f, binomial_row(d) * (acc[0] + acc[1, ::-1])
