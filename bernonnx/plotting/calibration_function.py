"""A fitted 1-D calibrator's map, P(positive class) against the raw score.

What differs between calibrator families (default range, steps, control points) comes
from their plot hooks (``bernonnx.plotting._hooks``), found through the registry.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from ._common import _new_axes, _padded
from ._hooks import CurveHooks, SurfaceHooks, family_names, hooks_for

__all__ = ["plot_calibration_function"]

#: Equal-mass bins of the empirical positive rates of plot_calibration_function.
_EMPIRICAL_BINS = 20


def _check_one_d(calibrator) -> CurveHooks:
    """The plot hooks of a fitted 1-D calibrator, or the ValueError saying what to pass."""
    hooks = hooks_for(calibrator)
    if isinstance(hooks, SurfaceHooks):
        raise ValueError(
            f"calibrator is a {type(calibrator).__name__}, which maps several score "
            "columns: plot_calibration_function draws 1-D calibrators; use plot_contour"
        )
    if not isinstance(hooks, CurveHooks):
        hint = ""
        if hasattr(calibrator, "calibrated_classifiers_"):
            hint = " (for a CalibratedClassifier pass calibrated_classifiers_[i].calibrators[0])"
        raise ValueError(
            "calibrator must be a fitted 1-D bernonnx calibrator "
            f"({', '.join(family_names(CurveHooks))}), got {type(calibrator).__name__}" + hint
        )
    check_is_fitted(calibrator)
    return hooks


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
    hooks = _check_one_d(calibrator)
    if (
        not isinstance(n_points, numbers.Integral)
        or isinstance(n_points, bool | np.bool_)
        or n_points < 2
    ):
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    s, positive = _check_scores_1d(scores, y, calibrator)
    if s is None:
        lo, hi = hooks.default_range(calibrator)
    else:
        lo, hi = _padded(float(s.min()), float(s.max()))
    grid = np.union1d(np.linspace(lo, hi, int(n_points)), hooks.jumps(calibrator, lo, hi))
    p = calibrator.predict_proba(grid)[:, 1]

    ax = _new_axes(ax, (6.0, 4.5))
    name = type(calibrator).__name__
    ax.plot(grid, p, linewidth=2, color="C0", label=name, zorder=3)
    if show_control_points:
        hooks.draw_control_points(ax, calibrator, lo, hi)
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
