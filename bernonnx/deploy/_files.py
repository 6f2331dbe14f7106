"""What every deployment target shares: the model argument and all-or-nothing writes."""

from __future__ import annotations

import os
import pathlib
import tempfile
from collections.abc import Sequence

import onnx

ModelLike = onnx.ModelProto | str | os.PathLike[str]


def _new_file_mode() -> int:
    """The mode ``open()`` gives a new file: 0o666 less the process umask.

    ``os.umask`` can only be read by setting it; it is set back at once.
    """
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _missing_folders(path: pathlib.Path) -> list[pathlib.Path]:
    """The folders above ``path`` that do not exist yet, outermost first."""
    missing = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _refusal(exc: OSError, path: pathlib.Path) -> OSError:
    """``exc`` re-raised about the file the caller asked for (not a temporary name)."""
    error = OSError(exc.errno, exc.strerror or str(exc), str(path))
    error.__cause__ = exc
    return error


def _check_writable(path: pathlib.Path) -> None:
    """``OSError`` (its ``filename`` is ``path``) unless a file can be written at ``path``.

    Looks at the nearest existing folder above ``path``, which must be a folder, and
    creates and removes one empty temporary file there: permissions alone do not tell
    (root writes to a folder of mode 0555, but not into ``/proc``, ``/sys`` or a
    read-only mount). Nothing is left on disk.
    """
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder, where a file is to be written", str(path))
    missing = _missing_folders(path)
    folder = missing[0].parent if missing else path.parent
    if not folder.is_dir():
        raise NotADirectoryError(20, f"{folder} is not a folder", str(path))
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".bernonnx-probe-")
    except OSError as exc:
        raise _refusal(exc, path) from exc
    os.close(fd)
    os.unlink(probe)


def _write_together(files: Sequence[tuple[pathlib.Path, bytes]]) -> None:
    """Write every file of ``files`` or none of them.

    Each file is first written whole under a temporary name in its own folder (the
    folders missing on the way are created), and only when all are written are they
    renamed onto their names, in the order given. On any failure the temporary files,
    the files this call created and the folders it created are removed, and an
    ``OSError`` naming the file that could not be written is raised; files that existed
    before keep their old content unless their rename had already happened.

    A reader (a polling Triton, a user) sees an old file or a whole new one, never half
    of one. The files get the umask's usual mode (0644 under umask 022), not the 0600
    of ``mkstemp``: a server running as another user must be able to read them.
    """
    created: list[pathlib.Path] = []
    staged: list[tuple[str, pathlib.Path]] = []
    renamed: list[pathlib.Path] = []
    path = None
    try:
        for path, data in files:
            for folder in _missing_folders(path):
                folder.mkdir()
                created.append(folder)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            if hasattr(os, "fchmod"):  # not on Windows, where modes do not apply
                os.fchmod(fd, _new_file_mode())
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        for tmp, path in staged:
            existed = os.path.lexists(path)
            os.replace(tmp, path)
            if not existed:
                renamed.append(path)
    except BaseException as exc:
        for tmp, _ in staged:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        for done in renamed:
            os.unlink(done)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass
        if isinstance(exc, OSError) and path is not None:
            raise _refusal(exc, path) from exc
        raise
