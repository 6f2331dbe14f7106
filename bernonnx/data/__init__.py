"""Data files shipped with bernonnx (see :mod:`bernonnx.datasets`; sources and licences
in this folder's README.md)."""
