"""What every deployment target shares: the model argument and whole-file writes."""

from __future__ import annotations

import os
import pathlib
import tempfile

import onnx

ModelLike = onnx.ModelProto | str | os.PathLike[str]


def _new_file_mode() -> int:
    """The mode ``open()`` gives a new file: 0o666 less the process umask.

    ``os.umask`` can only be read by setting it; it is set back at once.
    """
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write through a temporary file so that a polling Triton never reads half a file.

    The file gets the umask's usual mode (0644 under umask 022), not the 0600 of
    ``mkstemp``: a server running as another user must be able to read it.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if hasattr(os, "fchmod"):  # not on Windows, where modes do not apply
            os.fchmod(fd, _new_file_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
