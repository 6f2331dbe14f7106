"""What ``to_onnx`` says when a model cannot be exported: our own errors, never another
library's.

Two kinds of check, both before or around skl2onnx's conversion:

- :func:`check_text_columns`: a DataFrame column of ``object`` dtype whose values are
  not all strings. The graph reads each column either as numbers or as strings;
  scikit-learn reads such a column as whatever its values are (a ``StandardScaler``
  turns numbers held as objects into floats, a ``OneHotEncoder`` compares them as
  Python objects), which no typed input repeats. The user converts the column.
- :func:`check_float32_ties`: a ``VennAbersCalibrator`` attached to a float32 output
  it was not fitted on (its map jumps at every calibration score).
- :func:`foreign_error`: any exception raised inside skl2onnx, onnx or numpy during the
  conversion becomes a ``NotImplementedError`` naming the step that was being
  converted (read from the traceback: the scikit-learn estimator skl2onnx was parsing
  or converting) and what to do.
"""

from __future__ import annotations

import pathlib

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer

__all__ = ["check_text_columns", "foreign_error", "text_problem"]

#: this package's directories: an exception raised in them is already ours
_OURS = (
    pathlib.Path(__file__).resolve().parents[1],
    pathlib.Path(__file__).resolve().parents[2] / "converters",
)


def text_problem(series) -> str | None:
    """Why an object (or string) column cannot be fed as strings, None if it can:
    values that are not strings (numbers, booleans) beside the missing ones."""
    from pandas.api.types import infer_dtype

    if getattr(series.dtype, "name", "") == "category":
        return None
    try:
        kind = np.dtype(getattr(series.dtype, "numpy_dtype", series.dtype)).kind
    except TypeError:  # an extension type without a numpy equivalent (strings)
        kind = "O"
    if kind != "O":
        return None
    kind = infer_dtype(series, skipna=True)
    if kind in ("string", "empty"):
        return None
    return f"values of type {kind!r} (not strings only)"


def _steps_reading(model, column) -> list[str]:
    """The ColumnTransformer parts of ``model`` that select ``column`` (by name)."""
    found = []

    def visit(estimator, where):
        if isinstance(estimator, ColumnTransformer):
            for name, step, spec in getattr(estimator, "transformers_", []):
                names = [spec] if isinstance(spec, str) else list(np.ravel(spec))
                if column in names and not (isinstance(step, str) and step == "drop"):
                    found.append(f"{where}{name} ({type(step).__name__})")
            return
        for key, value in getattr(estimator, "__dict__", {}).items():
            values = value if isinstance(value, list | tuple) else [value]
            for v in values:
                if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], BaseEstimator):
                    visit(v[1], f"{where}{v[0]}/")
                elif isinstance(v, BaseEstimator) and key.endswith(("estimator", "estimator_")):
                    visit(v, where)
                elif hasattr(v, "calibrators") and hasattr(v, "estimator"):
                    visit(v.estimator, where)

    visit(model, "")
    return list(dict.fromkeys(found))


def check_text_columns(model, X_sample) -> None:
    """``ValueError`` naming each object column of ``X_sample`` that holds other values
    than strings, the steps that read it, and the conversion to make."""
    if not (hasattr(X_sample, "columns") and hasattr(X_sample, "dtypes")):
        return
    for column in X_sample.columns:
        problem = text_problem(X_sample[column])
        if problem is None:
            continue
        steps = _steps_reading(model, column)
        read_by = f" (read by {', '.join(steps)})" if steps else ""
        raise ValueError(
            f"X_sample column {column!r}{read_by} has dtype object with {problem}: the "
            "graph takes each column as numbers or as strings, and scikit-learn computes "
            "on Python objects that no typed input repeats; convert the column before "
            "fitting and serving: pandas.to_numeric(X[col]) for numbers, "
            "X[col].astype(str) for labels"
        )


def _failing_step(tb) -> str | None:
    """The estimator skl2onnx was converting or parsing when ``tb`` was raised."""
    step = None
    while tb is not None:
        local = tb.tb_frame.f_locals
        operator = local.get("operator")
        raw = getattr(operator, "raw_operator", None)
        model = raw if raw is not None else local.get("model")
        if isinstance(model, BaseEstimator):
            step = type(model).__name__  # the innermost one wins
        tb = tb.tb_next
    return step


def _raised_by_us(exc: BaseException) -> bool:
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    if last is None:
        return False
    path = pathlib.Path(last).resolve()
    return any(path.is_relative_to(root) for root in _OURS)


def foreign_error(exc: BaseException) -> BaseException | None:
    """``exc`` as a ``NotImplementedError`` naming the step, or None when it is ours
    (a ``ValueError`` or ``NotImplementedError`` raised by bernonnx) already."""
    if isinstance(exc, ValueError | NotImplementedError) and _raised_by_us(exc):
        return None
    step = _failing_step(exc.__traceback__)
    where = f"the step {step}" if step else "a step of this model"
    message = " ".join(str(exc).split())[:300]
    return NotImplementedError(
        f"to_onnx cannot convert {where}: skl2onnx failed with {type(exc).__name__}: "
        f"{message}. Export a model made of the steps listed in "
        "bernonnx.converters.supported, with numeric or string columns (not object "
        "columns of numbers), or report this model"
    )


def check_arguments(X_sample, *, name, basis, target_opset) -> None:
    """``ValueError`` naming a ``to_onnx`` argument of the wrong kind, before skl2onnx
    meets it (its own errors name nothing)."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a str, got {type(name).__name__}")
    if not (isinstance(basis, str) and basis in ("exp", "pow")):
        raise ValueError(f"basis must be 'exp' or 'pow', got {basis!r}")
    opsets = target_opset.values() if isinstance(target_opset, dict) else [target_opset]
    keys_ok = not isinstance(target_opset, dict) or all(isinstance(k, str) for k in target_opset)
    if target_opset is not None and not (
        keys_ok
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in opsets)
    ):
        raise ValueError(
            "target_opset must be None, an int or a dict of domain name to int, "
            f"got {target_opset!r}"
        )
    import onnx

    newest = onnx.defs.onnx_opset_version()
    main = target_opset.get("", newest) if isinstance(target_opset, dict) else target_opset
    if main is not None and main > newest:
        raise ValueError(
            f"target_opset asks for ai.onnx opset {main}, but the installed onnx knows "
            f"opsets up to {newest}"
        )
    if hasattr(X_sample, "tocsr") or hasattr(X_sample, "todense"):
        raise ValueError(
            "X_sample is a sparse matrix, but the graph's inputs are dense tensors; pass "
            "X_sample.toarray() (and feed dense rows when serving)"
        )
    if hasattr(X_sample, "columns") and hasattr(X_sample, "dtypes"):
        duplicated = X_sample.columns[X_sample.columns.duplicated()].tolist()
        if duplicated:
            raise ValueError(
                f"X_sample has duplicate column names {duplicated}: each graph input is one "
                "named column; rename them"
            )
        half = [c for c in X_sample.columns if X_sample[c].dtype == np.float16]
    else:
        dtype = getattr(X_sample, "dtype", None)
        half = ["X_sample"] if dtype == np.float16 else []
        if dtype is not None and np.dtype(dtype).kind in "OSUc":
            try:
                np.asarray(X_sample, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"X_sample must hold numbers (an array of dtype {dtype} was given); "
                    "text and categories need a DataFrame into a ColumnTransformer"
                ) from None
    if half:
        raise ValueError(
            f"float16 data ({half}): scikit-learn computes on it in float16, which the "
            "graph (float32 or float64 inputs) does not repeat; cast to float32 or "
            "float64 before fitting and serving"
        )


def _used_names(consumer) -> list:
    """The fitted column names a ColumnTransformer's parts read (not the dropped ones)."""
    names = np.asarray(consumer.feature_names_in_, dtype=object)
    used = []
    for _, step, spec in getattr(consumer, "transformers_", []):
        if isinstance(step, str) and step == "drop":
            continue
        picked = np.ravel(np.asarray([spec] if isinstance(spec, str) else spec, dtype=object))
        if picked.size and all(isinstance(v, bool | np.bool_) for v in picked):
            picked = names[picked.astype(bool)]
        elif picked.size and all(isinstance(v, int | np.integer) for v in picked):
            picked = names[picked.astype(np.int64)]
        used += [str(v) for v in picked]
    return list(dict.fromkeys(used))


def in_fitted_order(consumers, X_sample):
    """``X_sample`` with the columns its ColumnTransformers were fitted on first, in
    that order: skl2onnx maps a part's positional columns (``[0, 1]``) to the graph's
    inputs by position, scikit-learn to the fitted names."""
    fitted = [getattr(c, "feature_names_in_", None) for c in consumers]
    if not fitted or any(f is None for f in fitted):
        return X_sample
    names = [str(c) for c in fitted[0]]
    if any([str(c) for c in f] != names for f in fitted):
        return X_sample
    by_name = {str(c): c for c in X_sample.columns}
    if not set(names) <= set(by_name):
        positional = any(
            not isinstance(spec, str)
            and np.size(spec)
            and not all(isinstance(v, str) for v in np.ravel(np.asarray(spec, dtype=object)))
            for consumer in consumers
            for _, step, spec in consumer.transformers_
            if not (isinstance(step, str) and step == "drop")
        )
        if positional:
            missing = [n for n in names if n not in by_name]
            raise ValueError(
                f"X_sample lacks the columns {missing} that the ColumnTransformer was "
                "fitted on; it selects some columns by position, which the graph can map "
                "only from a sample holding every fitted column"
            )
        return X_sample
    rest = [c for c in X_sample.columns if str(c) not in set(names)]
    return X_sample[[by_name[n] for n in names] + rest]


def check_routed_columns(consumers, X_sample) -> None:
    """``ValueError`` naming the columns a ColumnTransformer fitted on names reads that
    ``X_sample`` lacks: scikit-learn refuses such a frame too."""
    present = {str(c) for c in X_sample.columns}
    for consumer in consumers:
        if getattr(consumer, "feature_names_in_", None) is None:
            continue
        missing = [c for c in _used_names(consumer) if c not in present]
        if missing:
            raise ValueError(
                f"X_sample lacks the columns {missing} that {type(consumer).__name__} "
                "reads; pass a frame with every column the model reads"
            )


def check_float32_ties(calibrator, dtype, output: str) -> None:
    """Refuse a Venn-Abers map fitted on scores a float32 ``output`` cannot give.

    The map jumps at every calibration score; fitted on the graph's own float32 scores,
    it reads them to the last bit, but fitted on other scores (scikit-learn's float64
    ``predict_proba``) a calibration row's score from the graph is not its calibration
    score, and lands on another step.
    """
    from bernonnx.calibrators.venn_abers import VennAbersCalibrator

    if np.dtype(dtype) != np.float32 or not isinstance(calibrator, VennAbersCalibrator):
        return
    scores = np.asarray(calibrator.scores_, dtype=np.float64)
    held = scores.astype(np.float32).astype(np.float64) == scores
    if not held.all():
        raise ValueError(
            f"calibrator {type(calibrator).__name__} was fitted on scores float32 does not "
            f"hold ({int((~held).sum())} of {held.size} distinct, e.g. "
            f"{float(scores[~held][0])!r}), and output {output!r} is float32: a row whose score "
            "equals a calibration score in Python would land on another step of the map in "
            "the graph; fit the calibrator on the graph's own float32 scores (run the model "
            "graph on the calibration rows), or export a float64 model graph"
        )
