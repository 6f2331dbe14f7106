"""Smoke-run examples/serving.py as a user would: Triton layout, ORT and Node.js parity."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: runs examples/serving.py in a fresh interpreter: outside the quick run
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "serving.py"
NODE_READY = (
    shutil.which("node") is not None
    and (ROOT / "tests" / "node" / "node_modules" / "onnxruntime-node" / "package.json").is_file()
)
PARITY = r"max \|Python - {}\| = (\S+) over \d+ rows, labels identical: True \(PASS"


def run(*args, env=None):
    """Run the example; returns its standard output (the exit status must be 0)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One ``serving.py --quick`` run shared by the tests: (stdout, output folder)."""
    out_dir = tmp_path_factory.mktemp("serving")
    return run("--quick", "--out", str(out_dir)), out_dir


def load_example():
    spec = importlib.util.spec_from_file_location("serving_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_serving_example_writes_triton_and_matches_runtimes(quick_run):
    out, tmp_path = quick_run
    model_dir = tmp_path / "triton" / "credit_default"
    assert (model_dir / "config.pbtxt").is_file()
    assert (model_dir / "1" / "model.onnx").is_file()
    assert 'name: "credit_default"' in (model_dir / "config.pbtxt").read_text()
    assert "config.pbtxt: inputs X TYPE_FP32 dims [23]" in out
    match = re.search(PARITY.format("ORT"), out)
    assert match and float(match.group(1)) <= 1e-6
    if NODE_READY:
        match = re.search(PARITY.format("Node"), out)
        assert match and float(match.group(1)) <= 1e-6
        assert "max |ORT - Node| = 0.00e+00" in out
    else:
        assert "Node.js parity skipped: " in out
    # the JSON files handed to Node.js are cleaned up; only the repository stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["triton"]


def test_serving_example_without_node_says_so_and_succeeds(tmp_path, monkeypatch, quick_run):
    # a PATH holding only the interpreter's folder: no node on it
    folder = str(Path(sys.executable).parent)
    if shutil.which("node", path=folder) is not None:
        pytest.skip(f"node sits beside the Python interpreter in {folder}")
    if not NODE_READY:
        # the shared run skipped Node.js already and succeeded; without node on PATH only
        # the reason it gives differs, which node_skip_reason() decides
        out, out_dir = quick_run
        assert re.search(PARITY.format("ORT"), out)
        assert "Node.js parity skipped: " in out
        assert (out_dir / "triton" / "credit_default" / "1" / "model.onnx").is_file()
        monkeypatch.setenv("PATH", folder)
        reason = load_example().node_skip_reason()
        assert reason is not None and reason.startswith("node is not on PATH")
        return
    env = {**os.environ, "PATH": folder, "LOKY_MAX_CPU_COUNT": "1"}
    out = run("--quick", "--out", str(tmp_path), env=env)
    assert "Node.js parity skipped: node is not on PATH" in out
    assert re.search(PARITY.format("ORT"), out)
    assert (tmp_path / "triton" / "credit_default" / "1" / "model.onnx").is_file()
