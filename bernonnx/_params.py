"""What the Bernstein estimators share: parameter constraints, limits, fitted-state keys.

The estimator layer's constants (the core below never reads them):
``BernsteinCalibrator`` and ``MultivariateBernsteinCalibrator`` validate the same
parameters, clear the same optional fitted attributes on a refit, and name their
transform parameters the same way.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ._core.transforms import TRANSFORMS
from ._validation import Interval, IntInterval, StrOptions

#: Highest degree accepted. The float32 ONNX graph keeps C(d, k) finite up
#: to d = 131; 100 leaves room and is far above any degree CV picks.
MAX_DEGREE = 100
#: Most folds of a degree search. Each fold fits every candidate degree, so
#: the cost grows with the folds; ``n_folds=10**6`` used to become
#: leave-one-out (39 s on 500 rows) instead of an error.
MAX_FOLDS = 20
#: Candidate degrees of the 1-D ``degree="auto"``.
AUTO_DEGREES = (2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)
#: Fitted parameters of the score transforms (``<key>_`` attributes).
TRANSFORM_KEYS = ("shift", "scale", "scale_below", "knots", "levels")
#: Fitted attributes that only some fits set (degree search, transform parameters):
#: a refit deletes those of the previous fit, so none is stale.
FITTED_OPTIONAL = ("cv_degrees_", "cv_log_loss_") + tuple(k + "_" for k in TRANSFORM_KEYS)

#: Parameters shared by the Bernstein calibrators (their ``_parameter_constraints``).
PARAMETER_CONSTRAINTS: dict = {
    "degree": [
        IntInterval(1, MAX_DEGREE, closed="both"),
        StrOptions({"auto"}),
        list,
        tuple,
        np.ndarray,
    ],
    "loss": [StrOptions({"log", "squared"})],
    "score_transform": [StrOptions(set(TRANSFORMS))],
    "n_knots": [IntInterval(2, None, closed="left")],
    "logit_bound": [Interval(Real, 0, None, closed="neither")],
    "n_folds": [IntInterval(2, MAX_FOLDS, closed="both")],
    "min_slope": [Interval(Real, 0, 0.5, closed="left")],
}


def forget_optional_attributes(estimator) -> None:
    """Delete the :data:`FITTED_OPTIONAL` attributes an earlier fit left."""
    for name in FITTED_OPTIONAL:
        if hasattr(estimator, name):
            delattr(estimator, name)
