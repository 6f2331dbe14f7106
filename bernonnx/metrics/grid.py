"""Calibration error on a uniform grid over several transformed scores (Wang & Liu)."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from bernonnx._validation import as_1d, binarize_labels, check_int, check_sample_weight

from ._inputs import PosLabel, _check_inputs, _check_y_prob


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

    The measure of Wang & Liu (IJCAI 2020) for a calibrator of several classifiers'
    scores: every axis
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
    check_int(n_bins, "n_bins", 1)
    _check_min_count(min_count)
    if callable(y_prob):
        yt = as_1d(y_true, "y_true")
        if yt.shape[0] == 0:
            raise ValueError("y_true is empty: at least one sample is needed.")
        w = check_sample_weight(sample_weight, yt.shape[0])
        y, p = binarize_labels(yt, pos_label), None
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
