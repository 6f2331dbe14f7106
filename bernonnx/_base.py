"""What the estimators share: mixins, parameter constraints and fitted-state keys.

The estimator layer's common ground (the core below never reads it): what every
binary calibrator derives from its positive-class probability
(:class:`PositiveProbaMixin`), the fits on sources (:class:`SourceFitMixin`,
:class:`TableFitMixin`; :func:`lazy_source` chooses the engine where ``fit`` is
called), ``partial_fit`` (:class:`PartialFitMixin`), the parameters, limits
and optional fitted attributes of the Bernstein calibrators, and the Platt part that
the Platt and Platt-histogram calibrators share (its parameters, :func:`_set_platt`
and :func:`_platt_argument`, over the fit of :mod:`bernonnx._core.sigmoid`).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._core.chunks import Source
from ._core.sigmoid import _fit_platt, _in_memory, _platt_feature
from ._core.sources import ScoreTable, summarise
from ._core.transforms import TRANSFORMS, rescale, score_exponent
from ._validation import (
    Interval,
    IntInterval,
    StrOptions,
    check_scores,
    fit_inputs,
    predict_scores,
    single_score,
)
from .stats import check_classes, one_class_message, stats_for

#: Highest degree accepted. The float32 ONNX graph keeps C(d, k) finite up
#: to d = 131; 100 leaves room and is far above any degree CV picks.
MAX_DEGREE = 100
#: Most folds of a degree search. Each fold fits every candidate degree, so
#: the cost grows with the folds; ``n_folds=10**6`` used to become
#: leave-one-out (39 s on 500 rows) instead of an error.
MAX_FOLDS = 20
#: Candidate degrees of the 1-D ``degree="auto"``.
AUTO_DEGREES = (2, 3, 4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)
#: Fitted parameters of the score transforms (``<key>_`` attributes).
TRANSFORM_KEYS = ("shift", "scale", "scale_below", "knots", "levels")
#: Fitted attributes that only some fits set (degree search, transform parameters):
#: a refit deletes those of the previous fit, so none is stale.
FITTED_OPTIONAL = ("cv_degrees_", "cv_log_loss_") + tuple(k + "_" for k in TRANSFORM_KEYS)

#: Parameters shared by the Bernstein calibrators (their ``_parameter_constraints``).
PARAMETER_CONSTRAINTS: dict = {
    "degree": [
        IntInterval(1, MAX_DEGREE, closed="both"),
        StrOptions({"auto"}),
        list,
        tuple,
        np.ndarray,
    ],
    "loss": [StrOptions({"log", "squared"})],
    "score_transform": [StrOptions(set(TRANSFORMS))],
    "n_knots": [IntInterval(2, None, closed="left")],
    "logit_bound": [Interval(Real, 0, None, closed="neither")],
    "n_folds": [IntInterval(2, MAX_FOLDS, closed="both")],
    "min_slope": [Interval(Real, 0, 0.5, closed="left")],
}

#: Parameters of the Platt part of the Platt and Platt-histogram calibrators.
_PLATT_CONSTRAINTS: dict = {
    "log_odds": ["boolean"],
    # below about 1.1e-16, 1 - eps rounds to 1 in float64 and logit(1) = inf
    "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
    "C": [Interval(Real, 0, np.inf, closed="right")],
    "increasing": ["boolean"],
}


def forget_optional_attributes(estimator) -> None:
    """Delete the :data:`FITTED_OPTIONAL` attributes an earlier fit left."""
    for name in FITTED_OPTIONAL:
        if hasattr(estimator, name):
            delattr(estimator, name)


def record_degree_search(estimator, degrees, fold_losses) -> None:
    """``cv_degrees_`` and ``cv_log_loss_`` of a search among ``degrees`` (more than one).

    ``fold_losses`` (shape ``(n_folds_used, n_candidates)``) as the search returns
    them, or None when no fold could be held out (every row in one fold, or scores
    without a ranking): then every candidate's loss is NaN, as for a candidate the
    search skipped. A mean over no held-out rows is no loss, and 0.0 would read as
    a perfect one.
    """
    estimator.cv_degrees_ = np.asarray(degrees)
    if fold_losses is None or fold_losses.shape[0] == 0:
        estimator.cv_log_loss_ = np.full(len(degrees), np.nan)
    else:
        estimator.cv_log_loss_ = fold_losses.mean(axis=0)


class PositiveProbaMixin:
    """``predict_proba`` and ``predict`` from ``_positive_proba(X)`` = P(y = classes_[1]).

    Put it before ``ClassifierMixin`` and ``BaseEstimator`` in the bases.
    """

    def predict_proba(self, X):
        """Calibrated probabilities, shape ``(n_samples, 2)``; see Notes for the formula."""
        p = self._positive_proba(X)
        return np.stack([1 - p, p], axis=1)

    def predict(self, X):
        """Class with the higher calibrated probability (ties go to ``classes_[0]``)."""
        p = self._positive_proba(X)
        return self.classes_[(p > 0.5).astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class OneScoreMixin(PositiveProbaMixin):
    """A calibrator of one score: 1-D input accepted (scikit-learn's ``one_d_array``)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        return tags


class NoneDefaultsMixin:
    """Nested parameters of the sub-estimators that a ``None`` parameter stands for.

    ``_DEFAULTS`` maps a parameter name to a factory of its default estimator.
    ``get_params(deep=True)`` lists ``calibrator__degree``, ... for a ``None``
    ``calibrator``, and ``set_params(calibrator__degree=8)`` puts a fresh default
    in place first, so that ``GridSearchCV`` can tune the defaults. ``None``
    stays the signature's default: scikit-learn forbids estimator instances
    there (a shared mutable default). Put it before ``BaseEstimator``.
    """

    _DEFAULTS: dict = {}

    def get_params(self, deep=True):
        out = super().get_params(deep=deep)
        if deep:
            for key, default in self._DEFAULTS.items():
                if out[key] is None:
                    out.update((f"{key}__{k}", v) for k, v in default().get_params().items())
        return out

    def set_params(self, **params):
        for key, default in self._DEFAULTS.items():
            nested = any(name.startswith(key + "__") for name in params)
            if nested and params.get(key, getattr(self, key)) is None:
                params = {**params, key: default()}
        return super().set_params(**params)


class _ScoreCalibrator(OneScoreMixin, ClassifierMixin, BaseEstimator):
    """A one-score baseline calibrator (Platt, isotonic, histogram): inputs checked
    as ``BernsteinCalibrator`` does (:func:`fit_inputs`), ``[1 - p, p]``,
    ``predict`` and tags from the mixin.

    Subclasses implement ``_evaluate(s)``: the positive-class probability of
    float64 scores, in float64.
    """

    def _positive_proba(self, X):
        # partial_fit's lazy fit (bernonnx._base.PartialFitMixin), where there is one
        getattr(self, "_refit_if_stale", lambda: None)()
        check_is_fitted(self)
        s = predict_scores(self, X)
        # evaluated in float64 (a float32 score is exact in float64), then cast back
        return self._evaluate(s.astype(np.float64)).astype(s.dtype, copy=False)


def lazy_source(X, y, sample_weight) -> Source | None:
    """A :class:`Source` over a Dask collection ``X``, else ``None`` (in-memory data)."""
    if type(X).__module__.split(".")[0] == "dask":
        from .dask import dask_source

        return dask_source(X, y, sample_weight)
    return None


class SourceFitMixin:
    """``fit``'s dispatch of a one-score calibrator: a Dask collection or in-memory rows.

    The class implements ``_fit_rows(s, target, w)`` (float64 scores, 0/1
    target, positive weights) and ``_fit_source(source)``.
    """

    def _fit_any(self, X, y, sample_weight):
        vars(self).pop("stats_", None)  # a fit starts afresh: partial_fit's statistics go
        source = lazy_source(X, y, sample_weight)
        if source is not None:
            return self._fit_source(source)
        return self._fit_rows(*fit_inputs(self, X, y, sample_weight))


class TableFitMixin(SourceFitMixin):
    """``_fit_source`` of a calibrator whose fit reads rows that weights may replace:
    a source is reduced to a :class:`ScoreTable` in one pass and fitted as its rows."""

    def _fit_source(self, source):
        described = summarise(source, type(self).__name__)
        table = source.reduce(lambda chunk: ScoreTable.of_chunk(chunk, described.classes))
        self.classes_, self.n_features_in_ = described.classes, 1
        return self._fit_rows(*table.rows())


#: What ``partial_fit`` keeps across chunks: the statistics and what the first chunk fixed.
_KEPT = frozenset({"stats_", "classes_", "n_features_in_", "feature_names_in_"})


def _fitted_attributes(obj) -> list[str]:
    return [k for k in vars(obj) if k.endswith("_") and not k.startswith("_") and k not in _KEPT]


class PartialFitMixin:
    """``partial_fit`` from :func:`stats_for` statistics kept in ``stats_``; lazy fit.

    ``partial_fit`` only updates the statistics. The fit from them happens once,
    on first use after an update: ``predict_proba``, ``predict``, or reading a
    fitted attribute (``coef_``, ``degree_``, ...: what the ONNX converter reads),
    so a stream of chunks costs one fit, not one per chunk.
    """

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a chunk of rows to the statistics; the fit follows on first use.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Scores of the chunk.
        y : array-like of shape (n_samples,)
            Labels of the chunk.
        classes : array-like of shape (2,), default=None
            The two classes; needed on the first call when its chunk may hold
            one class only (scikit-learn's convention), ignored afterwards.
            Chunks of one class are accepted; the calibrator is fitted once both
            classes have positive weight (before, it raises ``NotFittedError``).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self

        Notes
        -----
        See :mod:`bernonnx.stats` for what is kept and the precision: the
        statistics live in ``stats_`` (mergeable, serialisable). ``fit`` starts
        afresh and keeps no statistics of its rows (a fitted calibrator would
        otherwise carry its calibration data), so ``partial_fit`` after ``fit``
        is refused with a ``ValueError``.
        """
        first = "stats_" not in vars(self)
        name = type(self).__name__
        if first and "classes_" in vars(self):
            raise ValueError(
                f"partial_fit cannot continue a {name} fitted by fit: fit keeps no "
                "statistics of its rows, so they would be dropped. Stream every chunk "
                "through partial_fit of an unfitted calibrator (sklearn.base.clone), or "
                "fit on all the rows at once"
            )
        if first:
            self._validate_params()  # scikit-learn's check of _parameter_constraints
        arr, y = check_scores(self, X, reset=first, y=y)
        scores = single_score(self, arr)
        stats = stats_for(self, check_classes(y, classes)) if first else self.stats_
        before = stats.rows
        stats.update(scores, y, sample_weight)
        if first:
            self.stats_, self.classes_ = stats, stats.classes
        if stats.rows != before:
            for key in _fitted_attributes(self):
                delattr(self, key)
        return self

    def _refit_if_stale(self):
        """Fit from ``stats_`` if it changed since the last fit (no-op after ``fit``)."""
        stats = vars(self).get("stats_")
        if stats is None or vars(self).get("_fitted_on") == (id(stats), stats.rows):
            return
        negative, positive = stats.class_weights()
        if not (negative > 0 and positive > 0):
            what = one_class_message(stats, negative, positive)
            raise NotFittedError(f"{what}: partial_fit more rows before using it")
        fitted = stats.fit()
        for key in _fitted_attributes(self):
            delattr(self, key)
        for key in _fitted_attributes(fitted):
            setattr(self, key, getattr(fitted, key))
        self._fitted_on = (id(stats), stats.rows)

    def __sklearn_is_fitted__(self) -> bool:
        stats = vars(self).get("stats_")
        if stats is None:  # scikit-learn's rule
            return any(k.endswith("_") and not k.startswith("__") for k in vars(self))
        if vars(self).get("_fitted_on") == (id(stats), stats.rows):
            return True
        negative, positive = stats.class_weights()
        return negative > 0 and positive > 0

    def __getattr__(self, name: str):
        # reached only for a missing attribute: a fitted one that partial_fit made stale
        # is fitted here, so whoever reads it (the ONNX converter, plots) gets the fit
        state = self.__dict__
        if name.endswith("_") and not name.startswith("_") and name not in _KEPT:
            if "stats_" in state:
                self._refit_if_stale()
                if name in state:
                    return state[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _platt_argument(est, s: np.ndarray) -> np.ndarray:
    """``slope_ * t + intercept_``: one multiplication, one addition (the graph's Mul, Add)."""
    t = rescale(_platt_feature(s, est.log_odds, est.eps), getattr(est, "score_exponent_", 0))
    return est.slope_ * t + est.intercept_


def _platt_eval(est, s: np.ndarray) -> np.ndarray:
    return expit(_platt_argument(est, s))


def _set_platt(est, s, target, w):
    """Fit the Platt part of ``est`` (score_exponent_, slope_, intercept_) and return g(s).

    Extreme scores are rescaled by a power of two first: the slope of
    denormal scores (about 1e310) is not a float64.
    """
    t = _platt_feature(s, est.log_odds, est.eps)
    est.score_exponent_ = score_exponent(t)
    t = rescale(t, est.score_exponent_)
    est.slope_, est.intercept_ = _fit_platt(_in_memory(t, target, w), float(est.C), est.increasing)
    return _platt_eval(est, s)
