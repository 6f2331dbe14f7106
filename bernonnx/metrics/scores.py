"""Proper scores of the predictions: Brier score, log loss, Murphy's decomposition."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._validation import check_int

from ._inputs import _STRATEGIES, PosLabel, _check_choice, _check_inputs, _Checked
from .binned import _table


def _brier(c: _Checked) -> float:
    return float(np.sum(c.w * (c.y - c.p) ** 2) / c.w.sum())


def _log_loss(c: _Checked, eps: float | str) -> float:
    if isinstance(eps, str):
        if eps != "auto":
            raise ValueError(f"eps must be 'auto' or a float in [0, 0.5), got {eps!r}.")
        eps = float(np.finfo(c.prob_dtype).eps)
    elif not isinstance(eps, numbers.Real) or not 0 <= eps < 0.5:
        raise ValueError(f"eps must be 'auto' or a float in [0, 0.5), got {eps!r}.")
    # clip the probability of the observed class, as sklearn clips both columns of
    # [1 - p, p]; clipping p first would round 1 - p differently near 1
    q = np.clip(np.where(c.y == 1, c.p, 1.0 - c.p), eps, 1.0 - eps)
    # eps=0 asks for no clipping: a confident miss then costs inf, which is the answer
    with np.errstate(divide="ignore"):
        loss = -np.log(q)
    return float(np.sum(c.w * loss) / c.w.sum())


def brier_score(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> float:
    """Brier score: weighted mean squared difference between outcome and probability.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    score : float
        In ``[0, 1]``, lower is better.

    Notes
    -----
    ``BS = sum_i w_i (y_i - p_i)^2 / sum_i w_i`` with ``y_i`` in ``{0, 1}``; equal to
    :func:`sklearn.metrics.brier_score_loss` for binary targets.

    Examples
    --------
    >>> from bernonnx.metrics import brier_score
    >>> round(brier_score([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 4)
    0.0375
    """
    return _brier(_check_inputs(y_true, y_prob, sample_weight, pos_label))


def log_loss(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    eps: float | str = "auto",
) -> float:
    """Binary cross-entropy (natural log) of the predicted probabilities.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.
    eps : "auto" or float, default="auto"
        The probability of the observed class is clipped to ``[eps, 1 - eps]``. ``"auto"``
        takes the machine epsilon of ``y_prob``'s dtype (float64 for integer input), as
        :func:`sklearn.metrics.log_loss` does. ``0`` disables clipping, so a confident miss
        gives ``inf``.

    Returns
    -------
    loss : float
        Non-negative, lower is better.

    Notes
    -----
    With ``q_i = clip(p_i if y_i = 1 else 1 - p_i, eps, 1 - eps)``::

        LL = - sum_i w_i log(q_i) / sum_i w_i

    equal to ``sklearn.metrics.log_loss(y_true, np.c_[1 - p, p])``. The sum is taken in
    float64 even for float32 input, whose epsilon is still the one used for clipping.

    Examples
    --------
    >>> from bernonnx.metrics import log_loss
    >>> round(log_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.35]), 4)
    0.2162
    """
    return _log_loss(_check_inputs(y_true, y_prob, sample_weight, pos_label), eps)


def brier_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> dict[str, float]:
    """Murphy's decomposition of the binned Brier score.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    n_bins : int, default=10
        Number of bins, see :func:`reliability_table`.
    strategy : {"uniform", "quantile"}, default="uniform"
        Binning strategy, see :func:`reliability_table`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    decomposition : dict of float
        ``reliability`` (lower is better), ``resolution`` (higher is better),
        ``uncertainty`` (a property of the labels alone) and
        ``brier = reliability - resolution + uncertainty``.

    Notes
    -----
    With the reliability table's ``W_b``, ``pbar_b`` (``mean_predicted``), ``obar_b``
    (``fraction_positive``) and the weighted base rate ``obar = sum_i w_i y_i / W``::

        reliability = sum_b (W_b / W) (pbar_b - obar_b)^2
        resolution  = sum_b (W_b / W) (obar_b - obar)^2
        uncertainty = obar (1 - obar)

    Within a bin, ``mean((y - p)^2) = obar_b (1 - obar_b) + (pbar_b - obar_b)^2
    + var_b(p) - 2 cov_b(y, p)``, and the law of total variance gives
    ``sum_b (W_b / W) obar_b (1 - obar_b) = uncertainty - resolution``. So ``brier``
    equals :func:`brier_score` exactly when predictions are constant within each bin, and
    otherwise differs by ``sum_b (W_b / W) (var_b(p) - 2 cov_b(y, p))``, at most
    ``1 / (4 n_bins^2) + 1 / (2 n_bins)`` for uniform bins.

    References
    ----------
    A. H. Murphy (1973). A New Vector Partition of the Probability Score. Journal of Applied
    Meteorology 12(4), 595-600.

    Examples
    --------
    >>> from bernonnx.metrics import brier_decomposition
    >>> parts = brier_decomposition([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2)
    >>> {key: round(value, 4) for key, value in parts.items()}
    {'reliability': 0.0763, 'resolution': 0.0, 'uncertainty': 0.25, 'brier': 0.3263}
    """
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _decomposition(c, _table(c, n_bins, strategy))


def _decomposition(c: _Checked, table: dict[str, np.ndarray]) -> dict[str, float]:
    share = table["weight"] / table["weight"].sum()
    base_rate = np.sum(c.w * c.y) / c.w.sum()
    fraction = table["fraction_positive"]
    reliability = float(np.sum(share * (table["mean_predicted"] - fraction) ** 2))
    resolution = float(np.sum(share * (fraction - base_rate) ** 2))
    uncertainty = float(base_rate * (1.0 - base_rate))
    return {
        "reliability": reliability,
        "resolution": resolution,
        "uncertainty": uncertainty,
        "brier": reliability - resolution + uncertainty,
    }
