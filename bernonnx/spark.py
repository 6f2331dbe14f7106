"""Fit and apply calibrators on Spark DataFrames (``pip install "bernonnx[spark]"``).

:func:`fit_calibrator` fits :class:`~bernonnx.BernsteinCalibrator` (or
another calibrator that reads a ``_core.chunks.Source``) on a score column and a
label column, with an optional weight column, as passes over the
DataFrame's partitions (:mod:`bernonnx._core.sources`). Each pass is one Spark
job: ``mapInPandas`` hands every partition to the executors as Arrow
batches, a partition computes one small summary (sums, histograms, a Newton
step's gradient) and sends it back pickled, and the driver adds the
summaries. Nothing big is broadcast: a pass's function closes over what it
needs, such as the current coefficients. The result is an ordinary fitted
calibrator, exported to ONNX as always. :func:`with_probability` adds its
calibrated probability to a DataFrame as a column, in one call.

The fit equals the in-memory fit of the same rows in the same order, that
of ``df.select(score_col, label_col[, weight_col]).toPandas()`` (partitions
in order, rows in order within a partition), to rounding: the degree
search's folds are a hash of each row's position, and a first job counts
each partition's rows to give every row its position. This needs a
DataFrame whose partitions hold the same rows in the same order each time it
is computed (a file scan, a cached DataFrame). Every pass computes the
DataFrame again: ``cache()`` it first when that is expensive and it fits in
the cluster's memory.

Every pass checks that it read what the first did: a partition whose row
count changed since the counting job, or rows whose number, score range or
position-mixed checksums changed since the first pass, raise ``ValueError``
("the data changed between passes"). What no pass can see is an order that
depends on the columns selected: Spark reads only the fit's columns, and
``repartition(n)`` orders rows by their content, all columns of them, before
dealing them out. Measured on 12,000 rows: ``df.repartition(4).sample(0.5)``,
not cached, gave the same rows to every pass and a fit equal to that of
``df.select("score", "label").toPandas()`` (6e-16), but 0.015 away from the
fit on ``df.toPandas()``, whose rows come in another order (other folds,
another degree). ``cache()`` the DataFrame, then both orders are the cached one.

Importing :mod:`bernonnx.spark` does not import pyspark; its functions do.

Example::

    from bernonnx import BernsteinCalibrator
    from bernonnx.spark import fit_calibrator, with_probability

    df = spark.read.parquet("scores.parquet").cache()
    cal = fit_calibrator(df, score_col="score", label_col="label",
                         calibrator=BernsteinCalibrator(degree="auto"))
    scored = with_probability(df, cal, score_col="score")   # adds "probability"
"""

# No ``from __future__ import annotations``: pandas_udf reads its function's type
# hints as objects, and pandas is imported only where the udf is made.
import pickle
from typing import Any

import numpy as np
from sklearn.base import clone

from ._core.chunks import Adder, add_all
from ._core.sources import CHUNK_ROWS, Fingerprint, PassCheck, chunk_arrays

__all__ = ["SparkSource", "fit_calibrator", "with_probability"]

#: Column of the pickled per-partition results.
_PART = "part"


def _require():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
        from pyspark.sql import types as T
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'fitting on Spark DataFrames needs pyspark: pip install "bernonnx[spark]"'
        ) from exc
    return F, T


def _check_column(df, name, argument: str, *, numeric: bool) -> None:
    """``ValueError`` naming ``argument`` unless ``df`` has a (numeric) column ``name``."""
    _, T = _require()
    if not isinstance(name, str):
        raise ValueError(f"{argument} must be a column name (str); got {name!r}")
    fields = {f.name: f.dataType for f in df.schema.fields}
    if name not in fields:
        raise ValueError(
            f"{argument}={name!r} is not a column of the DataFrame; its columns are "
            f"{sorted(fields)}"
        )
    kind = fields[name]
    allowed = (T.NumericType,) if numeric else (T.NumericType, T.BooleanType, T.StringType)
    if not isinstance(kind, allowed):
        expected = "a numeric column" if numeric else "a numeric, boolean or string column"
        raise ValueError(f"{argument}={name!r} must be {expected}; it is {kind.simpleString()}")


def _col(name: str):
    """The column named ``name`` exactly (a dot in a name is not a struct field)."""
    F, _ = _require()
    return F.col("`" + name.replace("`", "``") + "`")


def _partition_id() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


class _Detached:
    """What a :class:`SparkSource` becomes when a pass's function, closing over
    it, is pickled into a Spark task: the executors never read the source."""


def _detached() -> _Detached:
    return _Detached()


class SparkSource:
    """The partitions of a Spark DataFrame as a ``_core.chunks.Source``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows.
    score_col, label_col : str
        The numeric score column and the label column (two values: numbers,
        booleans or strings).
    weight_col : str, default=None
        A numeric column of non-negative sample weights.
    chunk_rows : int, default=``_core.sources.CHUNK_ROWS``
        Rows per call of a pass's function: a partition's Arrow batches are
        gathered up to this many rows (Spark's batches hold 10 000 rows by
        default, too few to pay for the per-call work of a pass).

    Notes
    -----
    Construction runs one Spark job: it counts each partition's rows (each
    row's position is its partition's offset plus its place in the
    partition) and checks the columns' values (no nulls, finite scores,
    finite non-negative weights), raising ``ValueError`` naming the column.
    """

    def __init__(
        self,
        df,
        score_col: str,
        label_col: str,
        weight_col: str | None = None,
        *,
        chunk_rows: int = CHUNK_ROWS,
    ):
        _require()
        _check_column(df, score_col, "score_col", numeric=True)
        _check_column(df, label_col, "label_col", numeric=False)
        names = {"score_col": score_col, "label_col": label_col}
        columns = [_col(score_col).cast("double").alias("s"), _col(label_col).alias("y")]
        if weight_col is not None:
            _check_column(df, weight_col, "weight_col", numeric=True)
            names["weight_col"] = weight_col
            columns.append(_col(weight_col).cast("double").alias("w"))
        self.rows = df.select(*columns)
        self.names = names
        self.weighted = weight_col is not None
        self.chunk_rows = int(chunk_rows)
        #: Spark jobs run so far (construction's counting job included)
        self.jobs = 0
        counts = self._run(_count_and_check)
        errors = {} if counts is None else counts.errors()
        for argument in errors:
            if counts.nulls.get(argument):
                # pandas shows Spark's null and NaN alike: ask Spark which they are
                errors[argument] = self._missing(argument, counts.nulls[argument])
        for argument, problem in sorted(errors.items()):
            raise ValueError(f"{argument}={names[argument]!r} {problem}")
        rows = {} if counts is None else counts.rows
        #: partition id -> rows, which every pass must read again
        self.partition_rows = {pid: n for pid, n in rows.items() if n}
        self.check = PassCheck(
            "cache() the DataFrame first (or write it out and read it back), and build "
            "it without unseeded randomness or a non-deterministic order"
        )
        #: partition id -> position of its first row
        self.starts = {}
        offset = 0
        for pid in sorted(rows):
            self.starts[pid] = offset
            offset += rows[pid]
        #: rows of the DataFrame
        self.n_rows = offset

    def __reduce__(self):
        return _detached, ()

    def _missing(self, argument: str, count: int) -> str:
        """What the ``count`` missing values of ``argument``'s column are: Spark's nulls,
        NaN, or both (one more Spark job, on the error path only)."""
        F, T = _require()
        column = {"score_col": "s", "label_col": "y", "weight_col": "w"}[argument]
        if not isinstance(self.rows.schema[column].dataType, T.FloatType | T.DoubleType):
            return f"has {count} null values; drop or fill them first"
        row = self.rows.select(
            F.sum(F.col(column).isNull().cast("long")).alias("nulls"),
            F.sum(F.isnan(F.col(column)).cast("long")).alias("nans"),
        ).first()
        nulls, nans = int(row["nulls"] or 0), int(row["nans"] or 0)
        if nans == 0 and nulls:
            return f"has {nulls} null values; drop or fill them first"
        need = {
            "score_col": "calibrators need finite scores",
            "label_col": "every row needs a label",
            "weight_col": "weights must be finite",
        }[argument]
        found = f"{nulls} null values and {nans} NaN values" if nulls else f"{nans} NaN values"
        return f"has {found}; {need}: drop or fill them first"

    def _run(self, per_partition):
        """One Spark job: ``per_partition(batches)`` on every partition, pickled back and added."""
        _, T = _require()
        schema = T.StructType([T.StructField(_PART, T.BinaryType(), False)])

        def run(batches):
            import pandas as pd

            out = per_partition(batches)
            if out is not None:
                yield pd.DataFrame({_PART: [pickle.dumps(out, pickle.HIGHEST_PROTOCOL)]})

        self.jobs += 1
        parts = [pickle.loads(row[_PART]) for row in self.rows.mapInPandas(run, schema).collect()]
        failures = [part for part in parts if isinstance(part, _Failure)]
        return failures[0] if failures else add_all(parts)

    def reduce(self, fn):
        """``fn(chunk)`` of every chunk of every partition, added on the driver.

        Raises ``ValueError`` when a partition holds other rows than the counting
        job found, or the rows differ from the first pass's
        (:class:`~bernonnx._core.sources.PassCheck`): data Spark computes differently
        each time would otherwise give a fit of no particular rows.
        """
        starts, weighted, chunk_rows = self.starts, self.weighted, self.chunk_rows

        def per_partition(batches):
            pid = _partition_id()
            first = start = starts.get(pid, 0)
            adder = Adder()
            try:
                for frame in _gather(batches, chunk_rows):
                    w = frame["w"] if weighted else None
                    chunk = chunk_arrays(frame["s"], frame["y"], w, start)
                    adder.push((fn(chunk), Fingerprint.of(chunk)))
                    start += len(frame)
            except ValueError as exc:
                # data errors come back to the driver as themselves, not as a
                # PythonException wrapping their text
                return _Failure(exc)
            total = adder.total()
            if total is None:
                return None
            return (*total, _PartitionRows({pid: start - first}))

        out = self._run(per_partition)
        if isinstance(out, _Failure):
            raise out.error
        total, fingerprint, rows = (None, None, _PartitionRows({})) if out is None else out
        if rows.rows != self.partition_rows:
            changed = sorted(
                pid
                for pid in {*rows.rows, *self.partition_rows}
                if rows.rows.get(pid) != self.partition_rows.get(pid)
            )
            pid = changed[0]
            raise ValueError(
                f"the data changed between passes: partition {pid} held "
                f"{self.partition_rows.get(pid, 0):,} rows when they were counted and "
                f"{rows.rows.get(pid, 0):,} in pass {self.check.passes + 1} "
                f"({sum(self.partition_rows.values()):,} rows in all, then "
                f"{sum(rows.rows.values()):,}). A fit reads its data once per pass and "
                f"needs the same rows in the same order each time: {self.check.engine_hint}"
            )
        self.check(fingerprint)
        return total


class _PartitionRows:
    """Rows each partition held in a pass; adds by joining (a partition reports once)."""

    def __init__(self, rows: dict):
        self.rows = rows

    def __add__(self, other: "_PartitionRows") -> "_PartitionRows":
        return _PartitionRows({**self.rows, **other.rows})


def _gather(batches, chunk_rows: int):
    """The non-empty pandas frames of ``batches`` joined into frames of at least
    ``chunk_rows`` rows (the last one fewer), in order."""
    import pandas as pd

    held, size = [], 0
    for frame in batches:
        if len(frame) == 0:
            continue
        held.append(frame)
        size += len(frame)
        if size >= chunk_rows:
            yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)
            held, size = [], 0
    if held:
        yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)


class _Failure:
    """A ``ValueError`` raised on an executor, sent back in place of a result."""

    def __init__(self, error: ValueError):
        self.error = error


class _Counts:
    """Rows per partition, nulls per column, and what else is wrong with the values."""

    def __init__(self, rows: dict, nulls: dict, problems: dict):
        self.rows, self.nulls, self.problems = rows, nulls, problems

    def __add__(self, other: "_Counts") -> "_Counts":
        nulls = {
            k: self.nulls.get(k, 0) + other.nulls.get(k, 0) for k in {*self.nulls, *other.nulls}
        }
        return _Counts({**self.rows, **other.rows}, nulls, {**other.problems, **self.problems})

    def errors(self) -> dict:
        """Argument name -> what is wrong with its column."""
        out = dict(self.problems)
        for argument, count in self.nulls.items():
            if count:
                out[argument] = f"has {count} null values; drop or fill them first"
        return out


_ARGUMENTS = {"s": "score_col", "y": "label_col", "w": "weight_col"}


def _count_and_check(batches) -> "_Counts | None":
    rows, problems = 0, {}
    nulls = dict.fromkeys(_ARGUMENTS.values(), 0)
    for frame in batches:
        rows += len(frame)
        for column in frame.columns:
            nulls[_ARGUMENTS[column]] += int(frame[column].isna().sum())
        # NaN is missing to pandas (counted above with the nulls): inf is left
        s = frame["s"].to_numpy(dtype=np.float64, na_value=0.0)
        if not np.isfinite(s).all():
            problems["score_col"] = "contains inf; calibrators need finite scores"
        if "w" in frame.columns:
            w = frame["w"].to_numpy(dtype=np.float64, na_value=0.0)
            if not np.isfinite(w).all():
                problems["weight_col"] = "contains inf; weights must be finite"
            elif (w < 0).any():
                problems["weight_col"] = "has negative values; weights must be >= 0"
    if rows == 0:
        return None
    return _Counts({_partition_id(): rows}, nulls, problems)


def fit_calibrator(
    df,
    score_col: str = "score",
    label_col: str = "label",
    weight_col: str | None = None,
    calibrator: Any = None,
):
    """Fit a calibrator on a Spark DataFrame's score and label columns.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows (one score, one label and optionally one weight per row).
    score_col : str, default="score"
        Numeric column of uncalibrated scores (decision values, log-odds or
        probabilities).
    label_col : str, default="label"
        Column of the two class labels (numbers, booleans or strings).
    weight_col : str, default=None
        Numeric column of non-negative sample weights; weight ``k`` equals
        ``k`` repeated rows.
    calibrator : estimator, default=None
        An unfitted calibrator to clone, :class:`~bernonnx.BernsteinCalibrator`
        by default; any calibrator with ``_fit_source`` (see
        :mod:`bernonnx._core.sources`).

    Returns
    -------
    calibrator
        A fitted clone of ``calibrator``: an ordinary calibrator, equal to
        its in-memory fit on ``df.select(score_col, label_col[,
        weight_col]).toPandas()`` to rounding, and exported with
        :func:`bernonnx.to_onnx` as always. That is ``df.toPandas()``'s order
        too when ``df`` is cached or read from files; see the module notes.

    Raises
    ------
    ValueError
        A missing or non-numeric column, null or NaN values (told apart), inf,
        negative weights, a single class, or data that changed between the
        passes (the module notes say when they can).
    """
    if calibrator is None:
        from .calibrators.bernstein import BernsteinCalibrator

        calibrator = BernsteinCalibrator()
    if not hasattr(calibrator, "_fit_source"):
        raise ValueError(
            f"calibrator must be a calibrator that fits in passes over chunks of rows; "
            f"{type(calibrator).__name__} does not (it has no _fit_source)"
        )
    estimator = clone(calibrator)
    estimator._validate_params()
    source = SparkSource(df, score_col, label_col, weight_col)
    return estimator._fit_source(source)


def with_probability(df, calibrator, score_col: str = "score", output_col: str = "probability"):
    """``df`` with a column of ``calibrator``'s positive-class probability of ``score_col``.

    A ``pandas_udf`` runs the fitted calibrator's ``predict_proba`` on the
    executors, batch by batch: the column equals ``predict_proba`` of the
    scores in memory (a float column is read as float32, as ``predict_proba``
    reads float32 input; other numeric columns as float64). A null score
    gives a null probability.
    """
    F, T = _require()
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(calibrator)
    _check_column(df, score_col, "score_col", numeric=True)
    if not isinstance(output_col, str):
        raise ValueError(f"output_col must be a column name (str); got {output_col!r}")
    single = isinstance(df.schema[score_col].dataType, T.FloatType)

    import pandas as pd

    @F.pandas_udf(T.DoubleType())
    def probability(scores: pd.Series) -> pd.Series:
        dtype = np.float32 if single else np.float64
        present = scores.notna().to_numpy()
        out = np.full(present.shape[0], np.nan)
        if present.any():
            values = scores[present].to_numpy(dtype=dtype)
            out[present] = calibrator.predict_proba(values)[:, 1]
        # NaN becomes null on the way back to Spark
        return pd.Series(out, index=scores.index)

    return df.withColumn(output_col, probability(_col(score_col)))
