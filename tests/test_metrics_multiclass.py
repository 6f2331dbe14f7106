"""Multiclass metrics: definitions, invariants (hypothesis) and calibration_report on (n, k)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import log_loss as sk_log_loss

from bernonnx.metrics import (
    brier_score,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    multiclass_brier_score,
    multiclass_log_loss,
    top_label_calibration_error,
)

matplotlib.use("Agg")


def _sample(seed, n=300, k=4):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, k))
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in P])
    y[:k] = np.arange(k)  # every class occurs
    return y, P


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(3, 6), repeat=st.integers(2, 4))
def test_invariants(seed, k, repeat):
    y, P = _sample(seed, k=k)
    for metric in (top_label_calibration_error, classwise_calibration_error):
        value = metric(y, P)
        assert 0.0 <= value <= 1.0
        # a weight k is the row repeated k times
        w = np.ones(len(y))
        w[::5] = repeat
        rows = np.repeat(np.arange(len(y)), w.astype(int))
        assert metric(y, P, sample_weight=w) == pytest.approx(metric(y[rows], P[rows]))
    assert 0.0 <= multiclass_brier_score(y, P) <= 2.0
    # permuting the classes (labels and columns alike) changes nothing
    perm = np.random.default_rng(seed).permutation(k)
    inverse = np.argsort(perm)
    y_perm, P_perm = inverse[y], P[:, perm]
    for metric in (
        top_label_calibration_error,
        classwise_calibration_error,
        multiclass_brier_score,
        multiclass_log_loss,
    ):
        assert metric(y_perm, P_perm) == pytest.approx(metric(y, P), rel=1e-12, abs=1e-15)


def test_definitions_match_the_binary_metrics_and_sklearn():
    y, P = _sample(0)
    predicted = np.argmax(P, axis=1)
    confidence = P.max(axis=1)
    assert top_label_calibration_error(y, P, n_bins=10) == pytest.approx(
        expected_calibration_error(predicted == y, confidence, n_bins=10, pos_label=True)
    )
    classwise = np.mean([expected_calibration_error(y == k, P[:, k], n_bins=10) for k in range(4)])
    assert classwise_calibration_error(y, P, n_bins=10) == pytest.approx(classwise)
    assert multiclass_log_loss(y, P) == pytest.approx(sk_log_loss(y, P), rel=1e-12)
    onehot = np.eye(4)[y]
    assert multiclass_brier_score(y, P) == pytest.approx(np.mean(((P - onehot) ** 2).sum(1)))
    # two classes: twice the binary Brier score
    y2, p = (np.arange(100) % 2), np.linspace(0.01, 0.99, 100)
    assert multiclass_brier_score(y2, np.c_[1 - p, p]) == pytest.approx(2 * brier_score(y2, p))


def test_string_labels_and_explicit_labels():
    y, P = _sample(1, k=3)
    names = np.array(["b", "c", "a"])  # column order given by labels=
    value = top_label_calibration_error(names[y], P, labels=names)
    assert value == pytest.approx(top_label_calibration_error(y, P))
    with pytest.raises(ValueError, match="y_prob has 3 columns but 2 labels"):
        multiclass_log_loss([0, 1, 0], P[:3])


def test_calibration_report_accepts_class_probabilities():
    y, P = _sample(2)
    report = calibration_report(y, P, n_bins=15)
    assert report["ece"] == pytest.approx(top_label_calibration_error(y, P, n_bins=15))
    assert report["classwise_ece"] == pytest.approx(classwise_calibration_error(y, P, n_bins=15))
    assert report["brier"] == pytest.approx(multiclass_brier_score(y, P))
    assert report["log_loss"] == pytest.approx(multiclass_log_loss(y, P))
    assert report["accuracy"] == pytest.approx(np.mean(np.argmax(P, axis=1) == y))
    assert 0.5 < report["auc"] <= 1.0
    # a binary predict_proba is still refused: the positive column is what is meant
    with pytest.raises(ValueError, match="pass the probabilities of the positive class"):
        calibration_report(y % 2, np.c_[1 - P[:, 0], P[:, 0]])


@pytest.mark.parametrize(
    ("y_prob", "match"),
    [
        (np.full((4, 3), 1.5), r"probabilities in \[0, 1\]"),
        (np.full((4, 3), np.nan), "NaN or inf"),
        (np.full((4, 1), 0.5), "n_classes >= 2"),
    ],
)
def test_bad_probabilities_are_named(y_prob, match):
    with pytest.raises(ValueError, match=match):
        top_label_calibration_error([0, 1, 2, 0], y_prob)


def test_reliability_diagram_top_label_mode():
    import matplotlib.pyplot as plt

    from bernonnx.plotting import reliability_diagram

    y, P = _sample(3)
    ax = reliability_diagram(y, {"model": P, "sharper": P**2 / (P**2).sum(1, keepdims=True)})
    assert ax.get_ylabel() == "accuracy"
    assert ax.bernonnx_histogram.get_xlabel() == "confidence (top-label probability)"
    ece = top_label_calibration_error(y, P, n_bins=10)
    assert ax.lines[1].get_label() == f"model (ECE = {ece:.4f})"
    np.testing.assert_allclose(ax.lines[1].get_xdata().max(), P.max(axis=1).max(), atol=0.1)
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="mixes"):
        reliability_diagram(y, {"a": P, "b": P[:, 0]})
