"""scikit-learn's estimator checks for every public estimator.

The calibrators come from the registry (``bernonnx._registry.CALIBRATORS``): every
``--method`` variant of every entry, with small fixed degrees where the default would
pick one by cross-validation (:data:`CHECK_PARAMS`), plus the extra parameterisations
in :data:`EXTRA` (solvers, options a variant does not reach). Then the two
meta-estimators, :class:`~bernonnx.CalibratedClassifier` and
:class:`~bernonnx.FusionClassifier`.

Some checks cannot apply to an estimator; each expected failure is listed below with
the reason, and the property it would have checked is covered by our own tests where it
makes sense (named in brackets).
"""

import inspect

import numpy as np
import pandas as pd
import pytest
import sklearn.base
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks

import bernonnx
from benchmarks._realdata import DataMissing, calibration_scores
from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    FusionClassifier,
    HistogramCalibrator,
    MultivariateBernsteinCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)
from bernonnx._registry import CALIBRATORS, entry_for

#: check-time parameters of registry variants, by ``--method`` name: a fixed small degree
#: instead of the default degree chosen by 5-fold cross-validation keeps the checks fast
CHECK_PARAMS = {
    "bernstein": {"degree": 5},
    "bernstein-squared": {"score_transform": "quantile"},
    "multivariate": {"degree": 2},
    "multivariate-log": {"degree": 2},
    "temperature-bernstein": {"degree": 3},
    "sms-bernstein": {"degree": 3},
}

#: parameterisations the variants do not reach
EXTRA = [
    BernsteinCalibrator(degree=[2, 7], score_transform="minmax", solver="cvxpy"),
    PlattCalibrator(increasing=False),
    HistogramCalibrator(strategy="quantile"),
]


def registry_estimators():
    """Every registry variant but those reading probabilities (``needs_probabilities``):
    the checks feed scores outside [0, 1], which such a calibrator refuses with a
    ValueError naming them [test_calibrator_alone in test_parity.py, test_baselines.py]."""
    return [
        entry.make(variant, **CHECK_PARAMS.get(variant.cli_name, {}))
        for entry in CALIBRATORS
        for variant in entry.variants
        if not variant.needs_probabilities
    ]


def small_fusion(**kw):
    return FusionClassifier(
        [("lr", LogisticRegression()), ("nb", GaussianNB())],
        calibrator=MultivariateBernsteinCalibrator(degree=2, loss="log"),
        **kw,
    )


META_ESTIMATORS = [
    CalibratedClassifier(LogisticRegression(), BernsteinCalibrator(degree=4), cv=3),
    CalibratedClassifier(
        LogisticRegression(), BernsteinCalibrator(degree=4), cv=3, ensemble=False
    ),
    CalibratedClassifier(LogisticRegression(), TemperatureCalibrator(), cv=3, ensemble=False),
    # the default calibrator: TemperatureBernsteinCalibrator on the checks' multiclass data
    CalibratedClassifier(LogisticRegression(), cv=3, ensemble=False),
    small_fusion(cv=3),
]

ESTIMATORS = registry_estimators() + EXTRA + META_ESTIMATORS

# ----------------------------------------------------------------------------- one score

_INDEXES_2D = (
    "the check reduces X to the 1-D scores this estimator takes (one_d_array tag), "
    "then indexes X[:, j] or X.shape[1] itself"
)
_FEEDS_COLUMNS = (
    "the check feeds a multi-column X, which a one-score calibrator rejects with a "
    "ValueError naming the shape"
)
#: a calibrator of ONE score column (tag ``one_d_array``)
ONE_SCORE_XFAIL = {
    "check_dont_overwrite_parameters": _INDEXES_2D,
    "check_n_features_in_after_fitting": _INDEXES_2D,
    "check_dtype_object": _INDEXES_2D,
    "check_f_contiguous_array_estimator": _INDEXES_2D,
    "check_methods_sample_order_invariance": _INDEXES_2D,
    "check_methods_subset_invariance": _INDEXES_2D,
    "check_fit2d_1sample": _INDEXES_2D,
    "check_fit2d_1feature": _INDEXES_2D,
    "check_dict_unchanged": _INDEXES_2D,
    "check_n_features_in": _INDEXES_2D,
    "check_fit2d_predict1d": _INDEXES_2D,
    "check_estimators_partial_fit_n_features": _INDEXES_2D + " [test_partial_fit_errors]",
    "check_estimator_sparse_array": "scipy cannot build the 1-D sparse array the check asks for",
    "check_sample_weights_shape": _FEEDS_COLUMNS,
    "check_sample_weights_not_overwritten": _FEEDS_COLUMNS,
    "check_sample_weight_equivalence_on_dense_data": _FEEDS_COLUMNS
    + " [test_weights_equal_repetition]",
    "check_estimators_nan_inf": "fits on 1 column, then predicts on 3; "
    + _FEEDS_COLUMNS
    + " [test_bad_input_is_named, test_unfitted_and_wrong_predict_input]",
    "check_fit1d": "1-D scores are the documented input of a calibrator",
    "check_fit_score_takes_y": (
        "calls partial_fit on an estimator fitted by fit; fit keeps no statistics of its "
        "rows (a fitted calibrator would carry its calibration data), so partial_fit "
        "there is refused with a ValueError rather than dropping them "
        "[test_issue_22_partial_fit_after_fit_is_refused]"
    ),
    "check_classifiers_train": (
        "asserts accuracy > 0.83 from the first blob feature alone; logistic regression "
        "on that column reaches 0.685, the calibrators 0.685 to 0.71"
    ),
}

# ----------------------------------------------------------------------------- several scores

_BLOBS = (
    "asserts accuracy > 0.83 on make_blobs, whose class 1 lies towards lower values of the "
    "second feature (logistic regression coefficient -3.8): a map increasing in every "
    "score reaches 0.70 there, and 0.96 with that feature negated"
)
_MANY_COLUMNS = (
    "fits on {} columns: a tensor product of degree >= {} has more than the 2048 supported "
    "coefficients, and fit says so with a ValueError"
)
#: a calibrator of several score columns (registry ``multi=True``)
MULTI_SCORE_XFAIL = {
    "check_classifiers_train": _BLOBS,
    "check_sample_weight_equivalence_on_dense_data": _MANY_COLUMNS.format(30, 1)
    + " [test_weights_equal_repetition]",
    "check_dtype_object": _MANY_COLUMNS.format(10, 2),
}

_COLUMN_PER_CLASS = (
    "the check feeds an X whose number of columns differs from the number of classes "
    "of y; a multiclass calibrator reads one score column per class and rejects it "
    "with a ValueError naming both"
)
#: a calibrator of all K class scores at once (registry ``multiclass=True``): X must
#: hold one score column per class of y (or one column for two classes); its
#: properties are covered in tests/test_temperature.py
MULTICLASS_XFAIL = {
    name: _COLUMN_PER_CLASS
    for name in (
        "check_classifiers_classes",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_fit_returns_self",
        "check_estimators_nan_inf",
        "check_estimators_overwrite_params",
        "check_estimators_pickle",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input",
        "check_sample_weight_equivalence_on_dense_data",
    )
} | {
    "check_classifiers_train": _COLUMN_PER_CLASS
    + "; on two-class data it fits the 1-feature blobs and asserts accuracy > 0.83",
}

# ----------------------------------------------------------------------------- meta-estimators

FUSION_XFAIL = {
    "check_sample_weight_equivalence_on_dense_data": (
        "the base models are fitted on cross-validation folds, and repeated rows fall "
        "into other folds than weighted ones (scikit-learn expects the same failure of "
        "CalibratedClassifierCV); with frozen base models weights equal repetition: "
        "test_weights_equal_repetition"
    )
}


def expected_failures(estimator):
    if isinstance(estimator, FusionClassifier):
        return FUSION_XFAIL
    if isinstance(estimator, CalibratedClassifier):
        return {}
    entry = entry_for(estimator)
    if entry.multiclass:
        return MULTICLASS_XFAIL
    if entry.multi:
        return MULTI_SCORE_XFAIL
    if not hasattr(estimator, "partial_fit"):  # StackedCalibrator: the checks pass
        return {k: v for k, v in ONE_SCORE_XFAIL.items() if k not in _PARTIAL_FIT_CHECKS}
    return ONE_SCORE_XFAIL


#: the one-score failures above that come from partial_fit
_PARTIAL_FIT_CHECKS = ("check_fit_score_takes_y", "check_estimators_partial_fit_n_features")


def _slow_checks(estimator) -> bool:
    """The estimators whose checks took 85% of this module's time (measured with
    ``--durations``): the default multiclass calibrator's 5-fold search inside 3 folds,
    the fusion's folds, the cvxpy solver, the tensor product's log loss."""
    if isinstance(estimator, FusionClassifier):
        return True
    if isinstance(estimator, CalibratedClassifier):
        return estimator.calibrator is None
    if isinstance(estimator, MultivariateBernsteinCalibrator):
        return estimator.loss == "log"
    return getattr(estimator, "solver", None) == "cvxpy"


@parametrize_with_checks(
    [e for e in ESTIMATORS if not _slow_checks(e)], expected_failed_checks=expected_failures
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(
    [e for e in ESTIMATORS if _slow_checks(e)], expected_failed_checks=expected_failures
)
def test_sklearn_compatible_slow_estimators(estimator, check):
    check(estimator)


#: Public estimators that adapt a FITTED model and never fit one, so that the checks,
#: which fit clones on data of their own making, cannot apply: each is listed with why,
#: and the conventions that do apply are tested in the named test.
PREFIT_ONLY = {
    bernonnx.PriorShiftAdapter: (
        "moves a fitted calibrated model to new class priors; fit(X) reads unlabeled "
        "target rows of that model's features and refuses an unfitted estimator "
        "(ValueError), so every check that fits it on its own data fails by design. "
        "get/set_params, clone, nothing set in __init__, pickle, NotFittedError, a seeded "
        "bootstrap, weights equal repetition and row order: "
        "tests/test_prior_shift.py::test_scikit_learn_conventions and the tests after it"
    ),
    bernonnx.ConformalClassifier: (
        "puts prediction sets around a FITTED classifier and never fits it; fit(X, y) reads "
        "conformalization rows of that model's features, so every check that fits it on "
        "data of its own making (other features, other classes) fails by design. "
        "get/set_params, nothing set in __init__, clone keeping the fitted model, pickle, "
        "weights equal repetition, bad input: tests/test_conformal.py::"
        "test_estimator_conventions_and_pickle, test_clone_keeps_the_fitted_model_and_"
        "refits_the_sets, test_sample_weights_equal_repeated_rows and test_bad_input"
    ),
}


def test_every_public_estimator_is_checked():
    public = {
        obj
        for name in bernonnx.__all__
        if inspect.isclass(obj := getattr(bernonnx, name))
        and issubclass(obj, sklearn.base.BaseEstimator)
    }
    assert public == {type(estimator) for estimator in ESTIMATORS} | set(PREFIT_ONLY)


#: one-score calibrators whose predict reads scores through ``predict_scores``
ONE_SCORE = [
    BernsteinCalibrator(degree=8),
    BernsteinCalibrator(degree=8, loss="squared", score_transform="quantile"),
    PlattCalibrator(),
    bernonnx.IsotonicCalibrator(),
    HistogramCalibrator(),
    bernonnx.PlattHistogramCalibrator(),
]


@pytest.mark.parametrize("calibrator", ONE_SCORE, ids=repr)
def test_plain_arrays_skip_validation_with_the_same_result(calibrator):
    # predict_scores takes a plain float ndarray as it is, without validate_data: the
    # same probabilities, bit for bit, as inputs that go through it, the same errors,
    # and scikit-learn's feature-name warning where the fit saw names
    try:
        s, y = calibration_scores("magic", LogisticRegression(max_iter=500), "decision_function")
    except DataMissing as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    cal = sklearn.base.clone(calibrator).fit(s, y)
    fast = cal.predict_proba(s)
    np.testing.assert_array_equal(fast, cal.predict_proba(s.tolist()))
    np.testing.assert_array_equal(fast, cal.predict_proba(s[:, None]))
    np.testing.assert_array_equal(fast, cal.predict_proba(pd.Series(s)))
    s32 = s.astype(np.float32)
    np.testing.assert_array_equal(cal.predict_proba(s32), cal.predict_proba(pd.Series(s32)))
    assert cal.predict_proba(s32).dtype == np.float32
    bad = s.copy()
    bad[7] = np.nan
    for scores in (bad, bad.tolist()):
        with pytest.raises(ValueError, match="scores contains NaN"):
            cal.predict_proba(scores)
    with pytest.raises(ValueError, match="0 sample"):
        cal.predict_proba(s[:0])
    named = sklearn.base.clone(calibrator).fit(pd.DataFrame({"score": s}), y)
    with pytest.warns(UserWarning, match="valid feature names"):
        named.predict_proba(s)
