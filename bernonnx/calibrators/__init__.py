"""The calibrators: every family in one flat package, one module per family.

A calibrator is an estimator on scores, ``fit(scores, y, sample_weight)``; each module
here holds one family, and ``converters/<module>.py`` (``bernonnx.converters``) its ONNX
emitter of the same name. The rest of ``bernonnx`` is what uses them: the
meta-estimators (``calibration``, ``fusion``, ``shift/``), the export, the metrics and
the adapters. A new member goes here, in a module of its own (``ARCHITECTURE.md``, "Where
to add"). Every class is public in ``bernonnx``; import it from there.

One score of a binary problem (``(n,)`` or ``(n, 1)`` scores; with more classes,
:class:`~bernonnx.CalibratedClassifier` fits one per class, one-vs-rest):

============================  =============================================================
``bernstein``                 :class:`~bernonnx.BernsteinCalibrator`, the monotone
                              Bernstein polynomial (the two-class default)
``platt``                     :class:`~bernonnx.PlattCalibrator` (affine scaling of the
                              logit with ``log_odds=True``)
``beta``                      :class:`~bernonnx.BetaCalibrator` (Kull et al. 2017)
``quadratic``                 :class:`~bernonnx.QuadraticScalingCalibrator`
``venn_abers``                :class:`~bernonnx.VennAbersCalibrator` (inductive
                              Venn-Abers, with ``predict_interval``)
``stacked``                   :class:`~bernonnx.StackedCalibrator`, the five maps above
                              stacked on their out-of-fold log-odds
``isotonic``                  :class:`~bernonnx.IsotonicCalibrator`
``histogram``                 :class:`~bernonnx.HistogramCalibrator`,
                              :class:`~bernonnx.PlattHistogramCalibrator`
``_input``                    the probability-or-log-odds input of ``beta`` and
                              ``quadratic``
============================  =============================================================

All ``K`` class scores of a multiclass problem at once (``multiclass=True`` in the
registry):

============================  =============================================================
``temperature``               :class:`~bernonnx.TemperatureCalibrator`, vector, matrix,
                              SVS and SMS scaling
``temperature_bernstein``     :class:`~bernonnx.TemperatureBernsteinCalibrator` (the
                              multiclass default)
``_class_scores``             what both read on the way in: the checks of the class
                              scores, their logits, and ``weighted_rows`` (the one
                              place ``sample_weight`` is checked and weight-0 rows dropped)
============================  =============================================================

Several scores of one binary problem fused (``multi=True``):
``multivariate``, :class:`~bernonnx.MultivariateBernsteinCalibrator`, the tensor-product
Bernstein calibrator behind :class:`~bernonnx.FusionClassifier`.
"""

import sys

from .bernstein import BernsteinCalibrator
from .beta import BetaCalibrator
from .histogram import HistogramCalibrator, PlattHistogramCalibrator
from .isotonic import IsotonicCalibrator
from .multivariate import MultivariateBernsteinCalibrator
from .platt import PlattCalibrator
from .quadratic import QuadraticScalingCalibrator
from .stacked import StackedCalibrator
from .temperature import (
    MatrixScalingCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from .temperature_bernstein import TemperatureBernsteinCalibrator
from .venn_abers import VennAbersCalibrator

__all__ = [
    "BernsteinCalibrator",
    "BetaCalibrator",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "MatrixScalingCalibrator",
    "MultivariateBernsteinCalibrator",
    "PlattCalibrator",
    "PlattHistogramCalibrator",
    "QuadraticScalingCalibrator",
    "StackedCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureBernsteinCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
]

#: Where these modules were before they moved here (issue 46), by their names here: a
#: pickled estimator names its class by module, so a pickle made then says
#: ``bernonnx.bernstein`` or ``bernonnx.binary.beta``. Those names stay registered as
#: aliases of the modules here (no module file), for old pickles only; new code imports
#: from ``bernonnx``.
_FORMER_PATHS = {
    "bernonnx.bernstein": "bernstein",
    "bernonnx.platt": "platt",
    "bernonnx.isotonic": "isotonic",
    "bernonnx.histogram": "histogram",
    "bernonnx.multivariate": "multivariate",
    "bernonnx.temperature": "temperature",
    "bernonnx.temperature_bernstein": "temperature_bernstein",
    "bernonnx.binary": "",
    "bernonnx.binary.beta": "beta",
    "bernonnx.binary.quadratic": "quadratic",
    "bernonnx.binary.venn_abers": "venn_abers",
}
for _old, _leaf in _FORMER_PATHS.items():
    sys.modules.setdefault(_old, sys.modules[f"{__name__}.{_leaf}" if _leaf else __name__])
del _old, _leaf
