"""Parity of bernonnx ONNX graphs with Python, for every supported base model.

For each base model, each of prefit (``FrozenEstimator``) and 3-fold ensembles,
binary and 3-class, float32 and float64 graphs: the largest absolute
difference between onnxruntime's probabilities and ``predict_proba`` on 1,000
held-out rows, and whether the labels are identical. The last column is the
same figure for skl2onnx's export of the base model ALONE (float32), which
bounds what any float32 graph of that model can reach.

Run: ``python benchmarks/onnx_parity.py [--out benchmarks/onnx_parity.md]``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import skl2onnx
from _harness import md_table
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC, LinearSVC

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.export import check_parity, to_onnx

HERE = Path(__file__).resolve().parent
BASE_MODELS = {
    "LogisticRegression": LogisticRegression(),
    "LinearSVC": LinearSVC(),
    "SVC": SVC(),
    "SGDClassifier": SGDClassifier(random_state=0),
    "RandomForest": RandomForestClassifier(n_estimators=30, random_state=0),
    "ExtraTrees": ExtraTreesClassifier(n_estimators=30, random_state=0),
    "GradientBoosting": GradientBoostingClassifier(n_estimators=30, random_state=0),
    "HistGradientBoosting": HistGradientBoostingClassifier(max_iter=30, random_state=0),
    "MLPClassifier": MLPClassifier((16,), max_iter=500, random_state=0),
    "GaussianNB": GaussianNB(),
}


def base_alone_error(base, X) -> str:
    """Max |p| difference of skl2onnx's own float32 export of the fitted base model."""
    if not hasattr(base, "predict_proba"):
        return "no predict_proba"
    try:
        onx = skl2onnx.to_onnx(
            base, X[:1].astype(np.float32), options={id(base): {"zipmap": False}}
        )
    except ValueError as exc:  # HistGradientBoosting: skl2onnx 1.20 + onnx 1.23
        return f"skl2onnx fails ({str(exc)[:40]}...)"
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.run(None, {sess.get_inputs()[0].name: X.astype(np.float32)})[1]
    return f"{np.abs(out - base.predict_proba(X.astype(np.float32))).max():.1e}"


def rows(n_classes: int):
    X, y = make_classification(
        4000, n_features=10, n_informative=6, n_classes=n_classes, random_state=n_classes
    )
    X_train, y_train = X[:1500], y[:1500]
    X_cal, y_cal, X_test = X[1500:3000], y[1500:3000], X[3000:]
    for name, template in BASE_MODELS.items():
        base = clone(template).fit(X_train, y_train)
        prefit = CalibratedClassifier(FrozenEstimator(base)).fit(X_cal, y_cal)
        folds = CalibratedClassifier(clone(template), BernsteinCalibrator(), cv=3)
        folds.fit(np.vstack([X_train, X_cal]), np.r_[y_train, y_cal])
        alone = base_alone_error(base, X_test)
        for mode, model in (("prefit", prefit), ("3-fold", folds)):
            cells = []
            for dtype in (np.float32, np.float64):
                report = check_parity(model, to_onnx(model, X_test[:1], dtype=dtype), X_test)
                same = "" if report["labels_equal"] else " (labels differ)"
                cells.append(f"{report['max_abs_error']:.1e}{same}")
            yield [name, mode, f"{n_classes}", *cells, alone]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "onnx_parity.md")
    args = parser.parse_args(argv)
    header = [
        "base model",
        "calibration",
        "classes",
        "float32 graph",
        "float64 graph",
        "base alone, skl2onnx float32",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # SVC probA_/probB_ deprecation
        table = [row for n_classes in (2, 3) for row in rows(n_classes)]
    text = md_table(header, table) + "\n"
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
