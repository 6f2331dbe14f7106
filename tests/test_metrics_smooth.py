"""Smooth ECE, debiased L2 error, bootstrap intervals, log-loss split: properties and truths.

The smooth ECE is checked against the reference implementation (``relplot``, a dev extra);
the other measures against quantities known in closed form on generated data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from benchmarks._realdata import DEFAULT_DATA_DIR
from bernonnx.metrics import (
    calibration_report,
    classwise_smooth_calibration_error,
    expected_calibration_error,
    log_loss,
    log_loss_decomposition,
    multiclass_log_loss,
    smooth_calibration_curve,
    smooth_calibration_error,
    top_label_smooth_calibration_error,
)


def _relplot():
    return pytest.importorskip(
        "relplot",
        reason="relplot (the smooth ECE reference) is not installed: pip install -e '.[dev]'",
    )


def _draws(seed, n, power=1.0, shape=1.5):
    """p with mass near 0 (a Beta-like skew); y ~ Bernoulli(p ** power)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n) ** shape
    y = (rng.uniform(size=n) < p**power).astype(float)
    return y, p


# --------------------------------------------------------------------------- smooth ECE


@pytest.mark.parametrize("n", [5, 60, 1000, 30_000])
@pytest.mark.parametrize("power", [1.0, 1.2, 3.0, 0.3])
def test_smooth_ece_equals_relplot(n, power):
    relplot = _relplot()
    y, p = _draws(n + int(10 * power), n, power)
    assert smooth_calibration_error(y, p) == pytest.approx(relplot.smECE(p, y), abs=1e-6)


def test_smooth_ece_equals_relplot_at_the_edges_and_fixed_widths():
    relplot = _relplot()
    rng = np.random.default_rng(3)
    # predictions exactly 0 and 1 (the last grid cell) and a constant prediction
    p = np.r_[np.zeros(50), np.ones(50), rng.uniform(size=200)]
    y = (rng.uniform(size=300) < 0.5).astype(float)
    assert smooth_calibration_error(y, p) == pytest.approx(relplot.smECE(p, y), abs=1e-6)
    p = np.full(100, 0.3)
    assert smooth_calibration_error(y[:100], p) == pytest.approx(
        relplot.smECE(p, y[:100]), abs=1e-6
    )
    y, p = _draws(4, 2000, 2.0)
    for sigma in (0.003, 0.05, 0.5, 1.0):
        assert smooth_calibration_error(y, p, bandwidth=sigma) == pytest.approx(
            relplot.smECE_sigma(p, y, sigma), abs=1e-6
        )
    _, width = relplot.smECE(p, y, return_width=True)
    assert smooth_calibration_curve(y, p, confidence=None)["bandwidth"] == width


def _shared_predictions():
    """Held-out probabilities of a logistic regression on each shared table."""
    pd = pytest.importorskip("pandas")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    tables = {
        "magic_gamma_telescope.csv.gz": ("class", "h"),
        "uci_credit_card.csv.gz": ("default.payment.next.month", 1),
    }
    if not DEFAULT_DATA_DIR.is_dir():
        pytest.skip(f"shared data folder {DEFAULT_DATA_DIR} is absent")
    out = {}
    for name, (label, positive) in tables.items():
        frame = pd.read_csv(DEFAULT_DATA_DIR / name)
        y = (frame.pop(label) == positive).to_numpy().astype(int)
        X = frame.drop(columns=[c for c in ("ID",) if c in frame]).to_numpy(float)
        X_fit, X_test, y_fit, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
        out[name] = (y_test, model.fit(X_fit, y_fit).predict_proba(X_test)[:, 1])
    return out


def test_smooth_ece_equals_relplot_on_the_shared_tables():
    relplot = _relplot()
    for name, (y, p) in _shared_predictions().items():
        assert smooth_calibration_error(y, p) == pytest.approx(
            relplot.smECE(p, y.astype(float)), abs=1e-6
        ), name


def test_top_label_and_classwise_variants():
    relplot = _relplot()
    rng = np.random.default_rng(5)
    logits = rng.normal(scale=2.0, size=(3000, 4))
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=row**0.7 / (row**0.7).sum()) for row in P])
    f, correct = relplot.multiclass_logits_to_confidences(P, y, probs=True)
    assert top_label_smooth_calibration_error(y, P) == pytest.approx(
        relplot.smECE(f, correct), abs=1e-6
    )
    classwise = np.mean([relplot.smECE(P[:, k], (y == k).astype(float)) for k in range(4)])
    assert classwise_smooth_calibration_error(y, P) == pytest.approx(classwise, abs=1e-6)
    # two classes: the binary smooth ECE of the positive column
    yb, p = _draws(6, 800, 2.0)
    assert classwise_smooth_calibration_error(yb, np.c_[1 - p, p]) == pytest.approx(
        smooth_calibration_error(yb, p), abs=1e-12
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 400),
    power=st.sampled_from([0.5, 1.0, 2.0]),
    repeat=st.integers(0, 4),
)
def test_weight_k_is_the_row_repeated_k_times(seed, n, power, repeat):
    y, p = _draws(seed, n, power)
    w = np.ones(n)
    w[::3] = repeat
    rows = np.repeat(np.arange(n), w.astype(int))
    if rows.size == 0:
        return
    # the automatic bandwidth too: the curve reports the width the search chose
    weighted = smooth_calibration_curve(y, p, sample_weight=w, confidence=None)
    repeated = smooth_calibration_curve(y[rows], p[rows], confidence=None)
    assert weighted["bandwidth"] == repeated["bandwidth"]
    assert weighted["smooth_ece"] == pytest.approx(repeated["smooth_ece"], rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(
        weighted["fraction_positive"], repeated["fraction_positive"], rtol=1e-9, atol=1e-12
    )
    kw = dict(n_bins=5, strategy="quantile", norm="l2", debias=True, squared=True)
    assert expected_calibration_error(y, p, sample_weight=w, **kw) == pytest.approx(
        expected_calibration_error(y[rows], p[rows], **kw), rel=1e-9, abs=1e-12
    )


def test_smooth_ece_tracks_the_truth():
    # y ~ Bernoulli(p^2), p uniform: E|p - p^2| = 1/6; calibrated draws: near 0
    y, p = _draws(7, 200_000, 2.0, shape=1.0)
    assert smooth_calibration_error(y, p) == pytest.approx(1 / 6, abs=0.01)
    y, p = _draws(8, 200_000, 1.0, shape=1.0)
    assert smooth_calibration_error(y, p) < 0.01


def test_smooth_curve_band_is_seeded_and_ordered():
    y, p = _draws(9, 1500, 2.0)
    a = smooth_calibration_curve(y, p, n_resamples=30, random_state=1)
    b = smooth_calibration_curve(y, p, n_resamples=30, random_state=1)
    np.testing.assert_array_equal(a["lower"], b["lower"])
    assert np.all(a["lower"] <= a["upper"])
    assert a["density"].mean() == pytest.approx(1.0)
    # the truth E[y | p] = p^2 lies inside the band where the data are dense
    inside = (a["lower"] <= a["mesh"] ** 2 + 0.02) & (a["mesh"] ** 2 - 0.02 <= a["upper"])
    assert inside[(a["mesh"] > 0.1) & (a["mesh"] < 0.8)].mean() > 0.8


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, "wide", True])
def test_bad_bandwidth(bad):
    with pytest.raises(ValueError, match="bandwidth"):
        smooth_calibration_error([0, 1], [0.2, 0.8], bandwidth=bad)


# --------------------------------------------------------------------------- debiased L2


def test_true_l2_error_of_the_known_miscalibration():
    # y ~ Bernoulli(p^1.2), p ~ U(0, 1): the L2 calibration error is
    # sqrt(int_0^1 (p - p^1.2)^2 dp) = sqrt(1/3 - 2/3.2 + 1/3.4)
    square, _ = quad(lambda t: (t - t**1.2) ** 2, 0.0, 1.0, epsabs=1e-14)
    assert math.sqrt(square) == pytest.approx(math.sqrt(1 / 3 - 2 / 3.2 + 1 / 3.4), rel=1e-10)
    assert math.sqrt(square) == pytest.approx(0.0495, abs=5e-5)


def test_debiased_l2_is_near_zero_on_calibrated_draws():
    kw = dict(n_bins=15, strategy="quantile", norm="l2", squared=True)
    plain, debiased = [], []
    for seed in range(60):
        y, p = _draws(seed, 2000, 1.0, shape=1.0)
        plain.append(expected_calibration_error(y, p, **kw))
        debiased.append(expected_calibration_error(y, p, debias=True, **kw))
    # the plug-in square has expectation about n_bins * mean(p(1-p)) / n = 1.25e-3
    assert np.mean(plain) > 1e-3
    # the debiased one is zero in expectation: within three standard errors of it
    assert abs(np.mean(debiased)) < 3 * np.std(debiased) / np.sqrt(len(debiased))
    assert abs(np.mean(debiased)) < 0.05 * np.mean(plain)


def test_debiased_l2_lands_within_ten_percent_of_the_truth():
    truth = math.sqrt(1 / 3 - 2 / 3.2 + 1 / 3.4)  # 0.04951
    y, p = _draws(11, 100_000, 1.2, shape=1.0)
    kw = dict(n_bins=15, strategy="quantile", norm="l2")
    assert expected_calibration_error(y, p, debias=True, **kw) == pytest.approx(truth, rel=0.1)


def test_debias_needs_l2():
    with pytest.raises(ValueError, match="norm='l2'"):
        expected_calibration_error([0, 1], [0.2, 0.8], debias=True)
    with pytest.raises(ValueError, match="norm='l2'"):
        expected_calibration_error([0, 1], [0.2, 0.8], norm="max", squared=True)


# --------------------------------------------------------------------------- intervals


def test_report_intervals_are_reproducible_and_bracket_the_estimate():
    y, p = _draws(12, 800, 2.0)
    kw = dict(confidence=0.9, n_resamples=40, random_state=3)
    a, b = calibration_report(y, p, **kw), calibration_report(y, p, **kw)
    assert a == b
    assert "n_distinct_ci" not in a
    for key in ("ece", "rmsce_debiased", "smece", "brier", "log_loss", "auc"):
        lo, hi = a[f"{key}_ci"]
        assert lo <= hi
        assert lo <= a[key] + 0.02 and a[key] - 0.02 <= hi, key
    # without confidence the report is the one it always was
    assert "smece_ci" not in calibration_report(y, p)
    with pytest.raises(ValueError, match="confidence"):
        calibration_report(y, p, confidence=1.5)


def test_multiclass_report_intervals():
    rng = np.random.default_rng(13)
    P = rng.dirichlet(np.ones(3), size=600)
    y = np.array([rng.choice(3, p=row) for row in P])
    report = calibration_report(y, P, confidence=0.8, n_resamples=20, random_state=0)
    assert report["smece"] == top_label_smooth_calibration_error(y, P)
    lo, hi = report["classwise_ece_ci"]
    assert lo <= hi


@pytest.mark.slow
def test_ninety_percent_intervals_cover_the_truth():
    # y ~ Bernoulli(p^2), p ~ U(0, 1): Brier 1/6, log loss 1/2 (both in closed form);
    # the smooth ECE's population value is computed on two million draws
    truth = {"brier": 1 / 6, "log_loss": 0.5}
    y, p = _draws(14, 2_000_000, 2.0, shape=1.0)
    truth["smece"] = smooth_calibration_error(y, p)
    repeats, covered = 30, dict.fromkeys(truth, 0)
    for seed in range(repeats):
        y, p = _draws(100 + seed, 1500, 2.0, shape=1.0)
        report = calibration_report(y, p, confidence=0.9, n_resamples=60, random_state=seed)
        for key, value in truth.items():
            lo, hi = report[f"{key}_ci"]
            covered[key] += lo <= value <= hi
    for key, count in covered.items():
        assert count >= 0.8 * repeats, (key, count)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


#: miscalibrated models: the probability of a positive given the prediction p
_MISCALIBRATED = {
    "power": lambda p: p**1.15,
    "underconfident": lambda p: _sigmoid(1.5 * np.log(p / (1 - p))),
}


@pytest.mark.parametrize("calibrated", [True, False])
def test_interval_contains_the_printed_estimate(calibrated):
    # the demo printed smECE 0.01365 beside [0.00631, 0.01205]: near a calibrated model the
    # basic interval lies below its own estimate; the reported interval never does
    rng = np.random.default_rng(22)
    for seed in range(4):
        p = rng.uniform(0.02, 0.98, size=3000)
        y = rng.uniform(size=p.size) < (p if calibrated else _MISCALIBRATED["power"](p))
        report = calibration_report(y, p, confidence=0.9, n_resamples=30, random_state=seed)
        for key in ("ece", "smece", "rmsce", "mce", "brier", "log_loss", "auc"):
            lo, hi = report[f"{key}_ci"]
            assert lo <= report[key] <= hi, (key, report[key], lo, hi)
        curve = smooth_calibration_curve(y, p, n_resamples=30, random_state=seed)
        lo, hi = curve["smooth_ece_ci"]
        assert lo <= curve["smooth_ece"] <= hi


@pytest.mark.slow
def test_smooth_ece_interval_covers_its_population_value_on_3000_rows():
    # labels drawn from p^1.15: the model where the basic interval alone covered 78%
    # (the underconfident one, 85-95% either way, is left to the containment test: the
    # suite's time budget)
    truth_of = _MISCALIBRATED["power"]
    rng = np.random.default_rng(23)
    p = rng.uniform(0.02, 0.98, size=2_000_000)
    truth = smooth_calibration_error(rng.uniform(size=p.size) < truth_of(p), p)
    repeats, covered = 30, 0
    for seed in range(repeats):
        p = rng.uniform(0.02, 0.98, size=3000)
        y = rng.uniform(size=p.size) < truth_of(p)
        curve = smooth_calibration_curve(y, p, n_resamples=60, random_state=seed, n_points=2)
        lo, hi = curve["smooth_ece_ci"]
        covered += lo <= truth <= hi
    assert covered >= 0.8 * repeats, (truth, covered)


# --------------------------------------------------------------------------- log loss split


def test_log_loss_split_adds_up_and_vanishes_when_calibrated():
    rng = np.random.default_rng(15)
    logit = rng.normal(scale=1.5, size=20_000)
    y = rng.uniform(size=logit.size) < 1 / (1 + np.exp(-logit))
    calibrated = log_loss_decomposition(y, 1 / (1 + np.exp(-logit)), method="temperature")
    assert calibrated["calibration"] + calibrated["refinement"] == calibrated["log_loss"]
    assert calibrated["log_loss"] == log_loss(y, 1 / (1 + np.exp(-logit)))
    assert 0.0 <= calibrated["calibration"] < 5e-4
    # twice the true log-odds: the temperature finds 2 and the split names the excess
    over = log_loss_decomposition(y, 1 / (1 + np.exp(-2 * logit)), method="temperature")
    assert over["temperature"] == pytest.approx(2.0, rel=0.05)
    assert over["refinement"] == pytest.approx(calibrated["refinement"], abs=1e-3)
    assert over["calibration"] > 0.03


def test_log_loss_split_weights_and_multiclass():
    rng = np.random.default_rng(16)
    P = rng.dirichlet(np.ones(3), size=500)
    y = np.array([rng.choice(3, p=row) for row in P])
    w = rng.integers(0, 3, size=500)
    rows = np.repeat(np.arange(500), w)
    Q = P**1.5 / (P**1.5).sum(1, keepdims=True)
    weighted = log_loss_decomposition(y, Q, sample_weight=w, method="affine")
    repeated = log_loss_decomposition(y[rows], Q[rows], method="affine")
    assert weighted.keys() == repeated.keys()
    for key in weighted:
        expected = repeated[key] if key == "method" else pytest.approx(repeated[key], rel=1e-8)
        assert weighted[key] == expected, key
    assert weighted["calibration"] > 0
    assert weighted["method"] == "affine" and weighted["bias"].shape == (2,)


def _shifted_binary(seed, n=20_000, power=1.6):
    """Scores ``p`` whose labels are drawn with probability ``p ** power``: the order is
    right, the probabilities are not."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    return rng.uniform(size=n) < p**power, p, p**power


@pytest.mark.parametrize("method", ["affine", "monotone"])
def test_log_loss_split_sees_a_shifted_binary_model(method):
    y, p, truth = _shifted_binary(17)
    gap = log_loss(y, p) - log_loss(y, truth)
    parts = log_loss_decomposition(y, p, method=method)
    assert parts["method"] == method
    assert parts["calibration"] + parts["refinement"] == parts["log_loss"]
    # the map removes at least 90% of what the true probabilities would
    assert parts["calibration"] >= 0.9 * gap, (parts, gap)
    assert parts["calibration"] <= gap + 2e-3
    # on calibrated predictions of the same rows' kind it finds (almost) nothing
    rng = np.random.default_rng(18)
    y_cal = rng.uniform(size=p.size) < p
    assert 0.0 <= log_loss_decomposition(y_cal, p, method=method)["calibration"] < 5e-4


def test_log_loss_split_default_is_monotone_and_temperature_misses_the_shift():
    y, p, truth = _shifted_binary(19)
    gap = log_loss(y, p) - log_loss(y, truth)
    assert log_loss_decomposition(y, p)["method"] == "monotone"
    # what the split reported before the map was a parameter: a fraction of the gap
    assert log_loss_decomposition(y, p, method="temperature")["calibration"] < 0.1 * gap
    with pytest.raises(ValueError, match="method"):
        log_loss_decomposition(y, p, method="platt")


def _multiclass_truth(seed, n, kind):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(4, 0.8), size=n)
    if kind == "power":  # overconfident in every class
        Q = P**0.6
    else:  # the classes' base rates moved: a prior shift
        Q = P * np.array([0.4, 1.0, 1.5, 2.5])
    Q /= Q.sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(Q, axis=1)).sum(axis=1)
    return y, P, Q


@pytest.mark.parametrize("kind", ["power", "prior"])
# the monotone map fits TemperatureBernsteinCalibrator on 5 folds: seconds, so slow
@pytest.mark.parametrize("method", ["affine", pytest.param("monotone", marks=pytest.mark.slow)])
def test_log_loss_split_sees_a_shifted_multiclass_model(method, kind):
    y, P, Q = _multiclass_truth(20, 12_000, kind)
    gap = multiclass_log_loss(y, P) - multiclass_log_loss(y, Q)
    parts = log_loss_decomposition(y, P, method=method)
    assert parts["calibration"] >= 0.9 * gap, (parts, gap)
    assert parts["calibration"] <= gap + 3e-3
    calibrated = log_loss_decomposition(y, Q, method=method)
    assert 0.0 <= calibrated["calibration"] < 1e-3


def test_log_loss_split_temperature_misses_a_multiclass_prior_shift():
    y, P, Q = _multiclass_truth(21, 12_000, "prior")
    gap = multiclass_log_loss(y, P) - multiclass_log_loss(y, Q)
    parts = log_loss_decomposition(y, P, method="temperature")
    assert parts["calibration"] < 0.5 * gap
    affine = log_loss_decomposition(y, P, method="affine")
    assert affine["bias"].shape == (3,) and affine["calibration"] >= 0.9 * gap


@pytest.mark.parametrize("sigma", [1.0, 0.1, 0.01, 0.004])
def test_kept_grid_spectrum_smooths_as_fftconvolve(sigma):
    # the bandwidth search reuses the mirrored grid's FFT; every smoothed value must be
    # bit for bit scipy.signal.fftconvolve's on the mirrored grid (the computation it
    # replaced), at the default grid (sigma >= 0.01) and at a finer one
    from scipy.signal import fftconvolve

    from bernonnx.metrics.smooth import _Grid

    rng = np.random.default_rng(31)
    p = rng.uniform(size=3000) ** 1.5
    y = rng.uniform(size=p.size) < p**1.2
    w = rng.integers(0, 3, size=p.size).astype(np.float64)
    grid = _Grid(p, np.column_stack([w * (p - y), w]))
    x = np.linspace(0.0, 1.0, 301)
    grid.smooth(0.5, x)  # the kept spectrum of the default grid is reused below
    m = max(2000, round(20 / sigma)) // 2 + 1
    sums = grid.sums(m)
    t = np.linspace(0.0, 1.0, m)
    kernel = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
    extended = np.concatenate([sums[::-1][:-1], sums, sums[::-1][1:]])
    smoothed = fftconvolve(extended, kernel[:, None], mode="valid", axes=0)[m // 2 : m // 2 + m]
    index = (x * (m - 1)).astype(np.int64).clip(0, m - 2)
    residual = (x - index / (m - 1)) * (m - 1)
    expected = smoothed[index] * (1 - residual[:, None]) + smoothed[index + 1] * residual[:, None]
    np.testing.assert_array_equal(grid.smooth(sigma, x), expected)
