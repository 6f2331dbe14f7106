"""Small multiples of reliability diagrams: one panel per calibrator, a reference in each."""

from __future__ import annotations

import math
import textwrap

import numpy as np
from numpy.typing import ArrayLike

from ._common import _pyplot
from .reliability import (
    _MARKER_AREA,
    _check_min_weight,
    _curves,
    _draw_bins,
    _draw_smooth,
    _prepare,
)

__all__ = ["reliability_grid"]

#: the reference curve's colour: grey, behind the panel's own curve
_REFERENCE_COLOR = "0.55"


def _shape(n: int, ncols: int | None) -> tuple[int, int]:
    """Rows and columns for ``n`` panels: at most four columns, rows as full as can be
    (7 panels: 2 x 4, 9: 3 x 3)."""
    if ncols is None:
        rows = math.ceil(n / 4)
        ncols = math.ceil(n / rows)
    elif not (isinstance(ncols, (int, np.integer)) and ncols >= 1):
        raise ValueError(f"ncols must be an integer >= 1, got {ncols!r}")
    return math.ceil(n / ncols), min(int(ncols), n)


def reliability_grid(
    y_true: ArrayLike,
    y_prob,
    *,
    reference: str | None = None,
    n_bins: int = 10,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label=None,
    labels: ArrayLike | None = None,
    smooth: bool = False,
    bandwidth: float | str = "cv",
    confidence: float | None = 0.9,
    n_resamples: int = 100,
    random_state=0,
    min_weight: float = 0.01,
    ncols: int | None = None,
    panel_size: float = 3.0,
    title: str | None = None,
    figure=None,
):
    """Reliability diagrams as small multiples: one panel per calibrator.

    Several calibrators on one diagram overlap where most rows are; here each has a
    panel of its own, on the same axes, with the ``reference`` curve (the raw model,
    say) drawn in grey behind it in every panel, so each panel reads as "this
    calibrator against the model".

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : dict
        ``{label: probabilities}`` (shapes as in :func:`reliability_diagram`: the
        positive class's, or (n, k) class probabilities for the top-label diagram),
        one panel per entry in the dict's order, the ``reference`` entry excepted.
    reference : str, default=None
        A key of ``y_prob`` drawn in grey in every panel instead of a panel of its own
        (the uncalibrated model, say); None draws no reference.
    n_bins, strategy, sample_weight, pos_label, labels
        The bins, as in :func:`reliability_diagram` (and
        :func:`bernonnx.metrics.reliability_table`).
    smooth, bandwidth, confidence, n_resamples, random_state
        The smoothed curve with its bootstrap band, as in :func:`reliability_diagram`;
        the reference's smoothed curve is drawn without a band.
    min_weight : float, default=0.01
        Bins under this share of the weight keep their marker but get no line, and the
        smoothed curves stop where their weight thins out below it (as in
        :func:`reliability_diagram`).
    ncols : int, default=None
        Panels per row; by default at most four, rows as full as can be.
    panel_size : float, default=3.0
        Width and height of one panel, in inches.
    title : str, default=None
        The figure's title.
    figure : matplotlib Figure, default=None
        An empty figure to draw on (sized here); a new pyplot figure when None.

    Returns
    -------
    axes : numpy array of matplotlib Axes
        The panels in the order of ``y_prob`` (flat; grid cells left over are
        removed). Each panel's ``lines`` hold the diagonal, the reference's binned
        curve (if any), the panel's binned curve, then (``smooth``) the reference's
        and the panel's smoothed curves; its title is the panel's label and its legend
        gives each curve's ECE (and smooth ECE). The figure is ``axes[0].figure``.

    Notes
    -----
    Marker areas are ``36 * n_bins * share`` points^2 as in
    :func:`reliability_diagram`, the same scale in every panel, so an area compares
    across panels; the axes are shared.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from bernonnx.plotting import reliability_grid
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(2000)
    >>> y = rng.random(2000) < p
    >>> axes = reliability_grid(
    ...     y, {"raw": p**2, "calibrated": p, "squared": p**4}, reference="raw"
    ... )
    >>> [ax.get_title() for ax in axes]
    ['calibrated', 'squared']
    >>> [line.get_label() for line in axes[0].lines[1:]]
    ['raw: ECE 0.1706', 'calibrated: ECE 0.0296']
    >>> plt.close(axes[0].figure)
    """
    _check_min_weight(min_weight)
    if not isinstance(y_prob, dict):
        raise ValueError(
            f"y_prob must be a dict {{label: probabilities}}, got {type(y_prob).__name__}; "
            "draw one curve with reliability_diagram"
        )
    curves = _curves(y_prob)
    if reference is not None and str(reference) not in curves:
        raise ValueError(f"reference {reference!r} is not a key of y_prob ({list(curves)})")
    reference = None if reference is None else str(reference)
    panels = [label for label in curves if label != reference]
    if not panels:
        raise ValueError("y_prob holds only the reference: nothing to draw a panel for")
    rows, cols = _shape(len(panels), ncols)
    tables, eces, smooths, top = _prepare(
        y_true,
        curves,
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

    size = (panel_size * cols, 0.9 * panel_size * rows + 1.2)
    if figure is None:
        figure = _pyplot().figure(figsize=size, layout="constrained")
    else:
        figure.set_size_inches(*size)
        figure.set_layout_engine("constrained")
    grid = figure.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    for ax in grid[len(panels) :]:
        ax.remove()
    axes = grid[: len(panels)]
    # the default cycle without its grey (C7), the reference's colour
    colors = [f"C{i}" for i in range(10) if i != 7]
    min_density = min_weight * n_bins

    def legend_text(label: str) -> str:
        text = f"{label}: ECE {eces[label]:.4f}"
        if label in smooths:
            text += f", smECE {smooths[label]['smooth_ece']:.4f}"
        return text

    for i, (ax, label) in enumerate(zip(axes, panels, strict=True)):
        color = colors[i % len(colors)]
        ax.plot([0, 1], [0, 1], linestyle="--", color="0.7", linewidth=0.8, label="_nolegend_")
        if reference is not None:
            _draw_bins(
                ax,
                tables[reference],
                n_bins=n_bins,
                min_weight=min_weight,
                sizes=True,
                faint=False,
                label=legend_text(reference),
                color=_REFERENCE_COLOR,
                alpha=0.7,
                zorder=2,
            )
        _draw_bins(
            ax,
            tables[label],
            n_bins=n_bins,
            min_weight=min_weight,
            sizes=True,
            faint=bool(smooths),
            label=legend_text(label),
            color=color,
        )
        if reference is not None and reference in smooths:
            _draw_smooth(
                ax,
                smooths[reference],
                _REFERENCE_COLOR,
                min_density=min_density,
                label="_nolegend_",
                band=False,
                linewidth=1.2,
                alpha=0.8,
            )
        if label in smooths:
            _draw_smooth(
                ax,
                smooths[label],
                color,
                min_density=min_density,
                label="_nolegend_",
                band=True,
            )
        ax.set_title(label, fontsize="medium")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_box_aspect(1)
        ax.legend(loc="upper left", fontsize="x-small", frameon=False, handlelength=1.2)
        if ax.get_subplotspec().is_last_row() or i + cols >= len(panels):
            ax.set_xlabel("confidence" if top else "mean predicted probability")
            ax.tick_params(labelbottom=True)
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("accuracy" if top else "fraction of positives")
    notes = [
        f"marker area = bin weight ({_MARKER_AREA:.0f} pt\u00b2: 1/{n_bins} of the rows)",
        f"bins under {min_weight:.0%} of the weight: marker only",
    ]
    if reference is not None:
        notes.insert(0, f"grey: {reference}")
    if smooths:
        notes.append(
            "solid: smoothed" + (f", {confidence:.0%} band" if confidence is not None else "")
        )
    # about 16 characters of small text per inch
    key = textwrap.fill("; ".join(notes), width=int(16 * size[0]))
    figure.suptitle((f"{title}\n" if title else "") + key, fontsize="small")
    return axes
