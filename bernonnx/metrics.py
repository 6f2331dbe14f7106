"""Calibration metrics for binary probability predictions.

Every function takes the true labels, the predicted probabilities of the positive class and
optional sample weights, where a weight ``k`` means exactly the same as repeating the row ``k``
times (a weight of zero removes the row). Binned metrics share one reliability table:

* ``strategy="uniform"``: ``n_bins`` equal-width bins on ``[0, 1]`` with the edges and the
  edge convention of :func:`sklearn.calibration.calibration_curve` (right-closed bins, so a
  prediction equal to an inner edge belongs to the lower bin);
* ``strategy="quantile"``: bins of (nearly) equal total weight, edges at weighted quantiles.

All arithmetic is done in float64 whatever the input dtype.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import roc_auc_score

from ._stats import weighted_quantile

__all__ = [
    "brier_decomposition",
    "brier_score",
    "calibration_report",
    "expected_calibration_error",
    "grid_calibration_error",
    "log_loss",
    "maximum_calibration_error",
    "reliability_table",
    "rms_calibration_error",
]

_STRATEGIES = ("uniform", "quantile")
_NORMS = ("l1", "l2", "max")

PosLabel = int | float | bool | str | None


class _Checked(NamedTuple):
    """Validated inputs: 0/1 targets, probabilities and weights, all float64."""

    y: np.ndarray
    p: np.ndarray
    w: np.ndarray
    # dtype of y_prob as passed, for the log-loss clipping epsilon
    prob_dtype: np.dtype


def _as_1d(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}.")
    return arr


def _check_y_prob(y_prob: ArrayLike) -> tuple[np.ndarray, np.dtype]:
    arr = np.asarray(y_prob)
    if arr.ndim == 2 and arr.shape[1] == 2:
        raise ValueError(
            f"y_prob has shape {arr.shape}: pass the probabilities of the positive class "
            "only, e.g. predict_proba(X)[:, 1], not the two-column predict_proba output."
        )
    arr = _as_1d(arr, "y_prob")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y_prob must hold real numbers, got dtype {arr.dtype}.")
    # integer and bool predictions have no epsilon of their own; sklearn casts them to
    # float64 too
    prob_dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    p = arr.astype(np.float64)
    if np.isnan(p).any():
        raise ValueError("y_prob contains NaN.")
    if np.isinf(p).any():
        raise ValueError("y_prob contains inf.")
    if p.size and (p.min() < 0.0 or p.max() > 1.0):
        raise ValueError(
            "y_prob must be probabilities in [0, 1], found values in "
            f"[min={float(p.min())!r}, max={float(p.max())!r}]."
        )
    return p, prob_dtype


def _binarize(y_true: np.ndarray, pos_label: PosLabel) -> np.ndarray:
    if y_true.dtype.kind == "f" and np.isnan(y_true).any():
        raise ValueError("y_true contains NaN.")
    try:
        classes, inverse = np.unique(y_true, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"y_true mixes labels of incomparable types: {exc}") from None
    labels = classes.tolist()
    if len(labels) > 2:
        raise ValueError(
            f"y_true must hold at most two distinct labels (binary task), got {len(labels)}: "
            f"{labels[:10]}."
        )
    if pos_label is None:
        # mirrors sklearn's _check_pos_label_consistency: only the conventional numeric
        # encodings have an unambiguous positive label; strings never compare equal to ints
        if set(labels) <= {0, 1} or set(labels) <= {-1, 1}:
            pos_label = 1
        else:
            raise ValueError(
                f"y_true has labels {labels}: pass pos_label to say which one is the positive "
                "class (pos_label=None is only allowed for labels in {0, 1} or {-1, 1})."
            )
    elif len(labels) == 2 and pos_label not in labels:
        raise ValueError(f"pos_label={pos_label!r} is not one of the labels in y_true {labels}.")
    # a single label is allowed: with pos_label elsewhere it is a set of negatives, which
    # still has a calibration error
    is_pos = np.array([label == pos_label for label in labels], dtype=bool)
    return is_pos[inverse.reshape(-1)].astype(np.float64)


def _check_sample_weight(sample_weight: ArrayLike | None, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    arr = _as_1d(sample_weight, "sample_weight")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold real numbers, got dtype {arr.dtype}.")
    w = arr.astype(np.float64)
    if w.shape[0] != n:
        raise ValueError(f"sample_weight has {w.shape[0]} entries but y_prob has {n}.")
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or inf.")
    if (w < 0).any():
        raise ValueError(f"sample_weight must be non-negative, found min={float(w.min())!r}.")
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight.")
    return w


def _check_inputs(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    sample_weight: ArrayLike | None,
    pos_label: PosLabel,
) -> _Checked:
    """Validate the arguments every metric shares; see the module docstring."""
    yt = _as_1d(y_true, "y_true")
    p, prob_dtype = _check_y_prob(y_prob)
    if yt.shape[0] != p.shape[0]:
        raise ValueError(
            f"y_true and y_prob have different lengths: {yt.shape[0]} and {p.shape[0]}."
        )
    if p.shape[0] == 0:
        raise ValueError("y_true and y_prob are empty: at least one sample is needed.")
    w = _check_sample_weight(sample_weight, p.shape[0])
    y = _binarize(yt, pos_label)
    return _Checked(y, p, w, prob_dtype)


def _check_n_bins(n_bins: int) -> None:
    if (
        not isinstance(n_bins, numbers.Integral)
        or isinstance(n_bins, bool | np.bool_)
        or n_bins < 1
    ):
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}.")


def _check_choice(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}.")


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
    _check_n_bins(n_bins)
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
    _check_n_bins(n_bins)
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
    _check_n_bins(n_bins)
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


def calibration_report(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> dict[str, float | int]:
    """All calibration metrics at once, for comparison tables.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    n_bins : int, default=10
        Number of bins of the binned metrics.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    report : dict
        ``ece`` (uniform bins, l1), ``ece_quantile`` (quantile bins, l1), ``rmsce``
        (uniform, l2), ``mce`` (uniform, max), ``brier``, ``log_loss``, ``auc``
        (:func:`sklearn.metrics.roc_auc_score`, NaN when the rows with positive weight hold
        a single class) and ``n_distinct``, the number of distinct predicted probabilities
        among rows with positive weight (a calibrator with ties, such as isotonic
        regression, shows fewer).

    Notes
    -----
    The inputs are validated once; each entry equals the dedicated function's value.

    Examples
    --------
    >>> from bernonnx.metrics import calibration_report
    >>> report = calibration_report([0, 1, 0, 1], [0.2, 0.3, 0.7, 0.9], n_bins=2)
    >>> {key: round(value, 4) for key, value in report.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'ece': 0.275, 'ece_quantile': 0.275, 'rmsce': 0.2761, 'mce': 0.3, 'brier': 0.2575,
     'log_loss': 0.6841, 'auc': 0.75, 'n_distinct': 4}
    """
    _check_n_bins(n_bins)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    uniform = _table(c, n_bins, "uniform")
    positive = c.w > 0
    if np.unique(c.y[positive]).shape[0] < 2:
        # AUC is undefined with one class; a NaN keeps comparison tables printable
        auc = float("nan")
    else:
        auc = float(roc_auc_score(c.y, c.p, sample_weight=c.w))
    return {
        "ece": _calibration_error(uniform, "l1"),
        "ece_quantile": _calibration_error(_table(c, n_bins, "quantile"), "l1"),
        "rmsce": _calibration_error(uniform, "l2"),
        "mce": _calibration_error(uniform, "max"),
        "brier": _brier(c),
        "log_loss": _log_loss(c, "auto"),
        "auc": auc,
        "n_distinct": int(np.unique(c.p[positive]).shape[0]),
    }


def _check_coords(coords: ArrayLike, n: int) -> np.ndarray:
    """``coords`` as a float64 ``(n, M)`` array in ``[0, 1]``; a 1-D array is one column."""
    arr = np.asarray(coords)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"coords must be an (n_samples, M) array, got shape {arr.shape}.")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"coords must hold real numbers, got dtype {arr.dtype}.")
    if arr.shape[0] != n:
        raise ValueError(f"coords has {arr.shape[0]} rows but y_true has {n}.")
    c = arr.astype(np.float64)
    if not np.isfinite(c).all():
        raise ValueError("coords contains NaN or inf.")
    if c.size and (c.min() < 0.0 or c.max() > 1.0):
        raise ValueError(
            "coords must lie in [0, 1] (transformed scores, e.g. empirical CDF values), found "
            f"values in [min={float(c.min())!r}, max={float(c.max())!r}]."
        )
    return c


def _check_min_count(min_count: float) -> None:
    if (
        not isinstance(min_count, numbers.Real)
        or isinstance(min_count, bool | np.bool_)
        or not np.isfinite(min_count)
        or min_count < 0
    ):
        raise ValueError(f"min_count must be a finite number >= 0, got {min_count!r}.")


def _centre_predictions(y_prob: Callable, centres: np.ndarray) -> np.ndarray:
    """``y_prob(centres)`` checked like an array ``y_prob`` of ``len(centres)`` entries."""
    out = y_prob(centres.copy())
    try:
        p, _ = _check_y_prob(out)
    except ValueError as exc:
        raise ValueError(
            f"the callable y_prob returned bad values at the cell centres: {exc}"
        ) from None
    if p.shape[0] != centres.shape[0]:
        raise ValueError(
            f"the callable y_prob returned {p.shape[0]} values for {centres.shape[0]} cell "
            "centres; it must return one probability per row of its (n_cells, M) argument."
        )
    return p


def grid_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike | Callable[[np.ndarray], ArrayLike],
    coords: ArrayLike,
    *,
    n_bins: int = 10,
    min_count: float = 1000,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
) -> dict:
    """Calibration error on a uniform grid over ``M`` transformed scores (Wang & Liu).

    The measure of seed 002 for a calibrator of several classifiers' scores: every axis
    of ``[0, 1]^M`` is cut into ``n_bins`` equal cells; in each cell holding enough test
    rows, the positive rate of those rows stands in for the unknown true probability and is
    compared with the calibrator's prediction.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or callable
        Either the predicted probability of the positive class for every row (the cell's
        prediction is then the weighted mean prediction of its rows), or a callable taking
        the ``(n_cells, M)`` array of the kept cells' centres in ``coords`` space and
        returning one probability per centre (the paper's definition: ``f_hat`` at the
        centre). The callable is called once, with the kept cells only.
    coords : array-like of shape (n_samples, M) or (n_samples,)
        The rows' positions in ``[0, 1]^M``: the classifiers' scores after a fixed
        increasing map to ``[0, 1]`` (the paper uses each score's empirical CDF). The same
        ``coords`` must be used for every method compared. A 1-D array is one column.
    n_bins : int, default=10
        Cells per axis, so ``n_bins ** M`` cells in all. Cells are right-closed like the
        bins of :func:`reliability_table`: ``[0, 1/n_bins]``, ``(1/n_bins, 2/n_bins]``, ...
    min_count : float, default=1000
        A cell is kept when its total sample weight is at least ``min_count`` (the row
        count without weights; with weights the weighted count, so a weight ``k`` still
        equals ``k`` repeated rows). Empty cells are always dropped. The paper uses 1000.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.

    Returns
    -------
    result : dict
        - ``mce``: largest absolute gap over the kept cells;
        - ``ece``: mean absolute gap over the kept cells, each cell counting once (not
          weighted by its size, as in the paper);
        - ``n_cells``: number of kept cells (``mce`` and ``ece`` are NaN when it is 0);
        - ``cells``: the per-cell table, one entry per kept cell in C order of the cell
          index: ``index`` (int, ``(n_cells, M)``), ``centre`` (``(n_cells, M)``),
          ``predicted``, ``fraction_positive``, ``gap`` (absolute), ``weight`` and
          ``count`` (rows with positive weight).

    Notes
    -----
    With ``G`` the set of kept cells, ``obar_g`` the weighted positive rate of cell ``g``
    and ``p_g`` its prediction (``f_hat(centre_g)`` for a callable, else the weighted mean
    of the rows' predictions)::

        MCE = max_{g in G} |obar_g - p_g|,   ECE = sum_{g in G} |obar_g - p_g| / |G|

    ``min_count`` guards against noisy rates: a rate from ``W`` rows has a standard error
    of about ``sqrt(obar (1 - obar) / W)``, which sets a floor under both measures. The
    two forms of ``y_prob`` agree when the predictions are constant within every cell; a
    callable also scores the calibrator's variation inside a cell.

    References
    ----------
    Y. Wang, X. Liu, "Multivariate Probability Calibration with Isotonic Bernstein
    Polynomials", IJCAI 2020, section 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.metrics import grid_calibration_error
    >>> coords = np.array([[0.1, 0.1], [0.2, 0.3], [0.9, 0.8], [0.7, 0.9], [0.6, 0.2]])
    >>> y = [0, 1, 1, 1, 0]
    >>> res = grid_calibration_error(y, [0.2, 0.4, 0.9, 0.6, 0.3], coords, n_bins=2,
    ...                              min_count=2)
    >>> res["n_cells"], round(res["mce"], 4), round(res["ece"], 4)
    (2, 0.25, 0.225)
    >>> res["cells"]["centre"]
    array([[0.25, 0.25],
           [0.75, 0.75]])
    >>> res = grid_calibration_error(y, lambda c: c.mean(axis=1), coords, n_bins=2,
    ...                              min_count=2)
    >>> round(res["mce"], 4), round(res["ece"], 4)
    (0.25, 0.25)
    """
    _check_n_bins(n_bins)
    _check_min_count(min_count)
    if callable(y_prob):
        yt = _as_1d(y_true, "y_true")
        if yt.shape[0] == 0:
            raise ValueError("y_true is empty: at least one sample is needed.")
        w = _check_sample_weight(sample_weight, yt.shape[0])
        y, p = _binarize(yt, pos_label), None
    else:
        c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
        y, p, w = c.y, c.p, c.w
    u = _check_coords(coords, y.shape[0])

    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # right-closed cells as in _table; 0 joins the first cell
    index = np.searchsorted(edges[1:-1], u)
    cells, slot = np.unique(index, axis=0, return_inverse=True)
    slot = slot.reshape(-1)
    n_slots = cells.shape[0]
    weight = np.bincount(slot, weights=w, minlength=n_slots)
    sum_pos = np.bincount(slot, weights=w * y, minlength=n_slots)
    count = np.bincount(slot[w > 0], minlength=n_slots)
    keep = (weight > 0) & (weight >= min_count)
    cells, weight, count = cells[keep], weight[keep], count[keep]
    centre = (cells + 0.5) / n_bins
    if p is None:
        predicted = _centre_predictions(y_prob, centre) if cells.shape[0] else np.zeros(0)
    else:
        predicted = np.bincount(slot, weights=w * p, minlength=n_slots)[keep] / weight
    fraction = sum_pos[keep] / weight
    gap = np.abs(predicted - fraction)
    empty = gap.shape[0] == 0
    return {
        "mce": float("nan") if empty else float(gap.max()),
        "ece": float("nan") if empty else float(gap.mean()),
        "n_cells": int(gap.shape[0]),
        "cells": {
            "index": cells,
            "centre": centre,
            "predicted": predicted,
            "fraction_positive": fraction,
            "gap": gap,
            "weight": weight,
            "count": count,
        },
    }
