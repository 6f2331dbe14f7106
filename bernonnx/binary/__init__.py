"""Parametric and conformal binary calibrators of the CalArena leaders.

Beta calibration (:class:`BetaCalibrator`), quadratic scaling of the logit
(:class:`QuadraticScalingCalibrator`) and inductive Venn-Abers
(:class:`VennAbersCalibrator`): one-score calibrators with the conventions of
:class:`bernonnx.PlattCalibrator` (any two labels, weights equal repetition, float32 in
and out, ``partial_fit`` through exact distinct-score statistics), each exported by a
converter that emits the formula ``predict_proba`` evaluates. Affine scaling of the
logit is :class:`bernonnx.PlattCalibrator` (``log_odds=True`` on probabilities).
"""

from .beta import BetaCalibrator
from .quadratic import QuadraticScalingCalibrator
from .venn_abers import VennAbersCalibrator

__all__ = ["BetaCalibrator", "QuadraticScalingCalibrator", "VennAbersCalibrator"]
