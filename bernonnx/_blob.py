"""Untrusted blobs of arrays and a JSON header: written and read without pickle.

A blob is a zip archive of ``.npy`` members (what ``np.savez_compressed`` writes):
``header.npy`` holds UTF-8 JSON as bytes, every other member one float64 array.
The header declares the shape of every array (``"arrays": {name: [dims]}``), and the
reader trusts nothing before checking it: the archive's directory (names, compression,
declared sizes against a cap on what the blob may expand to), then the header (size,
JSON depth, no NaN or infinity, no integer of thousands of digits), then, member by
member, the ``.npy`` header (format version, dtype, order, shape) against the
declaration, and only then reads the declared bytes (the CRC of the zip is checked
on the way). Every problem is one ``ValueError`` that names it.

What the header says (which arrays, which shapes, which values) is checked by the
caller (:meth:`bernonnx.stats.CalibrationStats.from_bytes`) through ``declared``, with
the field checks of :mod:`bernonnx._blob_header`.
"""

from __future__ import annotations

import io
import json
import math
import reprlib
import zipfile
import zlib
from collections.abc import Callable

import numpy as np
from numpy.lib import format as npy

#: Bytes of the JSON header, at most.
MAX_HEADER_BYTES = 1 << 20
#: A blob may always expand to this many bytes: the largest fixed-size statistics
#: (Bernstein key bins of a degree search over 20 folds: 2^17 bins, 46 MB) fit under it.
EXPANSION_FLOOR = 64 << 20
#: Beyond the floor, a blob may expand to at most this many times its own size
#: (float64 data of real scores compress about 1.1:1; a bomb of zeros, 1000:1).
MAX_EXPANSION = 64

_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
    KeyError,
    IndexError,
    TypeError,
    ValueError,
)


class BlobError(ValueError):
    """A malformed blob, the problem named in the message."""


show = reprlib.Repr()
show.maxstring = show.maxother = show.maxlong = 60


def write(header: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """The blob of ``header`` (JSON; ``"arrays"`` is added) and float64 ``arrays``."""
    arrays = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()}
    header = {**header, "arrays": {k: list(v.shape) for k, v in arrays.items()}}
    text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, arr in {"header": np.frombuffer(text, dtype=np.uint8), **arrays}.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                npy.write_array(f, arr, allow_pickle=False)
    return buf.getvalue()


def read(blob, declared: Callable[[dict], dict[str, tuple]]) -> tuple[dict, dict]:
    """The header and arrays of a blob written by :func:`write`.

    ``declared(header)`` validates the header and returns the expected shape of
    every array (the header's own ``"arrays"`` checked against its other fields),
    raising :class:`BlobError` for anything it refuses.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ValueError(f"blob must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            members = _members(zf, len(blob))
            header = _parse_header(_read_npy(zf, members.pop("header"), np.uint8, None))
            shapes = declared(header)
            if set(shapes) != set(members):
                missing, extra = set(shapes) - set(members), set(members) - set(shapes)
                raise ValueError(
                    f"statistics blob: arrays {sorted(missing)} missing, "
                    f"{sorted(extra)} unexpected"
                )
            arrays = {k: _read_npy(zf, members[k], np.float64, shapes[k]) for k in shapes}
    except BlobError:
        raise
    except RecursionError:
        raise BlobError("statistics blob: its header nests too deeply") from None
    except _ERRORS as exc:  # zip damage, truncation, CRC mismatches
        raise BlobError(
            f"statistics blob is malformed: {type(exc).__name__}: {show.repr(str(exc))}"
        ) from None
    return header, arrays


def _members(zf: zipfile.ZipFile, size: int) -> dict[str, zipfile.ZipInfo]:
    infos = zf.infolist()
    names = [i.filename for i in infos]
    if len(set(names)) != len(names) or not all(n.endswith(".npy") for n in names):
        raise BlobError(f"statistics blob: unexpected member names {show.repr(names)}")
    if "header.npy" not in names:
        raise BlobError("statistics blob has no header: not a bernonnx statistics blob")
    cap = max(EXPANSION_FLOOR, MAX_EXPANSION * size)
    expanded = sum(i.file_size for i in infos)
    if expanded > cap:
        raise BlobError(
            f"statistics blob expands to {expanded} bytes from {size}: more than the cap "
            f"of {cap} (max({EXPANSION_FLOOR}, {MAX_EXPANSION} x its size))"
        )
    for info in infos:
        if info.flag_bits & 0x1:
            raise BlobError(f"statistics blob: member {info.filename} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise BlobError(
                f"statistics blob: member {info.filename} has compression "
                f"{info.compress_type} (stored or deflated expected)"
            )
    return {i.filename[:-4]: i for i in infos}


def _read_npy(zf, info: zipfile.ZipInfo, dtype, shape: tuple | None) -> np.ndarray:
    """One member: its ``.npy`` header checked (``shape`` None: 1-D header bytes), then
    exactly the declared bytes read."""
    name = info.filename[:-4]
    with zf.open(info) as f:
        got, fortran, got_dtype = _npy_header(f, name)
        if got_dtype != np.dtype(dtype) or fortran:
            raise BlobError(
                f"statistics blob: array {name} has dtype {got_dtype}"
                f"{' (Fortran order)' if fortran else ''}, expected {np.dtype(dtype)}"
            )
        if shape is None:
            if len(got) != 1 or not 0 <= got[0] <= MAX_HEADER_BYTES:
                raise BlobError(
                    f"statistics blob: header of shape {got}, at most {MAX_HEADER_BYTES} bytes"
                )
        elif tuple(got) != tuple(shape):
            raise BlobError(
                f"statistics blob: array {name} has shape {tuple(got)}, "
                f"the header declares {tuple(shape)}"
            )
        nbytes = math.prod(got) * np.dtype(dtype).itemsize
        if info.file_size != f.tell() + nbytes:
            raise BlobError(
                f"statistics blob: member {info.filename} holds {info.file_size} bytes, "
                f"its shape {tuple(got)} needs {f.tell() + nbytes}"
            )
        data = f.read(nbytes)
        if len(data) != nbytes or f.read(1):
            raise BlobError(f"statistics blob: array {name} is truncated")
    return np.frombuffer(data, dtype=dtype).reshape(got).copy()


def _npy_header(f, name: str) -> tuple:
    """Shape, order and dtype from a ``.npy`` header (versions 1.0 and 2.0)."""
    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            return npy.read_array_header_1_0(f)
        if version == (2, 0):
            return npy.read_array_header_2_0(f)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
        raise  # damage to the archive itself: named by the caller
    except Exception as exc:  # noqa: BLE001 - numpy parses the header with ast and tokenize
        raise BlobError(
            f"statistics blob: array {name} has a malformed .npy header "
            f"({type(exc).__name__}: {show.repr(str(exc))})"
        ) from None
    raise BlobError(f"statistics blob: array {name} has .npy version {version}")


def _parse_header(raw: np.ndarray) -> dict:
    def finite(text):
        value = float(text)
        if not math.isfinite(value):
            raise BlobError(f"statistics header holds a non-finite number {show.repr(text)}")
        return value

    def constant(text):
        raise BlobError(f"statistics header holds {text}: NaN and infinity are refused")

    try:
        header = json.loads(
            raw.tobytes().decode("utf-8"), parse_float=finite, parse_constant=constant
        )
    except RecursionError:
        raise BlobError("statistics header nests too deeply") from None
    except BlobError:
        raise
    except ValueError as exc:  # UnicodeDecodeError, JSONDecodeError, integer digit limit
        raise BlobError(f"statistics header is not JSON: {show.repr(str(exc))}") from None
    if not isinstance(header, dict):
        raise BlobError(f"statistics header must be a JSON object, got {type(header).__name__}")
    return header


# ------------------------------------------------------------- header values
