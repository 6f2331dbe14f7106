"""Export bernonnx models (and anything containing them) to ONNX, and check parity.

>>> import numpy as np
>>> from sklearn.linear_model import LogisticRegression
>>> from bernonnx import CalibratedClassifier
>>> from bernonnx.export import check_parity, to_onnx
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 4)); y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
>>> clf = CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
>>> onx = to_onnx(clf, X[:1])
>>> [o.name for o in onx.graph.output]
['label', 'probabilities']
>>> report = check_parity(clf, onx, X)
>>> report["passed"], report["tolerance"], report["n_above"], report["labels_equal"]
(True, 1e-09, 0, True)

The graph's input type follows the data (float64 here). Python runs on ``X`` as given
and only the graph's feed is cast to the graph's declared input types, so the report
measures what a server fed those types would return.

``convert`` writes the graph (:func:`to_onnx`: its dtype, its inputs, what it refuses),
``parity`` checks it (:func:`check_parity`, :class:`ParityReport`, :func:`format_parity`);
both feed the graph through ``_inputs`` (:func:`onnx_inputs`). ``_attach`` appends a
calibrator's graph to a model that already ships as ONNX (:func:`bernonnx.attach`), after
``_onnx_model`` has read and checked that model.
"""

from ._inputs import onnx_inputs
from ._ort_rewrites import make_safe
from .convert import DEFAULT_OPSET, InexactExportWarning, float32_input_loss, to_onnx
from .parity import PARITY_TOLERANCE, ParityReport, check_parity, format_parity

__all__ = [
    "DEFAULT_OPSET",
    "InexactExportWarning",
    "PARITY_TOLERANCE",
    "ParityReport",
    "check_parity",
    "float32_input_loss",
    "format_parity",
    "make_safe",
    "onnx_inputs",
    "to_onnx",
]
