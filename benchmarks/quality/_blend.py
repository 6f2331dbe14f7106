"""Candidate default: a blend of Platt scaling and the default (not a public API).

A blend lowers variance instead of sharpening a selection rule: the default and
Platt are both fitted on all the calibration rows, and their log-odds (or
probabilities) averaged::

    eta_P = slope * s + intercept                  # PlattCalibrator() on the same scores
    eta_B = log-odds of BernsteinCalibrator()      # the default, its degree by its own CV
    eta   = w eta_P + (1 - w) eta_B                # space="logit"
    p     = 1 / (1 + exp(-eta))                    # (space="prob": p = w p_P + (1 - w) p_B)

``w = 1`` is Platt exactly, ``w = 0`` the default. Both maps are increasing in the
score (Platt's slope is constrained non-negative, the default strictly increasing),
so for ``w < 1`` the blend is strictly increasing too, and it exports as one graph:
both calibrators' nodes on the one score, a weighted Add, one Sigmoid.

``weight="cv"`` picks ``w`` from ``WEIGHTS`` by 5-fold cross-validated log loss of
the out-of-fold blends (both calibrators refitted on each fold's training rows, the
default's folds: a hash of the row position); ``rule="1se"`` takes the smallest
``w`` (closest to the default) within one paired standard error of the best,
``rule="1se-platt"`` the largest (closest to Platt).
``bag=True`` replaces ``eta_B`` by the mean of the five fold fits' log-odds and the
full fit's (a cross-fitted bag of the default, no extra fits). ``weight="stack"``
fits ``eta = a + b_P eta_P + b_B eta_B`` (``b >= 0``) by logistic regression on the
out-of-fold log-odds: a stacked default.

The attribute ``degree_`` holds ``round(10 w)`` (10: Platt) so that the quality
study's per-case table shows the weight chosen.
Chosen on the tuning split (credit, magic; seeds 0-2) before any held-out run:
``blend-cv`` (10/10 wins, worst -0.018%, the simplest that won all ten) as the
candidate, and ``stack`` (10/10, worst -0.017%, 28/30 per-seed wins) as the runner-up.
Results: ``quality_floor.md``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from bernonnx import BernsteinCalibrator, PlattCalibrator
from bernonnx._core.points import fold_of

WEIGHTS = np.round(np.linspace(0.0, 1.0, 11), 10)


def _bern_eta(model, s):
    proba = model.predict_proba(s)
    # both columns are computed from exp(-|z|): log of each keeps the tails exact
    with np.errstate(divide="ignore"):
        return np.log(proba[:, 1]) - np.log(proba[:, 0])


def _platt_eta(model, s):
    return model.slope_ * np.ldexp(s, model.score_exponent_) + model.intercept_


def _row_loss(eta, y):
    return -(y * log_expit(eta) + (1 - y) * log_expit(-eta))


class PlattBernsteinBlend:
    """``w`` Platt + ``(1 - w)`` default in log-odds or probability; see the module."""

    def __init__(self, weight="cv", *, space="logit", rule="min", bag=False, n_folds=5):
        self.weight, self.space, self.rule, self.bag, self.n_folds = (
            weight,
            space,
            rule,
            bag,
            n_folds,
        )

    def _blend(self, eta_p, eta_b, w):
        if self.space == "logit":
            return expit(w * eta_p + (1.0 - w) * eta_b)
        return w * expit(eta_p) + (1.0 - w) * expit(eta_b)

    def fit(self, s, y):
        s = np.asarray(s, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64)
        self.platt_ = PlattCalibrator().fit(s, y)
        self.bern_ = BernsteinCalibrator().fit(s, y)
        self.folds_models_ = []
        if self.weight in ("cv", "stack") or self.bag:
            folds = fold_of(0, s.shape[0], self.n_folds)
            oof_p, oof_b = np.empty_like(s), np.empty_like(s)
            for k in range(self.n_folds):
                train, held = folds != k, folds == k
                platt = PlattCalibrator().fit(s[train], y[train])
                bern = BernsteinCalibrator().fit(s[train], y[train])
                self.folds_models_.append(bern)
                oof_p[held], oof_b[held] = _platt_eta(platt, s[held]), _bern_eta(bern, s[held])
        if self.weight == "stack":
            self.coef_ = self._stack(oof_p, oof_b, y)
            self.weight_ = self.coef_[1] / max(self.coef_[1] + self.coef_[2], 1e-300)
        elif self.weight == "cv":
            eps = np.finfo(np.float64).eps
            losses = []
            for w in WEIGHTS:
                p = np.clip(self._blend(oof_p, oof_b, w), eps, 1 - eps)
                losses.append(-(y * np.log(p) + (1 - y) * np.log1p(-p)))
            losses = np.asarray(losses)  # (weights, rows)
            per_fold = np.stack([losses[:, folds == k].mean(axis=1) for k in range(self.n_folds)])
            mean = per_fold.mean(axis=0)
            pick = int(np.argmin(mean))
            if self.rule != "min":
                diff = per_fold - per_fold[:, [pick]]
                se = diff.std(axis=0, ddof=1) / np.sqrt(self.n_folds)
                within = np.flatnonzero(diff.mean(axis=0) <= se)
                pick = int(within[0] if self.rule == "1se" else within[-1])
            self.cv_log_loss_ = mean
            self.weight_ = float(WEIGHTS[pick])
        else:
            self.weight_ = float(self.weight)
        self.degree_ = int(round(10 * self.weight_))
        return self

    @staticmethod
    def _stack(eta_p, eta_b, y):
        X = np.stack([np.ones_like(eta_p), eta_p, eta_b], axis=1)

        def f(c):
            eta = X @ c
            return _row_loss(eta, y).sum(), X.T @ (expit(eta) - y)

        bounds = [(None, None), (0.0, None), (0.0, None)]
        return minimize(f, np.array([0.0, 0.0, 1.0]), jac=True, bounds=bounds).x

    def _eta_b(self, s):
        if not self.bag:
            return _bern_eta(self.bern_, s)
        models = [self.bern_, *self.folds_models_]
        return np.mean([_bern_eta(m, s) for m in models], axis=0)

    def predict_proba(self, s):
        s = np.asarray(s, dtype=np.float64).ravel()
        eta_p, eta_b = _platt_eta(self.platt_, s), self._eta_b(s)
        if self.weight == "stack":
            a, b_p, b_b = self.coef_
            p = expit(a + b_p * eta_p + b_b * eta_b)
        else:
            p = self._blend(eta_p, eta_b, self.weight_)
        return np.stack([1.0 - p, p], axis=1)
