"""FusionClassifier: stacking semantics, invariants and bad input (checks: test_common.py)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import FusionClassifier, MultivariateBernsteinCalibrator
from bernonnx.export import to_onnx


def data(n=3000, n_classes=2, seed=0):
    return make_classification(
        n, n_features=8, n_informative=5, n_classes=n_classes, random_state=seed
    )


def frozen_pair(X, y):
    half = X.shape[0] // 2
    lr = LogisticRegression().fit(X[:half], y[:half])
    nb = GaussianNB().fit(X[half:], y[half:])
    return [("lr", FrozenEstimator(lr)), ("nb", FrozenEstimator(nb))]


def small_fusion(**kw):
    return FusionClassifier(
        [("lr", LogisticRegression()), ("nb", GaussianNB())],
        calibrator=MultivariateBernsteinCalibrator(degree=2, loss="log"),
        **kw,
    )


def test_frozen_models_feed_their_scores_to_the_calibrator():
    X, y = data()
    fusion = FusionClassifier(frozen_pair(X, y), calibrator=MultivariateBernsteinCalibrator(3))
    fusion.fit(X, y)
    lr, nb = (est.estimator for _, est in frozen_pair(X, y))
    scores = np.c_[lr.decision_function(X), nb.predict_proba(X)[:, 1]]
    assert fusion.response_methods_ == ["decision_function", "predict_proba"]
    np.testing.assert_array_equal(fusion.score_matrix(X), scores)
    direct = MultivariateBernsteinCalibrator(3).fit(scores, y)
    np.testing.assert_allclose(fusion.calibrators_[0].coef_, direct.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fusion.predict_proba(X), direct.predict_proba(scores), atol=1e-15)


def test_unfrozen_models_use_out_of_fold_scores_then_are_refitted():
    X, y = data()
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    fusion = small_fusion(cv=cv).fit(X, y)
    oof = np.c_[
        cross_val_predict(LogisticRegression(), X, y, cv=cv, method="decision_function"),
        cross_val_predict(GaussianNB(), X, y, cv=cv, method="predict_proba")[:, 1],
    ]
    direct = clone(fusion.calibrator).fit(oof, y)
    np.testing.assert_allclose(fusion.calibrators_[0].coef_, direct.coef_, atol=1e-9)
    refit = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(fusion.named_estimators_["lr"].coef_, refit.coef_)


def test_monotone_in_every_base_score_and_valid_probabilities():
    X, y = data()
    fusion = FusionClassifier(frozen_pair(X, y), log_odds=True).fit(X, y)
    cal = fusion.calibrators_[0]
    assert (cal.loss, cal.score_transform) == ("log", "logistic")  # the default
    proba = fusion.predict_proba(X)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    cal = fusion.calibrators_[0]
    s = fusion.score_matrix(X)
    grid = np.linspace(s.min(axis=0), s.max(axis=0), 60)
    g1, g2 = np.meshgrid(grid[:, 0], grid[:, 1], indexing="ij")
    p = cal.predict_proba(np.c_[g1.ravel(), g2.ravel()])[:, 1].reshape(g1.shape)
    assert np.all(np.diff(p, axis=0) >= 0) and np.all(np.diff(p, axis=1) >= 0)


@pytest.mark.slow  # 6,000 rows, the default degree search
def test_fusion_beats_each_base_model_alone_on_held_out_log_loss():
    from sklearn.metrics import log_loss

    X, y = data(n=6000, seed=3)
    fit, test = slice(0, 3000), slice(3000, None)
    fusion = FusionClassifier(frozen_pair(X[fit], y[fit]), log_odds=True).fit(X[fit], y[fit])
    fused = log_loss(y[test], fusion.predict_proba(X[test]))
    for _, est in frozen_pair(X[fit], y[fit]):
        assert fused < log_loss(y[test], est.predict_proba(X[test]))


def test_multiclass_one_vs_rest_rows_sum_to_one():
    X, y = data(n_classes=3)
    fusion = small_fusion(response_method="predict_proba", log_odds=True).fit(X, y)
    assert len(fusion.calibrators_) == 3
    assert fusion.score_matrix(X).shape == (X.shape[0], 2, 3)
    proba = fusion.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (fusion.predict(X) == y).mean() > 0.6


def test_weights_equal_repetition():
    X, y = data(n=1500)
    w = np.random.default_rng(0).integers(0, 3, size=y.shape[0])
    frozen = frozen_pair(X, y)
    a = FusionClassifier(frozen, calibrator=MultivariateBernsteinCalibrator(3)).fit(
        X, y, sample_weight=w
    )
    rows = np.repeat(np.arange(y.shape[0]), w)
    b = FusionClassifier(frozen, calibrator=MultivariateBernsteinCalibrator(3)).fit(
        X[rows], y[rows]
    )
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-7)


def test_any_calibrator_runs_in_python_and_export_names_the_limit():
    X, y = data()
    stacking = FusionClassifier(frozen_pair(X, y), calibrator=LogisticRegression()).fit(X, y)
    assert stacking.predict_proba(X).shape == (X.shape[0], 2)
    with pytest.raises(NotImplementedError, match="MultivariateBernsteinCalibrator only"):
        to_onnx(stacking, X[:2])


@pytest.mark.parametrize(
    "estimators, match",
    [
        ([], "non-empty list"),
        ([LogisticRegression()], r"\(name, classifier\) pairs"),
        ([("a", LogisticRegression()), ("a", GaussianNB())], "unique"),
        ([("a", "not a model")], "has no fit method"),
    ],
)
def test_bad_estimators_are_named(estimators, match):
    X, y = data(n=200)
    with pytest.raises((ValueError, TypeError), match=match):
        FusionClassifier(estimators).fit(X, y)


def test_other_bad_input():
    X, y = data(n=300)
    with pytest.raises(ValueError, match="only one class"):
        small_fusion().fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        small_fusion().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="has neither decision_function nor predict_proba"):
        FusionClassifier([("t", make_pipeline(StandardScaler()))]).fit(X, y)
    with pytest.raises(ValueError, match="knows classes"):
        FusionClassifier(frozen_pair(X, y)).fit(X, np.where(y == 1, "b", "a"))
    with pytest.raises(NotFittedError):
        small_fusion().predict_proba(X)
