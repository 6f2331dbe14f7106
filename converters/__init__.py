"""skl2onnx parsers, shape calculators and converters for bernonnx estimators.

Installed as ``bernonnx.converters``. One explicit, idempotent call makes
``skl2onnx.to_onnx`` understand every bernonnx estimator, alone or inside a
Pipeline::

    from bernonnx.converters import register_converters
    register_converters()

:func:`bernonnx.export.to_onnx` calls it for you.
"""

from __future__ import annotations

from bernonnx.converters._graph import MIN_OPSET

__all__ = ["MIN_OPSET", "register_converters"]


def register_converters() -> None:
    """Register every bernonnx estimator with skl2onnx (safe to call repeatedly)."""
    from skl2onnx import update_registered_converter
    from skl2onnx.common._registration import register_converter, register_shape_calculator

    import bernonnx
    from bernonnx import CalibratedClassifier, FusionClassifier
    from bernonnx.converters.calibration import (
        CALIBRATOR_ALIASES,
        CLASSIFIER_OPTIONS,
        SCORES,
        STAGE,
        calculate_classifier_output_shapes,
        calculate_raw_scores_shapes,
        convert_calibration_stage,
        convert_raw_scores,
        convert_score_calibrator,
        parse_calibrated_classifier,
        parse_score_calibrator,
    )
    from bernonnx.converters.fusion import (
        FUSION_STAGE,
        convert_fusion_stage,
        parse_fusion_classifier,
    )

    for name, alias in CALIBRATOR_ALIASES.items():
        update_registered_converter(
            getattr(bernonnx, name),
            alias,
            calculate_classifier_output_shapes,
            convert_score_calibrator,
            parser=parse_score_calibrator,
            options=CLASSIFIER_OPTIONS,
            overwrite=True,
        )
    # The meta-estimator's parser emits the base models and a stage operator;
    # the stage (not the estimator class) carries the converter.
    update_registered_converter(
        CalibratedClassifier,
        "BernonnxCalibratedClassifier",
        calculate_classifier_output_shapes,
        convert_calibration_stage,
        parser=parse_calibrated_classifier,
        options=CLASSIFIER_OPTIONS,
        overwrite=True,
    )
    register_shape_calculator(STAGE, calculate_classifier_output_shapes, overwrite=True)
    register_converter(STAGE, convert_calibration_stage, overwrite=True)
    update_registered_converter(
        FusionClassifier,
        "BernonnxFusionClassifier",
        calculate_classifier_output_shapes,
        convert_fusion_stage,
        parser=parse_fusion_classifier,
        options=CLASSIFIER_OPTIONS,
        overwrite=True,
    )
    register_shape_calculator(FUSION_STAGE, calculate_classifier_output_shapes, overwrite=True)
    register_converter(FUSION_STAGE, convert_fusion_stage, overwrite=True)
    register_shape_calculator(SCORES, calculate_raw_scores_shapes, overwrite=True)
    register_converter(SCORES, convert_raw_scores, overwrite=True)
