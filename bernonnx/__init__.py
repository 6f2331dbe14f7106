"""bernonnx: monotone probability calibrators that export exactly to ONNX."""

from . import metrics
from .baselines import (
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
)
from .bernstein import BernsteinCalibrator
from .calibration import CalibratedClassifier
from .fusion import FusionClassifier
from .multivariate import MultivariateBernsteinCalibrator

__version__ = "0.1.0.dev0"

__all__ = [
    "BernsteinCalibrator",
    "CalibratedClassifier",
    "FusionClassifier",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "MultivariateBernsteinCalibrator",
    "PlattCalibrator",
    "PlattHistogramCalibrator",
    "metrics",
    "__version__",
]
