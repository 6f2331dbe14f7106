"""Pickles made before the calibrators moved into ``bernonnx/calibrators/`` still load.

A pickle names each class by its module: one made before the move says
``bernonnx.bernstein.BernsteinCalibrator`` or ``bernonnx.binary.beta.BetaCalibrator``.
Such a pickle is made here from a fitted estimator by writing the class references with
the old module names (protocol 2 spells them as text, ``c<module>\\n<name>\\n``), and must
load and predict exactly what the estimator predicts.
"""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import CalibratedClassifier
from bernonnx._registry import CALIBRATORS
from bernonnx.calibrators import _FORMER_PATHS
from bernonnx.datasets import load_credit_default

#: the module here of each former path (``bernonnx.binary`` is the package itself)
NEW_OF_OLD = {
    old: f"bernonnx.calibrators.{leaf}" if leaf else "bernonnx.calibrators"
    for old, leaf in _FORMER_PATHS.items()
}
#: small fixed degrees where the default chooses one by cross-validation (speed only)
FAST = {"degree": 3}


def as_made_before_the_move(estimator) -> bytes:
    """The protocol-2 pickle of ``estimator``, its bernonnx classes under their old modules."""
    blob = pickle.dumps(estimator, protocol=2)
    old = blob
    for former, module in NEW_OF_OLD.items():
        if module != "bernonnx.calibrators":
            blob = blob.replace(f"c{module}\n".encode(), f"c{former}\n".encode())
    assert blob != old and b"bernonnx.calibrators" not in blob
    return blob


@pytest.fixture(scope="module")
def binary_scores():
    X, y, _ = load_credit_default()
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:1000], y[:1000])
    rows = slice(1000, 2500)
    proba = model.predict_proba(X[rows])[:, 1]
    logit = model.decision_function(X[rows])
    return logit, proba, np.asarray(y[rows])


@pytest.fixture(scope="module")
def class_scores():
    X, y = load_digits(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    model.fit(X[:600], y[:600])
    return model.decision_function(X[600:]), y[600:], model, X


#: the registry's variants whose module had a former path (a family added since has none)
MOVED = [
    (e, v)
    for e in CALIBRATORS
    for v in e.variants
    if e.cls.partition(":")[0].rpartition(".")[2] in _FORMER_PATHS.values()
]


@pytest.mark.parametrize("entry, variant", MOVED, ids=[v.cli_name for _, v in MOVED])
def test_a_calibrator_pickled_before_the_move_loads(entry, variant, binary_scores, class_scores):
    logit, proba, y = binary_scores
    params = FAST if "degree" in entry.load()().get_params() else {}
    est = entry.make(variant, **params)
    if entry.multiclass:
        s, y = class_scores[:2]
    elif entry.multi:
        s = np.column_stack([logit, np.log(proba)])
    else:
        s = proba if variant.needs_probabilities else logit
    est.fit(s[:1000], y[:1000])
    old = pickle.loads(as_made_before_the_move(est))
    assert type(old) is type(est)
    np.testing.assert_array_equal(old.predict_proba(s[1000:]), est.predict_proba(s[1000:]))


def test_a_calibrated_classifier_pickled_before_the_move_loads(class_scores):
    # the multiclass default holds SMS (temperature.py) inside temperature_bernstein.py's
    # calibrator: both old modules in one pickle
    _, _, model, X = class_scores
    cc = CalibratedClassifier(FrozenEstimator(model)).set_params(calibrator__degree=3)
    cc.fit(X[600:1200], load_digits().target[600:1200])
    blob = as_made_before_the_move(cc)
    assert b"cbernonnx.temperature_bernstein\n" in blob and b"cbernonnx.temperature\n" in blob
    old = pickle.loads(blob)
    np.testing.assert_array_equal(old.predict_proba(X[1200:]), cc.predict_proba(X[1200:]))
