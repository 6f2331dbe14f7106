"""The Bernstein basis on ``[0, 1]`` and the evaluation of a polynomial in it.

Small pure functions on numpy arrays: the basis, degree elevation, and the
polynomial ``sum_k c_k b_{k,d}(u)`` evaluated directly (:func:`bernstein_eval`)
or, for the logistic transform, by Horner in powers of a ratio
(:func:`logistic_eta_blocks`), with the block buffers and powers the fit's
passes over the rows share (:mod:`bernonnx._core.loss`). Nothing here knows
about estimators, so the ONNX converters can mirror each formula one to one.

The degree-``d`` Bernstein basis on ``[0, 1]`` is

    b_{k,d}(u) = C(d, k) u^k (1 - u)^(d - k),   k = 0..d,

and degree elevation writes it in a higher degree ``D >= d``:
``b_{j,d} = sum_k E[j, k] b_{k,D}`` (:func:`elevation_matrix`).
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
    fit's :func:`_ratio_into` and :func:`_powers`): the ratio's rounding,
    raised to the power ``k``, would double the largest difference to the ONNX
    graph (2e-14 instead of 6e-15 with the Pow basis).
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


#: Rows of a block of :func:`logistic_eta_blocks` and of ``loss._loss_gradient``. Both work
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
