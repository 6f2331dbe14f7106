"""The command line's files: every command's input read by one loader, and the outputs
checked before any work and written together at the end (:class:`_Outputs`).

The loader dispatches on the file (a CSV, or Parquet: ``.parquet``, ``.parq``, ``.pq``) to
:mod:`._csv` and :mod:`._stream`, which know nothing of each other's format; the label
rules (:func:`._csv._binary_rule`) are the same for both.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._base import InputError, _Progress
from ._csv import _as_number, _binary_target, _Data, _note_missing, _read_columns
from ._stream import _is_parquet, _read_parquet


def _read_labelled(args, progress: _Progress):
    """The rows of ``args.csv`` that have a label, in memory: ``(labels, S, n_missing)``.

    ``labels`` are the label cells as text (a CSV) or the label column's values (an
    array, Parquet); ``S`` the (n, len(args.score)) float64 score matrix; rows without a
    label are dropped and counted (a notice says how many).
    """
    path = Path(args.csv)
    if _is_parquet(path):
        labels, S, n_missing = _read_parquet(args)
    else:
        labels, S, n_missing = _read_columns(path, args.label, args.score, args.delimiter)
    _note_missing(progress, n_missing, args.label, len(labels))
    return labels, S, n_missing


def _load(args, progress: _Progress) -> _Data:
    """The labelled rows of ``args.csv`` with their 0/1 targets (see :func:`_read_labelled`)."""
    labels, S, n_missing = _read_labelled(args, progress)
    y, positive = _binary_target(labels, args.label, args.pos_label)
    return _Data(Path(args.csv), args.label, list(args.score), y, S, positive, n_missing)


def _class_labels(labels) -> np.ndarray:
    """The labels as an array for a multiclass fit: numbers when they all are (integers
    as int64), else text."""
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf":
        values = labels.astype(np.float64)
    else:
        numbers = [_as_number(str(value)) for value in labels]
        if None in numbers:
            return np.asarray([str(value) for value in labels])
        values = np.asarray(numbers, dtype=np.float64)
    return values.astype(np.int64) if np.all(np.mod(values, 1) == 0) else values


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: same resolved path (symlinks followed),
    or an existing hard link."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _absolute(path: Path) -> Path:
    """``path`` absolute and normalised (``a/../b`` is ``b``), without resolving links."""
    return Path(os.path.normpath(Path(path).absolute()))


def _check_outputs(inputs: Sequence[Path], outputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse, before anything is written, an output that would destroy an input or
    cannot be written: an input file, a folder, two outputs on one path, a path whose
    nearest existing ancestor is not a folder, or a folder no file can be created in
    (read-only, ``/proc``...).

    ``outputs`` pairs what the user gave (``"--onnx x.onnx"``) with the file written.
    """
    from bernonnx.deploy._files import _check_writable

    seen: list[tuple[str, Path]] = []
    for given, path in outputs:
        for source in inputs:
            if _same_file(path, source):
                raise InputError(f"{given} would overwrite the input file {source}")
        for other, earlier in seen:
            if _same_file(path, earlier):
                raise InputError(f"{given} and {other} would write the same file {path}")
            # one output inside the folder another is written as: both cannot be made
            for inner, outer, flag, file_flag in (
                (path, earlier, given, other),
                (earlier, path, other, given),
            ):
                if _absolute(outer) in _absolute(inner).parents:
                    raise InputError(
                        f"{flag} writes {inner} inside {outer}, which {file_flag} writes as "
                        "a file: give them different paths"
                    )
        if path.is_dir():
            raise InputError(f"{given}: {path} is a folder; expected a file path")
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise InputError(f"{given}: {ancestor} is a file, so {path} cannot be created")
        try:
            _check_writable(path)
        except OSError as exc:
            raise InputError(
                f"{given}: cannot write {path}: {exc.strerror or exc}; nothing was written"
            ) from None
        seen.append((given, path))


class _Outputs:
    """Every file a command writes, checked before any work and written together at
    the end.

    :meth:`add` checks a path (:func:`_check_outputs`) as soon as the command knows it;
    :meth:`stage` holds a file's bytes; :meth:`commit` writes the staged files with
    :func:`bernonnx.deploy._files._write_together`: each under a temporary name in its
    own folder, renamed once all are whole. A failure at any step is bad input (exit
    2) naming the option and the path, and leaves nothing new on disk.
    """

    def __init__(self, inputs: Sequence[Path]):
        self.inputs = [Path(p) for p in inputs]
        self.paths: list[tuple[str, Path]] = []
        self.staged: dict[Path, bytes] = {}

    def add(self, given: str, path: Path) -> Path:
        """Check ``path``, written for the option ``given``, against the inputs and the
        outputs added before; return it."""
        _check_outputs(self.inputs, [*self.paths, (given, Path(path))])
        self.paths.append((given, Path(path)))
        return Path(path)

    def stage(self, path: Path, data: bytes | str) -> None:
        """Hold the content of ``path`` (added before) until :meth:`commit`."""
        if not any(path == added for _, added in self.paths):
            raise RuntimeError(f"{path} was not checked before being staged")  # a bug
        self.staged[path] = data.encode("utf-8") if isinstance(data, str) else data

    def commit(self) -> None:
        """Write every staged file, in the order added, or none of them."""
        from bernonnx.deploy._files import _write_together

        order = [(given, path) for given, path in self.paths if path in self.staged]
        try:
            _write_together([(path, self.staged[path]) for _, path in order])
        except OSError as exc:
            failed = Path(exc.filename) if exc.filename else None
            given = next((g for g, p in order if p == failed), None)
            given = given or ", ".join(dict.fromkeys(g for g, _ in order))
            raise InputError(
                f"{given}: cannot write {exc.filename}: {exc.strerror or exc}; nothing was written"
            ) from None
        finally:
            self.staged.clear()


def _plot_path(text: str, flag: str = "--plot") -> Path:
    """``--plot`` takes the path of a PNG file to write: it must end in .png."""
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{flag} {text} is a folder; give a file name ending in .png")
    if path.suffix.lower() != ".png":
        raise InputError(
            f"{flag} takes the PNG file to write, a name ending in .png; got {text!r}"
        )
    return path


def _draw_reliability(
    y,
    predictions: dict,
    n_bins: int,
    title: str,
    progress,
    *,
    name: str,
    reference: str | None = None,
    n_resamples: int = 100,
    seed: int = 0,
) -> bytes | None:
    """The PNG of the reliability diagrams of ``predictions``, one panel per calibrator
    with ``reference`` in grey in each (:func:`bernonnx.plotting.reliability_grid`); a
    notice and None when matplotlib is absent. The smooth ECE and its interval use the
    table's resamples and seed, so the figure's numbers are the table's. ``name`` is
    the file's, for the progress line and the notice."""
    try:
        from matplotlib.figure import Figure

        from bernonnx.plotting import reliability_grid
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "matplotlib"
        progress.note(
            f"no plot written to {name}: {missing} is not available "
            "(pip install 'bernonnx[plot]')",
            always=True,
        )
        return None
    with progress.step(f"drawing {Path(name).name}"):
        # a Figure without pyplot: no GUI backend, no global state
        figure = Figure()
        reliability_grid(
            y,
            predictions,
            reference=reference,
            n_bins=n_bins,
            title=title,
            smooth=True,
            n_resamples=n_resamples,
            random_state=seed,
            figure=figure,
        )
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
