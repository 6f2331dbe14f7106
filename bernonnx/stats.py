"""Mergeable statistics of calibration data: streaming ``partial_fit`` and fits in pieces.

A statistics object summarises ``(score, label, weight)`` rows seen so far in
bounded (Bernstein) or distinct-score (the baselines) memory. It is updated
chunk by chunk (:meth:`~CalibrationStats.update`), merged (``a + b`` or
:meth:`~CalibrationStats.merge`: the rows of ``a``, then those of ``b``),
saved (:meth:`~CalibrationStats.to_bytes`, :meth:`~CalibrationStats.from_bytes`:
numpy arrays and JSON, no pickle) and turned into a fitted calibrator
(:meth:`~CalibrationStats.fit`). ``partial_fit`` of the calibrators keeps one
in ``stats_`` and refits from it after each chunk.

:func:`stats_for` gives the statistics of a calibrator:

:class:`BernsteinStats` (:class:`~bernonnx.BernsteinCalibrator`)
    Keeps the rows themselves up to :data:`BUFFER_ROWS` rows: until then its
    fit *is* the in-memory fit of the rows seen. Past that, it fixes the
    score transform from the buffered rows (their weighted quantiles, exactly
    as ``fit`` computes them on those rows) and keeps, per fold of the degree
    search and per class, the weight, mean and variance of ``u`` in each of
    ``2^14`` cells of ``[0, 1]``, and for ``loss="squared"`` the
    basis moments at twice the largest candidate degree. Memory: about
    ``5 * 2^15 * n_folds`` floats (7.5 MB at 5 folds), whatever the rows.

    Precision, past the buffer: the degree search sees the same per-fold
    bins as the in-memory search with the same transform, so it picks the
    same degree; the least-squares fit is exact (moments); the log-loss fit
    replaces the rows of a cell by two points at mean +- standard deviation
    (exact for the loss's quadratic part), measured within 1e-6 in
    probability of the in-memory fit with the same transform (tests).
    What differs from ``fit`` on all rows at once: the transform, fitted on
    the first :data:`BUFFER_ROWS` rows instead of all of them.

:class:`ScoreStats` (Platt, isotonic, histogram, Platt-histogram)
    The distinct scores with the weight of each class (as Spark MLlib's
    isotonic regression groups them): the fit is the in-memory fit, exactly
    (weights equal repetition). Memory grows with the number of distinct
    scores, not rows: bounded for tree models and rounded scores, up to the
    rows for continuous ones. (Their fits on Dask, Spark and Parquet sources
    need no such table for Platt: it reads the data in passes.)

Row positions: rows are numbered in the order they arrive; the folds of the
degree search are a hash of that number (:func:`bernonnx._newton.fold_of`),
as in ``fit``.
"""

from __future__ import annotations

import io
import json

import numpy as np
from sklearn.base import clone

from . import _bernstein as bern
from ._newton import (
    FIT_BINS,
    SELECT_BINS,
    Points,
    bin_sums,
    coarsen,
    fold_of,
    points_from_sums,
)
from ._passes import Extremes, ScoreTable, chunk_arrays
from ._transforms import apply_transform, fit_transform_params, rescale, score_exponent
from ._validation import check_scores, single_score

__all__ = ["BUFFER_ROWS", "BernsteinStats", "CalibrationStats", "ScoreStats", "stats_for"]

#: Rows a :class:`BernsteinStats` keeps as they are before it fixes its transform.
BUFFER_ROWS = 1 << 20


def _labels(y, classes: np.ndarray, name: str = "y") -> np.ndarray:
    """0/1 target of ``y`` against two known ``classes``; unknown labels are an error."""
    y = np.asarray(y).reshape(-1)
    target = y == classes[1]
    unknown = ~(target | (y == classes[0]))
    if unknown.any():
        raise ValueError(
            f"{name} has labels outside classes {classes.tolist()!r}, e.g. "
            f"{y[unknown][0]!r}; the classes are fixed by the first update (or classes=)"
        )
    return target.astype(np.float64)


def check_classes(y, classes) -> np.ndarray:
    """The two classes of a stream: ``classes`` if given, else those of the first ``y``."""
    values = np.unique(np.asarray(y).reshape(-1) if classes is None else np.asarray(classes))
    if values.shape[0] != 2:
        where = "classes" if classes is not None else "y of the first chunk"
        raise ValueError(
            f"{where} must hold exactly two classes, got {values.shape[0]} "
            f"({values[:3].tolist()!r}); pass classes=[negative, positive] to the first "
            "partial_fit when a chunk may hold one class only"
        )
    return values


class CalibrationStats:
    """Base class: what :class:`BernsteinStats` and :class:`ScoreStats` share."""

    def __init__(self, calibrator, classes):
        self.calibrator = clone(calibrator)
        self.classes = np.asarray(classes)
        self.rows = 0

    def update(self, scores, y, sample_weight=None):
        """Add rows (1-D scores or one column, labels among ``classes``); returns self."""
        chunk = chunk_arrays(scores, y, sample_weight, self.rows)
        self._update(chunk.s, _labels(chunk.y, self.classes), chunk.w, self.rows)
        self.rows += chunk.s.shape[0]
        return self

    def __add__(self, other: CalibrationStats) -> CalibrationStats:
        return self.merge(other)

    def merge(self, other: CalibrationStats) -> CalibrationStats:
        """Statistics of this object's rows followed by ``other``'s (a new object)."""
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(self).__name__} with {type(other).__name__}")
        if self.calibrator.get_params() != other.calibrator.get_params() or not np.array_equal(
            self.classes, other.classes
        ):
            raise ValueError("merged statistics must come from the same calibrator and classes")
        return self._merge(other)

    def to_bytes(self) -> bytes:
        """Serialised statistics (numpy ``.npz``: arrays and a JSON header, no pickle)."""
        header = {
            "kind": type(self).__name__,
            "calibrator": type(self.calibrator).__name__,
            "params": self.calibrator.get_params(),
            "rows": self.rows,
            **self._header(),
        }
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
            classes=self.classes,
            **self._arrays(),
        )
        return buf.getvalue()

    @staticmethod
    def from_bytes(blob: bytes) -> CalibrationStats:
        """Statistics saved by :meth:`to_bytes`."""
        import bernonnx

        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        header = json.loads(arrays.pop("header").tobytes().decode())
        cls = {c.__name__: c for c in (BernsteinStats, ScoreStats)}[header["kind"]]
        estimator = getattr(bernonnx, header["calibrator"])(**header["params"])
        out = cls(estimator, arrays.pop("classes"))
        out.rows = int(header["rows"])
        out._restore(header, arrays)
        return out

    def fit(self):
        """A fitted calibrator (a clone of the template) from the statistics."""
        if self.rows == 0:
            raise ValueError("the statistics hold no rows yet: update them first")
        return self._fit(clone(self.calibrator))


class ScoreStats(CalibrationStats):
    """Distinct scores and class weights (:class:`bernonnx._passes.ScoreTable`); exact."""

    def __init__(self, calibrator, classes):
        super().__init__(calibrator, classes)
        self.table = ScoreTable(np.empty(0), np.empty(0), np.empty(0))

    def _update(self, s, target, w, start):
        self.table = self.table + ScoreTable.of_rows(s, target, w)

    def _merge(self, other):
        out = ScoreStats(self.calibrator, self.classes)
        out.table, out.rows = self.table + other.table, self.rows + other.rows
        return out

    def _header(self):
        return {}

    def _arrays(self):
        return {"s": self.table.s, "w0": self.table.w0, "w1": self.table.w1}

    def _restore(self, header, arrays):
        self.table = ScoreTable(arrays["s"], arrays["w0"], arrays["w1"])

    def _fit(self, est):
        s, target, w = self.table.rows()
        if not (target.min() < 0.5 < target.max()):
            raise ValueError(f"{type(est).__name__} needs both classes with positive weight")
        return est.fit(s, self.classes[target.astype(np.intp)], w)


class BernsteinStats(CalibrationStats):
    """Statistics of :class:`~bernonnx.BernsteinCalibrator`: see the module docstring."""

    def __init__(self, calibrator, classes):
        super().__init__(calibrator, classes)
        self.buffer: list[tuple] = []  # (s, target, w) chunks, all rows (positions)
        self.buffered = 0
        self.binned = None  # dict of arrays once the transform is fixed

    # ---------------------------------------------------------------- updates

    def _update(self, s, target, w, start):
        if self.binned is None:
            self.buffer.append((s, target, np.ones(s.shape[0]) if w is None else w))
            self.buffered += s.shape[0]
            if self.buffered > BUFFER_ROWS:
                self._fix_transform()
            return
        self._bin(s, target, np.ones(s.shape[0]) if w is None else w, start)

    def _buffer_rows(self):
        if not self.buffer:
            return np.empty(0), np.empty(0), np.empty(0)
        return tuple(np.concatenate(parts) for parts in zip(*self.buffer, strict=True))

    def _fix_transform(self):
        cal = self.calibrator
        s, target, w = self._buffer_rows()
        keep = w > 0
        if not keep.any():
            raise ValueError("the first rows have no positive sample_weight")
        exponent = score_exponent(s[keep])
        params = fit_transform_params(
            cal.score_transform, rescale(s[keep], exponent), w[keep], cal.n_knots
        )
        self._start_bins(exponent, params)

    def _start_bins(self, exponent, params):
        """Empty bins of the transform ``(exponent, params)``; the buffer goes in them."""
        cal = self.calibrator
        top = max(cal._candidate_degrees())
        folds = int(cal.n_folds)
        s, target, w = self._buffer_rows()
        self.binned = {
            "exponent": exponent,
            "params": params,
            "wt": np.zeros((folds, 2 * FIT_BINS)),
            "wu": np.zeros((folds, 2 * FIT_BINS, 1)),
            "wuu": np.zeros((folds, 2 * FIT_BINS)),
            "moments": np.zeros((2 * top + 1, 2)) if cal.loss == "squared" else None,
            "u_range": Extremes(),
            "kept": 0,
        }
        self.buffer, self.buffered = [], 0
        self._bin(s, target, w, 0)

    def _to_u(self, s):
        b = self.binned
        scaled = rescale(s, b["exponent"])
        return apply_transform(self.calibrator.score_transform, scaled, b["params"], False)[0]

    def _bin(self, s, target, w, start):
        b = self.binned
        folds = int(self.calibrator.n_folds)
        keep = w > 0
        fold = fold_of(start, s.shape[0], folds)[keep]
        u, y, w = self._to_u(s[keep]), target[keep], w[keep]
        if u.size == 0:
            return
        wt, wu = bin_sums(Points(u, 1.0 - u, y, w), FIT_BINS, fold, folds)
        wuu = bin_sums(Points(u, 1.0 - u, y, w * u), FIT_BINS, fold, folds)[1][..., 0]
        b["wt"] += wt
        b["wu"] += wu
        b["wuu"] += wuu
        if b["moments"] is not None:
            b["moments"] += bern.moments(u, w, b["moments"].shape[0] - 1, values=y)
        b["u_range"] = b["u_range"] + Extremes(float(u.min()), float(u.max()))
        b["kept"] += int(u.shape[0])

    # ------------------------------------------------------------ merge, save

    def _merge(self, other):
        out = BernsteinStats(self.calibrator, self.classes)
        out.rows = self.rows
        out.buffer, out.buffered = list(self.buffer), self.buffered
        if self.binned is not None:
            out.binned = {k: _copy(v) for k, v in self.binned.items()}
        if other.binned is not None:
            if out.binned is None:
                # this side's rows go into bins of the other's transform
                out._start_bins(other.binned["exponent"], other.binned["params"])
            if not _same_params(out.binned, other.binned):
                raise ValueError(
                    "cannot merge Bernstein statistics whose transforms were fixed from "
                    "different rows; merge them while they still buffer (fewer than "
                    f"BUFFER_ROWS = {BUFFER_ROWS} rows each), or update one object"
                )
            for key in ("wt", "wu", "wuu", "moments"):
                if out.binned[key] is not None:
                    out.binned[key] = out.binned[key] + other.binned[key]
            out.binned["u_range"] = out.binned["u_range"] + other.binned["u_range"]
            out.binned["kept"] += other.binned["kept"]
        # the other's buffered rows come after this side's rows: their positions move
        for s, target, w in other.buffer:
            out._update(s, target, w, out.rows)
            out.rows += s.shape[0]
        out.rows = self.rows + other.rows
        return out

    def _header(self):
        if self.binned is None:
            return {"binned": False}
        b = self.binned
        return {
            "binned": True,
            "exponent": int(b["exponent"]),
            "transform": {k: v for k, v in b["params"].items() if np.ndim(v) == 0},
            "u_range": [b["u_range"].lo, b["u_range"].hi],
            "kept": b["kept"],
        }

    def _arrays(self):
        if self.binned is None:
            s, target, w = self._buffer_rows()
            return {"s": s, "target": target, "w": w}
        b = self.binned
        out = {k: b[k] for k in ("wt", "wu", "wuu")}
        if b["moments"] is not None:
            out["moments"] = b["moments"]
        out.update({f"param_{k}": v for k, v in b["params"].items() if np.ndim(v) > 0})
        return out

    def _restore(self, header, arrays):
        if not header["binned"]:
            self.buffer = [(arrays["s"], arrays["target"], arrays["w"])]
            self.buffered = arrays["s"].shape[0]
            return
        params = dict(header["transform"])
        params.update({k[6:]: v for k, v in arrays.items() if k.startswith("param_")})
        self.binned = {
            "exponent": header["exponent"],
            "params": params,
            "wt": arrays["wt"],
            "wu": arrays["wu"],
            "wuu": arrays["wuu"],
            "moments": arrays.get("moments"),
            "u_range": Extremes(*header["u_range"]),
            "kept": header["kept"],
        }

    # -------------------------------------------------------------------- fit

    def _fit(self, est):
        if self.binned is None:
            s, target, w = self._buffer_rows()
            return est.fit(s, self.classes[target.astype(np.intp)], w)
        b = self.binned
        total = b["wt"].sum(axis=0)
        w_pos = total[1::2].sum()
        if not (w_pos > 0 and total[0::2].sum() > 0):
            raise ValueError("BernsteinCalibrator needs both classes with positive weight")
        est.classes_, est.n_features_in_ = self.classes, 1
        return est._fit_points(b["exponent"], b["params"], _BinnedRows(b), None)


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _same_params(a: dict, b: dict) -> bool:
    if a["exponent"] != b["exponent"] or set(a["params"]) != set(b["params"]):
        return False
    return all(np.array_equal(a["params"][k], b["params"][k]) for k in a["params"])


class _BinnedRows:
    """The binned statistics as the points of the fitting core (see ``_passes.RowPasses``)."""

    def __init__(self, binned: dict):
        self.b = binned
        total = binned["wt"].sum(axis=0)
        self.rate = float(total[1::2].sum() / total.sum())
        self.total = (total, binned["wu"].sum(axis=0), binned["wuu"].sum(axis=0))
        self._quadrature = None

    def __len__(self) -> int:
        return self.b["kept"]

    def u_range(self) -> Extremes:
        return self.b["u_range"]

    def fold_bins(self, n_folds: int):
        return coarsen(self.b["wt"], self.b["wu"], FIT_BINS // SELECT_BINS)

    def bins(self, n_bins: int) -> Points:
        wt, wu, _ = self.total
        wt, wu = coarsen(wt[None], wu[None], FIT_BINS // n_bins)
        return points_from_sums(wt[0], wu[0], True)

    def quadrature(self) -> Points:
        """Two points per cell and class at mean +- standard deviation, half the weight each."""
        if self._quadrature is None:
            wt, wu, wuu = self.total
            keep = wt > 0
            w = wt[keep]
            mean = wu[keep, 0] / w
            sd = np.sqrt(np.maximum(wuu[keep] / w - mean * mean, 0.0))
            u = np.clip(np.concatenate([mean - sd, mean + sd]), 0.0, 1.0)
            y = np.tile((np.flatnonzero(keep) % 2).astype(np.float64), 2)
            self._quadrature = Points(u, 1.0 - u, y, np.concatenate([w, w]) / 2)
        return self._quadrature

    def logistic_terms(self, coef: np.ndarray, hessian: bool):
        q = self.quadrature()
        return bern.logistic_terms(q.u, q.v, q.y, q.w, coef, hessian)

    def squared_terms(self, degree: int):
        m = self.b["moments"]
        top = m.shape[0] - 1
        lowered = bern.elevation_matrix(2 * degree, top) @ m
        gram = bern.gram_from_moments(lowered[:, 0], degree)
        return gram, bern.elevation_matrix(degree, 2 * degree) @ lowered[:, 1]


def stats_for(calibrator, classes) -> CalibrationStats:
    """Empty statistics for ``calibrator`` (its parameters; unfitted) and two ``classes``."""
    from .bernstein import BernsteinCalibrator
    from .histogram import HistogramCalibrator, PlattHistogramCalibrator
    from .isotonic import IsotonicCalibrator
    from .platt import PlattCalibrator

    classes = check_classes(None, classes)
    if isinstance(calibrator, BernsteinCalibrator):
        return BernsteinStats(calibrator, classes)
    table = (PlattCalibrator, IsotonicCalibrator, HistogramCalibrator, PlattHistogramCalibrator)
    if isinstance(calibrator, table):
        return ScoreStats(calibrator, classes)
    raise TypeError(
        f"no streaming statistics for {type(calibrator).__name__}; they exist for "
        "BernsteinCalibrator, PlattCalibrator, IsotonicCalibrator, HistogramCalibrator "
        "and PlattHistogramCalibrator"
    )


class PartialFitMixin:
    """``partial_fit`` from :func:`stats_for` statistics kept in ``stats_``."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a chunk of rows and refit from the statistics of all chunks so far.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Scores of the chunk.
        y : array-like of shape (n_samples,)
            Labels of the chunk.
        classes : array-like of shape (2,), default=None
            The two classes; needed on the first call when its chunk may hold
            one class only (scikit-learn's convention), ignored afterwards.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self

        Notes
        -----
        See :mod:`bernonnx.stats` for what is kept and the precision: the
        statistics live in ``stats_`` (mergeable, serialisable); ``fit``
        starts afresh.
        """
        first = getattr(self, "stats_", None) is None
        # the checks of fit: one score column (the same count as before), y given
        arr, y = check_scores(self, X, reset=first, y=y)
        scores = single_score(self, arr)
        if first:
            self.stats_ = stats_for(self, check_classes(y, classes))
        self.stats_.update(scores, y, sample_weight)
        fitted = self.stats_.fit()
        stats = self.stats_
        for key in list(vars(self)):
            if key.endswith("_") and not key.startswith("__"):
                delattr(self, key)
        for key, value in vars(fitted).items():
            if key.endswith("_") and not key.startswith("__"):
                setattr(self, key, value)
        self.stats_ = stats
        return self
