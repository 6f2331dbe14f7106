"""Figures of calibration: reliability diagrams, fitted calibration maps, 2-D contours.

matplotlib is an optional dependency (``pip install 'bernonnx[plot]'``); it is imported
when a function is called, never at import time, and no function selects a backend,
calls ``plt.show()`` or changes global settings. Every function draws on ``ax`` when it is
given and on a new figure otherwise, and returns the main Axes:

- :func:`reliability_diagram`: binned positive rate against mean prediction, for one or
  several probability vectors, with the bins of :func:`bernonnx.metrics.reliability_table`
  (so the picture matches the metrics), marker areas proportional to the bin weights and a
  histogram of those weights on an Axes beneath;
- :func:`reliability_grid`: the same bins as small multiples, one panel per calibrator
  with a reference curve (the raw model, say) in grey in every panel, for comparing more
  than two or three calibrators;
- :func:`plot_calibration_function`: a fitted 1-D calibrator's probability against the raw
  score, with its Bernstein coefficients (or isotonic thresholds) as control points;
- :func:`plot_contour`: a fitted :class:`~bernonnx.MultivariateBernsteinCalibrator` over
  two score columns.

One module per figure (``reliability``, ``reliability_grid``, ``calibration_function``,
``contour``). What
differs between calibrator families (default range, steps, control points, column
medians) is in their plot hooks, ``bernonnx.plotting._hooks``, which each family's entry
of the registry (``bernonnx._registry``) names: adding a calibrator adds hooks there, not
a branch here.
"""

from .calibration_function import plot_calibration_function
from .contour import plot_contour
from .reliability import reliability_diagram
from .reliability_grid import reliability_grid

__all__ = ["plot_calibration_function", "plot_contour", "reliability_diagram", "reliability_grid"]
