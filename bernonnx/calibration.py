"""A calibrated classifier in scikit-learn's ``CalibratedClassifierCV`` style,
with any bernonnx calibrator plugged in.

The score and fold machinery it shares with :class:`~bernonnx.FusionClassifier` is in
``bernonnx._meta``.
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_predict
from sklearn.svm import LinearSVC
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._base import NoneDefaultsMixin
from ._core.priors import class_prior
from ._meta import (
    as_scores,
    check_fit_data,
    check_fold_classes,
    check_folds,
    check_frozen_classes,
    combine_one_vs_rest,
    fit_fold,
    fit_kwargs,
    log_odds_source,
    out_of_fold_scores,
    resolve_response_method,
    response_scores,
    score_columns,
)
from ._registry import entry_for
from ._validation import HasMethods, IntInterval, StrOptions, _fit_context, _safe_indexing
from .calibrators.bernstein import BernsteinCalibrator
from .calibrators.temperature_bernstein import _DefaultCalibrator, _multiclass_default

__all__ = ["CalibratedClassifier"]


def _reads_probabilities(calibrator) -> bool:
    """The calibrator takes probabilities in [0, 1] and transforms them itself."""
    return getattr(calibrator, "log_odds", False) is True or (
        getattr(calibrator, "input", None) == "proba"
    )


def _told_its_input(calibrator, method: str, log_odds: bool):
    """A calibrator with ``input="auto"`` (``BetaCalibrator``, ...) told what its scores
    are, rather than guessing from their range: probabilities from ``predict_proba``
    without log-odds, log-odds otherwise (decision values, exact or clipped log-odds)."""
    if getattr(calibrator, "input", None) != "auto":
        return calibrator
    kind = "proba" if method == "predict_proba" and not log_odds else "logits"
    return clone(calibrator).set_params(input=kind)


class CalibratedPair:
    """A fitted classifier and its per-class calibrators (one when binary).

    Mirrors scikit-learn's private ``_CalibratedClassifier``: this is what
    ``CalibratedClassifier.calibrated_classifiers_`` holds and what the ONNX
    converter reads.
    """

    def __init__(self, estimator, calibrators, *, classes, response_method, log_odds):
        self.estimator = estimator
        self.calibrators = calibrators
        self.classes = classes
        self.response_method = response_method
        self.log_odds = log_odds
        #: "log_proba", "proba" or None: see ``log_odds_source``
        self.log_odds_from = log_odds_source(estimator, response_method, log_odds)
        #: weighted class frequencies of the calibrators' rows, and their total weight
        self.prior = None
        self.weight = None

    def predict_proba(self, X):
        """One-vs-rest calibrated probabilities, rows renormalised to sum to 1; a
        multiclass calibrator's own probabilities of all the score columns."""
        scores = response_scores(
            self.estimator, X, self.response_method, self.log_odds, self.classes
        )
        if scores.ndim == 2 and is_multiclass_calibrator(self.calibrators[0]):
            return self.calibrators[0].predict_proba(scores).astype(np.float64)
        return combine_one_vs_rest(
            [
                cal.predict_proba(col)[:, 1]
                for cal, col in zip(self.calibrators, score_columns(scores), strict=True)
            ],
            self.classes.shape[0],
        )

    def predict_interval(self, X):
        """Each calibrator's ``predict_interval`` of its score column: ``(n, 2)`` for two
        classes, ``(n, K, 2)`` one-vs-rest (per class, not renormalised)."""
        scores = response_scores(
            self.estimator, X, self.response_method, self.log_odds, self.classes
        )
        bounds = [
            cal.predict_interval(col)
            for cal, col in zip(self.calibrators, score_columns(scores), strict=True)
        ]
        return bounds[0] if len(bounds) == 1 else np.stack(bounds, axis=1)


def _gives_intervals(clf) -> bool:
    """Every calibrator of the fitted ``clf`` has ``predict_interval`` (Venn-Abers)."""
    check_is_fitted(clf)
    return all(
        hasattr(cal, "predict_interval")
        for pair in clf.calibrated_classifiers_
        for cal in pair.calibrators
    )


def is_multiclass_calibrator(calibrator) -> bool:
    """True for a calibrator of all K class scores at once (``multiclass`` in the
    registry, e.g. ``TemperatureCalibrator``), False for a one-vs-rest one."""
    try:
        return entry_for(calibrator).multiclass
    except TypeError:
        return False


def _fit_calibrators(
    estimator, scores, y_enc, classes, calibrator, sample_weight, method, log_odds
):
    pair = _calibrated(
        estimator, scores, y_enc, classes, calibrator, sample_weight, method, log_odds
    )
    # the priors the calibrators were fitted for: what a prior shift is measured from
    pair.prior = class_prior(y_enc, classes.shape[0], sample_weight)
    pair.weight = float(len(y_enc) if sample_weight is None else np.sum(sample_weight))
    return pair


def _calibrated(estimator, scores, y_enc, classes, calibrator, sample_weight, method, log_odds):
    if scores.ndim == 2 and is_multiclass_calibrator(calibrator):
        # one calibrator of the K columns, on the encoded labels 0..K-1 (column order)
        cal = clone(calibrator).fit(scores, y_enc, sample_weight=sample_weight)
        return CalibratedPair(
            estimator, [cal], classes=classes, response_method=method, log_odds=log_odds
        )
    calibrators = []
    for k, col in enumerate(score_columns(scores)):
        target = (y_enc == (1 if scores.ndim == 1 else k)).astype(np.int64)
        cal = clone(calibrator).fit(col, target, sample_weight=sample_weight)
        calibrators.append(cal)
    return CalibratedPair(
        estimator, calibrators, classes=classes, response_method=method, log_odds=log_odds
    )


def _fit_pair(
    estimator,
    X,
    y,
    y_enc,
    train,
    test,
    calibrator,
    sample_weight,
    fit_kw,
    method,
    log_odds,
    classes,
):
    fit_fold(estimator, X, y, train, fit_kw)
    X_test = _safe_indexing(X, test)
    scores = response_scores(estimator, X_test, method, log_odds, classes)
    sw = None if sample_weight is None else sample_weight[test]
    return _fit_calibrators(
        estimator, scores, y_enc[test], classes, calibrator, sw, method, log_odds
    )


class CalibratedClassifier(NoneDefaultsMixin, ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Probability calibration of any classifier with a bernonnx calibrator.

    Behaves like scikit-learn's ``CalibratedClassifierCV``: cross-validated
    (one calibrated copy of the classifier per fold, averaged, or one
    classifier plus calibrators fitted on out-of-fold scores) or prefit
    (wrap the fitted classifier in ``sklearn.frozen.FrozenEstimator``).
    Multiclass problems are calibrated one-vs-rest and renormalised, except by a
    multiclass calibrator (``TemperatureCalibrator``,
    ``TemperatureBernsteinCalibrator``), fitted once on all K score columns.

    Parameters
    ----------
    estimator : classifier, default=None
        The classifier whose scores are calibrated; ``LinearSVC()`` if None.
        Wrap a fitted classifier in ``FrozenEstimator`` to calibrate it
        without refitting.
    calibrator : estimator, default=None
        Any bernonnx calibrator (``fit(scores, y, sample_weight)``,
        ``predict_proba(scores)``); cloned per class and per fold (per fold only
        for a multiclass calibrator, which reads all K columns).
        None: ``BernsteinCalibrator()`` for two classes; for more,
        ``TemperatureBernsteinCalibrator(scaling="sms")`` (its ``input`` set to
        what the scores are): structured matrix scaling (Berta et al. 2026), then
        SMS itself, a temperature on its logits, or a per-class monotone correction
        on top, whichever has the least 5-fold log loss on the calibration rows
        (the correction only when it wins by more than two standard errors).
        ``set_params(calibrator__degree=8)`` tunes that default: the Bernstein
        map's degree for two classes, the correction's for more
        (``calibrator__n_folds`` likewise); other nested parameters exist only
        for two classes, and ``fit`` refuses them for more.
    cv : int, cross-validation generator or iterable, default=None
        Folds as in ``CalibratedClassifierCV`` (None: 5-fold stratified).
    ensemble : bool or "auto", default="auto"
        True: one (classifier, calibrators) pair per fold, probabilities
        averaged. False: one classifier on all data, calibrators on its
        out-of-fold scores. "auto": False for a ``FrozenEstimator``, else True.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Score source; "auto" prefers ``decision_function``.
    log_odds : bool or "auto", default="auto"
        With ``predict_proba`` scores, calibrate each class's log-odds instead
        of ``p``. GaussianNB, MLPClassifier and LogisticRegression give them
        from their log-probabilities (joint log-likelihood, logits), which do
        not saturate; other models from probabilities clipped to
        ``[1e-15, 1 - 1e-15]``. ``CalibratedPair.log_odds_from`` records which.
        "auto": True exactly where the log-odds come from log-probabilities
        (their probabilities saturate; the log-odds keep the ranking, so the
        AUC is unchanged), False otherwise (clipped log-odds of a random
        forest's probabilities pile up at +-34.5), and False for a calibrator
        that reads probabilities (``PlattCalibrator(log_odds=True)`` takes their
        log-odds itself, ``TemperatureCalibrator(input="proba")`` their logs).
        ``log_odds_`` is the choice. A calibrator with ``input="auto"``
        (``BetaCalibrator``, ``QuadraticScalingCalibrator``) is then told what
        its scores are: ``"proba"`` for probabilities, ``"logits"`` for
        decision values and log-odds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    calibrated_classifiers_ : list of CalibratedPair
        Fitted (classifier, calibrators) pairs: one per fold with
        ``ensemble=True``, one otherwise.
    response_method_ : str
        The resolved score method.
    log_odds_ : bool
        Whether each class's log-odds were calibrated (``log_odds`` resolved).
    calibration_prior_ : ndarray of shape (n_classes,)
        The class priors the calibrated probabilities are calibrated for: the class
        frequencies of the rows the calibrators were fitted on, weighted by
        ``sample_weight`` (a weight of 2 counts a row twice). With folds, every
        fold's calibration rows, each counted once per fold it calibrated in (with
        a partition such as the default stratified folds: all rows, once); the
        average of the fold pairs' probabilities is calibrated for this mixture.
        :class:`~bernonnx.shift.PriorShiftAdapter` moves the probabilities to other
        priors from these.
    n_features_in_ : int
    feature_names_in_ : ndarray, when the classifier has it.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from bernonnx import CalibratedClassifier
    >>> X, y = make_classification(n_samples=600, random_state=0)
    >>> clf = CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"]), None],
        "calibrator": [HasMethods(["fit", "predict_proba"]), None],
        "cv": ["cv_object"],
        "ensemble": ["boolean", StrOptions({"auto"})],
        "n_jobs": [IntInterval(None, None, closed="neither"), None],
        "response_method": [StrOptions({"auto", "decision_function", "predict_proba"})],
        "log_odds": ["boolean", StrOptions({"auto"})],
    }

    def __init__(
        self,
        estimator=None,
        calibrator=None,
        *,
        cv=None,
        ensemble="auto",
        n_jobs=None,
        response_method="auto",
        log_odds="auto",
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.response_method = response_method
        self.log_odds = log_odds

    #: What ``None`` stands for, per parameter (``NoneDefaultsMixin``): nested
    #: parameters such as ``calibrator__degree`` reach these defaults.
    _DEFAULTS = {"estimator": LinearSVC, "calibrator": _DefaultCalibrator}

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the classifier(s) and calibrators.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Used by the calibrators, and by the classifier when its ``fit``
            accepts ``sample_weight``.
        **fit_params : dict
            Passed to the classifier's ``fit``.

        Returns
        -------
        self : CalibratedClassifier
        """
        X, y, self.classes_, y_enc, sample_weight = check_fit_data(
            X, y, sample_weight, "calibration"
        )
        estimator = LinearSVC() if self.estimator is None else self.estimator
        calibrator = BernsteinCalibrator() if self.calibrator is None else self.calibrator
        frozen = isinstance(estimator, FrozenEstimator)
        if frozen:
            check_frozen_classes(
                estimator,
                self.classes_,
                f"the frozen estimator ({type(estimator.estimator).__name__})",
            )
        ensemble = (not frozen) if self.ensemble == "auto" else self.ensemble
        method = resolve_response_method(estimator, self.response_method)
        self.response_method_ = method
        log_odds = self.log_odds
        if log_odds == "auto":
            log_odds = (
                not _reads_probabilities(calibrator)
                and log_odds_source(estimator, method, True) == "log_proba"
            )
        self.log_odds_ = log_odds
        stand_in = type(self.calibrator) is _DefaultCalibrator  # the default, tuned
        if (self.calibrator is None or stand_in) and self.classes_.shape[0] > 2:
            # one-vs-rest Bernstein maps, renormalised, made calibrated multiclass
            # models worse; SMS leads CalArena's multiclass table: the default starts
            # from it and adds a correction only where 5-fold log loss says so
            calibrator = _multiclass_default(method, log_odds, self.calibrator)
        elif stand_in:
            calibrator = BernsteinCalibrator(**self.calibrator.get_params())
        calibrator = _told_its_input(calibrator, method, log_odds)
        fit_kw = dict(fit_params)
        if not frozen:
            fit_kw = fit_kwargs(
                estimator,
                fit_params,
                sample_weight,
                f"{type(estimator).__name__}.fit",
                "calibration",
            )

        if frozen and not ensemble:
            scores = response_scores(estimator, X, method, log_odds, self.classes_)
            pair = _fit_calibrators(
                estimator,
                scores,
                y_enc,
                self.classes_,
                calibrator,
                sample_weight,
                method,
                log_odds,
            )
            self.calibrated_classifiers_ = [pair]
        else:
            cv = check_folds(self.cv, X, y, y_enc)
            if ensemble:
                check_fold_classes(cv, X, y, y_enc, self.classes_, refit=not frozen)
            if ensemble:
                self.calibrated_classifiers_ = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_pair)(
                        clone(estimator),
                        X,
                        y,
                        y_enc,
                        train,
                        test,
                        calibrator,
                        sample_weight,
                        fit_kw,
                        method,
                        log_odds,
                        self.classes_,
                    )
                    for train, test in cv.split(X, y)
                )
            else:
                if log_odds_source(estimator, method, log_odds) == "log_proba":
                    # cross_val_predict cannot ask for logits: the same folds by hand
                    scores = out_of_fold_scores(
                        estimator, X, y, cv, fit_kw, method, log_odds, self.classes_
                    )
                else:
                    raw = cross_val_predict(
                        clone(estimator),
                        X,
                        y,
                        cv=cv,
                        method=method,
                        n_jobs=self.n_jobs,
                        params=fit_kw,
                    )
                    scores = as_scores(raw, method, log_odds, self.classes_)
                final = clone(estimator).fit(X, y, **fit_kw)
                self.calibrated_classifiers_ = [
                    _fit_calibrators(
                        final,
                        scores,
                        y_enc,
                        self.classes_,
                        calibrator,
                        sample_weight,
                        method,
                        log_odds,
                    )
                ]

        pairs = self.calibrated_classifiers_
        weights = np.array([pair.weight for pair in pairs])
        self.calibration_prior_ = (weights @ np.array([pair.prior for pair in pairs])) / (
            weights.sum()
        )
        first = self.calibrated_classifiers_[0].estimator
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def predict_proba(self, X):
        """Calibrated class probabilities, the mean over ``calibrated_classifiers_``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        total = None
        for pair in self.calibrated_classifiers_:
            proba = pair.predict_proba(X)
            total = proba if total is None else total + proba
        return total / len(self.calibrated_classifiers_)

    def predict(self, X):
        """Class with the highest calibrated probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @available_if(_gives_intervals)
    def predict_interval(self, X):
        """The calibrators' intervals, the mean over ``calibrated_classifiers_``.

        Available when every calibrator has ``predict_interval``
        (:class:`~bernonnx.VennAbersCalibrator`): with one pair (a
        ``FrozenEstimator``, or ``ensemble=False``) the Venn-Abers interval
        ``(p0, p1)`` of the positive class's score; with one pair per fold, each
        bound's mean over the folds. The ONNX export adds it as the float64
        output ``interval``.

        Returns
        -------
        interval : ndarray of shape (n_samples, 2), or (n_samples, n_classes, 2)
            ``[p0, p1]``; per class (one-vs-rest, not renormalised) for more than
            two classes.
        """
        total = None
        for pair in self.calibrated_classifiers_:
            bounds = pair.predict_interval(X)
            total = bounds if total is None else total + bounds
        return total / len(self.calibrated_classifiers_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        estimator = LinearSVC() if self.estimator is None else self.estimator
        tags.input_tags.sparse = estimator.__sklearn_tags__().input_tags.sparse
        return tags
