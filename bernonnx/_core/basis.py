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

from functools import cache

import numpy as np
from scipy.special import comb

#: Rows processed at once: bounds the temporary basis matrix to about
#: ``CHUNK * (2 * degree + 1) * 8`` bytes (about 27 MB at degree 100).
CHUNK = 16384
_FLUSH_BELOW = 1e-120


@cache
def binomial_row(degree: int) -> np.ndarray:
    """Binomial coefficients ``C(degree, k)`` for ``k = 0..degree`` in float64 (read-only).

    Cached: ``scipy.special.comb`` takes 25 us, a sixth of a log-loss pass
    over the 2,000 binned points of a degree search, which makes hundreds.
    """
    row = comb(degree, np.arange(degree + 1), exact=False)
    row.setflags(write=False)
    return row


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


def _int_power(x: np.ndarray, n: int, out=None, square=None) -> np.ndarray:
    """``x ** n`` for an int ``n >= 0`` by repeated squaring (a few products, no ``pow``).

    Into ``out`` when given, with ``square`` as scratch (neither may be ``x``).
    The first factor is copied, not multiplied by 1: the same values as
    starting from ones.
    """
    out = np.empty_like(x) if out is None else out
    base, started = x, False
    while n:
        if n & 1:
            if started:
                np.multiply(out, base, out=out)
            else:
                np.copyto(out, base)
                started = True
        n >>= 1
        if n:
            square = np.multiply(base, base, out=square)
            base = square
    if not started:
        out.fill(1)
    return out


def _ratio_into(u, v, lower, big, t) -> None:
    """``lower = u <= v``, ``big = max(u, v)``, ``t = min(u, v) / big`` into the buffers.

    On the rows where ``u <= v`` (``lower``), ``u^k v^(d-k) = v^d t^k``; on the others
    ``u^k v^(d-k) = u^d t^(d-k)``. ``t <= 1`` and ``big >= 1/2``, so nothing overflows
    and the degree-``d`` basis needs ``d`` products of ``t`` and one power of ``big``
    instead of ``2d`` powers, ``d`` products and ``d`` binomial scalings.
    """
    np.less_equal(u, v, out=lower)
    np.maximum(u, v, out=big)
    np.minimum(u, v, out=t)
    np.divide(t, big, out=t)


def _powers(t: np.ndarray, top: int, out: np.ndarray | None = None) -> np.ndarray:
    """``T[k] = t^k`` for ``k = 0..top`` (``0 <= t <= 1``), shape ``(top + 1, n)``.

    Into ``out`` when given (its row 0 must hold ones already). Values below
    ``1e-120`` are flushed to zero, as :func:`bernstein_basis_t` does and for
    the same reason (subnormal products are up to 100x slower): ``t`` itself
    and every row ``T[2^j]``. Between two flushes a survivor at least squares,
    from ``1e-120`` to ``1e-240``, so no product is ever subnormal.
    """
    if out is None:
        out = np.empty((top + 1, t.shape[0]), dtype=t.dtype)
        out[0] = 1
    if not top:
        return out
    np.copyto(out[1], t)
    smallest = float(t.min()) if t.shape[0] else 1.0
    if smallest < _FLUSH_BELOW:
        np.putmask(out[1], out[1] < _FLUSH_BELOW, 0)
        flush = 2
    else:
        # flushing cannot change anything when the smallest ratio's top power survives
        flush = 2 if smallest**top < _FLUSH_BELOW else top + 1
    for k in range(2, top + 1):
        np.multiply(out[k - 1], out[1], out=out[k])
        if k == flush:
            np.putmask(out[k], out[k] < _FLUSH_BELOW, 0)
            flush *= 2
    return out


#: Rows of a block of the row passes. Each pass is a chain of ufuncs over
#: ``(d + 1) x BLOCK`` tables and a few rows of temporaries. Measured at
#: n = 1e6, degree 20 (logistic predict): 4096 to 16384 rows within noise of
#: each other, 2048 rows 1.5x and 1024 rows 2x slower (a ufunc call costs
#: about 1 us whatever its length), and unblocked full-length passes are
#: memory bound (3 ns per element instead of 0.5).
BLOCK = 8192


class _Work:
    """Buffers of one block, allocated once per pass and reused by every block.

    ``vec(name)`` is a row of ``rows`` floats, ``mat(name, k)`` a ``(k, rows)``
    table; both are sliced to the length of the current (last, shorter) block
    by ``trim(m)``.
    """

    def __init__(self, rows: int):
        self.rows = rows
        self.m = rows
        self._bufs: dict = {}

    def trim(self, m: int) -> None:
        self.m = m

    def _get(self, name, shape, dtype):
        buf = self._bufs.get(name)
        if buf is None:
            buf = self._bufs[name] = np.empty(shape, dtype=dtype)
        return buf

    def vec(self, name: str, dtype=np.float64) -> np.ndarray:
        return self._get(name, self.rows, dtype)[: self.m]

    def mat(self, name: str, k: int, fill_first: bool = False) -> np.ndarray:
        new = name not in self._bufs
        buf = self._get(name, (k, self.rows), np.float64)
        if new and fill_first:
            buf[0] = 1
        return buf[:, : self.m]


def _blocks(n: int, rows: int = BLOCK):
    """``(work, slice)`` for each block of ``rows`` rows out of ``n``."""
    work = _Work(min(rows, max(n, 1)))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        work.trim(stop - start)
        yield work, slice(start, stop)


def _rise_pair(coef: np.ndarray) -> np.ndarray:
    """``[a, a[::-1]]`` with ``a_k = C(d, k) (coef[k] - coef[0])`` (lower rows, the others)."""
    rise = (coef - coef[0]) * binomial_row(coef.shape[0] - 1).astype(coef.dtype)
    return np.stack([rise, rise[::-1]])


def _eta_into(pair, c0, powers, lead, lower, both, out) -> np.ndarray:
    """``out = c0 + sum_k a_k u^k v^(d-k)`` on a block, from the block's ratio powers.

    ``pair`` is :func:`_rise_pair`, ``lead = big^d``, ``both`` a ``(2, m)``
    buffer. The lower rows' polynomial is ``a @ T``, the others' ``a[::-1] @
    T``: two vector-matrix products (measured 2.5x faster than one two-row
    matrix product), then the one each row needs, times ``lead``.
    """
    np.matmul(pair[0], powers, out=both[0])
    np.matmul(pair[1], powers, out=both[1])
    np.copyto(both[1], both[0], where=lower)
    np.multiply(lead, both[1], out=out)
    out += c0
    return out


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
        _ordered_dot(rise, bernstein_basis_t(u[start:stop], degree, dtype, vv), out[start:stop])
    out += coef[0]
    return out


def _ordered_dot(a: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = sum_k a[k] rows[k]``, summed in the order ``k = 0, 1, ...`` for every column.

    Not ``a @ rows``: a BLAS product's summation order depends on the number of
    columns, and a score's probability must not depend on the other scores of
    its call (measured: 1-ulp differences on about 1 row in 1,000).
    """
    np.multiply(rows[0], a[0], out=out)
    term = np.empty_like(out)
    for k in range(1, rows.shape[0]):
        np.multiply(rows[k], a[k], out=term)
        out += term
    return out


#: Rows of a block of :func:`logistic_eta_blocks` and :func:`_loss_gradient`. Both work
#: on the two halves of a block (lower rows, the others), so a call's ~0.5 us weighs on
#: smaller groups: measured at n = 1e6, degree 20, 32768 rows 0.8x the time of 8192
#: (predict) and 0.7x (the loss-gradient pass).
EVAL_BLOCK = 32768


def logistic_eta_blocks(n: int, coef: np.ndarray, neg_abs_z_into, rows: int = EVAL_BLOCK):
    """:func:`bernstein_eval` at ``u = expit(z)``, ``v = expit(-z)`` (float64), block by block.

    Yields ``(slice, eta)`` for each block of ``rows`` of the ``n`` rows; ``eta`` is a
    buffer the next block overwrites. ``neg_abs_z_into(slice, lower, out, scratch)``
    writes the block's ``lower = z <= 0`` and ``out = -|z|``
    (:func:`bernonnx._core.transforms.logistic_neg_abs_z_into`), so the caller computes
    ``z``, the polynomial and what follows (the link, the output's columns) on one
    block while it is in cache: full-length passes are memory bound.

    The logistic transform's polynomial without forming ``u`` and ``v``: one
    ``exp`` per score (``t = exp(-|z|)``, ``big = 1 / (1 + t)``: :func:`_ratio_into`
    at ``u / v = e^z``) instead of two, and ``d`` products of ``t`` (exact to one
    rounding, unlike ``u / v``) instead of ``2d`` powers, ``d`` products and ``d``
    binomial scalings.
    """
    coef = np.asarray(coef, dtype=np.float64)
    d = coef.shape[0] - 1
    pair = _rise_pair(coef)
    for work, sl in _blocks(n, rows):
        lower, big, t = work.vec("lower", bool), work.vec("big"), work.vec("t")
        neg_abs_z_into(sl, lower, t, work.vec("scratch"))
        np.exp(t, out=t)
        np.add(t, 1.0, out=big)
        np.divide(1.0, big, out=big)
        # t below 1e-120 contributes nothing visible (as _powers flushes it) and
        # would make Horner's products subnormal, up to 100x slower (the test is
        # one reduction; the flush a comparison and a masked store)
        if t.size and t.min() < _FLUSH_BELOW:
            np.putmask(t, t < _FLUSH_BELOW, 0.0)
        lead = _int_power(big, d, work.vec("lead"), work.vec("square"))
        eta = work.vec("eta")
        # sum_k a_k t^k by Horner, each row in the same order whatever its batch
        # (a BLAS product's summation order depends on the block's width, and a
        # score's probability must not depend on the other scores of its call):
        # the lower rows with a, the others with a reversed, each group contiguous
        for idx, a in ((np.flatnonzero(lower), pair[0]), (np.flatnonzero(~lower), pair[1])):
            tt = t.take(idx)
            horner = np.full(idx.shape[0], a[d])
            for k in range(d - 1, -1, -1):
                horner *= tt
                horner += a[k]
            eta[idx] = horner
        eta *= lead
        eta += coef[0]
        yield sl, eta


@cache
def elevation_matrix(degree: int, target: int) -> np.ndarray:
    """Matrix ``E`` of shape ``(degree + 1, target + 1)`` with ``b_d = E b_D`` (read-only, cached).

    ``E[j, k] = C(d, j) C(D - d, k - j) / C(D, k)`` for ``j <= k <= j + D - d``.
    """
    if target < degree:
        raise ValueError(f"target degree {target} is below degree {degree}")
    j = np.arange(degree + 1)[:, None]
    k = np.arange(target + 1)[None, :]
    diff = k - j
    valid = (diff >= 0) & (diff <= target - degree)
    e = comb(degree, j) * comb(target - degree, np.where(valid, diff, 0)) / comb(target, k)
    e = np.where(valid, e, 0.0)
    e.setflags(write=False)
    return e


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
    over ``u`` in blocks of :data:`BLOCK` rows: the only work that grows with ``n``.
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

    ``eta = b(u)^T coef``; one pass over the rows in blocks of :data:`BLOCK`,
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
    :data:`EVAL_BLOCK` rows), so each group needs one product with its table of
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
