"""Fusion of several classifiers' scores by a coordinate-wise monotone calibrator."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_predict
from sklearn.utils.validation import check_is_fitted

from ._base import NoneDefaultsMixin
from ._meta import (
    as_scores,
    check_fit_data,
    check_folds,
    check_frozen_classes,
    combine_one_vs_rest,
    fit_kwargs,
    resolve_response_method,
    response_scores,
    score_columns,
)
from ._validation import HasMethods, IntInterval, StrOptions, _fit_context
from .calibrators.multivariate import MultivariateBernsteinCalibrator

__all__ = ["FusionClassifier"]


def _check_estimators(estimators) -> list[tuple[str, object]]:
    if not isinstance(estimators, list | tuple) or len(estimators) == 0:
        raise ValueError(
            f"estimators must be a non-empty list of (name, classifier) pairs; got {estimators!r}"
        )
    names = []
    for item in estimators:
        if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(
                f"estimators must be a list of (name, classifier) pairs; got the item {item!r}"
            )
        names.append(item[0])
        if not hasattr(item[1], "fit"):
            raise TypeError(f"estimator {item[0]!r} has no fit method: {item[1]!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"estimator names must be unique; got {names}")
    return [(name, est) for name, est in estimators]


def _default_calibrator():
    return MultivariateBernsteinCalibrator(loss="log", score_transform="logistic")


class FusionClassifier(NoneDefaultsMixin, ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Stack several classifiers and fuse their scores with a monotone calibrator.

    Each base classifier gives one score per row (its ``decision_function``,
    or its probability of the positive class, optionally as log-odds); the
    ``(n, M)`` score matrix is mapped to a probability by
    :class:`~bernonnx.MultivariateBernsteinCalibrator` (or any classifier
    fitted on that matrix), which is non-decreasing in every score: a row
    that every base model scores higher is never given a lower probability.
    This is a stacking classifier whose final step is a calibrator (Wang &
    Liu's BernPolyFusion), and it exports to ONNX as one graph holding all
    the base models and the fusion (:func:`bernonnx.export.to_onnx`).

    Parameters
    ----------
    estimators : list of (str, estimator)
        The base classifiers. A :class:`~sklearn.frozen.FrozenEstimator`
        (a classifier already fitted, e.g. on its own data set, as in the
        paper's protocol) is used as it is; the others are fitted.
    calibrator : estimator, default=None
        Fitted on the score matrix; defaults to
        ``MultivariateBernsteinCalibrator(loss="log", score_transform="logistic")``,
        the 1-D calibrator's defaults, which beat the paper's least squares on
        empirical CDFs in 5 of 6 measures of Wang & Liu's protocol on our data
        (the documentation's results, "Fusing several classifiers"). Any classifier
        with ``fit`` and
        ``predict_proba`` works in Python (``LogisticRegression`` gives
        logistic stacking); the ONNX export needs a
        ``MultivariateBernsteinCalibrator``.
    cv : int, cross-validation generator or iterable, default=None
        How the scores the calibrator is fitted on are obtained for base
        classifiers that are not frozen: out-of-fold predictions of this
        split (``None``: 5-fold stratified), after which each is refitted on
        all the data. When every base classifier is frozen, their scores on
        ``X`` are used directly and ``cv`` is not used.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        The score of every base classifier. ``"auto"``: ``decision_function``
        where it exists, else ``predict_proba``.
    log_odds : bool, default=False
        Map probabilities (``predict_proba`` scores) to log-odds,
        ``log(p) - log(1 - p)`` after clipping ``p`` to ``[1e-15, 1 - 1e-15]``.
    n_jobs : int, default=None
        Jobs of ``cross_val_predict``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    estimators_ : list of estimators
        The fitted base classifiers (frozen ones as given).
    named_estimators_ : dict
        The same, by name.
    response_methods_ : list of str
        The score method of each base classifier.
    calibrators_ : list of estimators
        The fitted fusion calibrator: one for two classes; one per class
        (one-vs-rest on that class's scores, then rows renormalised to sum to
        one) for more.
    n_features_in_ : int
        Number of features of ``X`` (when the base classifiers know it).

    Notes
    -----
    ``predict_proba`` evaluates, for two classes, ``p = cal.predict_proba(S)``
    with ``S[:, m]`` the score of base classifier ``m`` (the column of the
    positive class ``classes_[1]``); for ``K > 2`` classes, ``p_k`` from the
    calibrator of class ``k`` on the class-``k`` columns, divided by their
    row sum (uniform for a zero sum). The ONNX converter emits the same.

    References
    ----------
    Y. Wang, X. Liu, "Multivariate Probability Calibration with Isotonic
    Bernstein Polynomials", IJCAI 2020.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from bernonnx import FusionClassifier, MultivariateBernsteinCalibrator
    >>> X, y = make_classification(2000, n_features=8, random_state=0)
    >>> fusion = FusionClassifier(
    ...     [("lr", LogisticRegression()), ("nb", GaussianNB())],
    ...     calibrator=MultivariateBernsteinCalibrator(degree=3),
    ... ).fit(X, y)
    >>> fusion.calibrators_[0].coef_.shape
    (4, 4)
    >>> fusion.predict_proba(X[:3]).sum(axis=1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """

    _parameter_constraints: dict = {
        "estimators": [list, tuple],
        "calibrator": [None, HasMethods(["fit", "predict_proba"])],
        "cv": ["cv_object"],
        "response_method": [StrOptions({"auto", "decision_function", "predict_proba"})],
        "log_odds": ["boolean"],
        "n_jobs": [IntInterval(None, None, closed="neither"), None],
    }

    #: What ``calibrator=None`` stands for (``NoneDefaultsMixin``: ``calibrator__degree``
    #: and the like reach it).
    _DEFAULTS = {"calibrator": _default_calibrator}

    def __init__(
        self,
        estimators,
        calibrator=None,
        *,
        cv=None,
        response_method="auto",
        log_odds=False,
        n_jobs=None,
    ):
        self.estimators = estimators
        self.calibrator = calibrator
        self.cv = cv
        self.response_method = response_method
        self.log_odds = log_odds
        self.n_jobs = n_jobs

    def _score_matrices(self, X, estimators, methods) -> list[np.ndarray]:
        """One ``(n, M)`` score matrix per calibrator (one, or one per class)."""
        scores = [
            response_scores(est, X, method, self.log_odds, self.classes_)
            for est, method in zip(estimators, methods, strict=True)
        ]
        return self._stack(scores)

    def _stack(self, scores: list[np.ndarray]) -> list[np.ndarray]:
        per_model = [score_columns(s) for s in scores]
        return [np.stack(cols, axis=1) for cols in zip(*per_model, strict=True)]

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the base classifiers (those not frozen) and the fusion calibrator.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Used by the calibrator, and by base classifiers whose ``fit``
            accepts ``sample_weight``.
        **fit_params : dict
            Passed to every fitted base classifier's ``fit``.

        Returns
        -------
        self : FusionClassifier
        """
        named = _check_estimators(self.estimators)
        X, y, self.classes_, y_enc, sample_weight = check_fit_data(X, y, sample_weight, "fusion")
        methods = [resolve_response_method(est, self.response_method, name) for name, est in named]
        calibrator = _default_calibrator() if self.calibrator is None else self.calibrator

        fitted, raw = [], []
        cv = None
        for (name, est), method in zip(named, methods, strict=True):
            if isinstance(est, FrozenEstimator):
                check_frozen_classes(est, self.classes_, f"the frozen estimator {name!r}")
                fitted.append(est)
                raw.append(response_scores(est, X, method, self.log_odds, self.classes_))
                continue
            who = f"estimator {name!r} ({type(est).__name__})"
            kw = fit_kwargs(est, fit_params, sample_weight, who, "fusion")
            if cv is None:
                cv = check_folds(self.cv, X, y, y_enc)
            oof = cross_val_predict(
                clone(est), X, y, cv=cv, method=method, n_jobs=self.n_jobs, params=kw
            )
            raw.append(as_scores(oof, method, self.log_odds, self.classes_))
            fitted.append(clone(est).fit(X, y, **kw))

        self.estimators_ = fitted
        self.named_estimators_ = {name: est for (name, _), est in zip(named, fitted, strict=True)}
        self.response_methods_ = methods
        binary = self.classes_.shape[0] == 2
        self.calibrators_ = []
        for k, scores in enumerate(self._stack(raw)):
            target = (y_enc == (1 if binary else k)).astype(np.int64)
            kw = {} if sample_weight is None else {"sample_weight": sample_weight}
            self.calibrators_.append(clone(calibrator).fit(scores, target, **kw))
        first = fitted[0]
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def score_matrix(self, X) -> np.ndarray:
        """The base classifiers' scores the calibrator sees.

        Returns
        -------
        scores : ndarray of shape (n_samples, M) for two classes, or (n_samples, M, n_classes)
        """
        check_is_fitted(self)
        mats = self._score_matrices(X, self.estimators_, self.response_methods_)
        return mats[0] if len(mats) == 1 else np.stack(mats, axis=2)

    def predict_proba(self, X):
        """Fused, calibrated class probabilities.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        mats = self._score_matrices(X, self.estimators_, self.response_methods_)
        positive = [
            cal.predict_proba(m)[:, 1] for cal, m in zip(self.calibrators_, mats, strict=True)
        ]
        return combine_one_vs_rest(positive, self.classes_.shape[0])

    def predict(self, X):
        """Class with the highest fused probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            named = _check_estimators(self.estimators)
        except (TypeError, ValueError):
            return tags
        tags.input_tags.sparse = all(est.__sklearn_tags__().input_tags.sparse for _, est in named)
        return tags
