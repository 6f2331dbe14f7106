"""Candidate default: Platt plus a Bernstein correction shrunk toward zero (not a public API).

::

    z   = BernsteinCalibrator's logistic warp of the score (two slopes around the median)
    t   = (s - median) * tscale_      # one slope: the harmonic mean of z's two slopes
    h   = t where |t| <= K, else sign(t) (K + log(1 + |t| - K))   # far tails compressed
    u   = 1 / (1 + exp(-z))
    eta = c_0 + sum_{k>=1} (c_k - c_0) C(d, k) u^k (1 - u)^(d - k) + alpha h
    p   = 1 / (1 + exp(-eta))

with ``alpha >= 0`` and steps ``c_k - c_{k-1} >= min_step``, fitted by penalised
log loss ``sum_i w_i loss_i + lam W d sum_k (c_k - c_{k-1})^2 / 2`` (``W`` the total
weight). ``lam = inf`` is Platt scaling on ``h`` (linear in the score inside
``|t| <= K``, K = 8); ``lam = 0`` is the free sum of a linear term and the polynomial
(``LinearPlusBernstein``). ``lam`` is chosen from a grid by 5-fold CV log loss on
the default's folds (a hash of the row position), on 512 rank bins per fold
(``rule="min"``: least mean loss; ``"1se"`` / ``"2se"``: the most shrunk within one
or two paired standard errors of it): a continuous path from Platt to the free fit,
meant to vary less between neighbouring choices than a choice of degree does.
Results: ``quality_study.md`` (it did not meet the design target).
"""

from __future__ import annotations

import numpy as np
from _candidates import _loss, compress
from scipy.optimize import lsq_linear
from scipy.special import comb, expit

from bernonnx._core.points import fold_of
from bernonnx._core.transforms import fit_transform_params, logistic_z

LAMBDAS = (np.inf, 1.0, 0.1, 0.01, 1e-3, 1e-4, 0.0)
DENSE = (np.inf, *np.logspace(1, -6, 15), 0.0)


def _compressed(z, knee):
    a = np.abs(z)
    return np.where(a <= knee, z, np.sign(z) * (knee + np.log1p(np.maximum(a - knee, 0.0))))


def _fit(M, y, w, x0, lb, pen, max_iter=100):
    """Newton with bound constraints for ``sum w loss(M x) + 0.5 x^T diag(pen) x``."""

    def objective(x, eta):
        return _loss(eta, y, w) + 0.5 * float(pen @ (x * x))

    x = np.maximum(x0, lb)
    eta = M @ x
    f = objective(x, eta)
    for _ in range(max_iter):
        p = expit(eta)
        h = np.maximum(w * p * (1.0 - p), 1e-12 * np.maximum(w, 1e-300))
        g = M.T @ (w * (p - y)) + pen * x
        H = (M * h[:, None]).T @ M
        H[np.diag_indices_from(H)] += pen + 1e-12 * np.trace(H) + 1e-300
        r = np.linalg.cholesky(H).T
        rhs = np.linalg.solve(r.T, -g)
        step = lsq_linear(r, rhs, bounds=(lb - x, np.inf), method="bvls").x
        decrease = -float(g @ step)
        if decrease <= 1e-12 * max(f, 1e-300):
            break
        t = 1.0
        while t > 1e-10:
            xn = np.maximum(x + t * step, lb)
            eta_new = M @ xn
            f_new = objective(xn, eta_new)
            if f_new <= f - 1e-4 * t * decrease:
                break
            t *= 0.5
        else:
            break
        x, eta, f = xn, eta_new, f_new
    return x


class ShrunkBernstein:
    """See the module docstring. ``degree_`` is the index of the ``lam`` chosen in
    ``lambdas`` (0: Platt on ``h``; the last: no penalty), so that the study's degree
    column shows the choice."""

    def __init__(
        self, degree=16, lambdas=LAMBDAS, knee=8.0, n_folds=5, min_slope=1e-7, rule="min"
    ):
        self.rule = rule
        self.degree = degree
        self.lambdas = lambdas
        self.knee = knee
        self.n_folds = n_folds
        self.min_slope = min_slope

    def _design(self, s):
        z = logistic_z(s, self.params_)
        d = self.degree
        u, v = expit(z), expit(-z)
        k = np.arange(d + 1)
        with np.errstate(under="ignore"):
            basis = comb(d, k) * u[:, None] ** k * v[:, None] ** (d - k)
        # x = (c_0, steps, alpha): column j < d + 1 is the sum of basis columns k >= j
        cum = np.cumsum(basis[:, ::-1], axis=1)[:, ::-1]
        # the linear term: one slope (Platt's feature, affine in s), far tails compressed
        t = (s - self.params_["shift"]) * self.tscale_
        return np.hstack([cum, _compressed(t, self.knee)[:, None]])

    def _bounds(self, lam, total):
        d = self.degree
        step = self.min_slope * 30.0 / d
        lb = np.r_[-np.inf, np.full(d, step), 0.0]
        if np.isinf(lam):
            # Platt on h: the steps pinned at their floor
            pen = np.r_[0.0, np.full(d, 1e12 * total), 0.0]
        else:
            pen = np.r_[0.0, np.full(d, lam * total * d), 0.0]
        return lb, pen

    def _start(self, y, w):
        rate = np.clip(np.average(y, weights=w), 1e-6, 1 - 1e-6)
        return np.r_[np.log(rate / (1 - rate)), np.zeros(self.degree), 0.5]

    def fit(self, s, y, sample_weight=None):
        s = np.asarray(s, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64)
        w = np.ones_like(s) if sample_weight is None else np.asarray(sample_weight, float)
        self.params_ = fit_transform_params("logistic", s, w)
        slopes = [self.params_["scale"], self.params_["scale_below"]]
        self.tscale_ = 2.0 / (1.0 / slopes[0] + 1.0 / slopes[1]) if min(slopes) > 0 else 0.0
        folds = fold_of(0, s.shape[0], self.n_folds)
        rows = []
        for k in range(self.n_folds):
            # 512 rank bins of the scores per side (the CV only; the final fit is on the rows)
            s_tr, ytr, wtr = compress(s[folds != k], y[folds != k], w[folds != k])
            s_te, yte, wte = compress(s[folds == k], y[folds == k], w[folds == k])
            Mtr, Mte = self._design(s_tr), self._design(s_te)
            x, row = self._start(ytr, wtr), []
            for lam in self.lambdas:  # from Platt to the free fit, warm-started
                x = _fit(Mtr, ytr, wtr, x, *self._bounds(lam, wtr.sum()))
                row.append(_loss(Mte @ x, yte, wte) / wte.sum())
            rows.append(row)
        rows = np.asarray(rows)
        self.cv_log_loss_ = rows.mean(axis=0)
        pick = int(np.argmin(self.cv_log_loss_))
        if self.rule != "min":
            # the most shrunk lam whose loss is within k paired standard errors of the best
            k = {"1se": 1.0, "2se": 2.0}[self.rule]
            diff = rows - rows[:, [pick]]
            se = diff.std(axis=0, ddof=1) / np.sqrt(rows.shape[0])
            pick = int(np.flatnonzero(diff.mean(axis=0) <= k * se)[0])
        self.lam_, self.degree_ = self.lambdas[pick], pick
        self.x_ = _fit(self._design(s), y, w, self._start(y, w), *self._bounds(self.lam_, w.sum()))
        return self

    def predict_proba(self, s):
        p = expit(self._design(np.asarray(s, dtype=np.float64).ravel()) @ self.x_)
        return np.stack([1.0 - p, p], axis=1)
