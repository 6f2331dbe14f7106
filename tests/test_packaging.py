"""The built wheel: ``converters/`` installs as ``bernonnx.converters``, nothing else at top level.

``pyproject.toml`` maps the top-level source folder ``converters/`` into the package
(``[tool.setuptools.package-dir]``); an editable install resolves the mapping at import
time, so only a built wheel shows what ``pip install bernonnx`` would put on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _copy_sources(to: Path) -> None:
    """What the build reads, without caches, egg-info or a developer's
    ``bernonnx/converters`` symlink (the mapping, not a copy, must bring the converters)."""
    to.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, to / name)

    def ignore(folder, names):
        skipped = {"__pycache__"} | {n for n in names if n.endswith(".egg-info")}
        if Path(folder) == ROOT / "bernonnx":
            skipped.add("converters")
        return skipped & set(names)

    for folder in ("bernonnx", "converters"):
        shutil.copytree(ROOT / folder, to / folder, ignore=ignore)


@pytest.mark.slow
def test_wheel_holds_bernonnx_converters_and_no_top_level_converters(tmp_path):
    # offline: no index, and the build runs on the installed setuptools and wheel
    _copy_sources(tmp_path / "src")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path / "dist"), str(tmp_path / "src")],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("bernonnx-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [top_level] = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["bernonnx"]

    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"bernonnx"}
    sources = {f"bernonnx/converters/{path.name}" for path in (ROOT / "converters").glob("*.py")}
    in_wheel = {name for name in names if name.startswith("bernonnx/converters/")}
    assert in_wheel == sources
    assert "bernonnx/converters/__init__.py" in in_wheel
    # every module of the source tree is in the wheel: pyproject lists the packages by
    # hand, and an editable install finds an unlisted one on disk, so only this sees it
    modules = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "bernonnx").rglob("*.py")
        if "converters" not in path.relative_to(ROOT / "bernonnx").parts
    }
    assert modules - names == set()
    # the bundled tables and their attribution, and nothing bigger than they need
    tables = {path.name for path in (ROOT / "bernonnx" / "data").glob("*.csv.gz")}
    assert len(tables) == 4
    assert {f"bernonnx/data/{name}" for name in tables} | {"bernonnx/data/README.md"} <= names
    data_bytes = sum(path.stat().st_size for path in (ROOT / "bernonnx" / "data").glob("*.gz"))
    # the tables are gzip already: the wheel holds them as they are, plus the code
    assert data_bytes < wheel.stat().st_size < data_bytes + 2_000_000

    # and the installed wheel works on its own: the data load, a fit exports
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
         "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import bernonnx, numpy as np, onnxruntime as ort\n"
        "from sklearn.linear_model import LogisticRegression\n"
        "from bernonnx.datasets import load_credit_default\n"
        "assert bernonnx.__file__.startswith(sys.argv[1]), bernonnx.__file__\n"
        "X, y, _ = load_credit_default()\n"
        "X, y = X[:3000, :4], y[:3000]\n"
        "model = bernonnx.CalibratedClassifier(LogisticRegression()).fit(X, y)\n"
        "onx = bernonnx.to_onnx(model, X[:1])\n"
        "sess = ort.InferenceSession(onx.SerializeToString())\n"
        "label, proba = sess.run(None, {'X': X})\n"
        "assert np.abs(proba - model.predict_proba(X)).max() < 1e-12\n"
        "assert (label == model.predict(X)).all()\n"
        "from bernonnx.datasets import load_diabetes_brfss, load_magic_telescope, "
        "load_online_shoppers\n"
        "shapes = [load()[0].shape for load in (load_diabetes_brfss, load_magic_telescope, "
        "load_online_shoppers)]\n"
        "assert shapes == [(253680, 21), (19020, 10), (12330, 17)], shapes\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(site)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok"]
