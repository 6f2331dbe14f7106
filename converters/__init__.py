"""skl2onnx parsers, shape calculators and converters for bernonnx estimators.

Installed as ``bernonnx.converters``. One explicit, idempotent call makes
``skl2onnx.to_onnx`` understand every bernonnx estimator, alone or inside a
Pipeline::

    from bernonnx.converters import register_converters
    register_converters()

:func:`bernonnx.export.to_onnx` calls it for you.

Modules, one per estimator module, plus what they share:

- ``bernstein``, ``platt``, ``isotonic``, ``histogram``, ``multivariate``,
  ``temperature``: each calibrator's emitter (found through
  ``bernonnx._registry.CALIBRATORS``);
- ``calibrator``: any calibrator on its own; ``calibration``:
  ``CalibratedClassifier``; ``fusion``: ``FusionClassifier``; ``shift``:
  ``PriorShiftAdapter`` (a calibrated model moved to new class priors);
- ``base_scores``: the base models inside the graph; ``exact`` (with
  ``exact_preprocessing``, ``exact_models``, ``exact_trees``): base-model
  converters that compute what scikit-learn computes; ``exact_boosters``: XGBoost's
  and LightGBM's raw margins, as those libraries compute them; ``boosters``:
  onnxmltools' converters for their probabilities, registered on demand;
- ``_classifier``: options, outputs, shape calculator and calibrator dispatch
  shared by the classifier converters; ``_graph``: the node writer.
"""

from __future__ import annotations

from bernonnx.converters._graph import MIN_OPSET

__all__ = ["MIN_OPSET", "register_converters"]


def register_converters() -> None:
    """Register every bernonnx estimator with skl2onnx (safe to call repeatedly).

    Examples
    --------
    After it, skl2onnx's own ``to_onnx`` converts a Pipeline ending in a calibrator:

    >>> import numpy as np
    >>> from skl2onnx import to_onnx
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from bernonnx import PlattCalibrator
    >>> from bernonnx.converters import register_converters
    >>> register_converters()
    >>> s = np.linspace(-3, 3, 100).reshape(-1, 1)
    >>> model = make_pipeline(StandardScaler(), PlattCalibrator()).fit(s, s[:, 0] > 0.3)
    >>> [output.name for output in to_onnx(model, s[:1]).graph.output]
    ['output_label', 'output_probability']
    """
    from skl2onnx import update_registered_converter
    from skl2onnx.common._registration import register_converter, register_shape_calculator

    from bernonnx._registry import CALIBRATORS
    from bernonnx.calibration import CalibratedClassifier
    from bernonnx.converters._classifier import (
        CLASSIFIER_OPTIONS,
        calculate_classifier_output_shapes,
    )
    from bernonnx.converters.base_scores import (
        SCORES,
        calculate_raw_scores_shapes,
        convert_raw_scores,
    )
    from bernonnx.converters.calibration import (
        STAGE,
        convert_calibration_stage,
        parse_calibrated_classifier,
    )
    from bernonnx.converters.calibrator import convert_score_calibrator, parse_score_calibrator
    from bernonnx.converters.fusion import (
        FUSION_STAGE,
        convert_fusion_stage,
        parse_fusion_classifier,
    )
    from bernonnx.converters.shift import (
        STAGE as SHIFT_STAGE,
    )
    from bernonnx.converters.shift import (
        calculate_prior_shift_shapes,
        convert_prior_shift_stage,
        parse_prior_shift,
    )
    from bernonnx.fusion import FusionClassifier
    from bernonnx.shift import PriorShiftAdapter

    for entry in CALIBRATORS:
        update_registered_converter(
            entry.load(),
            entry.onnx_alias,
            calculate_classifier_output_shapes,
            convert_score_calibrator,
            parser=parse_score_calibrator,
            options=CLASSIFIER_OPTIONS,
            overwrite=True,
        )
    # The meta-estimators' parsers emit the base models and a stage operator;
    # the stage (not the estimator class) carries the converter.
    for model, alias, stage, parser, converter in (
        (
            CalibratedClassifier,
            "BernonnxCalibratedClassifier",
            STAGE,
            parse_calibrated_classifier,
            convert_calibration_stage,
        ),
        (
            FusionClassifier,
            "BernonnxFusionClassifier",
            FUSION_STAGE,
            parse_fusion_classifier,
            convert_fusion_stage,
        ),
    ):
        update_registered_converter(
            model,
            alias,
            calculate_classifier_output_shapes,
            converter,
            parser=parser,
            options=CLASSIFIER_OPTIONS,
            overwrite=True,
        )
        register_shape_calculator(stage, calculate_classifier_output_shapes, overwrite=True)
        register_converter(stage, converter, overwrite=True)
    update_registered_converter(
        PriorShiftAdapter,
        "BernonnxPriorShiftAdapter",
        calculate_prior_shift_shapes,
        convert_prior_shift_stage,
        parser=parse_prior_shift,
        options={**CLASSIFIER_OPTIONS, "priors_input": [False, True]},
        overwrite=True,
    )
    register_shape_calculator(SHIFT_STAGE, calculate_prior_shift_shapes, overwrite=True)
    register_converter(SHIFT_STAGE, convert_prior_shift_stage, overwrite=True)
    register_shape_calculator(SCORES, calculate_raw_scores_shapes, overwrite=True)
    register_converter(SCORES, convert_raw_scores, overwrite=True)
