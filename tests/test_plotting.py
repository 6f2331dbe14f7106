"""bernonnx.plotting: figures render, draw what the metrics and the fitted state say."""

import sys

import numpy as np
import pytest
from scipy.special import expit
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from bernonnx import (
    BernsteinCalibrator,
    BetaCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    MultivariateBernsteinCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
    QuadraticScalingCalibrator,
    VennAbersCalibrator,
)
from bernonnx._core.transforms import apply_transform
from bernonnx.metrics import reliability_table
from bernonnx.plotting import (
    plot_calibration_function,
    plot_contour,
    reliability_diagram,
    reliability_grid,
)
from bernonnx.plotting._common import _inverse_transform, _transform_params

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

N_BINS = 10


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    s = rng.normal(size=4000)
    y = (rng.random(4000) < expit(2 * s - 1)).astype(int)
    return s, y


@pytest.fixture(scope="module")
def probs(data):
    s, y = data
    cal = BernsteinCalibrator(degree=6).fit(s, y)
    return {"raw sigmoid": expit(s), "bernstein": cal.predict_proba(s)[:, 1]}


@pytest.fixture(scope="module")
def multi():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(3000, 3))
    y = rng.random(3000) < expit(2 * s[:, 0] + s[:, 1] + 0.5 * s[:, 2])
    return MultivariateBernsteinCalibrator(degree=3).fit(s, y), s


def assert_renders(fig, path):
    """The figure saves to a PNG that is more than 10 kB and not one colour."""
    fig.savefig(path, dpi=100)
    assert path.stat().st_size > 10_000
    pixels = mpimg.imread(path)[..., :3]
    assert pixels.reshape(-1, 3).var(axis=0).sum() > 1e-3


# ------------------------------------------------------------------ reliability diagram


def test_reliability_diagram_renders_with_histogram(data, probs, tmp_path):
    _, y = data
    ax = reliability_diagram(y, probs["bernstein"], title="one")
    assert ax.get_title() == "one"
    hist = ax.bernonnx_histogram
    assert hist is not None and hist in ax.figure.axes and len(ax.figure.axes) == 2
    assert hist.get_shared_x_axes().joined(ax, hist)
    assert_renders(ax.figure, tmp_path / "reliability.png")


def test_reliability_diagram_one_line_per_calibrator(data, probs, tmp_path):
    _, y = data
    ax = reliability_diagram(y, probs, strategy="quantile", n_bins=N_BINS)
    # the diagonal, then one line and one scatter per curve, legend with the ECE
    assert len(ax.lines) == 1 + len(probs)
    assert len(ax.collections) == len(probs)
    labels = [line.get_label() for line in ax.lines[1:]]
    assert [label.split(" (ECE = ")[0] for label in labels] == list(probs)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[1:-1] == labels
    # the last entry says what the marker sizes mean
    assert legend[-1].startswith("marker area = bin weight")
    for line, p in zip(ax.lines[1:], probs.values(), strict=True):
        table = reliability_table(y, p, n_bins=N_BINS, strategy="quantile")
        np.testing.assert_allclose(line.get_xdata(), table["mean_predicted"])
        np.testing.assert_allclose(line.get_ydata(), table["fraction_positive"])
    # the histogram: side-by-side bars, one per curve and bin, heights the weight shares
    bars = ax.bernonnx_histogram.patches
    tables = [reliability_table(y, p, n_bins=N_BINS, strategy="quantile") for p in probs.values()]
    assert len(bars) == sum(t["weight"].shape[0] for t in tables)
    heights = np.array([b.get_height() for b in bars])
    expected = np.concatenate([t["weight"] / t["weight"].sum() for t in tables])
    np.testing.assert_allclose(heights, expected)
    assert_renders(ax.figure, tmp_path / "several.png")


def test_marker_area_is_proportional_to_bin_weight(data, probs):
    _, y = data
    p = probs["bernstein"]
    ax = reliability_diagram(y, p, n_bins=N_BINS, show_histogram=False)
    sizes = ax.collections[0].get_sizes()
    count = reliability_table(y, p, n_bins=N_BINS)["count"]
    ratio = sizes / count
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    np.testing.assert_allclose(sizes, 36.0 * N_BINS * count / count.sum())


def test_sample_weight_draws_what_repeated_rows_draw(data, probs):
    _, y = data
    p = probs["bernstein"]
    k = np.random.default_rng(2).integers(1, 4, size=y.shape[0])
    for strategy in ("uniform", "quantile"):
        weighted = reliability_diagram(y, p, sample_weight=k, strategy=strategy)
        repeated = reliability_diagram(np.repeat(y, k), np.repeat(p, k), strategy=strategy)
        np.testing.assert_allclose(
            weighted.collections[0].get_sizes(), repeated.collections[0].get_sizes()
        )
        np.testing.assert_allclose(
            weighted.lines[1].get_xydata(), repeated.lines[1].get_xydata(), rtol=1e-12
        )
        assert weighted.lines[1].get_label() == repeated.lines[1].get_label()
        table = reliability_table(np.repeat(y, k), np.repeat(p, k), strategy=strategy)
        sizes = weighted.collections[0].get_sizes()
        np.testing.assert_allclose(sizes / table["count"], sizes[0] / table["count"][0])


def test_reliability_diagram_without_histogram_or_sizes_on_given_axes(data, probs):
    _, y = data
    fig, (left, right) = plt.subplots(1, 2)
    ax = reliability_diagram(y, probs, show_weights=None, show_histogram=False, ax=right)
    assert ax is right and ax.bernonnx_histogram is None
    assert len(fig.axes) == 2 and not left.lines
    for scatter in ax.collections:
        assert np.unique(scatter.get_sizes()).shape == (1,)
    assert ax.get_xlabel() == "mean predicted probability"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"strategy": "equal"}, "strategy"),
        ({"n_bins": 0}, "n_bins"),
        ({"show_weights": "area"}, "show_weights"),
        ({"sample_weight": np.ones(3)}, "sample_weight"),
    ],
)
def test_reliability_diagram_bad_arguments(data, probs, kwargs, match):
    _, y = data
    with pytest.raises(ValueError, match=match):
        reliability_diagram(y, probs["bernstein"], **kwargs)
    assert plt.get_fignums() == []  # checked before any figure is made


def test_reliability_diagram_bad_probabilities(data, probs):
    _, y = data
    with pytest.raises(ValueError, match="different lengths"):
        reliability_diagram(y[:-1], probs["bernstein"])
    with pytest.raises(ValueError, match="empty dict"):
        reliability_diagram(y, {})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reliability_diagram(y, {"ok": probs["bernstein"], "scores": np.linspace(-1, 2, y.size)})
    assert plt.get_fignums() == []


# ------------------------------------------------------------------ calibration function


ONE_D = {
    "bernstein logistic": BernsteinCalibrator(degree=8),
    "bernstein quantile squared": BernsteinCalibrator(
        degree=10, loss="squared", score_transform="quantile"
    ),
    "bernstein minmax": BernsteinCalibrator(degree=5, score_transform="minmax"),
    "platt": PlattCalibrator(),
    "isotonic": IsotonicCalibrator(),
    "histogram": HistogramCalibrator(n_bins=12),
    "platt histogram": PlattHistogramCalibrator(n_bins=10),
    "beta": BetaCalibrator(),
    "quadratic scaling": QuadraticScalingCalibrator(),
    "venn-abers": VennAbersCalibrator(),
}


@pytest.fixture(scope="module")
def fitted(data):
    s, y = data
    return {name: cal.fit(s, y) for name, cal in ONE_D.items()}


@pytest.mark.parametrize("name", list(ONE_D))
def test_calibration_function_draws_the_fitted_map(name, fitted, data, tmp_path):
    s, y = data
    cal = fitted[name]
    ax = plot_calibration_function(cal, scores=s, y=y, title=name)
    curve = ax.lines[0]
    x, p = curve.get_xdata(), curve.get_ydata()
    assert x.min() == s.min() and x.max() == s.max()
    np.testing.assert_allclose(p, cal.predict_proba(x)[:, 1])
    assert np.all(np.diff(x) > 0)
    # the empirical positive rates: 20 light points, means of equal-count bins
    empirical = [c for c in ax.collections if "positive rate" in c.get_label()]
    assert len(empirical) == 1 and empirical[0].get_offsets().shape == (20, 2)
    assert_renders(ax.figure, tmp_path / "function.png")


@pytest.mark.parametrize("name", list(ONE_D))
def test_calibration_function_default_range(name, fitted, data):
    s, _ = data
    cal = fitted[name]
    ax = plot_calibration_function(cal, n_points=64, show_control_points=False)
    lo, hi = ax.get_xlim()
    assert lo < np.median(s) < hi
    if name in ("bernstein quantile squared", "bernstein minmax", "isotonic"):
        # the fitted range (min-max: up to the rounding of 1 / scale_)
        np.testing.assert_allclose((lo, hi), (s.min(), s.max()), rtol=1e-12)
    assert not any("positive rate" in c.get_label() for c in ax.collections)


@pytest.mark.parametrize("name", [n for n in ONE_D if n.startswith("bernstein")])
def test_control_points_are_the_coefficients(name, fitted, data):
    s, _ = data
    cal = fitted[name]
    ax = plot_calibration_function(cal, scores=s)
    polygon = ax.lines[1].get_xydata()
    d = cal.degree_
    assert polygon.shape == (d + 1, 2)
    assert np.all(np.diff(polygon[:, 0]) >= 0) and np.all(np.diff(polygon[:, 1]) >= 0)
    height = expit(cal.coef_) if cal.loss == "log" else cal.coef_
    np.testing.assert_allclose(polygon[:, 1], height)
    # points inside the plotted range sit where the transform gives u = k / d
    inside = (polygon[:, 0] > s.min()) & (polygon[:, 0] < s.max())
    u, _ = apply_transform(cal.score_transform, polygon[inside, 0], _transform_params(cal))
    np.testing.assert_allclose(u, (np.arange(d + 1) / d)[inside], atol=1e-9)
    drawn = sum(c.get_offsets().shape[0] for c in ax.collections if "control" in c.get_label())
    assert drawn == d + 1
    if cal.score_transform == "logistic":  # u = 0 and 1 lie at -inf and +inf
        assert not inside[0] and not inside[-1]
        hollow = [c for c in ax.collections if c.get_label() == "control points beyond the range"]
        assert hollow[0].get_offsets().shape == (2, 2)


@pytest.mark.parametrize("kind", ["logistic", "quantile", "minmax"])
def test_inverse_transform_round_trip(kind, data):
    s, y = data
    cal = BernsteinCalibrator(degree=3, score_transform=kind).fit(s**3, y)  # skewed scores
    params = _transform_params(cal)
    u = np.linspace(0.01, 0.99, 99)
    back, _ = apply_transform(kind, _inverse_transform(kind, params, u), params)
    np.testing.assert_allclose(back, u, atol=1e-9)


def test_isotonic_thresholds_and_histogram_steps(fitted, data):
    s, _ = data
    iso = fitted["isotonic"]
    ax = plot_calibration_function(iso, scores=s)
    (points,) = [c for c in ax.collections if c.get_label() == "thresholds"]
    np.testing.assert_allclose(points.get_offsets()[:, 0], iso.x_thresholds_)
    np.testing.assert_allclose(points.get_offsets()[:, 1], iso.y_thresholds_)
    # steps are vertical: each inner edge and the next float are both on the curve
    hist = fitted["histogram"]
    x = plot_calibration_function(hist, scores=s).lines[0].get_xdata()
    assert np.isin(hist.bin_edges_, x).all()
    assert np.isin(np.nextafter(hist.bin_edges_, np.inf), x).all()


def test_calibration_function_errors(fitted, multi, data):
    s, y = data
    with pytest.raises(NotFittedError):
        plot_calibration_function(BernsteinCalibrator())
    with pytest.raises(ValueError, match="calibrator is a MultivariateBernsteinCalibrator"):
        plot_calibration_function(multi[0])
    with pytest.raises(ValueError, match="calibrator must be"):
        plot_calibration_function(LogisticRegression().fit(s[:, None], y))
    cal = fitted["bernstein logistic"]
    with pytest.raises(ValueError, match="y was given without scores"):
        plot_calibration_function(cal, y=y)
    with pytest.raises(ValueError, match="one label per score"):
        plot_calibration_function(cal, scores=s, y=y[:-1])
    with pytest.raises(ValueError, match="not among the calibrator's classes_"):
        plot_calibration_function(cal, scores=s, y=y + 1)
    with pytest.raises(ValueError, match="scores contains NaN"):
        plot_calibration_function(cal, scores=np.r_[s, np.nan])
    with pytest.raises(ValueError, match="n_points"):
        plot_calibration_function(cal, n_points=1)
    assert plt.get_fignums() == []


# ------------------------------------------------------------------------- contour


def test_contour_renders_with_colorbar_and_subsampled_scatter(multi, tmp_path):
    cal, s = multi
    ax = plot_contour(cal, scores=s, axes=(0, 2), grid=41, title="fusion")
    assert ax.figure.axes[-1].get_ylabel() == "P(y=1)"
    assert ax.get_xlim() == (s[:, 0].min(), s[:, 0].max())
    assert ax.get_ylim() == (s[:, 2].min(), s[:, 2].max())
    (scatter,) = [c for c in ax.collections if c.get_offsets().shape[0] > 100]
    shown = scatter.get_offsets()
    assert shown.shape == (2000, 2)  # at most 2,000 of the 3,000 rows
    again = plot_contour(cal, scores=s, axes=(0, 2), grid=41)
    (scatter2,) = [c for c in again.collections if c.get_offsets().shape[0] > 100]
    np.testing.assert_array_equal(shown, scatter2.get_offsets())  # deterministic
    # the other column is held at its fitted median (quantile transform: the median knot)
    texts = [t.get_text() for t in ax.texts]
    median = np.interp(0.5, cal.levels_[1], cal.knots_[1])
    assert texts == [f"score 1 = {median:.4g}"]
    assert_renders(ax.figure, tmp_path / "contour.png")


def test_contour_fixed_and_default_range(multi):
    cal, s = multi
    ax = plot_contour(cal, fixed={2: 1.5}, grid=21)
    assert [t.get_text() for t in ax.texts] == ["score 2 = 1.5"]
    assert ax.get_xlim() == (cal.knots_[0][0], cal.knots_[0][-1])
    ax = plot_contour(cal, fixed=[0.0, 0.0, -1.0], grid=21, levels=[0.0, 0.25, 0.5, 0.75, 1.0])
    assert [t.get_text() for t in ax.texts] == ["score 2 = -1"]


def test_contour_errors(multi, fitted):
    cal, s = multi
    with pytest.raises(ValueError, match="calibrator must be a fitted Multivariate"):
        plot_contour(fitted["bernstein logistic"])
    with pytest.raises(NotFittedError):
        plot_contour(MultivariateBernsteinCalibrator())
    for axes in [(0, 0), (0, 3), (0,), ("a", 1)]:
        with pytest.raises(ValueError, match="axes must be two distinct"):
            plot_contour(cal, axes=axes)
    with pytest.raises(ValueError, match="fixed must be"):
        plot_contour(cal, fixed=[0.0, 1.0])
    with pytest.raises(ValueError, match="fixed: keys"):
        plot_contour(cal, fixed={5: 0.0})
    with pytest.raises(ValueError, match=r"scores must be .* shape \(n_samples, 3\)"):
        plot_contour(cal, scores=s[:, :2])
    with pytest.raises(ValueError, match="grid"):
        plot_contour(cal, grid=1)
    one = MultivariateBernsteinCalibrator(degree=2).fit(s[:, :1], s[:, 0] > 0)
    with pytest.raises(ValueError, match="needs at least 2"):
        plot_contour(one)
    assert plt.get_fignums() == []


# ------------------------------------------------------------------- no matplotlib


def test_missing_matplotlib_says_how_to_install(monkeypatch, data, probs, fitted, multi):
    _, y = data
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    calls = [
        lambda: reliability_diagram(y, probs["bernstein"]),
        lambda: reliability_grid(y, probs),
        lambda: plot_calibration_function(fitted["platt"]),
        lambda: plot_contour(multi[0]),
    ]
    for call in calls:
        with pytest.raises(ImportError, match=r"pip install 'bernonnx\[plot\]'"):
            call()


def test_reliability_diagram_draws_the_smooth_curve_and_its_band():
    from bernonnx.metrics import smooth_calibration_curve

    rng = np.random.default_rng(0)
    p = rng.uniform(size=1500)
    y = rng.uniform(size=1500) < p**2
    ax = reliability_diagram(y, {"squared": p}, smooth=True, n_resamples=20, random_state=1)
    # the diagonal, the binned curve, then the smooth curve; scatter, then the band
    assert len(ax.lines) == 3 and len(ax.collections) == 2
    # the picture's curve: bandwidth="cv", drawn within the predictions' range
    curve = smooth_calibration_curve(y, p, bandwidth="cv", n_resamples=20, random_state=1)
    inside = (curve["mesh"] >= p.min()) & (curve["mesh"] <= p.max())
    drawn = ax.lines[2].get_ydata()
    np.testing.assert_allclose(drawn[inside], curve["fraction_positive"][inside])
    assert np.isnan(drawn[~inside]).all()
    assert "smECE = " in ax.lines[2].get_label() and "90% CI" in ax.lines[2].get_label()
    plt.close(ax.figure)


def _wiggles(values):
    """How far a curve travels up and down beyond the net rise: total variation minus
    the distance between its ends (0 for a monotone curve)."""
    values = values[np.isfinite(values)]
    return float(np.sum(np.abs(np.diff(values))) - abs(values[-1] - values[0]))


def test_the_picture_curve_does_not_draw_noise_on_calibrated_rows():
    # 6,000 calibrated rows: at the smooth ECE's own width (about 0.015) the smoothed
    # labels turn up and down with the noise; the picture's curve stays on the diagonal
    from bernonnx.metrics import smooth_calibration_curve

    rng = np.random.default_rng(5)
    p = rng.beta(1.0, 3.0, size=6000)
    y = rng.uniform(size=p.size) < p
    kw = dict(confidence=None, n_points=400)
    auto = smooth_calibration_curve(y, p, **kw)
    cv = smooth_calibration_curve(y, p, bandwidth="cv", **kw)
    assert auto["bandwidth"] < 0.03 <= 0.3 * 6000**-0.2 <= cv["bandwidth"]
    inside = (cv["mesh"] >= p.min()) & (cv["mesh"] <= np.quantile(p, 0.99))
    off_auto = auto["fraction_positive"][inside] - auto["mesh"][inside]
    off_cv = cv["fraction_positive"][inside] - cv["mesh"][inside]
    assert _wiggles(off_cv) < _wiggles(off_auto) / 4
    assert np.max(np.abs(off_cv)) < 0.03
    # the smooth ECE itself is the metric's, at its own width, whatever the picture's
    assert cv["smooth_ece"] == auto["smooth_ece"]


def test_the_picture_curve_follows_a_miscalibrated_model():
    from bernonnx.metrics import smooth_calibration_curve

    rng = np.random.default_rng(6)
    p = rng.uniform(size=6000)
    y = rng.uniform(size=p.size) < p**2
    curve = smooth_calibration_curve(y, p, bandwidth="cv", confidence=None)
    inside = (curve["mesh"] > 0.05) & (curve["mesh"] < 0.95)
    truth = curve["mesh"][inside] ** 2
    assert np.max(np.abs(curve["fraction_positive"][inside] - truth)) < 0.05
    assert curve["support"] == (p.min(), p.max())


def test_bandwidth_is_checked_before_a_figure_exists():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    with pytest.raises(ValueError, match="bandwidth must be 'auto' or 'cv'"):
        reliability_diagram([0, 1], [0.2, 0.8], smooth=True, bandwidth="silverman")
    with pytest.raises(ValueError, match="bandwidth must be 'auto' or a float"):
        from bernonnx.metrics import smooth_calibration_error

        smooth_calibration_error([0, 1], [0.2, 0.8], bandwidth="cv")
    assert plt.get_fignums() == before


# ------------------------------------------------------------------ negligible bins, grid


@pytest.fixture(scope="module")
def tiny_top_bin():
    """Most rows below 0.3 and five rows at 0.97: a top bin of 0.1% of the weight,
    as isotonic regression leaves on a few high scores."""
    rng = np.random.default_rng(3)
    p = np.r_[rng.uniform(0.0, 0.3, 4000), np.full(5, 0.97)]
    y = rng.random(p.shape[0]) < np.r_[p[:4000], np.zeros(5)]
    return y, p


def test_no_line_to_a_bin_of_negligible_weight(tiny_top_bin):
    y, p = tiny_top_bin
    table = reliability_table(y, p, n_bins=N_BINS)
    share = table["weight"] / table["weight"].sum()
    assert share[-1] < 0.01 and table["fraction_positive"][-1] == 0.0
    ax = reliability_diagram(y, {"iso": p}, n_bins=N_BINS, show_histogram=False)
    line = ax.lines[1]
    # the line skips the tiny bin; its marker stays, sized by its weight
    np.testing.assert_allclose(line.get_xdata(), table["mean_predicted"])
    assert np.isnan(line.get_ydata()[-1]) and not np.isnan(line.get_ydata()[:-1]).any()
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 1], table["fraction_positive"])
    np.testing.assert_allclose(ax.collections[0].get_sizes(), 36.0 * N_BINS * share)
    # min_weight=0 draws every segment
    every = reliability_diagram(y, {"iso": p}, n_bins=N_BINS, min_weight=0.0)
    np.testing.assert_allclose(every.lines[1].get_ydata(), table["fraction_positive"])


def test_smooth_curve_stops_where_the_rows_thin_out(tiny_top_bin):
    from bernonnx.metrics import smooth_calibration_curve

    y, p = tiny_top_bin
    ax = reliability_diagram(y, p, smooth=True, n_resamples=10, show_histogram=False)
    curve = smooth_calibration_curve(y, p, bandwidth="cv", n_resamples=10, random_state=0)
    drawn = ax.lines[2].get_ydata()
    thin = curve["density"] < 0.01 * N_BINS
    assert thin.any() and (~thin).any()
    thin |= curve["mesh"] < p.min()
    assert np.isnan(drawn[thin]).all()
    np.testing.assert_allclose(drawn[~thin], curve["fraction_positive"][~thin])


def test_reliability_grid_one_panel_per_calibrator_with_the_reference(data, probs, tmp_path):
    _, y = data
    s, _ = data
    curves = {"raw": probs["raw sigmoid"], **{f"cal {k}": expit(k * s) for k in range(1, 8)}}
    axes = reliability_grid(y, curves, reference="raw", n_bins=N_BINS, title="seven")
    figure = axes[0].figure
    # seven panels, 2 rows of 4, the eighth cell removed
    assert [ax.get_title() for ax in axes] == list(curves)[1:]
    assert len(figure.axes) == 7
    assert axes[0].get_subplotspec().get_geometry()[:2] == (2, 4)
    assert figure.get_suptitle().startswith("seven\ngrey: raw")
    raw = reliability_table(y, curves["raw"], n_bins=N_BINS)
    for ax, label in zip(axes, list(curves)[1:], strict=True):
        # the diagonal, the reference's bins (grey), the panel's bins
        assert len(ax.lines) == 3 and len(ax.collections) == 2
        reference, own = ax.lines[1], ax.lines[2]
        assert reference.get_label().startswith("raw: ECE ")
        assert own.get_label().startswith(f"{label}: ECE ")
        assert reference.get_color() == "0.55" and own.get_color() != "0.55"
        np.testing.assert_allclose(reference.get_xdata(), raw["mean_predicted"])
        table = reliability_table(y, curves[label], n_bins=N_BINS)
        share = table["weight"] / table["weight"].sum()
        np.testing.assert_allclose(own.get_xdata(), table["mean_predicted"])
        np.testing.assert_array_equal(np.isnan(own.get_ydata()), share < 0.01)
        # marker areas on one scale in every panel
        np.testing.assert_allclose(ax.collections[1].get_sizes(), 36.0 * N_BINS * share)
        assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)
    assert_renders(figure, tmp_path / "grid.png")


def test_reliability_grid_smooth_without_reference_on_a_given_figure(data, probs):
    from matplotlib.figure import Figure

    _, y = data
    figure = Figure()
    axes = reliability_grid(
        y, probs, smooth=True, n_resamples=10, figure=figure, ncols=1, confidence=None
    )
    assert axes[0].figure is figure and len(figure.axes) == 2
    assert axes[1].get_subplotspec().get_geometry()[:2] == (2, 1)
    assert plt.get_fignums() == []  # no pyplot figure made
    for ax in axes:
        # the diagonal, the bins, the smoothed curve; no band without confidence
        assert len(ax.lines) == 3 and len(ax.collections) == 1
        assert "smECE" in ax.lines[1].get_label()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"reference": "missing"}, "reference 'missing' is not a key"),
        ({"ncols": 0}, "ncols"),
        ({"min_weight": 1.5}, "min_weight"),
        ({"n_bins": 0}, "n_bins"),
    ],
)
def test_reliability_grid_bad_arguments(data, probs, kwargs, match):
    _, y = data
    with pytest.raises(ValueError, match=match):
        reliability_grid(y, probs, **kwargs)
    with pytest.raises(ValueError, match="dict"):
        reliability_grid(y, probs["bernstein"])
    with pytest.raises(ValueError, match="only the reference"):
        reliability_grid(y, {"raw": probs["raw sigmoid"]}, reference="raw")
    assert plt.get_fignums() == []  # checked before any figure is made
