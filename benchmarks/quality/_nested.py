"""Prototype defaults that nest the peers' best maps (study code, not library code).

Binary, ``NestedBinary``: three strictly increasing parametric maps of the log-odds ``t``
the default reads (``CalibratedClassifier``'s score, non-saturating where the model gives
log-probabilities), each a logistic regression on increasing features with non-negative
slopes:

* ``affine``: ``a t + c`` (Platt; a >= 0);
* ``beta``: ``a log p - b log(1 - p) + c`` with ``p = sigmoid(t)`` (Kull, Silva Filho and
  Flach 2017, "Beta calibration"; a, b >= 0), i.e. ``-a softplus(-t) + b softplus(t) + c``;
* ``quadratic``: ``c + a u + b u^2`` on ``u``, the score centred at its median, scaled by
  its interquartile range and log-compressed beyond 4 (``4 + log(1 + |u| - 4)``, keeps the
  far tails of naive Bayes log-odds from driving the square), parametrised by its slopes
  at the smallest and the largest calibration ``u`` (both >= 0: increasing on the range)
  and continued linearly beyond it.

The family of least 5-fold cross-validated log loss on the calibration rows (the default's
folds, a hash of the row position) is taken. The Bernstein correction is then tried: either
``BernsteinCalibrator()`` on the chosen map's log-odds (``"corr"``), or the default itself
on ``t`` (``"default"``), each scored by the same 5-fold cross-validation (refitted inside
each fold). It is kept only when its mean held-out loss is below the parametric map's by
more than ``k`` standard errors of the row-wise differences.

The multiclass prototype (probmetrics' SMS, then ``TemperatureBernsteinCalibrator``) is now
the library's multiclass default, ``TemperatureBernsteinCalibrator(scaling="sms")``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bernonnx import BernsteinCalibrator
from bernonnx._core.increasing import FAMILIES, IncreasingLogistic, row_loss
from bernonnx._core.points import fold_of

EPS = np.finfo(np.float64).eps
#: the library's parametric maps (``StackedCalibrator``'s members), the study's since 2026-12
_Increasing = IncreasingLogistic


def _oof(make, t, y, folds):
    """Out-of-fold log-odds of ``make(t, y)`` over the folds."""
    eta = np.empty(t.shape[0])
    for k in np.unique(folds):
        tr, te = folds != k, folds == k
        eta[te] = make(t[tr], y[tr])(t[te])
    return eta


def _param(family, conv):
    def make(s, y):
        fit = _Increasing(family).fit(conv(s), y)
        return lambda s2: fit.log_odds(conv(s2))

    return make


def _bern_on(family, conv):
    def make(s, y):
        base = _Increasing(family).fit(conv(s), y)
        corr = BernsteinCalibrator().fit(base.log_odds(conv(s)), y)
        return lambda s2: _logit(corr.predict_proba(base.log_odds(conv(s2)))[:, 1])

    return make


def _identity(s):
    return s


def probability_log_odds(p):
    """The log-odds of a probability score, clipped at float64's epsilon (as betacal)."""
    return _logit(p)


def _default(t, y):
    cal = BernsteinCalibrator().fit(t, y)
    return lambda s: _logit(cal.predict_proba(s)[:, 1])


def _logit(p):
    p = np.clip(p, EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


class NestedBinary:
    """Every variant's test log-odds from one set of cross-validated fits (see module doc)."""

    def fit_predict(self, s_cal, y_cal, s_test, n_folds=5, conv=_identity):
        """``s``: the score the default reads; ``conv(s)``: its log-odds, the maps' input."""
        y = y_cal.astype(np.float64)
        folds = fold_of(0, s_cal.shape[0], n_folds)
        oof = {f: _oof(_param(f, conv), s_cal, y, folds) for f in FAMILIES}
        cv = {f: row_loss(y, oof[f]).mean() for f in FAMILIES}
        fam = min(FAMILIES, key=cv.get)
        out = {f"param:{f}": _param(f, conv)(s_cal, y)(s_test) for f in FAMILIES}
        out["param-cv"] = out[f"param:{fam}"]
        alt = {
            "corr": (_bern_on(fam, conv), lambda: _bern_on(fam, conv)(s_cal, y)(s_test)),
            "default": (_default, lambda: _default(s_cal, y)(s_test)),
        }
        info = {"family": fam}
        for name, (make, final) in alt.items():
            d = row_loss(y, _oof(make, s_cal, y, folds)) - row_loss(y, oof[fam])
            z = -d.mean() / (d.std(ddof=1) / np.sqrt(d.shape[0]) + 1e-300)
            eta_alt = final()
            info[f"z_{name}"] = z
            for k in (0, 1, 2):
                out[f"nest-{name}-{k}se"] = eta_alt if z > k else out["param-cv"]
        return {k: expit(v) for k, v in out.items()}, info
