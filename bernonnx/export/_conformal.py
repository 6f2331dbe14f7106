"""The export of a :class:`~bernonnx.ConformalClassifier`: ``to_onnx`` and ``attach``
write the wrapped model's graph (with every check they make), then :func:`finish`
appends the prediction-set stage (``bernonnx.converters.conformal``) and checks it on
the sample rows: the float64 probabilities the stage reads must be within ``tie / 10``
of Python's (else the threshold's margin cannot absorb the difference, and the export
is refused), and the graph's sets must equal ``predict_set`` on every row.
"""

from __future__ import annotations

import onnx
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from bernonnx.conformal import ConformalClassifier
from bernonnx.deploy import run_onnx

from ._inputs import _final_estimator, onnx_inputs
from ._ort_rewrites import make_safe

__all__ = ["check_sets", "finish", "is_conformal", "with_sets"]


def is_conformal(model) -> bool:
    """Whether ``model`` is a ``ConformalClassifier`` (a Pipeline ending in one is
    refused: a Pipeline has no ``predict_set``; wrap the Pipeline instead)."""
    if isinstance(_final_estimator(model), ConformalClassifier) and isinstance(model, Pipeline):
        raise ValueError(
            "model: a Pipeline ending in a ConformalClassifier has no predict_set; wrap the "
            "fitted Pipeline instead, ConformalClassifier(pipeline).fit(X_conf, y_conf)"
        )
    return isinstance(model, ConformalClassifier)


def _feed(onx, X, uniforms, dtype=None) -> dict:
    from bernonnx.converters.conformal import UNIFORMS_INPUT

    feed = onnx_inputs(onx, X, dtype)
    if any(i.name == UNIFORMS_INPUT for i in onx.graph.input):
        feed[UNIFORMS_INPUT] = uniforms
    return feed


def check_sets(model, onx: onnx.ModelProto, X, uniforms=None) -> dict:
    """Compare the graph's ``prediction_set`` with ``model.predict_set`` on every row of
    ``X``, and the float64 probabilities the sets are decided on with Python's.

    Returns
    -------
    dict
        ``rows``, ``rows_differing`` (rows whose set differs), ``max_probability_error``
        (float64, before any cast) and ``margin`` (the conformal model's ``tie``).
    """
    import numpy as np

    from bernonnx.converters.conformal import SET_OUTPUT, float64_probabilities

    final = model
    if final.randomized and uniforms is None:
        uniforms = np.random.default_rng(0).uniform(size=len(X))
    probed = onnx.ModelProto()
    probed.CopyFrom(onx)
    inner = float64_probabilities(probed.graph)
    probed.graph.output.append(
        onnx.helper.make_tensor_value_info(inner, onnx.TensorProto.DOUBLE, None)
    )
    out = run_onnx(probed, _feed(onx, X, uniforms))
    expected = model.predict_set(X, uniforms) if final.randomized else model.predict_set(X)
    got = np.asarray(out[SET_OUTPUT], dtype=bool)
    proba = np.asarray(model.predict_proba(X), dtype=np.float64)
    return {
        "rows": len(expected),
        "rows_differing": int(np.any(got != expected, axis=1).sum()),
        "max_probability_error": float(np.max(np.abs(out[inner] - proba), initial=0.0)),
        "margin": float(final.tie),
    }


def finish(model, onx, X_sample) -> onnx.ModelProto:
    """The wrapped model's graph ``onx`` with the prediction sets of the fitted
    ``ConformalClassifier`` ``model`` appended; checked on ``X_sample`` (when given)."""
    from bernonnx.converters.conformal import add_prediction_set

    final = model
    add_prediction_set(onx, final)
    make_safe(onx)
    onx.metadata_props.add(key="conformal_score", value=final.score)
    onx.metadata_props.add(key="conformal_confidence", value=repr(float(final.confidence)))
    onx.metadata_props.add(key="conformal_class_conditional", value=str(final.class_conditional))
    onx.metadata_props.add(key="conformal_randomized", value=str(final.randomized))
    onnx.checker.check_model(onx, full_check=True)
    if X_sample is None:
        return onx
    found = check_sets(model, onx, X_sample)
    if not found["max_probability_error"] <= found["margin"] / 10:
        raise NotImplementedError(
            f"the graph's float64 probabilities differ from Python's by up to "
            f"{found['max_probability_error']:.3g} on X_sample, more than a tenth of the "
            f"sets' margin tie={found['margin']:g}: a row near a threshold could get another "
            "set; export a float64 graph (dtype=np.float64, float64 data), or raise tie"
        )
    if found["rows_differing"]:
        raise NotImplementedError(
            f"the graph's prediction sets differ from predict_set on {found['rows_differing']}"
            f" of {found['rows']} rows of X_sample; please report this model"
        )
    return onx


def with_sets(to_onnx, model, X_sample, **options) -> onnx.ModelProto:
    """``to_onnx`` (passed in: this module sits below ``convert``) of the model that
    ``model``, a ``ConformalClassifier``, wraps; then :func:`finish`."""
    if options.pop("zipmap", False):
        raise ValueError(
            "zipmap=True cannot carry prediction sets: the sets read the float64 "
            "probabilities, which ZipMap replaces; keep zipmap=False"
        )
    if options.get("priors_input"):
        raise ValueError(
            "priors_input=True cannot carry prediction sets: their thresholds are weighted "
            "for the adapter's prior_, and other priors fed per request would need others; "
            "export one graph per prior, or keep priors_input=False"
        )
    check_is_fitted(model)
    return finish(model, to_onnx(model.estimator_, X_sample, **options), X_sample)
