"""What the converters refuse with a clear error (opset, input types and columns),
and the registry they read."""

import numpy as np
import pytest
from skl2onnx import to_onnx as skl2onnx_to_onnx
from skl2onnx.common.data_types import FloatTensorType, StringTensorType

from bernonnx import MultivariateBernsteinCalibrator, PlattCalibrator
from bernonnx._registry import CALIBRATORS, resolve
from bernonnx.converters import MIN_OPSET, register_converters
from bernonnx.deploy import run_onnx
from bernonnx.export import to_onnx


@pytest.fixture(scope="module")
def platt():
    rng = np.random.default_rng(0)
    s = rng.normal(size=300)
    y = (s + rng.normal(size=300) > 0).astype(int)
    return PlattCalibrator().fit(s, y), s


@pytest.mark.parametrize("entry", CALIBRATORS, ids=lambda e: e.name)
def test_registry_names_an_emitter_for_every_calibrator(entry):
    assert callable(resolve(entry.emitter))
    assert entry.load().__name__ == entry.name


@pytest.mark.parametrize("opset", [MIN_OPSET - 1, {"": MIN_OPSET - 1, "ai.onnx.ml": 3}])
def test_opset_below_minimum_is_refused(platt, opset):
    cal, s = platt
    with pytest.raises(ValueError, match=f"target_opset {MIN_OPSET - 1} is too low"):
        to_onnx(cal, s[:5, None], target_opset=opset)


def test_opset_minimum_is_accepted(platt):
    cal, s = platt
    onx = to_onnx(cal, s[:5, None], target_opset=MIN_OPSET)
    name = onx.graph.input[0].name
    p = run_onnx(onx, {name: s[:, None]})["probabilities"]  # float64 scores: float64 graph
    np.testing.assert_allclose(p, cal.predict_proba(s), atol=1e-9)


@pytest.mark.parametrize(
    ("input_type", "match"),
    [
        (FloatTensorType([None, 3]), "input 'scores' of PlattCalibrator must have 1 column"),
        (StringTensorType([None, 1]), "input 'scores' of PlattCalibrator must be a float"),
    ],
)
def test_bad_input_is_named(platt, input_type, match):
    register_converters()
    with pytest.raises(ValueError, match=match):
        skl2onnx_to_onnx(platt[0], initial_types=[("scores", input_type)], target_opset=17)


def test_multivariate_reads_one_input_per_dataframe_column():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    S = rng.normal(size=(400, 2))
    y = (S.sum(axis=1) + rng.normal(size=400) > 0).astype(int)
    cal = MultivariateBernsteinCalibrator().fit(S, y)
    frame = pd.DataFrame(S, columns=["a", "b"])
    onx = to_onnx(cal, frame[:5], dtype=np.float64)
    assert [i.name for i in onx.graph.input] == ["a", "b"]
    p = run_onnx(onx, {"a": S[:, :1], "b": S[:, 1:]})["probabilities"]
    np.testing.assert_allclose(p, cal.predict_proba(S), atol=1e-12)
