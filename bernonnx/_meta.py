"""The machinery the meta-estimators share: scores, fit data, folds.

:class:`~bernonnx.CalibratedClassifier` and :class:`~bernonnx.FusionClassifier` both
turn classifiers' outputs into the scores their calibrators see, validate what ``fit``
gets and fit clones fold by fold; this module does it once for both.

- scores: :func:`resolve_response_method` picks the score method (raw margins of
  XGBoost and LightGBM classifiers, :func:`booster_kind`, count as their
  ``decision_function``, :func:`method_output`), :func:`response_scores` calls it
  (log-odds from exact logits where the model has them, :func:`log_odds_source`),
  :func:`as_scores` maps a method's output to scores,
  :func:`combine_one_vs_rest` turns per-class probabilities into rows that sum to one;
- fit data: :func:`check_fit_data`, :func:`fit_kwargs`, :func:`check_frozen_classes`;
- wrappers of a fitted model (``PriorShiftAdapter``, ``ConformalClassifier``):
  :func:`final_classifier` finds the model that makes the probabilities and
  :func:`clone_keeping_fitted` is their ``__sklearn_clone__``;
- folds: :func:`check_folds`, :func:`check_fold_classes`, :func:`fit_fold`,
  :func:`out_of_fold_scores`.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import check_cv
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import indexable
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_array,
    column_or_1d,
    has_fit_parameter,
    validate_data,
)

from ._core.transforms import clipped_log_odds
from ._validation import ACTIVATIONS, _num_samples, _safe_indexing

__all__ = [
    "LOG_ODDS_EPS",
    "as_scores",
    "booster_kind",
    "check_fit_data",
    "check_fold_classes",
    "check_folds",
    "check_frozen_classes",
    "combine_one_vs_rest",
    "final_and_inputs",
    "fit_fold",
    "fit_kwargs",
    "log_odds_from_log_proba",
    "log_odds_source",
    "method_output",
    "out_of_fold_scores",
    "resolve_response_method",
    "response_scores",
    "score_columns",
]

#: Probabilities are clipped to [eps, 1 - eps] before the log-odds map so
#: that 0 and 1 give finite scores (|logit| <= 34.5); the ONNX graph clips alike.
LOG_ODDS_EPS = 1e-15


def final_classifier(estimator):
    """The model that makes the probabilities (FrozenEstimator and Pipeline unwrapped,
    however nested)."""
    while True:
        if isinstance(estimator, FrozenEstimator):
            estimator = estimator.estimator
        elif isinstance(estimator, Pipeline):
            estimator = estimator.steps[-1][1]
        else:
            return estimator


def clone_keeping_fitted(wrapper):
    """An unfitted copy of ``wrapper`` with the same parameters and the same wrapped,
    FITTED ``estimator``.

    A meta-estimator that wraps a fitted model and never fits it keeps the model as it
    is (scikit-learn's ``clone`` would clone it unfitted, as it does any estimator
    parameter; ``FrozenEstimator`` is kept the same way). Every other parameter, and the
    metadata routing and output configuration, are copied as ``clone`` copies them, so
    grid searches, ``cross_val_score`` and Pipelines get a copy whose ``fit`` works.
    """
    params = wrapper.get_params(deep=False)
    estimator = params.pop("estimator")
    params = {name: clone(value, safe=False) for name, value in params.items()}
    new = type(wrapper)(estimator, **params)
    for name in ("_metadata_request", "_sklearn_output_config"):
        if hasattr(wrapper, name):
            setattr(new, name, copy.deepcopy(getattr(wrapper, name)))
    return new


def final_and_inputs(estimator, X):
    """The final classifier of ``estimator`` (FrozenEstimator and Pipeline unwrapped)
    and, when ``X`` is given, the data that classifier sees."""
    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    if isinstance(estimator, Pipeline):
        if X is not None and len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator.steps[-1][1]
    return estimator, X


#: The ``predict`` keyword giving raw margins, by library.
_RAW_MARGIN = {"xgboost": "output_margin", "lightgbm": "raw_score"}


def booster_kind(estimator) -> str | None:
    """``"xgboost"`` or ``"lightgbm"`` when the final classifier of ``estimator``
    (FrozenEstimator and Pipeline unwrapped) is one of those libraries', known by
    its class's module (neither library is imported), else None."""
    final, _ = final_and_inputs(estimator, None)
    module = type(final).__module__
    for kind in _RAW_MARGIN:
        if module == kind or module.startswith(f"{kind}."):
            return kind
    return None


def _has_method(estimator, method: str) -> bool:
    if hasattr(estimator, method):
        return True
    return method == "decision_function" and booster_kind(estimator) is not None


def method_output(estimator, X, method: str):
    """``estimator``'s ``method`` on ``X``. XGBoost and LightGBM classifiers have no
    ``decision_function``: theirs is the raw margin, ``predict(output_margin=True)``
    and ``predict(raw_score=True)`` (``(n,)`` for two classes, else ``(n, K)``),
    which the ONNX export reproduces exactly (``converters/exact_boosters.py``)."""
    if method == "decision_function" and not hasattr(estimator, method):
        kind = booster_kind(estimator)
        if kind is not None:
            final, Xt = final_and_inputs(estimator, X)
            return final.predict(Xt, **{_RAW_MARGIN[kind]: True})
    return getattr(estimator, method)(X)


def log_odds_source(estimator, method: str, log_odds: bool):
    """Where log-odds come from: ``"log_proba"`` for models whose unnormalised
    log-probabilities are computed exactly (GaussianNB's joint log-likelihood,
    the logits of MLPClassifier and LogisticRegression), ``"proba"`` for the
    log-odds of clipped probabilities, None when no log-odds are taken.

    Log-odds of probabilities saturate: a probability within 1e-12 of 1 keeps
    4 significant digits of ``1 - p``, so the last bit of ``p`` moves the
    log-odds by 1e-4. The logits do not saturate.
    """
    if method != "predict_proba" or not log_odds:
        return None
    final, _ = final_and_inputs(estimator, None)
    if isinstance(final, GaussianNB | MLPClassifier | LogisticRegression):
        return "log_proba"
    return "proba"


def _logits(final, X) -> np.ndarray:
    """Unnormalised log-probabilities ``U`` (``softmax(U)`` is ``predict_proba``);
    for binary LogisticRegression and MLPClassifier the (n,) log-odds itself."""
    if isinstance(final, GaussianNB):
        return gaussian_nb_jll64(final, X)
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


def gaussian_nb_jll64(model: GaussianNB, X) -> np.ndarray:
    """GaussianNB's joint log-likelihood (``_joint_log_likelihood``) in float64 whatever
    the fitted dtype: per class ``log prior + (-0.5 sum log(2 pi var) - 0.5 sum((x -
    theta)^2 / var))``, scikit-learn's formula and order on float64 copies of ``X`` and
    of the fitted arrays. A model fitted on float32 data computes it in float32, one
    ulp of a ~1e3 log-likelihood moving the log-odds by 1e-4 relative; in float64 the
    graph (``converters/exact_models.gaussian_nb_jll``) reproduces it bit for bit."""
    X = np.asarray(validate_data(model, X, reset=False), dtype=np.float64)
    theta = np.asarray(model.theta_, dtype=np.float64)
    var = np.asarray(model.var_, dtype=np.float64)
    prior = np.asarray(model.class_prior_, dtype=np.float64)
    columns = []
    for i in range(len(model.classes_)):
        n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * var[i, :]))
        n_ij = n_ij - 0.5 * np.sum(((X - theta[i, :]) ** 2) / var[i, :], axis=1)
        columns.append(np.log(prior[i]) + n_ij)
    return np.stack(columns).T


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
        final, Xt = final_and_inputs(estimator, X)
        raw = log_odds_from_log_proba(_logits(final, Xt))
        if classes.shape[0] != 2 and raw.ndim == 1:
            raw = raw[:, None]  # caught as a shape mismatch below
    else:
        raw = as_scores(method_output(estimator, X, method), method, log_odds, classes)
    if classes.shape[0] == 2:
        return raw
    if not np.array_equal(np.asarray(estimator.classes_), classes) or raw.ndim != 2:
        raise ValueError(
            f"{type(estimator).__name__} knows classes {list(estimator.classes_)} and "
            f"{method} returned shape {raw.shape}, but y has classes {list(classes)}: "
            "one-vs-rest calibration needs one score column per class of y"
        )
    return raw


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


def score_columns(scores):
    """The calibrators' score columns: ``scores`` itself (two classes) or each column."""
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


def resolve_response_method(estimator, response_method: str, name: str | None = None) -> str:
    """The score method of ``estimator``: ``response_method``, or for ``"auto"`` its
    ``decision_function`` if it has one, else ``predict_proba``. The raw margin of an
    XGBoost or LightGBM classifier is its ``decision_function`` (:func:`method_output`)."""
    who = type(estimator).__name__ if name is None else f"{name!r} ({type(estimator).__name__})"
    if response_method != "auto":
        if not _has_method(estimator, response_method):
            raise ValueError(f"response_method={response_method!r} but {who} has no such method")
        return response_method
    for method in ("decision_function", "predict_proba"):
        if _has_method(estimator, method):
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


def check_fold_classes(cv, X, y, y_enc, classes, *, refit: bool) -> None:
    """Refuse a fold whose calibration rows (or, when the classifier is ``refit`` on
    each fold, training rows) lack a class, naming the fold, the class and its rows.

    scikit-learn's ``CalibratedClassifierCV`` fits there: a class the fold's
    classifier never saw gets probability 0 in that fold, and its one-vs-rest
    calibrators fit on calibration rows of one class. A bernonnx calibrator needs
    both labels of its problem (a multiclass one every class), and a fold's graph
    every score column, so the fold is refused before any fit.
    """
    n_folds = cv.get_n_splits(X, y)
    counts = np.bincount(y_enc, minlength=classes.shape[0])
    for i, (train, test) in enumerate(cv.split(X, y), start=1):
        for rows, role in ((train, "training"), (test, "calibration")):
            if role == "training" and not refit:
                continue
            missing = np.flatnonzero(np.bincount(y_enc[rows], minlength=classes.shape[0]) == 0)
            if missing.size:
                k = int(missing[0])
                raise ValueError(
                    f"cv: fold {i} of {n_folds} has no row of class {classes.tolist()[k]!r} "
                    f"among its "
                    f"{len(rows)} {role} rows (the class has {counts[k]} rows, "
                    f"{int(np.sum(y_enc[test] == k))} of them in that fold's calibration "
                    "rows): its classifier or calibrators cannot learn that class. Rows "
                    "sorted by label? Shuffle them (KFold(shuffle=True)) or use "
                    "StratifiedKFold (cv=int does)"
                )


def fit_fold(estimator, X, y, train, fit_kw):
    """``estimator`` fitted on the rows ``train``, its sample weights sliced alike."""
    kw = dict(fit_kw)
    if kw.get("sample_weight") is not None:
        kw["sample_weight"] = np.asarray(kw["sample_weight"])[train]
    return estimator.fit(_safe_indexing(X, train), _safe_indexing(y, train), **kw)


def out_of_fold_scores(estimator, X, y, cv, fit_kw, method, log_odds, classes):
    """``response_scores`` of a clone fitted on the other folds, for every row."""
    n = _num_samples(X)
    scores = None
    for train, test in cv.split(X, y):
        est = fit_fold(clone(estimator), X, y, train, fit_kw)
        fold = response_scores(est, _safe_indexing(X, test), method, log_odds, classes)
        if scores is None:
            scores = np.empty((n, *fold.shape[1:]))
        scores[test] = fold
    return scores
