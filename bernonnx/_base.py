"""What every binary calibrator derives from its positive-class probability."""

from __future__ import annotations

import numpy as np


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
