"""Fits in passes over chunks, exact quantiles, mergeable statistics and ``partial_fit``.

Equality promises checked here (issue 13):

* a fit from a ``_core.chunks.Source`` (the path of Dask, Spark and Parquet) equals the
  in-memory fit of the same rows to 1e-9 in probability, same degree picked;
* the radix-select quantiles equal ``weighted_quantile`` bit for bit;
* ``partial_fit`` equals ``fit`` while the statistics buffer rows, and past the
  buffer while the scores occupy at most ``MAX_BINS`` key bins (to 1e-12); with
  coarser bins it stays within 1e-4 of ``fit`` on shuffled and drifting streams, and
  the bins do not depend on the order, the chunks or merges;
* the baselines' statistics (distinct scores) give their in-memory fit.

On real scores (a model's decision values and GaussianNB's saturated probabilities on
the shared MAGIC and credit data) and generated ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

import bernonnx.stats as stats_module
from benchmarks._realdata import DataMissing, calibration_scores
from bernonnx import (
    BernsteinCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
)
from bernonnx._core.points import fold_of
from bernonnx._core.quantiles import order_statistics, weighted_quantile, weighted_quantiles
from bernonnx._core.sources import ArraySource, Described, summarise
from bernonnx.stats import BernsteinStats, CalibrationStats, ScoreStats, stats_for

EXACT = 1e-9


@pytest.fixture(scope="module")
def real_scores():
    """(name, calibration scores, labels) of real base models on MAGIC and credit."""
    out = []
    for name, model, method in [
        ("magic", LogisticRegression(max_iter=500), "decision_function"),
        ("credit", GaussianNB(), "predict_proba"),
    ]:
        try:
            s, y_cal = calibration_scores(name, model, method)
        except DataMissing as exc:  # pragma: no cover - the shared data are part of CI
            pytest.skip(str(exc))
        out.append((name, s, y_cal))
    return out


def _generated(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    s = np.round(rng.standard_t(4, size=n), 2)  # heavy tails and ties
    y = np.where(rng.random(n) < expit(1.5 * s - 0.3), "yes", "no")
    w = rng.integers(0, 4, size=n).astype(float)  # zero weights too
    return s, y, w


def _max_diff(a, b, s):
    return float(np.max(np.abs(a.predict_proba(s) - b.predict_proba(s))))


# --------------------------------------------------------------------------- folds


def test_fold_rule_reads_positions_only():
    whole = fold_of(0, 10_000, 5)
    parts = np.concatenate([fold_of(0, 3_000, 5), fold_of(3_000, 7_000, 5)])
    assert np.array_equal(whole, parts)
    counts = np.bincount(whole, minlength=5)
    assert counts.min() > 1_850 and counts.max() < 2_150  # balanced: 2,000 expected


# ----------------------------------------------------------------------- quantiles


def _described(s, w):
    keep = w > 0
    return Described(
        np.array([0, 1]),
        s.shape[0],
        int(keep.sum()),
        float(s[keep].min()),
        float(s[keep].max()),
        float(w.sum()),
        float(w.sum()) / 2,
        bool(w[keep].min() == w[keep].max()),
    )


@pytest.mark.parametrize("probs", [[0.1, 0.5, 0.9], np.linspace(0, 1, 65)])
def test_radix_quantiles_equal_weighted_quantile_on_real_scores(real_scores, probs):
    probs = np.asarray(probs)
    for _, s, _ in real_scores:
        for w in (np.ones_like(s), np.random.default_rng(1).integers(0, 3, s.shape[0]) * 0.7):
            source = ArraySource(s, np.zeros(s.shape[0]), w, chunk_rows=4_000)
            got = weighted_quantiles(source, probs, _described(s, w))
            want = weighted_quantile(s, w, probs)
            assert np.array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([-0.0, 0.0, -1e-300, 5e-324, 1.0, -2.5, 3.0, 1e308, -1e308]),
        min_size=1,
        max_size=60,
    ),
    weights=st.lists(st.sampled_from([0.0, 1.0, 0.5, 3.0]), min_size=60, max_size=60),
    chunk=st.integers(1, 20),
)
def test_radix_quantiles_are_exact_on_ties_and_extremes(values, weights, chunk):
    s = np.asarray(values)
    w = np.asarray(weights[: s.shape[0]])
    if not w.sum() > 0:
        w[0] = 1.0
    probs = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    source = ArraySource(s, np.zeros(s.shape[0]), w, chunk_rows=chunk)
    got = weighted_quantiles(source, probs, _described(s, w))
    assert np.array_equal(got, weighted_quantile(s, w, probs))


def test_order_statistics_from_brackets_are_exact():
    # from 2^18 values the ranks are bracketed from a strided sample (every 4th value
    # here); sorted, tied, periodic (period 4: the sample sees one value, the brackets
    # miss and np.partition answers) and heavy-tailed data
    rng = np.random.default_rng(0)
    n = (1 << 18) + 123
    s = rng.normal(size=n)
    for x in (
        s,
        np.sort(s)[::-1],
        np.round(s, 1),
        np.tile(np.arange(4.0), n // 4 + 1)[:n],
        rng.standard_cauchy(n) * 1e300,
        np.where(s > 0, 1.0, 0.0),
    ):
        ranks = np.array([0, 5, n // 10, n // 2, 9 * n // 10, n - 2, n - 1])
        assert np.array_equal(order_statistics(x, ranks), np.sort(x)[ranks])


# ---------------------------------------------------------------- fits from passes

BERNSTEIN_CASES = [
    {},
    {"loss": "squared"},
    {"score_transform": "quantile"},
    {"score_transform": "minmax", "degree": 12},
    {"degree": [3, 8, 20]},
]


@pytest.mark.parametrize("params", BERNSTEIN_CASES, ids=str)
def test_bernstein_from_passes_equals_in_memory_on_real_scores(real_scores, params):
    for name, s, y in real_scores:
        a = BernsteinCalibrator(**params).fit(s, y)
        b = BernsteinCalibrator(**params)._fit_source(ArraySource(s, y, None, chunk_rows=3_001))
        assert b.degree_ == a.degree_, name
        assert _max_diff(a, b, s) <= EXACT, name
        if hasattr(a, "cv_log_loss_"):
            np.testing.assert_allclose(b.cv_log_loss_, a.cv_log_loss_, rtol=1e-10)


def test_bernstein_from_passes_above_the_compression_threshold():
    # more than COMPRESS_ABOVE rows: bins first, then Newton passes on the rows
    rng = np.random.default_rng(3)
    s = rng.normal(size=80_000)
    y = (rng.random(80_000) < expit(2 * s)).astype(int)
    w = rng.integers(0, 3, size=80_000).astype(float)
    for params in ({}, {"loss": "squared"}):
        a = BernsteinCalibrator(**params).fit(s, y, w)
        b = BernsteinCalibrator(**params)._fit_source(ArraySource(s, y, w, chunk_rows=9_999))
        assert b.degree_ == a.degree_
        assert _max_diff(a, b, s) <= EXACT


@pytest.mark.parametrize(
    "calibrator",
    [
        PlattCalibrator(),
        PlattCalibrator(C=0.5),
        IsotonicCalibrator(),
        HistogramCalibrator(),
        HistogramCalibrator(strategy="quantile", increasing=True),
        PlattHistogramCalibrator(),
    ],
    ids=repr,
)
def test_baselines_from_passes_equal_in_memory(real_scores, calibrator):
    cases = [(name, s, y, None) for name, s, y in real_scores]
    cases.append(("generated", *_generated()))
    for name, s, y, w in cases:
        a = calibrator.fit(s, y, w)
        expected = a.predict_proba(s)
        b = type(calibrator)(**calibrator.get_params())
        b._fit_source(ArraySource(s, y, w, chunk_rows=2_500))
        assert np.array_equal(b.classes_, a.classes_)
        assert np.max(np.abs(b.predict_proba(s) - expected)) <= EXACT, name


def test_platt_log_odds_from_passes(real_scores):
    _, p, y = real_scores[1]  # GaussianNB probabilities, saturated at 0 and 1
    a = PlattCalibrator(log_odds=True).fit(p, y)
    b = PlattCalibrator(log_odds=True)._fit_source(ArraySource(p, y, chunk_rows=1_000))
    assert _max_diff(a, b, p) <= EXACT


@pytest.mark.parametrize("transform", ["logistic", "quantile", "minmax"])
def test_constant_scores_from_passes_predict_the_base_rate(transform):
    # weight-0 rows may differ: only the positive-weight rows' range counts
    s = np.r_[np.full(300, 0.25), 5.0]
    y = np.r_[np.arange(300) % 3 == 0, True].astype(int)
    w = np.r_[np.ones(300), 0.0]
    for loss in ("log", "squared"):
        cal = BernsteinCalibrator(loss=loss, score_transform=transform)
        a = cal.fit(s, y, w)
        b = BernsteinCalibrator(loss=loss, score_transform=transform)
        b._fit_source(ArraySource(s, y, w, chunk_rows=70))
        assert np.array_equal(b.coef_, a.coef_) and b.degree_ == a.degree_
        np.testing.assert_allclose(b.predict_proba(s)[:, 1], 100 / 300, rtol=1e-12)


def test_source_errors_name_the_problem():
    s = np.linspace(0, 1, 100)
    with pytest.raises(ValueError, match="single class"):
        BernsteinCalibrator()._fit_source(ArraySource(s, np.zeros(100)))
    with pytest.raises(ValueError, match="binary"):
        BernsteinCalibrator()._fit_source(ArraySource(s, np.arange(100) % 3))
    bad = s.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        from bernonnx._core.sources import chunk_arrays

        chunk_arrays(bad, np.zeros(100), None, 0)
    w = np.where(np.arange(100) % 2 == 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="positive sample_weight"):
        summarise(ArraySource(s, np.arange(100) % 2, w), "X")
    with pytest.raises(ValueError, match="log_odds=True"):
        PlattCalibrator(log_odds=True)._fit_source(ArraySource(s * 3, np.arange(100) % 2))


# ---------------------------------------------------------------- partial_fit


@pytest.mark.parametrize("params", [{}, {"loss": "squared"}, {"degree": 10}], ids=str)
def test_partial_fit_equals_fit_while_buffering(real_scores, params):
    _, s, y = real_scores[0]
    cal = BernsteinCalibrator(**params)
    for start in range(0, s.shape[0], 1_700):
        cal.partial_fit(s[start : start + 1_700], y[start : start + 1_700], classes=np.unique(y))
    ref = BernsteinCalibrator(**params).fit(s, y)
    assert cal.degree_ == ref.degree_
    assert _max_diff(cal, ref, s) == 0.0
    # fit starts afresh: the streamed statistics are gone
    cal.fit(s[:500], y[:500])
    assert not hasattr(cal, "stats_")


@pytest.mark.parametrize(
    "params",
    [{}, {"loss": "squared"}, {"degree": 30}, {"score_transform": "quantile", "degree": 16}],
    ids=str,
)
def test_partial_fit_past_the_buffer_equals_fit_below_the_bin_cap(
    monkeypatch, real_scores, params
):
    # fewer distinct scores than MAX_BINS: one bin per distinct score, the rows themselves
    monkeypatch.setattr(stats_module, "BUFFER_ROWS", 2_000)
    for name, s, y in real_scores:
        w = np.random.default_rng(2).integers(0, 3, s.shape[0]).astype(float)
        order = np.argsort(s, kind="stable")  # sorted: the worst order for a first buffer
        stats = stats_for(BernsteinCalibrator(**params), np.unique(y))
        for start in range(0, s.shape[0], 1_500):
            sl = order[start : start + 1_500]
            stats.update(s[sl], y[sl], w[sl])
        assert stats.binned is not None and stats.binned.shift == 0
        streamed = stats.fit()
        ref = BernsteinCalibrator(**params).fit(s[order], y[order], w[order])
        assert streamed.degree_ == ref.degree_, name
        assert _max_diff(streamed, ref, np.sort(s)) <= 1e-12, name


def _two_halves(n, drift, seed=0):
    """Scores whose second half is shifted and scaled (``drift``) or drawn alike, shuffled."""
    rng = np.random.default_rng(seed)
    s = np.r_[rng.normal(0.0, 1.0, n // 2), rng.normal(1.0, 1.5, n - n // 2)]
    if not drift:
        rng.shuffle(s)
    y = (rng.random(n) < expit(1.7 * s - 0.4)).astype(int)
    return s, y


@pytest.fixture
def small_bins(monkeypatch):
    """A buffer and a bin cap small enough that 2e5 rows coarsen (shift 44)."""
    from bernonnx._core import keybins as _keybins

    monkeypatch.setattr(stats_module, "BUFFER_ROWS", 1 << 14)
    monkeypatch.setattr(_keybins, "MAX_BINS", 1 << 13)


@pytest.mark.parametrize("drift", [False, True], ids=["shuffled", "drifting"])
@pytest.mark.parametrize(
    "params",
    [
        {"degree": 12},
        {"degree": 12, "loss": "squared"},
        {"degree": 12, "score_transform": "quantile"},
    ],
    ids=str,
)
def test_partial_fit_of_a_drifting_stream_is_within_1e4_of_fit(small_bins, drift, params):
    # the transform is chosen at fit time from the bins of all the rows, as fit chooses it
    s, y = _two_halves(200_000, drift)
    cal = BernsteinCalibrator(**params)
    for start in range(0, s.shape[0], 15_000):
        cal.partial_fit(s[start : start + 15_000], y[start : start + 15_000], classes=[0, 1])
    assert cal.stats_.binned.shift > 40  # coarsened: each bin holds many distinct scores
    ref = BernsteinCalibrator(**params).fit(s, y)
    grid = np.linspace(s.min() - 1, s.max() + 1, 5_001)
    # measured 4e-6 to 7e-6 (logistic), 4e-5 to 5e-5 (quantile); 2e6 rows at the
    # default cap: README
    assert _max_diff(cal, ref, grid) <= 1e-4


def test_key_bins_do_not_depend_on_order_chunks_or_merges(small_bins):
    s, y = _two_halves(60_000, True, seed=3)
    w = np.random.default_rng(4).integers(0, 3, s.shape[0]).astype(float)

    def streamed(order, size):
        stats = stats_for(BernsteinCalibrator(degree=10), [0, 1])
        for start in range(0, s.shape[0], size):
            sl = order[start : start + size]
            stats.update(s[sl], y[sl], w[sl])
        return stats

    n = s.shape[0]
    sorted_ = streamed(np.argsort(s), 5_000)
    reverse = streamed(np.argsort(-s), 9_999)
    shuffled = streamed(np.random.default_rng(5).permutation(n), 1_234)
    half = np.random.default_rng(6).permutation(n)
    merged = streamed(half[: n // 3], 4_000) + streamed(half[n // 3 :], 20_000)
    a = sorted_.binned
    for other in (reverse, shuffled, merged):
        b = other.binned
        assert (a.shift, a.keys.tolist()) == (b.shift, b.keys.tolist())
        np.testing.assert_array_equal(a.lo, b.lo)
        np.testing.assert_array_equal(a.hi, b.hi)
        np.testing.assert_allclose(a.wt, b.wt, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.wd, b.wd, rtol=1e-12, atol=1e-12)
        assert other.kept == sorted_.kept == int((w > 0).sum())
        assert _max_diff(other.fit(), sorted_.fit(), np.sort(s)) <= 1e-12
    again = CalibrationStats.from_bytes(merged.to_bytes())
    assert again.to_bytes() == merged.to_bytes()
    assert _max_diff(again.fit(), merged.fit(), np.sort(s)) == 0.0


@pytest.mark.parametrize(
    "calibrator", [PlattCalibrator(), IsotonicCalibrator(), HistogramCalibrator()], ids=repr
)
def test_baseline_partial_fit_equals_fit(calibrator):
    s, y, w = _generated()
    cal = type(calibrator)()
    for start in range(0, s.shape[0], 3_000):
        sl = slice(start, start + 3_000)
        cal.partial_fit(s[sl], y[sl], classes=["no", "yes"], sample_weight=w[sl])
    ref = type(calibrator)().fit(s, y, w)
    assert isinstance(cal.stats_, ScoreStats)
    assert _max_diff(cal, ref, s) <= EXACT


def test_statistics_merge_and_serialise(monkeypatch):
    s, y, w = _generated(30_000)
    whole = stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s, y, w)
    parts = [
        stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s[a:b], y[a:b], w[a:b])
        for a, b in [(0, 10_000), (10_000, 30_000)]
    ]
    merged = parts[0] + parts[1]  # rows of the first, then the second: positions move
    assert _max_diff(merged.fit(), whole.fit(), s) == 0.0
    again = CalibrationStats.from_bytes(merged.to_bytes())
    assert isinstance(again, BernsteinStats) and again.rows == 30_000
    assert _max_diff(again.fit(), whole.fit(), s) == 0.0
    # past the buffer: bins merge with bins, and a buffer joins the other's bins
    monkeypatch.setattr(stats_module, "BUFFER_ROWS", 5_000)
    first = stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s[:20_000], y[:20_000])
    second = stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s[20_000:], y[20_000:])
    assert first.binned is not None and second.binned is not None
    both = stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s, y)
    assert _max_diff((first + second).fit(), both.fit(), s) <= 1e-12
    small = stats_for(BernsteinCalibrator(degree=8), ["no", "yes"]).update(s[:100], y[:100])
    joined = small + first
    assert joined.binned is not None and joined.rows == 20_100
    restored = CalibrationStats.from_bytes(first.to_bytes())
    assert _max_diff(restored.fit(), first.fit(), s) == 0.0
    table = stats_for(IsotonicCalibrator(), ["no", "yes"]).update(s, y, w)
    assert _max_diff(CalibrationStats.from_bytes(table.to_bytes()).fit(), table.fit(), s) == 0


def test_partial_fit_errors():
    s, y, _ = _generated(200)
    with pytest.raises(ValueError, match="classes"):
        BernsteinCalibrator().partial_fit(s[:3], np.array(["yes"] * 3))
    cal = BernsteinCalibrator().partial_fit(s, y)
    with pytest.raises(ValueError, match="single column"):
        cal.partial_fit(np.c_[s, s], y)
    with pytest.raises(ValueError, match="single column"):
        PlattCalibrator().partial_fit(np.c_[s, s], y)
    with pytest.raises(ValueError, match="NaN"):
        cal.partial_fit(np.r_[s[:-1], np.nan], y)
    with pytest.raises(ValueError, match="labels outside classes"):
        cal.partial_fit(s[:3], np.array(["maybe"] * 3))
    with pytest.raises(ValueError, match="no rows"):
        stats_for(PlattCalibrator(), [0, 1]).fit()
    with pytest.raises(TypeError, match="no streaming statistics"):
        from bernonnx import TemperatureCalibrator

        stats_for(TemperatureCalibrator(), [0, 1])


@pytest.mark.parametrize(
    "name, calibrator",
    [("bernstein", BernsteinCalibrator(degree=4)), ("isotonic", IsotonicCalibrator())],
)
def test_format_3_blobs_written_before_the_core_moved_still_load(name, calibrator):
    # written at fd89a86, before bernonnx/_core/ (issue 23), from these same rows: the blob
    # must load, re-save byte for byte, and equal what this version writes for the rows
    blob = (Path(__file__).parent / "data" / f"stats_v3_{name}.blob").read_bytes()
    rng = np.random.default_rng(23)
    s = np.round(rng.normal(size=400), 3)
    y = (rng.random(400) < 1 / (1 + np.exp(-2 * s))).astype(int)
    w = rng.integers(1, 3, 400).astype(float)
    fresh = stats_for(calibrator, [0, 1])
    for i in range(0, 400, 150):
        fresh.update(s[i : i + 150], y[i : i + 150], w[i : i + 150])
    loaded = CalibrationStats.from_bytes(blob)
    assert loaded.to_bytes() == blob
    assert fresh.to_bytes() == blob
    grid = np.linspace(-3, 3, 61)
    np.testing.assert_array_equal(
        loaded.fit().predict_proba(grid), fresh.fit().predict_proba(grid)
    )
