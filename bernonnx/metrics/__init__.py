"""Calibration metrics for binary probability predictions, and for multiclass ones.

Every function takes the true labels, the predicted probabilities of the positive class and
optional sample weights, where a weight ``k`` means exactly the same as repeating the row ``k``
times (a weight of zero removes the row). Binned metrics share one reliability table:

* ``strategy="uniform"``: ``n_bins`` equal-width bins on ``[0, 1]`` with the edges and the
  edge convention of :func:`sklearn.calibration.calibration_curve` (right-closed bins, so a
  prediction equal to an inner edge belongs to the lower bin);
* ``strategy="quantile"``: bins of (nearly) equal total weight, edges at weighted quantiles.

All arithmetic is done in float64 whatever the input dtype.

Layout: :mod:`._inputs` checks the arguments every metric shares; :mod:`.binned` the
reliability table and the ECE family (with Kumar et al.'s debiased squared error);
:mod:`.smooth` the smooth ECE of Błasiok and Nakkiran and its curve; :mod:`.scores` the
Brier score, the log loss, Murphy's decomposition and the calibration/refinement split of
the log loss; :mod:`.bootstrap` the resampling behind the intervals; :mod:`.report` all of
them at once, with intervals on request; :mod:`.grid` the grid calibration error over
several scores; :mod:`.multiclass` the metrics of (n, k) class probabilities (top-label
and classwise ECE and smooth ECE, multiclass Brier score and log loss), which
:func:`calibration_report` also accepts.
"""

from .binned import (
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
    rms_calibration_error,
)
from .grid import grid_calibration_error
from .multiclass import (
    classwise_calibration_error,
    classwise_smooth_calibration_error,
    multiclass_brier_score,
    multiclass_log_loss,
    top_label_calibration_error,
    top_label_smooth_calibration_error,
)
from .report import calibration_report
from .scores import brier_decomposition, brier_score, log_loss, log_loss_decomposition
from .smooth import smooth_calibration_curve, smooth_calibration_error

__all__ = [
    "brier_decomposition",
    "brier_score",
    "calibration_report",
    "classwise_calibration_error",
    "classwise_smooth_calibration_error",
    "expected_calibration_error",
    "grid_calibration_error",
    "log_loss",
    "log_loss_decomposition",
    "maximum_calibration_error",
    "multiclass_brier_score",
    "multiclass_log_loss",
    "reliability_table",
    "rms_calibration_error",
    "smooth_calibration_curve",
    "smooth_calibration_error",
    "top_label_calibration_error",
    "top_label_smooth_calibration_error",
]
