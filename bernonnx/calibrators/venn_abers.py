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

#: A score within ``TIE_TOLERANCE * |c|`` of a calibration score ``c`` (relative to
#: ``c``, at every magnitude) counts as equal to it: the score a base model's graph gives
#: can be a few units in the last place off Python's (a dot product summed in another
#: order), and a Venn-Abers map jumps at every calibration score.
TIE_TOLERANCE = 1e-12


def tied_counts(scores: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table indices ``(i0, i1)`` of ``p0`` and ``p1`` for float64 scores ``s``.

    ``m = #{scores < s}``; of the calibration scores either side of ``s``
    (``scores[m - 1]`` and ``scores[m]``) the nearer one within ``TIE_TOLERANCE``
    times its own magnitude is ``s``'s tie ``j``: then ``i0 = j + 1``, ``i1 = j``
    (``s`` is that calibration score); without one ``i0 = i1 = m``. One tie at most,
    so ``p0 <= p1`` as in the exact algorithm; a score equal to a calibration score
    is its own tie (distance 0), and one without a calibration score so near is
    counted as the ``venn-abers`` package counts it. NaN pads stand for the missing
    neighbour at either end: a comparison with NaN is false (so in the graph).
    """
    padded = np.r_[np.nan, scores, np.nan]
    m = np.searchsorted(scores, s, "left")
    m[np.isnan(s)] = 0  # the graph's count of a NaN: no comparison holds
    lo, hi = padded[m], padded[m + 1]
    with np.errstate(invalid="ignore", over="ignore"):
        d_lo, d_hi = s - lo, hi - s
        tie_lo = d_lo <= np.abs(lo) * TIE_TOLERANCE
        tie_hi = d_hi <= np.abs(hi) * TIE_TOLERANCE
        use_hi = tie_hi & (~tie_lo | (d_hi <= d_lo))
    use_lo = tie_lo & ~use_hi
    return m + use_hi, m - use_lo


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

        m = #{scores_ < s}
        lo, hi = scores_[m - 1], scores_[m]   (missing at either end: no tie)
        tie_lo = s - lo <= |lo| * 1e-12;  tie_hi = hi - s <= |hi| * 1e-12
        one tie at most, the nearer: j = m (hi) or m - 1 (lo)
        p0 = p0_[j + 1], p1 = p1_[j] with a tie;  p0 = p0_[m], p1 = p1_[m] without
        p = p1 / max(1 - p0 + p1, 1e-300);  predict_proba = [1 - p, p]

    and :meth:`predict_interval` gives ``[p0, p1]``. A score within ``1e-12``
    of a calibration score ``c``, relative to ``|c|`` at every magnitude (a
    score near 0 ties only with a calibration score as near relative to its
    own size), counts as equal to it: the scores a base model's graph
    computes may differ from Python's in the last bits, and the map jumps at
    each calibration score, so on the rows the calibrator was fitted on exact
    equality would make the graph and Python disagree there. A score ties
    with one calibration score at most, so ``p0 <= p1`` always.

    What is guaranteed: the tables are computed as the ``venn-abers`` package
    (Petej, 1.5.4) computes them (``calc_p0p1``, the greatest convex minorant
    of the cumulative sum diagram with the test object inserted, Vovk, Petej
    and Fedorova 2015, Algorithms 1 to 4), with total weights in place of
    counts (weight ``k`` equals ``k`` repeated rows; the test object weighs
    1). On unweighted data, the interval and the merged probability equal the
    package's exactly for every score that is a calibration score or lies
    farther than the tie band from all of them; a score inside the band of a
    calibration score it does not equal gets that score's interval (the
    package's would be the one of a score just beside it). The graph computes
    the same float64 operations: it equals ``predict_proba`` on every float64
    score, ``+-inf`` giving the limit of the largest floats and NaN giving
    NaN (``predict_proba`` refuses non-finite scores, and
    :func:`~bernonnx.export.onnx_inputs` refuses what Python refuses). Behind
    a base model, the graph must compute the base scores Python computes, to
    the band: it does for a model fitted on float64 data (in float64, inside
    a float32 graph too), not for one fitted on float32 data (float32 BLAS
    sums, a few float32 units off), which :func:`~bernonnx.export.to_onnx`
    refuses; :func:`~bernonnx.attach` refuses a float32 score output unless
    the map was fitted on float32 scores (the graph's own).

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
        i0, i1 = tied_counts(self.scores_, s)
        nan = np.isnan(s)  # NaN in, NaN out (the graph's Where)
        p0 = np.where(nan, np.nan, self.p0_[i0])
        p1 = np.where(nan, np.nan, self.p1_[i1])
        return p0, p1

    def _evaluate(self, s):
        p0, p1 = self._bounds(s)
        # 1 - p0 + p1 >= 1 as p0 <= p1; the floor only rules out 0 / 0
        return p1 / np.maximum(1.0 - p0 + p1, 1e-300)
