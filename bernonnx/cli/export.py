"""``bernonnx export``: one calibrator fitted on a CSV of scores, written as ONNX."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from bernonnx._registry import entry_for

from ._base import EXIT_OK, EXIT_PARITY, InputError, _Progress
from ._csv import _binary_target
from ._files import _class_labels, _Outputs, _read_labelled
from ._methods import _METHOD_LIST, _check_probabilities, _method, _reads_unit_scores
from ._stream import (
    _UNBOUNDED,
    _bounded,
    _check_method_scores,
    _fit_streamed,
    _refuse_unstreamable,
    _scan,
    _streams,
)


def _triton_files(repository: Path, name: str) -> list[Path]:
    """The files of a Triton repository, in the order written: the model, then its
    config (see :func:`bernonnx.deploy.triton._triton_files`)."""
    return [repository / name / "1" / "model.onnx", repository / name / "config.pbtxt"]


def _triton_name(name: str, flag: str) -> str:
    from bernonnx.deploy.triton import _check_model_name

    try:
        _check_model_name(name)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    return name


def _graph_outputs(args, inputs):
    """The exportable method, and what ``--onnx``/``--triton``/``--name`` will write:
    ``(method, onnx_path, triton_name or None, outputs)``, every path checked against
    ``inputs`` and writable (:class:`._files._Outputs`)."""
    method = _method(args.method)
    if not method.exportable:
        exportable = ", ".join(m.name for m in _METHOD_LIST if m.exportable)
        raise InputError(f"method {method.name!r} has no ONNX export; choose from {exportable}")
    if args.name and not args.triton:
        raise InputError("--name is the Triton model name: it needs --triton DIR")
    out = Path(args.onnx)
    outputs = _Outputs(inputs)
    outputs.add(f"--onnx {args.onnx}", out)
    name = None
    if args.triton:
        flag = "--name" if args.name else f"the Triton model name (from --onnx {args.onnx})"
        name = _triton_name(args.name or out.stem, flag)
        for path in _triton_files(Path(args.triton), name):
            outputs.add(f"--triton {args.triton}", path)
    return method, out, name, outputs


def _stage_triton(outputs: _Outputs, onx, triton: str, name: str) -> Path:
    """Stage the Triton repository's files (model first, then config) for the commit;
    its model folder."""
    from bernonnx.deploy.triton import _triton_files as repository_files

    for path, data in repository_files(onx, triton, name):
        outputs.stage(path, data)
    return Path(triton) / name


def _check_triton(onx, triton: str, name: str) -> None:
    """Refuse, before anything is written, a graph Triton's batched config cannot
    declare (a fixed first dimension, a non-tensor output...)."""
    from bernonnx.deploy.triton import _triton_config_text

    try:
        _triton_config_text(onx, name)
    except ValueError as exc:
        message = str(exc).replace(
            "pass max_batch_size=0 to serve it without batching",
            "the command line writes a batched config (max_batch_size 1024); write the "
            "repository with bernonnx.deploy.write_triton_repository(model, folder, name, "
            "max_batch_size=0) instead",
        )
        raise InputError(f"--triton {triton}: {message}; nothing was written") from None


def _graph_dtype(onx) -> str:
    from onnx import TensorProto

    elem = onx.graph.input[0].type.tensor_type.elem_type
    return "float64" if elem == TensorProto.DOUBLE else "float32"


def _type_text(value) -> str:
    """An ONNX graph input or output as ONNX writes its type: ``double[N, 1]``."""
    from onnx import TensorProto

    if not value.type.HasField("tensor_type"):
        return value.type.WhichOneof("value") or "unknown type"
    tensor = value.type.tensor_type
    dims = [
        d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "N" if i == 0 else "?")
        for i, d in enumerate(tensor.shape.dim)
    ]
    return f"{TensorProto.DataType.Name(tensor.elem_type).lower()}[{', '.join(dims)}]"


def _numpy_name(value) -> str:
    from onnx import TensorProto, helper

    elem = value.type.tensor_type.elem_type
    if elem == TensorProto.STRING:
        return "str"
    return f"np.{helper.tensor_dtype_to_np_dtype(elem).name}"


def _feed_lines(onx, path: Path, arrays: dict[str, str]) -> list[str]:
    """What a server must know to call the graph: each input's name and type, each
    output's, and the onnxruntime call with every input cast to its type.

    ``arrays`` names the Python variable of each input (by input name).
    """
    lines = [f"input {i.name!r}: {_type_text(i)}" for i in onx.graph.input]
    lines += [f"output {o.name!r}: {_type_text(o)}" for o in onx.graph.output]
    feed = ", ".join(
        f"{i.name!r}: {arrays.get(i.name, i.name)}.astype({_numpy_name(i)})"
        for i in onx.graph.input
        if i.type.HasField("tensor_type")
    )
    lines.append(f"feed: onnxruntime.InferenceSession({str(path)!r}).run(None, {{{feed}}})")
    return lines


def _dtype_note(onx, scores) -> str:
    """Which numbers the graph takes, and how to get the other float type."""
    columns = ", ".join(repr(c) for c in scores)
    if _graph_dtype(onx) == "float64":
        return (
            f"scores: column(s) {columns} as float64, shape (N, {len(scores)}); onnxruntime "
            "refuses float32 arrays here: a server holding float32 scores casts them up "
            "(exact); --dtype float32 makes a float32 graph when float32 holds every score "
            "of the file"
        )
    return (
        f"scores: column(s) {columns} as float32, shape (N, {len(scores)}); onnxruntime "
        "refuses float64 arrays here: cast them (--dtype float64 for a float64 graph)"
    )


def _print_parity(parity: dict) -> None:
    from bernonnx.export import format_parity

    print(format_parity(parity))


def _fit_labelled(method, S: np.ndarray, labels, args):
    """The calibrator of ``method`` fitted on the score matrix and the label cells, and
    a description of what it calibrates.

    A multiclass method (``temperature``, the scalings, ``sms-bernstein``...) with
    several ``--score`` columns reads every label: one column per class, in the order of
    the sorted labels; any other reads 0/1 targets (``--pos-label``). Every problem of
    the data is one :class:`InputError` naming it.
    """
    calibrator = method.make()
    read_as = ""
    if _reads_unit_scores(calibrator, S):
        read_as = "; scores all in [0, 1], read as probabilities (input='proba')"
    multiclass = entry_for(calibrator).multiclass and S.shape[1] > 1
    if multiclass:
        if args.pos_label is not None:
            raise InputError(
                f"--pos-label is for one-score methods; {method.name!r} with "
                f"{S.shape[1]} --score columns reads every label of --label {args.label!r}"
            )
        y = _class_labels(labels)
        classes = np.unique(y)
        if len(classes) != S.shape[1]:
            shown = ", ".join(map(str, classes[:10])) + (", ..." if len(classes) > 10 else "")
            raise InputError(
                f"method {method.name!r} reads one --score column per class of --label "
                f"{args.label!r}, in the order of the sorted labels: {len(classes)} "
                f"class{'es' if len(classes) != 1 else ''} ({shown}) but {S.shape[1]} "
                "--score columns"
            )
        described = (
            f"classes {', '.join(map(repr, classes.tolist()))} (one --score column each, "
            "in this order)"
        )
        counted = f"{len(classes)} classes"
    else:
        _check_scores(method, S.shape[1], "a multivariate or multiclass method")
        y, positive = _binary_target(labels, args.label, args.pos_label)
        described = f"positive label {positive!r} is class 1"
        counted = f"{int(y.sum())} positive"
    try:
        calibrator.fit(S, y)
    except ValueError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"method {method.name!r} cannot be fitted on {len(y)} rows ({counted}): {reason}"
        ) from exc
    proba = calibrator.predict_proba(S)
    if np.ptp(S, axis=0).max() > 0.0 and np.ptp(proba, axis=0).max() == 0.0:
        shown = ", ".join(f"{v:.4g}" for v in proba[0])
        if getattr(calibrator, "inverse_temperature_", None) == 0.0:
            # temperature 'inf': uniform probabilities, whatever the labels' frequencies
            raise InputError(
                f"method {method.name!r} maps every row of the file to the same "
                f"probabilities ({shown}): the scores give it no ranking to calibrate "
                "(temperature_ = inf; are they the kind the method reads? temperature "
                "scaling reads logits); nothing was written"
            )
        read_as += f"; CONSTANT: every row gets probabilities ({shown}), no ranking kept"
    return calibrator, described + read_as


def _fit_in_memory(method, args, progress: _Progress):
    """The calibrator fitted on the file in memory, the scores, their names, and what
    it calibrates (:func:`_fit_labelled`)."""
    with progress.step(f"reading {args.csv}"):
        labels, S, _ = _read_labelled(args, progress)
    if method.needs_probabilities:
        _check_probabilities(method, S, f"column {args.score[0]!r}")
    if args.sets is None:
        with progress.step(f"fitting {method.name} on {len(labels)} rows"):
            calibrator, described = _fit_labelled(method, S, labels, args)
        return calibrator, S, list(args.score), described
    calibrator, described = fit_with_sets(method, labels, S, args, progress)
    return calibrator, S, list(args.score), described


def fit_with_sets(method, labels, S, args, progress: _Progress):
    """``--sets``: the calibrator fitted on the rows not held out, and the
    ``ConformalClassifier`` around it conformalized on the held-out ones."""
    from ._sets import describe_sets, split_rows, wrap_in_sets

    fit_labels, fit_S, held_labels, held_S = split_rows(labels, S, args)
    with progress.step(f"fitting {method.name} on {len(fit_labels)} rows"):
        calibrator, described = _fit_labelled(method, fit_S, fit_labels, args)
    with progress.step(f"conformalizing on {len(held_labels)} held-out rows"):
        sets = wrap_in_sets(calibrator, held_S, held_labels, args)
    return sets, f"{described}; {describe_sets(sets)}"


def _fit_streamed_export(method, args, progress: _Progress):
    """:func:`_fit_in_memory` in passes over a Parquet file: the scores returned are a
    sample (``_stream.SAMPLE_ROWS``, the extremes included)."""
    if args.sets is not None:
        raise InputError("--sets needs the rows in memory: it cannot be used with --stream")
    _refuse_unstreamable(method, args)  # first: a multiclass method reads several columns
    _check_scores(method, len(args.score))
    if not _bounded(method):
        progress.note(_UNBOUNDED.format(method.name), always=True)
    scanned = _scan(args, progress)
    _check_method_scores(method, scanned)
    progress.note(f"{method.name}: fitting on {scanned.rows:,} rows in passes")
    start = time.perf_counter()
    calibrator = _fit_streamed(method, args, scanned, progress)
    progress.note(f"{method.name}: fitted in {time.perf_counter() - start:.1f} s")
    sample = scanned.sample[:, None]
    rows = f"a sample of {len(sample):,} of the {scanned.rows:,} rows"
    return (
        calibrator,
        sample,
        scanned.scores,
        f"positive label {scanned.positive!r} is class 1",
        rows,
    )


def _float32_holds(S: np.ndarray) -> bool:
    with np.errstate(over="ignore"):
        return bool(np.array_equal(S.astype(np.float32).astype(np.float64), S))


def _check_scores(method, n_scores: int, instead: str = "a multivariate method") -> None:
    """An :class:`InputError` when a one-score method is given several score columns,
    naming what takes them (``instead``: where a multiclass method could, too)."""
    if method.kind == "1d" and n_scores > 1:
        raise InputError(
            f"method {method.name!r} calibrates one score column but {n_scores} were "
            f"given; pass one --score, or {instead}"
        )


def _cmd_export(args, progress: _Progress) -> int:
    from skl2onnx.common.exceptions import MissingShapeCalculator

    from bernonnx.deploy import to_ort_format
    from bernonnx.export import check_parity, to_onnx

    method, out, name, outputs = _graph_outputs(args, [Path(args.csv)])

    if _streams(args):
        calibrator, S, scores, described, parity_rows = _fit_streamed_export(
            method, args, progress
        )
    else:
        calibrator, S, scores, described = _fit_in_memory(method, args, progress)
        parity_rows = None
    dtype = {"auto": None, "float32": np.float32, "float64": np.float64}[args.dtype]
    sample = S
    if dtype is np.float32 and parity_rows is None and _float32_holds(S):
        # every score of the file is a float32 value (a float32 column, small integers):
        # to_onnx refuses float64 data for a float32 graph, as a sample says nothing of
        # later rows, but here the sample is the file
        sample = S.astype(np.float32)
    try:
        with progress.step("converting to ONNX"):
            # every row as the sample: to_onnx checks that the graph's dtype carries them
            onx = to_onnx(calibrator, sample, dtype=dtype)
    except ValueError as exc:
        if "cannot carry" not in str(exc):
            raise
        raise InputError(
            f"--dtype float32: {exc}".replace("use dtype=np.float64", "use --dtype float64")
        ) from None
    except NotImplementedError as exc:
        if "differs from Python" not in str(exc):
            raise
        # to_onnx checked the graph on every row and returns none that differs
        progress.note(f"{exc}; nothing written", always=True)
        return EXIT_PARITY
    except MissingShapeCalculator:
        raise InputError(
            f"{type(calibrator).__name__} (method {method.name!r}) has no ONNX converter in "
            f"this version of bernonnx; exportable: "
            f"{', '.join(m.name for m in _METHOD_LIST if m.kind == '1d')}"
        ) from None
    with progress.step(f"checking parity in onnxruntime on {len(S):,} rows"):
        # the scores as read (float64): a float32 graph is charged with its rounding
        parity = check_parity(calibrator, onx, S)

    ort_files = []
    if args.ort and parity["passed"]:
        with tempfile.TemporaryDirectory(prefix="bernonnx-") as staging:
            staged = Path(staging) / (out.stem + ".onnx")
            staged.write_bytes(onx.SerializeToString())
            with progress.step("converting to the ORT format"):
                paths = to_ort_format(staged, Path(staging) / "ort")
            for key in ("ort", "config"):
                dest = outputs.add(
                    f"--ort {out.parent / paths[key].name}", out.parent / paths[key].name
                )
                ort_files.append((dest, paths[key].read_bytes()))
    if args.triton:
        _check_triton(onx, args.triton, name)
    outputs.stage(out, onx.SerializeToString())
    folder = None
    if parity["passed"]:
        if args.triton:
            folder = _stage_triton(outputs, onx, args.triton, name)
        for dest, data in ort_files:
            outputs.stage(dest, data)
    # a graph that differs from Python is still written, for inspection, the rest not
    outputs.commit()
    print(
        f"wrote {out}: {type(calibrator).__name__} on {', '.join(scores)}; {described}"
        + (f"; parity on {parity_rows}" if parity_rows else "")
    )
    for line in _feed_lines(onx, out, {onx.graph.input[0].name: "scores"}):
        print(f"  {line}")
    print(f"  {_dtype_note(onx, scores)}")
    _print_parity(parity)
    if args.sets is not None:
        from bernonnx.export._conformal import check_sets

        found = check_sets(calibrator, onx, S)
        print(
            f"prediction sets: the graph's equal Python's on "
            f"{found['rows'] - found['rows_differing']:,} of {found['rows']:,} rows"
        )
    if not parity["passed"]:
        skipped = [
            flag for flag, given in (("--triton", args.triton), ("--ort", args.ort)) if given
        ]
        progress.note(
            "the graph does not reproduce Python within the tolerance"
            + (f"; not written: {', '.join(skipped)}" if skipped else ""),
            always=True,
        )
        return EXIT_PARITY
    if folder is not None:
        print(f"wrote the Triton model repository {folder} (config.pbtxt, 1/model.onnx)")
    if ort_files:
        print(f"wrote {ort_files[0][0]} and {ort_files[1][0]}")
    return EXIT_OK
