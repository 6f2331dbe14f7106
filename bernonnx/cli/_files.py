"""Writing the command line's outputs: checked before anything is written, then whole."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ._base import InputError


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: same resolved path (symlinks followed),
    or an existing hard link."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_outputs(inputs: Sequence[Path], outputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse, before anything is written, an output that would destroy an input or
    cannot be a file: an input file, a folder, two outputs on one path, a path whose
    nearest existing ancestor is not a folder.

    ``outputs`` pairs what the user gave (``"--onnx x.onnx"``) with the file written.
    """
    seen: list[tuple[str, Path]] = []
    for given, path in outputs:
        for source in inputs:
            if _same_file(path, source):
                raise InputError(f"{given} would overwrite the input file {source}")
        for other, earlier in seen:
            if _same_file(path, earlier):
                raise InputError(f"{given} and {other} would write the same file {path}")
        if path.is_dir():
            raise InputError(f"{given}: {path} is a folder; expected a file path")
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise InputError(f"{given}: {ancestor} is a file, so {path} cannot be created")
        seen.append((given, path))


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it when the block succeeds.

    A reader (a polling server, a user) sees the old file or the whole new one,
    never half of it; the new file has the umask's usual mode. An unwritable place
    is bad input (exit 2).
    """
    from bernonnx.deploy._files import _new_file_mode

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
        os.close(fd)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        yield Path(tmp)
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write(path: Path, data: bytes | str) -> None:
    """Write a file whole (see :func:`_atomic_path`), its folder created."""
    with _atomic_path(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)


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


def _save_reliability(path: Path, y, predictions: dict, n_bins: int, title: str, progress):
    """Draw a reliability diagram into ``path``; a notice instead when matplotlib is absent."""
    try:
        from matplotlib.figure import Figure

        from bernonnx.plotting import reliability_diagram
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "matplotlib"
        progress.note(
            f"no plot written to {path}: {missing} is not available "
            "(pip install 'bernonnx[plot]')",
            always=True,
        )
        return None
    with progress.step(f"drawing {path.name}"):
        # a Figure without pyplot: no GUI backend, no global state
        figure = Figure(figsize=(7.0, 8.0))
        drawn = reliability_diagram(
            y, predictions, n_bins=n_bins, ax=figure.add_subplot(), title=title, smooth=True
        )
        figure = getattr(drawn, "figure", None) or drawn
        with _atomic_path(path) as tmp:
            figure.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return path
