"""The reliability diagram: binned positive rate against mean prediction."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from bernonnx.metrics import (
    expected_calibration_error,
    reliability_table,
    smooth_calibration_curve,
)
from bernonnx.metrics.multiclass import _Multiclass
from bernonnx.metrics.smooth import _check_bandwidth

from ._common import _new_axes

__all__ = ["reliability_diagram"]

#: Marker area (points^2) of a bin holding 1 / n_bins of the weight: areas are
#: ``_MARKER_AREA * n_bins * weight share``, so equal-mass bins all get this area and the
#: scale is the same for every curve of a figure.
_MARKER_AREA = 36.0


def _curves(y_prob) -> dict[str, ArrayLike]:
    if isinstance(y_prob, Mapping):
        if not y_prob:
            raise ValueError("y_prob is an empty dict: pass at least one {label: probabilities}")
        return {str(label): p for label, p in y_prob.items()}
    return {"model": y_prob}


def reliability_diagram(
    y_true: ArrayLike,
    y_prob,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label=None,
    show_weights: str | None = "size",
    show_histogram: bool = True,
    ax=None,
    title: str | None = None,
    labels: ArrayLike | None = None,
    smooth: bool = False,
    bandwidth: float | str = "cv",
    confidence: float | None = 0.9,
    n_resamples: int = 100,
    random_state=0,
    min_weight: float = 0.01,
):
    """Reliability diagram: positive rate against mean prediction, bin by bin.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most (binary ``y_prob``).
    y_prob : array-like of shape (n_samples,) or (n_samples, n_classes), or dict
        Probabilities of the positive class; a dict ``{label: probabilities}`` draws
        several calibrators (same ``y_true``) on one figure, in the dict's order
        (values of those shapes). Class probabilities (n, k) with k >= 3 draw the
        top-label diagram: accuracy against the confidence ``max_k p_k`` (Guo et al.
        2017).
    n_bins : int, default=10
        Number of bins before empty bins are dropped.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bins of :func:`bernonnx.metrics.reliability_table`: equal width on ``[0, 1]``
        or equal weight.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; a weight ``k`` draws exactly what ``k`` repeated rows draw.
    pos_label : int, float, bool or str, default=None
        The positive label, as in :func:`bernonnx.metrics.reliability_table`.
    show_weights : {"size", None}, default="size"
        ``"size"``: each bin's marker area is proportional to its share of the total
        weight (``36 * n_bins * share`` points^2, so an equal-mass bin gets 36), and
        the legend says so; None: equal markers.
    show_histogram : bool, default=True
        Draw each curve's weight share per bin as bars on an Axes beneath the diagram
        (sharing its x axis; it takes 30% of ``ax``'s height). With several curves,
        each bin is split into side-by-side bars, one per curve, in the curves' order.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    title : str, default=None
        Axes title.
    labels : array-like of shape (n_classes,), default=None
        Top-label mode only: the label of each column (default: the sorted labels of
        ``y_true``, which must then all occur).
    smooth : bool, default=False
        Also draw each curve's kernel-smoothed positive rate
        (:func:`bernonnx.metrics.smooth_calibration_curve` at ``bandwidth``) as a solid
        line with its bootstrap band, the bins then as markers joined by a faint line;
        the legend gives the smooth ECE (at its own bandwidth) and its interval.
    bandwidth : "cv", "auto" or float, default="cv"
        With ``smooth``: the width of the curve's kernel, as in
        :func:`bernonnx.metrics.smooth_calibration_curve`. ``"cv"`` is chosen for the
        picture (cross-validated likelihood, with a floor that grows as rows get fewer);
        ``"auto"``, the smooth ECE's own width, is made to measure the error and on a
        few thousand well-calibrated rows draws the noise as wiggles.
    confidence : float or None, default=0.9
        With ``smooth``: the level of the band and of the smooth ECE's interval; None
        draws neither.
    n_resamples : int, default=100
        With ``smooth``: bootstrap resamples behind the band.
    random_state : int, numpy Generator or None, default=0
        With ``smooth``: seed of the resampling, so a figure is drawn the same each time.
    min_weight : float, default=0.01
        A bin holding less than this share of a curve's weight keeps its (small) marker
        but no line is drawn to it; with ``smooth``, the smoothed curve and its band are
        not drawn where the smoothed weight is below that share per bin width
        (``density < min_weight * n_bins``), where the estimate swings on a few rows.
        0 draws everything.

    Returns
    -------
    ax : matplotlib Axes
        The diagram's Axes, also when the histogram is drawn. The histogram Axes is then
        ``ax.bernonnx_histogram`` (it is also in ``ax.figure.axes``); it is None when
        ``show_histogram=False``.

    Notes
    -----
    Each curve joins the non-empty bins' ``(mean_predicted, fraction_positive)`` of
    :func:`bernonnx.metrics.reliability_table` with the same ``n_bins``, ``strategy``
    and ``sample_weight``; its legend entry gives the ECE of
    :func:`bernonnx.metrics.expected_calibration_error` on those bins (a line's
    ``y`` data is NaN at the bins under ``min_weight``). The dashed
    diagonal is perfect calibration. ``ax.lines`` holds the diagonal, then one line per
    curve; ``ax.collections`` one scatter per curve. With ``smooth=True``, ``ax.lines``
    continues with one smooth line per curve and ``ax.collections`` with one band per
    curve (when ``confidence`` is not None).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from bernonnx.plotting import reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(2000)
    >>> y = rng.random(2000) < p
    >>> ax = reliability_diagram(y, {"calibrated": p, "squared": p**2})
    >>> [line.get_label() for line in ax.lines[1:]]
    ['calibrated (ECE = 0.0296)', 'squared (ECE = 0.1706)']
    >>> ax.bernonnx_histogram.get_ylabel()
    'weight share'
    >>> plt.close(ax.figure)
    """
    _check_min_weight(min_weight)
    if show_weights not in ("size", None):
        raise ValueError(f"show_weights must be 'size' or None, got {show_weights!r}")
    # every check runs before a figure exists, so an error leaves no empty figure behind
    tables, eces, smooths, top = _prepare(
        y_true,
        _curves(y_prob),
        n_bins=n_bins,
        strategy=strategy,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        smooth=smooth,
        bandwidth=bandwidth,
        confidence=confidence,
        n_resamples=n_resamples,
        random_state=random_state,
    )
    x_label = "confidence (top-label probability)" if top else None

    ax = _new_axes(ax, (5.5, 6.5) if show_histogram else (5.5, 5.0))
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="perfectly calibrated")
    colors = {}
    for label, table in tables.items():
        colors[label] = _draw_bins(
            ax,
            table,
            n_bins=n_bins,
            min_weight=min_weight,
            sizes=show_weights == "size",
            faint=smooth,
            label=f"{label} (ECE = {eces[label]:.4f})",
        )
    for label, curve in smooths.items():
        _draw_smooth(
            ax,
            curve,
            colors[label],
            min_density=min_weight * n_bins,
            label=f"{label}, smoothed ({_smooth_text(curve, confidence)})",
            band=False,
        )
    for label, curve in smooths.items():
        _draw_band(ax, curve, colors[label], min_density=min_weight * n_bins)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy" if x_label else "fraction of positives")
    handles, _ = ax.get_legend_handles_labels()
    if show_weights == "size":
        # a legend-only marker (not on the Axes): what the marker sizes mean
        from matplotlib.lines import Line2D

        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="none",
                color="0.5",
                markersize=_MARKER_AREA**0.5,
                label=f"marker area = bin weight (this size: 1/{n_bins} of the total)",
            )
        )
    ax.legend(handles=handles, loc="upper left", fontsize="small")
    if title is not None:
        ax.set_title(title)

    ax.bernonnx_histogram = None
    if not show_histogram:
        ax.set_xlabel(x_label or "mean predicted probability")
        return ax
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    hist = make_axes_locatable(ax).append_axes("bottom", size="30%", pad=0.1, sharex=ax)
    # several curves: bars side by side, each curve in its own slice of every bin
    for c, (label, table) in enumerate(tables.items()):
        share = table["weight"] / table["weight"].sum()
        width = (table["bin_upper"] - table["bin_lower"]) / len(tables)
        hist.bar(
            table["bin_lower"] + c * width,
            share,
            width=width,
            align="edge",
            color=colors[label],
            alpha=0.6,
            linewidth=0,
            label=label,
        )
    ax.tick_params(labelbottom=False)
    hist.set_xlabel(x_label or "mean predicted probability")
    hist.set_ylabel("weight share")
    hist.set_ylim(bottom=0)
    ax.bernonnx_histogram = hist
    return ax


def _check_min_weight(min_weight) -> None:
    if not (isinstance(min_weight, (int, float)) and 0.0 <= min_weight < 1.0):
        raise ValueError(f"min_weight must be a number in [0, 1), got {min_weight!r}")


def _prepare(
    y_true,
    curves: dict,
    *,
    n_bins,
    strategy,
    sample_weight,
    pos_label,
    labels,
    smooth,
    bandwidth,
    confidence,
    n_resamples,
    random_state,
):
    """Each curve's bins (:func:`reliability_table`), ECE and smoothed curve, and whether
    the curves are top-label (class probabilities); every input checked."""
    _check_bandwidth(bandwidth, ("auto", "cv"))
    tables, eces, smooths = {}, {}, {}
    top_label = [np.ndim(p) == 2 and np.shape(p)[1] > 2 for p in curves.values()]
    if any(top_label) and not all(top_label):
        raise ValueError(
            "y_prob mixes (n, k) class probabilities and binary probabilities: draw "
            "them on separate diagrams"
        )
    if all(top_label) and pos_label is not None:
        raise ValueError("pos_label applies to binary y_prob; got (n, k) probabilities")
    for label, p in curves.items():
        kwargs = dict(n_bins=n_bins, strategy=strategy, sample_weight=sample_weight)
        y, p_curve = y_true, p
        if all(top_label):
            # top-label mode: was the predicted class right, against its probability
            checked = _Multiclass(y_true, p, sample_weight, labels).top_label()
            y, p_curve = checked.y, checked.p
        tables[label] = reliability_table(y, p_curve, pos_label=pos_label, **kwargs)
        eces[label] = expected_calibration_error(y, p_curve, pos_label=pos_label, **kwargs)
        if smooth:
            smooths[label] = smooth_calibration_curve(
                y,
                p_curve,
                sample_weight=sample_weight,
                pos_label=pos_label,
                bandwidth=bandwidth,
                confidence=confidence,
                n_resamples=n_resamples,
                random_state=random_state,
            )
    return tables, eces, smooths, all(top_label)


def _draw_bins(
    ax, table, *, n_bins, min_weight, sizes, faint, label, color=None, alpha=1.0, zorder=3
):
    """One curve's bins: markers of area proportional to the bin weights, joined by a
    line that skips the bins under ``min_weight`` of the weight (their marker stays, and
    shows how little they hold). Returns the curve's colour."""
    share = table["weight"] / table["weight"].sum()
    area = _MARKER_AREA * n_bins * share if sizes else _MARKER_AREA
    # a tiny top bin (isotonic's few rows at 1.0) would pull the eye along a long line
    joined = np.where(share >= min_weight, table["fraction_positive"], np.nan)
    (line,) = ax.plot(
        table["mean_predicted"],
        joined,
        color=color,
        linewidth=0.8 if faint else 1.5,
        alpha=(0.5 if faint else 1.0) * alpha,
        label=label,
        zorder=zorder - 1,
    )
    color = line.get_color()
    ax.scatter(
        table["mean_predicted"],
        table["fraction_positive"],
        s=area,
        color=color,
        alpha=alpha,
        edgecolors="white",
        linewidths=0.5,
        zorder=zorder,
        label="_nolegend_",
    )
    return color


def _smooth_text(curve, confidence) -> str:
    text = f"smECE = {curve['smooth_ece']:.4f}"
    if "smooth_ece_ci" in curve:
        low, high = curve["smooth_ece_ci"]
        text += f", {confidence:.0%} CI [{low:.4f}, {high:.4f}]"
    return text


def _thin(curve, values, min_density):
    """``values`` where the smoothed weight is at least ``min_density`` and within the
    predictions' range, NaN elsewhere: where hardly any rows are, the kernel estimate
    swings between 0 and 1, and past the last prediction a wide kernel only extrapolates."""
    lo, hi = curve["support"]
    mesh = curve["mesh"]
    keep = (curve["density"] >= min_density) & (mesh >= lo) & (mesh <= hi)
    return np.where(keep, values, np.nan)


def _draw_smooth(ax, curve, color, *, min_density, label, band, linewidth=2.0, alpha=1.0):
    ax.plot(
        curve["mesh"],
        _thin(curve, curve["fraction_positive"], min_density),
        color=color,
        linewidth=linewidth,
        alpha=alpha,
        label=label,
    )
    if band:
        _draw_band(ax, curve, color, min_density=min_density)


def _draw_band(ax, curve, color, *, min_density):
    if "lower" in curve:
        ax.fill_between(
            curve["mesh"],
            _thin(curve, curve["lower"], min_density),
            _thin(curve, curve["upper"], min_density),
            color=color,
            alpha=0.2,
            linewidth=0,
            label="_nolegend_",
        )
