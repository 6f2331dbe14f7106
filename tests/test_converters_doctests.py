"""The docstring examples of ``converters/``, run in the modules as installed.

``converters/`` is a top-level source folder that ``package-dir`` installs as
``bernonnx.converters``. pytest's ``--doctest-modules`` collects ``tests`` and ``bernonnx``
(``testpaths`` in pyproject.toml); given the folder's path, it would import it as a
top-level ``converters`` package, a second copy of every module beside the installed one,
which the registry and skl2onnx's registrations do not know. So the examples are found
here instead: every module under ``bernonnx.converters``, imported by that name, each
docstring with examples one test, run with pytest's default doctest flag (ELLIPSIS).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import sys

import pytest

import bernonnx.converters


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    found = []
    modules = pkgutil.walk_packages(bernonnx.converters.__path__, "bernonnx.converters.")
    for name in ["bernonnx.converters", *(info.name for info in modules)]:
        module = importlib.import_module(name)
        found += [test for test in finder.find(module) if test.examples]
    return sorted(found, key=lambda test: test.name)


DOCTESTS = _doctests()


def test_converters_have_examples_and_are_imported_as_installed():
    names = {test.name for test in DOCTESTS}
    assert {
        "bernonnx.converters.register_converters",
        "bernonnx.converters.exact.exact_supported",
        "bernonnx.converters.supported.unsupported_steps",
    } <= names, names
    # nothing imported the source folder as a package of its own
    assert "converters" not in sys.modules


@pytest.mark.parametrize("test", DOCTESTS, ids=[test.name for test in DOCTESTS])
def test_docstring_examples(test: doctest.DocTest):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.attempted == len(test.examples)
    assert result.failed == 0, "".join(report)
