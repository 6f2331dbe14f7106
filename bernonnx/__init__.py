"""bernonnx: monotone probability calibrators that export exactly to ONNX."""

from . import metrics
from .bernstein import BernsteinCalibrator
from .calibration import CalibratedClassifier
from .fusion import FusionClassifier
from .histogram import HistogramCalibrator, PlattHistogramCalibrator
from .isotonic import IsotonicCalibrator
from .multivariate import MultivariateBernsteinCalibrator
from .platt import PlattCalibrator

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
