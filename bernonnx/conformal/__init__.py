"""Conformal prediction sets: the true class in the set at a guaranteed rate.

:class:`ConformalClassifier` wraps a fitted classifier and, from labelled
conformalization rows, the threshold each class's conformity score is compared with;
one module per score (``lac``, ``aps``, ``raps``, as MAPIE keeps its
``conformity_scores``) and ``quantile`` for the weighted finite-sample quantile and the
threshold's placement. :func:`bernonnx.to_onnx` exports the sets in the model's graph
(output ``prediction_set``).
"""

from ._classifier import ConformalClassifier, ConformalWarning
from .quantile import TIE, finite_sample_quantile, place_threshold

__all__ = [
    "TIE",
    "ConformalClassifier",
    "ConformalWarning",
    "finite_sample_quantile",
    "place_threshold",
]
