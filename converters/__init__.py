"""skl2onnx shape calculators and converters for bernonnx estimators.

Installed as ``bernonnx.converters``; the converters themselves arrive with
the ONNX export work (issue 3).
"""
