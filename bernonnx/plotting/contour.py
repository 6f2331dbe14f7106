"""Contours of a fitted multi-column calibrator over two of its score columns."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from ._common import _new_axes, _padded
from ._hooks import SurfaceHooks, family_names, hooks_for

__all__ = ["plot_contour"]

#: Most scatter points plot_contour draws; more rows are subsampled deterministically.
_MAX_SCATTER = 2000


def _check_axes(axes, n_cols: int) -> tuple[int, int]:
    if n_cols < 2:
        raise ValueError(
            f"the calibrator was fitted on {n_cols} score column: plot_contour needs at "
            "least 2 (use plot_calibration_function for one score)"
        )
    ok = (
        isinstance(axes, Sequence)
        and len(axes) == 2
        and all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in axes)
    )
    if not ok or axes[0] == axes[1] or not all(0 <= a < n_cols for a in axes):
        raise ValueError(
            f"axes must be two distinct column indices in [0, {n_cols}), got {axes!r}"
        )
    return int(axes[0]), int(axes[1])


def _check_fixed(fixed, cal, hooks: SurfaceHooks, n_cols: int) -> np.ndarray:
    """Values of all columns (those of the plotted axes are overwritten by the grid)."""
    values = np.array([hooks.column_median(cal, m) for m in range(n_cols)])
    if fixed is None:
        return values
    if isinstance(fixed, Mapping):
        for key, value in fixed.items():
            if not (isinstance(key, numbers.Integral) and 0 <= key < n_cols):
                raise ValueError(
                    f"fixed: keys must be column indices in [0, {n_cols}), got {key!r}"
                )
            values[int(key)] = value
    else:
        arr = np.asarray(fixed, dtype=np.float64)
        if arr.shape != (n_cols,):
            raise ValueError(
                f"fixed must be None, a dict {{column: value}} or one value per score column "
                f"(shape ({n_cols},)), got shape {arr.shape}"
            )
        values = arr.copy()
    if not np.isfinite(values).all():
        raise ValueError("fixed contains NaN or inf")
    return values


def _check_scores_2d(scores, n_cols: int) -> np.ndarray | None:
    if scores is None:
        return None
    s = np.asarray(scores)
    if s.ndim != 2 or s.shape[1] != n_cols or s.shape[0] == 0 or s.dtype.kind not in "biuf":
        raise ValueError(
            f"scores must be a non-empty real array of shape (n_samples, {n_cols}), got "
            f"shape {s.shape} and dtype {s.dtype}"
        )
    s = s.astype(np.float64)
    if not np.isfinite(s).all():
        raise ValueError("scores contains NaN or inf")
    return s


def plot_contour(
    calibrator,
    *,
    scores: ArrayLike | None = None,
    grid: int = 101,
    levels=10,
    ax=None,
    title: str | None = None,
    axes: tuple[int, int] = (0, 1),
    fixed=None,
):
    """Contours of a fitted MultivariateBernsteinCalibrator over two score columns.

    Parameters
    ----------
    calibrator : fitted MultivariateBernsteinCalibrator
        Fitted on ``M >= 2`` score columns.
    scores : array-like of shape (n_samples, M), default=None
        Raw scores: the plotted ranges are their column ranges, and (at most 2,000 of)
        the rows are drawn as points, a fixed random subset when there are more. None:
        the fitted transform ranges (as in :func:`plot_calibration_function`), no points.
    grid : int, default=101
        Evaluation points per axis (``grid**2`` in all).
    levels : int or array-like, default=10
        Contour levels, passed to ``Axes.contourf``.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    title : str, default=None
        Axes title.
    axes : (int, int), default=(0, 1)
        The score columns on the x and y axes.
    fixed : None, array-like of shape (M,) or dict of int to float, default=None
        Values of the other columns. None: each column's fitted median (the score its
        transform maps to 1/2: the weighted median for the logistic transform, the
        median knot for quantile, the mid-range for min-max); a dict sets some columns
        and keeps the medians of the rest.

    Returns
    -------
    ax : matplotlib Axes
        The contour Axes; the colour bar, labelled ``P(y=1)`` (the probability of
        ``classes_[1]``), is on its own Axes of ``ax.figure``.

    Raises
    ------
    ValueError
        ``calibrator`` is not a MultivariateBernsteinCalibrator (1-D calibrators belong
        to :func:`plot_calibration_function`), or bad ``axes``, ``fixed``, ``scores``
        or ``grid``.
    sklearn.exceptions.NotFittedError
        ``calibrator`` is not fitted.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from bernonnx import MultivariateBernsteinCalibrator
    >>> from bernonnx.plotting import plot_contour
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=(2000, 2))
    >>> y = rng.random(2000) < 1 / (1 + np.exp(-(2 * s[:, 0] + s[:, 1])))
    >>> cal = MultivariateBernsteinCalibrator(degree=3).fit(s, y)
    >>> ax = plot_contour(cal, scores=s)
    >>> ax.figure.axes[-1].get_ylabel()
    'P(y=1)'
    >>> plt.close(ax.figure)
    """
    hooks = hooks_for(calibrator)
    if not isinstance(hooks, SurfaceHooks):
        raise ValueError(
            f"calibrator must be a fitted {' or '.join(family_names(SurfaceHooks))}, got "
            f"{type(calibrator).__name__}; draw 1-D calibrators with plot_calibration_function"
        )
    check_is_fitted(calibrator)
    n_cols = int(calibrator.n_features_in_)
    i, j = _check_axes(axes, n_cols)
    if not isinstance(grid, numbers.Integral) or isinstance(grid, bool | np.bool_) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}")
    s = _check_scores_2d(scores, n_cols)
    values = _check_fixed(fixed, calibrator, hooks, n_cols)

    ranges = []
    for m in (i, j):
        if s is None:
            ranges.append(hooks.column_range(calibrator, m))
        else:
            ranges.append(_padded(float(s[:, m].min()), float(s[:, m].max())))
    gx = np.linspace(*ranges[0], int(grid))
    gy = np.linspace(*ranges[1], int(grid))
    xx, yy = np.meshgrid(gx, gy)
    rows = np.tile(values, (xx.size, 1))
    rows[:, i], rows[:, j] = xx.ravel(), yy.ravel()
    p = calibrator.predict_proba(rows)[:, 1].reshape(xx.shape)

    ax = _new_axes(ax, (6.0, 5.0))
    filled = ax.contourf(xx, yy, p, levels=levels, cmap="viridis")
    ax.contour(filled, colors="white", linewidths=0.5, alpha=0.6)
    colorbar = ax.figure.colorbar(filled, ax=ax)
    colorbar.set_label("P(y=1)")
    if s is not None:
        shown = s
        if s.shape[0] > _MAX_SCATTER:
            pick = np.random.default_rng(0).choice(s.shape[0], _MAX_SCATTER, replace=False)
            shown = s[np.sort(pick)]
        ax.scatter(shown[:, i], shown[:, j], s=3, color="black", alpha=0.25, linewidths=0)
    ax.set_xlim(*ranges[0])
    ax.set_ylim(*ranges[1])
    ax.set_xlabel(f"score {i}")
    ax.set_ylabel(f"score {j}")
    if n_cols > 2:
        others = ", ".join(
            f"score {m} = {values[m]:.4g}" for m in range(n_cols) if m not in (i, j)
        )
        ax.text(
            0.01,
            0.01,
            others,
            transform=ax.transAxes,
            fontsize="small",
            color="white",
            va="bottom",
        )
    if title is not None:
        ax.set_title(title)
    return ax
