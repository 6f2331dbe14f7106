"""Class-prior (label) shift: a calibrated model moved to new class priors.

:class:`PriorShiftAdapter` wraps a fitted calibrated classifier and moves its
probabilities to given priors, or to priors estimated from unlabeled target rows by EM
(Saerens, Latinne & Decaestecker 2002) with a bootstrap interval;
:func:`adapt_proba` is the formula itself, for probabilities in hand (one target per
row too, as the exported graph's ``priors`` input takes them).
"""

from bernonnx._core.priors import adapt_proba, class_prior

from ._adapter import MIN_TARGET_ROWS, PriorShiftAdapter, UncalibratedModelWarning

__all__ = [
    "MIN_TARGET_ROWS",
    "PriorShiftAdapter",
    "UncalibratedModelWarning",
    "adapt_proba",
    "class_prior",
]
