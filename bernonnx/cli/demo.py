"""``bernonnx demo``: the whole job on the bundled credit-card data."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ._base import EXIT_OK, EXIT_PARITY, _Progress
from ._files import _draw_reliability, _Outputs
from ._methods import _DEMO_CALIBRATORS, _METHODS, _report
from ._table import _table
from .export import _print_parity, _stage_triton, _triton_files

#: bootstrap resamples of the smooth ECE's interval, in the table and the figures alike:
#: a modest bootstrap keeps the demo to seconds
_DEMO_RESAMPLES = 40


def _demo_split(X, y, seed: int, quick: bool):
    from sklearn.model_selection import train_test_split

    if quick:
        # a stratified 6,000-row sample keeps the CI smoke run short
        X, _, y, _ = train_test_split(X, y, train_size=6000, random_state=seed, stratify=y)
    X_fit, X_test, y_fit, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y
    )
    X_train, X_cal, y_train, y_cal = train_test_split(
        X_fit, y_fit, test_size=0.25, random_state=seed, stratify=y_fit
    )
    # the validation rows choose the calibrator to export, so that the test rows,
    # which report and plot it, played no part in the choice
    X_train, X_val, y_train, y_val = train_test_split(
        X_train, y_train, test_size=1 / 6, random_state=seed, stratify=y_train
    )
    return X_train, y_train, X_cal, y_cal, X_val, y_val, X_test, y_test


def _cmd_demo(args, progress: _Progress) -> int:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.frozen import FrozenEstimator
    from threadpoolctl import threadpool_limits

    from bernonnx.calibration import CalibratedClassifier
    from bernonnx.datasets import load_credit_default
    from bernonnx.export import check_parity, to_onnx
    from bernonnx.metrics import log_loss

    out = Path(args.out)
    outputs = _Outputs([])
    if not args.no_plots:
        for filename in ("reliability_bernonnx.png", "reliability_vs_sklearn.png"):
            outputs.add(f"--out {args.out}", out / filename)
    outputs.add(f"--out {args.out}", out / "model.onnx")
    for path in _triton_files(out / "triton", "credit_default"):
        outputs.add(f"--out {args.out}", path)
    with progress.step("loading the UCI credit-card default data (bundled)"):
        X, y, _ = load_credit_default()
        # The graph is float32, so a server hands it float32 features. Python sees the
        # same numbers (cast once, before fitting), and the parity check compares the
        # two on what the graph actually receives.
        X = X.astype(np.float32)
        X_train, y_train, X_cal, y_cal, X_val, y_val, X_test, y_test = _demo_split(
            X, y, args.seed, args.quick
        )
    base = HistGradientBoostingClassifier(
        max_iter=30 if args.quick else 100, random_state=args.seed
    )
    with progress.step(f"training HistGradientBoostingClassifier on {len(y_train)} rows"):
        # one OpenMP thread: on 18,000 rows the threads' synchronisation costs more than
        # it saves, and on a busy machine it slowed this fit from 0.5 s to 40 s
        with threadpool_limits(limits=1, user_api="openmp"):
            base.fit(X_train, y_train)
    frozen = FrozenEstimator(base)
    models = {"uncalibrated": (base, 0.0)}
    candidates = {
        name: CalibratedClassifier(
            frozen, calibrator=_METHODS[name].make(), response_method="predict_proba"
        )
        for name in _DEMO_CALIBRATORS
    }
    candidates["sklearn-sigmoid"] = CalibratedClassifierCV(frozen, method="sigmoid")
    candidates["sklearn-isotonic"] = CalibratedClassifierCV(frozen, method="isotonic")
    for name, model in candidates.items():
        with progress.step(f"calibrating: {name} on {len(y_cal)} rows"):
            start = time.perf_counter()
            model.fit(X_cal, y_cal)
            models[name] = (model, time.perf_counter() - start)
    predictions, rows = {}, []
    for name, (model, seconds) in models.items():
        predictions[name] = model.predict_proba(X_test)[:, 1]
        rows.append(
            {
                "method": name,
                **_report(
                    y_test, predictions[name], 10, n_resamples=_DEMO_RESAMPLES, seed=args.seed
                ),
                "fit_seconds": seconds,
            }
        )

    print(
        f"UCI credit-card default (CC BY 4.0): {len(y_train)} train, {len(y_cal)} calibration, "
        f"{len(y_val)} validation, {len(y_test)} test rows; HistGradientBoostingClassifier "
        f"probabilities calibrated on the calibration rows; metrics on the test rows (ECE, "
        f"MCE: 10 bins; smECE: smooth ECE with its 90% bootstrap interval)\n"
    )
    print(_table(rows))
    validation = {
        name: log_loss(y_val, models[name][0].predict_proba(X_val)[:, 1])
        for name in _DEMO_CALIBRATORS
    }
    best = min(_DEMO_CALIBRATORS, key=validation.__getitem__)
    best_loss = rows[list(models).index(best)]["log_loss"]
    print(
        f"best bernonnx calibrator by validation log loss: {best} ({validation[best]:.5f}; "
        f"test log loss {best_loss:.5f})"
    )

    figures = []
    if not args.no_plots:
        ours = {"uncalibrated": predictions["uncalibrated"]}
        ours.update({name: predictions[name] for name in _DEMO_CALIBRATORS})
        versus = {
            name: predictions[name]
            for name in ("uncalibrated", "sklearn-sigmoid", "sklearn-isotonic", best)
        }
        for filename, curves, title in (
            ("reliability_bernonnx.png", ours, "bernonnx calibrators on the test rows"),
            (
                "reliability_vs_sklearn.png",
                versus,
                f"{best} (bernonnx) and scikit-learn's calibrators on the test rows",
            ),
        ):
            png = _draw_reliability(
                y_test,
                curves,
                10,
                title,
                progress,
                name=str(out / filename),
                reference="uncalibrated",
                n_resamples=_DEMO_RESAMPLES,
                seed=args.seed,
            )
            if png is not None:
                outputs.stage(out / filename, png)
                figures.append(out / filename)

    model = models[best][0]
    with progress.step(f"exporting {best} (HistGradientBoosting + calibrator) to ONNX"):
        onx = to_onnx(model, X_test[:1])
    with progress.step("checking parity in onnxruntime"):
        parity = check_parity(model, onx, X_test)
    path = out / "model.onnx"
    outputs.stage(path, onx.SerializeToString())
    if parity["passed"]:
        folder = _stage_triton(outputs, onx, out / "triton", "credit_default")
    # a graph that differs from Python is still written, for inspection, the rest not
    outputs.commit()
    for figure in figures:
        print(f"wrote {figure}")
    _print_parity(parity)
    if not parity["passed"]:
        progress.note(
            f"wrote {path}, but the graph does not reproduce Python within the tolerance; "
            "no Triton repository written",
            always=True,
        )
        return EXIT_PARITY
    print(f"wrote {path} and the Triton model repository {folder}")
    return EXIT_OK
