"""A calibrated classifier in scikit-learn's ``CalibratedClassifierCV`` style,
with any bernonnx calibrator plugged in (seed 003)."""

from __future__ import annotations

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import check_cv, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import LinearSVC
from sklearn.utils import indexable
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_array,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
)

from ._base import NoneDefaultsMixin
from ._transforms import clipped_log_odds
from ._validation import (
    ACTIVATIONS,
    HasMethods,
    IntInterval,
    StrOptions,
    _fit_context,
    _num_samples,
    _safe_indexing,
)
from .bernstein import BernsteinCalibrator

__all__ = ["CalibratedClassifier"]

#: Probabilities are clipped to [eps, 1 - eps] before the log-odds map so
#: that 0 and 1 give finite scores (|logit| <= 34.5); the ONNX graph clips alike.
LOG_ODDS_EPS = 1e-15


def _final_and_inputs(estimator, X):
    """The final classifier of ``estimator`` (FrozenEstimator and Pipeline unwrapped)
    and, when ``X`` is given, the data that classifier sees."""
    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    if isinstance(estimator, Pipeline):
        if X is not None and len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator.steps[-1][1]
    return estimator, X


def log_odds_source(estimator, method: str, log_odds: bool):
    """Where log-odds come from: ``"log_proba"`` for models whose unnormalised
    log-probabilities are computed exactly (GaussianNB's joint log-likelihood,
    the logits of MLPClassifier and LogisticRegression), ``"proba"`` for the
    log-odds of clipped probabilities, None when no log-odds are taken.

    Log-odds of probabilities saturate: a probability within 1e-12 of 1 keeps
    4 significant digits of ``1 - p``, so the last bit of ``p`` moves the
    log-odds by 1e-4 (issue 9). The logits do not saturate.
    """
    if method != "predict_proba" or not log_odds:
        return None
    final, _ = _final_and_inputs(estimator, None)
    if isinstance(final, GaussianNB | MLPClassifier | LogisticRegression):
        return "log_proba"
    return "proba"


def _logits(final, X) -> np.ndarray:
    """Unnormalised log-probabilities ``U`` (``softmax(U)`` is ``predict_proba``);
    for binary LogisticRegression and MLPClassifier the (n,) log-odds itself."""
    if isinstance(final, GaussianNB):
        return final.predict_joint_log_proba(X)
    if isinstance(final, LogisticRegression):
        return final.decision_function(X)
    # MLPClassifier._forward_pass_fast without the output activation
    activation = check_array(X, accept_sparse=["csr", "csc"])
    hidden = ACTIVATIONS[final.activation]
    for i in range(final.n_layers_ - 1):
        activation = safe_sparse_dot(activation, final.coefs_[i])
        activation += final.intercepts_[i]
        if i != final.n_layers_ - 2:
            hidden(activation)
    return activation[:, 0] if activation.shape[1] == 1 else activation


def log_odds_from_log_proba(U) -> np.ndarray:
    """Each class's log-odds against the rest from log-probabilities ``U`` (n, K)
    in float64: ``U_k - logsumexp_{j != k} U_j``; two classes: ``U_1 - U_0``; a
    1-D ``U`` is the log-odds already. ``converters/exact.py`` emits the same."""
    U = np.asarray(U, dtype=np.float64)
    if U.ndim == 1:
        return U
    if U.shape[1] == 2:
        return U[:, 1] - U[:, 0]
    others = U[:, None, :] + np.where(np.eye(U.shape[1], dtype=bool), -np.inf, 0.0)
    top = others.max(axis=2)
    return U - (top + np.log(np.exp(others - top[:, :, None]).sum(axis=2)))


def response_scores(estimator, X, method: str, log_odds: bool, classes: np.ndarray):
    """Scores the calibrators see: ``(n,)`` for two classes, ``(n, K)`` otherwise.

    Multiclass columns are the estimator's, which must know exactly the
    classes of ``y``.
    """
    if log_odds_source(estimator, method, log_odds) == "log_proba":
        final, Xt = _final_and_inputs(estimator, X)
        raw = log_odds_from_log_proba(_logits(final, Xt))
        if classes.shape[0] != 2 and raw.ndim == 1:
            raw = raw[:, None]  # caught as a shape mismatch below
    else:
        raw = as_scores(getattr(estimator, method)(X), method, log_odds, classes)
    if classes.shape[0] == 2:
        return raw
    if not np.array_equal(np.asarray(estimator.classes_), classes) or raw.ndim != 2:
        raise ValueError(
            f"{type(estimator).__name__} knows classes {list(estimator.classes_)} and "
            f"{method} returned shape {raw.shape}, but y has classes {list(classes)}: "
            "one-vs-rest calibration needs one score column per class of y"
        )
    return raw


def resolve_response_method(estimator, response_method: str, name: str | None = None) -> str:
    """The score method of ``estimator``: ``response_method``, or for ``"auto"`` its
    ``decision_function`` if it has one, else ``predict_proba``."""
    who = type(estimator).__name__ if name is None else f"{name!r} ({type(estimator).__name__})"
    if response_method != "auto":
        if not hasattr(estimator, response_method):
            raise ValueError(f"response_method={response_method!r} but {who} has no such method")
        return response_method
    for method in ("decision_function", "predict_proba"):
        if hasattr(estimator, method):
            return method
    raise ValueError(
        f"{who} has neither decision_function nor predict_proba: there is no score to calibrate"
    )


def check_fit_data(X, y, sample_weight, purpose: str):
    """Validate what a meta-estimator's ``fit`` gets.

    Returns ``X, y`` (indexable), the label encoder's ``classes`` and encoded
    ``y_enc``, and ``sample_weight`` as float64 (or None).
    """
    check_classification_targets(y)
    y = column_or_1d(y, warn=True)
    X, y = indexable(X, y)
    n = _num_samples(X)
    if n == 0:
        raise ValueError("Found array with 0 sample(s) (shape=(0, ...)): nothing to fit")
    encoder = LabelEncoder().fit(y)
    classes, y_enc = encoder.classes_, encoder.transform(y)
    if classes.shape[0] < 2:
        raise ValueError(
            f"y contains only one class ({classes[0]!r}); {purpose} needs at least two classes"
        )
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {sample_weight.shape}")
    return X, y, classes, y_enc, sample_weight


def fit_kwargs(estimator, fit_params: dict, sample_weight, who: str, purpose: str) -> dict:
    """``fit_params`` plus ``sample_weight`` when ``estimator.fit`` accepts it;
    otherwise a warning that the weights serve the ``purpose`` only."""
    kw = dict(fit_params)
    if sample_weight is None:
        return kw
    if has_fit_parameter(estimator, "sample_weight"):
        kw["sample_weight"] = sample_weight
    else:
        warnings.warn(
            f"{who} does not accept sample_weight: the weights are used for the {purpose} only",
            UserWarning,
            stacklevel=3,
        )
    return kw


def check_frozen_classes(estimator, classes: np.ndarray, who: str) -> None:
    """Refuse a prefit (frozen) classifier whose ``classes_`` differ from ``y``'s.

    Its score columns are indexed by its own classes: a 3-class model
    calibrated on a binary ``y`` would silently calibrate one class's column
    (or the last one) as if it were the positive class.
    """
    known = getattr(estimator, "classes_", None)
    if known is None:
        return
    known = np.asarray(known)
    if known.shape != classes.shape or not np.array_equal(known, classes):
        raise ValueError(
            f"{who} knows classes {known.tolist()} but y has classes {classes.tolist()}: its "
            "scores would not match the labels. Calibrate it on labels of exactly its classes"
        )


def check_folds(cv, X, y, y_enc):
    """``check_cv`` for a classifier, refusing folds that would lack a class."""
    cv = check_cv(cv, y, classifier=True)
    n_folds = cv.get_n_splits(X, y)
    if np.bincount(y_enc).min() < n_folds:
        raise ValueError(
            f"Requesting {n_folds}-fold cross-validation but provided fewer than "
            f"{n_folds} examples for at least one class"
        )
    return cv


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

    def predict_proba(self, X):
        """One-vs-rest calibrated probabilities, rows renormalised to sum to 1."""
        scores = response_scores(
            self.estimator, X, self.response_method, self.log_odds, self.classes
        )
        return combine_one_vs_rest(
            [
                cal.predict_proba(col)[:, 1]
                for cal, col in zip(self.calibrators, _columns(scores), strict=True)
            ],
            self.classes.shape[0],
        )


def _columns(scores):
    return [scores] if scores.ndim == 1 else list(scores.T)


def combine_one_vs_rest(positive: list, n_classes: int) -> np.ndarray:
    """Class probabilities from per-class positive probabilities.

    Two classes: ``[1 - p, p]``. More: each row divided by its sum; a row of
    zeros becomes uniform, as in scikit-learn.
    """
    if n_classes == 2:
        p = np.asarray(positive[0], dtype=np.float64)
        return np.stack([1.0 - p, p], axis=1)
    proba = np.stack(positive, axis=1).astype(np.float64)
    total = proba.sum(axis=1, keepdims=True)
    uniform = np.full_like(proba, 1.0 / n_classes)
    return np.divide(proba, total, out=uniform, where=total > 0)


def _fit_calibrators(
    estimator, scores, y_enc, classes, calibrator, sample_weight, method, log_odds
):
    calibrators = []
    for k, col in enumerate(_columns(scores)):
        target = (y_enc == (1 if scores.ndim == 1 else k)).astype(np.int64)
        cal = clone(calibrator).fit(col, target, sample_weight=sample_weight)
        calibrators.append(cal)
    return CalibratedPair(
        estimator, calibrators, classes=classes, response_method=method, log_odds=log_odds
    )


def _fit_fold(estimator, X, y, train, fit_kw):
    """``estimator`` fitted on the rows ``train``, its sample weights sliced alike."""
    kw = dict(fit_kw)
    if kw.get("sample_weight") is not None:
        kw["sample_weight"] = np.asarray(kw["sample_weight"])[train]
    return estimator.fit(_safe_indexing(X, train), _safe_indexing(y, train), **kw)


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
    _fit_fold(estimator, X, y, train, fit_kw)
    X_test = _safe_indexing(X, test)
    scores = response_scores(estimator, X_test, method, log_odds, classes)
    sw = None if sample_weight is None else sample_weight[test]
    return _fit_calibrators(
        estimator, scores, y_enc[test], classes, calibrator, sw, method, log_odds
    )


def _out_of_fold_scores(estimator, X, y, cv, fit_kw, method, log_odds, classes):
    """``response_scores`` of a clone fitted on the other folds, for every row."""
    n = _num_samples(X)
    scores = None
    for train, test in cv.split(X, y):
        est = _fit_fold(clone(estimator), X, y, train, fit_kw)
        fold = response_scores(est, _safe_indexing(X, test), method, log_odds, classes)
        if scores is None:
            scores = np.empty((n, *fold.shape[1:]))
        scores[test] = fold
    return scores


class CalibratedClassifier(NoneDefaultsMixin, ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Probability calibration of any classifier with a bernonnx calibrator.

    Behaves like scikit-learn's ``CalibratedClassifierCV``: cross-validated
    (one calibrated copy of the classifier per fold, averaged, or one
    classifier plus calibrators fitted on out-of-fold scores) or prefit
    (wrap the fitted classifier in ``sklearn.frozen.FrozenEstimator``).
    Multiclass problems are calibrated one-vs-rest and renormalised.

    Parameters
    ----------
    estimator : classifier, default=None
        The classifier whose scores are calibrated; ``LinearSVC()`` if None.
        Wrap a fitted classifier in ``FrozenEstimator`` to calibrate it
        without refitting.
    calibrator : estimator, default=None
        Any bernonnx calibrator (``fit(scores, y, sample_weight)``,
        ``predict_proba(scores)``); cloned per class and per fold.
        ``BernsteinCalibrator()`` if None.
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
    log_odds : bool, default=False
        With ``predict_proba`` scores, calibrate each class's log-odds instead
        of ``p``. GaussianNB, MLPClassifier and LogisticRegression give them
        from their log-probabilities (joint log-likelihood, logits), which do
        not saturate; other models from probabilities clipped to
        ``[1e-15, 1 - 1e-15]``. ``CalibratedPair.log_odds_from`` records which.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    calibrated_classifiers_ : list of CalibratedPair
        Fitted (classifier, calibrators) pairs: one per fold with
        ``ensemble=True``, one otherwise.
    response_method_ : str
        The resolved score method.
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
        "log_odds": ["boolean"],
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
        log_odds=False,
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
    _DEFAULTS = {"estimator": LinearSVC, "calibrator": BernsteinCalibrator}

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
            scores = response_scores(estimator, X, method, self.log_odds, self.classes_)
            pair = _fit_calibrators(
                estimator,
                scores,
                y_enc,
                self.classes_,
                calibrator,
                sample_weight,
                method,
                self.log_odds,
            )
            self.calibrated_classifiers_ = [pair]
        else:
            cv = check_folds(self.cv, X, y, y_enc)
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
                        self.log_odds,
                        self.classes_,
                    )
                    for train, test in cv.split(X, y)
                )
            else:
                if log_odds_source(estimator, method, self.log_odds) == "log_proba":
                    # cross_val_predict cannot ask for logits: the same folds by hand
                    scores = _out_of_fold_scores(
                        estimator, X, y, cv, fit_kw, method, self.log_odds, self.classes_
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
                    scores = as_scores(raw, method, self.log_odds, self.classes_)
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
                        self.log_odds,
                    )
                ]

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        estimator = LinearSVC() if self.estimator is None else self.estimator
        tags.input_tags.sparse = estimator.__sklearn_tags__().input_tags.sparse
        return tags


def as_scores(raw, method: str, log_odds: bool, classes: np.ndarray) -> np.ndarray:
    """A score method's output (or ``cross_val_predict``'s, whose columns are
    ordered by the sorted labels) as calibrator scores: log-odds of
    probabilities when asked, and the positive class's column for two classes."""
    raw = np.asarray(raw, dtype=np.float64)
    if method == "predict_proba" and log_odds:
        raw = clipped_log_odds(raw, LOG_ODDS_EPS)
    if classes.shape[0] == 2 and raw.ndim == 2:
        return raw[:, -1]
    return raw
