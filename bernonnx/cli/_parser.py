"""The argument parser of the ``bernonnx`` command line."""

from __future__ import annotations

import argparse

from bernonnx._version import __version__

from ._base import _EXIT_HELP, InputError, _fraction
from ._methods import _DEFAULT_METHOD, _METHOD_LIST, _methods_help
from ._sets import add_sets_arguments
from ._stream import SAMPLE_ROWS, STREAM_ROWS, _streamable
from .adapt import _add_adapt_parser


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as :class:`InputError` (one line, exit 2)."""

    def error(self, message: str):
        raise InputError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _delimiter(text: str) -> str:
    """One character; ``\\t`` (as a shell passes it) or ``tab`` for a tab."""
    if text in ("\\t", "tab", "TAB"):
        return "\t"
    if len(text) != 1:
        raise argparse.ArgumentTypeError(
            f"expected one character (e.g. ';', or '\\t' for a tab), got {text!r}"
        )
    if text in '\r\n"':
        raise argparse.ArgumentTypeError(f"{text!r} cannot separate CSV fields")
    return text


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "csv",
        metavar="FILE",
        help="CSV file with a header row (.gz too), or a Parquet file (.parquet, .parq, "
        ".pq; needs pyarrow: pip install 'bernonnx[parquet]')",
    )
    parser.add_argument("--label", required=True, metavar="COL", help="the label column")
    parser.add_argument(
        "--score",
        required=True,
        action="append",
        metavar="COL",
        help="a score column, higher meaning more positive (repeat for several)",
    )
    parser.add_argument(
        "--pos-label",
        metavar="V",
        help="the positive label (default: the larger of two numeric labels); with more "
        "than two label values, V is calibrated against the rest",
    )
    parser.add_argument(
        "--delimiter",
        default=",",
        type=_delimiter,
        metavar="C",
        help="field delimiter, one character; '\\t' for a tab (default: ',')",
    )


def _add_stream_argument(parser: argparse.ArgumentParser, exportable_only: bool = False) -> None:
    streamable = [
        m.name for m in _METHOD_LIST if _streamable(m) and (m.exportable or not exportable_only)
    ]
    parser.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fit in passes over a Parquet file, never holding it in memory (default: "
        f"when it has more than {STREAM_ROWS:,} rows); --no-stream loads it into memory. "
        "Streamed, only the methods that fit in passes run "
        f"({', '.join(streamable)})",
    )


def _add_method_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--method",
        default=_DEFAULT_METHOD,
        metavar="M",
        help=f"the calibrator to fit (default: {_DEFAULT_METHOD}, the library's default "
        "calibrator, as in CalibratedClassifier)",
    )


def _build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="bernonnx",
        description="Monotone probability calibration of classifier scores, compared, "
        "exported to ONNX and laid out for Triton.",
        epilog=_EXIT_HELP,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"bernonnx {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", help="show the traceback of unexpected failures"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="the whole job on bundled data: train, calibrate, compare, plot, export",
        description="Train a HistGradientBoostingClassifier on the UCI credit-card default "
        "data (30,000 rows, shipped inside the package, licensed CC BY 4.0: I-C. Yeh, UCI "
        "Machine Learning Repository; no download), split train / calibration / "
        "validation / test 50/20/10/20 stratified; calibrate its probabilities with every "
        "bernonnx calibrator (CalibratedClassifier on the frozen model) and with "
        "scikit-learn's sigmoid and isotonic CalibratedClassifierCV; print ECE, MCE, Brier, "
        "log loss, AUC and fit time on the test rows; draw reliability diagrams; export the "
        "calibrator with the best validation log loss (chosen on rows the test metrics do "
        "not use), with the model, as one ONNX graph, check it in onnxruntime and write a "
        "Triton model repository.",
        epilog=_EXIT_HELP,
        formatter_class=formatter,
    )
    demo.add_argument(
        "--out",
        default="bernonnx-demo",
        metavar="DIR",
        help="folder for the PNGs, model.onnx and triton/ (default: ./bernonnx-demo)",
    )
    demo.add_argument(
        "--quick", action="store_true", help="6,000-row sample and a smaller model (CI smoke)"
    )
    demo.add_argument("--no-plots", action="store_true", help="skip the reliability diagrams")
    demo.add_argument("--seed", type=int, default=0, help="split and model seed (default: 0)")

    compare = commands.add_parser(
        "compare",
        help="compare calibrators on your own scores (CSV or Parquet)",
        description="Fit calibrators on scores from a CSV or Parquet file and compare them "
        "on held-out "
        "rows (default) or by K-fold cross-validated out-of-fold predictions. With one "
        "--score column the one-score calibrators run on it; with several, they run on "
        "each column and on the columns' row mean (only when the columns are one kind of "
        "score: all in [0, 1], or none), and 'multivariate' fuses the score matrix. "
        "Default methods: all but multivariate-log (slow) and temperature (it "
        "reads logits); the ones taking probabilities (uncalibrated, platt-logodds) skip "
        "the inputs not in [0, 1]. A streamed Parquet file (--stream) is read in passes and "
        "never held in memory (its one-score methods read the row mean only): the held-out "
        "rows (or the --cv folds) are chosen by a hash of the row's position and --seed (not "
        "stratified), the metrics are added up in one more pass, "
        "AUC from 2^18 probability bins (ties within a bin count one half); --plot needs "
        "the file in memory.",
        epilog=_methods_help() + "\n" + _EXIT_HELP,
        formatter_class=formatter,
    )
    _add_data_arguments(compare)
    _add_stream_argument(compare)
    compare.add_argument(
        "--method",
        action="append",
        metavar="M",
        help="a method to compare (repeat for several; default: all that apply)",
    )
    split = compare.add_mutually_exclusive_group()
    split.add_argument(
        "--test-size",
        type=_fraction,
        default=0.3,
        metavar="F",
        help="held-out fraction, stratified in memory, by a hash of the row position when "
        "streamed (default: 0.3)",
    )
    split.add_argument(
        "--cv",
        type=_positive_int,
        metavar="K",
        help="K-fold cross-validation (K >= 2) instead of one held-out split",
    )
    compare.add_argument("--seed", type=int, default=0, help="split seed (default: 0)")
    compare.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="output format"
    )
    compare.add_argument("--output", metavar="FILE", help="write there instead of stdout")
    compare.add_argument(
        "--plot",
        metavar="FILE.png",
        help="write reliability diagrams to this PNG file, one panel per method with the "
        "raw scores ('uncalibrated', when it runs) in grey in each (the name must end in "
        ".png; a folder is refused)",
    )
    compare.add_argument(
        "--n-bins", type=_positive_int, default=10, metavar="N", help="bins of ECE/MCE/plot"
    )

    export = commands.add_parser(
        "export",
        help="fit one calibrator on a CSV or Parquet file of scores and write its ONNX graph",
        description="Fit one calibrator on all rows of a CSV or Parquet file and write its "
        "ONNX graph "
        "(input: the raw score(s), shape (N, n_scores); outputs 'label' and "
        "'probabilities'). A multiclass method ('sms-bernstein', the library's multiclass "
        "default, 'temperature', the scalings) with one --score column per class, in the "
        "order of the sorted labels, calibrates the (N, K) scores of a K-class label "
        "jointly. Parity with Python is checked in onnxruntime on the file's "
        "scores as read (Python on them as they are, the graph on them cast to --dtype) "
        "and printed; when a row's probability differs by more than 1e-6 (float32) or "
        "1e-9 (float64), or a label differs, the command exits 3 and writes only the "
        ".onnx file. Rows whose label is empty or NA are dropped and counted. A streamed "
        "Parquet file (--stream) is fitted in passes; the graph's dtype and the parity "
        f"check then use a sample of about {SAMPLE_ROWS:,} rows (by a hash of the row's "
        "position) and the rows of the smallest and largest scores. "
        "Optionally writes a Triton model repository and the ORT "
        "format for onnxruntime-mobile.",
        epilog=_methods_help(exportable_only=True) + "\n" + _EXIT_HELP,
        formatter_class=formatter,
    )
    _add_data_arguments(export)
    _add_stream_argument(export, exportable_only=True)
    _add_method_argument(export)
    export.add_argument("--onnx", required=True, metavar="OUT.onnx", help="ONNX file to write")
    export.add_argument(
        "--dtype",
        choices=("auto", "float32", "float64"),
        default="auto",
        help="graph input and output type (default: auto, float64: the scores are read as "
        "float64; float32 is refused with exit 2 unless float32 holds every score of the "
        "file exactly, and always for a streamed file, whose rows are not all seen)",
    )
    export.add_argument("--triton", metavar="DIR", help="also write a Triton model repository")
    export.add_argument(
        "--name", metavar="NAME", help="Triton model name (default: the ONNX file's stem)"
    )
    export.add_argument(
        "--ort", action="store_true", help="also write the ORT format next to the ONNX file"
    )
    add_sets_arguments(export)

    attach = commands.add_parser(
        "attach",
        help="fit a calibrator on an ONNX model's scores (CSV or Parquet) and merge it into "
        "the model",
        description="Fit one calibrator on a CSV or Parquet file of the scores a model that "
        "ships as ONNX "
        "gives (and the true labels), then write ONE graph: the model's inputs, unchanged, "
        "and the outputs 'label' and 'probabilities' of the calibrator reading the model "
        "output --output (its column --column). One-score methods read one --score column; "
        "a multiclass method ('sms-bernstein', the library's multiclass default, "
        "'temperature', 'vector-scaling', 'matrix-scaling', 'svs', 'sms', "
        "'temperature-bernstein') with one --score column per class (in the order of the "
        "sorted labels) calibrates the (N, K) logits, log-probabilities or probabilities "
        "(scores all in [0, 1] are read as probabilities) jointly. Opsets are "
        "reconciled and names made unique (bernonnx.attach). The model's inputs are not in "
        "the CSV, so no parity check runs here: compare the merged graph's probabilities "
        "with the calibrator run on the model's own ONNX scores.",
        epilog=_methods_help(exportable_only=True) + "\n" + _EXIT_HELP,
        formatter_class=formatter,
    )
    attach.add_argument("model", metavar="MODEL.onnx", help="the model's ONNX file")
    _add_data_arguments(attach)
    attach.add_argument(
        "--output", required=True, metavar="NAME", help="the model output holding the scores"
    )
    attach.add_argument(
        "--column",
        type=int,
        metavar="K",
        help="the score column of a 2-D output (e.g. 1 for (N, 2) probabilities); default: "
        "the whole output, (N,) or (N, 1), or (N, K) for a multiclass method",
    )
    _add_method_argument(attach)
    attach.add_argument("--onnx", required=True, metavar="OUT.onnx", help="ONNX file to write")
    attach.add_argument(
        "--keep-outputs",
        action="store_true",
        help="keep the model's own outputs (renamed model_label / model_probabilities if "
        "they clash)",
    )
    attach.add_argument("--triton", metavar="DIR", help="also write a Triton model repository")
    attach.add_argument(
        "--name", metavar="NAME", help="Triton model name (default: the ONNX file's stem)"
    )
    add_sets_arguments(attach)
    _add_adapt_parser(
        commands,
        formatter,
        _add_data_arguments,
        _add_method_argument,
        _methods_help(exportable_only=True) + "\n" + _EXIT_HELP,
    )
    return parser
