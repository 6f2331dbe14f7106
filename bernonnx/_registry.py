"""The one list of bernonnx calibrators.

Everything that must know every calibrator reads :data:`CALIBRATORS`: the skl2onnx
registration (``bernonnx.converters``), the command line's ``--method`` names, the
plotting hooks and the common estimator checks in the tests. Adding a calibrator is one
estimator module, one converter emitter and one :class:`Entry` here.

Classes, emitters and plot hooks are named by dotted path (``"module:attribute"``) and
imported on first use, so this module imports nothing heavy and nothing circular:
``bernonnx`` never imports onnx or skl2onnx at import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module
from types import MappingProxyType
from typing import Any

__all__ = ["CALIBRATORS", "Entry", "Variant", "entry_for", "resolve"]


def resolve(path: str) -> Any:
    """The object named by ``"package.module:attribute"``."""
    module, _, attr = path.partition(":")
    return getattr(import_module(module), attr)


@dataclass(frozen=True)
class Variant:
    """One ``bernonnx compare/export --method`` name: the class with fixed parameters."""

    cli_name: str
    summary: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: the method reads its scores as probabilities in [0, 1] (log-odds input)
    needs_probabilities: bool = False
    aliases: tuple[str, ...] = ()
    #: fitted by ``compare`` and the demo only when named with ``--method`` (a slow fit)
    on_request: bool = False


@dataclass(frozen=True)
class Entry:
    """A calibrator family: its class, converter emitter, plot hooks and CLI names.

    Parameters
    ----------
    cls : str
        ``"module:Class"`` of the estimator; the class is public in ``bernonnx``.
    emitter : str
        ``"module:function"`` emitting the calibrator's ONNX nodes (see
        ``bernonnx.converters``).
    variants : tuple of Variant
        Its ``--method`` names, the first being the default construction.
    multi : bool
        True if it reads several score columns at once (fusion); False for one score.
    multiclass : bool
        True if it calibrates all K class scores of a multiclass problem jointly
        (K columns in, K probabilities out): ``CalibratedClassifier`` then fits one
        on all columns instead of one per class (one-vs-rest).
    plot : str or None
        ``"module:object"`` of its plotting hooks (``bernonnx.plotting``), or None if
        it has no calibration-function picture.
    stats : str or None
        ``"module:Class"`` of its mergeable streaming statistics (``bernonnx.stats``:
        ``partial_fit``, ``stats_for``, ``CalibrationStats.from_bytes``), or None if
        it has none. A statistics blob names its calibrator; only the entries with
        statistics are looked up, and nothing else is ever called.
    interval : str or None
        ``"module:function"`` emitting an extra (N, 2) float64 graph output
        ``interval`` of the calibrator alone (``emit(g, scores, cal) -> str``), the
        Python side being its ``predict_interval``; None for none.
    """

    cls: str
    emitter: str
    variants: tuple[Variant, ...]
    multi: bool = False
    plot: str | None = None
    multiclass: bool = False
    stats: str | None = None
    interval: str | None = None

    @property
    def name(self) -> str:
        """The class name, as exported from ``bernonnx``."""
        return self.cls.partition(":")[2]

    @property
    def onnx_alias(self) -> str:
        """The skl2onnx operator alias of the estimator."""
        return f"Bernonnx{self.name}"

    def load(self) -> type:
        """The estimator class."""
        return resolve(self.cls)

    def make(self, variant: Variant | None = None, **params) -> Any:
        """A new, unfitted estimator of ``variant`` (default the first), with ``params``."""
        variant = self.variants[0] if variant is None else variant
        return self.load()(**{**variant.params, **params})


def _p(**params) -> Mapping[str, Any]:
    return MappingProxyType(params)


CALIBRATORS: tuple[Entry, ...] = (
    Entry(
        "bernonnx.calibrators.bernstein:BernsteinCalibrator",
        "bernonnx.converters.bernstein:emit_bernstein",
        (
            Variant(
                "bernstein",
                "BernsteinCalibrator(): Bernstein polynomial, log loss, degree by 5-fold CV",
                aliases=("bernstein-log",),
            ),
            Variant(
                "bernstein-squared",
                "BernsteinCalibrator(loss='squared'): Bernstein polynomial, least squares",
                _p(loss="squared"),
            ),
        ),
        plot="bernonnx.plotting._hooks:BERNSTEIN",
        stats="bernonnx.stats:BernsteinStats",
    ),
    Entry(
        "bernonnx.calibrators.platt:PlattCalibrator",
        "bernonnx.converters.platt:emit_platt",
        (
            Variant("platt", "PlattCalibrator(): Platt scaling"),
            Variant(
                "platt-logodds",
                "PlattCalibrator(log_odds=True): Platt on log-odds (scores must be in [0, 1]); "
                "CalArena's affine scaling",
                _p(log_odds=True),
                needs_probabilities=True,
                aliases=("platt-log-odds", "affine-scaling"),
            ),
        ),
        plot="bernonnx.plotting._hooks:PLATT",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.beta:BetaCalibrator",
        "bernonnx.converters.beta:emit_beta",
        (
            Variant(
                "beta",
                "BetaCalibrator(): Beta calibration (Kull et al. 2017), a, b >= 0; scores in "
                "[0, 1] as probabilities, others as log-odds",
                aliases=("beta-calibration",),
            ),
        ),
        plot="bernonnx.plotting._hooks:BETA",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.quadratic:QuadraticScalingCalibrator",
        "bernonnx.converters.quadratic:emit_quadratic",
        (
            Variant(
                "quadratic-scaling",
                "QuadraticScalingCalibrator(): quadratic scaling of the logit, increasing on "
                "the fitted range, linear beyond",
                aliases=("quadratic",),
            ),
        ),
        plot="bernonnx.plotting._hooks:QUADRATIC",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.venn_abers:VennAbersCalibrator",
        "bernonnx.converters.venn_abers:emit_venn_abers",
        (
            Variant(
                "venn-abers",
                "VennAbersCalibrator(): inductive Venn-Abers (IVAP), the merged probability "
                "of the interval (p0, p1)",
                aliases=("ivap",),
            ),
        ),
        plot="bernonnx.plotting._hooks:VENN_ABERS",
        stats="bernonnx.stats:ScoreStats",
        interval="bernonnx.converters.venn_abers:emit_venn_abers_interval",
    ),
    Entry(
        "bernonnx.calibrators.stacked:StackedCalibrator",
        "bernonnx.converters.stacked:emit_stacked",
        (
            Variant(
                "stack",
                "StackedCalibrator(): affine, Beta and quadratic scaling of the log-odds, "
                "Bernstein and Venn-Abers, stacked on their 5-fold out-of-fold log-odds "
                "(fitted on request: 12 to 89 times the default's fit)",
                aliases=("stacked",),
                on_request=True,
            ),
        ),
    ),
    Entry(
        "bernonnx.calibrators.isotonic:IsotonicCalibrator",
        "bernonnx.converters.isotonic:emit_isotonic",
        (Variant("isotonic", "IsotonicCalibrator(): isotonic regression"),),
        plot="bernonnx.plotting._hooks:ISOTONIC",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.histogram:HistogramCalibrator",
        "bernonnx.converters.histogram:emit_histogram",
        (Variant("histogram", "HistogramCalibrator(): histogram binning, 15 bins"),),
        plot="bernonnx.plotting._hooks:HISTOGRAM",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.histogram:PlattHistogramCalibrator",
        "bernonnx.converters.histogram:emit_platt_histogram",
        (
            Variant(
                "platt-histogram",
                "PlattHistogramCalibrator(): scaling-binning (Kumar et al. 2019)",
                aliases=("scaling-binning",),
            ),
        ),
        plot="bernonnx.plotting._hooks:PLATT_HISTOGRAM",
        stats="bernonnx.stats:ScoreStats",
    ),
    Entry(
        "bernonnx.calibrators.multivariate:MultivariateBernsteinCalibrator",
        "bernonnx.converters.multivariate:emit_multivariate",
        (
            Variant(
                "multivariate",
                "MultivariateBernsteinCalibrator(): tensor Bernstein fusion of all score "
                "columns, least squares on quantile-transformed scores",
            ),
            Variant(
                "multivariate-log",
                "MultivariateBernsteinCalibrator(loss='log', score_transform='logistic')",
                _p(loss="log", score_transform="logistic"),
            ),
        ),
        multi=True,
        plot="bernonnx.plotting._hooks:MULTIVARIATE_BERNSTEIN",
    ),
    Entry(
        "bernonnx.calibrators.temperature:TemperatureCalibrator",
        "bernonnx.converters.temperature:emit_temperature",
        (
            Variant(
                "temperature",
                "TemperatureCalibrator(): temperature scaling of logits (Guo et al. 2017)",
            ),
        ),
        multiclass=True,
    ),
    Entry(
        "bernonnx.calibrators.temperature:VectorScalingCalibrator",
        "bernonnx.converters.temperature:emit_affine_scaling",
        (
            Variant(
                "vector-scaling",
                "VectorScalingCalibrator(): softmax(v * z + b) on logits, maximum "
                "likelihood (Guo et al. 2017)",
            ),
        ),
        multiclass=True,
    ),
    Entry(
        "bernonnx.calibrators.temperature:MatrixScalingCalibrator",
        "bernonnx.converters.temperature:emit_affine_scaling",
        (
            Variant(
                "matrix-scaling",
                "MatrixScalingCalibrator(): softmax(W z + b) on logits, maximum likelihood "
                "(Guo et al. 2017)",
            ),
        ),
        multiclass=True,
    ),
    Entry(
        "bernonnx.calibrators.temperature:StructuredVectorScalingCalibrator",
        "bernonnx.converters.temperature:emit_affine_scaling",
        (
            Variant(
                "svs",
                "StructuredVectorScalingCalibrator(): temperature, then ridge-regularised "
                "vector scaling (SVS, Berta et al. 2026)",
                aliases=("structured-vector-scaling",),
            ),
        ),
        multiclass=True,
    ),
    Entry(
        "bernonnx.calibrators.temperature:StructuredMatrixScalingCalibrator",
        "bernonnx.converters.temperature:emit_affine_scaling",
        (
            Variant(
                "sms",
                "StructuredMatrixScalingCalibrator(): temperature, then ridge-regularised "
                "matrix scaling (SMS, Berta et al. 2026)",
                aliases=("structured-matrix-scaling",),
            ),
        ),
        multiclass=True,
    ),
    Entry(
        "bernonnx.calibrators.temperature_bernstein:TemperatureBernsteinCalibrator",
        "bernonnx.converters.temperature_bernstein:emit_temperature_bernstein",
        (
            Variant(
                "sms-bernstein",
                "TemperatureBernsteinCalibrator(scaling='sms'): the multiclass default; "
                "SMS, then the identity, a temperature or per-class Bernstein maps, by "
                "5-fold log loss",
                _p(scaling="sms"),
            ),
            Variant(
                "temperature-bernstein",
                "TemperatureBernsteinCalibrator(): the identity, temperature scaling, or "
                "temperature then a per-class Bernstein correction, by 5-fold log loss",
            ),
        ),
        multiclass=True,
    ),
)


def entry_for(estimator_or_class: Any) -> Entry:
    """The registry entry of a calibrator instance or class.

    Raises
    ------
    TypeError
        If it is not a registered bernonnx calibrator.
    """
    cls = estimator_or_class if isinstance(estimator_or_class, type) else type(estimator_or_class)
    for entry in CALIBRATORS:
        if cls is entry.load():
            return entry
    raise TypeError(
        f"{cls.__name__} is not a registered bernonnx calibrator; registered: "
        f"{', '.join(e.name for e in CALIBRATORS)}"
    )
