"""The header of a statistics blob: its fields checked one by one, and written.

:mod:`bernonnx._blob` reads the container and parses the header's JSON; what the JSON
says is checked here, field by field (format and version, the calibrator's name and
parameters, the classes, the row count, the arrays' shapes), and every refusal is one
:class:`~bernonnx._blob.BlobError` that names the field. The calibrator and the
statistics type are looked up in the registry by the name the header gives, among the
registered ones only: a header is data, never a name to call.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ._blob import BlobError, show
from ._registry import CALIBRATORS, resolve

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
