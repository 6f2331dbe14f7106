"""Session settings shared by every test module: one BLAS/OpenMP thread per process.

The suite runs on pytest-xdist workers (``-n auto`` in pyproject.toml), one per core;
a worker that also spread BLAS or OpenMP over every core would oversubscribe a
2-core CI machine several times over. Set here, before any test module imports
numpy's BLAS or scikit-learn's OpenMP code, and enforced again with threadpoolctl
for libraries loaded already.

What the test modules share lives in importable helpers beside this file (pytest puts
``tests/`` on ``sys.path``; a conftest is not meant to be imported):

- ``_parity.py``: the one tolerance table of ONNX parity (``TOLERANCE``, ``PROMISED``),
  ``run_onnx``, ``assert_parity``, ``assert_every_row``;
- ``_scores.py``: generated scores and labels (``make_scores``, ``make_score_columns``).

The shared real data sets (where they are, how to read and split them, the parity
cells) are ``benchmarks/_realdata.py``, which the benchmark scripts use too: tests import
it as ``benchmarks._realdata``, so the checkout's root goes on ``sys.path`` here (last,
behind the installed package; ``python -m pytest`` from the root has it first already).
"""

import os
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1)


@pytest.fixture
def run(capsys):
    """``run(*args, expect=0)``: ``bernonnx *args`` in this process; returns (stdout, stderr).

    The command-line tests' runner (``test_cli*.py``): the same code as the console
    script, without an interpreter start per case.
    """
    from bernonnx.cli import EXIT_OK, main

    def run(*args, expect=EXIT_OK):
        status = main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        assert status == expect, (status, err[-3000:])
        return out, err

    return run


#: files whose tests run for tens of seconds each (the benchmarks' and examples' smoke
#: runs): handed out early, with the groups, so no worker is left with them at the end
_LONG_FILES = ("test_examples.py", "test_boosters.py")


def pytest_collection_modifyitems(items):
    """Order the run for the workers: the ``xdist_group`` tests first (each group is one
    unit of work that a single worker runs, the serving group about a fifth of the
    suite), then the long files, then the rest as collected. pytest-xdist hands out
    work in collection order; a group collected last (``test_serve_*``, ``test_spark``)
    left one worker busy for minutes after the other had finished. Every worker sorts
    the same collection the same way, as xdist requires."""

    def rank(item):
        if item.get_closest_marker("xdist_group") is not None:
            return 0
        return 1 if item.path.name in _LONG_FILES else 2

    items[:] = sorted(items, key=rank)  # stable: collection order within each rank
