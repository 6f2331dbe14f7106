"""The documentation lists every public name, and its pages point to files that exist.

Public: every name in ``bernonnx.__all__`` and in the ``__all__`` of each public module or
package below it (a name not starting with ``_``), found by walking the package, so a new
module or export fails here until docs/api.rst lists it. A name counts as listed when
docs/api.rst names it under its own module (``.. currentmodule::`` then an autosummary
entry or an ``auto*`` directive), or names the same class, function or module elsewhere
(``bernonnx.calibrators.bernstein.BernsteinCalibrator`` is ``bernonnx.BernsteinCalibrator``); a
module, by a ``.. currentmodule::`` section of its own.
"""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import bernonnx

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.rst"
DIRECTIVE = re.compile(r"\.\. (?:auto)?(?:data|function|class|module|attribute):: (\S+)")


def public_modules() -> list[str]:
    """``bernonnx`` and every module below it whose dotted path has no ``_`` part."""
    names = ["bernonnx"]
    for info in pkgutil.walk_packages(bernonnx.__path__, "bernonnx."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def public_names() -> list[tuple[str, str]]:
    """``(module, name)`` for every entry of a public module's ``__all__``."""
    pairs = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if not (name.startswith("__") and name.endswith("__")):  # __version__
                pairs.append((module_name, name))
    return pairs


def listed_names() -> set[str]:
    """Dotted names docs/api.rst lists: autosummary entries and ``auto*`` directives."""
    listed, module, in_autosummary = set(), None, False
    for line in API.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith(".. currentmodule::"):
            module, in_autosummary = stripped.split("::")[1].strip(), False
            listed.add(module)  # the section documents the module itself
        elif stripped.startswith(".. autosummary::"):
            in_autosummary = True
        elif match := DIRECTIVE.match(stripped):
            in_autosummary = False
            name = match.group(1)
            listed.add(name if name.startswith("bernonnx") else f"{module}.{name}")
        elif in_autosummary and line.startswith("   ") and not stripped.startswith(":"):
            listed.add(f"{module}.{stripped}")
        elif stripped and not line.startswith(" "):
            in_autosummary = False
    return listed


def resolve(dotted: str):
    """The object a dotted name stands for: a module's attribute, or a module."""
    module_name, _, name = dotted.rpartition(".")
    if module_name:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            return getattr(module, name)
    return importlib.import_module(dotted)


def test_api_reference_lists_every_public_name():
    listed = listed_names()
    objects = {name: resolve(name) for name in listed}
    missing = []
    for module_name, name in public_names():
        obj = getattr(importlib.import_module(module_name), name)
        # a class, function or module may be listed under the module that re-exports it,
        # a constant under its own name in that module (two equal ints are one object)
        shared = inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj)
        if f"{module_name}.{name}" in listed or any(
            o is obj and (shared or dotted.rpartition(".")[2] == name)
            for dotted, o in objects.items()
        ):
            continue
        missing.append(f"{module_name}.{name}")
    assert missing == [], f"docs/api.rst does not list: {missing}"


def test_api_reference_lists_only_real_names():
    # a name renamed or moved in the code must not linger in the reference
    unknown = []
    for name in sorted(listed_names()):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            unknown.append(name)
    assert unknown == []


@pytest.mark.parametrize("page", sorted((ROOT / "docs" / "results").glob("*.md")))
def test_results_pages_include_reports_that_exist(page):
    # the results pages include the reports benchmarks/ and examples/ write
    includes = re.findall(r"```\{include\} (\S+)", page.read_text(encoding="utf-8"))
    assert sorted(i for i in includes if not (page.parent / i).resolve().is_file()) == []


LITERALINCLUDE = re.compile(r"^\.\. literalinclude:: (\S+)\n((?:   :.*\n)*)", re.M)


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.rst")), ids=lambda p: p.name)
def test_literalincludes_show_files_that_exist(page):
    # the code a page shows is the file the tests run: the file and its markers must exist
    for path, options in LITERALINCLUDE.findall(page.read_text(encoding="utf-8")):
        source = (page.parent / path).resolve()
        assert source.is_file(), f"{page.name}: {path} does not exist"
        text = source.read_text(encoding="utf-8")
        markers = re.findall(r":(start-at|start-after|end-before|end-at): (.*)", options)
        for option, value in markers:
            assert value in text, f"{page.name}: {path} has no {option} marker {value!r}"
        for name in re.findall(r":pyobject: (\S+)", options):
            assert re.search(rf"^(def|class) {name}\b", text, re.M), f"{path} lacks {name}"
