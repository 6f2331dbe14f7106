"""onnxmltools' converters for XGBoost and LightGBM classifiers, registered on demand.

Raw margins (``decision_function``, the default score) are emitted exactly by
``converters/exact_boosters.py``. Probabilities (``response_method="predict_proba"``)
go through onnxmltools' converters, which :func:`register_booster_converter` registers
with skl2onnx when the model is one of those libraries' and onnxmltools is installed
(``pip install bernonnx[boosters]``). They compute in float32 with float32
thresholds, so they are close (1e-7), not exact.
"""

from __future__ import annotations

from bernonnx._meta import booster_kind

__all__ = ["register_booster_converter"]


def register_booster_converter(model) -> bool:
    """Register onnxmltools' converter for ``model``'s class with skl2onnx; False when
    ``model`` is no XGBoost or LightGBM classifier or onnxmltools is absent."""
    kind = booster_kind(model)
    if kind is None:
        return False
    try:
        if kind == "xgboost":
            from onnxmltools.convert.xgboost.operator_converters.XGBoost import (
                convert_xgboost as convert,
            )
        else:
            from onnxmltools.convert.lightgbm.operator_converters.LightGbm import (
                convert_lightgbm as convert,
            )
    except ImportError:
        return False
    from skl2onnx import update_registered_converter
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes

    update_registered_converter(
        type(model),
        f"Bernonnx{type(model).__name__}",
        calculate_linear_classifier_output_shapes,
        convert,
        options={"nocl": [True, False], "zipmap": [True, False, "columns"]},
        overwrite=True,
    )
    return True
