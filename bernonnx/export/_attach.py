"""``attach``: a fitted calibrator appended to a model that already ships as ONNX.

For models exported by PyTorch, TensorFlow, XGBoost or another team's pipeline:
the calibrator is exported alone by our converters (:func:`bernonnx.export.to_onnx`,
at the dtype of the model's score output), an adapter picks its score column,
and ``onnx.compose`` joins the two graphs into one::

    model inputs -> model -> output (N,), (N, 1) or (N, K)
                 -> [Gather(column) | Reshape(N, 1) | a checked reshape] -> Cast(double)
                 -> calibrator
                 -> label (N,), probabilities (N, n_classes)

When the graph does not say how wide the score output is, the one-score
adapter is ``Flatten -> Squeeze(axis 1) -> Unsqueeze``, not ``Reshape(-1, 1)``:
an output of two columns then fails the run instead of becoming twice as many
rows.

The given model is read and checked first (its outputs' types, the score output and
column, external data: :mod:`bernonnx.export._onnx_model`); this module builds the graph.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import skl2onnx
from onnx import TensorProto, compose, helper, version_converter
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from bernonnx._registry import entry_for
from bernonnx._version import __version__
from bernonnx.conformal import ConformalClassifier
from bernonnx.converters._graph import MIN_OPSET
from bernonnx.shift import PriorShiftAdapter

from ._conformal import finish as finish_sets
from ._errors import check_float32_ties
from ._onnx_model import (
    _adapter,
    _check_external_data,
    _complete_outputs,
    _refuse_invalid,
    _score_output,
    _subgraphs,
    load_model_file,
)
from ._ort_rewrites import make_safe
from .convert import _describe, to_onnx

__all__ = ["attach"]


def _tensor_names(graph: onnx.GraphProto) -> set[str]:
    """Every tensor and node name of ``graph`` and its subgraphs."""
    names: set[str] = set()
    for g in _subgraphs(graph):
        names.update(i.name for i in g.input)
        names.update(o.name for o in g.output)
        names.update(t.name for t in g.initializer)
        names.update(v.name for v in g.value_info)
        for node in g.node:
            names.update(node.input)
            names.update(node.output)
            names.add(node.name)
    names.discard("")
    return names


def _rename(graph: onnx.GraphProto, mapping: dict[str, str]) -> None:
    """Rename tensors (not inputs) of ``graph`` and its subgraphs in place."""
    for g in _subgraphs(graph):
        for items in (g.output, g.initializer, g.value_info):
            for item in items:
                item.name = mapping.get(item.name, item.name)
        for node in g.node:
            node.input[:] = [mapping.get(name, name) for name in node.input]
            node.output[:] = [mapping.get(name, name) for name in node.output]


def _unique(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def _used_domains(model: onnx.ModelProto) -> set[str]:
    domains = {node.domain for g in _subgraphs(model.graph) for node in g.node}
    return {"" if d == "ai.onnx" else d for d in domains}


def _opset(model: onnx.ModelProto, domain: str) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ((domain, "ai.onnx") if domain == "" else (domain,)):
            return int(entry.version)
    return None


def _set_opset(model: onnx.ModelProto, domain: str, version: int) -> None:
    for entry in model.opset_import:
        if entry.domain == domain:
            entry.version = version
            return
    model.opset_import.add(domain=domain, version=version)


def _prune(graph: onnx.GraphProto) -> None:
    """Drop the nodes and initializers no graph output depends on."""
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(graph.node):  # nodes are in topological order
        if needed.intersection(node.output):
            keep.append(node)
            needed.update(node.input)
            for attribute in node.attribute:  # names a subgraph reads from outside
                for sub in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                    for g in _subgraphs(sub):
                        needed.update(name for n in g.node for name in n.input)
    del graph.node[:]
    graph.node.extend(reversed(keep))
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)


def _unprefix_inputs(graph: onnx.GraphProto, prefix: str, names: list[str], taken) -> None:
    """The calibrator graph's optional inputs (``priors``) under their own names again
    (the first free one), not the prefix every calibrator tensor got."""
    for name in names:
        old, new = prefix + name, _unique(name, taken)
        for item in (*graph.input, *graph.initializer):
            if item.name == old:
                item.name = new
        for node in graph.node:
            node.input[:] = [new if i == old else i for i in node.input]


def _calibrator_graph(
    calibrator, dtype, opset: int, ml_opset: int | None, priors_input: bool = False
) -> onnx.ModelProto:
    """The calibrator alone, at ai.onnx ``opset``, importing only the domains it uses."""
    width = int(calibrator.n_features_in_)
    target = {"": min(opset, skl2onnx.get_latest_tested_opset_version())}
    if ml_opset is not None:
        target["ai.onnx.ml"] = ml_opset
    onx = to_onnx(
        calibrator,
        np.zeros((1, width), dtype=dtype),
        dtype=dtype,
        target_opset=target,
        priors_input=priors_input,
    )
    used = _used_domains(onx)
    imports = [e for e in onx.opset_import if e.domain in used or e.domain == ""]
    del onx.opset_import[:]
    onx.opset_import.extend(imports)
    # skl2onnx declares the lowest opset its nodes need; they were written for ``target``
    _set_opset(onx, "", target[""])
    if opset > target[""]:
        onx = version_converter.convert_version(onx, opset)
    return onx


def attach(
    model,
    calibrator,
    *,
    output: str,
    column: int | None = None,
    keep_outputs: bool = False,
    priors_input: bool = False,
) -> onnx.ModelProto:
    """One ONNX graph: ``model`` followed by the fitted ``calibrator`` on one of its outputs.

    Parameters
    ----------
    model : onnx.ModelProto or path
        The model, as exported by any tool (PyTorch, TensorFlow, skl2onnx...).
        It is not modified.
    calibrator : fitted bernonnx calibrator, or PriorShiftAdapter around one
        Fitted on the model's scores, as ``output`` (and ``column``) gives them:
        a one-score calibrator (``BernsteinCalibrator``, ``PlattCalibrator``...),
        a multi-score one on all columns, or a multiclass one
        (``TemperatureCalibrator``) on the (N, K) logits or probabilities. A
        fitted :class:`~bernonnx.PriorShiftAdapter` wrapping such a calibrator
        (with its ``train_prior``) adds its adaptation to new priors after it. A
        fitted :class:`~bernonnx.ConformalClassifier` wrapping either adds the
        output ``prediction_set`` (bool, (N, n_classes)) after them.
    output : str
        The model output holding the scores: a float or double tensor.
    column : int, optional
        The score column of a 2-D ``output`` for a one-score calibrator (e.g. 1
        for a binary classifier's (N, 2) probabilities). None: the whole output,
        which must then be (N,) or (N, 1) for a one-score calibrator, and (N, K)
        for one fitted on K columns. When neither the graph nor ONNX shape
        inference gives the output's width, a one-score calibrator reads it as
        ``(N, 1)``, and a run on an output of several columns fails
        (onnxruntime names the Squeeze node ``adapter_one_score_per_row``)
        instead of calibrating every column as a row.
    keep_outputs : bool, default=False
        Keep the model's own outputs next to ``label`` and ``probabilities``.
        An original output or tensor named ``label`` or ``probabilities`` is
        renamed ``model_label`` / ``model_probabilities`` (the first free name).
    priors_input : bool, default=False
        With a ``PriorShiftAdapter``: the target priors are the optional graph input
        ``priors`` (double, (N, K) or (1, K); default ``prior_``), as in
        :func:`~bernonnx.export.to_onnx`. ``priors_1``... if the model has a tensor
        of that name.

    Returns
    -------
    onnx.ModelProto
        The model's inputs, unchanged, and the outputs ``label`` (N,) and
        ``probabilities`` (N, n_classes) in the score output's float type (plus
        the kept outputs), and the float64 (N, 2) ``interval`` of a calibrator that
        has one (``VennAbersCalibrator``). The calibrator computes in float64 inside.

    Raises
    ------
    ValueError
        ``output`` is not a float tensor output of the model (or has no type
        that shape inference can find), ``column`` does not fit its shape, the
        model keeps tensors in external files that are not loaded, the model
        fails ``onnx.checker.check_model``, or a ``VennAbersCalibrator`` fitted on
        scores float32 does not hold is attached to a float32 ``output`` (its
        calibration rows' graph scores would miss their ties).

    Notes
    -----
    Opsets are reconciled: the calibrator is exported at the model's ai.onnx
    opset (from 13 on; a model below 13 is converted up to 13 by
    ``onnx.version_converter``), importing no ai.onnx.ml unless it uses it; the
    IR version is the larger of the two. The calibrator's names get a prefix
    that no name of the model has. ``metadata_props`` keeps the model's entries
    and adds what was attached (``attach_output``, ``attach_column``, the
    calibrator, the library versions, the model's producer).

    Examples
    --------
    >>> import numpy as np
    >>> from skl2onnx import to_onnx as skl_to_onnx
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from bernonnx import PlattCalibrator, attach
    >>> from bernonnx.deploy import run_onnx
    >>> X, y = make_classification(1000, random_state=0)
    >>> X = X.astype(np.float32)
    >>> lr = LogisticRegression().fit(X[:500], y[:500])
    >>> onx = skl_to_onnx(lr, X[:1], options={"zipmap": False}, target_opset=15)
    >>> scores = run_onnx(onx, {"X": X[500:]})["probabilities"][:, 1]
    >>> cal = PlattCalibrator().fit(scores, y[500:])
    >>> merged = attach(onx, cal, output="probabilities", column=1)
    >>> [o.name for o in merged.graph.output]
    ['label', 'probabilities']
    >>> p = run_onnx(merged, {"X": X[500:]})["probabilities"]
    >>> bool(np.abs(p - cal.predict_proba(scores)).max() < 1e-6)
    True
    """
    if isinstance(calibrator, ConformalClassifier):  # the calibrated graph, then the sets
        check_is_fitted(calibrator)
        merged = attach(
            model,
            calibrator.estimator_,
            output=output,
            column=column,
            keep_outputs=keep_outputs,
            priors_input=priors_input,
        )
        return finish_sets(calibrator, merged, None)
    if isinstance(model, str | os.PathLike):
        model = load_model_file(model, "model")
    if not isinstance(model, onnx.ModelProto):
        raise ValueError(f"model must be an onnx.ModelProto or a path, got {type(model)!r}")
    shift = calibrator if isinstance(calibrator, PriorShiftAdapter) else None
    if shift is not None:
        if not hasattr(shift, "prior_"):
            raise ValueError("calibrator: the PriorShiftAdapter is not fitted")
        calibrator = shift.estimator_
    try:
        entry = entry_for(calibrator)
    except TypeError as exc:
        raise ValueError(f"calibrator must be a fitted bernonnx calibrator: {exc}") from None
    try:
        check_is_fitted(calibrator)
    except NotFittedError as exc:
        raise ValueError(f"calibrator is not fitted: {exc}") from None
    if not hasattr(calibrator, "classes_"):
        raise ValueError(f"calibrator {type(calibrator).__name__} is not fitted")
    if priors_input and shift is None:
        raise ValueError(
            f"priors_input=True needs a PriorShiftAdapter, got {type(calibrator).__name__}"
        )
    base = onnx.ModelProto()
    base.CopyFrom(model)
    _check_external_data(base)
    if output in {o.name for o in base.graph.output}:
        try:
            _complete_outputs(base, output, keep_outputs)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
            _refuse_invalid(model, exc)  # a ValueError when the model fails the checker
    info, dtype, dims = _score_output(base, output)
    check_float32_ties(calibrator, dtype, output)
    width = int(calibrator.n_features_in_)
    if width > 1 and not (entry.multi or entry.multiclass):
        raise ValueError(f"{type(calibrator).__name__} must read one score column")
    kind, index = _adapter(dims, column, width, output, calibrator)

    opset = _opset(base, "")
    if opset is None or opset < MIN_OPSET:
        try:
            base = version_converter.convert_version(base, MIN_OPSET)
        except Exception as exc:  # noqa: BLE001 - onnx's converter names nothing of ours
            raise ValueError(
                f"model imports ai.onnx opset {opset or 'none'}, which attach must raise to "
                f"{MIN_OPSET}, and onnx's version converter failed: "
                f"{' '.join(str(exc).split())[:200]}; export the model at opset "
                f"{MIN_OPSET} or later"
            ) from exc
        opset = MIN_OPSET
    ml_opset = _opset(base, "ai.onnx.ml")
    cal = _calibrator_graph(
        calibrator if shift is None else shift, dtype, opset, ml_opset, priors_input
    )
    # label, probabilities, and the interval of a calibrator that has one (Venn-Abers)
    added = tuple(o.name for o in cal.graph.output)
    for entry_ in cal.opset_import:
        theirs = _opset(base, entry_.domain)
        if theirs is not None and theirs != entry_.version:
            raise ValueError(
                f"the calibrator needs {entry_.domain or 'ai.onnx'} opset {entry_.version} "
                f"and the model imports version {theirs}"
            )

    # the new outputs' names are free in the model: rename any tensor holding one
    taken = _tensor_names(base.graph)
    inputs = {i.name for i in base.graph.input}
    clash = {name for name in added if name in taken}
    if clash & inputs:
        raise ValueError(
            f"the model has an input named {sorted(clash & inputs)[0]!r}, which attach adds "
            "as an output; rename the model's input first"
        )
    renamed = {name: _unique(f"model_{name}", taken | set(added)) for name in sorted(clash)}
    _rename(base.graph, renamed)
    output_name = renamed.get(output, output)
    kept = [o.name for o in base.graph.output]
    taken = _tensor_names(base.graph) | set(added)

    # the adapter: the model's score output in, the calibrator's (N, width) input out
    cal_input = cal.graph.input[0].name
    score = _unique("scores", _tensor_names(cal.graph))
    feed = helper.make_tensor_value_info(score, info.type.tensor_type.elem_type, None)
    feed.type.CopyFrom(info.type)
    if kind == "gather":
        indices = helper.make_tensor("column", TensorProto.INT64, [1], index)
        adapter = helper.make_node("Gather", [score, "column"], [cal_input], axis=1)
    elif kind == "reshape":
        indices = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 1])
        adapter = helper.make_node("Reshape", [score, "shape"], [cal_input])
    elif kind == "rows":
        # Flatten to (N, k), Squeeze axis 1 (fails the run unless k == 1: onnxruntime's
        # message names this node), Unsqueeze back to (N, 1). Not a Reshape to
        # (Shape(output)[0], 1): onnxruntime's graph optimizer folds that into (-1, 1).
        taken_here, picked = _tensor_names(cal.graph) | {score}, []
        for wanted in ("axis_1", "flat", "one_score"):
            picked.append(_unique(wanted, taken_here))
            taken_here.add(picked[-1])
        axis, flat, squeezed = picked
        indices = helper.make_tensor(axis, TensorProto.INT64, [1], [1])
        checks = [
            helper.make_node("Flatten", [score], [flat], axis=1),
            helper.make_node(
                "Squeeze", [flat, axis], [squeezed], name="adapter_one_score_per_row"
            ),
        ]
        for i, node in enumerate(checks):
            cal.graph.node.insert(i, node)
        adapter = helper.make_node("Unsqueeze", [squeezed, axis], [cal_input])
    else:
        indices, adapter = None, helper.make_node("Identity", [score], [cal_input])
    adapter.name = "adapter"
    if indices is not None:
        cal.graph.initializer.append(indices)
    cal.graph.node.insert(2 if kind == "rows" else 0, adapter)
    defaults = {t.name for t in cal.graph.initializer}
    optional = [i for i in cal.graph.input if i.name in defaults]  # ``priors``
    del cal.graph.input[:]
    cal.graph.input.append(feed)
    cal.graph.input.extend(optional)
    # the calibrator's constants, safe from onnxruntime's no-op elimination; the
    # model's own nodes stay as they are: they computed the scores it was fitted on
    make_safe(cal)

    prefix, i = "bernonnx_", 1
    while any(name.startswith(prefix) for name in taken):
        prefix, i = f"bernonnx{i}_", i + 1
    cal = compose.add_prefix(cal, prefix, rename_outputs=False)
    ir_version = max(base.ir_version, cal.ir_version)
    base.ir_version = cal.ir_version = ir_version
    try:
        merged = compose.merge_models(
            base,
            cal,
            io_map=[(output_name, prefix + score)],
            name=base.graph.name or "model",
            doc_string=base.graph.doc_string,
            producer_name="bernonnx",
            producer_version=__version__,
            domain=base.domain,
            model_version=base.model_version,
        )
    except onnx.checker.ValidationError as exc:
        _refuse_invalid(model, exc)
    graph = merged.graph
    _unprefix_inputs(graph, prefix, [i.name for i in optional], taken)
    wanted = [*added, *(kept if keep_outputs else [])]
    infos = {o.name: o for o in [*base.graph.output, *graph.output]}
    del graph.output[:]
    graph.output.extend(infos[name] for name in wanted)
    _prune(graph)

    # one import per domain (skl2onnx may repeat the default one)
    imports = {e.domain: e.version for e in merged.opset_import}
    del merged.opset_import[:]
    merged.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports.items())
    del merged.metadata_props[:]
    merged.metadata_props.extend(base.metadata_props)
    meta = {
        **_describe(calibrator if shift is None else shift),
        "model": f"attach({base.producer_name or 'onnx'} model, {type(calibrator).__name__})",
        "attach_output": output,
        "attach_column": "" if column is None else str(column),
        "attach_renamed": ",".join(f"{k}->{v}" for k, v in renamed.items()),
        "model_producer": f"{base.producer_name} {base.producer_version}".strip(),
    }
    existing = {p.key for p in merged.metadata_props}
    for key, value in meta.items():
        merged.metadata_props.add(key=_unique(key, existing), value=value)
    try:
        onnx.checker.check_model(merged)
    except onnx.checker.ValidationError as exc:
        _refuse_invalid(model, exc)
    return merged
