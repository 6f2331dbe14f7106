"""What every binary calibrator derives from its positive-class probability."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._core.chunks import Source
from ._core.sources import ScoreTable, summarise
from ._validation import fit_inputs, predict_scores


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
        self._refit_if_stale()  # partial_fit's lazy fit (bernonnx.stats.PartialFitMixin)
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
