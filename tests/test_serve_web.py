"""examples/web: the page gives Python's probabilities in a real browser, headless Chromium.

The page (examples/web/index.html with serve.mjs and onnxruntime-web's WASM build from
its npm folder) is served as static files by Python's ``http.server`` on 127.0.0.1, the
way a user serves it; Chromium opens ``index.html?model=...&csv=...``, the page runs the
graph in WebAssembly and writes the CSV of labels and probabilities into the document,
which ``--dump-dom`` prints. Compared with Python's onnxruntime on the same graph
(float64 1e-12, float32 1e-6: onnxruntime-web's WASM kernels are not bit-identical to
native ones) and with ``predict_proba`` (the promised 1e-9 / 1e-6), labels identical.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from _parity import PROMISED, TOLERANCE
from _serving import CASE_NAMES, case, needs, read_output_csv, read_output_sets, sets_case

from bernonnx.deploy import run_onnx
from bernonnx.export import onnx_inputs

ROOT = Path(__file__).resolve().parents[1]
#: nine graphs fitted (about 30 s) then compilers, a browser or converters per graph:
#: outside the quick run; one xdist worker for the three serving modules, which share the
#: fitted graphs (tests/_serving.py caches them per process)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serving")]
PAGE = ROOT / "examples" / "web"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # as root, Chromium refuses to start with its sandbox
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    # the page's promises settle in virtual time: the dump waits for them, not for a clock
    "--virtual-time-budget=60000",
]


def missing_tools() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (set CHROMIUM): apt-get install chromium"
    if not (PAGE / "node_modules" / "onnxruntime-web" / "package.json").is_file():
        return "examples/web/node_modules lacks onnxruntime-web: cd examples/web && npm ci"
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test's output is its assertions
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The page's files and the cases' files, served on 127.0.0.1: (folder, base URL)."""
    needs(missing_tools())
    folder = tmp_path_factory.mktemp("web")
    for name in ("index.html", "serve.mjs", "node_modules", "example"):
        (folder / name).symlink_to(PAGE / name)
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def chromium(url: str, profile: Path, *extra: str) -> str:
    """Chromium's dump of the page's document after its scripts settled (or ``extra``'s)."""
    shutil.rmtree(profile, ignore_errors=True)
    done = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *(extra or ["--dump-dom"]), url],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def page_result(dom: str) -> tuple[str, str, str]:
    """(state, status text, CSV) the page wrote."""
    status = re.search(r'<p id="status" data-state="(\w+)">(.*?)</p>', dom, re.S)
    csv = re.search(r'<textarea id="csv-out"[^>]*>(.*?)</textarea>', dom, re.S)
    assert status and csv, dom[-2000:]
    return status.group(1), html.unescape(status.group(2)), html.unescape(csv.group(1))


#: every case in one browser start (a start costs seconds): the page's own serve.mjs,
#: called on each case's files in turn, each result written into a <pre> of its own
BATCH_PAGE = """<!doctype html><meta charset="utf-8"><body><script type="module">
import { serve } from './serve.mjs';
const names = await (await fetch('cases.json')).json();
for (const name of names) {
  const pre = document.createElement('pre');
  pre.id = name;
  try {
    const model = await (await fetch(`${name}.onnx`)).arrayBuffer();
    const csv = await (await fetch(`${name}.csv`)).text();
    pre.textContent = (await serve(new Uint8Array(model), csv)).csv;
    pre.dataset.state = 'done';
  } catch (error) {
    pre.textContent = error.message;
    pre.dataset.state = 'error';
  }
  document.body.appendChild(pre);
}
</script>"""


@pytest.fixture(scope="module")
def batch(site, tmp_path_factory):
    """{case name: (state, CSV or error)} from one Chromium run over every case."""
    folder, base = site
    names = []
    for name in CASE_NAMES:
        try:
            c = case(name)
        except pytest.skip.Exception:
            continue
        (folder / f"{name}.onnx").write_bytes(c.onx.SerializeToString())
        c.write_csv(folder / f"{name}.csv")
        names.append(name)
    # and one CSV that lacks a column the graph takes
    frame_case = case("logreg_frame_f64")
    (folder / "narrow.onnx").write_bytes(frame_case.onx.SerializeToString())
    frame_case.frame.drop(columns=["AGE"]).to_csv(folder / "narrow.csv", index=False)
    names.append("narrow")
    # and a graph with prediction sets
    onx, rows, _, _ = sets_case()
    (folder / "sets.onnx").write_bytes(onx.SerializeToString())
    rows.to_csv(folder / "sets.csv", index=False)
    names.append("sets")
    (folder / "cases.json").write_text(json.dumps(names))
    (folder / "batch.html").write_text(BATCH_PAGE)
    dom = chromium(f"{base}/batch.html", tmp_path_factory.mktemp("profile"))
    found = re.findall(r'<pre id="(\w+)" data-state="(\w+)">(.*?)</pre>', dom, re.S)
    return {name: (state, html.unescape(text)) for name, state, text in found}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_page_gives_pythons_probabilities(name, batch):
    c = case(name)
    state, csv = batch[name]
    assert state == "done", csv
    labels, proba = read_output_csv(csv, c.dtype)
    assert proba.shape == c.proba.shape
    assert np.abs(proba - c.ort_proba).max() <= TOLERANCE[c.dtype]
    assert np.abs(proba - c.proba).max() <= PROMISED[c.dtype]
    assert (labels == c.label_text).all()


def test_page_prints_the_prediction_sets(batch):
    _, _, expected, proba = sets_case()
    state, csv = batch["sets"]
    assert state == "done", csv
    _, got = read_output_csv(csv, np.float64)
    assert np.abs(got - proba).max() <= PROMISED[np.dtype(np.float64)]
    np.testing.assert_array_equal(read_output_sets(csv), expected)


def test_page_reports_a_missing_column(batch):
    state, message = batch["narrow"]
    assert state == "error"
    assert message == "the CSV has no column 'AGE', which the graph takes as an input"


def test_bundled_example_and_screenshot(site, tmp_path):
    """The bundled example (examples/web/make_example.py) runs as Python runs it."""
    import pandas as pd

    folder, base = site
    url = f"{base}/index.html?model=example/model.onnx&csv=example/rows.csv"
    state, status, csv = page_result(chromium(url, tmp_path / "profile"))
    assert state == "done" and status.startswith("200 rows, 2 classes"), status
    onx = onnx.load(str(PAGE / "example" / "model.onnx"))
    rows = pd.read_csv(PAGE / "example" / "rows.csv")
    expected = run_onnx(onx, onnx_inputs(onx, rows))
    labels, proba = read_output_csv(csv, np.float64)
    assert np.abs(proba - expected["probabilities"]).max() <= TOLERANCE[np.dtype(np.float64)]
    assert (labels == expected["label"].astype(str)).all()
    # what a user sees (docs/_static/serving_web.png is one of these)
    shot = tmp_path / "page.png"
    chromium(url, tmp_path / "profile", "--window-size=1000,820", f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("BERNONNX_SCREENSHOT"):
        shutil.copy(shot, os.environ["BERNONNX_SCREENSHOT"])


def test_make_example_rewrites_the_bundled_example(tmp_path):
    """examples/web/make_example.py (the docs' code) writes the committed example again."""
    import pandas as pd

    done = subprocess.run(
        [sys.executable, str(PAGE / "make_example.py"), str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    bundled = PAGE / "example"
    assert (tmp_path / "rows.csv").read_bytes() == (bundled / "rows.csv").read_bytes()
    rows = pd.read_csv(bundled / "rows.csv")
    new, old = (onnx.load(str(folder / "model.onnx")) for folder in (tmp_path, bundled))
    assert np.array_equal(
        run_onnx(new, onnx_inputs(new, rows))["probabilities"],
        run_onnx(old, onnx_inputs(old, rows))["probabilities"],
    )
