"""Inductive Venn-Abers prediction (IVAP; Vovk and Petej 2014, Vovk, Petej and Fedorova
2015): two isotonic regressions per test score, one with the test object labelled 0 and
one labelled 1, merged into one probability.

The ONNX converter (``converters/venn_abers.py``) emits the lookup ``predict_proba``
evaluates (see the Notes).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from bernonnx._base import PartialFitMixin, TableFitMixin, _ScoreCalibrator
from bernonnx._validation import _fit_context, predict_scores

__all__ = ["VennAbersCalibrator"]

#: A score within this distance, relative to its magnitude (absolute below 1), of a
#: calibration score counts as equal to it: the score a base model's graph gives can be
#: a few units in the last place off Python's (a dot product summed in another order),
#: and a Venn-Abers map jumps at every calibration score.
TIE_TOLERANCE = 1e-12


def tie_band(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s - t`` and ``s + t``, ``t = TIE_TOLERANCE * max(|s|, 1)`` (the graph's ops)."""
    t = np.maximum(np.abs(s), 1.0) * TIE_TOLERANCE
    with np.errstate(over="ignore"):  # s near the float max: +-inf, counted as in the graph
        return s - t, s + t


def _p1_table(P: np.ndarray) -> np.ndarray:
    """``p1[i]``: the isotonic value at a test object of label 1 and weight 1 placed after
    the ``i``-th distinct score, from the cumulative sum diagram ``P`` (``P[0] = (0, 0)``,
    ``P[j]`` = weight and positive weight up to the ``j``-th distinct score). The
    ``venn-abers`` package's ``calc_p0p1``, step for step, its counts as weights."""
    k = P.shape[0] - 1
    out = np.zeros(k + 1)
    Q = P + 1.0  # points after the test object are shifted by its (1, 1)
    c_point, grad = 0, 0.0
    for i in range(k + 1):
        Q[i] -= 1.0
        if i == 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                grad = np.nanmin(Q[1:, 1] / Q[1:, 0]) if k else 1.0
        elif Q[i, 1] < Q[c_point, 1] + (Q[i, 0] - Q[c_point, 0]) * grad:
            if i < k:
                with np.errstate(divide="ignore", invalid="ignore"):
                    grad = np.min((Q[i + 1 :, 1] - Q[i, 1]) / (Q[i + 1 :, 0] - Q[i, 0]))
            c_point = i
        out[i] = grad
    out[-1] = 1.0
    return out


def _p0_table(P: np.ndarray) -> np.ndarray:
    """``p0[i]``: the same with the test object labelled 0 (``calc_p0p1``'s second pass)."""
    k = P.shape[0] - 1
    out = np.zeros(k + 1)
    Q = P.copy()
    c_point, grad = k, 0.0
    for i in range(k, -1, -1):
        Q[i, 0] += 1.0
        if i == k:
            grad = np.max((Q[:k, 1] - Q[k, 1]) / (Q[:k, 0] - Q[k, 0])) if k else 0.0
        elif Q[i, 1] < Q[c_point, 1] + (Q[i, 0] - Q[c_point, 0]) * grad:
            grad = max(np.max((Q[:i, 1] - Q[i, 1]) / (Q[:i, 0] - Q[i, 0])), 0.0) if i else 0.0
            c_point = i
        out[i] = grad
    return out


class VennAbersCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    r"""Inductive Venn-Abers calibration: the interval ``(p0, p1)`` and its merged
    probability ``p1 / (1 - p0 + p1)``.

    For a test score ``s``, ``p0`` is the isotonic regression of the calibration
    labels with ``(s, 0)`` added, evaluated at ``s``, and ``p1`` the same with
    ``(s, 1)`` (Vovk and Petej 2014). The pair is a multiprobability prediction
    whose one member is calibrated (Venn predictors are valid); the merged
    probability minimises the worst log-loss regret (Vovk, Petej and Fedorova
    2015). Both ``p0`` and ``p1`` are non-decreasing step functions of the score,
    so the merged probability is too: the ranking is kept up to ties within a
    step, as with isotonic regression. Only the order of the scores matters
    (any increasing transform of them gives the same map), so probabilities,
    log-odds and decision values are all taken as they are.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    scores_ : ndarray of shape (k,)
        The distinct calibration scores, increasing (float64).
    p0_, p1_ : ndarray of shape (k + 1,)
        ``p0`` for a score with ``i`` calibration scores at or below it is
        ``p0_[i]``; ``p1`` for a score with ``i`` calibration scores strictly
        below it is ``p1_[i]``.
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        t = max(|s|, 1) * 1e-12
        p0 = p0_[#{scores_ <= s + t}];  p1 = p1_[#{scores_ < s - t}]
        p = p1 / max(1 - p0 + p1, 1e-300);  predict_proba = [1 - p, p]

    and :meth:`predict_interval` gives ``[p0, p1]``. A score within ``t`` of a
    calibration score counts as equal to it (a test object tied with a
    calibration object): the scores a base model's graph computes may differ
    from Python's in the last bits, and the map jumps at each calibration
    score; on the rows the calibrator was fitted on, exact equality would make
    the graph and Python disagree there. The tables are computed as
    the ``venn-abers`` package (Petej, 1.5.4) computes them (``calc_p0p1``, the
    greatest convex minorant of the cumulative sum diagram with the test object
    inserted, Vovk, Petej and Fedorova 2015, Algorithms 1 to 4), with total
    weights in place of counts: weight ``k`` equals ``k`` repeated rows, and
    the test object weighs 1.

    References
    ----------
    V. Vovk and I. Petej, "Venn-Abers predictors", UAI 2014.
    V. Vovk, I. Petej and V. Fedorova, "Large-scale probabilistic predictors
    with and without guarantees of validity", NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import VennAbersCalibrator
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(2000)
    >>> cal = VennAbersCalibrator().fit(p, rng.random(2000) < p)
    >>> cal.predict_interval([0.2, 0.8]).round(2)
    array([[0.19, 0.19],
           [0.79, 0.8 ]])
    >>> cal.predict_proba([0.2, 0.8])[:, 1].round(2)
    array([0.19, 0.8 ])
    """

    _parameter_constraints: dict = {}

    def __init__(self):
        pass

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Compute the ``p0`` and ``p1`` tables from scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores of any monotone scale.
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : VennAbersCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        order = np.argsort(s, kind="stable")
        xs = s[order]
        first = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
        P = np.zeros((first.shape[0] + 1, 2))
        P[1:, 0] = np.cumsum(np.add.reduceat(w[order], first))
        P[1:, 1] = np.cumsum(np.add.reduceat((w * target)[order], first))
        self.scores_ = xs[first]
        self.p0_, self.p1_ = _p0_table(P), _p1_table(P)
        return self

    def predict_interval(self, X):
        """The Venn-Abers interval ``[p0, p1]`` of each score.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)

        Returns
        -------
        interval : ndarray of shape (n_samples, 2)
            ``p0 <= p1`` in float64 (the graph's ``interval`` output), whatever the
            scores' dtype: the table values are float64 fractions of weights.
        """
        self._refit_if_stale()  # partial_fit's lazy fit (bernonnx._base.PartialFitMixin)
        check_is_fitted(self)
        return np.stack(self._bounds(predict_scores(self, X).astype(np.float64)), axis=1)

    def _bounds(self, s):
        below, above = tie_band(s)
        p0 = self.p0_[np.searchsorted(self.scores_, above, "right")]
        p1 = self.p1_[np.searchsorted(self.scores_, below, "left")]
        return p0, p1

    def _evaluate(self, s):
        p0, p1 = self._bounds(s)
        # 1 - p0 + p1 >= 1 as p0 <= p1; the floor only rules out 0 / 0
        return p1 / np.maximum(1.0 - p0 + p1, 1e-300)
