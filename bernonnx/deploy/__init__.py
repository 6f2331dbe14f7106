"""Deployment artefacts for exported ONNX graphs.

Three things a user does with an ONNX export once it has been checked for parity:

- :func:`write_triton_repository` lays it out as a Triton Inference Server model
  (``<repository>/<name>/config.pbtxt`` and ``<repository>/<name>/<version>/model.onnx``);
- :func:`to_ort_format` converts it to the ORT format that onnxruntime-mobile loads;
- :func:`run_onnx` runs a graph (``.onnx``, ``.ort`` or in memory) single-threaded in
  onnxruntime, the reference the parity checks compare other runtimes against.

This package imports onnx and onnxruntime at import time, so ``bernonnx/__init__.py``
does not import it: ``from bernonnx.deploy import ...``. One module per target:
:mod:`.triton`, :mod:`.ort_format`, :mod:`.run`; :mod:`._files` writes files whole.
"""

from .ort_format import to_ort_format
from .run import run_onnx
from .triton import write_triton_repository

__all__ = ["run_onnx", "to_ort_format", "write_triton_repository"]
