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
