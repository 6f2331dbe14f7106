"""ONNX export of MultivariateBernsteinCalibrator: parity, graph validity, edge inputs.

Tolerances as in test_onnx_export.py: float32 graphs 1e-6 absolute on
probabilities, float64 graphs 1e-12; labels identical.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bernonnx import MultivariateBernsteinCalibrator
from bernonnx.export import check_parity, to_onnx

TOL = {np.float32: 1e-6, np.float64: 1e-12}
LOSSES = ("squared", "log")
TRANSFORMS = ("quantile", "logistic", "minmax")
BIG = {np.float32: float(np.finfo(np.float32).max), np.float64: float(np.finfo(np.float64).max)}


def scores(n=3000, m=2, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.standard_t(4, size=(n, m)) * np.arange(1, m + 1)
    eta = np.tanh(s).sum(axis=1) * 1.5
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return s, y


def session(onx):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        onx.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def probe(s, dtype):
    """Held-out-like rows, rows between and beyond the fitted range, extreme finite values."""
    rng = np.random.default_rng(1)
    lo, hi = s.min(axis=0), s.max(axis=0)
    m = s.shape[1]
    inside = rng.uniform(lo, hi, size=(500, m))
    outside = np.vstack([lo - 10 * (hi - lo), hi + 10 * (hi - lo)])
    big = BIG[dtype]
    extreme = np.array(
        [[big] * m, [-big] * m, [big] + [0.0] * (m - 1), [1e30] + [-1e30] * (m - 1)]
    )
    return np.vstack([s[:200], inside, outside, extreme]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("basis", ["exp", "pow"])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_parity_every_transform_loss_basis_and_dtype(transform, loss, basis, dtype):
    s, y = scores()
    cal = MultivariateBernsteinCalibrator(degree=(4, 6), loss=loss, score_transform=transform)
    cal.fit(s, y)
    onx = to_onnx(cal, s[:3], dtype=dtype, basis=basis)
    onnx.checker.check_model(onx, full_check=True)
    onnx.shape_inference.infer_shapes(onx, strict_mode=True)
    X = probe(s, dtype)
    result = check_parity(cal, onx, X)
    assert result["max_abs_error"] <= TOL[dtype], result
    assert result["labels_equal"]
    out = session(onx).run(None, {onx.graph.input[0].name: X})
    assert np.isfinite(out[1]).all()
    assert out[1].dtype == dtype


@pytest.mark.parametrize("m", [3, 4])
def test_parity_three_and_four_scores(m):
    s, y = scores(n=4000, m=m, seed=m)
    cal = MultivariateBernsteinCalibrator(degree=2, loss="log", score_transform="logistic")
    cal.fit(s, y)
    for dtype in (np.float32, np.float64):
        result = check_parity(cal, to_onnx(cal, s[:3], dtype=dtype), probe(s, dtype))
        assert result["max_abs_error"] <= TOL[dtype], (dtype, result)


@pytest.mark.parametrize("loss", LOSSES)
def test_parity_at_the_top_degree(loss):
    # one axis at the top degree 100 (the float32 C(d, k) overflow concerns
    # one axis at a time; the product of binomials is taken in log space)
    s, y = scores(n=6000)
    cal = MultivariateBernsteinCalibrator(
        degree=(100, 3), loss=loss, score_transform="logistic"
    ).fit(s, y)
    for dtype in (np.float32, np.float64):
        result = check_parity(cal, to_onnx(cal, s[:3], dtype=dtype), probe(s, dtype))
        assert result["max_abs_error"] <= TOL[dtype], (dtype, result)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_constant_columns_are_finite_for_any_input(transform):
    s, y = scores()
    s[:, 1] = 3.0  # one constant column
    cal = MultivariateBernsteinCalibrator(degree=3, score_transform=transform).fit(s, y)
    both = MultivariateBernsteinCalibrator(degree=3, score_transform=transform)
    both.fit(np.full_like(s, 2.0), y)  # every column constant
    for model, data in ((cal, s), (both, np.full_like(s, 2.0))):
        for dtype in (np.float32, np.float64):
            X = np.vstack([data[:50], probe(s, dtype)]).astype(dtype)
            result = check_parity(model, to_onnx(model, data[:3], dtype=dtype), X)
            assert result["max_abs_error"] <= TOL[dtype], (dtype, result)


def test_nan_gives_nan_probabilities_and_the_first_class():
    s, y = scores()
    cal = MultivariateBernsteinCalibrator(degree=3, loss="log").fit(s, y)
    onx = to_onnx(cal, s[:3], dtype=np.float64)
    X = np.array([[np.nan, 0.0], [0.0, np.nan], [0.0, 0.0]])
    label, proba = session(onx).run(None, {onx.graph.input[0].name: X})
    assert np.isnan(proba[:2]).all() and np.isfinite(proba[2]).all()
    assert label[:2].tolist() == [cal.classes_[0]] * 2
    with pytest.raises(ValueError, match="NaN"):
        cal.predict_proba(X)


def test_mismatched_input_width_is_named():
    s, y = scores()
    cal = MultivariateBernsteinCalibrator(degree=2).fit(s, y)
    with pytest.raises(ValueError, match=r"X_sample must have shape \(n, 2\)"):
        to_onnx(cal, s[:3, :1])
    onx = to_onnx(cal, s[:3])
    with pytest.raises(ValueError, match="takes 2 columns"):
        check_parity(cal, onx, np.zeros((3, 3)))


def test_string_labels_and_metadata():
    s, y = scores()
    labels = np.array(["no", "yes"])[y]
    cal = MultivariateBernsteinCalibrator(degree=(2, 3)).fit(s, labels)
    onx = to_onnx(cal, s[:3])
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["calibrator"] == "MultivariateBernsteinCalibrator"
    assert meta["degree"] == "(2, 3)"
    assert check_parity(cal, onx, s)["labels_equal"]


@st.composite
def monotone_problem(draw):
    m = draw(st.integers(2, 3))
    degrees = tuple(draw(st.integers(1, 8 if m == 2 else 4)) for _ in range(m))
    loss = draw(st.sampled_from(LOSSES))
    transform = draw(st.sampled_from(TRANSFORMS))
    seed = draw(st.integers(0, 2**16))
    return m, degrees, loss, transform, seed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=monotone_problem())
def test_parity_for_drawn_degrees_coefficients_and_inputs(problem):
    m, degrees, loss, transform, seed = problem
    rng = np.random.default_rng(seed)
    s, y = scores(n=400, m=m, seed=seed)
    cal = MultivariateBernsteinCalibrator(degree=1, loss=loss, score_transform=transform)
    cal.fit(s, y)
    # replace the fit by drawn coefficients, non-decreasing along every axis
    steps = rng.exponential(size=tuple(d + 1 for d in degrees))
    coef = steps
    for axis in range(m):
        coef = np.cumsum(coef, axis=axis)
    lo, hi = (-15.0, 15.0) if loss == "log" else (0.0, 1.0)
    cal.coef_ = lo + (hi - lo) * (coef - coef.min()) / (coef.max() - coef.min())
    cal.degrees_ = degrees
    X = np.vstack([s, rng.normal(scale=rng.choice([1.0, 100.0, 1e6]), size=(300, m))])
    for dtype in (np.float32, np.float64):
        result = check_parity(cal, to_onnx(cal, s[:3], dtype=dtype), X.astype(dtype))
        assert result["max_abs_error"] <= TOL[dtype], (dtype, result)
