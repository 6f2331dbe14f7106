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
    confidence: float | None = 0.9,
    n_resamples: int = 100,
    random_state=0,
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
        (:func:`bernonnx.metrics.smooth_calibration_curve`, at the bandwidth of its smooth
        ECE) as a solid line with its bootstrap band, the bins then as markers joined by
        a faint line; the legend gives the smooth ECE and its interval.
    confidence : float or None, default=0.9
        With ``smooth``: the level of the band and of the smooth ECE's interval; None
        draws neither.
    n_resamples : int, default=100
        With ``smooth``: bootstrap resamples behind the band.
    random_state : int, numpy Generator or None, default=0
        With ``smooth``: seed of the resampling, so a figure is drawn the same each time.

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
    :func:`bernonnx.metrics.expected_calibration_error` on those bins. The dashed
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
    if show_weights not in ("size", None):
        raise ValueError(f"show_weights must be 'size' or None, got {show_weights!r}")
    curves = _curves(y_prob)
    # every check runs before a figure exists, so an error leaves no empty figure behind
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
                confidence=confidence,
                n_resamples=n_resamples,
                random_state=random_state,
            )
    x_label = "confidence (top-label probability)" if all(top_label) else None

    ax = _new_axes(ax, (5.5, 6.5) if show_histogram else (5.5, 5.0))
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="perfectly calibrated")
    colors = {}
    for label, table in tables.items():
        share = table["weight"] / table["weight"].sum()
        sizes = _MARKER_AREA * n_bins * share if show_weights == "size" else _MARKER_AREA
        (line,) = ax.plot(
            table["mean_predicted"],
            table["fraction_positive"],
            linewidth=0.8 if smooth else 1.5,
            alpha=0.5 if smooth else 1.0,
            label=f"{label} (ECE = {eces[label]:.4f})",
        )
        colors[label] = line.get_color()
        ax.scatter(
            table["mean_predicted"],
            table["fraction_positive"],
            s=sizes,
            color=colors[label],
            edgecolors="white",
            linewidths=0.5,
            zorder=3,
            label="_nolegend_",
        )
    for label, curve in smooths.items():
        text = f"smECE = {curve['smooth_ece']:.4f}"
        if "smooth_ece_ci" in curve:
            low, high = curve["smooth_ece_ci"]
            text += f", {confidence:.0%} CI [{low:.4f}, {high:.4f}]"
        ax.plot(
            curve["mesh"],
            curve["fraction_positive"],
            color=colors[label],
            linewidth=2.0,
            label=f"{label}, smoothed ({text})",
        )
    for label, curve in smooths.items():
        if "lower" in curve:
            ax.fill_between(
                curve["mesh"],
                curve["lower"],
                curve["upper"],
                color=colors[label],
                alpha=0.2,
                linewidth=0,
                label="_nolegend_",
            )
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
