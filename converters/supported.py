"""What :func:`bernonnx.export.to_onnx` exports exactly, and why the rest is refused.

The one list of base models and preprocessing steps that bernonnx has shown exact on
real data in float32 and float64 graphs (the documentation's results, "Parity on real
data, every row"):

- preprocessing: ``StandardScaler``, ``RobustScaler``, ``MinMaxScaler``,
  ``MaxAbsScaler``, ``SimpleImputer`` (NaN replaced by numeric statistics),
  ``OneHotEncoder`` (0/1 outputs; infrequent categories too),
  ``ColumnTransformer``, ``Pipeline``, ``FrozenEstimator``;
- classifiers: those :mod:`bernonnx.converters.exact` computes as scikit-learn does
  (:func:`~bernonnx.converters.exact.exact_supported`) for the response method the
  calibrators were fitted on, XGBoost and LightGBM raw margins;
- every bernonnx calibrator.

Anything else makes ``to_onnx`` raise ``NotImplementedError`` naming the estimator and
what to do instead, unless the caller opts in with ``allow_inexact=True``: skl2onnx's
own converter is then used, and ``to_onnx`` measures the gap on ``X_sample`` and warns.
"""

from __future__ import annotations

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    RobustScaler,
    StandardScaler,
)

from bernonnx._meta import final_and_inputs
from bernonnx.converters.exact import exact_supported
from bernonnx.converters.exact_preprocessing import imputer_is_simple
from bernonnx.converters.shift import inner_model
from bernonnx.shift import PriorShiftAdapter

__all__ = [
    "INEXACT_REASONS",
    "float32_fit_problems",
    "float64_only_steps",
    "step_maps_behind_models",
    "unsupported_steps",
]

_EXACT_SCALERS = (StandardScaler, RobustScaler, MinMaxScaler, MaxAbsScaler)

#: Why skl2onnx's converter of these estimators is not exact, as measured.
INEXACT_REASONS = {
    "OneVsRestClassifier": "skl2onnx's converter outputs probabilities where scikit-learn's "
    "decision_function is what the calibrators saw (0.53 off)",
    "CalibratedClassifierCV": "skl2onnx's converter outputs probabilities where scikit-learn's "
    "decision_function is what the calibrators saw (0.56 off), and its isotonic step picks "
    "the nearest threshold instead of interpolating",
    "BaggingClassifier": "skl2onnx's converter outputs probabilities where scikit-learn's "
    "decision_function is what the calibrators saw (0.55 off), and its float64 graph is "
    "1e-7 off",
    "StackingClassifier": "skl2onnx's float64 graph is 4.3e-8 off scikit-learn",
    "VotingClassifier": "skl2onnx's converter averages float32 probabilities of its members",
    "KNeighborsClassifier": "skl2onnx's converter computes distances in another order, "
    "so ties between neighbours can break the other way",
    "AdaBoostClassifier": "skl2onnx's float64 graph fails onnx's full check",
    "PolynomialFeatures": "skl2onnx's float32 graph is 3e-6 off and its float64 graph fails "
    "onnx's full check",
    "KBinsDiscretizer": "skl2onnx's float64 graph fails onnx's full check, and a bin edge "
    "rounded to float32 moves values across it",
    "PowerTransformer": "skl2onnx computes the power and log in float32 and another order",
    "QuantileTransformer": "skl2onnx's converter interpolates in float32",
    "SplineTransformer": "skl2onnx has no converter for it",
    "FunctionTransformer": "its function is Python code, which no graph can hold",
}

_ADVICE = (
    "Export a model made of the steps listed in bernonnx.converters.supported, or pass "
    "allow_inexact=True to use skl2onnx's converter anyway (to_onnx then measures the gap "
    "on X_sample and warns)"
)


def _transformer_problems(step, where: str) -> list[str]:
    if step is None or (isinstance(step, str) and step in ("drop", "passthrough")):
        return []
    if isinstance(step, FrozenEstimator):
        return _transformer_problems(step.estimator, where)
    if isinstance(step, Pipeline):
        return [p for name, s in step.steps for p in _transformer_problems(s, f"{where}/{name}")]
    if isinstance(step, ColumnTransformer):
        return [
            p
            for name, s, _ in step.transformers_
            for p in _transformer_problems(s, f"{where}/{name}")
        ]
    if isinstance(step, _EXACT_SCALERS):
        return []
    if isinstance(step, FunctionTransformer) and step.func is None:
        return []  # "passthrough" in a fitted ColumnTransformer: the identity
    if isinstance(step, SimpleImputer) and imputer_is_simple(step):
        return []
    if isinstance(step, OneHotEncoder):
        return []  # 0/1 outputs: exact when the categories match (tested with infrequent ones)
    name = type(step).__name__
    if isinstance(step, SimpleImputer):
        reason = "only NaN replaced by numeric statistics, without indicator, is exact"
    else:
        reason = INEXACT_REASONS.get(name, "no converter of bernonnx computes it exactly")
    return [f"{where} ({name}): {reason}"]


def _base_problems(base, method: str, where: str) -> list[str]:
    """A fitted base model (Pipeline or bare classifier) giving ``method``'s scores."""
    if isinstance(base, FrozenEstimator):
        return _base_problems(base.estimator, method, where)
    problems = []
    if isinstance(base, Pipeline):
        for name, step in base.steps[:-1]:
            problems += _transformer_problems(step, f"{where}/{name}")
        where = f"{where}/{base.steps[-1][0]}"
        base = base.steps[-1][1]
    if not exact_supported(base, method):
        name = type(base).__name__
        reason = INEXACT_REASONS.get(
            name, f"no converter of bernonnx computes its {method} exactly"
        )
        categorical = getattr(base, "is_categorical_", None)
        if categorical is not None and np.any(categorical):
            reason = (
                "its categorical splits are not exported; one-hot encode those columns in "
                "a ColumnTransformer instead"
            )
        elif name not in INEXACT_REASONS and method == "decision_function":
            reason += " (try response_method='predict_proba')"
        problems.append(f"{where} ({name}): {reason}")
    return problems


def _bases(model) -> list[tuple]:
    """``(base model, response method, log-odds source, where)`` of every base model
    of what ``to_onnx`` was given (a Pipeline ending in it is read through)."""
    if isinstance(model, Pipeline):
        model = model.steps[-1][1]
    if isinstance(model, PriorShiftAdapter):
        model = inner_model(model)  # NotImplementedError for a model it cannot hold
    pairs = getattr(model, "calibrated_classifiers_", None)
    if pairs is not None:
        return [
            (
                pair.estimator,
                pair.response_method,
                getattr(pair, "log_odds_from", None),
                "base model",
            )
            for pair in pairs
        ]
    bases = getattr(model, "estimators_", None)
    methods = getattr(model, "response_methods_", None)
    if bases is None or methods is None:
        return []
    return [
        (base, method, None, f"estimator {i}")
        for i, (base, method) in enumerate(zip(bases, methods, strict=True))
    ]


def unsupported_steps(model) -> list[str]:
    """One line per step of ``model`` that the export cannot show exact (empty: all are).

    ``model`` is what ``to_onnx`` was given: a ``CalibratedClassifier``, a
    ``FusionClassifier``, a calibrator, or a Pipeline ending in one of them.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from bernonnx import CalibratedClassifier
    >>> X, y = make_classification(200, random_state=0)
    >>> unsupported_steps(CalibratedClassifier(LogisticRegression()).fit(X, y))
    []
    >>> [problem] = unsupported_steps(CalibratedClassifier(KNeighborsClassifier()).fit(X, y))
    >>> import textwrap
    >>> print(textwrap.fill(problem, 80))
    base model (KNeighborsClassifier): skl2onnx's converter computes distances in
    another order, so ties between neighbours can break the other way
    """
    problems = []
    if isinstance(model, Pipeline):
        for name, step in model.steps[:-1]:
            problems += _transformer_problems(step, name)
    for base, method, _, where in _bases(model):
        problems += _base_problems(base, method, where)
    return list(dict.fromkeys(problems))


def step_maps_behind_models(model) -> list[str]:
    """The class names of the calibrators behind a base model that jump at every
    calibration score (``VennAbersCalibrator``): the graph must give them the base
    scores Python gives, to the tie band (1e-12 relative), or a calibration row lands on
    another step."""
    from bernonnx.calibrators.venn_abers import VennAbersCalibrator

    if isinstance(model, Pipeline):
        model = model.steps[-1][1]
    if isinstance(model, PriorShiftAdapter):
        model = getattr(model, "estimator_", model)
    names = [
        type(cal).__name__
        for pair in getattr(model, "calibrated_classifiers_", [])
        for cal in pair.calibrators
        if isinstance(cal, VennAbersCalibrator)
    ]
    return list(dict.fromkeys(names))


def _computes_in_float32(model) -> list[str]:
    """The base models that compute their scores in float32 in Python (fitted on float32
    data: float32 BLAS sums), which no graph repeats to the last bit."""
    names = []
    for base, _, _, _ in _bases(model):
        final, _ = final_and_inputs(base, None)
        coef = getattr(final, "coef_", None)
        layers = getattr(final, "coefs_", None)
        if (coef is not None and np.asarray(coef).dtype == np.float32) or (
            layers is not None and np.asarray(layers[0]).dtype == np.float32
        ):
            names.append(type(final).__name__)
    return list(dict.fromkeys(names))


def float64_only_steps(model, float32_data: bool, dtype) -> bool:
    """Whether float32 data need a float64 graph: a Venn-Abers calibrator behind a base
    model that computes in float32 (:func:`step_maps_behind_models`), whose float32
    graph sums in another order, a few float32 units off Python's scores, wider than the
    tie band; a ``ValueError`` naming ``dtype`` for ``dtype=np.float32`` there. (A model
    fitted on float64 data computes in float64 inside a float32 graph: kept.)"""
    names = step_maps_behind_models(model)
    if not (names and float32_data):
        return False
    models = _computes_in_float32(model)
    if models and dtype is not None and np.dtype(dtype) == np.float32:
        raise ValueError(
            f"dtype=np.float32 cannot show {names[0]} exact behind {models[0]}, fitted on "
            "float32 data: it jumps at every calibration score, and the graph sums the "
            "model's float32 scores in another order, a few float32 units off Python's, so "
            "a score equal to a calibration score in Python lands on another step in the "
            "graph; fit the model on float64 data"
        )
    return bool(models)


def float32_fit_problems(model, float64_graph: bool) -> list[str]:
    """Steps a graph cannot reproduce on float32 data: models fitted on float32 data
    compute in float32 with BLAS (linear models, MLPs: a float32 graph is within its
    1e-6 of them, a float64 graph is not within 1e-9) or with numpy's float32 ``exp``,
    not correctly rounded (GaussianNB's probabilities: 2.4e-6 off in a float32 graph on
    real data); their summation orders and roundings no graph can repeat, and Python's
    own results change with the batch size."""
    problems = []
    for base, _, log_odds_from, _ in _bases(model):
        final, _ = final_and_inputs(base, None)
        name = type(final).__name__
        if isinstance(final, GaussianNB):
            if np.asarray(final.theta_).dtype == np.float32 and log_odds_from is None:
                problems.append(
                    f"{name} was fitted on float32 data and computes its probabilities with "
                    "numpy's float32 exp, which no graph repeats: calibrate its log-odds "
                    "(log_odds=True, exact), or fit on float64 data"
                )
            continue
        if hasattr(final, "coefs_") and np.asarray(final.coefs_[0]).dtype == np.float32:
            problems.append(
                f"{name} was fitted on float32 data and computes its layers with float32 "
                "BLAS products, whose rounding changes with the batch size (Python's own "
                "probabilities moved by 5.5e-7 between batch and row-by-row calls on MAGIC): "
                "no graph repeats them within 1e-6; fit it on float64 data"
            )
            continue
        coef = getattr(final, "coef_", None)
        if float64_graph and coef is not None and np.asarray(coef).dtype == np.float32:
            instead = (
                "a float32 graph cannot hold a Venn-Abers calibrator's ties"
                if step_maps_behind_models(model)
                else "export dtype=np.float32 (within 1e-6)"
            )
            problems.append(
                f"{name} was fitted on float32 data and computes in float32 (BLAS sums), "
                f"which a float64 graph cannot repeat: {instead}, or fit on float64 data"
            )
    return list(dict.fromkeys(problems))


def refusal(problems: list[str]) -> str:
    """The message of ``to_onnx``'s ``NotImplementedError`` for ``problems``."""
    return "to_onnx cannot show this model's graph exact: " + "; ".join(problems) + ". " + _ADVICE
