"""Values scikit-learn refuses but a graph would answer: NaN and infinities.

Most scikit-learn steps refuse NaN or infinite input (``Input X contains infinity``);
a graph cannot raise, so it would return a number where Python returns none. At
export, :func:`refused_values` asks the model itself, one numeric column at a time: the
first row of ``X_sample`` with that column set to NaN, +inf or -inf. What Python
refuses is recorded in the graph's metadata (``python_refuses``), and
:func:`bernonnx.export.onnx_inputs` refuses those values in those columns with a
``ValueError``, so Python and the graph agree on every input either accepts.
"""

from __future__ import annotations

import json
import warnings

import numpy as np

__all__ = ["REFUSED", "check_refused", "refused_values"]

#: metadata key: {column (name, or position of an array): ["nan", "inf", "-inf"]}
REFUSED = "python_refuses"
_VALUES = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}
#: wider samples are probed all columns at once (one refusal then covers them all)
_MAX_PROBED = 64


def _accepts(model, row) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.predict_proba(row)
        except Exception:  # noqa: BLE001 - any refusal of Python's is one
            return False
    return True


def refused_values(model, X_sample, numeric_columns: list) -> dict[str, list[str]]:
    """``{str(column): [values Python refuses there]}`` for the numeric columns of a
    DataFrame (names) or of an array (positions); empty when the first row itself is
    refused (nothing to learn from it)."""
    frame = hasattr(X_sample, "columns") and hasattr(X_sample, "dtypes")
    if frame:
        base = X_sample.iloc[:1].copy()
    else:
        base = np.array(X_sample, dtype=np.float64, copy=True)[:1]
        if base.ndim != 2:
            return {}
        numeric_columns = list(range(base.shape[1]))
    if not numeric_columns or not _accepts(model, base):
        return {}
    groups = (
        [[c] for c in numeric_columns]
        if len(numeric_columns) <= _MAX_PROBED
        else [list(numeric_columns)]
    )
    out: dict[str, list[str]] = {}
    for group in groups:
        for token, value in _VALUES.items():
            row = base.copy()
            try:
                for column in group:
                    if frame:
                        row[column] = np.array([value], dtype=np.float64)
                    else:
                        row[0, column] = value
            except (TypeError, ValueError):  # a categorical without that category
                continue
            if not _accepts(model, row):
                for column in group:
                    out.setdefault(str(column), []).append(token)
    return out


def check_refused(refused: dict, column: str, values: np.ndarray) -> None:
    """``ValueError`` when ``values`` (float) hold a value Python refuses in ``column``."""
    for token in refused.get(column, []):
        value = _VALUES[token]
        hit = np.isnan(values) if token == "nan" else values == value
        if np.any(hit):
            row = int(np.flatnonzero(np.ravel(hit))[0])
            raise ValueError(
                f"X column {column!r} holds {token} (row {row}), which the model refuses in "
                "Python; the graph would answer anyway, so it is not fed: clean the value "
                "(impute, clip) as the model expects"
            )


def read_refused(onnx_model) -> dict:
    for prop in onnx_model.metadata_props:
        if prop.key == REFUSED:
            try:
                value = json.loads(prop.value)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise ValueError(f"the graph's metadata {REFUSED!r} must be a JSON object")
            return value
    return {}
