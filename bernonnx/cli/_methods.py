"""The command line's ``--method`` names: the registry's calibrators and three extras.

The bernonnx calibrators and their names come from :data:`bernonnx._registry.CALIBRATORS`;
the command line adds a reference (the scores as probabilities) and scikit-learn's two
``CalibratedClassifierCV`` methods, which it can compare but not export.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from bernonnx._registry import CALIBRATORS

from ._base import InputError


@dataclass(frozen=True)
class _Method:
    """A calibration method the command line offers.

    ``kind`` is "1d" (a bernonnx calibrator of one score), "multi" (a calibrator of the
    score matrix), "sklearn" (scikit-learn's ``CalibratedClassifierCV``) or "reference"
    (the scores used as probabilities, no fit).
    """

    name: str
    summary: str
    kind: str
    make: Callable[[], object] | None = None
    needs_probabilities: bool = False
    #: in ``compare``'s default set and the demo; False for temperature scaling, which
    #: reads logits where the command line's scores are often probabilities, and for a
    #: variant fitted on request only (``Variant.on_request``: the stack's slow fit)
    by_default: bool = True

    @property
    def exportable(self) -> bool:
        return self.kind in ("1d", "multi")


def _registry_methods() -> tuple[_Method, ...]:
    return tuple(
        _Method(
            variant.cli_name,
            variant.summary,
            "multi" if entry.multi else "1d",
            functools.partial(entry.make, variant),
            variant.needs_probabilities,
            by_default=not entry.multiclass and not variant.on_request,
        )
        for entry in CALIBRATORS
        for variant in entry.variants
    )


_METHOD_LIST = (
    _Method(
        "uncalibrated",
        "the scores themselves as probabilities (reference; scores in [0, 1])",
        "reference",
        needs_probabilities=True,
    ),
    *_registry_methods(),
    _Method("sklearn-sigmoid", "scikit-learn CalibratedClassifierCV(method='sigmoid')", "sklearn"),
    _Method(
        "sklearn-isotonic", "scikit-learn CalibratedClassifierCV(method='isotonic')", "sklearn"
    ),
)
_METHODS = {m.name: m for m in _METHOD_LIST}
_ALIASES = {
    **{alias: v.cli_name for e in CALIBRATORS for v in e.variants for alias in v.aliases},
    "none": "uncalibrated",
    "raw": "uncalibrated",
}
#: ``export``'s and ``attach``'s ``--method`` default: the registry's first construction,
#: ``BernsteinCalibrator()``, which CalibratedClassifier fits for two classes
_DEFAULT_METHOD = CALIBRATORS[0].variants[0].cli_name
#: the bernonnx calibrators the demo fits through CalibratedClassifier
_DEMO_CALIBRATORS = tuple(m.name for m in _METHOD_LIST if m.kind == "1d" and m.by_default)


def _method(name: str) -> _Method:
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _METHODS:
        raise InputError(f"unknown method {name!r}; choose from {', '.join(_METHODS)}")
    return _METHODS[key]


def _methods_help(exportable_only: bool = False) -> str:
    """The ``--method`` list of a help text; only the exportable ones for ``export``."""
    methods = [m for m in _METHOD_LIST if m.exportable or not exportable_only]
    width = max(len(m.name) for m in methods)
    indent = " " * (width + 4)
    lines = [
        textwrap.fill(f"  {m.name:<{width}}  {m.summary}", width=99, subsequent_indent=indent)
        for m in methods
    ]
    return "methods (--method):\n" + "\n".join(lines) + "\n"


class _ScoreColumn(ClassifierMixin, BaseEstimator):
    """A classifier whose decision function is its one input column.

    Lets scikit-learn's ``CalibratedClassifierCV`` (wrapped around a
    ``FrozenEstimator`` of it) calibrate precomputed scores.
    """

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]

    def predict(self, X):
        # cross_val_predict, inside CalibratedClassifierCV, insists on a predict method
        return self.classes_[(self.decision_function(X) > 0).astype(np.int64)]


#: bootstrap resamples behind the smooth ECE's 90% interval in ``compare`` and the demo
_N_RESAMPLES = 100


def _report(
    y, proba, n_bins: int, *, n_resamples: int = _N_RESAMPLES, seed: int = 0
) -> dict[str, float]:
    """The table's metrics; the smooth ECE with its 90% bootstrap interval (which contains it)."""
    from bernonnx.metrics import calibration_report, smooth_calibration_curve

    report = calibration_report(y, proba, n_bins=n_bins)
    row = {key: float(report[key]) for key in ("ece", "mce", "smece")}
    curve = smooth_calibration_curve(
        y, proba, confidence=0.9, n_resamples=n_resamples, random_state=seed, n_points=2
    )
    row["smece_lo"], row["smece_hi"] = curve["smooth_ece_ci"]
    row.update({key: float(report[key]) for key in ("brier", "log_loss", "auc")})
    return row


def _check_probabilities(method: _Method, S: np.ndarray, what: str) -> None:
    low, high = float(S.min()), float(S.max())
    if low < 0.0 or high > 1.0:
        raise InputError(
            f"method {method.name!r} needs scores in [0, 1], but {what} ranges over "
            f"[{low:.4g}, {high:.4g}]"
        )


def _reads_unit_scores(calibrator, S: np.ndarray) -> bool:
    """Tell a temperature-family calibrator (``input="logits"`` by default) that scores all
    in [0, 1] are probabilities (``input="proba"``): read as log-odds, a temperature fits
    to infinity and predicts 1/2 everywhere. True when it was told."""
    if calibrator.get_params().get("input") == "logits" and S.min() >= 0.0 and S.max() <= 1.0:
        calibrator.set_params(input="proba")
        return True
    return False


def _fit_scores(method: _Method, S: np.ndarray, y: np.ndarray):
    """Fit ``method`` on the score matrix ``S``; returns ``predict(S) -> probabilities``."""
    if method.kind == "reference":
        return lambda X: np.clip(X.mean(axis=1), 0.0, 1.0)
    if method.kind == "sklearn":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.frozen import FrozenEstimator

        X = S.mean(axis=1, keepdims=True)
        base = FrozenEstimator(_ScoreColumn().fit(X, y))
        model = CalibratedClassifierCV(base, method=method.name.split("-")[1]).fit(X, y)
        return lambda X: model.predict_proba(X.mean(axis=1, keepdims=True))[:, 1]
    calibrator = method.make()
    _reads_unit_scores(calibrator, S)
    if method.kind == "multi":
        calibrator.fit(S, y)
        return lambda X: calibrator.predict_proba(X)[:, 1]
    calibrator.fit(S.mean(axis=1, keepdims=True), y)
    return lambda X: calibrator.predict_proba(X.mean(axis=1, keepdims=True))[:, 1]


def _fit(method: _Method, S: np.ndarray, y: np.ndarray):
    """:func:`_fit_scores`, a ``ValueError`` of the fit (too few rows for its folds or
    bins, say) reported as bad input."""
    try:
        return _fit_scores(method, S, y)
    except ValueError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"method {method.name!r} cannot be fitted on {len(y)} rows "
            f"({int(np.sum(y))} positive): {reason}"
        ) from exc
