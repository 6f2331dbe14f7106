"""Beta calibration and quadratic scaling of the logit (``bernonnx.calibrators``).

Properties: the constrained fit is the optimum (against scipy's bound-constrained
L-BFGS-B on the same objective), the maps are non-decreasing on the whole real line and
keep the ranking (AUC unchanged) where their slopes are positive, quadratic scaling stays
monotone where the unconstrained quadratic turns back, weights equal repetition, order
does not matter, ``input="auto"`` and its refusals, ``partial_fit`` equals ``fit``; the
references (the ``betacal`` package; scikit-learn's unpenalised logistic regression, the
fit of ``probmetrics``' quadratic and affine scaling) agree to the ``O(1/n)`` of Platt's
targets; every graph equals ``predict_proba`` alone, inside ``CalibratedClassifier`` and
on real tables as pandas reads them (``tests/test_real_parity.py`` cells).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _parity import run_onnx, tolerance, typed
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from benchmarks._realdata import DataMissing, calibration_scores
from bernonnx import (
    BetaCalibrator,
    CalibratedClassifier,
    QuadraticScalingCalibrator,
    VennAbersCalibrator,
)
from bernonnx._core.logistic import fit_nonnegative_logistic, platt_targets
from bernonnx.export import check_parity, to_onnx

MAPS = [BetaCalibrator, QuadraticScalingCalibrator]


def scores(n, seed, kind):
    """Labelled scores: log-odds of a skewed model, or its probabilities."""
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=n) * 2.0
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.08 * s * s + 0.9 * s - 0.3)))).astype(int)
    if kind == "proba":
        s = 1 / (1 + np.exp(-s))
    return s, y


def grid(kind, seed=5, dtype=np.float64):
    s, _ = scores(3000, seed, kind)
    if kind == "proba":
        extremes = [0.0, 1.0, 1e-300, 1 - 1e-16, 0.5, 1e-45, 1 - 1e-7]
    else:
        top = float(np.finfo(dtype).max)
        extremes = [-top, top, -1e30, 1e30, 0.0, 1e-45]
    return np.sort(np.r_[s, extremes]).astype(dtype)


# ----------------------------------------------------------------------------- the fit


@pytest.mark.parametrize("seed", range(4))
def test_constrained_fit_is_the_optimum(seed):
    # the same objective under scipy's bound-constrained solver: ours is no worse
    rng = np.random.default_rng(seed)
    n = 2000
    x = rng.normal(size=n)
    # some seeds make a coefficient want to be negative (an active face)
    y = (rng.random(n) < 1 / (1 + np.exp(-((-1) ** seed * 0.7 * x + 0.4 * x**2)))).astype(int)
    F = np.column_stack([np.maximum(x, 0), np.maximum(-x, 0) * -1, np.ones(n)])
    w = rng.uniform(0.5, 2.0, n)
    soft = platt_targets(y, w)

    def loss(theta):
        eta = F @ theta
        return float(w @ (np.logaddexp(0.0, eta) - soft * eta))

    ours = fit_nonnegative_logistic(F, y, w, (0, 1))
    assert ours[0] >= 0 and ours[1] >= 0
    ref = minimize(
        loss,
        np.zeros(3),
        method="L-BFGS-B",
        bounds=[(0, None), (0, None), (None, None)],
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000},
    )
    assert loss(ours) <= ref.fun + 1e-9 * abs(ref.fun)
    np.testing.assert_allclose(ours, ref.x, atol=1e-4)


def test_unconstrained_face_matches_logistic_regression_on_platt_targets():
    # Platt's targets as sample-weighted 0/1 rows: scikit-learn's unpenalised fit
    s, y = scores(4000, 1, "logits")
    F = np.column_stack([s, s * s, np.ones_like(s)])
    ours = fit_nonnegative_logistic(F, y, np.ones_like(s), ())
    soft = platt_targets(y, np.ones_like(s))
    X2, y2 = np.r_[F[:, :2], F[:, :2]], np.r_[np.ones_like(s), np.zeros_like(s)]
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(
        X2, y2, sample_weight=np.r_[soft, 1 - soft]
    )
    np.testing.assert_allclose(ours, [*ref.coef_[0], ref.intercept_[0]], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", MAPS)
@pytest.mark.parametrize("kind", ["logits", "proba"])
def test_weights_equal_repetition_and_order_does_not_matter(cls, kind):
    s, y = scores(600, 2, kind)
    k = np.random.default_rng(0).integers(0, 4, s.shape[0])
    weighted = cls().fit(s, y, sample_weight=k)
    repeated = cls().fit(np.repeat(s, k), np.repeat(y, k))
    order = np.random.default_rng(1).permutation(s.shape[0])
    shuffled = cls().fit(s[order], y[order], sample_weight=k[order])
    g = grid(kind)
    np.testing.assert_allclose(weighted.predict_proba(g), repeated.predict_proba(g), atol=1e-9)
    np.testing.assert_allclose(weighted.predict_proba(g), shuffled.predict_proba(g), atol=1e-12)


# ----------------------------------------------------------------------------- monotone


@pytest.mark.parametrize("cls", MAPS)
@pytest.mark.parametrize("kind", ["logits", "proba"])
def test_non_decreasing_everywhere_and_ranking_kept(cls, kind):
    s, y = scores(3000, 3, kind)
    cal = cls().fit(s, y)
    g = grid(kind)
    p = cal.predict_proba(g)[:, 1]
    assert np.all(np.diff(p) >= 0)
    assert np.all((p >= 0) & (p <= 1))
    test, y_test = scores(3000, 4, kind)
    assert roc_auc_score(y_test, cal.predict_proba(test)[:, 1]) == roc_auc_score(y_test, test)


def test_quadratic_stays_monotone_where_the_unconstrained_quadratic_turns_back():
    # truth 0.1 l^2 + l turns back below l = -5; the scores reach -12
    rng = np.random.default_rng(0)
    l = rng.normal(scale=3.0, size=6000)
    y = (rng.random(6000) < 1 / (1 + np.exp(-(0.1 * l * l + l)))).astype(int)
    free = LogisticRegression(C=np.inf, max_iter=10_000).fit(np.column_stack([l, l * l]), y)
    b, a = free.coef_[0]
    assert min(b + 2 * a * l.min(), b + 2 * a * l.max()) < 0  # the free fit turns back
    cal = QuadraticScalingCalibrator().fit(l, y)
    assert cal.slope_low_ == 0.0 and cal.slope_high_ > 0
    line = np.r_[-1e300, np.linspace(-50, 50, 20001), 1e300]
    assert np.all(np.diff(cal.predict_proba(line)[:, 1]) >= 0)


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(-0.3, 0.3),
    b=st.floats(-1.0, 3.0),
    c=st.floats(-2.0, 2.0),
    spread=st.floats(0.1, 30.0),
    seed=st.integers(0, 2**16),
)
def test_quadratic_is_non_decreasing_on_the_real_line_for_any_truth(a, b, c, spread, seed):
    rng = np.random.default_rng(seed)
    l = rng.normal(scale=spread, size=400)
    y = rng.random(400) < 1 / (1 + np.exp(-np.clip(a * l * l + b * l + c, -700, 700)))
    if y.all() or not y.any():
        return
    cal = QuadraticScalingCalibrator().fit(l, y)
    assert cal.slope_low_ >= 0 and cal.slope_high_ >= 0
    line = np.r_[-1e308, np.linspace(-5 * spread, 5 * spread, 2001), 1e308]
    p = cal.predict_proba(line)[:, 1]
    assert np.all(np.isfinite(p)) and np.all(np.diff(p) >= 0)


# ----------------------------------------------------------------------------- references


def test_beta_matches_betacal_to_the_targets_order():
    betacal = pytest.importorskip("betacal")
    compared = 0
    for seed in range(3):
        s, y = scores(20000, seed, "proba")
        ours = BetaCalibrator().fit(s, y)
        ref = betacal.BetaCalibration("abm").fit(s, y)
        a, b, _ = ref.calibrator_.map_
        if a < 0 or b < 0:
            continue
        g, _ = scores(3000, seed + 10, "proba")  # inside betacal's clip and ours
        # Platt's targets move the optimum by O(1/n) (and betacal's lbfgs stops at 1e-4)
        diff = np.abs(ours.predict_proba(g)[:, 1] - ref.predict(g)).max()
        assert diff < 2e-3, diff
        np.testing.assert_allclose([ours.a_, ours.b_], [a, b], rtol=0.03, atol=0.01)
        compared += 1
    assert compared, "betacal dropped a coefficient on every seed: nothing was compared"


def test_beta_contains_platt_on_log_odds_and_the_identity():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.99, 50000)
    y = rng.random(50000) < p  # calibrated already: a = b = 1, c = 0
    cal = BetaCalibrator().fit(p, y)
    np.testing.assert_allclose([cal.a_, cal.b_, cal.intercept_], [1, 1, 0], atol=0.05)


def test_quadratic_matches_the_unconstrained_fit_where_that_is_increasing():
    # probmetrics' quadratic-scaling: scikit-learn's unpenalised fit on [l, l^2]
    s, y = scores(20000, 0, "logits")
    s = np.clip(s, -4, 4)
    cal = QuadraticScalingCalibrator().fit(s, y)
    free = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000)
    free.fit(np.column_stack([s, s * s]), y)
    b, a = free.coef_[0]
    assert min(b + 2 * a * s.min(), b + 2 * a * s.max()) > 0  # increasing on the range
    np.testing.assert_allclose(cal.coef_, [free.intercept_[0], b, a], rtol=0.02, atol=2e-3)


# ----------------------------------------------------------------------------- input


@pytest.mark.parametrize("cls", MAPS)
def test_input_auto_and_the_refusals_name_input(cls):
    p, y = scores(500, 0, "proba")
    assert cls().fit(p, y).input_ == "proba"
    assert cls().fit(p * 3 - 1, y).input_ == "logits"
    with pytest.raises(ValueError, match=r"input='proba' \(chosen by input='auto'"):
        cls().fit(p, y).predict_proba([1.5])
    with pytest.raises(ValueError, match="input='proba' takes probability"):
        cls(input="proba").fit(p * 3 - 1, y)
    logits = cls(input="logits").fit(p, y)
    assert logits.input_ == "logits" and np.isfinite(logits.predict_proba([-5.0, 7.0])).all()
    with pytest.raises(ValueError, match="input"):
        cls(input="probability").fit(p, y)


@pytest.mark.parametrize("cls", MAPS)
def test_calibrated_classifier_tells_the_map_its_scores(cls):
    X, y = make_classification(1200, n_features=6, random_state=0)
    for base, expected in (
        (LinearSVC(), "logits"),
        (RandomForestClassifier(20, random_state=0), "proba"),
        (LogisticRegression(), "logits"),  # decision_function
    ):
        clf = CalibratedClassifier(base, cls(), cv=2).fit(X, y)
        kinds = {c.input_ for pair in clf.calibrated_classifiers_ for c in pair.calibrators}
        assert kinds == {expected}
        assert clf.calibrator.input == "auto"  # the user's calibrator is left as given


@pytest.mark.parametrize("cls", MAPS)
def test_partial_fit_equals_fit(cls):
    s, y = scores(3000, 1, "proba")
    streamed = cls()
    for chunk in np.array_split(np.arange(s.shape[0]), 7):
        streamed.partial_fit(s[chunk], y[chunk], classes=[0, 1])
    g = grid("proba")
    np.testing.assert_allclose(
        streamed.predict_proba(g), cls().fit(s, y).predict_proba(g), atol=1e-12
    )


@pytest.mark.parametrize("cls", MAPS)
def test_constant_scores_predict_the_base_rate(cls):
    y = np.r_[np.zeros(30), np.ones(10)]
    cal = cls().fit(np.full(40, 0.3), y)
    p = cal.predict_proba([0.0, 0.3, 1.0])[:, 1]
    np.testing.assert_allclose(p, (10 * 11 / 12 + 30 / 32) / 40, rtol=1e-12)  # Platt's targets


# ----------------------------------------------------------------------------- the graphs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["logits", "proba"])
@pytest.mark.parametrize("cls", MAPS)
def test_graph_equals_predict_proba_everywhere(cls, kind, dtype):
    s, y = scores(3000, 0, kind)
    cal = cls().fit(s, y)
    g = grid(kind, dtype=dtype)[:, None]
    label, proba = run_onnx(to_onnx(cal, typed(g[:1], dtype), dtype=dtype), g)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba, cal.predict_proba(g), atol=tolerance(dtype), rtol=0)
    np.testing.assert_array_equal(label, cal.predict(g))


@pytest.mark.parametrize("cls", MAPS)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("base", ["svc", "forest", "nb_pipeline"])
def test_graph_inside_calibrated_classifier_and_pipelines(cls, n_classes, base):
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(
        1500, n_features=6, n_informative=4, n_classes=n_classes, random_state=2
    )
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    model = {
        "svc": make_pipeline(StandardScaler(), LinearSVC()),
        "forest": RandomForestClassifier(30, random_state=0),
        # exact log-odds from GaussianNB's joint log-likelihood (log_odds="auto")
        "nb_pipeline": make_pipeline(StandardScaler(), GaussianNB()),
    }[base]
    for dtype in (np.float32, np.float64):
        # a float32 graph serves float32 data, as a float32 user holds it
        data = typed(frame, dtype)
        clf = CalibratedClassifier(model, cls(), cv=2).fit(data[:1000], y[:1000])
        onx = to_onnx(clf, data[:1], dtype=dtype)
        report = check_parity(clf, onx, data[1000:])
        assert report["max_abs_error"] <= tolerance(dtype), report
        assert report["labels_equal"], report


@pytest.mark.parametrize("cls", MAPS)
def test_graph_on_real_scores(cls):
    try:
        s, y = calibration_scores("magic", LogisticRegression(max_iter=500), "predict_proba")
    except DataMissing as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    cal = clone(cls()).fit(s, y)
    assert cal.input_ == "proba"
    for dtype in (np.float32, np.float64):
        g = s.astype(dtype)[:, None]
        _, proba = run_onnx(to_onnx(cal, typed(g[:1], dtype), dtype=dtype), g)
        np.testing.assert_allclose(proba, cal.predict_proba(g), atol=tolerance(dtype), rtol=0)


# ----------------------------------------------------------------------------- Venn-Abers


def va_scores(n, seed, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if decimals is not None:
        p = np.round(p, decimals)  # ties: many rows per distinct score
    return p, (rng.random(n) < p).astype(int)


#: the reference package's own warning on an all-NaN slice of its search
REFERENCE_WARNING = "ignore:All-NaN slice:RuntimeWarning"


@pytest.mark.filterwarnings(REFERENCE_WARNING)
@pytest.mark.parametrize("n, decimals", [(12, None), (300, None), (5000, 2), (20000, None)])
def test_venn_abers_equals_the_venn_abers_package(n, decimals):
    venn_abers = pytest.importorskip("venn_abers")
    p, y = va_scores(n, n, decimals)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    ref = venn_abers.VennAbers().fit(np.column_stack([1 - p, p]), y)
    cal = VennAbersCalibrator().fit(p, y)
    test = np.r_[np.random.default_rng(1).random(2000), p[:300], -1.0, 0.0, 1.0, 2.0]
    merged, interval = ref.predict_proba(np.column_stack([1 - test, test]))
    np.testing.assert_array_equal(cal.predict_interval(test), interval)
    np.testing.assert_array_equal(cal.predict_proba(test), merged)


def test_venn_abers_interval_is_two_isotonic_regressions():
    # the definition: p0 (p1) is the isotonic fit with the test object labelled 0 (1)
    from sklearn.isotonic import IsotonicRegression

    p, y = va_scores(200, 3)
    cal = VennAbersCalibrator().fit(p, y)
    for s in np.r_[np.random.default_rng(4).random(30), p[:10]]:
        bounds = []
        for label in (0, 1):
            iso = IsotonicRegression().fit(np.r_[p, s], np.r_[y, label])
            bounds.append(iso.predict([s])[0])
        np.testing.assert_allclose(cal.predict_interval([s])[0], bounds, atol=1e-12)


def test_venn_abers_monotone_weights_and_order():
    p, y = va_scores(800, 5, decimals=2)
    k = np.random.default_rng(0).integers(0, 4, p.shape[0])
    weighted = VennAbersCalibrator().fit(p, y, sample_weight=k)
    repeated = VennAbersCalibrator().fit(np.repeat(p, k), np.repeat(y, k))
    order = np.random.default_rng(1).permutation(p.shape[0])
    shuffled = VennAbersCalibrator().fit(p[order], y[order], sample_weight=k[order])
    g = np.r_[-1.0, np.linspace(0, 1, 4001), 2.0]
    np.testing.assert_allclose(
        weighted.predict_interval(g), repeated.predict_interval(g), atol=1e-12
    )
    np.testing.assert_array_equal(weighted.predict_proba(g), shuffled.predict_proba(g))
    interval = weighted.predict_interval(g)
    assert np.all(np.diff(interval, axis=0) >= 0)  # p0 and p1 non-decreasing
    assert np.all(interval[:, 0] <= interval[:, 1] + 1e-12)
    assert np.all(np.diff(weighted.predict_proba(g)[:, 1]) >= 0)
    # only the order of the scores matters
    logit = VennAbersCalibrator().fit(np.log(p + 1e-3) - np.log1p(1e-3 - p), y)
    np.testing.assert_array_equal(
        logit.predict_interval(np.log(g[1:-1] + 1e-3) - np.log1p(1e-3 - g[1:-1])),
        VennAbersCalibrator().fit(p, y).predict_interval(g[1:-1]),
    )


def test_venn_abers_partial_fit_equals_fit():
    p, y = va_scores(3000, 2, decimals=3)
    streamed = VennAbersCalibrator()
    for chunk in np.array_split(np.arange(p.shape[0]), 5):
        streamed.partial_fit(p[chunk], y[chunk], classes=[0, 1])
    g = np.linspace(-0.1, 1.1, 1001)
    np.testing.assert_array_equal(
        streamed.predict_proba(g), VennAbersCalibrator().fit(p, y).predict_proba(g)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", [None, 3])
def test_venn_abers_graph_equals_predict_proba(dtype, decimals):
    p, y = va_scores(5000, 7, decimals)
    cal = VennAbersCalibrator().fit(p, y)
    g = np.r_[np.random.default_rng(8).random(3000), p, -1e30, 1e30, 0.0, 1.0]
    g = g.astype(dtype)[:, None]
    label, proba, _ = run_onnx(to_onnx(cal, typed(g[:1], dtype), dtype=dtype), g)
    np.testing.assert_allclose(proba, cal.predict_proba(g), atol=tolerance(dtype), rtol=0)
    # labels: the graph's ArgMax reads the float64 probabilities, Python the float32 ones;
    # a merged probability within float32 rounding of 1/2 may be labelled either way
    exact = cal.predict_proba(g.astype(np.float64))[:, 1]
    clear = np.abs(exact - 0.5) > 1e-7
    np.testing.assert_array_equal(label[clear], cal.predict(g)[clear])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_venn_abers_inside_calibrated_classifier(n_classes):
    X, y = make_classification(
        1500, n_features=6, n_informative=4, n_classes=n_classes, random_state=2
    )
    for base in (LinearSVC(), RandomForestClassifier(30, random_state=0)):
        clf = CalibratedClassifier(base, VennAbersCalibrator(), cv=2).fit(X[:1000], y[:1000])
        for dtype in (np.float32, np.float64):
            data = typed(X, dtype)
            report = check_parity(clf, to_onnx(clf, data[:1], dtype=dtype), data[1000:])
            assert report["max_abs_error"] <= tolerance(dtype), report


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_venn_abers_interval_is_an_extra_graph_output(dtype):
    from bernonnx.deploy import run_onnx as run_named

    p, y = va_scores(4000, 9)
    cal = VennAbersCalibrator().fit(p, y)
    g = np.r_[np.random.default_rng(3).random(2000), p, -1.0, 2.0].astype(dtype)[:, None]
    onx = to_onnx(cal, g[:1], dtype=dtype)
    assert [o.name for o in onx.graph.output] == ["label", "probabilities", "interval"]
    out = run_named(onx, {onx.graph.input[0].name: g})
    assert out["interval"].dtype == np.float64  # computed and given in float64
    np.testing.assert_array_equal(out["interval"], cal.predict_interval(g))
    np.testing.assert_allclose(
        out["probabilities"], cal.predict_proba(g), atol=tolerance(dtype), rtol=0
    )


def test_venn_abers_attached_to_a_model_graph_keeps_its_interval():
    import skl2onnx

    from bernonnx import attach
    from bernonnx.deploy import run_onnx as run_named

    X, y = make_classification(2000, n_features=5, random_state=0)
    model = LogisticRegression().fit(X[:1000], y[:1000])
    onx = skl2onnx.to_onnx(model, X[:1].astype(np.float32), options={"zipmap": False})
    # the model graph's own scores (a step map reads them as they are, to the last bit)
    feed = {onx.graph.input[0].name: X[1000:].astype(np.float32)}
    probabilities = run_named(onx, feed)["probabilities"][:, 1]
    cal = VennAbersCalibrator().fit(probabilities, y[1000:])
    merged = attach(onx, cal, output="probabilities", column=1)
    out = run_named(merged, {merged.graph.input[0].name: X[1000:].astype(np.float32)})
    assert [o.name for o in merged.graph.output] == ["label", "probabilities", "interval"]
    np.testing.assert_array_equal(out["interval"], cal.predict_interval(probabilities))
    np.testing.assert_allclose(
        out["probabilities"], cal.predict_proba(probabilities), atol=1e-6, rtol=0
    )


@pytest.mark.filterwarnings(REFERENCE_WARNING)
def test_venn_abers_one_vs_rest_equals_the_packages_one_vs_all():
    venn_abers = pytest.importorskip("venn_abers")
    from sklearn.frozen import FrozenEstimator

    X, y = make_classification(3000, n_features=8, n_informative=5, n_classes=3, random_state=4)
    model = RandomForestClassifier(50, random_state=0).fit(X[:1000], y[:1000])
    clf = CalibratedClassifier(
        FrozenEstimator(model), VennAbersCalibrator(), response_method="predict_proba"
    ).fit(X[1000:2000], y[1000:2000])
    p_cal, p_test = model.predict_proba(X[1000:2000]), model.predict_proba(X[2000:])
    expected, bounds = venn_abers.venn_abers.predict_proba_prefitted_va(
        p_cal, y[1000:2000], p_test, va_tpe="one_vs_all"
    )
    np.testing.assert_allclose(clf.predict_proba(X[2000:]), expected, atol=1e-15)
    interval = clf.predict_interval(X[2000:])
    assert interval.shape == (1000, 3, 2)
    for k in range(3):
        np.testing.assert_array_equal(interval[:, k], bounds[k])


@pytest.mark.parametrize("n_classes, cv", [(2, "prefit"), (2, 3), (3, "prefit"), (3, 2)])
def test_venn_abers_interval_output_of_calibrated_classifier(n_classes, cv):
    from sklearn.frozen import FrozenEstimator

    X, y = make_classification(
        2500, n_features=6, n_informative=4, n_classes=n_classes, random_state=5
    )
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    model = make_pipeline(StandardScaler(), LogisticRegression())
    if cv == "prefit":
        clf = CalibratedClassifier(
            FrozenEstimator(model.fit(frame[:1000], y[:1000])), VennAbersCalibrator()
        )
    else:
        clf = CalibratedClassifier(model, VennAbersCalibrator(), cv=cv)
    clf.fit(frame[1000:2000], y[1000:2000])
    test = frame[2000:]
    expected = clf.predict_interval(test)
    assert expected.shape == ((500, 2) if n_classes == 2 else (500, n_classes, 2))
    onx = to_onnx(clf, test[:1], dtype=np.float64)
    assert [o.name for o in onx.graph.output] == ["label", "probabilities", "interval"]
    _, _, interval = run_onnx(onx, test)
    np.testing.assert_allclose(interval, expected, atol=1e-12, rtol=0)
    report = check_parity(clf, onx, test)
    assert report["max_abs_error"] <= tolerance(np.float64), report


def test_predict_interval_only_where_every_calibrator_has_one():
    X, y = make_classification(600, random_state=0)
    clf = CalibratedClassifier(LogisticRegression(), BetaCalibrator(), cv=2).fit(X, y)
    assert not hasattr(clf, "predict_interval")
    assert not hasattr(
        CalibratedClassifier(LogisticRegression(), VennAbersCalibrator()), "predict_interval"
    )


@pytest.mark.parametrize("cls", [*MAPS, VennAbersCalibrator])
def test_statistics_blob_round_trip(cls):
    from bernonnx.stats import CalibrationStats

    s, y = scores(2000, 6, "proba")
    streamed = cls()
    for chunk in np.array_split(np.arange(s.shape[0]), 3):
        streamed.partial_fit(s[chunk], y[chunk], classes=[0, 1])
    restored = CalibrationStats.from_bytes(streamed.stats_.to_bytes()).fit()
    assert type(restored) is cls
    g = grid("proba")
    np.testing.assert_array_equal(restored.predict_proba(g), streamed.predict_proba(g))


def test_venn_abers_ties_survive_last_bit_differences_of_the_base_scores():
    # a score a few ulps off a calibration score is that score's tie (the graph of a
    # binary logistic regression sums its dot product in another order than numpy)
    p, y = va_scores(500, 11)
    cal = VennAbersCalibrator().fit(p, y)
    off = p + 4 * np.spacing(p) * np.where(np.arange(p.shape[0]) % 2, 1, -1)
    np.testing.assert_array_equal(cal.predict_interval(off), cal.predict_interval(p))
    X, target = make_classification(600, n_features=4, random_state=1)
    clf = CalibratedClassifier(LogisticRegression(), VennAbersCalibrator(), cv=3).fit(X, target)
    # every row is some fold's calibration row: its score is a calibration score
    report = check_parity(clf, to_onnx(clf, X[:3], dtype=np.float64), X)
    assert report["max_abs_error"] <= tolerance(np.float64) and report["labels_equal"], report


@pytest.mark.filterwarnings(REFERENCE_WARNING)
def test_venn_abers_saturated_probabilities_never_inverted_and_equal_the_package():
    # GaussianNB's probabilities on credit: hundreds of distinct scores below 1e-12, which
    # an absolute tie band merged (317 of 7,500 intervals had p0 > p1, 0.025 off the
    # package); a tie is now the one nearest calibration score within 1e-12 of its own size
    venn_abers = pytest.importorskip("venn_abers")
    from sklearn.naive_bayes import GaussianNB

    try:
        s, y = calibration_scores("credit", GaussianNB(), "predict_proba")
    except DataMissing as exc:
        pytest.skip(str(exc))
    half = s.shape[0] // 2
    cal = VennAbersCalibrator().fit(s[:half], y[:half])
    interval = cal.predict_interval(s)
    assert np.all(interval[:, 0] <= interval[:, 1])
    ref = venn_abers.VennAbers().fit(np.column_stack([1 - s[:half], s[:half]]), y[:half])
    merged, bounds = ref.predict_proba(np.column_stack([1 - s, s]))
    np.testing.assert_array_equal(interval, bounds)
    np.testing.assert_array_equal(cal.predict_proba(s), merged)


@pytest.mark.filterwarnings(REFERENCE_WARNING)
def test_venn_abers_near_ties_and_subnormal_scores_never_inverted():
    # generated addition: clusters of distinct scores closer than the tie band, subnormal
    # and zero scores; every interval is ordered, and on the calibration scores themselves
    # (each its own tie) the package's intervals come out exactly
    venn_abers = pytest.importorskip("venn_abers")
    rng = np.random.default_rng(12)
    centres = rng.random(40)
    s = np.r_[
        (centres[:, None] * (1 + rng.integers(-5, 6, (40, 6)) * 1e-13)).ravel(),
        rng.random(60) * 1e-310,
        np.zeros(5),
        rng.random(200),
    ]
    y = (rng.random(s.shape[0]) < np.clip(s * 1.2, 0.05, 0.95)).astype(int)
    cal = VennAbersCalibrator().fit(s, y)
    test = np.r_[s, s * (1 + 3e-13), s * (1 - 3e-13), rng.random(500) * 1e-300, 5e-324]
    interval = cal.predict_interval(test)
    assert np.all(interval[:, 0] <= interval[:, 1])
    graph = to_onnx(cal, test[:1, None])
    _, proba, bounds = run_onnx(graph, test[:, None])
    np.testing.assert_array_equal(bounds, interval)
    np.testing.assert_array_equal(proba, cal.predict_proba(test))
    ref = venn_abers.VennAbers().fit(np.column_stack([1 - s, s]), y)
    merged, expected = ref.predict_proba(np.column_stack([1 - s, s]))
    np.testing.assert_array_equal(cal.predict_interval(s), expected)


def test_venn_abers_graph_at_infinities_the_largest_float_and_nan():
    # onnxruntime raised InvalidArgument on +inf and the largest float (a Gather index one
    # past the table) and a NaN score came out 0.0667; now the graph computes what
    # Python's formula does on every float, NaN in giving NaN out (Python's predict_proba
    # refuses non-finite scores; its formula, _evaluate, is what the graph emits)
    p, y = va_scores(500, 0)
    cal = VennAbersCalibrator().fit(p, y)
    top = np.finfo(np.float64).max
    g = np.array([np.inf, -np.inf, top, -top, np.nan, 0.0, 5e-324, -5e-324, p[0]])
    from bernonnx.deploy import run_onnx as run_named

    # onnxruntime itself (bernonnx.export.onnx_inputs refuses the values Python refuses)
    onx = to_onnx(cal, g[5:6, None])
    out = run_named(onx, {onx.graph.input[0].name: g[:, None]})
    proba, interval = out["probabilities"], out["interval"]
    np.testing.assert_array_equal(proba[:, 1], cal._evaluate(g))
    np.testing.assert_array_equal(interval, np.stack(cal._bounds(g), axis=1))
    assert np.isnan(proba[4]).all() and np.isnan(interval[4]).all()
    finite = np.isfinite(g)
    np.testing.assert_array_equal(proba[finite], cal.predict_proba(g[finite]))
    # the infinities are the limits of the largest floats
    np.testing.assert_array_equal(proba[0], proba[2])
    np.testing.assert_array_equal(proba[1], proba[3])


def _credit(n):
    from bernonnx.datasets import load_credit_default

    X, y, _ = load_credit_default()
    return X[:n], y[:n]


def test_venn_abers_float32_graph_only_where_the_base_scores_are_python_s():
    # credit as float32 data: the float32 graph of a logistic regression fitted on float32
    # data (float32 BLAS sums) missed the calibration rows' ties by float32 rounding (0.018
    # off Python on 37 of 3,000 rows); it is refused now, with either dtype
    X, y = _credit(3000)
    X32 = X.astype(np.float32)
    linear = make_pipeline(StandardScaler(), LogisticRegression())
    clf = CalibratedClassifier(linear, VennAbersCalibrator(), cv=3).fit(X32, y)
    with pytest.raises(ValueError, match=r"dtype=np.float32 cannot show VennAbersCalibrator"):
        to_onnx(clf, X32[:2], dtype=np.float32)
    with pytest.raises(NotImplementedError, match="Venn-Abers calibrator's ties"):
        to_onnx(clf, X32[:2])  # float64: no graph repeats float32 BLAS sums either
    # fitted on float64 data, the model computes in float64 inside a float32 graph: its
    # scores are Python's, and every row (each a calibration row) keeps its tie
    clf = CalibratedClassifier(linear, VennAbersCalibrator(), cv=3).fit(X, y)
    onx = to_onnx(clf, X32[:2])
    assert onx.graph.output[1].type.tensor_type.elem_type == 1  # float
    report = check_parity(clf, onx, X32)
    assert report["max_abs_error"] <= tolerance(np.float32) and report["labels_equal"], report


def test_venn_abers_attach_refuses_float32_output_it_was_not_fitted_on():
    # fitted on scikit-learn's float64 probabilities and attached to a float32 graph, the
    # calibration rows' scores missed their ties (0.033 off); attach now refuses, and a
    # map fitted on the graph's own float32 scores attaches (the test above this file's
    # attach test) exactly
    import skl2onnx

    from bernonnx import attach

    X, y = _credit(4000)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:2000], y[:2000])
    onx = skl2onnx.to_onnx(model, X[:1].astype(np.float32), options={"zipmap": False})
    cal = VennAbersCalibrator().fit(model.predict_proba(X[2000:])[:, 1], y[2000:])
    with pytest.raises(ValueError, match="float32 does not hold"):
        attach(onx, cal, output="probabilities", column=1)


@pytest.mark.parametrize("factor", [1e155, 1e300, 1e-310])
def test_quadratic_fits_extreme_score_scales_as_the_same_map(factor):
    # magic's logistic-regression decision values times 1e155 / 1e300 raised OverflowError
    # and times 1e-310 ZeroDivisionError in fit; a power of two now brings them to [0.5, 1)
    # inside, the map is the same function of the raw score, and the graph computes it
    try:
        s, y = calibration_scores("magic", LogisticRegression(max_iter=500), "decision_function")
    except DataMissing as exc:
        pytest.skip(str(exc))
    s, y = s[:3000], y[:3000]
    plain = QuadraticScalingCalibrator(input="logits").fit(s, y)
    scaled = QuadraticScalingCalibrator(input="logits").fit(s * factor, y)
    assert scaled.log2_scale_ != 0 and np.isfinite(scaled.terms_).all()
    # subnormal scores keep fewer bits: the fit sees slightly rounded scores there
    atol = 1e-9 if factor < 1 else 1e-12
    np.testing.assert_allclose(
        scaled.predict_proba(s * factor), plain.predict_proba(s), atol=atol, rtol=0
    )
    top = float(np.finfo(np.float64).max)
    g = np.sort(np.r_[s * factor, -top, top, 0.0, 5e-324, -5e-324, s.max() * factor * 2])
    label, proba = run_onnx(to_onnx(scaled, g[:1, None]), g[:, None])
    np.testing.assert_allclose(proba, scaled.predict_proba(g), atol=tolerance(np.float64), rtol=0)
    assert np.all(np.diff(proba[:, 1]) >= 0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    curve=st.floats(-0.6, 0.6),
    spread=st.floats(0.3, 6.0),
    kind=st.sampled_from(["logits", "proba"]),
)
def test_quadratic_computed_map_never_decreases(seed, curve, spread, kind):
    # the adversarial pass saw the computed map fall by ~2e-16 steps on a fine grid (the
    # quadratic c + b v + a v^2 rounds down where a slope is 0); every rounded operation
    # of the map is now monotone: a fine grid over the fitted range, ulp steps at both
    # ends, the tails and the saturation never decrease
    rng = np.random.default_rng(seed)
    l = rng.normal(scale=spread, size=300)
    y = (rng.random(300) < 1 / (1 + np.exp(-(curve * l * l + l)))).astype(int)
    s = l if kind == "logits" else 1 / (1 + np.exp(-l))
    cal = QuadraticScalingCalibrator(input=kind).fit(s, y)
    lo, hi = float(s.min()), float(s.max())
    steps = np.arange(-3000, 3000)
    g = np.r_[
        np.linspace(lo, hi, 50_001),
        lo + steps * np.spacing(lo),
        hi + steps * np.spacing(hi),
        np.linspace(lo - 100 * spread, hi + 100 * spread, 2001),
    ]
    if kind == "proba":
        g = np.r_[g, np.linspace(0, 1e-12, 1001), 1 - np.linspace(0, 1e-12, 1001), 0.0, 1.0]
        g = g[(g >= 0) & (g <= 1)]
    else:
        top = float(np.finfo(np.float64).max)
        g = np.r_[g, -top, top, -1e300, 1e300, 700.0, -700.0, 40.0, -40.0]
    q = cal.predict_proba(np.sort(g))[:, 1]
    assert np.all(np.diff(q) >= 0)
