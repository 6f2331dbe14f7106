"""bernonnx: monotone probability calibrators that export exactly to ONNX."""


from .bernstein import BernsteinCalibrator

__version__ = "0.1.0.dev0"

__all__ = ["BernsteinCalibrator", "metrics", "__version__"]
