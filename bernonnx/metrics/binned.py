"""The reliability table and the binned calibration errors (ECE, RMSCE, MCE)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._stats import weighted_quantile
from bernonnx._validation import check_int

from ._inputs import _NORMS, _STRATEGIES, PosLabel, _check_choice, _check_inputs, _Checked


def _quantile_inner_edges(p: np.ndarray, w: np.ndarray, n_bins: int) -> np.ndarray:
    """Distinct weighted inverted-CDF quantiles of ``p`` at ``k / n_bins``, ``0 < k < n_bins``.

    See :func:`bernonnx._stats.weighted_quantile`: integer weights give exactly the
    edges of the repeated rows.
    """
    return np.unique(weighted_quantile(p, w, np.arange(1, n_bins) / n_bins))


def _table(c: _Checked, n_bins: int, strategy: str) -> dict[str, np.ndarray]:
    """Per-bin sums over the non-empty bins (total weight > 0)."""
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        inner = edges[1:-1]
    else:
        inner = _quantile_inner_edges(c.p, c.w, n_bins)
        positive = c.p[c.w > 0]
        edges = np.r_[positive.min(), inner, positive.max()]
    # same call as sklearn's calibration_curve: side="left" makes bins right-closed
    binids = np.searchsorted(inner, c.p)
    n_slots = edges.shape[0] - 1
    weight = np.bincount(binids, weights=c.w, minlength=n_slots)
    sum_pred = np.bincount(binids, weights=c.w * c.p, minlength=n_slots)
    sum_pos = np.bincount(binids, weights=c.w * c.y, minlength=n_slots)
    count = np.bincount(binids[c.w > 0], minlength=n_slots)
    # a bin whose rows all weigh zero is empty: zero weight means the row is absent
    nonempty = weight > 0
    weight = weight[nonempty]
    return {
        "bin_lower": edges[:-1][nonempty],
        "bin_upper": edges[1:][nonempty],
        "mean_predicted": sum_pred[nonempty] / weight,
        "fraction_positive": sum_pos[nonempty] / weight,
        "weight": weight,
        "count": count[nonempty],
    }


def _calibration_error(table: dict[str, np.ndarray], norm: str) -> float:
    gap = np.abs(table["mean_predicted"] - table["fraction_positive"])
    if norm == "max":
        return float(gap.max())
    share = table["weight"] / table["weight"].sum()
    if norm == "l1":
        return float(np.sum(share * gap))
    return float(np.sqrt(np.sum(share * gap**2)))


def reliability_table(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> dict[str, np.ndarray]:
    """Bin the predictions and return per-bin mean prediction and positive rate.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most (ints, strings or bools).
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    n_bins : int, default=10
        Number of bins before empty bins are dropped.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: edges ``linspace(0, 1, n_bins + 1)``, right-closed bins (a prediction
        equal to an inner edge goes to the lower bin), as in
        :func:`sklearn.calibration.calibration_curve`. ``"quantile"``: inner edges at the
        weighted quantiles of ``y_prob`` at levels ``k / n_bins``, duplicates collapsed, so
        every bin holds about ``1 / n_bins`` of the total weight.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; ``None`` gives every row weight 1.
    pos_label : int, float, bool or str, default=None
        The positive label. ``None`` means 1 when the labels are within ``{0, 1}`` or
        ``{-1, 1}`` (bools included); other labels require it.

    Returns
    -------
    table : dict of ndarray
        One entry per non-empty bin (total weight > 0), in increasing order:

        - ``bin_lower``, ``bin_upper``: the bin's edges (for ``"quantile"`` the outer edges
          are the smallest and largest prediction with positive weight);
        - ``mean_predicted``: weighted mean prediction in the bin;
        - ``fraction_positive``: weighted fraction of positives in the bin;
        - ``weight``: total sample weight in the bin;
        - ``count``: number of rows with positive weight in the bin.

    Notes
    -----
    With ``B_b`` the rows of bin ``b`` and ``W_b = sum_{i in B_b} w_i``::

        mean_predicted_b    = sum_{i in B_b} w_i p_i / W_b
        fraction_positive_b = sum_{i in B_b} w_i y_i / W_b

    Without weights and with ``strategy="uniform"``, ``fraction_positive`` and
    ``mean_predicted`` are the ``prob_true`` and ``prob_pred`` of ``calibration_curve``.

    The quantile edge for level ``q`` is the smallest prediction ``x`` whose cumulative
    weight ``F(x) = sum_{p_i <= x} w_i`` reaches ``q W`` (the inverted CDF), so a bin's
    weight differs from ``W / n_bins`` by less than the weight at one distinct prediction.
    This is not the interpolated percentile of ``calibration_curve(strategy="quantile")``,
    which has no meaning for weights.

    Examples
    --------
    >>> from bernonnx.metrics import reliability_table
    >>> table = reliability_table([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2)
    >>> table["mean_predicted"]
    array([0.25, 0.8 ])
    >>> table["fraction_positive"]
    array([0.5, 0.5])
    >>> table["count"]
    array([2, 2])
    """
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _table(c, n_bins, strategy)


def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    norm: str = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> float:
    """Binned calibration error: weighted gap between mean prediction and positive rate.

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
    norm : {"l1", "l2", "max"}, default="l1"
        How the per-bin gaps are combined: weighted mean (ECE), weighted root mean square
        (RMS calibration error) or maximum over non-empty bins (MCE).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    error : float
        In ``[0, 1]``; 0 when every bin's mean prediction equals its positive rate.

    Notes
    -----
    With ``g_b = |mean_predicted_b - fraction_positive_b|`` over the non-empty bins and
    ``W = sum_b W_b``::

        l1:  ECE   = sum_b (W_b / W) g_b
        l2:  RMSCE = sqrt(sum_b (W_b / W) g_b^2)
        max: MCE   = max_b g_b

    so ``ECE <= RMSCE <= MCE``. The ``l2`` form is the "ECE" of the probability-calibration
    notebook among the project's seed documents.

    References
    ----------
    M. P. Naeini, G. Cooper, M. Hauskrecht (2015). Obtaining Well Calibrated Probabilities
    Using Bayesian Binning. AAAI.

    Examples
    --------
    >>> from bernonnx.metrics import expected_calibration_error
    >>> y, p = [0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9]
    >>> round(expected_calibration_error(y, p, n_bins=2), 4)
    0.275
    >>> round(expected_calibration_error(y, p, n_bins=2, norm="max"), 4)
    0.3
    """
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    _check_choice(norm, "norm", _NORMS)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _calibration_error(_table(c, n_bins, strategy), norm)


def rms_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> float:
    """Root-mean-square calibration error, ``expected_calibration_error(norm="l2")``.

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
    error : float
        In ``[0, 1]``.

    Notes
    -----
    ``RMSCE = sqrt(sum_b (W_b / W) (mean_predicted_b - fraction_positive_b)^2)``, the
    square root of the reliability term of :func:`brier_decomposition`.

    Examples
    --------
    >>> from bernonnx.metrics import rms_calibration_error
    >>> round(rms_calibration_error([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2), 4)
    0.2761
    """
    return expected_calibration_error(
        y_true,
        y_prob,
        n_bins=n_bins,
        strategy=strategy,
        norm="l2",
        sample_weight=sample_weight,
        pos_label=pos_label,
    )


def maximum_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> float:
    """Maximum calibration error, ``expected_calibration_error(norm="max")``.

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
        Non-negative weights; they only decide which bins are non-empty and the per-bin
        means, not how much a bin counts.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    error : float
        In ``[0, 1]``.

    Notes
    -----
    ``MCE = max_b |mean_predicted_b - fraction_positive_b|`` over the non-empty bins.

    Examples
    --------
    >>> from bernonnx.metrics import maximum_calibration_error
    >>> round(maximum_calibration_error([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2), 4)
    0.3
    """
    return expected_calibration_error(
        y_true,
        y_prob,
        n_bins=n_bins,
        strategy=strategy,
        norm="max",
        sample_weight=sample_weight,
        pos_label=pos_label,
    )
