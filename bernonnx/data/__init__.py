"""Data files shipped with bernonnx (see :mod:`bernonnx.datasets`)."""
