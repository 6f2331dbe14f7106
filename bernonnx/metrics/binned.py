"""The reliability table and the binned calibration errors (ECE, RMSCE, MCE)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._core.quantiles import weighted_quantile
from bernonnx._validation import check_int

from ._inputs import _NORMS, _STRATEGIES, PosLabel, _check_choice, _check_inputs, _Checked


def _quantile_inner_edges(p: np.ndarray, w: np.ndarray, n_bins: int) -> np.ndarray:
    """Distinct weighted inverted-CDF quantiles of ``p`` at ``k / n_bins``, ``0 < k < n_bins``.

    See :func:`bernonnx._core.quantiles.weighted_quantile`: integer weights give exactly the
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


def _calibration_error(
    table: dict[str, np.ndarray], norm: str, *, debias: bool = False, squared: bool = False
) -> float:
    gap = np.abs(table["mean_predicted"] - table["fraction_positive"])
    if norm == "max":
        return float(gap.max())
    share = table["weight"] / table["weight"].sum()
    if norm == "l1":
        return float(np.sum(share * gap))
    square = gap**2
    if debias:
        # Kumar et al.'s per-bin correction: the plug-in squared gap overstates the true
        # one by the variance of the bin's positive rate, estimated without bias by
        # obar (1 - obar) / (W_b - 1); a bin of weight <= 1 has no variance estimate and
        # counts 0, as in their code (verified_calibration, ``unbiased_square_ce``)
        weight, rate = table["weight"], table["fraction_positive"]
        estimable = weight > 1
        correction = rate * (1.0 - rate) / np.where(estimable, weight - 1.0, 1.0)
        square = np.where(estimable, square - correction, 0.0)
    total = float(np.sum(share * square))
    if squared:
        return total
    # a debiased square can be negative; its root is then 0 (Kumar et al. do the same)
    return float(np.sqrt(max(total, 0.0)))


def _binned_errors(uniform, quantile) -> dict:
    """The binned errors of a calibration report, from its uniform and equal-mass
    reliability tables (binary, and the top label of multiclass reports)."""
    return {
        "ece": _calibration_error(uniform, "l1"),
        "ece_quantile": _calibration_error(quantile, "l1"),
        "rmsce": _calibration_error(uniform, "l2"),
        "rmsce_debiased": _calibration_error(quantile, "l2", debias=True),
        "mce": _calibration_error(uniform, "max"),
    }


def _check_debias(norm: str, debias: bool, squared: bool) -> None:
    if not isinstance(debias, bool) or not isinstance(squared, bool):
        raise ValueError(f"debias and squared must be bools, got {debias!r} and {squared!r}.")
    if (debias or squared) and norm != "l2":
        which = "debias=True" if debias else "squared=True"
        raise ValueError(f"{which} applies to norm='l2' only, got norm={norm!r}.")


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
    debias: bool = False,
    squared: bool = False,
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
    debias : bool, default=False
        ``norm="l2"`` only: subtract from each bin's squared gap the estimated variance of
        its positive rate (Kumar, Liang and Ma), so that the squared error is estimated
        without bias. Use it with ``strategy="quantile"`` (equal-mass bins, as they do).
        Sample weights count as repeated rows there: weights rescaled to sum to 1 leave
        every bin with less than one row's count, where the estimate means nothing.
    squared : bool, default=False
        ``norm="l2"`` only: return the squared error, not its root. With ``debias=True``
        this is the unbiased estimate itself, which can be negative.

    Returns
    -------
    error : float
        In ``[0, 1]`` (the debiased square: in ``[-1, 1]``); 0 when every bin's mean
        prediction equals its positive rate.

    Notes
    -----
    With ``g_b = |mean_predicted_b - fraction_positive_b|`` over the non-empty bins and
    ``W = sum_b W_b``::

        l1:  ECE   = sum_b (W_b / W) g_b
        l2:  RMSCE = sqrt(sum_b (W_b / W) g_b^2)
        max: MCE   = max_b g_b

    so ``ECE <= RMSCE <= MCE``.

    The plug-in square ``sum_b (W_b / W) g_b^2`` is biased upwards: even for calibrated
    predictions each ``g_b^2`` has expectation ``Var(obar_b)``, about
    ``obar_b (1 - obar_b) / W_b``, so the RMSCE of a calibrated model is about
    ``sqrt(n_bins * 0.2 / n)``, not 0. ``debias=True`` estimates the squared error of the
    binned predictor without that bias (Kumar et al., eq. 5.2 and their code)::

        l2, debias:  D = sum_{b: W_b > 1} (W_b / W) (g_b^2 - obar_b (1 - obar_b) / (W_b - 1))

    returning ``sqrt(max(D, 0))``, or ``D`` itself with ``squared=True``. Weights count as
    repetitions (``W_b`` is the bin's total weight), so ``W_b - 1`` is the number of rows
    minus one for unit weights.

    References
    ----------
    M. P. Naeini, G. Cooper, M. Hauskrecht (2015). Obtaining Well Calibrated Probabilities
    Using Bayesian Binning. AAAI.

    A. Kumar, P. Liang, T. Ma (2019). Verified Uncertainty Calibration. NeurIPS 2019.

    Examples
    --------
    >>> from bernonnx.metrics import expected_calibration_error
    >>> y, p = [0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9]
    >>> round(expected_calibration_error(y, p, n_bins=2), 4)
    0.275
    >>> round(expected_calibration_error(y, p, n_bins=2, norm="max"), 4)
    0.3
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < p
    >>> kw = dict(n_bins=15, strategy="quantile", norm="l2")
    >>> round(expected_calibration_error(y, p, **kw), 4)  # calibrated, yet not 0
    0.0126
    >>> round(expected_calibration_error(y, p, debias=True, squared=True, **kw), 5)
    4e-05
    """
    check_int(n_bins, "n_bins", 1)
    _check_choice(strategy, "strategy", _STRATEGIES)
    _check_choice(norm, "norm", _NORMS)
    _check_debias(norm, debias, squared)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _calibration_error(_table(c, n_bins, strategy), norm, debias=debias, squared=squared)


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
