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
caller (:meth:`bernonnx.stats.CalibrationStats.from_bytes`) through ``declared``.
"""

from __future__ import annotations

import io
import json
import math
import re
import reprlib
import zipfile
import zlib
from collections.abc import Callable

import numpy as np
from numpy.lib import format as npy

from ._registry import CALIBRATORS, resolve

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

#: Integer parameters in a header stay within this: no calibrator takes more (degrees
#: to 100, folds to 20, knots and bins in the thousands), and 2^60 knots would allocate.
MAX_PARAM_INT = 1 << 20
#: dtypes of saved classes: booleans, integers, floats, strings of up to 9999 chars
CLASS_DTYPES = re.compile(r"^(\|b1|<[iu][1248]|<f[48]|<U\d{1,4})$")


def bad(message: str):
    """Raise the :class:`BlobError` of a refused header field."""
    raise BlobError(f"statistics header: {message}")


def integer(header: dict, key: str, lo: int, hi: int) -> int:
    """``header[key]``, an integer in ``[lo, hi]`` (not a bool)."""
    value = header.get(key)
    if type(value) is not int or not lo <= value <= hi:
        bad(f"{key} must be an integer in [{lo}, {hi}], got {show.repr(value)}")
    return value


def number(value, key: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A JSON number (finite: the reader refuses others) in ``[lo, hi]`` as a float."""
    if type(value) not in (int, float) or not lo <= value <= hi:
        bad(f"{key} must be a number in [{lo}, {hi}], got {show.repr(value)}")
    return float(value)


def encode_param(value, key: str):
    """A parameter as JSON; tuples, arrays and non-finite floats tagged, numpy scalars
    as Python ones."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        items = [
            encode_param(v, key) for v in (value.tolist() if hasattr(value, "tolist") else value)
        ]
        tag = {tuple: "tuple", list: None}.get(type(value), "array")
        return items if tag is None else {tag: items}
    raise ValueError(
        f"parameter {key}={value!r} cannot be saved: statistics hold numbers, strings, "
        "None and flat sequences of them"
    )


def decode_param(value, key: str, depth: int):
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_PARAM_INT:
            bad(f"parameter {key} = {show.repr(value)} is beyond {MAX_PARAM_INT}")
        return value
    if depth == 0 and isinstance(value, list):
        return [decode_param(v, key, 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "float" and inner in ("inf", "-inf", "nan"):
            return float(inner)
        if depth == 0 and tag in ("tuple", "array") and isinstance(inner, list):
            items = [decode_param(v, key, 1) for v in inner]
            return tuple(items) if tag == "tuple" else np.asarray(items)
    bad(f"parameter {key} = {show.repr(value)} is not a saved parameter value")


def params_of(estimator) -> dict:
    return {k: encode_param(v, k) for k, v in estimator.get_params(deep=False).items()}


def encode_classes(classes: np.ndarray) -> list:
    values = classes.tolist()
    if not all(isinstance(v, (bool, int, float, str)) for v in values):
        raise ValueError(
            f"classes {values!r} cannot be saved: statistics hold labels that are "
            "numbers, booleans or strings"
        )
    return values


def decode_classes(header: dict) -> np.ndarray:
    values, dtype = header.get("classes"), header.get("classes_dtype")
    if not (
        isinstance(values, list)
        and len(values) == 2
        and all(isinstance(v, (bool, int, float, str)) for v in values)
        and (dtype is None or (isinstance(dtype, str) and CLASS_DTYPES.match(dtype)))
    ):
        bad(f"classes must be two labels of a simple dtype, got {show.repr(values)}, {dtype!r}")
    try:
        classes = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    except (OverflowError, TypeError, ValueError):
        bad(f"classes {show.repr(values)} do not fit dtype {dtype}")
    if classes.tolist() != values or not (classes[0] < classes[1]):
        bad(
            f"classes must be two distinct labels in sorted order, as fitted "
            f"(negative, positive), got {show.repr(values)} ({classes.dtype})"
        )
    return classes


# ---- the header of a statistics blob (bernonnx.stats)

#: Version of the blobs of :meth:`CalibrationStats.to_bytes`; others are refused.
FORMAT_VERSION = 3
STATS_FORMAT = "bernonnx.stats"
#: Row counts in a blob's header stay below this (float64 counts them exactly).
_MAX_INT = 1 << 53

_HEADER_KEYS = {
    "format",
    "version",
    "kind",
    "calibrator",
    "params",
    "classes",
    "classes_dtype",
    "rows",
    "arrays",
}


def open_header(header: dict) -> tuple[object, dict[str, tuple]]:
    """Empty statistics of the calibrator a header names, and its arrays' shapes.

    The statistics type is the one the calibrator's registry entry names
    (``bernonnx.stats.BernsteinStats`` or ``ScoreStats``); nothing else is looked up.
    """
    if header.get("format") != STATS_FORMAT:
        bad(f"format {show.repr(header.get('format'))}: not a bernonnx statistics blob")
    if header.get("version") != FORMAT_VERSION:
        bad(
            f"format version {show.repr(header.get('version'))} is unknown; this bernonnx "
            f"reads version {FORMAT_VERSION} (save the statistics again with it)"
        )
    name = header.get("calibrator")
    entries = [e for e in CALIBRATORS if e.stats is not None]
    entry = next((e for e in entries if e.name == name), None)
    if entry is None:
        bad(
            f"calibrator {show.repr(name)} has no streaming statistics; those with "
            f"statistics: {', '.join(e.name for e in entries)}"
        )
    kind = resolve(entry.stats)
    if header.get("kind") != kind.__name__:
        bad(f"kind {show.repr(header.get('kind'))} is not that of {name} ({kind.__name__})")
    unknown = set(header) - _HEADER_KEYS - kind.HEADER_KEYS
    missing = (_HEADER_KEYS | kind.HEADER_KEYS) - set(header)
    if unknown or missing:
        bad(f"keys {sorted(missing)} missing, {show.repr(sorted(unknown))} unexpected")
    stats = kind(_calibrator(entry.load(), header.get("params")), decode_classes(header))
    stats.rows = integer(header, "rows", 0, _MAX_INT)
    declared = header["arrays"]
    if not isinstance(declared, dict) or not all(
        isinstance(v, list) and len(v) <= 3 and all(type(d) is int and d >= 0 for d in v)
        for v in declared.values()
    ):
        bad(f"arrays must map names to shapes, got {show.repr(declared)}")
    shapes = stats._declared(header, declared)
    if declared != {k: list(v) for k, v in shapes.items()}:
        bad(f"arrays {show.repr(declared)} are not those of the statistics: {shapes}")
    return stats, shapes


def _calibrator(cls: type, params):
    """``cls(**params)`` for the class's own parameters only, validated by the class."""
    own = cls().get_params(deep=False)
    if not isinstance(params, dict) or set(params) - set(own):
        extra = set(params) - set(own) if isinstance(params, dict) else params
        bad(f"params of {cls.__name__} must be among {sorted(own)}, got {show.repr(extra)}")
    decoded = {key: decode_param(value, key, 0) for key, value in params.items()}
    estimator = cls(**decoded)
    try:
        estimator._validate_params()  # scikit-learn's check of _parameter_constraints
        if hasattr(estimator, "_candidate_degrees"):
            estimator._candidate_degrees()
    except (ValueError, TypeError) as exc:
        bad(f"params of {cls.__name__} refused: {exc}")
    return estimator


def stats_header(stats) -> dict:
    """The header :func:`open_header` reads, of statistics ``stats`` (its kind's own keys too)."""
    return {
        "format": STATS_FORMAT,
        "version": FORMAT_VERSION,
        "kind": type(stats).__name__,
        "calibrator": type(stats.calibrator).__name__,
        "params": params_of(stats.calibrator),
        "classes": encode_classes(stats.classes),
        "classes_dtype": None if stats.classes.dtype.kind == "O" else stats.classes.dtype.str,
        "rows": int(stats.rows),
        **stats._header(),
    }
