"""Candidate default calibrators for the quality study (not a public API).

Prototypes built from numpy/scipy and the public bernonnx estimators, so the
library's internals can change under them. Each candidate is a score-level
calibrator (``fit(scores, y)``, ``predict_proba(scores)``): what
``CalibratedClassifier`` would plug in as ``calibrator=``.

``AffineBernstein`` nests Platt scaling in the Bernstein log-loss family::

    u   = (s - lo_) / (hi_ - lo_)                 # affine; lo_, hi_ = weighted
                                                  # quantiles tail, 1 - tail of s
    c   = coef_, d = degree_                      # c_0 < c_1 < ... < c_d
    eta = sum_k c_k C(d, k) w^k (1 - w)^(d - k)    # w = clip(u, 0, 1)
        + d (c_1 - c_0) min(u, 0)                 # C1 linear continuation
        + d (c_d - c_{d-1}) max(u - 1, 0)         # on both sides
    p   = 1 / (1 + exp(-eta))

Degree 1 is ``eta = c_0 + (c_1 - c_0) u``, linear in ``s``: Platt scaling
exactly, on the whole real line. Every degree is strictly increasing
everywhere (``c_k - c_{k-1} >= min_step > 0``; the end slopes are positive),
so the ranking of scores, hence the AUC, is kept. The ONNX graph needs Sub,
Mul, Clip, Min, Max, the Bernstein basis and Sigmoid: all emitted already.

The degree comes from ``(1, 2, 3, 4, 6, 8, 10, 13, 16, 20)`` by 5-fold
cross-validated log loss with the one-standard-error rule (the smallest degree
within one paired standard error of the best), folds interleaved over the
sorted scores (``BernsteinCalibrator``'s rule until its folds became a hash of
the row's position); so Platt is preferred unless the data show
otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import lsq_linear
from scipy.special import comb, expit

from bernonnx._core.degree import one_standard_error_choice

DEGREES = (1, 2, 3, 4, 6, 8, 10, 13, 16, 20)


def weighted_quantile(s, w, q):
    order = np.argsort(s, kind="stable")
    cw = np.cumsum(w[order])
    return np.interp(np.asarray(q) * cw[-1], cw - 0.5 * w[order], s[order])


def design(u: np.ndarray, d: int) -> np.ndarray:
    """Rows ``r`` with ``eta = r @ c``: the Bernstein basis on ``[0, 1]`` and its
    C1 linear continuation outside. Shape ``(n, d + 1)``."""
    w = np.clip(u, 0.0, 1.0)
    k = np.arange(d + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        basis = comb(d, k) * w[:, None] ** k * (1.0 - w[:, None]) ** (d - k)
    below, above = np.minimum(u, 0.0), np.maximum(u - 1.0, 0.0)
    basis[:, 0] -= d * below
    basis[:, 1] += d * below
    basis[:, d] += d * above
    basis[:, d - 1] -= d * above
    return basis


def _loss(eta, y, w):
    return float(w @ (np.logaddexp(0.0, eta) - y * eta))


def fit_increasing_logistic(A, y, w, x0, min_step, extra=None, max_iter=100):
    """min sum w [log(1 + e^eta) - y eta] over increasing coefficients.

    ``eta = A c + extra @ alpha`` with ``c = cumsum(x)``, ``x = (c_0, steps)``,
    ``steps >= min_step`` and ``alpha >= 0`` (the coefficients of the ``extra``
    columns, non-decreasing in the score). Each Newton step is a bounded
    least-squares problem (BVLS on the Hessian's Cholesky factor), then a
    backtracking line search on the exact objective. Returns ``(c, alpha)``.
    """
    d = A.shape[1] - 1
    # A T: column j is the sum of columns k >= j of A
    M = np.cumsum(A[:, ::-1], axis=1)[:, ::-1]
    n_extra = 0 if extra is None else extra.shape[1]
    if n_extra:
        M = np.hstack([M, extra])
    lb = np.r_[-np.inf, np.full(d, min_step), np.zeros(n_extra)]
    x = np.maximum(x0, lb)
    eta = M @ x
    f = _loss(eta, y, w)
    for _ in range(max_iter):
        p = expit(eta)
        h = np.maximum(w * p * (1.0 - p), 1e-12 * np.maximum(w, 1e-300))
        g = M.T @ (w * (p - y))
        H = (M * h[:, None]).T @ M
        H[np.diag_indices_from(H)] += 1e-12 * np.trace(H) + 1e-300
        r = np.linalg.cholesky(H).T  # H = r^T r
        rhs = np.linalg.solve(r.T, -g)  # ||r step - rhs||^2 = step^T H step + 2 g^T step + const
        step = lsq_linear(r, rhs, bounds=(lb - x, np.inf), method="bvls").x
        decrease = -float(g @ step)
        if decrease <= 1e-12 * max(f, 1e-300):
            break
        t = 1.0
        while t > 1e-10:
            eta_new = M @ (x + t * step)
            f_new = _loss(eta_new, y, w)
            if f_new <= f - 1e-4 * t * decrease:
                break
            t *= 0.5
        else:
            break
        x = np.maximum(x + t * step, lb)
        eta, f = M @ x, f_new
    return np.cumsum(x[: d + 1]), x[d + 1 :]


def compress(u, y, w, n_bins=512):
    """Weighted per-(rank bin, class) means of ``u``: at most ``2 n_bins`` points.

    Rank bins, not equal-width ones: heavy-tailed scores keep their bulk
    resolved. Used inside the degree search only (the final fit is exact).
    """
    if u.shape[0] <= 2 * n_bins:
        return u, y, w
    rank = np.empty(u.shape[0], dtype=np.int64)
    rank[np.argsort(u, kind="stable")] = np.arange(u.shape[0])
    idx = 2 * (rank * n_bins // u.shape[0]) + (y > 0.5)
    wt = np.bincount(idx, weights=w, minlength=2 * n_bins)
    wu = np.bincount(idx, weights=w * u, minlength=2 * n_bins)
    keep = wt > 0
    return wu[keep] / wt[keep], (np.flatnonzero(keep) % 2).astype(np.float64), wt[keep]


def _linear_start(c_lin, d):
    """Coefficients of the degree-1 map ``c0 + (c1 - c0) u`` at degree ``d``, as steps."""
    c = c_lin[0] + (c_lin[1] - c_lin[0]) * np.arange(d + 1) / d
    return np.r_[c[0], np.diff(c)]


class AffineBernstein:
    """Bernstein log-loss calibrator on an affine map of the score (Platt nested).

    Parameters
    ----------
    degrees : tuple of int
        Candidate degrees, smallest first; one entry fixes the degree.
    tail : float
        ``lo_`` and ``hi_`` are the weighted ``tail`` and ``1 - tail``
        quantiles of the scores (0: min and max).
    n_folds : int
    min_slope : float
        As ``BernsteinCalibrator``: steps ``>= min_slope * 30 / d``.
    """

    def __init__(self, degrees=DEGREES, tail=0.0, n_folds=5, min_slope=1e-7):
        self.degrees = tuple(degrees)
        self.tail = tail
        self.n_folds = n_folds
        self.min_slope = min_slope

    def _u(self, s):
        return (np.asarray(s, dtype=np.float64) - self.lo_) * self.inv_

    def _fit_degree(self, u, y, w, d, c_lin=None):
        if c_lin is None:
            rate = np.clip(np.average(y, weights=w), 1e-6, 1 - 1e-6)
            c_lin = np.array([np.log(rate / (1 - rate)), np.log(rate / (1 - rate)) + 1.0])
        return fit_increasing_logistic(
            design(u, d), y, w, _linear_start(c_lin, d), self.min_slope * 30.0 / d
        )[0]

    def fit(self, s, y, sample_weight=None):
        s = np.asarray(s, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64)
        w = np.ones_like(s) if sample_weight is None else np.asarray(sample_weight, float)
        lo, hi = weighted_quantile(s, w, [self.tail, 1.0 - self.tail])
        if not hi > lo:
            lo, hi = s.min(), s.max()
        self.lo_, self.inv_ = float(lo), (1.0 / float(hi - lo) if hi > lo else 0.0)
        u = self._u(s)
        degrees = self.degrees
        if len(degrees) > 1:
            fold = np.empty(s.shape[0], dtype=np.int64)
            fold[np.argsort(s, kind="stable")] = np.arange(s.shape[0]) % self.n_folds
            rows = []
            for k in range(self.n_folds):
                tr, te = fold != k, fold == k
                tr = compress(u[tr], y[tr], w[tr])
                te = compress(u[te], y[te], w[te])
                c_lin = self._fit_degree(*tr, 1)
                row = []
                for d in degrees:
                    c = c_lin if d == 1 else self._fit_degree(*tr, d, c_lin)
                    row.append(_loss(design(te[0], d) @ c, te[1], te[2]) / te[2].sum())
                rows.append(row)
            self.cv_log_loss_ = np.asarray(rows).mean(axis=0)
            self.degree_ = int(degrees[one_standard_error_choice(np.asarray(rows))])
        else:
            self.degree_ = int(degrees[0])
        c_lin = self._fit_degree(u, y, w, 1)
        self.coef_ = c_lin if self.degree_ == 1 else self._fit_degree(u, y, w, self.degree_, c_lin)
        return self

    def predict_proba(self, s):
        p = expit(design(self._u(s), self.degree_) @ self.coef_)
        return np.stack([1.0 - p, p], axis=1)


_TAIL_LOGIT = float(np.log(9.0))


class LinearPlusBernstein:
    """Platt's linear log-odds plus a Bernstein polynomial of the default transform.

    ::

        d   = s - shift_                         # shift_: weighted median
        z   = scale_ max(d, 0) + scale_below_ min(d, 0)  # BernsteinCalibrator's
        u   = 1 / (1 + exp(-z)), v = 1 / (1 + exp(z))     # "logistic" transform
        t   = d * tscale_                        # affine in s (tscale_ > 0)
        eta = sum_k c_k C(D, k) u^k v^(D - k) + alpha_ t    # c increasing, alpha_ >= 0
        p   = 1 / (1 + exp(-eta))

    Degree ``D = 0`` is Platt scaling exactly (``c_0 + alpha_ t``); every
    degree ``D >= 1`` is strictly increasing in ``s`` (steps ``>= min_step``)
    and, far out, follows Platt's linear log-odds instead of a constant. The
    degree (0 included) comes from 5-fold CV with the one-standard-error
    rule, so Platt wins ties. The graph adds one Mul and one Add to
    ``BernsteinCalibrator``'s. (A library version must also bound ``alpha_``
    below by a positive margin, as the steps are, so that degree 0 stays
    strictly increasing; this prototype only asks ``alpha_ >= 0``.)
    """

    def __init__(
        self,
        degrees=(0, 2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32),
        n_folds=5,
        min_slope=1e-7,
        linear=True,
        rule="1se",
        platt_targets=False,
    ):
        self.degrees = tuple(degrees)
        self.n_folds = n_folds
        self.min_slope = min_slope
        self.linear = linear
        self.rule = rule
        self.platt_targets = platt_targets

    def _features(self, s):
        dlt = np.asarray(s, dtype=np.float64) - self.shift_
        z = np.maximum(dlt, 0.0) * self.scale_ + np.minimum(dlt, 0.0) * self.scale_below_
        return expit(z), expit(-z), (dlt * self.tscale_)[:, None]

    def _basis(self, s, d):
        u, v, t = self._features(s)
        k = np.arange(d + 1)
        basis = comb(d, k) * u[:, None] ** k * v[:, None] ** (d - k)
        return basis, (t if self.linear else None)

    def _fit_degree(self, s, y, w, d, start=None):
        basis, t = self._basis(s, d)
        if start is None:
            rate = np.clip(np.average(y, weights=w), 1e-6, 1 - 1e-6)
            start = (np.log(rate / (1 - rate)), 0.0)
        level, alpha = start
        x0 = np.r_[level, np.zeros(d), [alpha] if self.linear else []]
        return fit_increasing_logistic(basis, y, w, x0, self.min_slope * 30.0 / max(d, 1), extra=t)

    def _eta(self, s, d, coef):
        basis, t = self._basis(s, d)
        c, alpha = coef
        return basis @ c + (t @ alpha if t is not None else 0.0)

    def fit(self, s, y, sample_weight=None):
        s = np.asarray(s, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64)
        w = np.ones_like(s) if sample_weight is None else np.asarray(sample_weight, float)
        if self.platt_targets:  # Platt (1999) / scikit-learn's sigmoid: smoothed labels
            n_pos, n_neg = w @ (y > 0.5), w @ (y <= 0.5)
            y = np.where(y > 0.5, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
        lo, mid, hi = weighted_quantile(s, w, [0.1, 0.5, 0.9])
        below = mid - lo if lo < mid else mid - s.min()
        above = hi - mid if hi > mid else s.max() - mid
        below = below if below > 0 else above
        above = above if above > 0 else below
        self.shift_ = float(mid)
        self.scale_ = _TAIL_LOGIT / above if above > 0 else 0.0
        self.scale_below_ = _TAIL_LOGIT / below if below > 0 else 0.0
        spread = hi - lo if hi > lo else s.max() - s.min()
        self.tscale_ = 1.0 / spread if spread > 0 else 0.0
        degrees = self.degrees
        if len(degrees) > 1:
            fold = np.empty(s.shape[0], dtype=np.int64)
            fold[np.argsort(s, kind="stable")] = np.arange(s.shape[0]) % self.n_folds
            rows = []
            for k in range(self.n_folds):
                tr = compress(s[fold != k], y[fold != k], w[fold != k])
                te = compress(s[fold == k], y[fold == k], w[fold == k])
                row, start = [], None
                for d in degrees:
                    coef = self._fit_degree(*tr, d, start)
                    if d == degrees[0]:
                        start = (coef[0][0], coef[1][0] if self.linear else 0.0)
                    eta = self._eta(te[0], d, coef)
                    row.append(_loss(eta, te[1], te[2]) / te[2].sum())
                rows.append(row)
            rows = np.asarray(rows)
            self.cv_log_loss_ = rows.mean(axis=0)
            pick = one_standard_error_choice(rows) if self.rule == "1se" else rows.mean(0).argmin()
            self.degree_ = int(degrees[pick])
        else:
            self.degree_ = int(degrees[0])
        self.coef_ = self._fit_degree(s, y, w, self.degree_)
        return self

    def predict_proba(self, s):
        p = expit(self._eta(s, self.degree_, self.coef_))
        return np.stack([1.0 - p, p], axis=1)


class PlattOrBernstein:
    """``BernsteinCalibrator()`` or Platt scaling, whichever has the lower 5-fold CV log loss.

    A cross-validated choice between the two families (the quality target's "cross-validated
    choice between families"): Platt's CV log loss on the folds of the Bernstein
    degree search (``fold_of``, a hash of the row's position), against the least
    mean CV log loss of the Bernstein candidates (``cv_log_loss_``; that minimum
    over 13 degrees is biased low, which favours the default). ``degree_`` is the
    Bernstein degree, or 0 when Platt is chosen.
    """

    def __init__(self, n_folds: int = 5):
        self.n_folds = n_folds

    def fit(self, s, y, sample_weight=None):
        from bernonnx import BernsteinCalibrator, PlattCalibrator
        from bernonnx._core.points import fold_of

        s, y = np.asarray(s, dtype=float), np.asarray(y)
        bernstein = BernsteinCalibrator(n_folds=self.n_folds).fit(s, y)
        positive = y == bernstein.classes_[1]
        folds = fold_of(0, s.shape[0], self.n_folds)
        losses = []
        for k in range(self.n_folds):
            train, held = folds != k, folds == k
            p = PlattCalibrator().fit(s[train], y[train]).predict_proba(s[held])[:, 1]
            p = np.clip(p, 1e-15, 1 - 1e-15)
            losses.append(-np.mean(np.where(positive[held], np.log(p), np.log1p(-p))))
        self.platt_cv_log_loss_ = float(np.mean(losses))
        # NaN for the candidates degree="auto" did not score
        self.bernstein_cv_log_loss_ = float(np.nanmin(bernstein.cv_log_loss_))
        if self.platt_cv_log_loss_ < self.bernstein_cv_log_loss_:
            self.chosen_, self.degree_ = PlattCalibrator().fit(s, y), 0
        else:
            self.chosen_, self.degree_ = bernstein, bernstein.degree_
        return self

    def predict_proba(self, s):
        return self.chosen_.predict_proba(np.asarray(s, dtype=float))
