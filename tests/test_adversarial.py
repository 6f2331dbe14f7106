"""Adversarial inputs for every public estimator, the meta-estimators and the metrics.

Properties, not snapshots: valid input gives finite probabilities in [0, 1]
whose rows sum to 1, ranking is kept where strict monotonicity is promised,
and anything else is refused with a ValueError that says what is wrong.
Each item of issue 10 has its regression test here (named ``test_item_N_...``).
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    FusionClassifier,
    HistogramCalibrator,
    MultivariateBernsteinCalibrator,
    PlattHistogramCalibrator,
)

# ------------------------------------------------------------------ item 1


@pytest.fixture(scope="module")
def three_class():
    X, y = make_classification(n_samples=600, n_classes=3, n_informative=4, random_state=0)
    return X, y, LogisticRegression().fit(X, y)


@pytest.mark.parametrize(
    "relabel",
    [lambda y: y == 1, lambda y: np.where(y == 2, 1, y), lambda y: y + 1, lambda y: y.astype(str)],
    ids=["binary", "two_of_three", "shifted", "strings"],
)
def test_item_1_frozen_classes_must_match_y(three_class, relabel):
    X, y, model = three_class
    y_bad = relabel(y)
    for est in (
        CalibratedClassifier(FrozenEstimator(model)),
        CalibratedClassifier(FrozenEstimator(model), ensemble=True, cv=2),
    ):
        with pytest.raises(ValueError, match=r"knows classes \[0, 1, 2\] but y has classes"):
            est.fit(X, y_bad)
    with pytest.raises(ValueError, match=r"knows classes \[0, 1, 2\] but y has classes"):
        FusionClassifier([("lr", FrozenEstimator(model))]).fit(X, y_bad)


def test_item_1_matching_frozen_classes_still_fit(three_class):
    X, y, model = three_class
    clf = CalibratedClassifier(FrozenEstimator(model), BernsteinCalibrator(degree=4))
    proba = clf.fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# ----------------------------------------------------------------- item 10


def test_item_10_grid_search_tunes_the_default_calibrator():
    X, y = make_classification(n_samples=300, random_state=0)
    search = GridSearchCV(
        CalibratedClassifier(LogisticRegression(), cv=3), {"calibrator__degree": [2, 8]}, cv=2
    ).fit(X, y)
    best = search.best_estimator_
    degree = search.best_params_["calibrator__degree"]
    assert best.calibrated_classifiers_[0].calibrators[0].degree_ == degree


def test_item_10_nested_defaults_are_listed_and_settable():
    clf = CalibratedClassifier()
    params = clf.get_params(deep=True)
    assert params["calibrator"] is None and params["calibrator__degree"] == "auto"
    assert "estimator__C" in params
    assert clf.get_params(deep=False)["calibrator"] is None
    clf.set_params(calibrator__degree=3, estimator__C=0.5)
    assert isinstance(clf.calibrator, BernsteinCalibrator) and clf.calibrator.degree == 3
    assert clf.estimator.C == 0.5
    # a fresh instance keeps None: no shared mutable default was changed
    assert CalibratedClassifier().calibrator is None
    both = CalibratedClassifier().set_params(calibrator=None, calibrator__loss="squared")
    assert both.calibrator.loss == "squared"


# ----------------------------------------------------------------- item 12

S12 = np.linspace(-2, 2, 200)
Y12 = (np.sin(7 * S12) + S12 > 0).astype(int)


@pytest.mark.parametrize(
    "est",
    [
        BernsteinCalibrator(degree=True),
        BernsteinCalibrator(degree=[True, 3]),
        BernsteinCalibrator(degree=np.array([2, 3], dtype=bool)),
        BernsteinCalibrator(n_folds=True),
        BernsteinCalibrator(n_knots=np.True_, score_transform="quantile"),
        HistogramCalibrator(n_bins=True),
        PlattHistogramCalibrator(n_bins=True),
        MultivariateBernsteinCalibrator(degree=True),
        MultivariateBernsteinCalibrator(degree=(True, 2)),
        MultivariateBernsteinCalibrator(n_folds=False),
        CalibratedClassifier(n_jobs=True),
        FusionClassifier([("lr", LogisticRegression())], n_jobs=True),
    ],
    ids=repr,
)
def test_item_12_bools_are_not_integers(est):
    X = S12 if hasattr(est, "score_transform") or "Histogram" in type(est).__name__ else None
    if isinstance(est, MultivariateBernsteinCalibrator):
        X = np.c_[S12, S12**3]
    elif X is None:
        X = np.c_[S12, S12**2]
    with pytest.raises(ValueError, match=r"(?i)bool|got (np\.)?(True|False)"):
        est.fit(X, Y12)


@pytest.mark.parametrize("est", [BernsteinCalibrator, MultivariateBernsteinCalibrator])
def test_item_12_n_folds_is_capped(est):
    X = S12 if est is BernsteinCalibrator else np.c_[S12, S12**3]
    with pytest.raises(ValueError, match=r"n_folds.*\[2, 20\]"):
        est(degree=[2, 3] if est is BernsteinCalibrator else "auto", n_folds=10**6).fit(X, Y12)
    if est is BernsteinCalibrator:
        est(degree=[2, 3], n_folds=20).fit(X, Y12)
