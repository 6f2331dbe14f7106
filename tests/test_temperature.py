"""TemperatureCalibrator: the fit's optimality, invariants, CalibratedClassifier and ONNX."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from bernonnx import CalibratedClassifier, TemperatureCalibrator
from bernonnx.deploy import run_onnx
from bernonnx.export import to_onnx

TOLERANCE = {np.float32: 1e-6, np.float64: 1e-9}


def _logits(n=3000, k=4, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return scale * (2.0 * np.eye(k)[y] + rng.normal(size=(n, k))), y


def _nll(beta, z, y, w=None):
    w = np.ones(len(y)) if w is None else w
    return -float(w @ log_softmax(beta * z, axis=1)[np.arange(len(y)), y])


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0, 30.0])
def test_fit_is_the_exact_minimiser(scale):
    z, y = _logits(scale=scale)
    cal = TemperatureCalibrator().fit(z, y)
    beta = cal.inverse_temperature_
    assert cal.temperature_ == pytest.approx(1.0 / beta, rel=1e-15)
    reference = minimize_scalar(
        _nll, bounds=(1e-6, 100.0), args=(z, y), method="bounded", options={"xatol": 1e-13}
    ).x
    assert beta == pytest.approx(reference, rel=1e-7)
    # the derivative of the log loss vanishes at the fitted beta
    p = softmax(beta * z, axis=1)
    slope = np.sum(np.sum(p * z, axis=1) - z[np.arange(len(y)), y])
    assert abs(slope) <= 1e-10 * np.abs(z).sum()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(2, 6),
    scale=st.floats(0.05, 50.0),
    repeat=st.integers(1, 4),
)
def test_invariants(seed, k, scale, repeat):
    z, y = _logits(n=200, k=k, scale=scale, seed=seed)
    if np.unique(y).size < k:
        return
    cal = TemperatureCalibrator().fit(z, y)
    p = cal.predict_proba(z)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    assert cal.inverse_temperature_ >= 0
    if cal.inverse_temperature_ > 0:
        # one positive factor: the ranking of classes within a row is unchanged
        np.testing.assert_array_equal(cal.predict(z), np.argmax(z, axis=1))
    # the optimum is no worse than the uncalibrated logits or the uniform prediction
    fitted = _nll(cal.inverse_temperature_, z, y)
    assert fitted <= min(_nll(1.0, z, y), _nll(0.0, z, y)) * (1 + 1e-12)
    # sample weight k means the row repeated k times
    w = np.full(len(y), repeat, dtype=float)
    w[::3] = 1.0
    weighted = TemperatureCalibrator().fit(z, y, sample_weight=w)
    counts = w.astype(int)
    repeated = TemperatureCalibrator().fit(np.repeat(z, counts, axis=0), np.repeat(y, counts))
    assert weighted.inverse_temperature_ == pytest.approx(repeated.inverse_temperature_, rel=1e-9)


def test_binary_one_column_is_the_two_column_logits():
    z, y = _logits(k=2)
    s = z[:, 1] - z[:, 0]
    one = TemperatureCalibrator().fit(s, y)
    two = TemperatureCalibrator().fit(np.c_[np.zeros_like(s), s], y)
    assert one.inverse_temperature_ == pytest.approx(two.inverse_temperature_, rel=1e-12)
    np.testing.assert_allclose(one.predict_proba(s), two.predict_proba(np.c_[0 * s, s]))
    assert one.n_features_in_ == 1 and one.predict_proba(s[:, None]).shape == (len(s), 2)


def test_labels_and_dtype():
    z, y = _logits(k=3)
    labels = np.array(["c", "a", "b"])[y]  # sorted classes a, b, c: columns 1, 2, 0
    cal = TemperatureCalibrator().fit(z[:, [1, 2, 0]], labels)
    plain = TemperatureCalibrator().fit(z, y)
    assert cal.inverse_temperature_ == pytest.approx(plain.inverse_temperature_, rel=1e-12)
    assert list(cal.classes_) == ["a", "b", "c"]
    assert cal.predict_proba(z.astype(np.float32)).dtype == np.float32


def test_proba_input_equals_log_proba_logits():
    z, y = _logits(k=3)
    p = softmax(z, axis=1)
    on_p = TemperatureCalibrator(input="proba").fit(p, y)
    on_z = TemperatureCalibrator().fit(z, y)
    assert on_p.inverse_temperature_ == pytest.approx(on_z.inverse_temperature_, rel=1e-9)
    with pytest.raises(ValueError, match="input='proba' takes probabilities in"):
        on_p.predict_proba(z)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.zeros((10, 2)), np.arange(10) % 3, r"one column per class of y \(3 columns\)"),
        (np.zeros((10, 3)), np.zeros(10), "single class"),
        (np.full((10, 2), np.nan), np.arange(10) % 2, "scores contains NaN"),
    ],
)
def test_bad_input_is_named(X, y, match):
    with pytest.raises(ValueError, match=match):
        TemperatureCalibrator().fit(X, y)


def test_separable_scores_stop_at_a_finite_temperature():
    s = np.r_[-np.ones(50), np.ones(50)]
    y = (s > 0).astype(int)
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        cal = TemperatureCalibrator().fit(s, y)
    assert np.isfinite(cal.inverse_temperature_) and cal.inverse_temperature_ > 0
    np.testing.assert_allclose(cal.predict_proba(s)[:, 1], y, atol=1e-12)


def test_uninformative_scores_give_infinite_temperature():
    s = np.r_[np.ones(50), -np.ones(50)]
    cal = TemperatureCalibrator().fit(s, (s < 0).astype(int))
    assert cal.inverse_temperature_ == 0.0 and cal.temperature_ == np.inf
    np.testing.assert_allclose(cal.predict_proba(s), 0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("k", "input_kind"), [(1, "logits"), (1, "proba"), (4, "logits")])
def test_onnx_parity(dtype, k, input_kind):
    z, y = _logits(k=max(k, 2))
    if k == 1:
        z = z[:, 1:] - z[:, :1]
    if input_kind == "proba":
        z = 1.0 / (1.0 + np.exp(-z / 4.0))
    cal = TemperatureCalibrator(input=input_kind).fit(z[:1500], y[:1500])
    held_out = np.r_[z[1500:], z[:10] * 3.0 if input_kind == "logits" else z[:10]]
    X = held_out.astype(dtype)
    onx = to_onnx(cal, X[:5], dtype=dtype)
    out = run_onnx(onx, {onx.graph.input[0].name: X})
    np.testing.assert_allclose(
        out["probabilities"], cal.predict_proba(X), rtol=0, atol=TOLERANCE[dtype]
    )
    np.testing.assert_array_equal(out["label"], cal.predict(X))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_calibrated_classifier_fits_one_temperature_per_fold_and_exports(n_classes):
    X, y = make_classification(
        2400, n_classes=n_classes, n_informative=5, random_state=0, flip_y=0.2
    )
    clf = CalibratedClassifier(LogisticRegression(C=100.0), TemperatureCalibrator(), cv=3).fit(
        X[:1800], y[:1800]
    )
    for pair in clf.calibrated_classifiers_:
        assert len(pair.calibrators) == 1
        assert pair.calibrators[0].n_features_in_ == (1 if n_classes == 2 else n_classes)
    proba = clf.predict_proba(X[1800:])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    onx = to_onnx(clf, X[:5], dtype=np.float64)
    out = run_onnx(onx, {onx.graph.input[0].name: X[1800:]})
    np.testing.assert_allclose(out["probabilities"], proba, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(out["label"], clf.predict(X[1800:]))
