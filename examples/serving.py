"""Serve a calibrated model: one ONNX file, a Triton repository, onnxruntime and Node.js.
======================================================================================

A histogram gradient-boosting classifier is trained on the credit-card default data
shipped inside the package and calibrated with a ``BernsteinCalibrator`` on held-out
rows (prefit, through ``FrozenEstimator``, on the model's log-odds). Then:

1. ``bernonnx.export.to_onnx`` turns classifier + calibrator into one float32 graph;
2. ``bernonnx.deploy.write_triton_repository`` writes ``<out>/triton/credit_default/``
   with ``config.pbtxt`` and ``1/model.onnx``;
3. the model is loaded the way Triton's onnxruntime backend does: input and output names,
   data types and dims come from ``config.pbtxt``, ``1/model.onnx`` runs in onnxruntime
   in batches of at most ``max_batch_size`` rows;
4. the same ``model.onnx`` runs in Node.js (``examples/serve_node.mjs``, onnxruntime-node
   from ``tests/node/node_modules``).

It prints ``max |Python - ORT|`` and ``max |Python - Node|`` over the test rows, with the label
agreement, and exits with status 1 if a runtime is off by more than 1e-6 or a label
differs. Without ``node`` or the npm packages the Node.js step prints why it is skipped.

Run: ``python examples/serving.py [--out DIR] [--quick]`` (default: a temporary folder;
``--quick``: 6,000 rows and a smaller model, a few seconds)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from bernonnx import BernsteinCalibrator, CalibratedClassifier
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import write_triton_repository
from bernonnx.export import to_onnx

# the documentation's gallery runs this file without __file__, from the examples folder
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
ROOT = HERE.parent
NODE_DIR = ROOT / "tests" / "node"
NODE_SCRIPT = HERE / "serve_node.mjs"
NODE_INSTALL_HINT = "cd tests/node && ONNXRUNTIME_NODE_INSTALL=skip npm ci"
MODEL_NAME = "credit_default"
#: float32 graph against Python's float64 evaluation cast to float32 (README: parity).
TOLERANCE = 1e-6
#: Triton data types this example feeds or reads, as numpy types.
TRITON_NUMPY = {
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_INT64": np.int64,
    "TYPE_INT32": np.int32,
    "TYPE_BOOL": np.bool_,
}
_TENSOR = re.compile(r'name:\s*"([^"]+)"\s*data_type:\s*(\w+)\s*dims:\s*\[([^\]]*)\]')


def fit_model(quick: bool):
    """The calibrated classifier and the float32 test rows."""
    X, y, _ = load_credit_default()
    if quick:
        X, _, y, _ = train_test_split(X, y, train_size=6000, random_state=0, stratify=y)
    X_fit, X_test, y_fit, y_test = train_test_split(
        X, y, test_size=0.2, random_state=0, stratify=y
    )
    X_train, X_cal, y_train, y_cal = train_test_split(
        X_fit, y_fit, test_size=0.25, random_state=0, stratify=y_fit
    )
    model = HistGradientBoostingClassifier(max_iter=30 if quick else 100, random_state=0)
    model.fit(X_train, y_train)
    calibrated = CalibratedClassifier(FrozenEstimator(model), BernsteinCalibrator(), log_odds=True)
    calibrated.fit(X_cal, y_cal)
    print(
        f"credit default: {len(y_train)} train, {len(y_cal)} calibration, {len(y_test)} test "
        f"rows; Bernstein degree {calibrated.calibrated_classifiers_[0].calibrators[0].degree_}"
    )
    return calibrated, X_test.astype(np.float32)


def read_triton_config(path: Path) -> dict:
    """Name, max_batch_size and the input/output tensors (name, data_type, dims) of a
    ``config.pbtxt`` as ``write_triton_repository`` writes it."""
    text = path.read_text()
    head, _, tail = text.partition("\noutput [")

    def tensors(part):
        return [
            {"name": n, "data_type": t, "dims": [int(d) for d in dims.replace(",", " ").split()]}
            for n, t, dims in _TENSOR.findall(part)
        ]

    return {
        "name": re.search(r'^name:\s*"([^"]+)"', text, re.M).group(1),
        "max_batch_size": int(re.search(r"^max_batch_size:\s*(\d+)", text, re.M).group(1)),
        "inputs": tensors(head),
        "outputs": tensors(tail),
    }


def describe(config: dict) -> str:
    def fmt(tensors):
        return ", ".join(f"{t['name']} {t['data_type']} dims {t['dims']}" for t in tensors)

    return (
        f"config.pbtxt: inputs {fmt(config['inputs'])}; outputs {fmt(config['outputs'])}; "
        f"max_batch_size {config['max_batch_size']}"
    )


def triton_feeds(config: dict, X: np.ndarray) -> dict[str, np.ndarray]:
    """The request a Triton client sends: one tensor per configured input, its data type,
    shape ``[batch, *dims]``."""
    (spec,) = config["inputs"]  # the model takes the feature matrix as one tensor
    dtype = TRITON_NUMPY[spec["data_type"]]
    if list(X.shape[1:]) != spec["dims"]:
        raise ValueError(f"the rows have shape {X.shape[1:]}, config.pbtxt wants {spec['dims']}")
    return {spec["name"]: np.ascontiguousarray(X, dtype=dtype)}


def serve_like_triton(model_dir: Path, config: dict, feeds: dict) -> dict[str, np.ndarray]:
    """Run ``<model_dir>/1/model.onnx`` as Triton's onnxruntime backend does: names and types
    from ``config.pbtxt``, batches of at most ``max_batch_size`` rows."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(model_dir / "1" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    graph_inputs = {i.name for i in session.get_inputs()}
    if graph_inputs != set(feeds):
        raise ValueError(f"config.pbtxt inputs {sorted(feeds)} != graph inputs {graph_inputs}")
    names = [t["name"] for t in config["outputs"]]
    n_rows = next(iter(feeds.values())).shape[0]
    batch = config["max_batch_size"] or n_rows
    parts = [
        session.run(names, {k: v[start : start + batch] for k, v in feeds.items()})
        for start in range(0, n_rows, batch)
    ]
    outputs = {name: np.concatenate([p[i] for p in parts]) for i, name in enumerate(names)}
    for spec in config["outputs"]:
        # what came back is what config.pbtxt declares; a label declared with dims [1] and
        # reshape [] comes back as shape (batch,)
        got = outputs[spec["name"]]
        if got.dtype != TRITON_NUMPY[spec["data_type"]] or list(got.shape[1:]) not in (
            spec["dims"],
            [] if spec["dims"] == [1] else None,
        ):
            raise ValueError(f"output {spec} came back as {got.dtype} {got.shape}")
    return outputs


def node_skip_reason() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH (Node.js >= 18 runs examples/serve_node.mjs)"
    if not (NODE_DIR / "node_modules" / "onnxruntime-node" / "package.json").is_file():
        return f"tests/node/node_modules lacks onnxruntime-node: run `{NODE_INSTALL_HINT}`"
    return None


def serve_with_node(model_path: Path, feeds: dict, workdir: Path) -> dict[str, np.ndarray]:
    """Run the ONNX file in onnxruntime-node through ``serve_node.mjs`` (JSON in and out)."""
    inputs, outputs = workdir / "node_inputs.json", workdir / "node_outputs.json"
    payload = {
        name: {"dtype": a.dtype.name, "shape": list(a.shape), "data": a.ravel().tolist()}
        for name, a in feeds.items()
    }
    inputs.write_text(json.dumps(payload))
    done = subprocess.run(
        ["node", str(NODE_SCRIPT), str(model_path), str(inputs), str(outputs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"serve_node.mjs failed ({done.returncode}):\n{done.stderr}")
    result = {}
    for name, spec in json.loads(outputs.read_text()).items():
        values = [int(v) for v in spec["data"]] if spec["dtype"] == "int64" else spec["data"]
        result[name] = np.array(values, dtype=spec["dtype"]).reshape(spec["shape"])
    inputs.unlink()
    outputs.unlink()
    return result


def compare(runtime: str, outputs: dict, proba: np.ndarray, label: np.ndarray) -> bool:
    error = float(np.max(np.abs(outputs["probabilities"].astype(np.float64) - proba)))
    same = bool(np.array_equal(outputs["label"], label))
    ok = error <= TOLERANCE and same
    print(
        f"max |Python - {runtime}| = {error:.2e} over {proba.shape[0]} rows, labels identical: "
        f"{same} ({'PASS' if ok else 'FAIL'}, tolerance {TOLERANCE:g})"
    )
    return ok


def run(out: Path, quick: bool) -> bool:
    model, X_test = fit_model(quick)
    proba, label = model.predict_proba(X_test), model.predict(X_test)

    onx = to_onnx(model, X_test[:1], dtype=np.float32)
    model_dir = write_triton_repository(onx, out / "triton", MODEL_NAME)
    print(f"Triton repository: {model_dir / 'config.pbtxt'}, {model_dir / '1' / 'model.onnx'}")

    config = read_triton_config(model_dir / "config.pbtxt")
    print(describe(config))
    feeds = triton_feeds(config, X_test)
    ort_out = serve_like_triton(model_dir, config, feeds)
    ok = compare("ORT", ort_out, proba, label)

    reason = node_skip_reason()
    if reason is not None:
        print(f"Node.js parity skipped: {reason}")
        return ok
    version = json.loads(
        (NODE_DIR / "node_modules" / "onnxruntime-node" / "package.json").read_text()
    )
    print(
        f"Node.js {subprocess.check_output(['node', '--version'], text=True).strip()}, "
        f"onnxruntime-node {version['version']}"
    )
    node_out = serve_with_node(model_dir / "1" / "model.onnx", feeds, out)
    ok = compare("Node", node_out, proba, label) and ok
    gap = np.max(np.abs(node_out["probabilities"] - ort_out["probabilities"]))
    print(f"max |ORT - Node| = {gap:.2e} (the same graph in two onnxruntime builds)")
    return ok


def main(argv=None) -> int:
    # the first line of the docstring (empty in the documentation's gallery, which strips it)
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the Triton repository")
    parser.add_argument("--quick", action="store_true", help="6,000 rows, smaller model")
    args = parser.parse_args(argv)
    if args.out is None:
        with tempfile.TemporaryDirectory() as tmp:
            ok = run(Path(tmp), args.quick)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        ok = run(args.out, args.quick)
    return 0 if ok else 1


if __name__ == "__main__":
    # exit only on failure: the documentation's gallery runs this file inside Sphinx,
    # where SystemExit(0) would end the whole build early, and successfully
    if status := main():
        sys.exit(status)
