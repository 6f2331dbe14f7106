"""Shape-restricted Bernstein-polynomial calibrators."""

from __future__ import annotations

from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from bernonnx._base import (
    AUTO_DEGREES,
    MAX_DEGREE,
    PARAMETER_CONSTRAINTS,
    TRANSFORM_KEYS,
    OneScoreMixin,
    PartialFitMixin,
    forget_optional_attributes,
    lazy_source,
    record_degree_search,
)
from bernonnx._core.basis import EVAL_BLOCK, logistic_eta_blocks
from bernonnx._core.degree import fit_degree, least_loss_choice, select_degree_by_steps
from bernonnx._core.newton import (
    CURVE,
    base_rate,
    box,
    constant_level,
    is_constant,
    link,
    single_blas_thread,
)
from bernonnx._core.points import Points, fold_of
from bernonnx._core.qp import Chain, solve_monotone_qp, solve_monotone_qp_cvxpy
from bernonnx._core.quantiles import weighted_quantiles
from bernonnx._core.sources import RowPasses, summarise
from bernonnx._core.tail import TAIL_SLOPE, log_tail_into
from bernonnx._core.transforms import (
    apply_transform,
    fit_transform_params,
    logistic_neg_abs_z_into,
    rescale,
    score_exponent,
    transform_params,
)
from bernonnx._validation import (
    StrOptions,
    _fit_context,
    check_int_grid,
    fit_inputs,
    predict_scores,
)

__all__ = ["BernsteinCalibrator"]

_SOLVERS = {"active-set": solve_monotone_qp, "cvxpy": solve_monotone_qp_cvxpy}


class BernsteinCalibrator(PartialFitMixin, OneScoreMixin, ClassifierMixin, BaseEstimator):
    r"""Monotone Bernstein-polynomial calibrator of a binary classifier's score.

    Fits ``p(s) = P(y = 1 | score = s)`` as a polynomial in the Bernstein
    basis with non-decreasing coefficients, so the calibration map is
    non-decreasing everywhere and strictly increasing unless all coefficients
    are equal: the ranking of scores, hence the AUC, is kept.

    Parameters
    ----------
    degree : int, "auto" or sequence of int, default="auto"
        Polynomial degree, from 1 to 100. ``"auto"`` picks among
        ``(2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)`` by ``n_folds``-fold
        cross-validated log loss (the least mean loss); a sequence gives the
        candidates yourself. Each candidate is fitted once on all the rows'
        bins; with ``loss="log"`` a fold's fit is two Newton steps from there
        on the fold's training rows (exact for ``loss="squared"``). ``"auto"``
        scores every other candidate, smallest first, until two in a row
        bring no new least loss, then the last, then the neighbours of the
        best so far until the best has both scored (about 8 of the 13;
        ``cv_log_loss_`` is NaN for the others); a sequence has every
        candidate scored.
    loss : {"log", "squared"}, default="log"
        ``"squared"``: least squares, coefficients in ``[0, 1]`` (as in
        Alex Shtoff's post "A Bernstein SkLearn model calibrator").
        ``"log"``: logistic loss, coefficients in ``[-logit_bound,
        logit_bound]``, output through a sigmoid.
    score_transform : {"logistic", "quantile", "minmax"}, default="logistic"
        Map from scores to ``[0, 1]``, see Notes. (Not called ``transform``:
        scikit-learn treats any estimator with a ``transform`` attribute as
        a transformer, in its checks and in ``Pipeline``.)
    n_knots : int, default=64
        Number of quantile intervals of ``score_transform="quantile"``.
    logit_bound : float, default=15.0
        Box on the log-odds coefficients of ``loss="log"``.
    n_folds : int, default=5
        Folds used to choose the degree (``degree="auto"`` or a grid). A row's
        fold is a hash of its position in ``X``: the same folds whichever
        engine reads the rows (in memory, Dask, Spark, Parquet passes).
    solver : {"active-set", "cvxpy"}, default="active-set"
        Solver of the small monotone quadratic program: the built-in exact
        active-set method (a cold start of up to 24 coefficients begins at the
        active set DAQP finds, when the optional ``daqp`` package is installed:
        ``pip install bernonnx[fast]``; same solution), or cvxpy with Clarabel.
    min_slope : float, default=1e-7
        Consecutive coefficients must differ by at least ``min_slope * (U -
        L) / degree`` (``[L, U]`` the coefficient box), so that
        ``d eta / du >= min_slope * (U - L)`` everywhere: the map is strictly
        increasing by construction and distinct scores stay distinct in
        floating point, which keeps the ranking (and AUC) exactly. It moves
        the optimal loss by a relative amount of order ``min_slope``. 0 gives
        the plain non-decreasing fit. With ``loss="log"`` and
        ``score_transform="logistic"``, a positive ``min_slope`` also adds the
        tail term ``tail_slope_ * sign(z) * log(1 + |z|)`` to the log-odds (see
        Notes), which keeps scores far in the tails distinct where the
        polynomial is flat in floating point.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (``degree_ + 1``,)
        Non-decreasing Bernstein coefficients (float64).
    degree_ : int
        Degree used (the chosen one when ``degree`` is a grid or "auto").
    shift_, scale_ : float
        Parameters of the ``"minmax"`` and ``"logistic"`` transforms.
    scale_below_ : float
        Slope below ``shift_`` of the ``"logistic"`` transform.
    knots_, levels_ : ndarray
        Parameters of the ``"quantile"`` transform.
    cv_degrees_, cv_log_loss_ : ndarray
        Candidate degrees and their mean validation log loss (``degree`` a
        grid or ``"auto"`` only). NaN for the candidates the ``"auto"`` search
        did not score, and for every candidate when no fold has rows both in
        and out of it (no out-of-fold rows: three rows or fewer with the
        default folds, or constant scores); the smallest degree is then used.
    n_features_in_ : int
        Always 1.

    tail_slope_ : float
        Slope of the tail term: ``1e-4`` with ``loss="log"``,
        ``score_transform="logistic"``, ``min_slope > 0`` and scores that are
        not constant; else 0.
    score_exponent_ : int
        Scores are multiplied by ``2^score_exponent_`` before the transform;
        0 unless the fitted scores are extreme (largest magnitude above
        ``2^500`` or below ``2^-500``, e.g. 1e300 or denormal), see Notes.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits (``d = degree_``, ``c = coef_``)::

        s   = s * 2^score_exponent_ (two exact power-of-two products; skipped at 0)
        u   = clip((s - shift_) * scale_, 0, 1)  # score_transform="minmax"
        z   = scale_ * max(s - shift_, 0) + scale_below_ * min(s - shift_, 0)
        u   = 1 / (1 + exp(-z))                  # "logistic"
        u   = interp(s, knots_, levels_)         # "quantile"
        v   = 1 / (1 + exp(z))  (logistic), else 1 - u
        eta = c[0] + sum_k (c[k] - c[0]) C(d, k) u^k v^(d - k)
        eta = eta + tail_slope_ * sign(z) * log(1 + min(|z|, 1e100))  # "logistic", "log"
        p   = clip(eta, 0, 1)                   # loss="squared"
        p   = 1 / (1 + exp(-eta))               # loss="log"
        predict_proba = [1 - p, p]

    The fit solves, with weights ``w_i`` and ``b(u)`` the basis vector,

    .. math::

        \min_c \sum_i w_i \ell(b(u_i)^T c, y_i) \quad
        \text{s.t.}\; L \le c_0 \le c_1 \le \dots \le c_d \le U

    with squared loss and ``[L, U] = [0, 1]`` or logistic loss and
    ``[L, U] = [-15, 15]``. Only ``d + 1`` unknowns: the least-squares data
    enter through ``2d + 1`` basis moments computed in one pass; the logistic
    fit runs a projected Newton method on at most ``2^15`` binned points, then
    polishes with exact passes over all rows (loss and gradient of the rows,
    Hessian of the bins) until the predicted decrease is below ``1e-12`` of
    the loss.

    The tail term is not part of the fit: it is a strictly increasing,
    bounded addition (at most ``0.023`` in log-odds for any score) that keeps
    the ranking of scores whose warp ``u`` rounds to 0 or 1 against the
    polynomial's coefficients (naive Bayes log-odds of -5e8). Measured on the
    quality study's fits, it moved the test log loss by at most 6e-6
    relative.

    Constant scores cannot be ranked: the transform becomes constant and the
    calibrator predicts the weighted base rate.

    References
    ----------
    A. Shtoff, "A Bernstein SkLearn model calibrator" (2024).
    Y. Wang, L. Li, C. Dang, "Calibrating classification probabilities with
    shape-restricted polynomial regression", IEEE TPAMI 41(8), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from bernonnx import BernsteinCalibrator
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> y = rng.random(2000) < expit(3 * s)
    >>> cal = BernsteinCalibrator(degree=8).fit(s, y)
    >>> p = cal.predict_proba(np.array([-1.0, 0.0, 1.0]))[:, 1]
    >>> bool(np.all(np.diff(p) > 0))
    True
    """

    _parameter_constraints: dict = {
        **PARAMETER_CONSTRAINTS,
        "solver": [StrOptions(set(_SOLVERS))],
    }

    def __init__(
        self,
        degree="auto",
        *,
        loss="log",
        score_transform="logistic",
        n_knots=64,
        logit_bound=15.0,
        n_folds=5,
        solver="active-set",
        min_slope=1e-7,
    ):
        self.degree = degree
        self.loss = loss
        self.score_transform = score_transform
        self.n_knots = n_knots
        self.logit_bound = logit_bound
        self.n_folds = n_folds
        self.solver = solver
        self.min_slope = min_slope

    def _candidate_degrees(self):
        if isinstance(self.degree, str):
            return list(AUTO_DEGREES)
        return check_int_grid(self.degree, "degree", 1, MAX_DEGREE)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the calibration map on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores (decision values, log-odds or probabilities).
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : BernsteinCalibrator
        """
        vars(self).pop("stats_", None)  # a fit starts afresh: partial_fit's statistics go
        source = lazy_source(X, y, sample_weight)
        if source is not None:
            return self._fit_source(source)
        s, target, w, kept, n_rows = fit_inputs(self, X, y, sample_weight, positions=True)
        return self._fit_checked(s, target, w, kept, n_rows)

    def _fit_checked(self, s, target, w, kept, n_rows):
        """The in-memory fit of checked rows: what :meth:`fit` does after ``fit_inputs``.

        ``s`` float64 scores, ``target`` 0/1 float64, ``w`` positive weights (the rows
        kept), ``kept`` their positions among the ``n_rows`` rows given (the folds of a
        degree search hash them). ``classes_`` and ``n_features_in_`` are the caller's
        to set. ``TemperatureBernsteinCalibrator``'s fold refits call it directly: their
        inputs are the checked log-odds of its own fit, and a hundred refits of a
        20-class fit spent a third of their time in the checks.
        """
        exponent = score_exponent(s)
        s = rescale(s, exponent)
        params = fit_transform_params(self.score_transform, s, w, self.n_knots)
        u, _ = apply_transform(self.score_transform, s, params, with_v=False)
        # The fit reads 1 - u, not the transform's more accurate v (predict does).
        points = Points(u, 1.0 - u, target, w)
        # the folds of a degree search: a hash of each row's position in X
        grid = len(self._candidate_degrees()) > 1
        folds = fold_of(0, n_rows, self.n_folds)[kept] if grid else None
        return self._fit_points(exponent, params, points, folds)

    def _fit_source(self, source):
        """Fit on the rows of a ``_core.chunks.Source`` in passes: the same fit as in memory."""
        self._candidate_degrees()
        described = summarise(source, type(self).__name__)
        self.classes_, self.n_features_in_ = described.classes, 1
        exponent = score_exponent(np.array([described.lo, described.hi]))
        lo, hi = rescale(np.array([described.lo, described.hi]), exponent)
        params = transform_params(
            self.score_transform,
            float(lo),
            float(hi),
            lambda p: weighted_quantiles(source, p, described, lambda s: rescale(s, exponent)),
            self.n_knots,
        )
        kind = self.score_transform

        def to_u(s):
            return apply_transform(kind, rescale(s, exponent), params, with_v=False)[0]

        return self._fit_points(exponent, params, RowPasses(source, to_u, described), None)

    def _fit_points(self, exponent, params, points, folds):
        """The fit once the transform is fixed, on ``points``: ``Points`` or ``RowPasses``."""
        degrees = self._candidate_degrees()
        # a start for the fit of a single degree, set by a caller that fitted a nearby
        # problem (the folds of TemperatureBernsteinCalibrator): read once, never kept
        x0 = vars(self).pop("_warm_start", None) if len(degrees) == 1 else None
        # set by the same caller on its fit of all rows: keep the degree search's
        # approximate fold fits of the chosen degree (``_fold_fits``, popped by it)
        fold_fits = {} if vars(self).pop("_keep_fold_fits", False) else None
        forget_optional_attributes(self)
        self.score_exponent_ = exponent
        for key in TRANSFORM_KEYS:
            if key in params:
                setattr(self, key + "_", params[key])
        lo, hi = box(self.loss, float(self.logit_bound))
        if is_constant(points):
            # constant scores carry no ranking: predict the weighted base rate
            self.degree_ = degrees[0]
            self.coef_ = np.full(
                self.degree_ + 1, constant_level(self.loss, base_rate(points), lo, hi)
            )
            self.tail_slope_ = 0.0
            if len(degrees) > 1:
                record_degree_search(self, degrees, None)
            return self
        strict_tails = self.loss == "log" and self.score_transform == "logistic"
        self.tail_slope_ = TAIL_SLOPE if strict_tails and self.min_slope > 0 else 0.0

        chains = [
            Chain((d + 1,), lo, hi, float(self.min_slope), _SOLVERS[self.solver]) for d in degrees
        ]
        with single_blas_thread():
            index, self.coef_, fold_losses = fit_degree(
                CURVE,
                points,
                chains,
                self.loss,
                self.n_folds,
                folds,
                least_loss_choice,
                partial(
                    select_degree_by_steps,
                    coarse=isinstance(self.degree, str),
                    fold_fits=fold_fits,
                ),
                x0,
            )
        self.degree_ = int(degrees[index])
        if fold_fits and index in fold_fits:
            folds_used, fits = fold_fits[index]
            self._fold_fits = dict(zip(folds_used, fits, strict=True))
        if len(degrees) > 1:
            record_degree_search(self, degrees, fold_losses)
        return self

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, 2)``; see Notes for the formula."""
        return self._probabilities(X, pair=True)

    def _positive_proba(self, X):
        return self._probabilities(X, pair=False)

    def _probabilities(self, X, pair: bool):
        """``p`` (shape ``(n,)``) or ``[1 - p, p]`` (``pair``), in the dtype of the scores."""
        self._refit_if_stale()  # partial_fit's lazy fit (bernonnx._base.PartialFitMixin)
        check_is_fitted(self)
        s = predict_scores(self, X)
        params = {k: getattr(self, k + "_") for k in TRANSFORM_KEYS if hasattr(self, k + "_")}
        scaled = rescale(s, getattr(self, "score_exponent_", 0))
        n = s.shape[0]
        out = np.empty((n, 2) if pair else n, dtype=s.dtype)
        p = out[:, 1] if pair else out
        tail_slope = getattr(self, "tail_slope_", 0.0)  # 0 in models fitted before it
        logistic_tail = tail_slope and self.score_transform == "logistic"
        # one block's tail term, added while the block is in cache
        tail = np.empty(min(n, EVAL_BLOCK)) if logistic_tail else None
        if self.score_transform == "logistic":
            # u^k v^(d-k) from exp(-|z|) alone: the same polynomial, one exp per score;
            # z, the polynomial, the link and both columns block by block, in cache
            def neg_abs_z_into(sl, lower, into, scratch):
                logistic_neg_abs_z_into(scaled[sl], params, lower, into, scratch)
                if tail is not None:
                    # scratch is free once -|z| is in: the tail's sign factor goes there
                    log_tail_into(into, lower, tail_slope, tail[: into.shape[0]], scratch)

            blocks = logistic_eta_blocks(n, self.coef_, neg_abs_z_into)
        else:
            uv = apply_transform(self.score_transform, scaled, params)
            blocks = [(slice(None), CURVE.eta(*uv, self.coef_))]
        for sl, eta in blocks:
            if tail is not None:
                eta += tail[: eta.shape[0]]
            p[sl] = link(eta, self.loss, out=eta)
            if pair:
                np.subtract(1, p[sl], out=out[sl, 0])
        return out
