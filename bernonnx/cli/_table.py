"""The comparison results as a markdown table, CSV text or JSON values."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

_METRICS = (
    "ece",
    "mce",
    "smece",
    "smece_lo",
    "smece_hi",
    "brier",
    "log_loss",
    "auc",
    "fit_seconds",
)
_HEADERS = {
    "ece": "ECE",
    "mce": "MCE",
    "smece": "smECE",
    "smece_lo": "smECE 90% lo",
    "smece_hi": "smECE 90% hi",
    "brier": "Brier",
    "log_loss": "log loss",
    "auc": "AUC",
    "fit_seconds": "fit s",
}


def _format_value(key: str, value) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "n/a"  # a streamed comparison keeps no rows to smooth
    if not math.isfinite(value):
        return "nan"
    return f"{value:.3f}" if key == "fit_seconds" else f"{value:.5f}"


def _table(rows: list[dict], first: Sequence[str] = ("method",)) -> str:
    """A markdown table, columns padded so it also reads well in a terminal."""
    keys = [*first, *_METRICS]
    header = [_HEADERS.get(k, k) for k in keys]
    body = [[_format_value(k, row.get(k)) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(keys))]

    def line(cells):
        padded = [
            c.ljust(w) if i < len(first) else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(
        "-" * (w + 1) + (":" if i >= len(first) else "-") for i, w in enumerate(widths)
    )
    return "\n".join([line(header), rule + "|", *(line(cells) for cells in body)]) + "\n"


def _csv_text(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    keys = ["method", "input", *_METRICS]
    writer.writerow(keys)
    for row in rows:
        writer.writerow(
            [
                "" if k not in row else row[k] if isinstance(row[k], str) else repr(row[k])
                for k in keys
            ]
        )
    return buffer.getvalue()


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
