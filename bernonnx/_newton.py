"""The one fitting core of the Bernstein calibrators: binning, projected Newton, degree choice.

:class:`bernonnx.BernsteinCalibrator` (one score) and
:class:`bernonnx.MultivariateBernsteinCalibrator` (``M`` scores) fit the same
way; only two things differ, and both are passed in:

* the **basis** (:class:`Basis`): how the polynomial and the loss terms are
  evaluated on points in ``[0, 1]^M``: :data:`CURVE` (1-D, over
  :mod:`bernonnx._core.basis`) or :data:`TENSOR` (over :mod:`bernonnx._core.tensor`);
* the **feasible set** (:class:`FeasibleSet`): the monotone coefficients and
  their QP, :class:`bernonnx._core.qp.Chain` or :class:`bernonnx._core.qp.Lattice`.

A fit reads the data only as :class:`Points`: weighted, labelled points.
Those are either the rows themselves or the bins of :func:`compress` (per
cell and class, the weighted mean point and the total weight); either way
they are the sufficient statistics of the fit, and a fit of binned points is
the same code as a fit of rows.

* ``loss="squared"``: one pass for the quadratic terms, one QP (:func:`fit_squared`).
* ``loss="log"``: projected Newton (:func:`newton`): each step minimises the
  local quadratic model over the feasible set (one QP), then backtracks on the
  exact loss; above :data:`COMPRESS_ABOVE` rows it first converges on
  :data:`COARSE_BINS`, then :data:`FIT_BINS` bins, then polishes on the rows
  with the Hessian of the bins (:func:`fit_log`).
* degree choice: k-fold log loss of every candidate on binned folds
  (:func:`select_degree`); the least mean loss (1-D) or the smallest degree
  within one standard error of the best (tensor products).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from numbers import Real
from typing import Protocol

import numpy as np
from scipy.special import expit, logit
from threadpoolctl import ThreadpoolController

from ._core import basis as bern
from ._core import tensor
from ._core.transforms import TRANSFORMS
from ._validation import Interval, IntInterval, StrOptions

#: Highest degree accepted. The float32 ONNX graph keeps C(d, k) finite up
#: to d = 131; 100 leaves room and is far above any degree CV picks.
MAX_DEGREE = 100
#: Most folds of a degree search. Each fold fits every candidate degree, so
#: the cost grows with the folds; ``n_folds=10**6`` used to become
#: leave-one-out (39 s on 500 rows) instead of an error.
MAX_FOLDS = 20
#: Candidate degrees of the 1-D ``degree="auto"``.
AUTO_DEGREES = (2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)
#: Above this many rows the log-loss fit first solves on binned data, then
#: polishes with exact passes over all rows.
COMPRESS_ABOVE = 1 << 15
#: Bins of that first solve.
FIT_BINS = 1 << 14
COARSE_BINS = 1 << 10
#: From this many rows up to ``COMPRESS_ABOVE``, a cold 1-D log-loss fit takes its first
#: steps on ``COARSE_BINS`` bins, then polishes on the rows: on the 12,330 rows of a
#: real data set at degree 20, its 11 steps on the rows took 22 ms (isotonic: 2.5 ms).
COARSE_ABOVE = 1 << 12
#: Bins of each fold in the degree search, one score. A bin keeps its points'
#: weight and mean, so the fold losses move by the square of the bin width: at
#: 256 against 4,096 bins, by at most 5e-5 relative in the quality study's 144
#: fits (3,000 to 10,000 rows; the candidates differ in the third digit), and no
#: degree chosen there or on the benchmark's data changes. The search's cost is that
#: of the bins, not of the rows.
SELECT_BINS = 1 << 8
#: The same for tensor products (cells of the grid over ``[0, 1]^M``).
TENSOR_SELECT_BINS = 1 << 12
#: Fitted parameters of the score transforms (``<key>_`` attributes).
TRANSFORM_KEYS = ("shift", "scale", "scale_below", "knots", "levels")
#: Fitted attributes that only some fits set (degree search, transform parameters):
#: a refit deletes those of the previous fit, so none is stale.
FITTED_OPTIONAL = ("cv_degrees_", "cv_log_loss_") + tuple(k + "_" for k in TRANSFORM_KEYS)
#: Newton stops when the predicted decrease of the loss is below this
#: fraction of it, or after ``NEWTON_MAX_ITER`` steps.
NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 100
#: The same for the fits a degree search compares: validation losses of
#: candidates differ in the fourth digit, not the twelfth.
SELECT_TOL = 1e-9
#: Newton steps from the fit on all folds that stand for a fold's log-loss fit
#: in the 1-D degree search (:func:`select_degree_by_steps`).
FOLD_STEPS = 2
#: Base rates are clipped here before their log-odds start a log-loss fit.
_RATE_CLIP = 1e-6

#: Parameters shared by the Bernstein calibrators (their ``_parameter_constraints``).
PARAMETER_CONSTRAINTS: dict = {
    "degree": [
        IntInterval(1, MAX_DEGREE, closed="both"),
        StrOptions({"auto"}),
        list,
        tuple,
        np.ndarray,
    ],
    "loss": [StrOptions({"log", "squared"})],
    "score_transform": [StrOptions(set(TRANSFORMS))],
    "n_knots": [IntInterval(2, None, closed="left")],
    "logit_bound": [Interval(Real, 0, None, closed="neither")],
    "n_folds": [IntInterval(2, MAX_FOLDS, closed="both")],
    "min_slope": [Interval(Real, 0, 0.5, closed="left")],
}


# --------------------------------------------------------------------------
# the statistics a fit reads
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Points:
    """Weighted labelled points: the rows of the data, or their bins.

    ``u`` has shape ``(n,)`` (one score) or ``(n, M)``; ``v = 1 - u``, more
    accurate where the transform knows it; ``y`` in ``{0, 1}``; ``w >= 0``.
    """

    u: np.ndarray
    v: np.ndarray
    y: np.ndarray
    w: np.ndarray

    def __len__(self) -> int:
        return self.u.shape[0]

    def take(self, rows: np.ndarray) -> Points:
        return Points(self.u[rows], self.v[rows], self.y[rows], self.w[rows])


def fold_of(start: int, n: int, n_folds: int) -> np.ndarray:
    """Fold of the rows at positions ``start, ..., start + n - 1``: a hash of the position.

    The fold rule of the degree search. It reads nothing but a row's position
    in the data, so a chunk of rows (a partial_fit call, a Dask or Spark
    partition) knows its rows' folds from its offset alone, with no sort and
    no other chunk: every engine forms the same folds as the in-memory fit.
    The hash (splitmix64's finaliser) spreads any order of the rows, sorted by
    score or by label, evenly over the folds.
    """
    x = position_hash(np.arange(start, start + n, dtype=np.uint64), 0x9E3779B97F4A7C15)
    return (x % np.uint64(n_folds)).astype(np.int64)


def position_hash(positions: np.ndarray, offset: int) -> np.ndarray:
    """splitmix64's finaliser of ``positions + offset``: uint64, well spread.

    The folds of the degree search (:func:`fold_of`) and the command line's
    held-out rows of a streamed file hash row positions with it.
    """
    x = np.asarray(positions).astype(np.uint64)
    with np.errstate(over="ignore"):
        x += np.uint64(offset % (1 << 64))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def cells_per_axis(n_bins: int, m_axes: int) -> int:
    """Intervals per column of the grid of :func:`bin_sums`: ``round(n_bins^(1/M))``, >= 2."""
    return max(2, int(round(n_bins ** (1.0 / m_axes))))


def bin_sums(points: Points, n_bins: int, groups=None, n_groups: int = 1):
    """Per-(group, cell, class) sums of ``w`` and ``w u``: the mergeable form of :func:`compress`.

    Returns ``(wt, wu)`` of shapes ``(n_groups, 2 C)`` and ``(n_groups, 2 C,
    M)``, ``C`` cells, class in the last bit of the index. Sums of two sets
    of rows are the sums of the rows together, so bins merge by addition;
    ``groups`` (ints below ``n_groups``, one per row) are the folds.
    """
    u, y, w = points.u, points.y, points.w
    cols = u.reshape(u.shape[0], -1)
    m_axes = cols.shape[1]
    per = cells_per_axis(n_bins, m_axes)
    idx = np.zeros(u.shape[0], dtype=np.int64)
    scaled = np.empty(u.shape[0])
    for m in range(m_axes):
        idx *= per
        np.multiply(cols[:, m], per, out=scaled)
        idx += np.minimum(scaled, per - 1, out=scaled).astype(np.int64)  # floor: u >= 0
    size = 2 * per**m_axes
    idx *= 2
    idx += y > 0.5
    if groups is not None:
        idx += size * np.asarray(groups, dtype=np.int64)
    total = size * n_groups
    # unit weights (no sample_weight): counts and sums of u, the same floats as
    # sums of 1.0 and of 1.0 * u, without a weighted pass
    unit = bool(np.all(w == 1.0))
    if unit:
        wt = np.bincount(idx, minlength=total).astype(np.float64)
    else:
        wt = np.bincount(idx, weights=w, minlength=total)
    wu = np.stack(
        [
            np.bincount(idx, weights=cols[:, m] if unit else w * cols[:, m], minlength=total)
            for m in range(m_axes)
        ],
        axis=-1,
    ).reshape(n_groups, size, m_axes)
    return wt.reshape(n_groups, size), wu


def coarsen(wt: np.ndarray, wu: np.ndarray, factor: int):
    """Sums of :func:`bin_sums` on a grid ``factor`` times coarser per axis (1-D grids only).

    Exact: ``floor(u * per / f) = floor(floor(u * per) / f)`` for a power-of-two
    ``per`` and ``f``, so the coarse sums are those of ``bin_sums`` at ``per / f``.
    """
    n_groups, size = wt.shape
    shape = (n_groups, size // (2 * factor), factor, 2)
    return wt.reshape(shape).sum(axis=2).reshape(n_groups, -1), wu.reshape(
        *shape, wu.shape[-1]
    ).sum(axis=2).reshape(n_groups, -1, wu.shape[-1])


def points_from_sums(wt: np.ndarray, wu: np.ndarray, one_score: bool) -> Points:
    """The bins of summed ``wt`` (shape ``(2 C,)``) and ``wu`` as points: weighted means."""
    keep = wt > 0
    means = wu[keep] / wt[keep, None]
    if one_score:
        means = means[:, 0]
    return Points(means, 1.0 - means, (np.flatnonzero(keep) % 2).astype(np.float64), wt[keep])


def compress(points: Points, n_bins: int) -> Points:
    """Per-(cell, class) weighted means of ``u`` on a grid of about ``n_bins`` cells.

    Each column of ``[0, 1]^M`` is cut into ``round(n_bins^(1/M))`` equal
    intervals (``n_bins`` of them for one score); at most ``2 n_bins`` points
    come out, weights summed. The mean point of a bin keeps the bin's first
    moment, so a fit on bins differs from the fit on rows by the spread of
    the points inside a bin only.
    """
    wt, wu = bin_sums(points, n_bins)
    return points_from_sums(wt[0], wu[0], points.u.ndim == 1)


# --------------------------------------------------------------------------
# what the core is written over
# --------------------------------------------------------------------------


class FeasibleSet(Protocol):
    """Monotone coefficients in a box (:mod:`bernonnx._core.qp`); ``x`` flattened in C order."""

    shape: tuple[int, ...]
    lo: float
    hi: float

    def project(self, x: np.ndarray) -> np.ndarray:
        """A feasible point near ``x`` (flat)."""

    def qp(self, h: np.ndarray, q: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Minimiser (flat) of ``1/2 x^T h x + q^T x`` over the set; ``x0`` a nearby point."""


class Basis(Protocol):
    """A Bernstein basis on points of ``[0, 1]^M``; ``coef`` has the feasible set's shape."""

    #: Whether ``logistic_terms`` without ``hessian`` returns the gradient too.
    gradient_with_loss: bool

    def eta(self, u: np.ndarray, v: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """The polynomial of ``coef`` at the points."""

    def squared_terms(self, points: Points, shape) -> tuple[np.ndarray, np.ndarray]:
        """``(G, r)``: the squared loss is ``c^T G c - 2 r^T c`` plus a constant."""

    def logistic_terms(self, points: Points, coef: np.ndarray, hessian: bool):
        """Log loss, its gradient (flat) and Hessian; without ``hessian`` the loss at least."""

    def elevate(self, coef: np.ndarray, shape) -> np.ndarray:
        """The same polynomial with coefficients of (larger) ``shape``."""


class _Curve:
    """The 1-D basis (:mod:`bernonnx._core.basis`); loss terms are sums over the points."""

    gradient_with_loss = True

    def eta(self, u, v, coef):
        return bern.bernstein_eval(u, coef, v)

    def squared_terms(self, points, shape):
        if not isinstance(points, Points):
            return points.squared_terms(shape[0] - 1)  # rows read in passes (_passes.py)
        gram, rhs, _ = bern.least_squares_terms(points.u, points.y, points.w, shape[0] - 1)
        return gram, rhs

    def logistic_terms(self, points, coef, hessian):
        if not isinstance(points, Points):
            return points.logistic_terms(coef, hessian)
        return bern.logistic_terms(points.u, points.v, points.y, points.w, coef, hessian)

    def elevate(self, coef, shape):
        return bern.elevation_matrix(coef.shape[0] - 1, shape[0] - 1).T @ coef


class _Tensor:
    """The tensor basis (:mod:`bernonnx._core.tensor`); loss terms are weighted means."""

    gradient_with_loss = False

    def eta(self, u, v, coef):
        return tensor.tensor_eval(u, v, coef)

    def squared_terms(self, points, shape):
        degrees = tuple(k - 1 for k in shape)
        return tensor.least_squares_terms(points.u, points.v, points.y, points.w, degrees)

    def logistic_terms(self, points, coef, hessian):
        return tensor.logistic_terms(points.u, points.v, points.y, points.w, coef, hessian)

    def elevate(self, coef, shape):
        return tensor.elevate(coef, tuple(k - 1 for k in shape))


CURVE: Basis = _Curve()
TENSOR: Basis = _Tensor()


# --------------------------------------------------------------------------
# fits
# --------------------------------------------------------------------------


@cache
def _threadpools() -> ThreadpoolController:
    # finding the loaded BLAS libraries reads /proc and every library's header:
    # 7 ms, more than a whole degree-20 fit of 1,000 rows, so it is done once
    return ThreadpoolController()


def single_blas_thread():
    """Context manager: BLAS on one thread.

    Threads only add synchronisation to the small (d+1)-wide products of the
    fits: measured 0.7 ms single-threaded vs 28 ms with two threads on a busy
    2-core machine.
    """
    return _threadpools().limit(limits=1, user_api="blas")


def box(loss: str, logit_bound: float) -> tuple[float, float]:
    """Coefficient bounds ``[L, U]``: probabilities, or log-odds within the bound."""
    return (-logit_bound, logit_bound) if loss == "log" else (0.0, 1.0)


def constant_level(loss: str, rate: float, lo: float, hi: float) -> float:
    """The one coefficient value that predicts the weighted base ``rate``."""
    return float(np.clip(logit(rate), lo, hi)) if loss == "log" else rate


def is_constant(points) -> bool:
    """Whether all points share one ``u`` (constant scores: nothing to rank)."""
    if not isinstance(points, Points):
        return points.u_range().constant
    return bool(np.ptp(points.u) == 0)


def base_rate(points) -> float:
    """Weighted mean label of the points (or the ``rate`` of a ``RowPasses``, a ``_FoldStack``)."""
    if not isinstance(points, Points):
        return points.rate
    return float(np.average(points.y, weights=points.w))


def newton(
    basis: Basis,
    points: Points,
    feasible: FeasibleSet,
    x0: np.ndarray,
    curvature: Points | None = None,
    tol: float = NEWTON_TOL,
    finish: bool = False,
) -> np.ndarray:
    """Projected Newton (SQP) for the log loss over the feasible set; returns flat ``x``.

    Each step minimises the local quadratic model over the feasible set (one
    QP), then backtracks from the full step on the exact loss (Armijo,
    ``1e-4``). The full step is evaluated with its gradient and Hessian, in
    one data pass: it is nearly always accepted (every step of the fits
    measured when this was written), and a separate Hessian pass would double
    the cost of a 1-D fit. Shorter trial steps evaluate the loss alone; the
    one accepted gets its gradient and Hessian then. Stops when the predicted
    decrease is below ``tol`` of the loss, when no step decreases it
    within rounding, or after ``NEWTON_MAX_ITER`` steps. With ``finish``, the
    step whose predicted decrease met the tolerance is taken too.

    ``curvature`` (the bins of ``points``, of the same total weight) supplies
    the Hessian instead of ``points``: the steps then solve the exact
    problem with a Hessian exact to the spread of the points inside a bin, and
    a pass over the rows needs the loss and gradient only.
    """

    if not basis.gradient_with_loss:
        curvature = None  # the gradient would cost the Hessian's pass anyway

    def terms(x, hessian=True):
        coef = x.reshape(feasible.shape)
        if curvature is None or not hessian:
            return basis.logistic_terms(points, coef, hessian)
        f, g, _ = basis.logistic_terms(points, coef, False)
        return f, g, basis.logistic_terms(curvature, coef, True)[2]

    x = feasible.project(x0)
    f, g, h = terms(x)
    for _ in range(NEWTON_MAX_ITER):
        step = feasible.qp(h, g - h @ x, x0=x) - x
        decrease = -float(g @ step)
        if decrease <= tol * max(f, 1e-300):
            if finish:
                # the step is computed: take it, so that where the loss is flat the fit
                # does not stop wherever its path entered the tolerance (its change of
                # the loss is below the tolerance; testing its sign would flip with
                # the rounding of the rows' sums, from one engine to another)
                x = feasible.project(x + step)
            break
        trial = feasible.project(x + step)
        new = terms(trial)
        t = 1.0
        while new[0] > f - 1e-4 * t * decrease:
            t *= 0.5
            if t <= 1e-10:
                return x  # no decrease left within rounding: x is optimal
            trial = feasible.project(x + t * step)
            new = terms(trial, hessian=False)
        x = trial
        f, g, h = new if t == 1.0 else terms(x)
    return x


def cold_start(points, feasible: FeasibleSet) -> np.ndarray:
    """Flat start of a log-loss fit: every coefficient the log-odds of the base rate."""
    rate = np.clip(base_rate(points), _RATE_CLIP, 1 - _RATE_CLIP)
    return np.full(feasible.shape, np.clip(logit(rate), feasible.lo, feasible.hi))


def fit_log(basis: Basis, points: Points, feasible: FeasibleSet, x0=None) -> np.ndarray:
    """Log-loss coefficients (shape ``feasible.shape``), warm-started at ``x0``.

    Above :data:`COMPRESS_ABOVE` points, the steps are taken on bins first
    (:data:`COARSE_BINS` then :data:`FIT_BINS`; without ``x0`` only, since a
    warm start is near the optimum already), then polished on the points.
    From :data:`COARSE_ABOVE` points up to :data:`COMPRESS_ABOVE`, a cold start
    of a one-score fit takes its first steps on :data:`COARSE_BINS` bins.
    """
    cold = x0 is None
    x0 = np.ravel(cold_start(points, feasible) if cold else x0)

    def binned(n_bins):
        return compress(points, n_bins) if isinstance(points, Points) else points.bins(n_bins)

    bins = None
    if len(points) > COMPRESS_ABOVE:
        bins = binned(FIT_BINS)
        if cold:
            # coarse bins first: most steps of a cold start are taken on few points
            x0 = newton(basis, compress(bins, COARSE_BINS), feasible, x0)
        x0 = newton(basis, bins, feasible, x0)
    elif cold and len(points) > COARSE_ABOVE and len(feasible.shape) == 1:
        # one score only: there a step's cost is the pass over the rows, while a tensor
        # fit's is its QP, which more steps would repeat (1.6x slower at M = 4). The
        # polish below keeps the rows' own Hessian (with that of the bins, it stopped up
        # to 3e-7 away in probability from the fit the search warm-starts)
        x0 = newton(basis, binned(COARSE_BINS), feasible, x0)
    x = newton(basis, points, feasible, x0, curvature=bins, finish=True)
    return x.reshape(feasible.shape)


def fit_squared(basis: Basis, points: Points, feasible: FeasibleSet, x0=None) -> np.ndarray:
    """Least-squares coefficients (shape ``feasible.shape``): one QP."""
    gram, rhs = basis.squared_terms(points, feasible.shape)
    x0 = None if x0 is None else np.ravel(x0)
    return feasible.qp(2.0 * gram, -2.0 * rhs, x0=x0).reshape(feasible.shape)


FITS = {"log": fit_log, "squared": fit_squared}


def link(eta: np.ndarray, loss: str, out: np.ndarray | None = None) -> np.ndarray:
    """Probability of the positive class: ``expit(eta)`` (log) or ``clip(eta, 0, 1)``;
    into ``out`` if given (``out=eta`` overwrites the polynomial)."""
    return expit(eta, out=out) if loss == "log" else np.clip(eta, 0.0, 1.0, out=out)


def predict(basis: Basis, u: np.ndarray, v: np.ndarray, coef: np.ndarray, loss: str):
    """Probability of the positive class at the points (:func:`link` of the polynomial)."""
    return link(basis.eta(u, v, coef), loss)


# --------------------------------------------------------------------------
# degree choice
# --------------------------------------------------------------------------


def mean_log_loss(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean log loss of probabilities ``p`` (clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -float(w @ (y * np.log(p) + (1 - y) * np.log1p(-p))) / float(w.sum())


def one_standard_error_choice(fold_losses: np.ndarray) -> int:
    """Index of the smallest candidate within one standard error of the best.

    The standard error is that of the per-fold loss difference to the best
    candidate (paired across folds), so fold-to-fold noise common to all
    degrees does not hide real differences. Candidates are sorted by degree.
    """
    mean = fold_losses.mean(axis=0)
    best = int(np.argmin(mean))
    k = fold_losses.shape[0]
    if k < 2:
        return best
    diff = fold_losses - fold_losses[:, [best]]
    se = diff.std(axis=0, ddof=1) / np.sqrt(k)
    return int(np.flatnonzero(diff.mean(axis=0) <= se)[0])


def fold_bins(points: Points, n_folds: int, folds=None):
    """Per-fold bins of the degree search (:func:`bin_sums` at :data:`SELECT_BINS`,
    or :data:`TENSOR_SELECT_BINS` for points of several scores).

    ``folds``: each point's fold, from its row's position in the data
    (:func:`fold_of`); by default the points are the rows ``0, 1, ...``.
    Rows read in passes (``_passes.RowPasses``) bin themselves, chunk by chunk.
    """
    if not isinstance(points, Points):
        return points.fold_bins(n_folds)
    if folds is None:
        folds = fold_of(0, len(points), n_folds)
    n_bins = SELECT_BINS if points.u.ndim == 1 else TENSOR_SELECT_BINS
    return bin_sums(points, n_bins, folds, n_folds)


def least_loss_choice(fold_losses: np.ndarray) -> int:
    """Index of the candidate of least mean validation loss (ties: the smallest degree).

    The rule of the 1-D calibrator. With folds drawn by a hash of the row's
    position, it beat the one-standard-error rule on the quality study's
    tuning seeds (18 of 20 wins against the better of scikit-learn's sigmoid
    and isotonic instead of 14; ``examples/quality_study.py``).
    """
    return int(np.argmin(fold_losses.mean(axis=0)))


def _usable_folds(wt: np.ndarray) -> list[int]:
    """Folds with weight both in them and outside them: the ones a search can validate on."""
    total = wt.sum()
    return [k for k in range(wt.shape[0]) if wt[k].sum() > 0 and total - wt[k].sum() > 0]


def select_degree(basis, sums, feasible_sets, loss, one_score=True):
    """Validation log loss of each candidate on each fold: exact fits of every fold.

    The search of the tensor-product calibrator (:func:`select_degree_by_steps`
    is the 1-D one). ``sums`` = ``(wt, wu)`` of :func:`fold_bins`: rows fall
    into folds by a hash of their position (:func:`fold_of`), and each fold's
    rows are binned to at most ``2 * TENSOR_SELECT_BINS`` points: selection needs
    the ranking of degrees, not the last digit; the final fit is exact. A
    fold trains on the sums of the other folds. ``feasible_sets`` holds one
    feasible set per candidate degree, smallest first; each candidate starts
    from the previous one's coefficients, elevated: a feasible warm start.
    Folds without weight on either side are skipped. Returns the fold losses,
    shape ``(n_used_folds, n_candidates)``, and ``None`` (no warm starts).
    """
    fit = FITS[loss]
    wt, wu = sums
    rows = []
    for k in _usable_folds(wt):
        others = np.arange(wt.shape[0]) != k
        tr = points_from_sums(wt[others].sum(axis=0), wu[others].sum(axis=0), one_score)
        te = points_from_sums(wt[k], wu[k], one_score)
        coef, row = None, []
        for feasible in feasible_sets:
            x0 = None if coef is None else basis.elevate(coef, feasible.shape)
            coef = fit(basis, tr, feasible, x0=x0)
            row.append(mean_log_loss(te.y, predict(basis, te.u, te.v, coef, loss), te.w))
        rows.append(row)
    return np.asarray(rows).reshape(len(rows), len(feasible_sets)), None


class _FoldStack:
    """The per-fold bins of a 1-D degree search, stacked, and their basis at one degree.

    Fold ``k``'s points are ``slices[k]`` of the stack. :meth:`at_degree`
    tabulates the degree-``d`` and degree-``2d`` Bernstein bases once; every
    loss term of the candidate is then a product with those tables, of all
    the points or of one fold's: ``b_j b_k = C(d, j) C(d, k) / C(2d, j + k)
    b_{j+k, 2d}``, so a Hessian (or Gram matrix) is ``2d + 1`` weighted sums
    of the degree-``2d`` basis (a Hankel matrix), as in
    :func:`bernonnx._core.basis.logistic_terms`. It stands in for the points
    of :func:`newton` (``_Curve`` hands it the coefficients) and of the fold
    terms, with no per-call overhead: a degree search makes hundreds of calls
    on a few thousand points.
    """

    def __init__(self, tests: list[Points], top: int):
        self.u = np.concatenate([t.u for t in tests])
        self.y = np.concatenate([t.y for t in tests])
        self.w = np.concatenate([t.w for t in tests])
        ends = np.cumsum([len(t) for t in tests])
        self.slices = [slice(int(e - len(t)), int(e)) for e, t in zip(ends, tests, strict=True)]
        self.rate = float(np.average(self.y, weights=self.w))
        # u^m and (1 - u)^m up to twice the largest degree, tabulated once; values below
        # 1e-120 flushed to zero (as bernstein_basis_t does), so that no product of two
        # is subnormal: subnormals slow every later product by up to 100x
        self.up = np.empty((2 * top + 1, len(self)))
        self.vp = np.empty_like(self.up)
        self.up[0] = self.vp[0] = 1.0
        v = 1.0 - self.u
        for m in range(1, 2 * top + 1):
            np.multiply(self.up[m - 1], self.u, out=self.up[m])
            np.multiply(self.vp[m - 1], v, out=self.vp[m])
        np.putmask(self.up, self.up < 1e-120, 0.0)
        np.putmask(self.vp, self.vp < 1e-120, 0.0)

    def _table(self, degree: int) -> np.ndarray:
        out = self.up[: degree + 1] * self.vp[degree::-1]
        out *= bern.binomial_row(degree)[:, None]
        return out

    def at_degree(self, degree: int) -> None:
        self.basis = self._table(degree)
        self.double = self._table(2 * degree)
        binom, idx = bern.binomial_row(degree), np.arange(degree + 1)
        self.hankel = idx[:, None] + idx[None, :]
        self.ratio = np.outer(binom, binom) / bern.binomial_row(2 * degree)[self.hankel]

    def _gram(self, weights: np.ndarray, sl: slice) -> np.ndarray:
        return self.ratio * (self.double[:, sl] @ weights)[self.hankel]

    def logistic_terms(self, coef, hessian=True, sl=slice(None)):
        """Sum of the log loss over the points of ``sl``, its gradient and Hessian."""
        eta = coef @ self.basis[:, sl]
        y, w = self.y[sl], self.w[sl]
        e = np.exp(-np.abs(eta))  # one exp: softplus and p from e^(-|eta|)
        f = float(w @ (np.maximum(eta, 0.0) + np.log1p(e) - y * eta))
        p = np.where(eta >= 0.0, 1.0, e) / (1.0 + e)
        g = self.basis[:, sl] @ (w * (p - y))
        return f, g, (self._gram(w * p * (1.0 - p), sl) if hessian else None)

    def squared_terms(self, sl=slice(None)):
        """Gram matrix and right-hand side of the least-squares loss over ``sl``."""
        return self._gram(self.w[sl], sl), self.basis[:, sl] @ (self.w[sl] * self.y[sl])

    def mean_log_loss(self, coef, loss, sl):
        """Mean log loss of the predictions of ``coef`` on the points of ``sl``."""
        eta = coef @ self.basis[:, sl]
        y, w = self.y[sl], self.w[sl]
        if loss == "log":
            return float(w @ (np.logaddexp(0.0, eta) - y * eta)) / float(w.sum())
        return mean_log_loss(y, link(eta, loss), w)

    def __len__(self) -> int:
        return self.u.shape[0]


def select_degree_by_steps(basis, sums, feasible_sets, loss, one_score=True):
    """Validation log loss of each candidate on each fold, from one fit per candidate.

    The search of the 1-D calibrator; ``sums``, ``feasible_sets`` and the
    skipped folds as in :func:`select_degree`, whose ``k`` fits per candidate
    it replaces by one. Per candidate degree (smallest first, warm-started at
    the previous one's coefficients, elevated):

    * ``x*`` = the fit on the bins of all the folds together;
    * the terms of each fold's bins at ``x*``: they add up, so the terms of
      fold ``k``'s training rows are the total minus fold ``k``'s;
    * squared loss: fold ``k``'s fit is one QP on its training terms, exact,
      started at ``x*``;
    * log loss: fold ``k``'s fit is approximated by :data:`FOLD_STEPS` (2)
      projected Newton steps from ``x*`` on its training rows (a QP each,
      with their exact gradient and Hessian; the second step's terms are the
      stack's at the first step minus the fold's). The training rows are
      1 - 1/k of the data, so ``x*`` is close to their optimum. The gap to
      the fold's own fit grows with the degree, where the Hessian is
      ill-conditioned: with one step, on generated data the mean validation
      loss at degree 50 came out 11% of the candidates' spread too low, and
      on the benchmark's data at n = 1e4 the search chose degree 50 where the
      exact fold fits choose 4; with two, 4.5% and 4
      (``tests/test_degree_search.py``). On the quality study's seeds
      (``examples/quality_study.py``) this chose the same degree as the exact
      fold fits in 71 of 72 tuning fits and 68 of 72 held-out ones, with the
      same wins against the better of scikit-learn's sigmoid and isotonic,
      in 60% of the time.

    Returns the fold losses (shape ``(n_used_folds, n_candidates)``) and the
    ``x*`` of each candidate: the final fit starts from the chosen one's.
    ``basis`` must be :data:`CURVE`.
    """
    wt, wu = sums
    folds = _usable_folds(wt)
    if not folds:
        return np.empty((0, len(feasible_sets))), None
    top = max(f.shape[0] - 1 for f in feasible_sets)
    stack = _FoldStack([points_from_sums(wt[k], wu[k], one_score) for k in folds], top)
    losses = np.empty((len(folds), len(feasible_sets)))
    starts, coef = [], None
    for j, feasible in enumerate(feasible_sets):
        stack.at_degree(feasible.shape[0] - 1)
        if loss == "squared":
            terms = [stack.squared_terms(sl) for sl in stack.slices]
            gram, rhs = sum(t[0] for t in terms), sum(t[1] for t in terms)
            x = feasible.qp(2.0 * gram, -2.0 * rhs).ravel()
        else:
            if coef is None:
                x0 = cold_start(stack, feasible)
            else:
                x0 = basis.elevate(coef, feasible.shape)
            x = newton(basis, stack, feasible, x0, tol=SELECT_TOL)
            terms = [stack.logistic_terms(x, True, sl) for sl in stack.slices]
            grad, hess = sum(t[1] for t in terms), sum(t[2] for t in terms)
        coef = x.reshape(feasible.shape)
        starts.append(coef)
        for i, sl in enumerate(stack.slices):
            if loss == "squared":
                xk = feasible.qp(2.0 * (gram - terms[i][0]), -2.0 * (rhs - terms[i][1]), x0=x)
            else:
                h, g = hess - terms[i][2], grad - terms[i][1]
                xk = feasible.qp(h, g - h @ x, x0=x)
                for _ in range(FOLD_STEPS - 1):
                    every, own = stack.logistic_terms(xk), stack.logistic_terms(xk, True, sl)
                    h, g = every[2] - own[2], every[1] - own[1]
                    xk = feasible.qp(h, g - h @ xk, x0=xk)
            losses[i, j] = stack.mean_log_loss(xk, loss, sl)
    return losses, starts


def fit_degree(
    basis,
    points,
    feasible_sets,
    loss,
    n_folds,
    folds=None,
    choose=one_standard_error_choice,
    search=select_degree,
):
    """Choose among ``feasible_sets`` (one per candidate degree) and fit.

    ``folds`` as in :func:`fold_bins`; ``choose`` maps the fold losses to the
    chosen index; ``search`` is :func:`select_degree` or
    :func:`select_degree_by_steps`. Returns ``(index, coef, fold_losses)``;
    ``fold_losses`` is ``None`` for a single candidate.
    """
    fold_losses = None
    index, x0 = 0, None
    if len(feasible_sets) > 1:
        sums = fold_bins(points, n_folds, folds)
        one_score = not isinstance(points, Points) or points.u.ndim == 1
        fold_losses, starts = search(basis, sums, feasible_sets, loss, one_score)
        if fold_losses.shape[0] == 0:
            # a few rows, no fold with weight on both sides: nothing to compare
            fold_losses = None
        else:
            index = choose(fold_losses)
            x0 = None if starts is None else starts[index]
    return index, FITS[loss](basis, points, feasible_sets[index], x0=x0), fold_losses


def forget_optional_attributes(estimator) -> None:
    """Delete the :data:`FITTED_OPTIONAL` attributes an earlier fit left."""
    for name in FITTED_OPTIONAL:
        if hasattr(estimator, name):
            delattr(estimator, name)
