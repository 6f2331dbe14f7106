"""A checked ONNX graph converted to the ORT format of onnxruntime-mobile."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import onnx

from ._files import ModelLike

_ORT_STYLES = ("Fixed", "Runtime")

#: The converter run in the subprocess. ``onnxruntime.tools/__init__.py`` imports its
#: PyTorch export helpers, hence all of torch, whenever torch is installed (onnxruntime
#: 1.32); the ONNX-to-ORT conversion never uses them, and with torch 2.13 the import took
#: 1.7 of the 2.1 s of CPU of converting a small graph (without it the config lists the
#: same operators and the .ort file gives the same outputs). A ``None`` entry in
#: ``sys.modules`` makes
#: ``importlib.util.find_spec("torch")`` answer None, so the package skips them.
_CONVERTER = (
    "import runpy, sys; sys.modules['torch'] = None; "
    "runpy.run_module('onnxruntime.tools.convert_onnx_models_to_ort', "
    "run_name='__main__', alter_sys=True)"
)


def to_ort_format(
    model: ModelLike,
    out_dir: str | os.PathLike[str],
    *,
    optimization_style: str = "Fixed",
) -> dict[str, pathlib.Path]:
    """Convert an ONNX graph to the ORT format used by onnxruntime-mobile.

    Runs the converter shipped in the onnxruntime wheel
    (``python -m onnxruntime.tools.convert_onnx_models_to_ort``) in a subprocess with
    this interpreter, so its console output and any crash stay out of the caller; torch,
    which that package imports when installed but the conversion never uses, is kept out.

    Parameters
    ----------
    model : onnx.ModelProto or path-like
        The graph. A ModelProto is first saved as ``model.onnx`` in a temporary folder;
        a path keeps its file name stem.
    out_dir : path-like
        Where the ``.ort`` file and the operator config go (created if missing).
    optimization_style : {"Fixed", "Runtime"}, default="Fixed"
        ``"Fixed"`` applies graph optimisations now (use with the CPU execution
        provider); ``"Runtime"`` saves them to be replayed at load time, for compiling
        providers such as NNAPI or CoreML, and names the files ``*.with_runtime_opt.*``.

    Returns
    -------
    paths : dict
        ``{"ort": path to <stem>.ort, "config": path to
        <stem>.required_operators.config}``, the config listing the operators a minimal
        onnxruntime build needs (its ``--include_ops_by_config`` input).

    Raises
    ------
    ValueError
        ``optimization_style`` not one of "Fixed", "Runtime", or a missing model file.
    RuntimeError
        The converter failed; the message quotes its stderr.

    Notes
    -----
    The converter excludes the x86-only NCHWc layout transform, so a Fixed-style file
    written here also runs on ARM. The environment variable
    ``ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL`` read by the converter is
    honoured (it adds the level to the file names).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> import onnxruntime as ort
    >>> from bernonnx import BernsteinCalibrator
    >>> from bernonnx.deploy import to_ort_format
    >>> from bernonnx.export import to_onnx
    >>> s = np.linspace(-3, 3, 200).reshape(-1, 1)
    >>> cal = BernsteinCalibrator(degree=4).fit(s, np.sin(7 * s[:, 0]) + s[:, 0] > 0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     paths = to_ort_format(to_onnx(cal, s[:2]), folder)
    ...     session = ort.InferenceSession(str(paths["ort"]))
    ...     proba = session.run(None, {"X": s})[1]  # float64 scores: a float64 graph
    >>> bool(np.abs(proba - cal.predict_proba(s)).max() < 1e-9)
    True
    """
    if optimization_style not in _ORT_STYLES:
        raise ValueError(
            f"optimization_style must be one of {_ORT_STYLES}, got {optimization_style!r}"
        )
    out_path = pathlib.Path(out_dir)
    out_path.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bernonnx-ort-") as staging:
        source = _ort_source(model, pathlib.Path(staging))
        command = [
            sys.executable,
            "-c",
            _CONVERTER,
            str(source),
            "--output_dir",
            str(out_path),
            "--optimization_style",
            optimization_style,
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    # Mirrors the converter's own naming (_optimization_suffix in the tool).
    level = os.environ.get("ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL", "all")
    suffix = (f".{level}" if level != "all" else "") + (
        ".with_runtime_opt" if optimization_style == "Runtime" else ""
    )
    stem = source.name[: -len(".onnx")]
    paths = {
        "ort": out_path / f"{stem}{suffix}.ort",
        "config": out_path / f"{stem}.required_operators{suffix}.config",
    }
    if result.returncode != 0:
        # The tool ends with a Python traceback: its last lines hold the reason.
        report = (result.stderr or result.stdout).strip()
        if len(report) > 4000:
            report = "...\n" + report[-4000:]
        raise RuntimeError(
            f"onnxruntime's convert_onnx_models_to_ort failed on {str(source)!r} "
            f"(exit code {result.returncode}):\n{report}"
        )
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise RuntimeError(
            f"onnxruntime's convert_onnx_models_to_ort exited 0 but did not write "
            f"{missing}; its output:\n{(result.stdout + result.stderr).strip()}"
        )
    return paths


def _ort_source(model: ModelLike, staging: pathlib.Path) -> pathlib.Path:
    """A .onnx file the converter accepts for ``model``, staged when needed."""
    if isinstance(model, onnx.ModelProto):
        path = staging / "model.onnx"
        onnx.save_model(model, str(path))
        return path
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(
            "model must be an onnx.ModelProto or a path to a .onnx file, "
            f"got {type(model).__name__}"
        )
    path = pathlib.Path(model)
    if not path.is_file():
        raise ValueError(f"model: no such file {str(path)!r}")
    name = path.name
    # The converter only picks up '*.onnx' and skips '*.optimized.onnx' (its own
    # by-products), so such files are converted from a renamed copy. Others are passed
    # in place so that external data files next to them are found.
    if name.lower().endswith(".onnx") and not name.lower().endswith(".optimized.onnx"):
        return path.resolve()
    stem = name[: -len(".onnx")] if name.lower().endswith(".onnx") else name
    staged = staging / (stem.replace(".", "_") + ".onnx")
    shutil.copyfile(path, staged)
    return staged
