"""Fit and apply calibrators on Dask collections (``pip install "bernonnx[dask]"``).

``fit`` of :class:`~bernonnx.BernsteinCalibrator`,
:class:`~bernonnx.PlattCalibrator`, :class:`~bernonnx.IsotonicCalibrator`
and :class:`~bernonnx.HistogramCalibrator` accepts Dask arrays, series and
one-column dataframes for the scores, labels and weights. The fit runs as
passes over the partitions (:mod:`bernonnx._core.sources`): each pass computes a
small summary per partition on the workers (sums, histograms, a Newton
step's gradient) and adds them on the client. It uses the current
``distributed`` client when there is one (``dask.compute``'s default), else
Dask's default scheduler, and returns an ordinary fitted calibrator,
exported as always.

The fit equals the in-memory fit of the same rows, in the same order
(``numpy.concatenate`` of the partitions), to rounding: both read the same
quantiles, the same folds (a hash of the row's position) and the same
sums. Each pass reads the collection again; ``persist()`` it first when it
is expensive to compute and fits in the cluster's memory. Read Parquet with
``dd.read_parquet(path, split_row_groups=True)``: by default a file of many
row groups may become one partition, and one worker then does all the work.

Example::

    import dask.array as da
    from distributed import Client
    from bernonnx import BernsteinCalibrator
    from bernonnx.dask import predict_proba

    client = Client(n_workers=2)
    s = da.from_array(scores, chunks=1_000_000)
    y = da.from_array(labels, chunks=1_000_000)
    cal = BernsteinCalibrator().fit(s, y)       # a plain fitted calibrator
    p = predict_proba(cal, s)                   # a Dask array, computed lazily
"""

from __future__ import annotations

import numpy as np

from ._core.chunks import add_all
from ._core.sources import Fingerprint, PassCheck, chunk_arrays

__all__ = ["dask_source", "predict_proba"]


def _require():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'fitting on Dask collections needs dask: pip install "bernonnx[dask]"'
        ) from exc
    return dask, da


def _one_column(x, name: str):
    """A Dask dataframe's only column (a series); other collections as they are."""
    if getattr(x, "ndim", 1) == 2 and hasattr(x, "columns"):
        if len(x.columns) != 1:
            raise ValueError(
                f"{name} must be one column; got a dataframe of {len(x.columns)} columns "
                f"({', '.join(map(repr, list(x.columns)[:5]))}): select the score column"
            )
        x = x[x.columns[0]]
    return x


def _as_array(x, name: str):
    """A 1-D Dask array of a Dask array, series or one-column dataframe."""
    _, da = _require()
    if hasattr(x, "to_dask_array"):
        x = _one_column(x, name).to_dask_array(lengths=True)
    elif not isinstance(x, da.Array):
        x = da.asarray(np.asarray(x))
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D or one column; got shape {x.shape}")
    return x


class DaskSource:
    """The partitions of Dask scores, labels and weights as a ``_core.chunks.Source``."""

    def __init__(self, X, y, sample_weight=None):
        if y is None:
            raise ValueError("y is required to fit a calibrator")
        s = _as_array(X, "X")
        chunks = s.chunks[0]
        if any(np.isnan(c) for c in chunks):
            raise ValueError("X has unknown chunk sizes; call compute_chunk_sizes() first")
        y = _as_array(y, "y")
        if y.shape[0] != s.shape[0]:
            raise ValueError(f"X has {s.shape[0]} rows but y has {y.shape[0]}")
        y = y.rechunk((chunks,))
        parts = [s.to_delayed(), y.to_delayed()]
        if sample_weight is not None:
            w = _as_array(sample_weight, "sample_weight")
            if w.shape[0] != s.shape[0]:
                raise ValueError(f"X has {s.shape[0]} rows but sample_weight has {w.shape[0]}")
            parts.append(w.rechunk((chunks,)).to_delayed())
        starts = np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(np.int64).tolist()
        # empty partitions (a filter's leftovers) hold no rows: no task reads them
        kept = [i for i, size in enumerate(chunks) if size > 0]
        blocks = list(zip(*parts, strict=True))
        self.blocks = [blocks[i] for i in kept]
        self.starts = [starts[i] for i in kept]
        self.weighted = sample_weight is not None
        self.check = PassCheck(
            "persist() the collection first, and build it without unseeded randomness"
        )

    def reduce(self, fn):
        """``fn`` of every partition's chunk, added; ``ValueError`` when the rows differ
        from those of the first pass (:class:`~bernonnx._core.sources.PassCheck`)."""
        dask, _ = _require()
        weighted = self.weighted

        def run(s, y, *rest, start):
            chunk = chunk_arrays(s, y, rest[0] if weighted else None, start)
            return fn(chunk), Fingerprint.of(chunk)

        tasks = [
            dask.delayed(run)(*block, start=start)
            for block, start in zip(self.blocks, self.starts, strict=True)
        ]
        out = add_all(dask.compute(*tasks))
        total, fingerprint = (None, None) if out is None else out
        self.check(fingerprint)
        return total


def dask_source(X, y, sample_weight=None) -> DaskSource:
    """A ``_core.chunks.Source`` over Dask scores ``X``, labels ``y`` and weights."""
    return DaskSource(X, y, sample_weight)


def predict_proba(calibrator, X):
    """Positive-class probabilities of a fitted calibrator on Dask scores, lazily.

    A Dask array of ``X``'s chunks (``map_blocks``), or for a Dask series or
    one-column dataframe a series (``map_partitions``): each block runs the
    calibrator's ``predict_proba`` where the block lives. ``X`` must be one
    column, as for ``fit``: a dataframe of several columns is refused.
    """
    _, da = _require()
    from ._core.sources import _floats

    def positive(block):
        values = _floats(block, "X")  # pd.NA -> NaN: predict_proba's ValueError names it
        return calibrator.predict_proba(values)[:, 1]

    if hasattr(X, "map_partitions"):
        import pandas as pd

        X = _one_column(X, "X")

        def series(part):
            return pd.Series(positive(part), index=part.index, name="probability")

        return X.map_partitions(series, meta=("probability", "f8"))
    x = _as_array(X, "X")
    return x.map_blocks(positive, dtype=np.float64)
