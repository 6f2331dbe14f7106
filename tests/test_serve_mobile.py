"""ORT format (onnxruntime mobile): the serving graphs as ``.ort`` files, run and checked.

``to_ort_format`` writes the ``.ort`` file an onnxruntime mobile or minimal build loads,
and the ``required_operators.config`` such a build is compiled with
(``--include_ops_by_config``). Here, on the graphs the C and browser tests serve: the
``.ort`` file runs in onnxruntime and gives Python's probabilities (the promised 1e-9 /
1e-6, labels identical; and the ``.onnx`` graph's own outputs bit for bit, the
optimisations being the ones onnxruntime applies when it loads the ``.onnx``), and the
config lists exactly the graph's operators, each at the version the graph's opset
selects, so a build from it has every kernel the graph needs and no other.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from _parity import PROMISED
from _serving import CASE_NAMES, case

from bernonnx.deploy import run_onnx, to_ort_format
from bernonnx.export import onnx_inputs

#: nine graphs fitted (about 30 s) then compilers, a browser or converters per graph:
#: outside the quick run; one xdist worker for the three serving modules, which share the
#: fitted graphs (tests/_serving.py caches them per process)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serving")]


def config_operators(text: str) -> dict[tuple[str, str], int]:
    """``{(domain, op): opset}`` from a required_operators.config (``domain;opset;ops``)."""
    listed = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        domain, opset, ops = line.split(";")
        for op in ops.split(","):
            listed[(domain, op)] = int(opset)
    return listed


def graph_operators(model: onnx.ModelProto) -> dict[tuple[str, str], int]:
    """``{(domain, op): since_version}``: each node's operator at the graph's opset, the
    nodes of subgraphs (``If`` branches, ``Loop`` bodies) included, as a build needs them."""
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    found = {}

    def visit(graph) -> None:
        for node in graph.node:
            domain = node.domain or "ai.onnx"
            if domain == "ai.onnx":
                version = onnx.defs.get_schema(node.op_type, opsets[domain]).since_version
            else:  # onnxruntime's own operators (fusions): the domain's version
                version = opsets[domain]
            found[(domain, node.op_type)] = version
            for attr in node.attribute:
                for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    visit(sub)

    visit(model.graph)
    return found


def optimised(model: onnx.ModelProto, folder) -> onnx.ModelProto:
    """The graph as onnxruntime optimises it at level "all", the level the ORT-format
    file is written at: fusions change operators (a Gather of constant rows becomes a
    Split, say), and the config lists what the file holds."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(folder / "optimised.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return onnx.load(options.optimized_model_filepath)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_ort_format_gives_pythons_probabilities(name, tmp_path):
    c = case(name)
    paths = to_ort_format(c.onx, tmp_path / "mobile")
    feeds = onnx_inputs(c.onx, c.X)
    outputs = run_onnx(paths["ort"], feeds)
    proba = outputs["probabilities"]
    assert proba.dtype == c.dtype
    assert np.abs(proba - c.proba).max() <= PROMISED[c.dtype]
    assert (outputs["label"].astype(str) == c.label_text).all()
    assert np.array_equal(proba, c.ort_proba)
    listed = config_operators(paths["config"].read_text())
    assert listed == graph_operators(optimised(c.onx, tmp_path))
