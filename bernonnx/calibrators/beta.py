"""Beta calibration (Kull, Silva Filho and Flach 2017): a logistic regression of the
label on ``log p`` and ``-log(1 - p)`` with non-negative coefficients.

The ONNX converter (``converters/beta.py``) emits the formula ``predict_proba``
evaluates (see the Notes).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bernonnx._base import PartialFitMixin, TableFitMixin, _ScoreCalibrator
from bernonnx._core.logistic import fit_nonnegative_logistic
from bernonnx._validation import _fit_context

from ._input import INPUT_CONSTRAINTS, log_p_and_log_q, resolve_input

__all__ = ["BetaCalibrator"]


class BetaCalibrator(PartialFitMixin, TableFitMixin, _ScoreCalibrator):
    r"""Beta calibration: ``logit(q) = a log p - b log(1 - p) + c`` with ``a, b >= 0``.

    The three-parameter ("abm") family of Kull, Silva Filho and Flach (2017),
    which contains Platt scaling of the log-odds (``a = b``) and the identity
    (``a = b = 1``, ``c = 0``). The constraint ``a, b >= 0`` makes the map
    non-decreasing in the score, strictly increasing unless ``a = b = 0``
    (a constant, for scores that do not rank the labels).

    Parameters
    ----------
    input : {"auto", "proba", "logits"}, default="auto"
        What the scores are. ``"proba"``: probabilities in ``[0, 1]``, clipped
        to ``[eps, 1 - eps]`` (Beta calibration's own domain, as in the
        ``betacal`` package). ``"logits"``: log-odds, or any decision values
        read as log-odds ``l`` of ``p = 1 / (1 + exp(-l))`` (the features are
        computed from ``l`` without forming ``p``, so they do not saturate).
        ``"auto"``: ``"proba"`` when every fitted score lies in ``[0, 1]``,
        ``"logits"`` otherwise; inside :class:`~bernonnx.CalibratedClassifier`
        it is set from the scores the classifier gives (``predict_proba``
        without log-odds: ``"proba"``; otherwise ``"logits"``).
    eps : float, default=1e-15
        Clip of probability scores, in ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    input_ : str
        ``"proba"`` or ``"logits"``: ``input`` resolved.
    a_, b_ : float
        The non-negative coefficients of ``log p`` and ``-log(1 - p)``.
    intercept_ : float
        ``c``.
    n_features_in_ : int
        Always 1.

    Notes
    -----
    ``predict_proba`` evaluates, in float64, exactly what the ONNX converter
    emits::

        input_ = "proba":   c = min(max(s, eps), 1 - eps)
                            x1 = log(c);  x2 = -log(1 - c)
        input_ = "logits":  r = log(1 + exp(-|s|))
                            x1 = min(s, 0) - r;  x2 = max(s, 0) + r
        q = 1 / (1 + exp(-((a_ * x1 + b_ * x2) + intercept_)))
        predict_proba = [1 - q, q]

    With ``N_+`` and ``N_-`` the weighted class totals, the fit minimises

    .. math::

        \sum_i w_i \left[\log(1 + e^{\eta_i}) - T_i \eta_i\right], \quad
        \eta_i = a x_{1i} + b x_{2i} + c, \quad a \ge 0,\ b \ge 0,

    with Platt's (1999) targets ``T_i = (N_+ + 1) / (N_+ + 2)`` for positives
    and ``1 / (N_- + 2)`` for negatives, as :class:`~bernonnx.PlattCalibrator`
    (the ``betacal`` package fits the 0/1 labels; the two optima differ by
    ``O(1 / n)``, and the targets keep this one finite on separable scores).
    ``betacal`` fits without constraint and refits without a coefficient that
    came out negative; the optimum here is that procedure carried through:
    each face of ``{a >= 0, b >= 0}`` fitted by Newton's method, the best
    feasible one kept. It equals ``betacal``'s map whenever that has
    ``a, b >= 0``. Weights are counts in the targets and the loss, so weight
    ``k`` equals ``k`` repeated rows.

    References
    ----------
    M. Kull, T. M. Silva Filho and P. Flach, "Beta calibration: a well-founded
    and easily implemented improvement on logistic calibration for binary
    classifiers", AISTATS 2017.
    J. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import BetaCalibrator
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, 4000)
    >>> y = rng.random(4000) < 1 / (1 + (1 - p) ** 2 / p**0.5)
    >>> cal = BetaCalibrator().fit(p, y)
    >>> cal.input_, round(cal.a_, 1), round(cal.b_, 1), round(cal.intercept_, 1)
    ('proba', 0.6, 2.1, 0.0)
    """

    _parameter_constraints: dict = dict(INPUT_CONSTRAINTS)

    def __init__(self, input="auto", *, eps=1e-15):
        self.input = input
        self.eps = eps

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit ``a_``, ``b_`` and ``intercept_`` on scores ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Uncalibrated scores: probabilities or log-odds (see ``input``).
        y : array-like of shape (n_samples,)
            Two class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; weight ``k`` equals ``k`` repeated rows.

        Returns
        -------
        self : BetaCalibrator
        """
        return self._fit_any(X, y, sample_weight)

    def _fit_rows(self, s, target, w):
        self.input_ = resolve_input(self, s)
        x1, x2 = log_p_and_log_q(self, s)
        F = np.column_stack([x1, x2, np.ones_like(x1)])
        self.a_, self.b_, self.intercept_ = (
            float(v) for v in fit_nonnegative_logistic(F, target, w, (0, 1))
        )
        return self

    def _evaluate(self, s):
        x1, x2 = log_p_and_log_q(self, s)
        with np.errstate(over="ignore"):  # log-odds near the float max: +-inf, as the graph
            return expit(self.a_ * x1 + self.b_ * x2 + self.intercept_)
