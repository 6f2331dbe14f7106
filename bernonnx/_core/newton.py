"""The one fitting core of the Bernstein calibrators: projected Newton and the fits.

:class:`bernonnx.BernsteinCalibrator` (one score) and
:class:`bernonnx.MultivariateBernsteinCalibrator` (``M`` scores) fit the same
way; only two things differ, and both are passed in:

* the **basis** (:class:`Basis`): how the polynomial and the loss terms are
  evaluated on points in ``[0, 1]^M``: :data:`CURVE` (1-D, over
  :mod:`bernonnx._core.basis`) or :data:`TENSOR` (over :mod:`bernonnx._core.tensor`);
* the **feasible set** (:class:`FeasibleSet`): the monotone coefficients and
  their QP, :class:`bernonnx._core.qp.Chain` or :class:`bernonnx._core.qp.Lattice`.

A fit reads the data only as :class:`~bernonnx._core.points.Rows`: weighted, labelled points.
Those are either the rows themselves or the bins of :func:`~bernonnx._core.points.compress` (per
cell and class, the weighted mean point and the total weight); either way
they are the sufficient statistics of the fit, and a fit of binned points is
the same code as a fit of rows.

* ``loss="squared"``: one pass for the quadratic terms, one QP (:func:`fit_squared`).
* ``loss="log"``: projected Newton (:func:`newton`): each step minimises the
  local quadratic model over the feasible set (one QP), then backtracks on the
  exact loss; above :data:`COMPRESS_ABOVE` rows it first converges on
  :data:`COARSE_BINS`, then :data:`FIT_BINS` bins, then polishes on the rows
  with the Hessian of the bins (:func:`fit_log`).
* degree choice: k-fold log loss of the candidates on binned folds
  (:mod:`bernonnx._core.degree`); the least mean loss (1-D) or the smallest degree
  within one standard error of the best (tensor products).
"""

from __future__ import annotations

from functools import cache
from typing import Protocol

import numpy as np
from scipy.special import expit, logit
from threadpoolctl import ThreadpoolController

from . import basis as bern
from . import tensor
from .points import Points, Rows, compress

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
#: Newton stops when the predicted decrease of the loss is below this
#: fraction of it, or after ``NEWTON_MAX_ITER`` steps.
NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 100
#: Base rates are clipped here before their log-odds start a log-loss fit.
_RATE_CLIP = 1e-6


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

    def squared_terms(self, points: Rows, shape) -> tuple[np.ndarray, np.ndarray]:
        """``(G, r)``: the squared loss is ``c^T G c - 2 r^T c`` plus a constant."""

    def logistic_terms(self, points: Rows, coef: np.ndarray, hessian: bool):
        """Log loss, its gradient (flat) and Hessian; without ``hessian`` the loss at least."""

    def elevate(self, coef: np.ndarray, shape) -> np.ndarray:
        """The same polynomial with coefficients of (larger) ``shape``."""


class _Curve:
    """The 1-D basis (:mod:`bernonnx._core.basis`); loss terms are sums over the points."""

    gradient_with_loss = True

    def eta(self, u, v, coef):
        return bern.bernstein_eval(u, coef, v)

    def squared_terms(self, points, shape):
        return points.squared_terms(shape[0] - 1)

    def logistic_terms(self, points, coef, hessian):
        return points.logistic_terms(coef, hessian)

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


def is_constant(points: Rows) -> bool:
    """Whether all points share one ``u`` (constant scores: nothing to rank)."""
    return points.constant()


def base_rate(points: Rows) -> float:
    """Weighted mean label of the points (or the ``rate`` of a ``RowPasses``, a ``_FoldStack``)."""
    return points.rate


def newton(
    basis: Basis,
    points: Rows,
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


def cold_start(points: Rows, feasible: FeasibleSet) -> np.ndarray:
    """Flat start of a log-loss fit: every coefficient the log-odds of the base rate."""
    rate = np.clip(base_rate(points), _RATE_CLIP, 1 - _RATE_CLIP)
    return np.full(feasible.shape, np.clip(logit(rate), feasible.lo, feasible.hi))


def fit_log(basis: Basis, points: Rows, feasible: FeasibleSet, x0=None) -> np.ndarray:
    """Log-loss coefficients (shape ``feasible.shape``), warm-started at ``x0``.

    Above :data:`COMPRESS_ABOVE` points, the steps are taken on bins first
    (:data:`COARSE_BINS` then :data:`FIT_BINS`; without ``x0`` only, since a
    warm start is near the optimum already), then polished on the points.
    From :data:`COARSE_ABOVE` points up to :data:`COMPRESS_ABOVE`, a cold start
    of a one-score fit takes its first steps on :data:`COARSE_BINS` bins.
    """
    cold = x0 is None
    x0 = np.ravel(cold_start(points, feasible) if cold else x0)

    bins = None
    if len(points) > COMPRESS_ABOVE:
        bins = points.bins(FIT_BINS)
        if cold:
            # coarse bins first: most steps of a cold start are taken on few points
            x0 = newton(basis, compress(bins, COARSE_BINS), feasible, x0)
        x0 = newton(basis, bins, feasible, x0)
    elif cold and len(points) > COARSE_ABOVE and len(feasible.shape) == 1:
        # one score only: there a step's cost is the pass over the rows, while a tensor
        # fit's is its QP, which more steps would repeat (1.6x slower at M = 4). The
        # polish below keeps the rows' own Hessian (with that of the bins, it stopped up
        # to 3e-7 away in probability from the fit the search warm-starts)
        x0 = newton(basis, points.bins(COARSE_BINS), feasible, x0)
    x = newton(basis, points, feasible, x0, curvature=bins, finish=True)
    return x.reshape(feasible.shape)


def fit_squared(basis: Basis, points: Rows, feasible: FeasibleSet, x0=None) -> np.ndarray:
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
