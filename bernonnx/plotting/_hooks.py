"""Plot hooks: what the figures need to know about each calibrator family.

:func:`~bernonnx.plotting.plot_calibration_function` and
:func:`~bernonnx.plotting.plot_contour` draw any calibrator through the hooks its
registry entry names (``Entry.plot`` in ``bernonnx._registry``, e.g.
``"bernonnx.plotting._hooks:BERNSTEIN"``), never by testing its class. A 1-D family
gives a :class:`CurveHooks`, a family over several score columns a
:class:`SurfaceHooks`. The hooks read fitted attributes only, so this module imports
no estimator.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from bernonnx._core.scale import rescaled
from bernonnx._registry import CALIBRATORS, resolve

from ._common import (
    _U_EDGE,
    _inverse_transform,
    _padded,
    _transform_median,
    _transform_params,
    _transform_range,
)

__all__ = ["CurveHooks", "SurfaceHooks", "family_names", "hooks_for"]


class CurveHooks:
    """How :func:`~bernonnx.plotting.plot_calibration_function` draws a 1-D family.

    Subclasses give :meth:`default_range`; the other hooks default to a smooth map
    without control points.
    """

    def default_range(self, cal) -> tuple[float, float]:
        """The fitted score range drawn when no scores are given."""
        raise NotImplementedError

    def jumps(self, cal, lo: float, hi: float) -> np.ndarray:
        """Scores in [lo, hi] where the map jumps or kinks, added to the curve's grid."""
        return np.empty(0)

    def draw_control_points(self, ax, cal, lo: float, hi: float) -> None:
        """Draw the fitted parameters that shape the curve (none by default)."""


class SurfaceHooks:
    """How :func:`~bernonnx.plotting.plot_contour` reads a multi-column family."""

    def column_range(self, cal, column: int) -> tuple[float, float]:
        """The fitted score range of one column, drawn when no scores are given."""
        raise NotImplementedError

    def column_median(self, cal, column: int) -> float:
        """The value a column not on the plotted axes is held at by default."""
        raise NotImplementedError


class _Bernstein(CurveHooks):
    def default_range(self, cal):
        return _padded(*_transform_range(cal.score_transform, _transform_params(cal)))

    def control_points(self, cal, lo: float, hi: float):
        """Bernstein coefficients as ``(score, height, inside)``.

        Control point ``k`` sits at ``u = k / d`` mapped back to scores, height
        ``coef_[k]`` (through the sigmoid for ``loss="log"``); ``inside`` is False where
        that score lies outside ``[lo, hi]`` (always for ``u = 0`` and ``1`` of the
        logistic transform, which map to -inf and +inf): those points are drawn at the
        nearest end of the range.
        """
        d = cal.degree_
        score = _inverse_transform(
            cal.score_transform, _transform_params(cal), np.arange(d + 1) / max(d, 1)
        )
        height = expit(cal.coef_) if cal.loss == "log" else np.clip(cal.coef_, 0.0, 1.0)
        inside = (score >= lo) & (score <= hi)
        return np.clip(score, lo, hi), height, inside

    def draw_control_points(self, ax, cal, lo, hi):
        cx, cy, inside = self.control_points(cal, lo, hi)
        ax.plot(cx, cy, linestyle="--", linewidth=1, color="C3", alpha=0.7, zorder=2)
        ax.scatter(
            cx[inside],
            cy[inside],
            color="C3",
            s=30,
            zorder=4,
            clip_on=False,
            label=f"control points (degree {cal.degree_})",
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


def _platt_inverse(cal, q: np.ndarray) -> np.ndarray:
    """Scores where the Platt map of ``cal`` equals ``q`` (in (0, 1)); needs slope_ > 0."""
    t = (logit(q) - cal.intercept_) / cal.slope_
    return expit(t) if cal.log_odds else t


class _Platt(CurveHooks):
    def _probabilities(self, cal) -> np.ndarray:
        """Probabilities whose scores span the default range."""
        return np.array([_U_EDGE, 1.0 - _U_EDGE])

    def default_range(self, cal):
        if cal.log_odds:
            return 0.0, 1.0
        if not cal.slope_ > 0:
            return -1.0, 1.0
        q = self._probabilities(cal)
        s = _platt_inverse(cal, np.clip(q, 1e-12, 1 - 1e-12))
        return _padded(float(s.min()), float(s.max()))


def _steps(points: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Each edge in [lo, hi] and the score just above it (bins are right-closed), so a
    step map's curve rises vertically."""
    points = points[(points >= lo) & (points <= hi)]
    return np.r_[points, np.nextafter(points, np.inf)]


class _PlattHistogram(_Platt):
    def _probabilities(self, cal):
        q = super()._probabilities(cal)
        if cal.bin_edges_.shape[0]:
            q = np.r_[q, expit(cal.bin_edges_)]  # the edges are on the Platt argument
        return q

    def jumps(self, cal, lo, hi):
        if not cal.slope_ > 0:
            return np.empty(0)
        return _steps(_platt_inverse(cal, expit(cal.bin_edges_)), lo, hi)


class _Isotonic(CurveHooks):
    def default_range(self, cal):
        return _padded(float(cal.x_thresholds_[0]), float(cal.x_thresholds_[-1]))

    def jumps(self, cal, lo, hi):
        # a piecewise-linear map: its kinks sit at the thresholds
        points = cal.x_thresholds_
        return points[(points >= lo) & (points <= hi)]

    def draw_control_points(self, ax, cal, lo, hi):
        x, t = cal.x_thresholds_, cal.y_thresholds_
        keep = (x >= lo) & (x <= hi)
        ax.scatter(x[keep], t[keep], color="C3", s=12, zorder=4, clip_on=False, label="thresholds")


class _Histogram(CurveHooks):
    def default_range(self, cal):
        edges = cal.bin_edges_
        if edges.shape[0] == 0:
            return 0.0, 1.0
        pad = (edges[-1] - edges[0]) / (edges.shape[0] - 1) if edges.shape[0] > 1 else 1.0
        return float(edges[0] - pad), float(edges[-1] + pad)

    def jumps(self, cal, lo, hi):
        return _steps(cal.bin_edges_, lo, hi)


class _Beta(CurveHooks):
    def default_range(self, cal):
        if cal.input_ == "proba":
            return 0.0, 1.0
        # log-odds input: where the tails, a l + c below and b l + c above, reach
        # probabilities 1e-3 and 1 - 1e-3 (+-10 where a tail is flat)
        edge = float(logit(1.0 - 1e-3))
        lo = (-edge - cal.intercept_) / cal.a_ if cal.a_ > 0 else -10.0
        hi = (edge - cal.intercept_) / cal.b_ if cal.b_ > 0 else 10.0
        return _padded(min(lo, -1.0), max(hi, 1.0))


class _Quadratic(CurveHooks):
    @staticmethod
    def _ends(cal) -> np.ndarray:
        """The fitted range in the raw log-odds (``low_``, ``high_`` are scaled by
        ``2**log2_scale_``)."""
        return rescaled(np.array([cal.low_, cal.high_]), -cal.log2_scale_)

    def default_range(self, cal):
        if cal.input_ == "proba":
            return 0.0, 1.0
        low, high = self._ends(cal)
        return _padded(float(low), float(high))

    def jumps(self, cal, lo, hi):
        # the quadratic meets its tangent tails at the ends of the fitted range
        ends = self._ends(cal)
        if cal.input_ == "proba":
            ends = expit(ends)
        return ends[(ends >= lo) & (ends <= hi)]


class _VennAbers(CurveHooks):
    def default_range(self, cal):
        return _padded(float(cal.scores_[0]), float(cal.scores_[-1]))

    def jumps(self, cal, lo, hi):
        # p0 steps at each calibration score, p1 just above it: both, inside [lo, hi]
        return _steps(cal.scores_[cal.scores_ < hi], lo, hi)


class _MultivariateBernstein(SurfaceHooks):
    def column_range(self, cal, column):
        params = _transform_params(cal, column)
        return _padded(*_transform_range(cal.score_transform, params))

    def column_median(self, cal, column):
        return _transform_median(cal.score_transform, _transform_params(cal, column))


BERNSTEIN = _Bernstein()
PLATT = _Platt()
PLATT_HISTOGRAM = _PlattHistogram()
ISOTONIC = _Isotonic()
HISTOGRAM = _Histogram()
MULTIVARIATE_BERNSTEIN = _MultivariateBernstein()
BETA = _Beta()
QUADRATIC = _Quadratic()
VENN_ABERS = _VennAbers()


def hooks_for(estimator) -> CurveHooks | SurfaceHooks | None:
    """The plot hooks of ``estimator``'s family: those of its class or of the nearest
    registered class it derives from; None if it has none."""
    for klass in type(estimator).__mro__:
        for entry in CALIBRATORS:
            if entry.plot is not None and entry.load() is klass:
                return resolve(entry.plot)
    return None


def family_names(kind: type) -> list[str]:
    """Names of the registered classes whose plot hooks are a ``kind``, in registry order."""
    return [
        e.name for e in CALIBRATORS if e.plot is not None and isinstance(resolve(e.plot), kind)
    ]
