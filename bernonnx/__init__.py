"""bernonnx: monotone probability calibrators that export exactly to ONNX."""

from . import metrics
from ._version import __version__
from .calibration import CalibratedClassifier
from .calibrators import (
    BernsteinCalibrator,
    BetaCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    MultivariateBernsteinCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
    QuadraticScalingCalibrator,
    StackedCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    TemperatureBernsteinCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
    VennAbersCalibrator,
)
from .conformal import ConformalClassifier
from .fusion import FusionClassifier
from .shift import PriorShiftAdapter

__all__ = [
    "BernsteinCalibrator",
    "BetaCalibrator",
    "CalibratedClassifier",
    "ConformalClassifier",
    "FusionClassifier",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "MatrixScalingCalibrator",
    "MultivariateBernsteinCalibrator",
    "PlattCalibrator",
    "PlattHistogramCalibrator",
    "PriorShiftAdapter",
    "QuadraticScalingCalibrator",
    "StackedCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureBernsteinCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
    "attach",
    "check_parity",
    "metrics",
    "to_onnx",
    "__version__",
]

#: Names served from ``bernonnx.export`` on first use: importing it loads onnx and skl2onnx,
#: which ``import bernonnx`` must not do (the estimators never need them).
_LAZY_EXPORT = ("check_parity", "to_onnx")


def __getattr__(name: str):
    # PEP 562: called only for names not found in the module, so the import happens once
    if name in _LAZY_EXPORT:
        from . import export

        value = getattr(export, name)
        globals()[name] = value
        return value
    if name == "attach":
        # a private module: a submodule named "attach" would shadow this function
        from .export._attach import attach

        globals()[name] = attach
        return attach
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_EXPORT) | {"attach"})
