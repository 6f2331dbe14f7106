"""Temperature scaling with a per-class monotone correction, chosen by cross-validation.

The multiclass default of :class:`~bernonnx.CalibratedClassifier`. It reads all ``K``
score columns at once (``multiclass=True`` in ``bernonnx._registry``) and chooses,
by k-fold log loss on the calibration rows, among three nested candidates: the
scores' own softmax (the identity), temperature scaling, and temperature scaling
followed by one monotone :class:`~bernonnx.BernsteinCalibrator` per class on that
class's temperature-scaled log-odds, rows renormalised. Its ONNX converter
(``converters/temperature_bernstein.py``) emits the formula ``predict_proba``
evaluates (see the Notes).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from bernonnx._core.points import fold_of
from bernonnx._meta import log_odds_from_log_proba
from bernonnx._validation import (
    Interval,
    StrOptions,
    _fit_context,
)

from ._class_scores import check_predict_scores, class_logits, weighted_rows
from .bernstein import BernsteinCalibrator
from .temperature import StructuredMatrixScalingCalibrator, _fit_inverse_temperature

__all__ = ["TemperatureBernsteinCalibrator"]

#: The candidates, simplest first: a tie in cross-validated loss goes to the simpler.
CHOICES = ("identity", "temperature", "bernstein")
#: The correction must beat the better of identity and temperature by this many standard
#: errors of the mean held-out loss difference: with few rows per class its fold fits
#: are noisy and the degrees it holds were chosen on all rows (an optimistic estimate)
_N_SE = 2.0
#: ``classes_`` of the per-class corrections: 0/1 labels, as ``fit`` sets them from ints
_BINARY = np.array([0, 1], dtype=np.int64)


def _class_log_odds(t: np.ndarray) -> np.ndarray:
    """Each class's log-odds against the rest under ``softmax(t)``, (n, K)."""
    if t.shape[1] == 2:
        d = t[:, 1] - t[:, 0]
        return np.column_stack([-d, d])
    return log_odds_from_log_proba(t)


def _fit_log_odds(t: np.ndarray) -> np.ndarray:
    """:func:`_class_log_odds` in ``O(n K)`` for the fit (``predict_proba`` keeps the
    converter's formula): about the row's top logit, class ``k``'s others sum to
    ``sum_j e_j - e_k >= 1`` (the top's ``e = 1`` among them, so the subtraction loses
    at most a bit); the top class's others are summed about their own maximum. The
    same log-odds to a few units in the last place."""
    n, k = t.shape
    if k == 2:
        return _class_log_odds(t)
    rows = np.arange(n)
    first = np.argmax(t, axis=1)
    top = t[rows, first][:, None]
    e = np.exp(t - top)
    with np.errstate(divide="ignore"):  # the top class's 0 (when the rest underflow)
        out = t - top - np.log(e.sum(axis=1, keepdims=True) - e)
    others = t.copy()
    others[rows, first] = -np.inf
    second = others.max(axis=1, keepdims=True)
    rest = np.log(np.exp(others - second).sum(axis=1))
    out[rows, first] = top[:, 0] - second[:, 0] - rest
    return out


def _corrected(calibrators, t: np.ndarray, log_odds=_class_log_odds) -> np.ndarray:
    """The per-class Bernstein maps of the log-odds of ``softmax(t)``, renormalised."""
    odds = log_odds(t)
    q = np.column_stack([cal.predict_proba(odds[:, k])[:, 1] for k, cal in enumerate(calibrators)])
    total = q.sum(axis=1, keepdims=True)
    uniform = np.full_like(q, 1.0 / q.shape[1])
    return np.divide(q, total, out=uniform, where=total > 0)


def _row_loss(proba: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Each row's log loss, probabilities floored at the smallest positive float."""
    picked = np.maximum(proba[np.arange(target.shape[0]), target], np.finfo(float).tiny)
    return -np.log(picked)


def _beats(loss: np.ndarray, other: np.ndarray, w: np.ndarray, n_se: float) -> bool:
    """``loss`` has a lower weighted mean than ``other`` by more than ``n_se`` standard
    errors of the mean row-wise difference (weighted, effective sample size)."""
    total = w.sum()
    d = loss - other
    gain = float(w @ d / total)
    n_eff = total**2 / float(w @ w)
    se = float(np.sqrt(max(w @ (d - gain) ** 2 / total, 0.0) / n_eff))
    return gain + n_se * se < 0.0


def _choose(losses: dict, w: np.ndarray, n_se: float, after_sms: bool) -> tuple[str, dict]:
    """The simpler of identity and temperature by mean loss (after SMS, which fitted a
    temperature itself, the temperature must win by ``n_se`` standard errors too); the
    correction only if it beats that by more than ``n_se`` standard errors of the mean
    row-wise difference."""
    total = w.sum()
    mean = {key: float(w @ loss / total) for key, loss in losses.items()}
    if after_sms:
        temperature = _beats(losses["temperature"], losses["identity"], w, n_se)
    else:
        temperature = mean["temperature"] < mean["identity"]
    choice = "temperature" if temperature else "identity"
    if "bernstein" in losses and _beats(losses["bernstein"], losses[choice], w, n_se):
        choice = "bernstein"
    return choice, mean


def _fit_corrections(bernstein, odds, target, w, fitted=None, starts=None, fold_fits=None):
    """One Bernstein calibrator per class on its log-odds, or None if a class lacks
    rows on either side (nothing to correct with). With ``fitted`` (the corrections
    fitted on all rows), each class keeps its degree and its fit starts from
    ``starts[k]`` when given, else from their coefficients: the same convex problem,
    solved from nearby (fewer Newton steps). Without ``fitted``, a list ``fold_fits``
    receives each class's degree search's approximate fits of the folds, ``{fold:
    coefficients}`` or None (see :meth:`TemperatureBernsteinCalibrator._cross_validate`)."""
    calibrators = []
    keep = w > 0
    n = odds.shape[0]
    # clone's parameters, read once: a refit is the same estimator at the fitted degree
    params = None if fitted is None else clone(bernstein).get_params(deep=False)
    for k in range(odds.shape[1]):
        positive = target == k
        if w[positive].sum() <= 0 or w[~positive].sum() <= 0:
            return None
        if fitted is None:
            cal = clone(bernstein)
            cal._keep_fold_fits = fold_fits is not None
            calibrators.append(cal.fit(odds[:, k], positive.astype(np.int64), sample_weight=w))
            if fold_fits is not None:
                fold_fits.append(vars(cal).pop("_fold_fits", None))
            continue
        cal = type(bernstein)(**{**params, "degree": int(fitted[k].degree_)})
        if starts is not None and starts[k] is not None:
            cal._warm_start = starts[k]
        elif fitted[k].coef_.shape[0] == fitted[k].degree_ + 1:
            cal._warm_start = fitted[k].coef_
        s = odds[keep, k]
        if not np.isfinite(s).all():  # the checks' error, as the fit on all rows gave it
            calibrators.append(cal.fit(odds[:, k], positive.astype(np.int64), sample_weight=w))
            continue
        # the fold refits skip fit's checks: these are the checked rows of the fit on
        # all rows, a fold's log-odds (finite), its labels (both classes) and weights;
        # the same fit as cal.fit(odds[:, k], positive, sample_weight=w) gives
        cal.classes_, cal.n_features_in_ = _BINARY, 1
        target_k = positive[keep].astype(np.float64)
        calibrators.append(cal._fit_checked(s, target_k, w[keep], keep, n))
    return calibrators


class TemperatureBernsteinCalibrator(ClassifierMixin, BaseEstimator):
    r"""Temperature scaling, then a monotone per-class correction, if cross-validation
    says it helps.

    Parameters
    ----------
    input : {"logits", "log_odds", "proba"}, default="logits"
        What the ``K`` score columns are. ``"logits"``: logits or log-probabilities
        (their softmax is the model's probabilities). ``"log_odds"``: each class's
        log-odds against the rest (what ``CalibratedClassifier(log_odds=True)``
        gives). ``"proba"``: probabilities, whose logarithms (clipped at ``eps``)
        are the logits. With one column (two classes): the log-odds of
        ``classes_[1]`` (its clipped log-odds for ``"proba"``).
    method : {"auto", "identity", "temperature", "bernstein"}, default="auto"
        ``"auto"``: the better of the identity and temperature scaling by
        ``n_folds``-fold cross-validated log loss (after SMS, which fits a
        temperature first, the temperature only where it beats SMS by more than
        two standard errors), replaced by the correction only where that beats
        it by more than two standard errors; the others force one.
    degree : int, "auto" or sequence of int, default="auto"
        Degree of the per-class Bernstein corrections (``BernsteinCalibrator``'s).
    n_folds : int, default=5
        Folds of the choice; a row's fold is a hash of its position.
    scaling : {"none", "sms"}, default="none"
        A first stage under the three candidates. ``"sms"``: structured matrix
        scaling (:class:`~bernonnx.StructuredMatrixScalingCalibrator`, Berta et al.
        2025) fitted on all the rows; the candidates then read its calibrated logits,
        so the identity is SMS itself. ``CalibratedClassifier``'s multiclass default
        uses ``"sms"``. SMS mixes the classes (it can reorder a row's classes); with
        ``"none"`` every candidate keeps each class's ranking of the rows.
    eps : float, default=1e-15
        Floor of the probabilities of ``input="proba"`` and ``"log_odds"`` (their
        logits are at least ``log(eps)``), in ``[1e-15, 0.5)``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    method_ : str
        The candidate used: ``"identity"``, ``"temperature"`` or ``"bernstein"``.
    scaling_ : StructuredMatrixScalingCalibrator or None
        The fitted first stage (``scaling="sms"``), else None.
    inverse_temperature_ : float
        ``beta`` multiplying the logits (SMS's calibrated logits with
        ``scaling="sms"``): 1 for the identity, else the fitted one.
    calibrators_ : list of BernsteinCalibrator, or None
        Per class (column order), for ``method_ == "bernstein"``.
    cv_log_loss_ : dict
        Mean held-out log loss of each candidate fitted (``method="auto"`` only).
        NaN for a candidate with no held-out loss: the correction when a fold's
        training rows lack a class, and every candidate when all the rows fall in
        one fold (no out-of-fold rows: three rows or fewer with the default folds);
        the identity is then used.
    n_features_in_ : int

    Notes
    -----
    With ``z`` the (n, K) logits (``log(max(p, eps))`` for ``input="proba"``,
    ``max(-(max(-l, 0) + log(1 + exp(-|l|))), log(eps))`` (log sigmoid, floored)
    for ``input="log_odds"``, ``[0, s]`` for one column), replaced with
    ``scaling="sms"`` by SMS's calibrated logits ``a`` (see
    :class:`~bernonnx.StructuredMatrixScalingCalibrator`'s Notes),
    and ``t = beta * z``, ``predict_proba`` evaluates in float64 what the ONNX
    converter emits::

        identity, temperature:  softmax(t)               (row max subtracted)
        bernstein:  l_k = t_k - logsumexp_{j != k} t_j   (two classes: -+(t_1 - t_0))
                    q_k = B_k(l_k);  p = q / sum_k q_k   (uniform if the sum is 0)

    ``B_k`` is the fitted ``calibrators_[k]`` (a strictly increasing map of the
    class's log-odds). The candidates are nested in cost, not in family: the
    identity is ``beta = 1``, temperature scaling fits ``beta`` by exact 1-D
    convex minimisation of the log loss (``TemperatureCalibrator``), and the
    correction is fitted on the temperature-scaled log-odds. The choice refits
    each candidate on the other folds' rows (the correction's degrees held at
    those chosen on all rows) and scores each held-out row; the correction,
    ``K (d + 1)`` parameters against one, must lower the mean loss by more than
    two standard errors of the row-wise differences, so that on small or
    well-calibrated data the default stays with temperature scaling or the
    model's own probabilities.

    References
    ----------
    Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural
    Networks", ICML 2017.
    Zadrozny and Elkan, "Transforming classifier scores into accurate
    multiclass probability estimates", KDD 2002 (one-vs-rest, renormalised).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx import TemperatureBernsteinCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 3000)
    >>> logits = 3.0 * (4.0 * np.eye(3)[y] + rng.normal(scale=2.0, size=(3000, 3)))
    >>> cal = TemperatureBernsteinCalibrator(degree=4).fit(logits, y)
    >>> cal.method_, round(cal.inverse_temperature_, 3)
    ('temperature', 0.335)
    >>> cal.predict_proba(logits[:1]).round(3)
    array([[0.046, 0.039, 0.915]])
    """

    _parameter_constraints: dict = {
        "input": [StrOptions({"logits", "log_odds", "proba"})],
        "method": [StrOptions({"auto", *CHOICES})],
        "degree": [Interval(Integral, 1, 100, closed="both"), StrOptions({"auto"}), "array-like"],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "scaling": [StrOptions({"none", "sms"})],
        "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    }

    def __init__(
        self, input="logits", method="auto", degree="auto", n_folds=5, scaling="none", eps=1e-15
    ):
        self.input = input
        self.method = method
        self.degree = degree
        self.n_folds = n_folds
        self.scaling = scaling
        self.eps = eps

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the candidates on scores ``X`` and labels ``y`` and keep the chosen one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes), or (n_samples,) or
            (n_samples, 1) for two classes
            Columns in the order of the sorted labels.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : TemperatureBernsteinCalibrator
        """
        rows = weighted_rows(self, X, y, sample_weight)
        z, target, w = rows.z, rows.target, rows.w
        self.scaling_ = None
        if self.scaling == "sms":
            # SMS reads the labels of every row (it drops zero weights itself): a class
            # whose rows all weigh zero would leave it one class short of the K columns
            every = np.zeros((rows.keep.shape[0], z.shape[1]))
            every[rows.keep] = z
            self.scaling_ = StructuredMatrixScalingCalibrator().fit(
                every, rows.every_target, sample_weight=rows.every_w
            )
            z = self.scaling_.calibrated_logits(z)
        bernstein = BernsteinCalibrator(degree=self.degree)
        beta = _fit_inverse_temperature(z, target, w)
        fitted = {"identity": (1.0, None), "temperature": (beta, None)}
        fold_fits = [] if self.method == "auto" else None
        if self.method in ("auto", "bernstein"):
            corrections = _fit_corrections(
                bernstein, _fit_log_odds(beta * z), target, w, fold_fits=fold_fits
            )
            if corrections is not None:
                fitted["bernstein"] = (beta, corrections)
        if self.method == "auto":
            losses, held = self._cross_validate(z, target, w, bernstein, fitted, fold_fits)
            choice, mean = "identity", {}  # no held-out row: nothing to compare, the simplest
            if held.any():
                scored = {key: loss[held] for key, loss in losses.items()}
                choice, mean = _choose(scored, w[held], _N_SE, self.scaling_ is not None)
            self.cv_log_loss_ = {key: mean.get(key, np.nan) for key in fitted}
        else:
            choice = self.method if self.method in fitted else "temperature"
        self.method_ = choice
        self.inverse_temperature_, self.calibrators_ = fitted[choice]
        return self

    def _cross_validate(
        self, z, target, w, bernstein, fitted, fold_fits=None
    ) -> tuple[dict, np.ndarray]:
        """Held-out log loss of every row under each fitted candidate, ``n_folds`` folds,
        and which rows were held out: none when every row falls in one fold.

        A fold's corrections are refitted exactly (the fold's own temperature, log-odds
        and transform); each starts from its degree search's approximate fit of the
        same fold (``fold_fits``, two Newton steps from the fit on all rows: the
        search's folds are these, a hash of the row's position), else from the fit on
        all rows. The start changes the path, not the optimum: on the 20-class
        benchmark the refits took 3.2 passes over the rows instead of 4.2."""
        folds = fold_of(0, z.shape[0], self.n_folds)
        losses = {key: np.zeros(z.shape[0]) for key in fitted}
        scored = np.zeros(z.shape[0], dtype=bool)
        corrections = fitted["bernstein"][1] if "bernstein" in fitted else None
        for f in range(self.n_folds):
            held = folds == f
            if not held.any() or held.all():
                continue
            zt, yt, wt = z[~held], target[~held], w[~held]
            zh, yh = z[held], target[held]
            scored |= held
            losses["identity"][held] = _row_loss(softmax(zh, axis=1), yh)
            beta = _fit_inverse_temperature(zt, yt, wt, fitted["temperature"][0])
            losses["temperature"][held] = _row_loss(softmax(beta * zh, axis=1), yh)
            if "bernstein" in losses:
                odds = _fit_log_odds(beta * zt)
                starts = None
                if fold_fits and bernstein.n_folds == self.n_folds:
                    starts = [None if f_k is None else f_k.get(f) for f_k in fold_fits]
                cals = _fit_corrections(bernstein, odds, yt, wt, corrections, starts)
                if cals is None:  # a class absent from this fold's training rows
                    del losses["bernstein"]
                else:
                    proba = _corrected(cals, beta * zh, _fit_log_odds)
                    losses["bernstein"][held] = _row_loss(proba, yh)
        return losses, scored

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, n_classes)``; see Notes."""
        arr = check_predict_scores(self, X)
        z = class_logits(self, arr)
        if self.scaling_ is not None:
            z = self.scaling_.calibrated_logits(z)
        t = self.inverse_temperature_ * z
        if self.calibrators_ is None:
            proba = softmax(t, axis=1)
        else:
            proba = _corrected(self.calibrators_, t)
        return proba.astype(arr.dtype, copy=False)

    def predict(self, X):
        """Class with the highest calibrated probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# ------------------------------------------- CalibratedClassifier's multiclass default


class _DefaultCalibrator(BernsteinCalibrator):
    """What ``set_params(calibrator__degree=8)`` puts in place of ``calibrator=None``
    (``NoneDefaultsMixin``): a ``BernsteinCalibrator`` for two classes; for more, its
    ``degree`` and ``n_folds`` reach the multiclass default (the same method), and its
    other parameters, which that default does not have, are refused."""


#: the stand-in's parameters the multiclass default takes, under the same names
_SHARED = ("degree", "n_folds")


def _multiclass_default(method: str, log_odds: bool, stand_in=None):
    """The default calibrator of K > 2 classes, told what its score columns are."""
    if log_odds:
        kind = "log_odds"
    elif method == "predict_proba":
        kind = "proba"
    else:
        kind = "logits"
    params = {}
    if stand_in is not None:
        defaults = BernsteinCalibrator().get_params()
        # a degree may be a list of candidates: compared as a string, not elementwise
        changed = {k: v for k, v in stand_in.get_params().items() if repr(v) != repr(defaults[k])}
        other = sorted(set(changed) - set(_SHARED))
        if other:
            raise ValueError(
                f"calibrator__{other[0]}={changed[other[0]]!r} sets a parameter of the "
                "two-class default (BernsteinCalibrator); with more than two classes the "
                "default is TemperatureBernsteinCalibrator(scaling='sms'), which takes "
                f"calibrator__{' and calibrator__'.join(_SHARED)} only: pass a calibrator "
                "explicitly (calibrator=BernsteinCalibrator(...) for one-vs-rest maps)"
            )
        params = {k: changed[k] for k in _SHARED if k in changed}
    return TemperatureBernsteinCalibrator(input=kind, scaling="sms", **params)
