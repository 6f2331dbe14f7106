"""bernonnx in one run: fit, calibrate, compare, export to ONNX, check parity.
===========================================================================

Uses the credit-card default data shipped inside the package (no download):
a histogram gradient-boosting classifier is trained on 60% of the rows,
calibrated on 20% (prefit, through ``FrozenEstimator``) and evaluated on the
last 20%, against scikit-learn's sigmoid and isotonic calibration. The
bernonnx model (classifier + calibrator) is then exported as one ONNX graph,
run in onnxruntime on the test rows and compared with Python, and written as
a Triton model repository.

Run: ``python examples/quickstart.py [--out DIR] [--quick]`` (default: a temporary folder;
``--quick``: a stratified 6,000-row sample and a smaller model, as ``bernonnx demo --quick``)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import write_triton_repository
from bernonnx.export import check_parity, to_onnx
from bernonnx.metrics import calibration_report

COLUMNS = ("ece", "mce", "brier", "log_loss", "auc", "n_distinct")


def split(X, y, quick: bool = False):
    if quick:
        X, _, y, _ = train_test_split(X, y, train_size=6000, random_state=0, stratify=y)
    X_fit, X_test, y_fit, y_test = train_test_split(
        X, y, test_size=0.2, random_state=0, stratify=y
    )
    X_train, X_cal, y_train, y_cal = train_test_split(
        X_fit, y_fit, test_size=0.25, random_state=0, stratify=y_fit
    )
    return X_train, y_train, X_cal, y_cal, X_test, y_test


def candidates(model):
    frozen = FrozenEstimator(model)
    return {
        "sklearn sigmoid": CalibratedClassifierCV(frozen, method="sigmoid"),
        "sklearn isotonic": CalibratedClassifierCV(frozen, method="isotonic"),
        "bernonnx Bernstein (log-odds)": CalibratedClassifier(
            frozen, BernsteinCalibrator(), log_odds=True
        ),
    }


def export(model, X_test, out: Path) -> None:
    """One graph, parity in onnxruntime, and a Triton repository."""
    for dtype in (np.float32, np.float64):
        # the graph's type follows the data: a float32 server holds float32 features,
        # and Python is compared on the same features
        X = X_test.astype(dtype)
        onx = to_onnx(model, X[:1])
        report = check_parity(model, onx, X)
        print(
            f"ONNX {np.dtype(dtype).name} graph: max |p_onnx - p_python| = "
            f"{report['max_abs_error']:.1e} over {report['n_rows']} rows, "
            f"labels identical: {report['labels_equal']}"
        )
    path = out / "credit_default.onnx"
    path.write_bytes(onx.SerializeToString())
    folder = write_triton_repository(onx, out / "triton", "credit_default")
    print(f"wrote {path} and the Triton model repository {folder}")


def draw(y_test, probabilities: dict, out: Path | None) -> None:
    """Reliability diagram of the raw model and the calibrated ones (needs the plot extra)."""
    try:
        from bernonnx.plotting import reliability_diagram
    except ImportError:
        print("matplotlib is not installed (the plot extra): no reliability diagram")
        return
    ax = reliability_diagram(y_test, probabilities)
    ax.set_title("Credit default, held-out rows")
    if out is not None:
        ax.figure.savefig(out / "reliability.png", dpi=120, bbox_inches="tight")


def main(argv=None) -> None:
    # the first line of the docstring (empty in the documentation's gallery, which strips it)
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the ONNX file and Triton repository")
    parser.add_argument("--quick", action="store_true", help="6,000 rows, smaller model")
    args = parser.parse_args(argv)

    X, y, _ = load_credit_default()
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y, args.quick)
    model = HistGradientBoostingClassifier(max_iter=30 if args.quick else 100, random_state=0)
    model.fit(X_train, y_train)

    rows = {"uncalibrated": (calibration_report(y_test, model.predict_proba(X_test)[:, 1]), 0.0)}
    candidates_fitted = candidates(model)
    for name, calibrated in candidates_fitted.items():
        start = time.perf_counter()
        calibrated.fit(X_cal, y_cal)
        seconds = time.perf_counter() - start
        rows[name] = (calibration_report(y_test, calibrated.predict_proba(X_test)[:, 1]), seconds)

    print(f"credit default: {len(y_train)} train, {len(y_cal)} calibration, {len(y_test)} test")
    print(f"| calibrator | {' | '.join(COLUMNS)} | fit s |")
    print("|---" * (len(COLUMNS) + 2) + "|")
    for name, (report, seconds) in rows.items():
        cells = [f"{report[c]:.5f}" if c != "n_distinct" else f"{report[c]:,}" for c in COLUMNS]
        print(f"| {name} | {' | '.join(cells)} | {seconds:.3f} |")
    raw_auc = rows["uncalibrated"][0]["auc"]
    ours_auc = rows["bernonnx Bernstein (log-odds)"][0]["auc"]
    print(f"ranking kept exactly: {np.isclose(raw_auc, ours_auc, rtol=0, atol=0)}")

    ours = candidates_fitted["bernonnx Bernstein (log-odds)"]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    shown = ("sklearn isotonic", "bernonnx Bernstein (log-odds)")
    probabilities = {"uncalibrated": model.predict_proba(X_test)[:, 1]}
    probabilities.update(
        {name: candidates_fitted[name].predict_proba(X_test)[:, 1] for name in shown}
    )
    draw(y_test, probabilities, args.out)
    if args.out is None:
        with tempfile.TemporaryDirectory() as tmp:
            export(ours, X_test, Path(tmp))
    else:
        export(ours, X_test, args.out)


if __name__ == "__main__":
    main()
