"""Tensor-product Bernstein math: the 1-D identities of :mod:`bernonnx._core.basis` axis by axis.

Small pure functions on numpy arrays, used by
:class:`bernonnx.MultivariateBernsteinCalibrator`'s fit and predict. A row
``i`` has ``M`` transformed scores ``u_i`` (and ``v_i = 1 - u_i``, accurate
where known); the tensor basis of degrees ``K = (K_1, ..., K_M)`` is
``prod_m b_{k_m, K_m}(u_im)``, its coefficients a tensor of shape
``(K_1 + 1, ..., K_M + 1)``. As in one dimension, the fit needs one pass over
the data:

* the Gram matrix of the tensor basis is a function of the moments of the
  degree-``2K`` tensor basis (the product rule on every axis): ``prod_m
  (2 K_m + 1)`` sums per row instead of ``prod_m (K_m + 1)^2`` for
  ``B^T W B``;
* right-hand sides and gradients follow from the same moments by degree
  elevation on every axis.

Rows are processed in chunks sized so that each temporary holds about
``_KRON_ENTRIES`` float64 entries.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from . import basis as bern

#: Chunks of rows are sized so that each temporary row-wise Kronecker product
#: holds at most about this many float64 entries (32 MB).
_KRON_ENTRIES = 1 << 22


def _chunk_rows(width: int) -> int:
    """Rows per chunk so that ``rows * width`` stays near ``_KRON_ENTRIES``."""
    return int(max(256, min(bern.CHUNK, _KRON_ENTRIES // max(width, 1))))


def _bases(u, v, degrees, rows):
    """Transposed 1-D bases ``(K_m + 1, len(rows))`` of every column."""
    return [bern.bernstein_basis_t(u[rows, m], d, v=v[rows, m]) for m, d in enumerate(degrees)]


def _contract(coef: np.ndarray, bases: list[np.ndarray]) -> np.ndarray:
    """``sum_k coef[k] prod_m bases[m][k_m, i]`` for every row ``i``.

    Rows stay on the last, contiguous axis; the first axis is summed by one
    BLAS product, the others by accumulating one basis row at a time.
    """
    out = coef.reshape(coef.shape[0], -1).T @ bases[0]
    for basis in bases[1:]:
        out = out.reshape(basis.shape[0], -1, out.shape[-1])
        acc = out[0] * basis[0]
        for k in range(1, basis.shape[0]):
            acc += out[k] * basis[k]
        out = acc
    return out[0]


def _split(widths: list[int]) -> int:
    """Split point ``j`` minimising ``prod(widths[:j]) + prod(widths[j:])``, ``j >= 1``."""
    return min(range(1, len(widths)), key=lambda j: math.prod(widths[:j]) + math.prod(widths[j:]))


def _moment_rows(degrees, n_cols: int) -> int:
    """Rows per chunk of :func:`_moments_chunk` for bases of degrees ``degrees``."""
    widths = [d + 1 for d in degrees] + [n_cols]
    j = _split(widths)
    return _chunk_rows(math.prod(widths[:j]) + math.prod(widths[j:]))


def _kron_rows(mats: list[np.ndarray]) -> np.ndarray:
    """Row-wise Kronecker product: ``(prod_j a_j, n)`` from ``(a_j, n)`` factors."""
    out = mats[0]
    for mat in mats[1:]:
        out = (out[:, None, :] * mat[None, :, :]).reshape(-1, out.shape[-1])
    return out


def _moments_chunk(bases: list[np.ndarray], cols: np.ndarray) -> np.ndarray:
    """``sum_i cols[i, r] prod_m bases[m][l_m, i]``, shape ``(*(D_m + 1), r)``.

    The axes are split in two groups and each group's row-wise Kronecker
    product is formed explicitly (rows on the last, contiguous axis); one
    BLAS product of the two then sums over rows. The split point minimises
    the width of the two temporaries: the flops are the same for every split,
    the memory traffic is not.
    """
    widths = [b.shape[0] for b in bases] + [cols.shape[1]]
    split = _split(widths)
    left = _kron_rows(bases[:split])
    right = _kron_rows([*bases[split:], np.ascontiguousarray(cols.T)])
    return (left @ right.T).reshape(widths)


def tensor_moments(u, v, cols, degrees) -> np.ndarray:
    """Weighted sums of the tensor basis of degrees ``degrees`` over the rows.

    Returns ``T`` of shape ``(D_1 + 1, ..., D_M + 1, c)`` with ``T[l, r] =
    sum_i cols[i, r] prod_m b_{l_m, D_m}(u_im)``; ``v`` holds ``1 - u``
    (accurately where known). One chunked pass over the rows.
    """
    cols = np.asarray(cols, dtype=np.float64)
    rows = _moment_rows(degrees, cols.shape[1])
    out = np.zeros((*(d + 1 for d in degrees), cols.shape[1]))
    for start in range(0, u.shape[0], rows):
        sl = slice(start, start + rows)
        out += _moments_chunk(_bases(u, v, degrees, sl), cols[sl])
    return out


def tensor_gram(moments: np.ndarray, degrees) -> np.ndarray:
    """Gram matrix ``(P, P)`` of the degree-``degrees`` tensor basis.

    ``moments`` are the weighted moments of the degree-``2 * degrees`` tensor
    basis (:func:`tensor_moments`, one column). The product rule of
    :func:`bernonnx._core.loss.gram_from_moments` on every axis:
    ``G[j, k] = prod_m C(K_m, j_m) C(K_m, k_m) / C(2 K_m, j_m + k_m) *
    T[j + k]``. Rows and columns in C order of the coefficient tensor.
    """
    m_axes = len(degrees)
    index, factor = [], np.ones([1] * (2 * m_axes))
    for m, d in enumerate(degrees):
        c, c2 = bern.binomial_row(d), bern.binomial_row(2 * d)
        j = np.arange(d + 1)
        s = j[:, None] + j[None, :]
        shape = [1] * (2 * m_axes)
        shape[m] = shape[m_axes + m] = d + 1
        index.append(s.reshape(shape))
        factor = factor * (np.outer(c, c) / c2[s]).reshape(shape)
    size = math.prod(d + 1 for d in degrees)
    return (moments[tuple(index)] * factor).reshape(size, size)


def mode_product(t: np.ndarray, mats) -> np.ndarray:
    """``out[k] = sum_l prod_m mats[m][k_m, l_m] t[l]`` over the first axes of ``t``."""
    for m, a in enumerate(mats):
        t = np.moveaxis(np.tensordot(a, t, axes=(1, m)), 0, m)
    return t


def elevate(coef: np.ndarray, degrees) -> np.ndarray:
    """Coefficients of the same polynomial in the basis of (higher) ``degrees``."""
    return mode_product(
        coef, [bern.elevation_matrix(k - 1, d).T for k, d in zip(coef.shape, degrees, strict=True)]
    )


def tensor_eval(u, v, coef) -> np.ndarray:
    """``eta = c0 + sum_k (coef[k] - c0) prod_m b_{k_m, K_m}(u_m)``, ``c0 = coef[0, ..., 0]``.

    The 1-D :func:`bernonnx._core.basis.bernstein_eval` on every axis: equal to
    the plain sum in exact arithmetic (the basis sums to one), and rounding
    scales with the coefficient differences, not their size.
    """
    degrees = tuple(k - 1 for k in coef.shape)
    rise = coef - coef.flat[0]
    rows = _chunk_rows(rise.size)
    out = np.empty(u.shape[0])
    for start in range(0, u.shape[0], rows):
        sl = slice(start, start + rows)
        out[sl] = _contract(rise, _bases(u, v, degrees, sl))
    return out + coef.flat[0]


def _elevation_to_double(degrees):
    return [bern.elevation_matrix(d, 2 * d) for d in degrees]


def least_squares_terms(u, v, y, w, degrees) -> tuple[np.ndarray, np.ndarray]:
    """``(G, r)`` with ``sum_i w_i (B(u_i)^T c - y_i)^2 / sum_i w_i = c^T G c - 2 r^T c + const``.

    One pass: the degree-``2K`` moments of ``w`` (the Gram matrix, by the
    product rule) and of ``w y`` (the right-hand side, by elevation).
    """
    t = tensor_moments(u, v, np.stack([w, w * y], axis=1), tuple(2 * d for d in degrees))
    total = float(w.sum())
    gram = tensor_gram(t[..., 0], degrees) / total
    rhs = mode_product(t[..., 1], _elevation_to_double(degrees)).ravel() / total
    return gram, rhs


def logistic_terms(u, v, y, w, coef, hessian=True):
    """Mean of ``w [log(1 + e^eta) - y eta]``, its gradient and Hessian (or ``None``).

    ``eta`` is the tensor polynomial of ``coef``. One chunked pass: ``eta``
    from the degree-``K`` bases, then the degree-``2K`` moments of ``w p (1 -
    p)`` (the Hessian, by the product rule) and of ``w (p - y)`` (the gradient,
    by elevation). Without ``hessian`` only the loss is computed: the
    gradient costs the same moment pass.
    """
    degrees = tuple(k - 1 for k in coef.shape)
    double = tuple(2 * d for d in degrees)
    total = float(w.sum())
    f = 0.0
    t = np.zeros((*(d + 1 for d in double), 2)) if hessian else None
    rows = _moment_rows(double, 2) if hessian else _chunk_rows(coef.size)
    for start in range(0, u.shape[0], rows):
        sl = slice(start, start + rows)
        eta = _contract(coef, _bases(u, v, degrees, sl))
        f += float(w[sl] @ (np.logaddexp(0.0, eta) - y[sl] * eta))
        if hessian:
            p = expit(eta)
            cols = np.stack([w[sl] * p * (1 - p), w[sl] * (p - y[sl])], axis=1)
            t += _moments_chunk(_bases(u, v, double, sl), cols)
    if not hessian:
        return f / total, None, None
    g = mode_product(t[..., 1], _elevation_to_double(degrees)).ravel()
    return f / total, g / total, tensor_gram(t[..., 0], degrees) / total
