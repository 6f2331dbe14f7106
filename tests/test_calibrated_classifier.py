"""CalibratedClassifier: CalibratedClassifierCV semantics with bernonnx calibrators."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibrationDisplay
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=3000, n_features=8, random_state=0)
    return X[:2000], y[:2000], X[2000:], y[2000:]


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_classification(
        n_samples=3000, n_features=10, n_informative=6, n_classes=4, random_state=1
    )
    return X[:2000], y[:2000], X[2000:], y[2000:]


FAST = BernsteinCalibrator(degree=6)


@pytest.mark.parametrize("ensemble", [True, False])
@pytest.mark.parametrize(
    "model, expected",
    [(GaussianNB(), True), (RandomForestClassifier(20, random_state=0), False)],
)
def test_log_odds_auto_where_log_probabilities_exist(binary, model, expected, ensemble):
    """log_odds="auto" takes log-odds exactly where the model's log-probabilities give
    them without saturating; either way the ranking of the prefit scores is kept."""
    X, y, X_test, y_test = binary
    frozen = FrozenEstimator(clone(model).fit(X[:1000], y[:1000]))
    base = frozen if ensemble is False else clone(model)
    clf = CalibratedClassifier(base, FAST, ensemble=ensemble, cv=3).fit(X[1000:], y[1000:])
    assert clf.log_odds_ is expected
    same = CalibratedClassifier(base, FAST, ensemble=ensemble, cv=3, log_odds=expected)
    np.testing.assert_array_equal(
        clf.predict_proba(X_test), same.fit(X[1000:], y[1000:]).predict_proba(X_test)
    )
    if ensemble is False:  # one strictly increasing map of the frozen model's scores
        p = clf.predict_proba(X_test)[:, 1]
        s = frozen.predict_proba(X_test)[:, 1]
        assert roc_auc_score(y_test, p) == pytest.approx(roc_auc_score(y_test, s), abs=1e-12)


@pytest.mark.parametrize("ensemble", [True, False])
@pytest.mark.parametrize("data", ["binary", "multiclass"])
def test_probabilities_are_valid(ensemble, data, request):
    X, y, X_test, _ = request.getfixturevalue(data)
    clf = CalibratedClassifier(LogisticRegression(), FAST, ensemble=ensemble).fit(X, y)
    proba = clf.predict_proba(X_test)
    assert proba.shape == (X_test.shape[0], np.unique(y).shape[0])
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert len(clf.calibrated_classifiers_) == (5 if ensemble else 1)
    np.testing.assert_array_equal(clf.predict(X_test), clf.classes_[proba.argmax(axis=1)])


def test_prefit_equals_calibrating_the_scores_directly(binary):
    X, y, X_test, y_test = binary
    base = LinearSVC().fit(X[:1000], y[:1000])
    clf = CalibratedClassifier(FrozenEstimator(base), FAST).fit(X[1000:], y[1000:])
    direct = clone(FAST).fit(base.decision_function(X[1000:]), y[1000:])
    np.testing.assert_array_equal(
        clf.predict_proba(X_test), direct.predict_proba(base.decision_function(X_test))
    )
    assert clf.calibrated_classifiers_[0].estimator.estimator is base  # not refitted
    # a strictly increasing map of the decision function keeps the AUC exactly
    assert roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1]) == roc_auc_score(
        y_test, base.decision_function(X_test)
    )


def test_ensemble_false_uses_out_of_fold_scores(binary):
    X, y, X_test, _ = binary
    cv = StratifiedKFold(3)
    clf = CalibratedClassifier(LogisticRegression(), FAST, cv=cv, ensemble=False).fit(X, y)
    oof = np.empty(X.shape[0])
    for train, test in cv.split(X, y):
        oof[test] = LogisticRegression().fit(X[train], y[train]).decision_function(X[test])
    direct = clone(FAST).fit(oof, y)
    final = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(
        clf.predict_proba(X_test), direct.predict_proba(final.decision_function(X_test))
    )


def test_ensemble_averages_fold_pairs(binary):
    X, y, X_test, _ = binary
    clf = CalibratedClassifier(LogisticRegression(), FAST, cv=3).fit(X, y)
    mean = np.mean([pair.predict_proba(X_test) for pair in clf.calibrated_classifiers_], axis=0)
    np.testing.assert_allclose(clf.predict_proba(X_test), mean)


def test_predict_proba_scores_and_log_odds(binary):
    X, y, X_test, _ = binary
    nb = GaussianNB()
    raw = CalibratedClassifier(nb, FAST, log_odds=False).fit(X, y)
    logit = CalibratedClassifier(nb, FAST, log_odds=True).fit(X, y)
    assert raw.response_method_ == "predict_proba"
    for clf in (raw, logit):
        proba = clf.predict_proba(X_test)
        assert np.all(np.isfinite(proba))
    forced = CalibratedClassifier(
        LogisticRegression(), FAST, response_method="predict_proba", log_odds=True
    ).fit(X, y)
    assert forced.response_method_ == "predict_proba"


def test_multiclass_one_vs_rest_renormalised(multiclass):
    X, y, X_test, _ = multiclass
    clf = CalibratedClassifier(FrozenEstimator(LogisticRegression().fit(X, y)), FAST).fit(X, y)
    pair = clf.calibrated_classifiers_[0]
    assert len(pair.calibrators) == 4
    scores = pair.estimator.decision_function(X_test)
    per_class = np.column_stack(
        [cal.predict_proba(scores[:, k])[:, 1] for k, cal in enumerate(pair.calibrators)]
    )
    np.testing.assert_allclose(
        clf.predict_proba(X_test), per_class / per_class.sum(axis=1, keepdims=True)
    )


def test_string_labels_and_n_jobs(multiclass):
    X, y, X_test, _ = multiclass
    names = np.array(["ant", "bee", "cat", "dog"])[y]
    a = CalibratedClassifier(LogisticRegression(), FAST, cv=3).fit(X, names)
    b = CalibratedClassifier(LogisticRegression(), FAST, cv=3, n_jobs=2).fit(X, names)
    assert list(a.classes_) == ["ant", "bee", "cat", "dog"]
    np.testing.assert_allclose(a.predict_proba(X_test), b.predict_proba(X_test))
    assert set(a.predict(X_test)) <= set(a.classes_)


def test_sample_weight_equals_repetition_when_prefit(binary):
    X, y, X_test, _ = binary
    base = FrozenEstimator(LogisticRegression().fit(X, y))
    w = np.random.default_rng(0).integers(0, 3, size=X.shape[0])
    a = CalibratedClassifier(base, FAST).fit(X, y, sample_weight=w)
    b = CalibratedClassifier(base, FAST).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(a.predict_proba(X_test), b.predict_proba(X_test), atol=1e-8)


def test_sample_weight_warns_when_estimator_cannot_use_it(binary):
    X, y, _, _ = binary

    class NoWeights(LogisticRegression):
        def fit(self, X, y):
            return super().fit(X, y)

    with pytest.warns(UserWarning, match="does not accept sample_weight"):
        CalibratedClassifier(NoWeights(), FAST, cv=2).fit(X, y, sample_weight=np.ones(len(y)))


def test_pipeline_dataframe_gridsearch_and_display(binary):
    X, y, X_test, y_test = binary
    frame = pd.DataFrame(X[:, :4], columns=list("abcd"))
    frame["colour"] = np.where(X[:, 4] > 0, "red", "blue")
    test_frame = pd.DataFrame(X_test[:, :4], columns=list("abcd"))
    test_frame["colour"] = np.where(X_test[:, 4] > 0, "red", "blue")
    pipe = make_pipeline(
        ColumnTransformer(
            [("num", StandardScaler(), list("abcd")), ("cat", OneHotEncoder(), ["colour"])]
        ),
        LinearSVC(),
    )
    clf = CalibratedClassifier(pipe, FAST, cv=3).fit(frame, y)
    assert list(clf.feature_names_in_) == ["a", "b", "c", "d", "colour"]
    search = GridSearchCV(
        make_pipeline(StandardScaler(), CalibratedClassifier(LogisticRegression(), FAST, cv=3)),
        {"calibratedclassifier__calibrator__degree": [3, 8]},
        cv=2,
        scoring="neg_log_loss",
    ).fit(X, y)
    assert search.best_params_["calibratedclassifier__calibrator__degree"] in (3, 8)
    display = CalibrationDisplay.from_estimator(clf, test_frame, y_test, n_bins=10)
    assert display.prob_pred.shape == display.prob_true.shape


def test_default_estimator_and_calibrator(binary):
    X, y, X_test, _ = binary
    clf = CalibratedClassifier(cv=2).fit(X, y)
    pair = clf.calibrated_classifiers_[0]
    assert isinstance(pair.estimator, LinearSVC)
    assert isinstance(pair.calibrators[0], BernsteinCalibrator)
    assert clf.predict_proba(X_test).shape == (X_test.shape[0], 2)


def test_errors_name_the_problem(binary):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match="one class"):
        CalibratedClassifier(LogisticRegression(), FAST).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="fewer than 5 examples"):
        CalibratedClassifier(LogisticRegression(), FAST).fit(X[:12], np.r_[np.zeros(9), 1, 1, 1])
    with pytest.raises(ValueError, match="response_method='decision_function'"):
        CalibratedClassifier(GaussianNB(), FAST, response_method="decision_function").fit(X, y)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        CalibratedClassifier(LogisticRegression(), FAST).fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="knows classes"):
        frozen = FrozenEstimator(LogisticRegression().fit(X, y))  # two classes
        CalibratedClassifier(frozen, FAST).fit(X, np.arange(len(y)) % 3)


def test_random_forest_probabilities(binary):
    X, y, X_test, y_test = binary
    rf = RandomForestClassifier(n_estimators=30, random_state=0)
    clf = CalibratedClassifier(rf, FAST, cv=3, log_odds=True).fit(X, y)
    assert clf.response_method_ == "predict_proba"
    assert np.all(np.isfinite(clf.predict_proba(X_test)))


def _credit_education():
    """Credit as ``read_csv`` gives it, EDUCATION 1, 3 and the rare 5 (17 rows) as y."""
    from importlib import resources

    with resources.files("bernonnx.data").joinpath("uci_credit_card.csv.gz").open("rb") as f:
        frame = pd.read_csv(f, compression="gzip", nrows=4000).drop(columns="ID")
    y = frame.pop("EDUCATION").to_numpy()
    rows = np.r_[
        np.flatnonzero(y == 1)[:600], np.flatnonzero(y == 3)[:300], np.flatnonzero(y == 5)
    ]
    return frame.iloc[rows].reset_index(drop=True), y[rows]


def test_a_fold_without_a_class_is_refused_naming_fold_class_and_rows():
    # KFold(3) on rows sorted by label: fold 1 calibrates on class 1 alone, which raised
    # "y contains a single class (1); TemperatureBernsteinCalibrator needs at least two
    # classes" from inside the fit, naming neither the fold nor the missing classes
    from sklearn.model_selection import KFold, StratifiedKFold

    X, y = _credit_education()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    with pytest.raises(ValueError, match=r"cv: fold 1 of 3 has no row of class 3 among its 306"):
        CalibratedClassifier(model, cv=KFold(3)).fit(X, y)
    # folds given as (train, test) pairs: the second's classifier never sees class 5
    rng = np.random.default_rng(0)
    order = rng.permutation(y.shape[0])
    fives = order[y[order] == 5]
    others = order[y[order] != 5]
    first = (np.r_[others[:450], fives[:9]], np.r_[others[450:], fives[9:]])
    second = (others[450:], np.r_[others[:450], fives])
    with pytest.raises(
        ValueError,
        match=r"fold 2 of 2 has no row of class 5 among its 450 training rows \(the class has "
        r"17 rows, 17 of them in that fold's calibration rows\)",
    ):
        CalibratedClassifier(model, cv=[first, second]).fit(X, y)
    # the same rows in stratified folds fit, every class in every fold
    clf = CalibratedClassifier(model, cv=StratifiedKFold(3)).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_tuning_the_default_calibrator_keeps_the_multiclass_method():
    # set_params(calibrator__degree=8) on three classes silently swapped the structured
    # matrix scaling default for one-vs-rest Bernstein maps; the degree now reaches the
    # multiclass default's correction (TemperatureBernsteinCalibrator(scaling="sms"))
    X, y = _credit_education()
    X, y = X[y != 5], y[y != 5]
    three = np.where(np.arange(y.shape[0]) % 3 == 0, 2, y)  # a third class, from rows
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    tuned = CalibratedClassifier(model, cv=3).set_params(calibrator__degree=8)
    fitted = clone(tuned).fit(X, three)  # clone keeps the stand-in
    for pair in fitted.calibrated_classifiers_:
        (cal,) = pair.calibrators
        assert type(cal).__name__ == "TemperatureBernsteinCalibrator"
        assert cal.degree == 8 and cal.scaling == "sms"
    # two classes: the Bernstein default with that degree, as if passed explicitly
    binary = clone(tuned).fit(X, y)
    explicit = CalibratedClassifier(model, BernsteinCalibrator(degree=8), cv=3).fit(X, y)
    assert type(binary.calibrated_classifiers_[0].calibrators[0]) is BernsteinCalibrator
    np.testing.assert_array_equal(binary.predict_proba(X), explicit.predict_proba(X))
    # a parameter the multiclass default lacks says the method would change
    other = CalibratedClassifier(model, cv=3).set_params(calibrator__loss="squared")
    with pytest.raises(ValueError, match=r"calibrator__loss='squared' sets a parameter of the"):
        other.fit(X, three)
