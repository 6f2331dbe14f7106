"""``bernonnx attach``: a calibrator fitted on a model's scores, merged into its ONNX graph."""

from __future__ import annotations

import re
from pathlib import Path

from ._base import EXIT_OK, InputError, _Progress
from ._files import _read_labelled
from ._methods import _check_probabilities
from .export import (
    _check_triton,
    _feed_lines,
    _fit_labelled,
    _graph_outputs,
    _stage_triton,
    fit_with_sets,
)


def _input_variables(onx) -> dict[str, str]:
    """The Python variable the feed line gives each graph input: ``X`` for a model of
    one input, the input's name (as an identifier) for several."""
    names = [i.name for i in onx.graph.input]
    if len(names) == 1:
        return {names[0]: "X"}
    return {name: re.sub(r"\W", "_", name) for name in names}


def _load_model(path: Path):
    import onnx
    from google.protobuf.message import DecodeError

    try:
        return onnx.load(str(path))
    except (OSError, DecodeError) as exc:
        raise InputError(f"cannot read the ONNX model {path}: {exc}") from exc


def _cmd_attach(args, progress: _Progress) -> int:
    from bernonnx.export._attach import attach

    method, out, name, outputs = _graph_outputs(args, [Path(args.model), Path(args.csv)])

    with progress.step(f"reading {args.model}"):
        model = _load_model(Path(args.model))
    with progress.step(f"reading {args.csv}"):
        labels, S, _ = _read_labelled(args, progress)
    if method.needs_probabilities:
        _check_probabilities(method, S, f"column {args.score[0]!r}")
    if args.sets is None:
        with progress.step(f"fitting {method.name} on {len(labels)} rows"):
            calibrator, described = _fit_labelled(method, S, labels, args)
    else:
        calibrator, described = fit_with_sets(method, labels, S, args, progress)
    with progress.step("merging the graphs"):
        try:
            merged = attach(
                model,
                calibrator,
                output=args.output,
                column=args.column,
                keep_outputs=args.keep_outputs,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from exc
    outputs.stage(out, merged.SerializeToString())
    folder = None
    if args.triton:
        _check_triton(merged, args.triton, name)
        folder = _stage_triton(outputs, merged, args.triton, name)
    outputs.commit()
    column = "" if args.column is None else f" column {args.column}"
    print(
        f"wrote {out}: {type(calibrator).__name__} on output {args.output!r}{column} of "
        f"{args.model}; {described}"
    )
    for line in _feed_lines(merged, out, _input_variables(merged)):
        print(f"  {line}")
    print(
        f"  the inputs are {args.model}'s own, names and types unchanged: feed them what "
        "the model took (a float64 array for a float input is refused by onnxruntime)"
    )
    if folder is not None:
        print(f"wrote the Triton model repository {folder} (config.pbtxt, 1/model.onnx)")
    return EXIT_OK
