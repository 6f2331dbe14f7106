"""Base-model converters that compute what scikit-learn computes, rounding where numpy rounds.

skl2onnx's own converters are written for speed in float32: scalers become one
``Scaler`` op (``(x - offset) * (1 / scale)`` with float32 attributes), tree
thresholds are rounded to the *nearest* float32, and linear models, naive
Bayes and MLPs compute in float32 even where scikit-learn computes in float64.
On real data the last bit moves values across tree thresholds and saturated
probabilities across many ulps (up to 0.1 of probability, measured). Inside
:func:`bernonnx.export.to_onnx` the converters below replace skl2onnx's for
the estimators they name; skl2onnx's global registry is not changed.

The converters live by kind: ``exact_preprocessing`` (scalers, the imputer, the
ColumnTransformer's and Pipeline's parsers), ``exact_onehot`` (OneHotEncoder, by value
comparisons), ``exact_models`` (linear, naive Bayes, MLP, SVC)
and ``exact_trees`` (tree ensembles); this module says which final classifiers
they cover and dispatches to them.

Final classifiers (behind ``BernonnxRawScores``, see ``converters/base_scores.py``),
each emitting float64 scores::

    linear (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron)
            Cast -> Gemm(coef.T, intercept)   [expit / softmax for proba]
    GaussianNB   joint log-likelihood: Sub(theta) -> Mul -> Div(var) -> ReduceSum,
                 then scikit-learn's logsumexp for probabilities
    MLPClassifier  MatMul/Add per layer, Relu/Tanh/expit, expit or softmax
    trees (DecisionTree, RandomForest, ExtraTrees, GradientBoosting,
           HistGradientBoosting)
            TreeEnsembleRegressor whose target t is the leaf id reached in tree t
            (exact in float32 below 2^24 nodes) -> Cast -> Add(offsets)
            -> Gather(float64 leaf values) -> ReduceSum -> [Div(n_trees) | Add(init)]
    XGBoost, LightGBM (``exact_boosters``)  raw margins: the same leaf ids, then
            the trees added one by one in the library's float type
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import issparse
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import (
    LogisticRegression,
    Perceptron,
    RidgeClassifier,
    SGDClassifier,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter
from bernonnx.converters.exact_boosters import booster_kind, booster_margins, booster_supported
from bernonnx.converters.exact_models import (
    SVC_KERNELS,
    binary_pair,
    cast_to,
    expit,
    gaussian_nb_jll,
    linear_scores,
    logsumexp,
    mlp_logits,
    numpy_unary,
    one_vs_rest_log_odds,
    signed_pair,
    softmax,
    svc_decision,
)
from bernonnx.converters.exact_preprocessing import EXACT_PARSERS, EXACT_SHAPES, EXACT_TRANSFORMERS
from bernonnx.converters.exact_trees import tree_ensemble

__all__ = [
    "EXACT_PARSERS",
    "EXACT_SHAPES",
    "EXACT_TRANSFORMERS",
    "exact_scores",
    "exact_supported",
]

LINEAR = (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron)
FORESTS = (RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier)


def exact_supported(model, method: str) -> bool:
    """True when this module emits ``method``'s scores of ``model`` exactly.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> exact_supported(LogisticRegression(), "predict_proba")
    True
    >>> exact_supported(RandomForestClassifier(), "predict_proba")
    True

    A forest has no ``decision_function``; skl2onnx's neighbours are not exact:

    >>> exact_supported(RandomForestClassifier(), "decision_function")
    False
    >>> exact_supported(KNeighborsClassifier(), "predict_proba")
    False
    """
    if booster_kind(model) is not None:
        return booster_supported(model, method)
    # boosting: raw scores, or binary probabilities (expit of the raw score)
    boosting_method = method == "decision_function" or len(getattr(model, "classes_", [])) == 2
    if isinstance(model, HistGradientBoostingClassifier):
        return boosting_method and getattr(model, "_preprocessor", None) is None
    if isinstance(model, GradientBoostingClassifier):
        return boosting_method
    if isinstance(model, FORESTS):
        return method == "predict_proba" and getattr(model, "n_outputs_", 1) == 1
    if isinstance(model, LINEAR):
        return method == "decision_function" or isinstance(model, LogisticRegression)
    if isinstance(model, SVC):
        return (
            method == "decision_function"
            and model.kernel in SVC_KERNELS
            and not issparse(model.support_vectors_)
            and (model.decision_function_shape == "ovr" or len(model.classes_) == 2)
        )
    return isinstance(model, GaussianNB | MLPClassifier)


def exact_scores(g: GraphWriter, x: str, elem: int, model, method: str, options: dict) -> str:
    """``method``'s output of ``model`` as an (N, 2) or (N, K) float64 tensor.

    Binary decision functions come as ``[-z, z]``; with
    ``options["log_odds_from"] == "log_proba"`` the output is the log-odds of
    each class against the rest (``one_vs_rest_log_odds``) instead of probabilities.
    ``options["numpy_dtype"]`` is the dtype scikit-learn sees at the model's
    input (float32 or float64); it decides the precision of linear algebra.
    """
    n_classes = len(model.classes_)
    log_proba = options.get("log_odds_from") == "log_proba"
    seen = np.dtype(options.get("numpy_dtype") or (np.float64 if elem == DOUBLE else np.float32))
    seen = seen if seen == np.float32 else np.dtype(np.float64)  # ints, bools: numpy promotes
    if booster_kind(model) is not None:  # raw margins (booster_supported)
        z = booster_margins(g, x, elem, model)
        return signed_pair(g, z) if n_classes == 2 else z
    if isinstance(model, (HistGradientBoostingClassifier, GradientBoostingClassifier, *FORESTS)):
        scores = tree_ensemble(g, x, model, elem)
        if isinstance(model, FORESTS) or n_classes > 2:
            return scores
        if method == "decision_function":
            return signed_pair(g, scores)
        return binary_pair(g, expit(g, scores))  # the loss's expit
    if isinstance(model, GaussianNB):
        if log_proba:  # bernonnx._meta.gaussian_nb_jll64: float64 whatever the fit
            jll = gaussian_nb_jll(g, cast_to(g, x, DOUBLE, elem), model, DOUBLE, float64=True)
            return one_vs_rest_log_odds(g, jll, n_classes)
        work = DOUBLE if np.result_type(seen, model.theta_.dtype) == np.float64 else FLOAT
        jll = gaussian_nb_jll(g, cast_to(g, x, work, elem), model, work)
        proba = numpy_unary(g, "Exp", g.node("Sub", [jll, logsumexp(g, jll, work)]), work)
        return cast_to(g, proba, DOUBLE, work)
    if isinstance(model, MLPClassifier):
        work = DOUBLE if np.result_type(seen, model.coefs_[0].dtype) == np.float64 else FLOAT
        z = cast_to(g, mlp_logits(g, cast_to(g, x, work, elem), model, work), DOUBLE, work)
        if log_proba:
            return signed_pair(g, z) if n_classes == 2 else one_vs_rest_log_odds(g, z, n_classes)
        if model.out_activation_ == "softmax":
            return softmax(g, z)
        return binary_pair(g, expit(g, z))
    if isinstance(model, SVC):
        z = svc_decision(g, cast_to(g, x, DOUBLE, elem), model)
        return signed_pair(g, z) if n_classes == 2 else z
    # linear models
    work = DOUBLE if np.result_type(seen, np.asarray(model.coef_).dtype) == np.float64 else FLOAT
    z = cast_to(
        g,
        linear_scores(g, cast_to(g, x, work, elem), model.coef_, model.intercept_, work),
        DOUBLE,
        work,
    )
    if method == "decision_function" or (log_proba and n_classes == 2):
        return signed_pair(g, z) if n_classes == 2 else z
    if log_proba:
        return one_vs_rest_log_odds(g, z, n_classes)
    return binary_pair(g, expit(g, z)) if n_classes == 2 else softmax(g, z)
