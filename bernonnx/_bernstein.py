"""Bernstein-polynomial math shared by every Bernstein calibrator.

Small pure functions on numpy arrays: the basis, degree elevation, and the
weighted moment sums a least-squares fit needs. Nothing here knows about
estimators, so the ONNX converters can mirror each formula one to one.

The degree-``d`` Bernstein basis on ``[0, 1]`` is

    b_{k,d}(u) = C(d, k) u^k (1 - u)^(d - k),   k = 0..d.

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
from scipy.special import comb

#: Rows processed at once: bounds the temporary basis matrix to about
#: ``CHUNK * (2 * degree + 1) * 8`` bytes (about 27 MB at degree 100).
CHUNK = 16384
_FLUSH_BELOW = 1e-120


def binomial_row(degree: int) -> np.ndarray:
    """Binomial coefficients ``C(degree, k)`` for ``k = 0..degree`` in float64."""
    return comb(degree, np.arange(degree + 1), exact=False)


def bernstein_basis_t(
    u: np.ndarray, degree: int, dtype=np.float64, v: np.ndarray | None = None
) -> np.ndarray:
    """Transposed Bernstein basis, shape ``(degree + 1, n)``: ``out[k, i] = b_{k,d}(u_i)``.

    Rows are contiguous, so each power ``u^k = u^(k-1) * u`` is one vectorised
    multiply; this layout is also the one the moment sums and the Hessian
    products consume. ``0 ** 0`` is 1, so ``u = 0`` and ``u = 1`` give exact
    unit vectors. ``v`` (default ``1 - u``) may be passed when a more
    accurate value of ``1 - u`` is known.
    """
    u = np.asarray(u, dtype=dtype)
    v = 1 - u if v is None else np.asarray(v, dtype=dtype)
    up = np.empty((degree + 1, u.shape[0]), dtype=dtype)
    vp = np.empty_like(up)
    up[0] = 1
    vp[0] = 1
    for k in range(1, degree + 1):
        np.multiply(up[k - 1], u, out=up[k])
        np.multiply(vp[k - 1], v, out=vp[k])
    up *= vp[::-1]
    up *= binomial_row(degree).astype(dtype)[:, None]
    # Subnormal numbers (far tails at high degree) slow every later product
    # by up to 100x, and the Hessian multiplies basis values pairwise: below
    # 1e-120 a value (and a product of two) is zero next to a basis that sums
    # to one, and no product of two survivors underflows.
    np.putmask(up, up < _FLUSH_BELOW, 0)
    return up


def bernstein_basis(u: np.ndarray, degree: int, dtype=np.float64) -> np.ndarray:
    """Evaluate the degree-``degree`` Bernstein basis at ``u``.

    Parameters
    ----------
    u : ndarray of shape (n,)
        Points in ``[0, 1]``.
    degree : int
        Polynomial degree ``d >= 0``.
    dtype : numpy dtype, default=float64
        Dtype of the computation and of the result.

    Returns
    -------
    basis : ndarray of shape (n, degree + 1)
        ``basis[i, k] = C(d, k) u_i^k (1 - u_i)^(d - k)``.
    """
    return bernstein_basis_t(u, degree, dtype).T


def _int_power(x: np.ndarray, n: int) -> np.ndarray:
    """``x ** n`` for an int ``n >= 0`` by repeated squaring (a few products, no ``pow``)."""
    out = np.ones_like(x)
    base = x
    while n:
        if n & 1:
            out = out * base
        n >>= 1
        if n:
            base = base * base
    return out


def _ratio_powers(u: np.ndarray, v: np.ndarray, top: int):
    """``(T, big, lower)``: ``T[k] = t^k`` (``k = 0..top``) with ``t = min(u, v) / max(u, v)``.

    On the rows where ``u <= v`` (``lower``), ``u^k v^(d-k) = v^d t^k``; on the others
    ``u^k v^(d-k) = u^d t^(d-k)``. ``t <= 1`` and ``big = max(u, v) >= 1/2``, so nothing
    overflows and the degree-``d`` basis needs ``top = d`` products of ``t`` and one
    power of ``big`` instead of ``2d`` powers, ``d`` products and ``d`` binomial
    scalings: the whole basis is a few passes over the rows plus one matrix product.
    """
    lower = u <= v
    big = np.where(lower, v, u)
    return _powers(np.where(lower, u, v) / big, top), big, lower


def _logistic_ratio_powers(z: np.ndarray, top: int):
    """:func:`_ratio_powers` at ``u = expit(z)``, ``v = expit(-z)``, from one ``exp``.

    There ``u / v = e^z``: ``t = exp(-|z|)``, ``big = 1 / (1 + t)`` and ``lower``
    is ``z <= 0``, each to one rounding (``u`` and ``v`` are not formed).
    """
    t = np.exp(-np.abs(z))
    big = 1.0 / (1.0 + t)
    return _powers(t, top), big, z <= 0


def _powers(t: np.ndarray, top: int) -> np.ndarray:
    """``T[k] = t^k`` for ``k = 0..top`` (``0 <= t <= 1``), shape ``(top + 1, n)``.

    Values below ``1e-120`` are flushed to zero, as :func:`bernstein_basis_t` does and
    for the same reason (subnormal products are up to 100x slower): ``t`` itself and
    every row ``T[2^j]``. Between two flushes a survivor at least squares, from
    ``1e-120`` to ``1e-240``, so no product is ever subnormal.
    """
    out = np.empty((top + 1, t.shape[0]), dtype=t.dtype)
    out[0] = 1
    if not top:
        return out
    out[1] = t
    np.putmask(out[1], out[1] < _FLUSH_BELOW, 0)
    # flushing cannot change anything when the smallest ratio's top power survives
    flush = 2 if float(out[1].min()) ** top < _FLUSH_BELOW else top + 1
    for k in range(2, top + 1):
        np.multiply(out[k - 1], out[1], out=out[k])
        if k == flush:
            np.putmask(out[k], out[k] < _FLUSH_BELOW, 0)
            flush *= 2
    return out


def _rows(top: int) -> int:
    """Rows per chunk: the ``(top + 1) x rows`` table of powers stays near 1 MB (L2)."""
    return max(256, (1 << 17) // (top + 1))


def _rise_pair(coef: np.ndarray) -> np.ndarray:
    """``[a, a[::-1]]`` with ``a_k = C(d, k) (coef[k] - coef[0])``, for :func:`_sum_terms`."""
    rise = (coef - coef[0]) * binomial_row(coef.shape[0] - 1).astype(coef.dtype)
    return np.stack([rise, rise[::-1]])


def _sum_terms(pair, powers, big, lower):
    """``sum_k a_k u^k v^(d-k)`` on a chunk from :func:`_ratio_powers`' output."""
    degree = pair.shape[1] - 1
    both = pair @ powers[: degree + 1]
    return _int_power(big, degree) * np.where(lower, both[0], both[1])


def bernstein_eval(u: np.ndarray, coef: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
    """Evaluate ``sum_k coef[k] b_{k,d}(u)`` with ``d = len(coef) - 1``.

    Works chunk by chunk so memory stays ``O(CHUNK * d)`` for any ``n``.
    The dtype of ``u`` is kept; ``v`` optionally gives ``1 - u`` accurately.

    Evaluated as ``coef[0] + sum_k (coef[k] - coef[0]) b_k(u)`` (equal in exact
    arithmetic since the basis sums to one): rounding errors then scale with
    the coefficient differences, not their size, so a nearly flat stretch
    keeps its small but positive slope in floating point. The basis is built
    from the powers of ``u`` and ``v`` themselves, not of their ratio (the
    fit's :func:`_ratio_powers`): the ratio's rounding, raised to the power
    ``k``, would double the largest difference to the ONNX graph
    (2e-14 instead of 6e-15 with the Pow basis).
    """
    u = np.asarray(u)
    dtype = u.dtype if u.dtype in (np.float32, np.float64) else np.float64
    coef = np.asarray(coef, dtype=dtype)
    degree = coef.shape[0] - 1
    rise = coef - coef[0]
    out = np.empty(u.shape[0], dtype=dtype)
    for start in range(0, u.shape[0], CHUNK):
        stop = start + CHUNK
        vv = None if v is None else v[start:stop]
        out[start:stop] = rise @ bernstein_basis_t(u[start:stop], degree, dtype, vv)
    out += coef[0]
    return out


def bernstein_eval_logistic(z: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """:func:`bernstein_eval` at ``u = expit(z)``, ``v = expit(-z)`` (float64).

    The logistic transform's polynomial without forming ``u`` and ``v``: one
    ``exp`` per score (:func:`_logistic_ratio_powers`) instead of two, and
    ``d`` products of ``t = exp(-|z|)`` (exact to one rounding, unlike ``u / v``)
    instead of ``2d`` powers, ``d`` products and ``d`` binomial scalings.
    """
    z = np.asarray(z, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    pair = _rise_pair(coef)
    out = np.empty(z.shape[0])
    rows = _rows(coef.shape[0] - 1)
    for start in range(0, z.shape[0], rows):
        sl = slice(start, start + rows)
        out[sl] = _sum_terms(pair, *_logistic_ratio_powers(z[sl], coef.shape[0] - 1))
    out += coef[0]
    return out


def elevation_matrix(degree: int, target: int) -> np.ndarray:
    """Matrix ``E`` of shape ``(degree + 1, target + 1)`` with ``b_d = E b_D``.

    ``E[j, k] = C(d, j) C(D - d, k - j) / C(D, k)`` for ``j <= k <= j + D - d``.
    """
    if target < degree:
        raise ValueError(f"target degree {target} is below degree {degree}")
    j = np.arange(degree + 1)[:, None]
    k = np.arange(target + 1)[None, :]
    diff = k - j
    valid = (diff >= 0) & (diff <= target - degree)
    e = comb(degree, j) * comb(target - degree, np.where(valid, diff, 0)) / comb(target, k)
    return np.where(valid, e, 0.0)


def moments(
    u: np.ndarray, weights: np.ndarray, degree: int, values: np.ndarray | None = None
) -> np.ndarray:
    """Weighted sums of the degree-``degree`` basis over the data.

    Returns ``M`` of shape ``(degree + 1, c)`` with ``M[l, 0] = sum_i w_i
    b_{l,degree}(u_i)`` and, when ``values`` (shape ``(n,)`` or ``(n, c - 1)``)
    is given, ``M[l, j + 1] = sum_i w_i values_ij b_{l,degree}(u_i)``. One pass
    over ``u`` in chunks: the only work that grows with ``n``.
    """
    u = np.asarray(u, dtype=np.float64)
    cols = [np.asarray(weights, dtype=np.float64)[:, None]]
    if values is not None:
        values = np.asarray(values, dtype=np.float64)
        values = values[:, None] if values.ndim == 1 else values
        cols.append(values * cols[0])
    rhs = np.hstack(cols)
    c = rhs.shape[1]
    half = (degree + 1) // 2
    acc = np.zeros((2 * half + 1, 2 * c))
    rows = _rows(half)
    for start in range(0, u.shape[0], rows):
        sl = slice(start, start + rows)
        powers, big, lower = _ratio_powers(u[sl], 1.0 - u[sl], half)
        scaled = rhs[sl] * _int_power(big, degree)[:, None]
        cols = np.empty((scaled.shape[0], 2 * c))
        np.multiply(scaled, lower[:, None], out=cols[:, :c])
        np.subtract(scaled, cols[:, :c], out=cols[:, c:])
        acc += _power_sums(powers, cols)
    # lower rows: b_l = C(D, l) v^D t^l; the others: b_l = C(D, l) u^D t^(D - l)
    return binomial_row(degree)[:, None] * (acc[: degree + 1, :c] + acc[degree::-1, c:])


def _power_sums(powers: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``S[l] = sum_i t_i^l cols[i]`` for ``l = 0..2h`` from ``powers`` up to ``h``.

    The upper half reuses the table: ``t^(h + j) = t^h t^j``, one more matrix
    product instead of ``h`` more rows of powers.
    """
    half = powers.shape[0] - 1
    out = np.empty((2 * half + 1, cols.shape[1]))
    out[: half + 1] = powers @ cols
    out[half + 1 :] = powers[1:] @ (cols * powers[half][:, None])
    return out


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


def logistic_terms(
    u: np.ndarray,
    v: np.ndarray | None,
    y: np.ndarray,
    weights: np.ndarray,
    coef: np.ndarray,
    hessian: bool = True,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Sum of ``w [log(1 + e^eta) - y eta]``, its gradient and Hessian (or ``None``).

    ``eta = b(u)^T coef``; one chunked pass over the rows, in powers of ``t``
    (:func:`_ratio_powers`). The Hessian ``sum_i w_i p_i (1 - p_i) b b^T`` is
    exact and cheap: ``b_j b_k`` depends on ``j + k`` only (up to binomials),
    so it needs ``2d + 1`` weighted sums of powers, not ``(d + 1)^2`` products
    per row.
    """
    d = coef.shape[0] - 1
    v = 1.0 - u if v is None else v
    binom = binomial_row(d)
    pair = _rise_pair(coef)
    f = 0.0
    acc = np.zeros((d + 1, 2))
    if hessian:
        acc = np.zeros((2 * d + 1, 4))
    rows = _rows(d)
    for start in range(0, u.shape[0], rows):
        sl = slice(start, start + rows)
        powers, big, lower = _ratio_powers(u[sl], v[sl], d)
        lead = _int_power(big, d)
        both = pair @ powers
        eta = coef[0] + lead * np.where(lower, both[0], both[1])  # _sum_terms, lead kept
        # one exp for the loss and p: e = exp(-|eta|), softplus = max(eta, 0) + log1p(e)
        e = np.exp(-np.abs(eta))
        ws, ys = weights[sl], y[sl]
        f += float(ws @ (np.maximum(eta, 0.0) + np.log1p(e) - ys * eta))
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        cols = np.empty((eta.shape[0], 4 if hessian else 2))
        r = ws * (p - ys) * lead
        np.multiply(r, lower, out=cols[:, 0])
        np.subtract(r, cols[:, 0], out=cols[:, 1])
        if hessian:
            a = ws * p * (1.0 - p) * (lead * lead)
            np.multiply(a, lower, out=cols[:, 2])
            np.subtract(a, cols[:, 2], out=cols[:, 3])
            acc[: d + 1, :2] += powers @ cols[:, :2]
            acc[:, 2:] += _power_sums(powers, cols[:, 2:])
        else:
            acc += powers @ cols
    # lower rows: b_k = C(d, k) v^d t^k; the others: b_k = C(d, k) u^d t^(d - k)
    g = binom * (acc[: d + 1, 0] + acc[d::-1, 1])
    if not hessian:
        return f, g, None
    # b_j b_k = C(d, j) C(d, k) big^(2d) t^(j + k) (or t^(2d - j - k)): a Hankel matrix
    m2 = acc[:, 2] + acc[::-1, 3]
    idx = np.arange(d + 1)
    h = np.outer(binom, binom) * m2[idx[:, None] + idx[None, :]]
    return f, g, h
