"""The README's front door: its Python blocks run as written, its names import.

The blocks run in order in one namespace, as a reader who pastes them one after
another into one Python session, in a temporary working folder (the export block
writes ``models/`` and ``mobile/``). None of them reads the shared data folder: they
use the credit data bundled with the package. Shell blocks are not run here; `.ci/run`
runs the first one (``bernonnx demo``) as written.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[tuple[int, str]]:
    """``(line number, source)`` of every fenced ``python`` block of the README."""
    text = README.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(2))
        for match in FENCE.finditer(text)
        if match.group(1) == "python"
    ]


def test_readme_has_python_blocks():
    assert len(python_blocks()) >= 4


def test_readme_python_blocks_run_as_written(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="the plotting block needs the plot extra")
    import matplotlib

    matplotlib.use("Agg")  # no display in CI
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    try:
        for line, source in python_blocks():
            code = compile(source, f"README.md, block at line {line}", "exec")
            exec(code, namespace)  # the README's own code, as a user runs it
    finally:
        plt.close("all")
    assert namespace["report"]["passed"], namespace["report"]  # the parity it shows
    # what the tour says of the input type: float64 data, a float64 graph
    assert namespace["X_test"].dtype == "float64"
    assert [i.type for i in namespace["session"].get_inputs()] == ["tensor(double)"]
    assert namespace["report"]["dtype"] == "float64"
    # the export block wrote a Triton repository and the ORT-format files
    assert (tmp_path / "models" / "credit" / "config.pbtxt").is_file()
    assert (tmp_path / "models" / "credit" / "1" / "model.onnx").is_file()
    assert any(path.suffix == ".ort" for path in (tmp_path / "mobile").iterdir())


def test_readme_is_a_front_page():
    # 12 KB at most; the two commands CI runs, exactly as written
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 12_000
    assert 'pip install -e ".[plot]" && bernonnx demo\n' in text
    assert 'pip install -e ".[dev]" && python -m pytest\n' in text


def test_readme_names_the_defaults_as_they_are():
    # the tour leaves CalibratedClassifier at its defaults and says what they are
    import inspect

    from bernonnx import CalibratedClassifier

    text = README.read_text(encoding="utf-8")
    parameters = inspect.signature(CalibratedClassifier).parameters
    for name in ("response_method", "log_odds"):
        assert f'{name}="{parameters[name].default}"' in text, name


def test_readme_links_point_to_files():
    # every relative link of the README names a file of the repository
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local, "the README links to no page of the repository"
    assert sorted(link for link in local if not (ROOT / link).is_file()) == []


def test_readme_scripts_exist():
    # every `python examples/x.py` or `python benchmarks/x.py` the README names is there
    scripts = set(re.findall(r"python ((?:examples|benchmarks)/\w+\.py)", README.read_text()))
    assert scripts, "the README names no script"
    assert sorted(s for s in scripts if not (ROOT / s).is_file()) == []


def test_top_level_export_names_are_lazy():
    # `import bernonnx` must not load onnx or skl2onnx; the names load them on first use
    code = (
        "import sys, bernonnx\n"
        "assert 'skl2onnx' not in sys.modules and 'onnx' not in sys.modules\n"
        "from bernonnx import check_parity, to_onnx\n"
        "import bernonnx.export as export\n"
        "assert to_onnx is export.to_onnx and check_parity is export.check_parity\n"
        "assert {'to_onnx', 'check_parity'} <= set(bernonnx.__all__) <= set(dir(bernonnx))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_unknown_top_level_name_is_an_attribute_error():
    import bernonnx

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bernonnx.nope  # noqa: B018


def test_study_without_its_data_says_where_to_get_it(tmp_path):
    # every table the studies read ships with bernonnx; a file that does not is named,
    # with where it comes from and how to point the study at it
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from _study import load_csv\n"
        "load_csv(sys.argv[2], 'unbundled_table.csv.gz')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "examples"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2
    message = done.stderr
    assert "unbundled_table.csv.gz not found" in message
    assert "--data PATH" in message and "BERNONNX_SHARED_DATA" in message


# The README's promise that a clone without the shared data folder still runs the
# studies (each reads the copy bundled with bernonnx, says so on stderr and runs to the
# end) is checked on the quick studies' one smoke run each, from the repository root:
# tests/test_examples.py::test_credit_card_study_quick and ::test_diabetes_study_quick.
