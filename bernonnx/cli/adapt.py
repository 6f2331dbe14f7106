"""``bernonnx adapt``: a calibrator fitted on labelled scores, moved to the class balance
of unlabeled target scores (CSV or Parquet), the estimate and its interval printed, and
the adapted graph written."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from ._base import EXIT_OK, EXIT_PARITY, InputError, _Progress
from ._files import _load, _Outputs
from ._methods import _METHOD_LIST, _method
from ._stream import _is_parquet

_DESCRIPTION = (
    "Fit one calibrator on the labelled scores of FILE (the calibration rows: their class "
    "shares are the training priors), then estimate the class priors of the unlabeled "
    "rows of --target (same --score columns, no label needed) by EM on the calibrated "
    "probabilities (Saerens, Latinne & Decaestecker 2002), print the estimate with its "
    "bootstrap interval, and, with --onnx, write ONE graph: scores in, probabilities "
    "adapted to the estimate (or to --priors) out. With --priors-input the priors are the "
    "graph's optional input 'priors' (double, (N, 2) or (1, 2)), the estimate its default: "
    "a server changes the class balance per request. Parity with Python is checked on the "
    "target rows. At least 100 target rows are needed (below that even known labels give "
    "a share's 95% interval wider than +-0.1)."
)


def _add_adapt_parser(commands, formatter, add_data, add_method, epilog: str) -> None:
    adapt = commands.add_parser(
        "adapt",
        help="estimate the class balance of unlabeled scores (CSV or Parquet), adapt a "
        "calibrator to it and write the graph",
        description=_DESCRIPTION,
        epilog=epilog,
        formatter_class=formatter,
    )
    add_data(adapt)
    add_method(adapt)
    adapt.add_argument(
        "--target",
        required=True,
        metavar="FILE",
        help="the unlabeled target rows: a CSV (same --delimiter) or Parquet file holding "
        "the --score columns",
    )
    adapt.add_argument(
        "--priors",
        metavar="P0,P1",
        help="known target priors (class 0, class 1; summing to 1) instead of the estimate",
    )
    adapt.add_argument(
        "--n-bootstrap",
        type=int,
        default=200,
        metavar="B",
        help="bootstrap resamples of the target rows behind the interval (default: 200)",
    )
    adapt.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    adapt.add_argument("--onnx", metavar="OUT.onnx", help="write the adapted graph there")
    adapt.add_argument(
        "--priors-input",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="make the priors the graph's optional input 'priors' (default: baked in)",
    )


def _target_scores(args) -> np.ndarray:
    """The --score columns of the target file as float64 (missing values kept as NaN:
    the adapter names them)."""
    import pandas as pd

    path = Path(args.target)
    if not path.is_file():
        raise InputError(f"--target: no such file {str(path)!r}")
    try:
        if _is_parquet(path):
            frame = pd.read_parquet(path, columns=list(args.score))
        else:
            frame = pd.read_csv(path, sep=args.delimiter, usecols=list(args.score))
    except (ValueError, KeyError) as exc:
        raise InputError(f"--target {path}: {str(exc).splitlines()[0]}") from None
    try:
        return frame[list(args.score)].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise InputError(
            f"--target {path}: the columns {list(args.score)} must hold numbers"
        ) from None


def _priors(text: str | None):
    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"--priors must be numbers separated by commas, got {text!r}") from None


def _cmd_adapt(args, progress: _Progress) -> int:
    from bernonnx.export import check_parity, to_onnx
    from bernonnx.shift import PriorShiftAdapter

    method = _method(args.method)
    if args.onnx and not method.exportable:
        exportable = ", ".join(m.name for m in _METHOD_LIST if m.exportable)
        raise InputError(f"method {method.name!r} has no ONNX export; choose from {exportable}")
    if method.kind != "1d" or len(args.score) != 1:
        raise InputError("adapt calibrates one --score column with a one-score method")
    outputs = _Outputs([Path(args.csv), Path(args.target)])
    if args.onnx:
        outputs.add(f"--onnx {args.onnx}", Path(args.onnx))
    with progress.step(f"reading {args.csv}"):
        data = _load(args, progress)
    calibrator = method.make()
    with progress.step(f"fitting {type(calibrator).__name__} on {len(data.y):,} rows"):
        calibrator.fit(data.S, data.y)
    train = np.array([1.0 - data.y.mean(), data.y.mean()])
    with progress.step(f"reading {args.target}"):
        S = _target_scores(args)
    adapter = PriorShiftAdapter(
        calibrator,
        priors=_priors(args.priors),
        train_prior=train,
        calibration_rows=float(len(data.y)),
        n_bootstrap=args.n_bootstrap,
        random_state=args.seed,
    )
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            adapter.fit(S)
    except ValueError as exc:
        raise InputError(str(exc).replace("X ", "--target ", 1)) from None
    for warning in caught:
        progress.note(f"warning: {warning.message}", always=True)
    source = "given" if args.priors else f"estimated from {len(S):,} target rows"
    interval = ""
    # no interval without resamples (--n-bootstrap 0): print none rather than (0, 0)
    if args.priors is None and adapter.prior_interval_ is not None:
        low, high = adapter.prior_interval_[1]
        interval = f" (95% interval {low:.4f} to {high:.4f})"
    print(
        f"prior of {data.positive!r} (class 1): {adapter.prior_[1]:.4f}{interval}, {source}; "
        f"calibration rows: {train[1]:.4f}"
        + (f"; EM steps: {adapter.n_iter_}" if args.priors is None else "")
        + (
            f"; raw EM estimate {adapter.prior_em_[1]:.4f} ("
            + ("the interval's; " if interval else "")
            + "the prior above is its posterior mean given its standard error, with one "
            "row added to each class's expected count)"
            if args.priors is None
            else ""
        )
    )
    if not args.onnx:
        return EXIT_OK
    with progress.step("converting to ONNX"):
        onx = to_onnx(adapter, S[: min(len(S), 1000)], priors_input=args.priors_input)
    parity = check_parity(adapter, onx, S)
    # a graph that differs from Python is still written, for inspection (exit 3)
    outputs.stage(Path(args.onnx), onx.SerializeToString())
    outputs.commit()
    inputs = ", ".join(f"{i.name!r}" for i in onx.graph.input)
    print(f"wrote {args.onnx}: inputs {inputs}; outputs 'label', 'probabilities'")
    print(parity.summary())
    return EXIT_OK if parity["passed"] else EXIT_PARITY
