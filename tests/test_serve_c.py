"""examples/serve_c: the C and C++ programs give Python's probabilities, row for row.

Built with the example's own Makefile against onnxruntime's headers (Debian 13's
``libonnxruntime-dev``, fetched by ``examples/serve_c/get_headers.sh``), run on the
library the onnxruntime wheel ships, the one Python's onnxruntime loads: so besides
Python's ``predict_proba`` (float64 1e-9, float32 1e-6, labels identical), the programs'
probabilities must equal Python's onnxruntime bit for bit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from _parity import PROMISED
from _serving import (
    CASE_NAMES,
    case,
    header_folder,
    needs,
    read_output_csv,
    read_output_sets,
    sets_case,
    wheel_library,
)
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]
#: nine graphs fitted (about 30 s) then compilers, a browser or converters per graph:
#: outside the quick run; one xdist worker for the three serving modules, which share the
#: fitted graphs (tests/_serving.py caches them per process)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serving")]
EXAMPLE = ROOT / "examples" / "serve_c"
HINT = "sh examples/serve_c/get_headers.sh build/onnxruntime"
PROGRAMS = ["serve_c", "serve_cpp"]


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    """The two programs, built by ``make`` from a copy of the example folder."""
    folder = header_folder()
    if shutil.which("make") is None or shutil.which("cc") is None or shutil.which("c++") is None:
        needs("make, cc and c++ are not on PATH: apt-get install build-essential")
    needs(None if folder else f"onnxruntime's C/C++ headers are missing: run `{HINT}`")
    build = tmp_path_factory.mktemp("serve_c")
    for name in ("serve.c", "serve.cpp", "Makefile"):
        shutil.copy(EXAMPLE / name, build / name)
    done = subprocess.run(
        ["make", "-C", str(build), f"ORT_INCLUDE={folder}", "CFLAGS=-O2 -Wall -Wextra -Werror",
         "CXXFLAGS=-O2 -Wall -Wextra -Werror"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return {name: build / name for name in PROGRAMS}


def serve(program: Path, *args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, ONNXRUNTIME_LIB=str(wheel_library()))
    done = subprocess.run(
        [str(program), *map(str, args)], capture_output=True, text=True, env=env, timeout=300
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("name", CASE_NAMES)
def test_program_gives_pythons_probabilities(name, program, programs, tmp_path):
    c = case(name)
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c.onx, str(model))
    c.write_csv(rows)
    done = serve(programs[program], model, rows, "-", "--batch", "700")
    labels, proba = read_output_csv(done.stdout, c.dtype)
    assert proba.shape == c.proba.shape
    assert np.abs(proba - c.proba).max() <= PROMISED[c.dtype]
    assert (labels == c.label_text).all()
    # the wheel's library is the one Python's onnxruntime runs: the same bits
    assert np.array_equal(proba, c.ort_proba)


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_prints_the_prediction_sets(program, programs, tmp_path):
    onx, rows, expected, proba = sets_case()
    model, path = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(onx, str(model))
    rows.to_csv(path, index=False)
    done = serve(programs[program], model, path, "-", "--batch", "700")
    _, got = read_output_csv(done.stdout, np.float64)
    assert np.abs(got - proba).max() <= PROMISED[np.dtype(np.float64)]
    np.testing.assert_array_equal(read_output_sets(done.stdout), expected)


def test_both_programs_write_the_same_file(programs, tmp_path):
    c = case("logreg_strings_f64")
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c.onx, str(model))
    c.write_csv(rows)
    outputs = []
    for program in PROGRAMS:
        serve(programs[program], model, rows, tmp_path / f"{program}.csv")
        outputs.append((tmp_path / f"{program}.csv").read_text())
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == len(c.frame) + 1


def _unsupported_graph(path: Path, elem_type=TensorProto.UINT8, shape=("N", 2)) -> None:
    node = helper.make_node("Identity", ["X"], ["probabilities"])
    graph = helper.make_graph(
        [node],
        "unsupported",
        [helper.make_tensor_value_info("X", elem_type, list(shape))],
        [helper.make_tensor_value_info("probabilities", elem_type, list(shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save_model(model, str(path))


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_errors_are_clear(program, programs, tmp_path):
    c = case("hgb_array_f64")
    model, rows = tmp_path / "model.onnx", tmp_path / "rows.csv"
    onnx.save_model(c.onx, str(model))
    c.frame.iloc[:20].to_csv(rows, index=False)
    exe = programs[program]

    def error(*args, code=1):
        done = serve(exe, *args, check=False)
        assert done.returncode == code, (done.returncode, done.stderr)  # no signal, no crash
        return done.stderr

    assert "usage:" in error(model, code=2)
    assert "cannot open the model" in error(tmp_path / "absent.onnx", rows)
    assert "cannot open the CSV file" in error(model, tmp_path / "absent.csv")
    narrow = tmp_path / "narrow.csv"
    c.frame.iloc[:20, :-1].to_csv(narrow, index=False)
    assert "the CSV has 22 columns, input 'X' takes 23" in error(model, narrow)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text(rows.read_text() + "1,2,3\n")
    assert "fields, but the header has 23 columns" in error(model, ragged)
    words = tmp_path / "words.csv"
    frame = c.frame.iloc[:3].astype(object)
    frame.iloc[1, 4] = "abc"
    frame.to_csv(words, index=False)
    assert "'abc' is not a number" in error(model, words)
    unsupported = tmp_path / "uint8.onnx"
    _unsupported_graph(unsupported)
    assert "input 'X' has ONNX element type 2" in error(unsupported, rows)
    _unsupported_graph(unsupported, TensorProto.FLOAT, ("N", 2, 3))
    assert "input 'X' has rank 3" in error(unsupported, rows)
    # a DataFrame graph: a missing column is named
    frame_case = case("logreg_frame_f64")
    onnx.save_model(frame_case.onx, str(model))
    frame_case.frame.drop(columns=["AGE"]).iloc[:5].to_csv(rows, index=False)
    assert "no column 'AGE'" in error(model, rows)


def test_quickstart_script(programs, tmp_path):
    """examples/serve_c/quickstart.sh as the docs show it, from a copy of the folder."""
    folder = tmp_path / "serve_c"
    skip = shutil.ignore_patterns("serve_c", "serve_cpp", "build")
    shutil.copytree(EXAMPLE, folder, ignore=skip)
    for program in PROGRAMS:  # built already, newer than the sources: make keeps them
        shutil.copy(programs[program], folder / program)
    c = case("logreg_frame_f64")
    model, rows, out = tmp_path / "model.onnx", tmp_path / "rows.csv", tmp_path / "out.csv"
    onnx.save_model(c.onx, str(model))
    c.write_csv(rows)
    env = dict(os.environ, ONNXRUNTIME_INCLUDE=str(header_folder()))
    env.pop("ONNXRUNTIME_LIB", None)  # the script finds the wheel's library itself
    done = subprocess.run(
        ["sh", str(folder / "quickstart.sh"), str(model), str(rows), str(out)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"serve_c and serve_cpp wrote the same {out}" in done.stdout
    labels, proba = read_output_csv(out.read_text(), c.dtype)
    assert np.array_equal(proba, c.ort_proba) and (labels == c.label_text).all()
