"""The degree choice of the Bernstein calibrators: k-fold log loss on binned folds.

One score (:func:`select_degree_by_steps`): one fit per candidate on all the folds'
bins, each fold's fit two Newton steps from it, least mean loss. Tensor products
(:func:`select_degree`): every fold fitted, one-standard-error rule. Both read the
per-fold bins of :func:`~bernonnx._core.points.bin_sums`, so chunks of the data
produce them independently.
"""

from __future__ import annotations

import numpy as np

from . import basis as bern
from .newton import FITS, Basis, cold_start, link, newton, predict
from .points import Points, Rows, points_from_sums
from .qp import gap_step

#: The same for the fits a degree search compares: validation losses of
#: candidates differ in the fourth digit, not the twelfth.
SELECT_TOL = 1e-9
#: Newton steps from the fit on all folds that stand for a fold's log-loss fit
#: in the 1-D degree search (:func:`select_degree_by_steps`): all but the last on
#: the active face of that fit (:func:`_face_steps`), the last a QP per fold.
FOLD_STEPS = 2
#: The ``coarse`` scan of :func:`select_degree_by_steps` (every other candidate,
#: smallest first) stops after this many scanned candidates in a row without a
#: new least loss; the last candidate is scored in any case.
SCAN_PATIENCE = 2


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


def fold_bins(points: Rows, n_folds: int, folds=None):
    """Per-fold bins of the degree search (:func:`bin_sums` at :data:`SELECT_BINS`,
    or :data:`TENSOR_SELECT_BINS` for points of several scores).

    ``folds``: each point's fold, from its row's position in the data
    (:func:`fold_of`); by default the points are the rows ``0, 1, ...``.
    Rows read in passes (``_passes.RowPasses``) bin themselves, chunk by chunk.
    """
    return points.fold_bins(n_folds, folds)


def least_loss_choice(fold_losses: np.ndarray) -> int:
    """Index of the candidate of least mean validation loss (ties: the smallest degree).

    The rule of the 1-D calibrator. With folds drawn by a hash of the row's
    position, it beat the one-standard-error rule on the quality study's
    tuning seeds (18 of 20 wins against the better of scikit-learn's sigmoid
    and isotonic instead of 14; ``benchmarks/quality/quality_study.py``).
    Candidates the search skipped (NaN losses, see
    :func:`select_degree_by_steps`) are not chosen.
    """
    return int(np.nanargmin(fold_losses.mean(axis=0)))


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
    :func:`bernonnx._core.loss.logistic_terms`. It stands in for the points
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
        # each fold's own weights (its test points) and its training weights (the others')
        self.own = np.zeros((len(tests), len(self)))
        for k, sl in enumerate(self.slices):
            self.own[k, sl] = self.w[sl]
        self.train = self.w - self.own
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

    def training_terms(self, coefs: np.ndarray):
        """Gradient and Hessian of each fold's training log loss, at ``coefs[k]`` for fold ``k``.

        ``coefs`` of shape ``(K, d + 1)``, or one ``(d + 1,)`` for every fold;
        returns arrays of shapes ``(K, d + 1)`` and ``(K, d + 1, d + 1)``: the
        terms of all the folds in a few products, rather than two calls per fold.
        """
        eta = coefs @ self.basis
        e = np.exp(-np.abs(eta))
        p = np.where(eta >= 0.0, 1.0, e) / (1.0 + e)
        g = (self.train * (p - self.y)) @ self.basis.T
        sums = self.double @ (self.train * (p * (1.0 - p))).T
        return g, self.ratio * sums.T[:, self.hankel]

    def fold_log_losses(self, coefs: np.ndarray) -> np.ndarray:
        """Mean log loss of each fold's own points under ``coefs[k]`` (log-odds polynomials)."""
        eta = coefs @ self.basis
        return (self.own * (np.logaddexp(0.0, eta) - self.y * eta)).sum(axis=1) / self.own.sum(
            axis=1
        )

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


def select_degree_by_steps(
    basis, sums, feasible_sets, loss, one_score=True, coarse=False, fold_fits=None
):
    """Validation log loss of each candidate on each fold, from one fit per candidate.

    The search of the 1-D calibrator; ``sums``, ``feasible_sets`` and the
    skipped folds as in :func:`select_degree`, whose ``k`` fits per candidate
    it replaces by one. Per candidate degree (warm-started at the nearest
    smaller candidate's coefficients, elevated):

    * ``x*`` = the fit on the bins of all the folds together;
    * squared loss: fold ``k``'s fit is one QP on its training terms, exact,
      started at ``x*``;
    * log loss: fold ``k``'s fit is approximated by :data:`FOLD_STEPS` (2)
      projected Newton steps from ``x*`` on its training rows (a QP each,
      with their exact gradient and Hessian, all the folds' in one product
      over the stacked bins). The training rows are
      1 - 1/k of the data, so ``x*`` is close to their optimum. The gap to
      the fold's own fit grows with the degree, where the Hessian is
      ill-conditioned: with one step, on generated data the mean validation
      loss at degree 50 came out 11% of the candidates' spread too low, and
      on the benchmark's data at n = 1e4 the search chose degree 50 where the
      exact fold fits choose 4; with two, 4.5% and 4
      (``tests/test_degree_search.py``). On the quality study's seeds
      (``benchmarks/quality/quality_study.py``) this chose the same degree as the exact
      fold fits in 71 of 72 tuning fits and 68 of 72 held-out ones, with the
      same wins against the better of scikit-learn's sigmoid and isotonic,
      in 60% of the time. The first step is taken on the active face of
      ``x*`` (its ties and bounds kept: :func:`_face_steps`, one batched
      linear solve for all the folds), only the second is a QP per fold:
      half the QPs of the search. On the quality study's 120 cached fits
      (three splits) it chose the degree that two QP steps choose in 119;
      in the other (magic, LinearSVC, seed 3) 32 instead of 16.

    With ``coarse`` (``degree="auto"``), every other candidate is scored,
    smallest first, until :data:`SCAN_PATIENCE` (2) in a row bring no new
    least loss, then the last candidate, then the neighbours of the best so
    far until the best has both (:func:`_search_order`): about 8 of the 13
    default candidates, the costliest (largest) ones skipped most often. On
    the quality study's 120 cached fits it chose the degree that scoring every
    other candidate to the end chooses in 115; the test log loss is that one's
    on every tuning case (credit and magic, seeds 0-2), and on the held-out
    ones 3.5e-5 lower on average (diabetes and shoppers, seeds 0-2) and
    3.9e-6 lower (all four, seeds 3-5). Stopping the scan without scoring
    the last candidate saved twice the time but lost up to 4 bootstrap
    standard errors on a case: the cross-validated loss often dips again at
    degree 40 or 50. On a curve with a dip between two coarse candidates
    (``tests/test_multivariate.py``) it misses the dip.

    Returns the fold losses (shape ``(n_used_folds, n_candidates)``, NaN for
    candidates not scored) and the ``x*`` of each candidate (``None`` if not
    scored): the final fit starts from the chosen one's. ``basis`` must be
    :data:`CURVE`. A dict ``fold_fits`` (log loss) receives, per candidate scored,
    the used folds and their approximate fits ``(folds, (n_used_folds, d + 1))``:
    starts for exact refits of the folds (``TemperatureBernsteinCalibrator``'s).
    """
    wt, wu = sums
    folds = _usable_folds(wt)
    if not folds:
        return np.empty((0, len(feasible_sets))), None
    top = max(f.shape[0] - 1 for f in feasible_sets)
    stack = _FoldStack([points_from_sums(wt[k], wu[k], one_score) for k in folds], top)
    losses = np.full((len(folds), len(feasible_sets)), np.nan)
    starts = [None] * len(feasible_sets)

    def evaluate(j):
        feasible = feasible_sets[j]
        stack.at_degree(feasible.shape[0] - 1)
        if loss == "squared":
            terms = [stack.squared_terms(sl) for sl in stack.slices]
            gram, rhs = sum(t[0] for t in terms), sum(t[1] for t in terms)
            x = feasible.qp(2.0 * gram, -2.0 * rhs).ravel()
        else:
            # warm start: the nearest smaller candidate fitted so far, elevated
            below = [i for i in range(j) if starts[i] is not None]
            if below:
                x0 = basis.elevate(starts[below[-1]], feasible.shape)
            else:
                x0 = cold_start(stack, feasible)
            x = newton(basis, stack, feasible, x0, tol=SELECT_TOL)
        starts[j] = x.reshape(feasible.shape)
        if loss == "squared":
            for i, sl in enumerate(stack.slices):
                xk = feasible.qp(2.0 * (gram - terms[i][0]), -2.0 * (rhs - terms[i][1]), x0=x)
                losses[i, j] = stack.mean_log_loss(xk, loss, sl)
            return
        # the first steps on the face of x (batched linear solves), the last one a
        # projected Newton step: a QP per fold, which may leave the face
        xk = _face_steps(stack, feasible, x, FOLD_STEPS - 1)
        g, h = stack.training_terms(xk)
        xk = np.array(
            [feasible.qp(hk, gk - hk @ xi, x0=xi) for hk, gk, xi in zip(h, g, xk, strict=True)]
        )
        losses[:, j] = stack.fold_log_losses(xk)
        if fold_fits is not None:
            fold_fits[j] = (folds, xk)

    for j in _search_order(len(feasible_sets), coarse, losses):
        evaluate(j)
    return losses, starts


def _face(feasible, x):
    """The active face of the chain at ``x``: ``x + B z`` keeps its ties and bounds.

    ``B`` (shape ``(d + 1, m)``) has a column per block of tied coefficients
    (increments at the chain's least one, within rounding) not pinned at a
    bound: one on the block's coefficients, zero elsewhere.
    """
    n = x.shape[0]
    lo, hi = float(feasible.lo), float(feasible.hi)
    gap = gap_step(lo, hi, n - 1, float(feasible.min_slope))
    ext = np.empty(n + 2)
    ext[0], ext[1:-1], ext[-1] = lo, x - gap * np.arange(n), hi - gap * (n - 1)
    # the tie tolerance of a warm start of solve_monotone_qp
    tied = np.diff(ext) <= 8 * np.finfo(float).eps * max(abs(lo), abs(hi))
    block = np.concatenate(([0], np.cumsum(~tied)))[1:-1]
    last = int(np.cumsum(~tied)[-1])
    return (block[:, None] == np.arange(1, last)[None, :]).astype(float)


def _face_steps(stack, feasible, x, steps):
    """``steps`` Newton steps of each fold's training loss on the active face of ``x``.

    ``x`` is the fit on all the folds; the steps keep its ties and bounds
    (:func:`_face`): a linear solve in the free block values per fold, all the
    folds in one batched solve, no QP. Returns the ``(K, d + 1)`` points, not
    necessarily feasible: the fold's last step (a QP) starts from there.
    """
    xk = np.repeat(x[None, :], len(stack.slices), axis=0)
    b = _face(feasible, x)
    m = b.shape[1]
    if m == 0:
        return xk
    diag = np.arange(m)
    for _ in range(steps):
        g, h = stack.training_terms(xk)
        hf = b.T @ h @ b
        # the relative ridge of the QP solvers: a block without data still solves
        hf[:, diag, diag] += (
            1e-12 * np.maximum(np.trace(hf, axis1=1, axis2=2) / m, 1e-300)[:, None]
        )
        try:
            step = np.linalg.solve(hf, (g @ b)[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            return xk  # the QP step alone, from x
        xk -= step @ b.T
    # a fold whose step did not come out finite starts its QP step from x
    xk[~np.isfinite(xk).all(axis=1)] = x
    return xk


def _search_order(n: int, coarse: bool, losses: np.ndarray):
    """Candidate indices in the order :func:`select_degree_by_steps` evaluates them.

    All of them, smallest first; with ``coarse``, every other one until
    :data:`SCAN_PATIENCE` in a row bring no new least loss, then the last,
    then the neighbours of the best so far until the best has both
    neighbours evaluated. Reads ``losses`` as the caller fills them in.
    """
    if not coarse:
        yield from range(n)
        return
    best, worse = None, 0
    for j in sorted({*range(0, n, 2), n - 1}):
        yield j
        loss = float(losses[:, j].mean())
        if best is None or loss < best:
            best, worse = loss, 0
        else:
            worse += 1
            if worse >= SCAN_PATIENCE:
                break
    if np.isnan(losses[0, n - 1]):
        yield n - 1  # the largest degree: the loss curve can dip again there
    best = None
    while True:
        new = int(np.nanargmin(losses.mean(axis=0)))
        if new == best:
            return
        best = new
        for j in (best - 1, best + 1):
            if 0 <= j < n and np.isnan(losses[0, j]):
                yield j


def fit_degree(
    basis: Basis,
    points: Rows,
    feasible_sets,
    loss,
    n_folds,
    folds=None,
    choose=one_standard_error_choice,
    search=select_degree,
    x0=None,
):
    """Choose among ``feasible_sets`` (one per candidate degree) and fit.

    ``folds`` as in :func:`fold_bins`; ``choose`` maps the fold losses to the
    chosen index; ``search`` is :func:`select_degree` or
    :func:`select_degree_by_steps`; ``x0`` warm-starts the fit of a single
    candidate. Returns ``(index, coef, fold_losses)``; ``fold_losses`` is
    ``None`` for a single candidate.
    """
    fold_losses = None
    index = 0
    if len(feasible_sets) > 1:
        sums = fold_bins(points, n_folds, folds)
        one_score = points.one_score
        fold_losses, starts = search(basis, sums, feasible_sets, loss, one_score)
        if fold_losses.shape[0] == 0:
            # a few rows, no fold with weight on both sides: nothing to compare
            fold_losses = None
        else:
            index = choose(fold_losses)
            x0 = None if starts is None else starts[index]
    return index, FITS[loss](basis, points, feasible_sets[index], x0=x0), fold_losses
