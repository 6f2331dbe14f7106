"""The calibrators of the head-to-head study (``peers.py``), each fed as its authors feed it.

CalArena's calibrators (the ``probmetrics`` package, 1.3.0) read the base model's
``predict_proba`` as an ``(n, n_classes)`` array; LinearSVC has none, and its decision
value is read as log-odds (the logistic of it, two columns). scikit-learn's calibrators
are ``CalibratedClassifierCV(FrozenEstimator(model), method=...)`` (computed with the
base scores, see ``quality_study.base_case``), and ours read the scores
``CalibratedClassifier`` reads.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from bernonnx import (
    BernsteinCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)


def _pm(name):
    def make():
        from probmetrics.calibrators import (
            MatrixScalingCalibrator,
            MLISplineCalibrator,
            VectorScalingCalibrator,
            get_calibrator,
        )

        if name == "mli-spline":
            return MLISplineCalibrator()
        if name == "matrix-scaling":
            return MatrixScalingCalibrator()
        if name == "vector-scaling":
            return VectorScalingCalibrator()
        quiet = {"sms_print_init_info": False, "svs_print_init_info": False}
        return get_calibrator(name, **quiet)

    return make


#: display name -> probmetrics name (``get_calibrator`` or the class)
BINARY_PEERS = {
    "Beta": "beta",
    "quadratic scaling": "quadratic-scaling",
    "affine scaling": "affine-scaling",
    "Venn-Abers (IVAP)": "ivap",
    "MLI spline": "mli-spline",
    "SMS": "sms",
    "matrix scaling": "matrix-scaling",
}
MULTICLASS_PEERS = {
    "SMS": "sms",
    "SVS": "svs",
    "matrix scaling": "matrix-scaling",
    "vector scaling": "vector-scaling",
    "temperature scaling": "temp-scaling",
}


def two_columns(p):
    """``(n,)`` positive-class probabilities as probmetrics' ``(n, 2)`` input."""
    return np.stack([1.0 - p, p], axis=1)


def timed_fit_predict(make, X_cal, y_cal, X_test):
    """Fit ``make()`` on the calibration rows; (test probabilities in float64, seconds)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = make().fit(X_cal, y_cal)
        seconds = time.perf_counter() - start
        return np.asarray(cal.predict_proba(X_test), dtype=np.float64), seconds


def binary_peers(case):
    """probmetrics' binary leaders on the model's ``predict_proba``: name -> (p, s)."""
    P_cal, P_test = two_columns(case["pp_cal"]), two_columns(case["pp_test"])
    out = {}
    for name, pm_name in BINARY_PEERS.items():
        P, seconds = timed_fit_predict(_pm(pm_name), P_cal, case["y_cal"], P_test)
        out[name] = (P[:, 1], seconds)
    return out


def binary_ours(case):
    """bernonnx's calibrators on the scores ``CalibratedClassifier`` reads."""
    y = case["y_cal"]
    runs = {
        # CalibratedClassifier's default: BernsteinCalibrator() on the non-saturating
        # log-odds where the model gives log-probabilities, else on its score
        "default": (BernsteinCalibrator, "lp"),
        "Platt (ours)": (PlattCalibrator, "s"),
        "isotonic (ours)": (IsotonicCalibrator, "s"),
        "temperature (ours)": (TemperatureCalibrator, "s"),
    }
    out = {}
    for name, (cls, key) in runs.items():
        P, seconds = timed_fit_predict(cls, case[f"{key}_cal"], y, case[f"{key}_test"])
        out[name] = (P[:, 1], seconds)
    return out


def multiclass_peers(case):
    """probmetrics' multiclass leaders on the model's ``predict_proba``."""
    out = {}
    for name, pm_name in MULTICLASS_PEERS.items():
        out[name] = timed_fit_predict(_pm(pm_name), case["pp_cal"], case["y_cal"], case["pp_test"])
    return out
