"""Stacking of five monotone maps of one score: affine, Beta and quadratic scaling of the
log-odds, the Bernstein polynomial and Venn-Abers, combined by a logistic regression with
non-negative weights on their out-of-fold log-odds.

The rule the corpus study (``benchmarks/quality/corpus_study.py``, ``stack-noid``) chose
on its tuning tables, before its reporting tables were looked at, with the default's bound
on the log-odds (``logit_bound``). The ONNX converter (``converters/stacked.py``) emits the
formula ``predict_proba`` evaluates (see the Notes).
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from scipy.special import expit

from bernonnx._base import _ScoreCalibrator
from bernonnx._core.increasing import (
    FAMILIES,
    IncreasingLogistic,
    nonnegative_logistic,
    row_loss,
)
from bernonnx._core.newton import single_blas_thread
from bernonnx._core.points import fold_of
from bernonnx._validation import Interval, StrOptions, _fit_context, fit_inputs

from ._input import check_range, clipped_log_odds, resolve_input
from .bernstein import BernsteinCalibrator
from .venn_abers import VennAbersCalibrator

__all__ = ["StackedCalibrator"]

#: float64's epsilon: probability scores and the members' probabilities are clipped to
#: ``[EPS, 1 - EPS]`` before their log-odds are taken (as the ``betacal`` package)
EPS = float(np.finfo(np.float64).eps)
#: the members, in the order of ``weights_``
MEMBERS = (*FAMILIES, "bernstein", "venn-abers")
N_FOLDS = 5


#: the members' log-odds are clipped to those of ``[EPS, 1 - EPS]``
LOGIT_LO, LOGIT_HI = (
    float(clipped_log_odds(np.array([0.0]), EPS)[0]),
    float(clipped_log_odds(np.array([1.0]), EPS)[0]),
)


def stack_weights(E: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Intercept and non-negative weights of the weighted logistic regression of ``y`` on
    the columns of ``E`` (L-BFGS-B from equal weights ``1 / k``)."""
    theta = np.zeros(E.shape[1] + 1)
    theta[1:] = 1.0 / E.shape[1]
    return nonnegative_logistic(E, y, w, theta)


class StackedCalibrator(_ScoreCalibrator):
    r"""Stacking of five monotone maps: affine, Beta and quadratic scaling of the
    log-odds, the Bernstein polynomial and Venn-Abers.

    Each member is fitted on the same 5 folds of the rows (a hash of the row
    position, the Bernstein degree search's folds) for its out-of-fold log-odds,
    and once on every row. A logistic regression of the label on the members'
    out-of-fold log-odds, with non-negative weights and a free intercept, gives
    the combination, applied to the members' full fits. Where one member's map
    is right, the stack can put its weight there; where none is, it mixes them.
    Non-decreasing in the score: every member is, and the weights are
    non-negative (strictly increasing when a strictly increasing member, the
    Bernstein polynomial or a parametric map with a positive slope, has a
    positive weight, except where the stack's log-odds reach their clip,
    ``logit_bound``: flat there, see the Notes). The Bernstein member's
    evaluation rounds: between scores a few ulps apart its probability can drop
    by up to ``2 d eps`` (the guarantees page), and the stack passes such a drop
    on, times its weight (1.2e-15 measured, scores -0.3 and
    -0.29999999999999998).

    Parameters
    ----------
    input : {"auto", "proba", "logits"}, default="auto"
        What the scores are, as :class:`~bernonnx.BetaCalibrator` reads them:
        ``"proba"``: probabilities in ``[0, 1]``, whose log-odds (clipped to
        ``[eps, 1 - eps]``, float64's epsilon) the parametric members read;
        ``"logits"``: log-odds or decision values, read as they are.
        ``"auto"``: ``"proba"`` when every fitted score lies in ``[0, 1]``;
        inside :class:`~bernonnx.CalibratedClassifier` it is set from the
        scores the classifier gives. The Bernstein and Venn-Abers members read
        the score itself.
    logit_bound : float, default=15.0
        Bound on the stack's log-odds: probabilities stay in ``[sigmoid(-b),
        sigmoid(b)]`` (3.1e-7 to 1 - 3.1e-7 at 15, the default
        :class:`~bernonnx.BernsteinCalibrator`'s own ``logit_bound``). Without it,
        calibration rows the score separates without error let the stacking
        weights run away, and a later row on the wrong side of the gap gets a
        probability of exactly 0 or 1. ``numpy.inf`` removes it.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    input_ : str
        ``"proba"`` or ``"logits"``: ``input`` resolved.
    members_ : dict
        The members' full fits: ``"affine"``, ``"beta"``, ``"quadratic"``
        (the parametric maps of ``bernonnx._core.increasing``: ``shape_``,
        ``mean_``, ``norm_``, ``w_``), ``"bernstein"``
        (:class:`~bernonnx.BernsteinCalibrator`) and ``"venn-abers"``
        (:class:`~bernonnx.VennAbersCalibrator`).
    intercept_ : float
        The stack's intercept.
    weights_ : ndarray of shape (5,)
        The non-negative weights of the members' log-odds, in the order
        affine, Beta, quadratic, Bernstein, Venn-Abers.
    oof_log_loss_ : ndarray of shape (5,)
        Each member's out-of-fold log loss (NaN when the folds could not be
        used; see the Notes).
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        t = s (input_ = "logits"), log(c) - log(1 - c) with c = Clip(s, EPS, 1 - EPS)
        e_m = Clip(eta_m, logit(EPS), logit(1 - EPS))  for each member m, with
              eta_m = w_m0 + sum_j w_mj (F_mj(t) - mean_mj) / norm_mj   (parametric)
              eta_m = log(c) - log(1 - c), c = Clip(p_m(s), EPS, 1 - EPS)  (Bernstein,
                                                                     Venn-Abers)
        q = Sigmoid(Clip(intercept_ + sum_m weights_[m] e_m, -b, b)),
            b = min(logit_bound, logit(1 - EPS))
        predict_proba = [1 - q, q]

    The parametric members minimise the weighted log loss of the 0/1 labels
    with non-negative slopes; the stack minimises

    .. math::

        \sum_i w_i \left[\log(1 + e^{\eta_i}) - y_i \eta_i\right], \quad
        \eta_i = c + \sum_m \beta_m e_{m,i}^{\mathrm{oof}}, \quad \beta_m \ge 0.

    When some fold's other rows hold a single class, or there are fewer rows
    than folds, the out-of-fold fits cannot be made: the Bernstein member alone
    is used (``weights_ = [0, 0, 0, 1, 0]``, ``intercept_ = 0``). A weight
    ``k`` enters every loss as ``k`` repeated rows; the folds are those of the
    rows' positions, so a weighted fit and a repeated one use different folds
    (as :class:`~bernonnx.BernsteinCalibrator`'s degree search).

    The parametric members and the stack are fitted without a penalty, as the
    rule was chosen: where the score separates the calibration rows without
    error, their slopes grow until the solver stops, and only the clip keeps a
    later row on the wrong side of the gap from a probability of 0 or 1 (it then
    gets ``sigmoid(-logit_bound)``; the corpus study's results page shows such a
    case). The clip is never wider than the members' range, ``logit(EPS)``, so no
    class gets probability 0 or 1 in float64, whatever ``logit_bound`` (float32
    scores get float32 probabilities, which round above ``1 - 6e-8`` to 1). The
    fit costs each member six fits: 12, 20 and 89 times
    :class:`~bernonnx.BernsteinCalibrator`'s at 1e3, 1e4 and 1e5 scores
    (``benchmarks/binary_maps.md``; the Bernstein fit bins its rows, the other
    members read every row).

    References
    ----------
    D. H. Wolpert, "Stacked generalization", Neural Networks 5, 1992.
    L. Breiman, "Stacked regressions", Machine Learning 24, 1996 (non-negative
    weights).
    M. Kull, T. M. Silva Filho and P. Flach, "Beta calibration", AISTATS 2017.
    V. Vovk, I. Petej and V. Fedorova, "Large-scale probabilistic predictors with
    and without guarantees of validity", NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import StackedCalibrator
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=3000)
    >>> y = rng.random(3000) < 1 / (1 + np.exp(-(0.5 + 2 * s)))
    >>> cal = StackedCalibrator().fit(s, y)
    >>> cal.input_, cal.weights_.shape
    ('logits', (5,))
    >>> bool(np.all(np.diff(cal.predict_proba(np.linspace(-4, 4, 50))[:, 1]) >= 0))
    True
    """

    _parameter_constraints: dict = {
        "input": [StrOptions({"auto", "proba", "logits"})],
        "logit_bound": [Interval(Real, 0.0, np.inf, closed="right")],
    }

    def __init__(self, input="auto", *, logit_bound=15.0):
        self.input = input
        self.logit_bound = logit_bound

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the five members and the stack on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores: probabilities or log-odds (see ``input``).
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights.

        Returns
        -------
        self : StackedCalibrator
        """
        # in memory only (its out-of-fold fits read the rows six times over): no
        # _fit_source, so the command line does not offer it for streamed files
        return self._fit_rows(*fit_inputs(self, X, y, sample_weight))

    def _log_odds(self, s: np.ndarray) -> np.ndarray:
        check_range(self, s, self.input_)
        return s if self.input_ == "logits" else clipped_log_odds(s, EPS)

    def _member_log_odds(self, fitted: dict, s: np.ndarray) -> np.ndarray:
        """(n, 5) clipped log-odds of the fitted members at scores ``s``."""
        t = self._log_odds(s)
        cols = [fitted[f].log_odds(t) for f in FAMILIES]
        cols += [clipped_log_odds(fitted[m]._positive_proba(s), EPS) for m in MEMBERS[3:]]
        return np.clip(np.stack(cols, axis=1), LOGIT_LO, LOGIT_HI)

    @staticmethod
    def _fit_members(s, t, target, w) -> dict:
        fitted = {f: IncreasingLogistic(f).fit(t, target, w) for f in FAMILIES}
        fitted["bernstein"] = BernsteinCalibrator().fit(s, target, w)
        fitted["venn-abers"] = VennAbersCalibrator().fit(s, target, w)
        return fitted

    def _fit_rows(self, s, target, w):
        # L-BFGS-B's small products on several BLAS threads cost 2 to 9 times the fit on
        # a busy machine (0.41 s single-threaded, 0.66 to 3.6 s threaded, 2,000 rows)
        with single_blas_thread():
            return self._fit_single_thread(s, target, w)

    def _fit_single_thread(self, s, target, w):
        self.input_ = resolve_input(self, s)
        t = self._log_odds(s)
        folds = fold_of(0, s.shape[0], N_FOLDS)
        usable = s.shape[0] >= N_FOLDS and all(_both(target[folds != k]) for k in range(N_FOLDS))
        self.members_ = self._fit_members(s, t, target, w)
        if not usable:
            self.intercept_, self.weights_ = 0.0, np.array([0.0, 0.0, 0.0, 1.0, 0.0])
            self.oof_log_loss_ = np.full(len(MEMBERS), np.nan)
            return self
        E = np.empty((s.shape[0], len(MEMBERS)))
        with warnings.catch_warnings():
            # a fold's member fit may warn where the full fit does not (fewer rows); the
            # full fits above have shown the user their warnings
            warnings.simplefilter("ignore")
            for k in range(N_FOLDS):
                tr, te = folds != k, folds == k
                if not te.any():
                    continue  # a few rows: the hash left this fold empty
                fold_fit = self._fit_members(s[tr], t[tr], target[tr], w[tr])
                E[te] = self._member_log_odds(fold_fit, s[te])
        total = float(w.sum())
        self.oof_log_loss_ = (w @ row_loss(target[:, None], E)) / total
        theta = stack_weights(E, target, w)
        self.intercept_, self.weights_ = float(theta[0]), theta[1:]
        return self

    def _evaluate(self, s):
        E = self._member_log_odds(self.members_, s)
        eta = self.intercept_ + E[:, 0] * self.weights_[0]
        for m in range(1, E.shape[1]):
            eta = eta + E[:, m] * self.weights_[m]
        # the weights may sum above 1 (separated calibration rows: every member at the
        # clip), and expit rounds to exactly 1 from 37 on: the sum is held to the bound,
        # never wider than the members' range, so that no class gets probability 0 or 1
        bound = min(float(self.logit_bound), LOGIT_HI)
        return expit(np.minimum(np.maximum(eta, -bound), bound))


def _both(target: np.ndarray) -> bool:
    """Both classes among ``target``'s rows."""
    return target.shape[0] > 0 and target.min() != target.max()
