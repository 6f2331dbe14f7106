"""Issues 9 and 21: the exported graph gives Python's probabilities on every row of real
data as users hold it, or ``to_onnx`` refuses.

Each cell (``benchmarks._realdata.quick_cells``) reads a shared table as pandas reads it, nothing
cast (int64, float64, bool and string columns; credit's array from the bundled loader),
fits a ``CalibratedClassifier`` in one of four layouts (a ColumnTransformer pipeline, a
plain Pipeline or a bare model on the numeric frame, a float64 array), exports it with
``to_onnx``'s default dtype unless the cell names one, and runs the graph in onnxruntime
on every test row, fed each input at its declared type. Asserted on every row: within
1e-9 of ``predict_proba`` on the same rows for a float64 graph, 1e-6 for a float32 graph,
and identical labels. An explicit ``dtype="float32"`` on values float32 cannot hold must
raise ``ValueError`` ("cannot carry"); a refusal where exactness is expected, or
exactness where a refusal is, fails. One cell casts its data to float32 on purpose: it
tests float32 data (``data="float32"``); another exports float32 data as float64.
``python benchmarks/real_parity.py`` measures the larger matrix.

Cells that fail today are listed, with what was measured, in :data:`XFAIL`, the only
place that marks them.
"""

from __future__ import annotations

import warnings

import pytest

from benchmarks._realdata import DATASETS, DEFAULT_DATA_DIR, quick_cells, run_cell

pytestmark = pytest.mark.skipif(
    not all((DEFAULT_DATA_DIR / spec.file).is_file() for spec in DATASETS.values()),
    reason=(
        f"the real data sets are not at {DEFAULT_DATA_DIR} (BERNONNX_SHARED_DATA names a "
        "folder without them; unset, the copies bundled with bernonnx are read)"
    ),
)

#: The cells that fail today, with what was measured (max |p_onnx - p_python|, rows above
#: tolerance). The only place that marks expected failures, ``strict=True``: a fixed
#: cell reports XPASS as a failure, so delete its entry.
XFAIL: dict[str, str] = {}


def _param(cell):
    measured = XFAIL.get(cell.id)
    marks = ()
    if measured is not None:
        marks = pytest.mark.xfail(strict=True, reason=f"graph differs from Python: {measured}")
    return pytest.param(cell, id=cell.id, marks=marks)


CELLS = quick_cells()


def test_xfail_list_names_existing_cells():
    assert set(XFAIL) <= {cell.id for cell in CELLS}


def test_quick_cells_cover_every_layout_and_dtype():
    assert {c.layout for c in CELLS} == {"column_transformer", "pipeline", "bare", "array"}
    kinds = {(c.data, c.dtype) for c in CELLS}
    assert {("as_read", "default"), ("float32", "default")} <= kinds
    assert {("as_read", "float32"), ("float32", "float64")} <= kinds


@pytest.mark.slow
@pytest.mark.parametrize("cell", [_param(cell) for cell in CELLS])
def test_graph_equals_python_on_every_test_row(cell):
    with warnings.catch_warnings():
        # skl2onnx's SVC converter reads SVC.probA_, deprecated in scikit-learn 1.9
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*probA_|.*probB_")
        result = run_cell(cell)
    assert result["error"] is None, result["error"] + "\n" + result.get("traceback", "")
    if result["expected"] == "refused":
        assert result["outcome"] == "refused", (
            f"dtype=float32 on values float32 cannot hold was accepted: {result['outcome']}, "
            f"max {result['max_abs_error']:.2e}"
        )
        return
    assert result["outcome"] != "refused", f"refused where exactness is expected: {result}"
    n_test, tolerance = result["n_test"], result["tolerance"]
    assert result["n_above"] == 0, (
        f"{result['n_above']} of {n_test} test rows differ from Python by more than "
        f"{tolerance:g} (max {result['max_abs_error']:.2e}, {result['graph_dtype']} graph)"
    )
    assert result["n_label_mismatch"] == 0, (
        f"{result['n_label_mismatch']} of {n_test} labels differ from Python"
    )
    assert result["passed"]
