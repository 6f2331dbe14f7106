"""Tests for bernonnx.metrics: agreement with scikit-learn, invariants, hand-derived values."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss

from bernonnx import metrics
from bernonnx.metrics import (
    brier_decomposition,
    brier_score,
    calibration_report,
    expected_calibration_error,
    grid_calibration_error,
    log_loss,
    maximum_calibration_error,
    reliability_table,
    rms_calibration_error,
    smooth_calibration_error,
)

STRATEGIES = ["uniform", "quantile"]


def _data(n=500, seed=0, calibrated=False):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 3.0, size=n)
    # a miscalibrated truth unless asked otherwise, so the errors are not all near zero
    truth = p if calibrated else p**0.5
    y = (rng.uniform(size=n) < truth).astype(int)
    return y, p


def _metrics(y, p, sample_weight=None, strategy="uniform", n_bins=10, pos_label=None):
    """Every scalar metric of the module, for the repetition and relabelling tests."""
    kw = dict(sample_weight=sample_weight, pos_label=pos_label)
    binned = dict(kw, n_bins=n_bins, strategy=strategy)
    out = {
        "ece": expected_calibration_error(y, p, **binned),
        "rmsce": rms_calibration_error(y, p, **binned),
        "mce": maximum_calibration_error(y, p, **binned),
        "brier": brier_score(y, p, **kw),
        "log_loss": log_loss(y, p, **kw),
    }
    out.update(brier_decomposition(y, p, **binned))
    report = calibration_report(y, p, n_bins=n_bins, **kw)
    out.update({f"report_{key}": value for key, value in report.items()})
    return out


def test_all_lists_the_public_functions():
    assert sorted(metrics.__all__) == [
        "brier_decomposition",
        "brier_score",
        "calibration_report",
        "classwise_calibration_error",
        "classwise_smooth_calibration_error",
        "expected_calibration_error",
        "grid_calibration_error",
        "log_loss",
        "log_loss_decomposition",
        "maximum_calibration_error",
        "multiclass_brier_score",
        "multiclass_log_loss",
        "reliability_table",
        "rms_calibration_error",
        "smooth_calibration_curve",
        "smooth_calibration_error",
        "top_label_calibration_error",
        "top_label_smooth_calibration_error",
    ]


# --- agreement with scikit-learn -------------------------------------------------------------


@pytest.mark.parametrize("n_bins", [1, 3, 10, 15])
@pytest.mark.parametrize("on_edges", [False, True])
def test_uniform_table_matches_sklearn_calibration_curve(n_bins, on_edges):
    y, p = _data(seed=n_bins)
    if on_edges:
        # predictions exactly on the bin edges exercise the right-closed convention
        p = np.linspace(0.0, 1.0, n_bins + 1)[np.arange(y.shape[0]) % (n_bins + 1)]
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform")
    table = reliability_table(y, p, n_bins=n_bins)
    np.testing.assert_allclose(table["fraction_positive"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(table["mean_predicted"], prob_pred, rtol=1e-12, atol=1e-15)


def test_edge_value_goes_to_the_lower_bin():
    # 0.5 is the inner edge of two uniform bins: bins are (.., 0.5] and (0.5, ..]
    table = reliability_table([0, 1], [0.5, 0.5], n_bins=2)
    assert table["bin_upper"].tolist() == [0.5]
    table = reliability_table([0, 1], [0.0, 1.0], n_bins=2)
    assert table["bin_lower"].tolist() == [0.0, 0.5]


@pytest.mark.parametrize("weighted", [False, True])
def test_brier_and_log_loss_match_sklearn(weighted):
    y, p = _data(seed=1)
    # exact 0 and 1 exercise the clipping of log_loss
    p[:3] = [0.0, 1.0, 1.0]
    y[:3] = [1, 0, 1]
    w = np.random.default_rng(2).exponential(size=y.shape[0]) if weighted else None
    assert brier_score(y, p, sample_weight=w) == pytest.approx(
        brier_score_loss(y, p, sample_weight=w), rel=1e-12
    )
    assert log_loss(y, p, sample_weight=w) == pytest.approx(
        sk_log_loss(y, np.c_[1 - p, p], sample_weight=w), rel=1e-12
    )


def test_log_loss_float32_uses_float32_epsilon():
    y, p = _data(seed=3)
    p = p.astype(np.float32)
    p[:2] = [0.0, 1.0]
    y[:2] = [1, 0]
    expected = sk_log_loss(y, np.c_[1 - p, p])
    assert log_loss(y, p) == pytest.approx(expected, rel=1e-6)
    # the float32 epsilon (1.2e-7) clips much harder than float64's (2.2e-16)
    assert log_loss(y, p) < log_loss(y, p.astype(np.float64)) - 10 / y.shape[0]


def test_log_loss_explicit_eps():
    # one confident miss: loss = -log(eps)
    assert log_loss([1], [0.0], eps=1e-3) == pytest.approx(-math.log(1e-3))
    assert log_loss([1], [0.0], eps=0) == math.inf
    assert log_loss([1], [0.5], eps=0) == pytest.approx(math.log(2))


def test_report_matches_sklearn_and_the_dedicated_functions():
    y, p = _data(seed=4)
    w = np.random.default_rng(5).integers(0, 4, size=y.shape[0])
    report = calibration_report(y, p, n_bins=12, sample_weight=w)
    assert list(report) == [
        "ece",
        "ece_quantile",
        "rmsce",
        "rmsce_debiased",
        "mce",
        "smece",
        "brier",
        "log_loss",
        "auc",
        "n_distinct",
    ]
    assert report["auc"] == pytest.approx(roc_auc_score(y, p, sample_weight=w), rel=1e-12)
    kw = dict(n_bins=12, sample_weight=w)
    assert report["ece"] == expected_calibration_error(y, p, **kw)
    assert report["ece_quantile"] == expected_calibration_error(y, p, strategy="quantile", **kw)
    assert report["rmsce"] == rms_calibration_error(y, p, **kw)
    assert report["mce"] == maximum_calibration_error(y, p, **kw)
    assert report["rmsce_debiased"] == expected_calibration_error(
        y, p, strategy="quantile", norm="l2", debias=True, **kw
    )
    assert report["smece"] == smooth_calibration_error(y, p, sample_weight=w)
    assert report["brier"] == brier_score(y, p, sample_weight=w)
    assert report["log_loss"] == log_loss(y, p, sample_weight=w)
    # distinct predictions among the rows that carry weight
    assert report["n_distinct"] == np.unique(p[w > 0]).shape[0]
    assert isinstance(report["n_distinct"], int)


def test_report_counts_ties():
    p = np.repeat([0.2, 0.5, 0.7], 4)
    y = np.tile([0, 1], 6)
    assert calibration_report(y, p)["n_distinct"] == 3


# --- hand-computed example --------------------------------------------------------------------


def test_hand_computed_example():
    y = [0, 1, 0, 1, 1, 0]
    p = [0.1, 0.2, 0.3, 0.6, 0.8, 0.9]
    # two uniform bins, (0, 0.5] and (0.5, 1]:
    #   bin 0: p = .1 .2 .3, y = 0 1 0 -> mean_pred 0.2,  frac_pos 1/3, gap 2/15
    #   bin 1: p = .6 .8 .9, y = 1 1 0 -> mean_pred 23/30, frac_pos 2/3, gap 1/10
    # ECE = 1/2 * 2/15 + 1/2 * 1/10 = 7/60; MCE = 2/15
    # RMSCE^2 = 1/2 * 4/225 + 1/2 * 1/100 = 25/1800 = 1/72
    # Brier = (.01 + .64 + .09 + .16 + .04 + .81) / 6 = 1.75 / 6 = 7/24
    # base rate 1/2: uncertainty 1/4; resolution = 1/2 (1/6)^2 + 1/2 (1/6)^2 = 1/36
    table = reliability_table(y, p, n_bins=2)
    np.testing.assert_allclose(table["mean_predicted"], [0.2, 23 / 30])
    np.testing.assert_allclose(table["fraction_positive"], [1 / 3, 2 / 3])
    np.testing.assert_array_equal(table["weight"], [3.0, 3.0])
    np.testing.assert_array_equal(table["count"], [3, 3])
    np.testing.assert_array_equal(table["bin_lower"], [0.0, 0.5])
    np.testing.assert_array_equal(table["bin_upper"], [0.5, 1.0])
    assert expected_calibration_error(y, p, n_bins=2) == pytest.approx(7 / 60, rel=1e-12)
    assert maximum_calibration_error(y, p, n_bins=2) == pytest.approx(2 / 15, rel=1e-12)
    assert rms_calibration_error(y, p, n_bins=2) == pytest.approx(math.sqrt(1 / 72), rel=1e-12)
    assert brier_score(y, p) == pytest.approx(7 / 24, rel=1e-12)
    parts = brier_decomposition(y, p, n_bins=2)
    assert parts["reliability"] == pytest.approx(1 / 72, rel=1e-12)
    assert parts["resolution"] == pytest.approx(1 / 36, rel=1e-12)
    assert parts["uncertainty"] == pytest.approx(1 / 4, rel=1e-12)
    # binned Brier 1/72 - 1/36 + 1/4 = 17/72, not 7/24: predictions vary within the bins
    assert parts["brier"] == pytest.approx(17 / 72, rel=1e-12)
    # with weights 2,1,1,1,1,1: bin 0 has W=4, mean_pred .7/4 = .175, frac_pos 1/4, gap .075;
    # bin 1 unchanged (W=3, gap .1): ECE = (4 * .075 + 3 * .1) / 7 = 3/35
    w = [2, 1, 1, 1, 1, 1]
    assert expected_calibration_error(y, p, n_bins=2, sample_weight=w) == pytest.approx(
        3 / 35, rel=1e-12
    )


def test_hand_computed_quantile_edges():
    # unit weights, p = .1 .. .8 (8 rows), 4 bins: the edge for level k/4 is the smallest p
    # with at least 2k rows at or below it: .2, .4, .6
    p = np.arange(1, 9) / 10
    y = [0, 1] * 4
    table = reliability_table(y, p, n_bins=4, strategy="quantile")
    np.testing.assert_allclose(table["bin_upper"], [0.2, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(table["bin_lower"], [0.1, 0.2, 0.4, 0.6])
    np.testing.assert_array_equal(table["count"], [2, 2, 2, 2])
    # weights 5,1,..,1 (W = 12), levels 3, 6, 9: the cumulative weight F is 5 at .1, 6 at .2,
    # 9 at .5, so the edges are .1, .2, .5 and the bins {.1}, {.2}, {.3 .4 .5}, {.6 .7 .8}
    # weigh 5, 1, 3, 3
    w = [5, 1, 1, 1, 1, 1, 1, 1]
    table = reliability_table(y, p, n_bins=4, strategy="quantile", sample_weight=w)
    np.testing.assert_allclose(table["bin_upper"], [0.1, 0.2, 0.5, 0.8])
    np.testing.assert_array_equal(table["weight"], [5, 1, 3, 3])


# --- invariants -------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_calibrated_constant_within_bin_predictor_has_zero_error(strategy):
    # one prediction per uniform bin, v = .05, .15, .., .95, each on 20 rows of which exactly
    # 20 v are positive: every bin's positive rate equals its prediction
    values = np.arange(10) / 10 + 0.05
    p = np.repeat(values, 20)
    y = np.concatenate([np.arange(20) < round(20 * v) for v in values]).astype(int)
    for norm in ["l1", "l2", "max"]:
        assert expected_calibration_error(y, p, strategy=strategy, norm=norm) < 1e-12
    assert brier_decomposition(y, p, strategy=strategy)["reliability"] < 1e-24


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", range(3))
def test_weights_equal_repetition(strategy, seed):
    y, p = _data(n=300, seed=seed)
    # ties and values on the uniform edges, where a bin assignment could differ
    p[:40] = np.round(p[:40], 1)
    w = np.random.default_rng(seed + 10).integers(0, 5, size=y.shape[0])
    weighted = _metrics(y, p, sample_weight=w, strategy=strategy, n_bins=7)
    repeated = _metrics(np.repeat(y, w), np.repeat(p, w), strategy=strategy, n_bins=7)
    assert weighted.keys() == repeated.keys()
    for key in weighted:
        assert weighted[key] == pytest.approx(repeated[key], rel=1e-10, abs=1e-13), key

    table_w = reliability_table(y, p, n_bins=7, strategy=strategy, sample_weight=w)
    table_r = reliability_table(np.repeat(y, w), np.repeat(p, w), n_bins=7, strategy=strategy)
    for key in ["bin_lower", "bin_upper", "mean_predicted", "fraction_positive", "weight"]:
        np.testing.assert_allclose(table_w[key], table_r[key], rtol=1e-12, err_msg=key)
    np.testing.assert_array_equal(table_w["weight"], table_r["count"])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_scaling_all_weights_changes_nothing(strategy):
    y, p = _data(seed=6)
    w = np.random.default_rng(7).integers(1, 4, size=y.shape[0]).astype(float)
    base = _metrics(y, p, sample_weight=w, strategy=strategy)
    scaled = _metrics(y, p, sample_weight=0.1 * w, strategy=strategy)
    # weights are repetitions: the debiased error corrects by the bin's weight minus one
    # and the smooth ECE adds a density floor in units of weight, so neither is invariant
    # to a common scale (tests/test_metrics_smooth.py checks them against repetition)
    for key in sorted(set(base) - {"report_rmsce_debiased", "report_smece"}):
        assert scaled[key] == pytest.approx(base[key], rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_error_ordering_and_bounds(strategy):
    y, p = _data(seed=8)
    ece = expected_calibration_error(y, p, strategy=strategy)
    rms = rms_calibration_error(y, p, strategy=strategy)
    mce = maximum_calibration_error(y, p, strategy=strategy)
    # weighted mean <= weighted quadratic mean <= max
    assert 0 < ece <= rms <= mce <= 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_table_is_consistent(strategy):
    y, p = _data(seed=9)
    w = np.random.default_rng(9).exponential(size=y.shape[0])
    table = reliability_table(y, p, n_bins=8, strategy=strategy, sample_weight=w)
    assert set(table) == {
        "bin_lower",
        "bin_upper",
        "mean_predicted",
        "fraction_positive",
        "weight",
        "count",
    }
    assert table["weight"].sum() == pytest.approx(w.sum())
    assert table["count"].sum() == y.shape[0]
    assert np.all(table["bin_lower"] <= table["mean_predicted"])
    assert np.all(table["mean_predicted"] <= table["bin_upper"])
    assert np.all(np.diff(table["bin_upper"]) > 0)
    # the weighted positive rate of the bins averages back to the base rate
    base_rate = np.sum(w * y) / w.sum()
    assert np.sum(table["weight"] * table["fraction_positive"]) / w.sum() == pytest.approx(
        base_rate
    )


def test_empty_bins_are_dropped():
    table = reliability_table([0, 1, 1], [0.05, 0.07, 0.95], n_bins=10)
    np.testing.assert_allclose(table["bin_lower"], [0.0, 0.9])
    np.testing.assert_array_equal(table["count"], [2, 1])
    # a bin whose only row weighs zero is empty too
    table = reliability_table([0, 1, 1], [0.05, 0.5, 0.95], sample_weight=[1, 0, 1])
    np.testing.assert_array_equal(table["count"], [1, 1])


@pytest.mark.parametrize("n_bins", [3, 7, 10, 16])
def test_quantile_bins_hold_equal_counts(n_bins):
    # unit weights and distinct predictions: edge k sits at the ceil(k n / M)-th prediction,
    # so bin k holds ceil(k n / M) - ceil((k - 1) n / M) rows, floor(n/M) or ceil(n/M)
    rng = np.random.default_rng(n_bins)
    n = 503
    p = rng.uniform(size=n)
    y = rng.integers(0, 2, size=n)
    table = reliability_table(y, p, n_bins=n_bins, strategy="quantile")
    k = np.arange(1, n_bins + 1)
    expected = np.ceil(k * n / n_bins) - np.ceil((k - 1) * n / n_bins)
    np.testing.assert_array_equal(table["count"], expected)


@pytest.mark.parametrize("scale", [0.01, 0.1, 0.3, 0.7])
def test_quantile_bins_with_equal_fractional_weights(scale):
    # equal weights mean unit weights: with M dividing n, every bin holds exactly n/M rows,
    # even though cumulative sums of 0.1 miss the levels k W / M by a rounding error
    for n in range(2, 41):
        p = np.arange(1, n + 1) / (n + 1)
        y = np.arange(n) % 2
        for n_bins in [m for m in range(2, n + 1) if n % m == 0]:
            table = reliability_table(
                y, p, n_bins=n_bins, strategy="quantile", sample_weight=np.full(n, scale)
            )
            np.testing.assert_array_equal(table["count"], np.full(n_bins, n // n_bins))


def test_quantile_bins_hold_near_equal_weight():
    # the edge for level k/M has cumulative weight in [k W/M, k W/M + w_max), so every bin's
    # weight is within w_max of W/M
    rng = np.random.default_rng(11)
    p = rng.beta(0.5, 3.0, size=2000)
    y = rng.integers(0, 2, size=2000)
    w = rng.exponential(size=2000)
    table = reliability_table(y, p, n_bins=10, strategy="quantile", sample_weight=w)
    assert table["weight"].shape == (10,)
    assert np.all(np.abs(table["weight"] - w.sum() / 10) < w.max())


def test_quantile_duplicate_edges_collapse():
    # 60% of the weight on one value: levels .1 .. .6 all land on it
    p = np.r_[np.full(60, 0.3), np.linspace(0.5, 0.9, 40)]
    y = np.arange(100) % 2
    table = reliability_table(y, p, n_bins=10, strategy="quantile")
    assert table["count"][0] == 60
    assert table["count"].sum() == 100
    assert np.all(np.diff(table["bin_upper"]) > 0)


@pytest.mark.parametrize("n_bins", [1, 4, 10])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_decomposition_is_exact_for_constant_within_bin_predictions(n_bins, strategy):
    rng = np.random.default_rng(n_bins)
    centres = (np.arange(n_bins) + 0.5) / n_bins
    if strategy == "uniform":
        # at most n_bins distinct predictions, one per uniform bin (bin centres)
        p = rng.choice(centres, size=400)
        w = rng.exponential(size=400)
    else:
        # n_bins distinct predictions of equal weight: the level-k/M quantile is the k-th
        # value, so again one value per bin
        p = np.repeat(centres, 400 // n_bins)
        w = np.full(p.shape[0], 0.5)
    y = (rng.uniform(size=p.shape[0]) < p**2).astype(int)
    parts = brier_decomposition(y, p, n_bins=n_bins, strategy=strategy, sample_weight=w)
    assert parts["brier"] == parts["reliability"] - parts["resolution"] + parts["uncertainty"]
    assert parts["brier"] == pytest.approx(brier_score(y, p, sample_weight=w), abs=1e-12)
    base_rate = np.sum(w * y) / w.sum()
    assert parts["uncertainty"] == pytest.approx(base_rate * (1 - base_rate), rel=1e-12)


@pytest.mark.parametrize("n_bins", [5, 20, 50])
def test_decomposition_is_close_for_varying_predictions(n_bins):
    # the gap is sum_b (W_b/W) (var_b(p) - 2 cov_b(y, p)); in a bin of width h, var_b(p) <=
    # h^2/4 and |cov_b(y, p)| <= sd(y) sd(p) <= 1/2 * h/2
    y, p = _data(n=3000, seed=n_bins, calibrated=True)
    parts = brier_decomposition(y, p, n_bins=n_bins)
    gap = abs(parts["brier"] - brier_score(y, p))
    assert gap <= 1 / (4 * n_bins**2) + 1 / (2 * n_bins)
    # for y drawn independently of p inside a bin the covariance term is small: the gap is
    # then about sum_b (W_b/W) var_b(p) <= h^2/4 plus noise
    assert gap < 1 / (4 * n_bins**2) + 0.01


@pytest.mark.parametrize("weighted", [False, True])
def test_label_encodings_give_the_same_metrics(weighted):
    y, p = _data(n=200, seed=12)
    w = np.random.default_rng(12).integers(0, 3, size=200) if weighted else None
    reference = _metrics(y, p, sample_weight=w)
    encodings = [
        (y.astype(bool), None),
        (2 * y - 1, None),
        (y.astype(float), None),
        (np.where(y == 1, "spam", "ham"), "spam"),
        (np.where(y == 1, "ham", "spam"), "ham"),  # positive label sorts first
        (np.where(y == 1, 7, 3), 7),
        (np.where(y == 1, 3, 7), 3),
        (np.where(y == 1, "yes", "no").astype(object), "yes"),
        (y.reshape(-1, 1), None),
    ]
    for labels, pos_label in encodings:
        got = _metrics(labels, p, sample_weight=w, pos_label=pos_label)
        for key in reference:
            assert got[key] == pytest.approx(reference[key], rel=1e-12, abs=1e-15), key


def test_negative_class_as_positive_with_flipped_probabilities():
    # predicting the other class with 1 - p is the same forecast: Brier, log loss and the
    # per-bin gaps are unchanged (uniform edges are symmetric, but a prediction on an edge
    # would switch sides, so keep them off the edges)
    y, p = _data(n=300, seed=13)
    off_edges = np.abs(p * 10 - np.round(p * 10)) > 1e-9
    y, p = y[off_edges], p[off_edges]
    assert brier_score(y, 1 - p, pos_label=0) == pytest.approx(brier_score(y, p), rel=1e-12)
    assert log_loss(y, 1 - p, pos_label=0) == pytest.approx(log_loss(y, p), rel=1e-12)
    assert expected_calibration_error(y, 1 - p, pos_label=0) == pytest.approx(
        expected_calibration_error(y, p), rel=1e-9
    )


def test_single_class_is_allowed():
    p = np.array([0.1, 0.2, 0.6, 0.9])
    # all negatives: every bin's positive rate is 0, the gap is the mean prediction
    assert expected_calibration_error([0, 0, 0, 0], p, n_bins=1) == pytest.approx(0.45)
    assert expected_calibration_error(["no"] * 4, p, n_bins=1, pos_label="yes") == (
        pytest.approx(0.45)
    )
    # all positives: the gap is 1 - mean prediction
    assert expected_calibration_error([1, 1, 1, 1], p, n_bins=1) == pytest.approx(0.55)
    report = calibration_report(np.zeros(4, dtype=int), p)
    assert math.isnan(report["auc"])
    assert report["brier"] == pytest.approx(np.mean(p**2))
    assert brier_decomposition([0, 0, 0, 0], p)["uncertainty"] == 0.0
    # two classes, but one of them carries no weight
    report = calibration_report([0, 0, 1, 1], p, sample_weight=[1, 1, 0, 0])
    assert math.isnan(report["auc"])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float32_input(strategy):
    y, p = _data(seed=14)
    p32 = p.astype(np.float32)
    p64 = p32.astype(np.float64)
    for func in [expected_calibration_error, maximum_calibration_error, rms_calibration_error]:
        result = func(y, p32, strategy=strategy)
        assert isinstance(result, float)
        assert result == func(y, p64, strategy=strategy)
    table = reliability_table(y, p32, strategy=strategy)
    assert table["mean_predicted"].dtype == np.float64
    assert brier_score(y, p32) == brier_score(y, p64)
    assert brier_score(y, p32) == pytest.approx(brier_score_loss(y, p32), rel=1e-6)


def test_column_vector_prediction_is_accepted():
    y, p = _data(n=50, seed=15)
    assert brier_score(y, p.reshape(-1, 1)) == brier_score(y, p)


# --- bad input --------------------------------------------------------------------------------

ALL_FUNCS = [
    reliability_table,
    expected_calibration_error,
    rms_calibration_error,
    maximum_calibration_error,
    brier_score,
    log_loss,
    brier_decomposition,
    calibration_report,
]
BINNED_FUNCS = [
    reliability_table,
    expected_calibration_error,
    rms_calibration_error,
    maximum_calibration_error,
    brier_decomposition,
    calibration_report,
]
STRATEGY_FUNCS = [f for f in BINNED_FUNCS if f is not calibration_report]

Y = np.array([0, 1, 0, 1])
P = np.array([0.1, 0.8, 0.3, 0.6])


@pytest.mark.parametrize("func", ALL_FUNCS)
@pytest.mark.parametrize(
    "y_true, y_prob, kwargs, match",
    [
        (Y, [0.1, np.nan, 0.3, 0.6], {}, "y_prob contains NaN"),
        (Y, [0.1, np.inf, 0.3, 0.6], {}, "y_prob contains inf"),
        (Y, [0.1, 1.5, 0.3, 0.6], {}, r"y_prob .*\[0, 1\].*max=1\.5"),
        (Y, [-0.2, 0.5, 0.3, 0.6], {}, r"y_prob .*min=-0\.2"),
        (Y, np.c_[1 - P, P], {}, r"y_prob has shape \(4, 2\).*positive class"),
        (Y, P.reshape(2, 2, 1), {}, "y_prob must be 1-D"),
        (Y, np.array(["a", "b", "c", "d"]), {}, "y_prob must hold real numbers"),
        (Y, P[:3], {}, "y_true and y_prob have different lengths: 4 and 3"),
        ([], [], {}, "y_true and y_prob are empty"),
        (np.c_[Y, Y], P, {}, "y_true must be 1-D"),
        (Y, P, {"sample_weight": [1, 1, 1]}, "sample_weight has 3 entries"),
        (Y, P, {"sample_weight": [1, -1, 1, 1]}, "sample_weight must be non-negative"),
        (Y, P, {"sample_weight": [0, 0, 0, 0]}, "sample_weight sums to zero"),
        (Y, P, {"sample_weight": [1, np.nan, 1, 1]}, "sample_weight contains NaN"),
        (Y, P, {"sample_weight": np.ones((4, 2))}, "sample_weight must be 1-D"),
        ([0, 1, 2, 1], P, {}, "y_true must hold at most two distinct labels"),
        (["a", "b", "a", "b"], P, {}, "pass pos_label"),
        ([1, 2, 1, 2], P, {}, "pass pos_label"),
        (["a", "b", "a", "b"], P, {"pos_label": "c"}, "pos_label='c' is not one of"),
        (Y, P, {"pos_label": 2}, "pos_label=2 is not one of"),
        ([0.0, np.nan, 1.0, 1.0], P, {}, "y_true contains NaN"),
        (np.array([0, "a", 1, 1], dtype=object), P, {}, "y_true mixes labels"),
    ],
)
def test_bad_input_raises(func, y_true, y_prob, kwargs, match):
    with pytest.raises(ValueError, match=match):
        func(y_true, y_prob, **kwargs)


@pytest.mark.parametrize("func", BINNED_FUNCS)
@pytest.mark.parametrize("n_bins", [0, -3, 2.5, "10", True, None])
def test_bad_n_bins_raises(func, n_bins):
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        func(Y, P, n_bins=n_bins)


@pytest.mark.parametrize("func", STRATEGY_FUNCS)
def test_bad_strategy_raises(func):
    with pytest.raises(ValueError, match=r"strategy must be one of \['uniform', 'quantile'\]"):
        func(Y, P, strategy="kmeans")


@pytest.mark.parametrize("norm", ["l3", "L1", None])
def test_bad_norm_raises(norm):
    with pytest.raises(ValueError, match=r"norm must be one of \['l1', 'l2', 'max'\]"):
        expected_calibration_error(Y, P, norm=norm)


@pytest.mark.parametrize("eps", ["tiny", -1e-3, 0.5, None])
def test_bad_eps_raises(eps):
    with pytest.raises(ValueError, match="eps must be 'auto' or a float"):
        log_loss(Y, P, eps=eps)


def test_numpy_integer_n_bins_is_accepted():
    assert expected_calibration_error(Y, P, n_bins=np.int64(2)) == expected_calibration_error(
        Y, P, n_bins=2
    )


# --- properties -------------------------------------------------------------------------------


@st.composite
def weighted_problems(draw):
    n = draw(st.integers(1, 25))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    # include the uniform edges, 0 and 1 so that the edge conventions are exercised
    prob = st.one_of(
        st.floats(0.0, 1.0, allow_nan=False),
        st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.7, 1.0]),
    )
    p = np.array(draw(st.lists(prob, min_size=n, max_size=n)))
    w = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    if w.sum() == 0:
        w[draw(st.integers(0, n - 1))] = 1
    n_bins = draw(st.integers(1, 12))
    return y, p, w, n_bins


@settings(max_examples=50, deadline=None)
@given(problem=weighted_problems(), strategy=st.sampled_from(STRATEGIES))
def test_property_bounds_and_repetition(problem, strategy):
    y, p, w, n_bins = problem
    weighted = _metrics(y, p, sample_weight=w, strategy=strategy, n_bins=n_bins)
    tol = 1e-12
    assert -tol <= weighted["ece"] <= weighted["rmsce"] + tol
    assert weighted["rmsce"] <= weighted["mce"] + tol
    assert weighted["mce"] <= 1 + tol
    assert 0 <= weighted["brier"] <= 1
    assert weighted["log_loss"] >= 0
    assert weighted["reliability"] >= 0 and weighted["resolution"] >= 0
    assert 0 <= weighted["uncertainty"] <= 0.25

    repeated = _metrics(np.repeat(y, w), np.repeat(p, w), strategy=strategy, n_bins=n_bins)
    for key in weighted:
        if key == "report_auc" and math.isnan(weighted[key]):
            assert math.isnan(repeated[key])
            continue
        assert weighted[key] == pytest.approx(repeated[key], rel=1e-9, abs=1e-12), key


@settings(max_examples=50, deadline=None)
@given(problem=weighted_problems())
def test_property_decomposition_gap_bound(problem):
    y, p, w, n_bins = problem
    parts = brier_decomposition(y, p, n_bins=n_bins, sample_weight=w)
    gap = abs(parts["brier"] - brier_score(y, p, sample_weight=w))
    assert gap <= 1 / (4 * n_bins**2) + 1 / (2 * n_bins) + 1e-12


# --- grid_calibration_error (seed 002, section 5.2) --------------------------------------------


def _grid_data(n=3000, n_cols=2, seed=0):
    rng = np.random.default_rng(seed)
    coords = rng.uniform(size=(n, n_cols))
    truth = coords.mean(axis=1) ** 1.5
    y = (rng.uniform(size=n) < truth).astype(int)
    p = np.clip(coords.mean(axis=1) + rng.normal(scale=0.05, size=n), 0.0, 1.0)
    return y, p, coords


def test_grid_hand_computed_case():
    # 3 x 3 grid, cells right-closed: 1/3 belongs to the first cell, 0 and 1 to the end cells
    coords = np.array(
        [[0.0, 0.0], [1 / 3, 0.2], [0.3, 0.1], [0.5, 0.5], [0.6, 0.4], [0.6, 0.6], [1.0, 0.9]]
    )
    y = np.array([0, 0, 1, 1, 0, 1, 1])
    p = np.array([0.1, 0.2, 0.3, 0.5, 0.4, 0.6, 0.8])
    res = grid_calibration_error(y, p, coords, n_bins=3, min_count=1)
    cells = res["cells"]
    np.testing.assert_array_equal(cells["index"], [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_allclose(cells["centre"], [[1 / 6, 1 / 6], [0.5, 0.5], [5 / 6, 5 / 6]])
    np.testing.assert_allclose(cells["fraction_positive"], [1 / 3, 2 / 3, 1.0])
    np.testing.assert_allclose(cells["predicted"], [0.2, 0.5, 0.8])
    np.testing.assert_allclose(cells["gap"], [2 / 15, 1 / 6, 0.2])
    np.testing.assert_array_equal(cells["count"], [3, 3, 1])
    assert res["n_cells"] == 3
    assert res["mce"] == pytest.approx(0.2, abs=1e-15)
    assert res["ece"] == pytest.approx((2 / 15 + 1 / 6 + 0.2) / 3, abs=1e-15)
    # the paper's form: f_hat at the centres
    at_centres = grid_calibration_error(y, lambda c: c.mean(axis=1), coords, n_bins=3, min_count=1)
    np.testing.assert_allclose(at_centres["cells"]["predicted"], [1 / 6, 0.5, 5 / 6])
    assert at_centres["mce"] == pytest.approx(1 / 6, abs=1e-15)
    np.testing.assert_allclose(at_centres["cells"]["gap"], [1 / 6, 1 / 6, 1 / 6])
    assert at_centres["ece"] == pytest.approx(1 / 6, abs=1e-15)


def test_grid_min_count_keeps_cells_at_the_threshold_and_drops_below():
    y, p, coords = _grid_data(n=400, seed=1)
    counts = grid_calibration_error(y, p, coords, n_bins=4, min_count=0)["cells"]["count"]
    threshold = int(np.sort(counts)[counts.shape[0] // 2])  # a count that occurs
    res = grid_calibration_error(y, p, coords, n_bins=4, min_count=threshold)
    assert res["n_cells"] == int(np.sum(counts >= threshold)) < counts.shape[0]
    # the threshold is inclusive
    assert res["cells"]["count"].min() == threshold
    full = grid_calibration_error(y, p, coords, n_bins=4, min_count=0)
    assert res["mce"] <= full["mce"]
    nothing = grid_calibration_error(y, p, coords, n_bins=4, min_count=len(y) + 1)
    assert nothing["n_cells"] == 0
    assert math.isnan(nothing["mce"]) and math.isnan(nothing["ece"])


def test_grid_min_count_uses_the_weighted_count():
    coords = np.array([[0.1], [0.2], [0.9]])
    y, p = np.array([0, 1, 1]), np.array([0.5, 0.5, 0.9])
    res = grid_calibration_error(y, p, coords, n_bins=2, min_count=3, sample_weight=[1, 2, 2])
    np.testing.assert_array_equal(res["cells"]["index"], [[0]])
    assert res["cells"]["weight"][0] == 3 and res["cells"]["count"][0] == 2
    assert res["mce"] == pytest.approx(abs(2 / 3 - 0.5))


@pytest.mark.parametrize("as_callable", [False, True])
def test_grid_weights_equal_repetition(as_callable):
    y, p, coords = _grid_data(n=600, n_cols=3, seed=2)
    w = np.random.default_rng(3).integers(0, 4, size=y.shape[0])
    y_prob = (lambda c: c.mean(axis=1) ** 1.2) if as_callable else p
    weighted = grid_calibration_error(y, y_prob, coords, n_bins=3, min_count=20, sample_weight=w)
    y_prob_rep = y_prob if as_callable else np.repeat(p, w)
    repeated = grid_calibration_error(
        np.repeat(y, w), y_prob_rep, np.repeat(coords, w, axis=0), n_bins=3, min_count=20
    )
    assert weighted["n_cells"] == repeated["n_cells"] > 0
    for key in ("mce", "ece"):
        assert weighted[key] == pytest.approx(repeated[key], rel=1e-12, abs=1e-15)
    # "count" counts distinct rows, so it is the one entry that differs
    for key in ("index", "predicted", "fraction_positive", "weight"):
        np.testing.assert_allclose(weighted["cells"][key], repeated["cells"][key], rtol=1e-12)


@pytest.mark.parametrize("n_cols", [1, 2, 3])
def test_grid_callable_and_array_agree_for_predictions_constant_in_cells(n_cols):
    y, _, coords = _grid_data(n=2000, n_cols=n_cols, seed=4)
    n_bins = 5

    def f_hat(points):
        return points.mean(axis=1) ** 0.8

    # each row predicts f_hat at its own cell's centre
    cell = np.clip(np.ceil(coords * n_bins) - 1, 0, n_bins - 1)
    p = f_hat((cell + 0.5) / n_bins)
    from_rows = grid_calibration_error(y, p, coords, n_bins=n_bins, min_count=10)
    at_centres = grid_calibration_error(y, f_hat, coords, n_bins=n_bins, min_count=10)
    assert from_rows["n_cells"] == at_centres["n_cells"] > 0
    assert from_rows["mce"] == pytest.approx(at_centres["mce"], rel=1e-12)
    assert from_rows["ece"] == pytest.approx(at_centres["ece"], rel=1e-12)
    np.testing.assert_allclose(
        from_rows["cells"]["predicted"], at_centres["cells"]["predicted"], rtol=1e-12
    )


def test_grid_one_axis_on_the_predictions_is_the_reliability_table():
    y, p = _data(seed=5)
    res = grid_calibration_error(y, p, p, n_bins=10, min_count=0)
    table = reliability_table(y, p, n_bins=10)
    np.testing.assert_allclose(res["cells"]["fraction_positive"], table["fraction_positive"])
    np.testing.assert_allclose(res["cells"]["predicted"], table["mean_predicted"])
    assert res["mce"] == pytest.approx(maximum_calibration_error(y, p, n_bins=10), rel=1e-12)


def test_grid_pos_label_and_string_labels():
    y, p, coords = _grid_data(n=500, seed=6)
    words = np.where(y == 1, "sick", "well")
    ref = grid_calibration_error(y, p, coords, n_bins=3, min_count=5)
    res = grid_calibration_error(words, p, coords, n_bins=3, min_count=5, pos_label="sick")
    assert res["mce"] == ref["mce"] and res["ece"] == ref["ece"]


def test_grid_calibrated_predictions_score_near_the_noise_floor():
    # a calibrator equal to the truth scores only the sampling noise of the cell rates
    rng = np.random.default_rng(7)
    coords = rng.uniform(size=(200_000, 2))
    truth = 0.1 + 0.8 * coords[:, 0] * coords[:, 1]
    y = (rng.uniform(size=truth.shape[0]) < truth).astype(int)
    res = grid_calibration_error(y, truth, coords, n_bins=10, min_count=1000)
    assert res["n_cells"] == 100
    # a cell of ~2000 rows has a standard error of at most 0.5 / sqrt(2000) = 0.011
    assert res["ece"] < 0.015 and res["mce"] < 0.05
    worse = grid_calibration_error(y, np.clip(truth + 0.05, 0, 1), coords, min_count=1000)
    assert worse["ece"] > res["ece"] + 0.03


GRID_COORDS = np.array([[0.1, 0.2], [0.4, 0.5], [0.9, 0.8], [0.3, 0.7]])


@pytest.mark.parametrize(
    "y_prob, coords, kwargs, match",
    [
        (P, GRID_COORDS * 2, {}, r"coords must lie in \[0, 1\].*max=1\.8"),
        (P, GRID_COORDS - 0.2, {}, r"coords must lie in \[0, 1\].*min=-0\.1"),
        (P, np.where(GRID_COORDS > 0.85, np.nan, GRID_COORDS), {}, "coords contains NaN"),
        (P, GRID_COORDS[:3], {}, "coords has 3 rows but y_true has 4"),
        (P, GRID_COORDS[:, :, None], {}, r"coords must be an \(n_samples, M\) array"),
        (P, np.array([["a", "b"]] * 4), {}, "coords must hold real numbers"),
        (P, GRID_COORDS, {"min_count": -1}, "min_count must be a finite number >= 0"),
        (P, GRID_COORDS, {"min_count": np.inf}, "min_count must be a finite number >= 0"),
        (P, GRID_COORDS, {"min_count": "10"}, "min_count must be a finite number >= 0"),
        (P, GRID_COORDS, {"n_bins": 0}, "n_bins must be an integer >= 1"),
        ([0.1, 1.5, 0.3, 0.6], GRID_COORDS, {}, r"y_prob .*\[0, 1\].*max=1\.5"),
        (P[:3], GRID_COORDS, {}, "y_true and y_prob have different lengths"),
        (P, GRID_COORDS, {"sample_weight": [1, -1, 1, 1]}, "sample_weight must be non-negative"),
        (lambda c: c[:, 0] * 2, GRID_COORDS, {"min_count": 0}, r"callable y_prob .*max=1\.7"),
        (lambda c: c[:1, 0], GRID_COORDS, {"min_count": 0}, "returned 1 values for 4 cell"),
        (lambda c: np.c_[1 - c[:, 0], c[:, 0]], GRID_COORDS, {"min_count": 0}, "positive class"),
        (lambda c: c[:, 0], GRID_COORDS[:3], {}, "coords has 3 rows but y_true has 4"),
    ],
)
def test_grid_bad_input_raises(y_prob, coords, kwargs, match):
    with pytest.raises(ValueError, match=match):
        grid_calibration_error(Y, y_prob, coords, **kwargs)


def test_grid_callable_bad_labels_raise():
    with pytest.raises(ValueError, match="pass pos_label"):
        grid_calibration_error(["a", "b", "a", "b"], lambda c: c[:, 0], GRID_COORDS)
    with pytest.raises(ValueError, match="y_true is empty"):
        grid_calibration_error([], lambda c: c[:, 0], np.zeros((0, 2)))
