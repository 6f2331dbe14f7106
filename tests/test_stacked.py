"""``StackedCalibrator``: five monotone maps stacked on their out-of-fold log-odds.

Properties: non-decreasing in the score everywhere (float extremes included) and never
NaN for a finite score; the weights are non-negative; a fit with weight-0 rows equals
the fit without them; the parametric members and the stack regression are the weighted
optimum and weights equal repetition there; a one-member truth gets that member's map;
too few rows fall back to the Bernstein member; the graph equals ``predict_proba`` alone
(float64, and a float32 graph on float32 scores) and inside ``CalibratedClassifier`` on
real tables as pandas reads them (``benchmarks/_realdata.py`` cells, every test row); bad
input is named.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _parity import run_onnx, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR, Cell, run_cell
from bernonnx import BernsteinCalibrator, CalibratedClassifier, StackedCalibrator
from bernonnx._core.increasing import FAMILIES, IncreasingLogistic, row_loss
from bernonnx.calibrators.stacked import MEMBERS, stack_weights
from bernonnx.export import to_onnx


def scores(n, seed, kind="logits", curve=0.08):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=n) * 2.0
    y = (rng.random(n) < expit(curve * s * s + 0.9 * s - 0.3)).astype(int)
    return (expit(s) if kind == "proba" else s), y


EXTREMES = {
    "logits": [-1.7976931348623157e308, 1.7976931348623157e308, -1e30, 1e30, 0.0, 5e-324],
    "proba": [0.0, 1.0, 5e-324, 1e-300, 1 - 1e-16, 0.5, 1 - 2**-53],
}


@pytest.fixture(scope="module", params=["logits", "proba"])
def fitted(request):
    s, y = scores(2500, 0, request.param)
    return request.param, s, StackedCalibrator().fit(s, y)


def test_non_decreasing_and_finite_everywhere(fitted):
    kind, s, cal = fitted
    lo, hi = (0.0, 1.0) if kind == "proba" else (s.min() - 50, s.max() + 50)
    grid = np.sort(np.r_[s, EXTREMES[kind], np.linspace(lo, hi, 4001)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes at the extremes
        p = cal.predict_proba(grid)[:, 1]
    assert np.isfinite(p).all()
    assert np.all(np.diff(p) >= 0)
    assert cal.input_ == kind
    assert np.all(cal.weights_ >= 0) and cal.weights_.shape == (len(MEMBERS),)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_graph_equals_python(fitted, dtype):
    # float32: scores held as float32 (a float32 graph), the test of that dtype
    kind, s, cal = fitted
    lo, hi = (0.0, 1.0) if kind == "proba" else (s.min() - 5, s.max() + 5)
    grid = np.r_[s, EXTREMES[kind], np.linspace(lo, hi, 1001)]
    grid = grid[np.abs(grid) <= np.finfo(dtype).max].astype(dtype)
    onx = to_onnx(cal, grid[:2, None], dtype=dtype)
    label, proba = run_onnx(onx, grid[:, None])
    want = cal.predict_proba(grid)
    assert want.dtype == dtype
    assert np.abs(proba - want).max() <= tolerance(dtype)
    np.testing.assert_array_equal(label, cal.predict(grid))


def test_zero_weights_equal_dropped_rows():
    s, y = scores(1500, 1)
    w = np.random.default_rng(2).integers(0, 3, size=s.shape[0]).astype(float)
    a = StackedCalibrator().fit(s, y, sample_weight=w)
    keep = w > 0
    b = StackedCalibrator().fit(s[keep], y[keep], sample_weight=w[keep])
    grid = np.linspace(-8, 8, 301)
    np.testing.assert_array_equal(a.predict_proba(grid), b.predict_proba(grid))


@pytest.mark.parametrize("family", FAMILIES)
def test_parametric_member_is_the_weighted_optimum_and_weights_equal_repetition(family):
    s, y = scores(1200, 3)
    w = np.random.default_rng(4).integers(1, 4, size=s.shape[0]).astype(float)
    weighted = IncreasingLogistic(family).fit(s, y.astype(float), w)
    repeated = IncreasingLogistic(family).fit(
        np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int)).astype(float)
    )
    grid = np.linspace(-10, 10, 201)
    np.testing.assert_allclose(weighted.log_odds(grid), repeated.log_odds(grid), atol=1e-6)
    # no feasible direction lowers the loss: the non-negative slopes' KKT conditions
    eta = weighted.log_odds(s)
    loss = float(w @ row_loss(y, eta))
    for step in (1e-4, -1e-4):
        shifted = float(w @ row_loss(y, eta + step))
        assert shifted >= loss - 1e-9 * loss


def test_stack_weights_are_the_non_negative_optimum_and_weights_equal_repetition():
    rng = np.random.default_rng(5)
    E = rng.normal(size=(800, 4)) * [1.0, 2.0, 0.5, 1.5]
    y = (rng.random(800) < expit(0.7 * E[:, 0] - 0.5 * E[:, 1] + 0.2)).astype(float)
    w = rng.integers(1, 4, size=800).astype(float)
    theta = stack_weights(E, y, w)
    rows = np.repeat(np.arange(800), w.astype(int))
    np.testing.assert_allclose(
        theta, stack_weights(E[rows], y[rows], np.ones(rows.size)), atol=1e-5
    )
    assert theta[2] == 0.0  # the member that should enter negatively is out

    def loss(t):
        return float(w @ row_loss(y, t[0] + E @ t[1:]))

    ref = minimize(loss, np.zeros(5), method="Powell", bounds=[(None, None)] + [(0, None)] * 4)
    assert loss(theta) <= ref.fun + 1e-6


def test_a_logistic_truth_gets_the_affine_map():
    # labels drawn from an affine map of the log-odds: the stack should read as that map
    rng = np.random.default_rng(6)
    s = rng.normal(size=6000) * 2.0
    y = (rng.random(6000) < expit(0.6 * s - 0.4)).astype(int)
    cal = StackedCalibrator().fit(s, y)
    grid = np.linspace(-4, 4, 81)
    np.testing.assert_allclose(cal.predict_proba(grid)[:, 1], expit(0.6 * grid - 0.4), atol=0.03)


@pytest.mark.parametrize("n", [3, 6])
def test_too_few_rows_fall_back_to_the_bernstein_member(n):
    s = np.linspace(-1, 1, n)
    y = np.r_[np.zeros(n - 1), 1].astype(int)
    cal = StackedCalibrator().fit(s, y)
    np.testing.assert_array_equal(cal.weights_, [0.0, 0.0, 0.0, 1.0, 0.0])
    assert np.isnan(cal.oof_log_loss_).all()
    own = BernsteinCalibrator().fit(s, y).predict_proba(s)[:, 1]
    np.testing.assert_allclose(cal.predict_proba(s)[:, 1], own, rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(40, 400),
    slope=st.floats(-1.0, 3.0),
    curve=st.floats(-0.3, 0.3),
)
def test_monotone_on_any_data(seed, n, slope, curve):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(3, size=n) * 3.0
    y = (rng.random(n) < expit(slope * s + curve * s * s)).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small fold's member may warn (documented)
        cal = StackedCalibrator().fit(s, y)
    p = cal.predict_proba(np.sort(np.r_[s, np.linspace(-1e3, 1e3, 2001)]))[:, 1]
    assert np.isfinite(p).all() and np.all(np.diff(p) >= 0)


def test_bad_input_is_named():
    s, y = scores(300, 7)
    with pytest.raises(ValueError, match="input"):
        StackedCalibrator(input="odds").fit(s, y)
    with pytest.raises(ValueError, match=r"input='proba'.*\[0, 1\]"):
        StackedCalibrator(input="proba").fit(s, y)
    cal = StackedCalibrator().fit(expit(s), y)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cal.predict_proba(s + 5)
    with pytest.raises(ValueError, match="NaN|finite"):
        cal.predict_proba([0.5, np.nan])


# ---------------------------------------------------------------- real tables, every row

HAVE_DATA = all((DEFAULT_DATA_DIR / spec.file).is_file() for spec in DATASETS.values())


@pytest.mark.skipif(not HAVE_DATA, reason=f"the shared tables are not at {DEFAULT_DATA_DIR}")
@pytest.mark.parametrize(
    "cell",
    [
        # decision values into a ColumnTransformer of the frame as pandas reads it
        Cell("credit", "LogisticRegression", calibration="stack"),
        # probabilities (input="proba"), a bare model on the numeric frame
        Cell("shoppers", "RandomForest", layout="bare", preprocessing="none", calibration="stack"),
        # one-vs-rest on five classes
        pytest.param(
            Cell("diabetes", "LogisticRegression", task="multiclass", calibration="stack"),
            marks=pytest.mark.slow,
        ),
    ],
    ids=lambda c: c.id,
)
def test_graph_equals_python_on_real_tables(cell):
    result = run_cell(cell)
    assert result["error"] is None, result["error"] + "\n" + result.get("traceback", "")
    assert result["outcome"] != "refused", result
    assert result["n_above"] == 0, (
        f"{result['n_above']} of {result['n_test']} rows above {result['tolerance']:g} "
        f"(max {result['max_abs_error']:.2e})"
    )
    assert result["n_label_mismatch"] == 0 and result["passed"]


def test_calibrated_classifier_tells_the_stack_what_its_scores_are():
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(8)
    X = rng.normal(size=(1500, 3))
    y = (rng.random(1500) < expit(X @ [1.0, -0.5, 0.3])).astype(int)
    for model, kind in (
        (LogisticRegression(), "logits"),
        (RandomForestClassifier(20, random_state=0), "proba"),
    ):
        model.fit(X[:700], y[:700])
        cc = CalibratedClassifier(FrozenEstimator(model), StackedCalibrator()).fit(
            X[700:], y[700:]
        )
        (pair,) = cc.calibrated_classifiers_
        assert pair.calibrators[0].input_ == kind
        p = cc.predict_proba(X)[:, 1]
        assert np.isfinite(p).all()
        # the meta-estimator's probabilities are the stack's on the model's scores
        s = model.decision_function(X) if kind == "logits" else model.predict_proba(X)[:, 1]
        np.testing.assert_array_equal(p, pair.calibrators[0].predict_proba(s)[:, 1])


def test_separated_rows_get_the_bound_not_zero_or_one():
    # kr_vs_kp-like: the score separates the calibration rows without error, so the
    # unpenalised members and stacking weights run away; the bound keeps a later row on
    # the wrong side of the gap at sigmoid(-15), in Python and in the graph
    rng = np.random.default_rng(9)
    s = np.r_[rng.normal(-3.0, 1.0, 400), rng.normal(3.0, 1.0, 400)]
    y = np.r_[np.zeros(400), np.ones(400)].astype(int)
    s[y == 0] = np.minimum(s[y == 0], -0.5)
    s[y == 1] = np.maximum(s[y == 1], 0.5)
    bounded = StackedCalibrator().fit(s, y)
    free = StackedCalibrator(logit_bound=np.inf).fit(s, y)
    grid = np.linspace(-20, 20, 401)
    p = bounded.predict_proba(grid)[:, 1]
    assert p.min() == expit(-15.0) and p.max() == expit(15.0)
    q = free.predict_proba(grid)[:, 1]
    assert q.min() < expit(-15.0) and q.max() > expit(15.0)  # what the bound prevents
    inside = (q > expit(-15.0)) & (q < expit(15.0))
    np.testing.assert_array_equal(p[inside], q[inside])
    onx = to_onnx(bounded, grid[:2, None])
    np.testing.assert_allclose(
        run_onnx(onx, grid[:, None])[1], bounded.predict_proba(grid), atol=1e-12, rtol=0
    )
    with pytest.raises(ValueError, match="logit_bound"):
        StackedCalibrator(logit_bound=0.0).fit(s, y)
