"""Figures of calibration: reliability diagrams, fitted calibration maps, 2-D contours.

matplotlib is an optional dependency (``pip install 'bernonnx[plot]'``); it is imported
when a function is called, never at import time, and no function selects a backend,
calls ``plt.show()`` or changes global settings. Every function draws on ``ax`` when it is
given and on a new figure otherwise, and returns the main Axes:

- :func:`reliability_diagram`: binned positive rate against mean prediction, for one or
  several probability vectors, with the bins of :func:`bernonnx.metrics.reliability_table`
  (so the picture matches the metrics), marker areas proportional to the bin weights and a
  histogram of those weights on an Axes beneath;
- :func:`plot_calibration_function`: a fitted 1-D calibrator's probability against the raw
  score, with its Bernstein coefficients (or isotonic thresholds) as control points;
- :func:`plot_contour`: a fitted :class:`~bernonnx.MultivariateBernsteinCalibrator` over
  two score columns.
"""

from __future__ import annotations

import importlib
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, logit
from sklearn.utils.validation import check_is_fitted

from .bernstein import BernsteinCalibrator
from .histogram import HistogramCalibrator, PlattHistogramCalibrator
from .isotonic import IsotonicCalibrator
from .metrics import expected_calibration_error, reliability_table
from .multivariate import MultivariateBernsteinCalibrator
from .platt import PlattCalibrator

__all__ = ["plot_calibration_function", "plot_contour", "reliability_diagram"]

_MISSING_MATPLOTLIB = "bernonnx.plotting needs matplotlib: pip install 'bernonnx[plot]'"
#: Marker area (points^2) of a bin holding 1 / n_bins of the weight: areas are
#: ``_MARKER_AREA * n_bins * weight share``, so equal-mass bins all get this area and the
#: scale is the same for every curve of a figure.
_MARKER_AREA = 36.0
#: A logistic transform never reaches 0 or 1; its default plotting range is where
#: ``u`` runs over [_U_EDGE, 1 - _U_EDGE], which is 2.4 times as far from the median as
#: the 10th and 90th percentiles.
_U_EDGE = 0.005
_ONE_D = (
    BernsteinCalibrator,
    PlattCalibrator,
    IsotonicCalibrator,
    HistogramCalibrator,
    PlattHistogramCalibrator,
)
#: Most scatter points plot_contour draws; more rows are subsampled deterministically.
_MAX_SCATTER = 2000
#: Equal-mass bins of the empirical positive rates of plot_calibration_function.
_EMPIRICAL_BINS = 20


def _pyplot():
    """matplotlib.pyplot, or the ImportError that says how to install it."""
    try:
        importlib.import_module("matplotlib")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise ImportError(_MISSING_MATPLOTLIB) from exc


def _new_axes(ax, figsize):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


# ------------------------------------------------------------------ reliability diagram


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
):
    """Reliability diagram: positive rate against mean prediction, bin by bin.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or dict of str to array-like
        Probabilities of the positive class; a dict ``{label: probabilities}`` draws
        several calibrators (same ``y_true``) on one figure, in the dict's order.
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
        weight (``36 * n_bins * share`` points^2, so an equal-mass bin gets 36); None:
        equal markers.
    show_histogram : bool, default=True
        Draw each curve's weight share per bin as bars on an Axes beneath the diagram
        (sharing its x axis; it takes 30% of ``ax``'s height). With several curves,
        each bin is split into side-by-side bars, one per curve, in the curves' order.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    title : str, default=None
        Axes title.

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
    curve; ``ax.collections`` one scatter per curve.

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
    tables, eces = {}, {}
    for label, p in curves.items():
        kwargs = dict(n_bins=n_bins, strategy=strategy, sample_weight=sample_weight)
        tables[label] = reliability_table(y_true, p, pos_label=pos_label, **kwargs)
        eces[label] = expected_calibration_error(y_true, p, pos_label=pos_label, **kwargs)

    ax = _new_axes(ax, (5.5, 6.5) if show_histogram else (5.5, 5.0))
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="perfectly calibrated")
    colors = {}
    for label, table in tables.items():
        share = table["weight"] / table["weight"].sum()
        sizes = _MARKER_AREA * n_bins * share if show_weights == "size" else _MARKER_AREA
        (line,) = ax.plot(
            table["mean_predicted"],
            table["fraction_positive"],
            linewidth=1.5,
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
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction of positives")
    ax.legend(loc="upper left", fontsize="small")
    if title is not None:
        ax.set_title(title)

    ax.bernonnx_histogram = None
    if not show_histogram:
        ax.set_xlabel("mean predicted probability")
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
    hist.set_xlabel("mean predicted probability")
    hist.set_ylabel("weight share")
    hist.set_ylim(bottom=0)
    ax.bernonnx_histogram = hist
    return ax


# --------------------------------------------------------------- transforms and ranges


def _transform_params(cal, column=None) -> dict:
    """The fitted transform parameters of a Bernstein calibrator (one column of it)."""
    params = {}
    for key in ("shift", "scale", "scale_below", "knots", "levels"):
        if hasattr(cal, key + "_"):
            value = getattr(cal, key + "_")
            params[key] = value if column is None else value[column]
    return params


def _inverse_transform(kind: str, params: dict, u: np.ndarray) -> np.ndarray:
    """Scores whose transform is ``u`` (``u`` in [0, 1]); the inverse of ``apply_transform``.

    Closed forms: the logistic transform is a sigmoid of a two-slope linear map
    (``u = 0`` and ``1`` map to -inf and +inf), min-max is affine and the quantile map is
    piecewise linear through ``(knots, levels)`` with strictly increasing levels. A
    constant transform (zero slope or one knot) maps every ``u`` to its one score.
    """
    u = np.asarray(u, dtype=np.float64)
    if kind == "quantile":
        knots, levels = params["knots"], params["levels"]
        if knots.shape[0] == 1:
            return np.full_like(u, knots[0])
        return np.interp(u, levels, knots)
    shift, scale = float(params["shift"]), float(params["scale"])
    if kind == "minmax":
        return shift + u / scale if scale > 0 else np.full_like(u, shift)
    below = float(params["scale_below"])
    if not (scale > 0 and below > 0):
        return np.full_like(u, shift)
    with np.errstate(divide="ignore"):
        z = logit(u)
    return shift + np.where(z >= 0, z / scale, z / below)


def _transform_range(kind: str, params: dict) -> tuple[float, float]:
    """Default plotting range of a transform: the fitted range (logistic: see _U_EDGE)."""
    edge = _U_EDGE if kind == "logistic" else 0.0
    lo, hi = _inverse_transform(kind, params, np.array([edge, 1.0 - edge]))
    return float(lo), float(hi)


def _transform_median(kind: str, params: dict) -> float:
    """The score the transform maps to 1/2: the fitted weighted median (logistic, and
    quantile up to a knot), the mid-range for min-max."""
    return float(_inverse_transform(kind, params, np.array([0.5]))[0])


def _platt_inverse(cal, q: np.ndarray) -> np.ndarray:
    """Scores where the Platt map of ``cal`` equals ``q`` (in (0, 1)); needs slope_ > 0."""
    t = (logit(q) - cal.intercept_) / cal.slope_
    return expit(t) if cal.log_odds else t


def _padded(lo: float, hi: float) -> tuple[float, float]:
    """A non-empty range: a degenerate one is widened to +-1 around its point."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"the calibrator's fitted score range [{lo}, {hi}] is not finite")
    if hi > lo:
        return lo, hi
    return lo - 1.0, hi + 1.0


def _default_range(cal) -> tuple[float, float]:
    """The calibrator's fitted score range, see plot_calibration_function's Notes."""
    if isinstance(cal, BernsteinCalibrator):
        return _padded(*_transform_range(cal.score_transform, _transform_params(cal)))
    if isinstance(cal, IsotonicCalibrator):
        return _padded(float(cal.x_thresholds_[0]), float(cal.x_thresholds_[-1]))
    if isinstance(cal, HistogramCalibrator):
        edges = cal.bin_edges_
        if edges.shape[0] == 0:
            return 0.0, 1.0
        pad = (edges[-1] - edges[0]) / (edges.shape[0] - 1) if edges.shape[0] > 1 else 1.0
        return float(edges[0] - pad), float(edges[-1] + pad)
    # Platt and Platt-histogram
    if cal.log_odds:
        return 0.0, 1.0
    if not cal.slope_ > 0:
        return -1.0, 1.0
    q = np.array([_U_EDGE, 1.0 - _U_EDGE])
    if isinstance(cal, PlattHistogramCalibrator) and cal.bin_edges_.shape[0]:
        q = np.r_[q, expit(cal.bin_edges_)]  # the edges are on the Platt argument
    s = _platt_inverse(cal, np.clip(q, 1e-12, 1 - 1e-12))
    return _padded(float(s.min()), float(s.max()))


def _jumps(cal, lo: float, hi: float) -> np.ndarray:
    """Scores in [lo, hi] where the calibrator's map jumps or kinks, for an exact drawing.

    A step map is evaluated at each edge and just above it (bins are right-closed), so
    the curve rises vertically; isotonic kinks sit at the thresholds.
    """
    if isinstance(cal, IsotonicCalibrator):
        points = cal.x_thresholds_
    elif isinstance(cal, HistogramCalibrator):
        points = cal.bin_edges_
    elif isinstance(cal, PlattHistogramCalibrator) and cal.slope_ > 0:
        points = _platt_inverse(cal, expit(cal.bin_edges_))
    else:
        return np.empty(0)
    points = points[(points >= lo) & (points <= hi)]
    if isinstance(cal, IsotonicCalibrator):
        return points
    return np.r_[points, np.nextafter(points, np.inf)]


def _control_points(cal, lo: float, hi: float):
    """Bernstein coefficients as ``(score, height, inside)``.

    Control point ``k`` sits at ``u = k / d`` mapped back to scores, height ``coef_[k]``
    (through the sigmoid for ``loss="log"``); ``inside`` is False where that score lies
    outside ``[lo, hi]`` (always for ``u = 0`` and ``1`` of the logistic transform, which
    map to -inf and +inf): those points are drawn at the nearest end of the range.
    """
    d = cal.degree_
    score = _inverse_transform(
        cal.score_transform, _transform_params(cal), np.arange(d + 1) / max(d, 1)
    )
    height = expit(cal.coef_) if cal.loss == "log" else np.clip(cal.coef_, 0.0, 1.0)
    inside = (score >= lo) & (score <= hi)
    return np.clip(score, lo, hi), height, inside


def _check_one_d(calibrator):
    if isinstance(calibrator, MultivariateBernsteinCalibrator):
        raise ValueError(
            "calibrator is a MultivariateBernsteinCalibrator, which maps several score "
            "columns: plot_calibration_function draws 1-D calibrators; use plot_contour"
        )
    if not isinstance(calibrator, _ONE_D):
        hint = ""
        if hasattr(calibrator, "calibrated_classifiers_"):
            hint = " (for a CalibratedClassifier pass calibrated_classifiers_[i].calibrators[0])"
        raise ValueError(
            "calibrator must be a fitted 1-D bernonnx calibrator "
            f"({', '.join(c.__name__ for c in _ONE_D)}), got {type(calibrator).__name__}" + hint
        )
    check_is_fitted(calibrator)


def _check_scores_1d(scores, y, calibrator):
    """Finite 1-D float64 scores and (optional) 0/1 positives of the same length."""
    if scores is None:
        if y is not None:
            raise ValueError("y was given without scores: pass the scores y belongs to")
        return None, None
    s = np.asarray(scores)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    if s.ndim != 1 or s.shape[0] == 0 or s.dtype.kind not in "biuf":
        raise ValueError(
            f"scores must be a non-empty 1-D array of real numbers, got shape {s.shape} and "
            f"dtype {s.dtype}"
        )
    s = s.astype(np.float64)
    if not np.isfinite(s).all():
        raise ValueError("scores contains NaN or inf")
    if y is None:
        return s, None
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or labels.shape[0] != s.shape[0]:
        raise ValueError(
            f"y must be 1-D with one label per score: scores has {s.shape[0]} entries, "
            f"y has shape {labels.shape}"
        )
    unknown = set(np.unique(labels).tolist()) - set(calibrator.classes_.tolist())
    if unknown:
        raise ValueError(
            f"y holds labels {sorted(map(str, unknown))} that are not among the calibrator's "
            f"classes_ {calibrator.classes_.tolist()}"
        )
    return s, (labels == calibrator.classes_[1]).astype(np.float64)


def _empirical_rates(s: np.ndarray, positive: np.ndarray):
    """Mean score and positive rate of up to ``_EMPIRICAL_BINS`` equal-count bins."""
    order = np.argsort(s, kind="stable")
    groups = np.array_split(order, min(_EMPIRICAL_BINS, s.shape[0]))
    return (
        np.array([s[g].mean() for g in groups]),
        np.array([positive[g].mean() for g in groups]),
    )


def plot_calibration_function(
    calibrator,
    *,
    scores: ArrayLike | None = None,
    y: ArrayLike | None = None,
    n_points: int = 512,
    ax=None,
    show_control_points: bool = True,
    title: str | None = None,
):
    """Draw a fitted 1-D calibrator: P(positive class) against the raw score.

    Parameters
    ----------
    calibrator : fitted BernsteinCalibrator, PlattCalibrator, IsotonicCalibrator, \
HistogramCalibrator or PlattHistogramCalibrator
        The calibration map to draw.
    scores : array-like of shape (n_samples,), default=None
        Raw scores: their range is the plotted range. None: the calibrator's fitted
        range (see Notes).
    y : array-like of shape (n_samples,), default=None
        Labels of ``scores`` (values of ``calibrator.classes_``): the positive rate of
        20 equal-count score bins is drawn as light points at the bins' mean scores.
    n_points : int, default=512
        Evaluation points of the curve (step and kink positions are added to them, so
        steps are drawn vertical).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    show_control_points : bool, default=True
        BernsteinCalibrator: its ``degree_ + 1`` coefficients as control points;
        IsotonicCalibrator: its thresholds ``(x_thresholds_, y_thresholds_)``. Other
        calibrators have none.
    title : str, default=None
        Axes title.

    Returns
    -------
    ax : matplotlib Axes
        ``ax.lines[0]`` is the calibration curve; for a BernsteinCalibrator with
        control points, ``ax.lines[1]`` is the dashed control polygon.

    Raises
    ------
    ValueError
        ``calibrator`` is not a 1-D bernonnx calibrator (a
        MultivariateBernsteinCalibrator belongs to :func:`plot_contour`), bad
        ``scores``/``y`` or ``n_points``.
    sklearn.exceptions.NotFittedError
        ``calibrator`` is not fitted.

    Notes
    -----
    The fitted range when ``scores`` is None: min-max and quantile transforms, the
    fitted score range; the logistic transform, where ``u`` runs from 0.005 to 0.995;
    isotonic, the outer thresholds; histogram binning, the inner edges widened by one
    mean bin width; Platt, where the probability runs from 0.005 to 0.995 (``[0, 1]``
    with ``log_odds=True``).

    Control point ``k`` of a Bernstein polynomial of degree ``d`` sits at ``u = k / d``
    mapped back to the score axis by the inverse transform, at height ``coef_[k]``
    (``sigmoid(coef_[k])`` for ``loss="log"``), the seed's figure; the curve then lies
    within their convex hull in ``(u, p)``. Points beyond the plotted range (``u = 0``
    and ``1`` of the logistic transform are at -inf and +inf) are drawn hollow at the
    range's ends. The points' scores and heights are non-decreasing.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from bernonnx import BernsteinCalibrator
    >>> from bernonnx.plotting import plot_calibration_function
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> y = rng.random(2000) < 1 / (1 + np.exp(-3 * s))
    >>> cal = BernsteinCalibrator(degree=6).fit(s, y)
    >>> ax = plot_calibration_function(cal, scores=s, y=y)
    >>> ax.lines[1].get_xydata().shape  # the control polygon: degree + 1 points
    (7, 2)
    >>> plt.close(ax.figure)
    """
    _check_one_d(calibrator)
    if (
        not isinstance(n_points, numbers.Integral)
        or isinstance(n_points, bool | np.bool_)
        or n_points < 2
    ):
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    s, positive = _check_scores_1d(scores, y, calibrator)
    lo, hi = _default_range(calibrator) if s is None else _padded(float(s.min()), float(s.max()))
    grid = np.union1d(np.linspace(lo, hi, int(n_points)), _jumps(calibrator, lo, hi))
    p = calibrator.predict_proba(grid)[:, 1]

    ax = _new_axes(ax, (6.0, 4.5))
    name = type(calibrator).__name__
    ax.plot(grid, p, linewidth=2, color="C0", label=name, zorder=3)
    if show_control_points and isinstance(calibrator, BernsteinCalibrator):
        cx, cy, inside = _control_points(calibrator, lo, hi)
        ax.plot(cx, cy, linestyle="--", linewidth=1, color="C3", alpha=0.7, zorder=2)
        ax.scatter(
            cx[inside],
            cy[inside],
            color="C3",
            s=30,
            zorder=4,
            clip_on=False,
            label=f"control points (degree {calibrator.degree_})",
        )
        if not inside.all():
            ax.scatter(
                cx[~inside],
                cy[~inside],
                facecolors="white",
                edgecolors="C3",
                s=30,
                zorder=4,
                clip_on=False,
                label="control points beyond the range",
            )
    elif show_control_points and isinstance(calibrator, IsotonicCalibrator):
        x, t = calibrator.x_thresholds_, calibrator.y_thresholds_
        keep = (x >= lo) & (x <= hi)
        ax.scatter(x[keep], t[keep], color="C3", s=12, zorder=4, clip_on=False, label="thresholds")
    if positive is not None:
        mx, rate = _empirical_rates(s, positive)
        ax.scatter(
            mx,
            rate,
            color="0.55",
            alpha=0.6,
            s=18,
            zorder=1,
            label=f"positive rate, {mx.shape[0]} equal-count bins",
        )
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("score")
    ax.set_ylabel(f"P(y = {calibrator.classes_[1]})")
    ax.legend(loc="upper left", fontsize="small")
    if title is not None:
        ax.set_title(title)
    return ax


# ------------------------------------------------------------------------- contour


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


def _check_fixed(fixed, cal, n_cols: int) -> np.ndarray:
    """Values of all columns (those of the plotted axes are overwritten by the grid)."""
    kind = cal.score_transform
    values = np.array([_transform_median(kind, _transform_params(cal, m)) for m in range(n_cols)])
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
    if not isinstance(calibrator, MultivariateBernsteinCalibrator):
        raise ValueError(
            "calibrator must be a fitted MultivariateBernsteinCalibrator, got "
            f"{type(calibrator).__name__}; draw 1-D calibrators with plot_calibration_function"
        )
    check_is_fitted(calibrator)
    n_cols = int(calibrator.n_features_in_)
    i, j = _check_axes(axes, n_cols)
    if not isinstance(grid, numbers.Integral) or isinstance(grid, bool | np.bool_) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}")
    s = _check_scores_2d(scores, n_cols)
    values = _check_fixed(fixed, calibrator, n_cols)

    ranges = []
    for m in (i, j):
        if s is None:
            params = _transform_params(calibrator, m)
            ranges.append(_padded(*_transform_range(calibrator.score_transform, params)))
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
