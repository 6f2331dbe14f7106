"""Every command's outputs: checked before any work, written together at the end.

A path no file can be written at (a read-only folder, a path under a regular file, a
folder where a file is expected) makes ``demo``, ``compare``, ``export`` and ``attach``
(and ``adapt``) exit 2 with one line naming the option and the path, before reading or
fitting anything, and with nothing new on disk: no output, no temporary file, no empty folder.
A failure while writing (a disk full, a rename refused) takes back what the same
command wrote before it. The library's :func:`write_triton_repository` keeps the same
promise.

The tests run as root in CI, where a folder's mode 0555 does not stop a write; the
read-only folders are ``/sys`` and ``/proc``, which refuse new files whoever asks (a
0555 folder when not root). Data as users hold it: the bundled credit table, a
LogisticRegression's scores written and read back by pandas.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from skl2onnx import to_onnx as skl2onnx_to_onnx
from sklearn.linear_model import LogisticRegression

from bernonnx.cli import EXIT_OK, EXIT_USAGE
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import write_triton_repository

pd = pytest.importorskip("pandas")


def _refuses_files(folder: Path) -> bool:
    try:
        fd, probe = tempfile.mkstemp(dir=folder)
    except OSError:
        return True
    os.close(fd)
    os.unlink(probe)
    return False


@pytest.fixture(scope="module")
def read_only(tmp_path_factory) -> Path:
    """A folder no file can be created in, for root too: ``/sys`` or ``/proc``, else
    (not Linux) a folder of mode 0555 when not root."""
    for candidate in (Path("/sys"), Path("/proc")):
        if candidate.is_dir() and _refuses_files(candidate):
            return candidate
    folder = tmp_path_factory.mktemp("read-only")
    folder.chmod(0o555)
    if not _refuses_files(folder):
        pytest.skip("no folder here refuses new files (root, and no /sys or /proc)")
    return folder


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A LogisticRegression on 3,000 rows of the credit table, shipped as ONNX, and a
    CSV of its probabilities on 1,500 other rows, written by pandas."""
    folder = tmp_path_factory.mktemp("outputs")
    X, y, _ = load_credit_default()
    X = X[:4500].astype(np.float32)  # the model ships as a float32 graph
    model = LogisticRegression(max_iter=2000).fit(X[:3000], y[:3000])
    onx = skl2onnx_to_onnx(model, X[:1], options={"zipmap": False}, target_opset=15)
    onnx.save(onx, folder / "model.onnx")
    frame = pd.DataFrame({"default": y[3000:4500], "p": model.predict_proba(X[3000:])[:, 1]})
    frame.to_csv(folder / "scores.csv", index=False)
    # unlabeled scores for adapt --target: the same model on 1,500 more rows
    X_target = load_credit_default()[0][4500:6000].astype(np.float32)
    pd.DataFrame({"p": model.predict_proba(X_target)[:, 1]}).to_csv(
        folder / "target.csv", index=False
    )
    return folder


def everything_under(folder: Path) -> set[Path]:
    """Every file and folder below ``folder``, hidden ones included."""
    return set(folder.rglob("*"))


def command(name: str, files: Path) -> list:
    """The arguments of ``name`` on the fixture's files, before its output options."""
    data = ["--label", "default", "--score", "p", "--method", "platt"]
    if name == "attach":
        model = ["--output", "probabilities", "--column", "1"]
        return ["attach", files / "model.onnx", files / "scores.csv", *data, *model]
    if name == "adapt":
        return ["adapt", files / "scores.csv", *data, "--target", files / "target.csv"]
    return [name, files / "scores.csv", *data]


def outputs(name: str, place: Path, bad: str) -> tuple[list, str]:
    """The output options of ``name`` with the ``bad`` one pointing at ``place``; the
    option the error must name. The other outputs go to the test's own folder, "ok"."""
    if name == "compare":
        plot, output = ("ok/p.png", "ok/r.csv")
        plot, output = (place / "p.png", output) if bad == "plot" else (plot, place / "r.csv")
        return ["--output", output, "--plot", plot], f"--{bad}"
    if name == "adapt":
        return ["--onnx", place / "o.onnx"], "--onnx"
    if bad == "triton":
        return ["--onnx", "ok/o.onnx", "--triton", place / "repo"], "--triton"
    return ["--onnx", place / "o.onnx", "--triton", "ok/repo"], "--onnx"


CASES = [
    ("export", "triton"),
    ("export", "onnx"),
    ("attach", "triton"),
    ("attach", "onnx"),
    ("compare", "plot"),
    ("compare", "output"),
    ("adapt", "onnx"),
]


@pytest.mark.parametrize("where", ["read-only folder", "under a file"])
@pytest.mark.parametrize("name, bad", CASES)
def test_an_unwritable_output_stops_the_command_before_any_work(
    run, files, read_only, tmp_path, monkeypatch, name, bad, where
):
    monkeypatch.chdir(tmp_path)
    if where == "read-only folder":
        place = read_only
    else:
        (tmp_path / "a-file").write_text("not a folder\n")
        place = tmp_path / "a-file" / "sub"
    options, flag = outputs(name, place, bad)
    before = everything_under(tmp_path)
    _, err = run(*command(name, files), *options, expect=EXIT_USAGE)
    lines = err.strip().splitlines()
    # one line, naming the option and the path, and no step ran before it
    assert len(lines) == 1 and lines[0].startswith("bernonnx: error:"), err
    assert flag in lines[0] and str(place) in lines[0] and "unexpected" not in err
    assert everything_under(tmp_path) == before
    assert not (tmp_path / "ok").exists()


@pytest.mark.parametrize("name", ["export", "attach"])
def test_a_folder_where_a_triton_file_goes_is_refused(run, files, tmp_path, name):
    (tmp_path / "repo" / "o" / "config.pbtxt").mkdir(parents=True)
    before = everything_under(tmp_path)
    args = ["--onnx", tmp_path / "o.onnx", "--triton", tmp_path / "repo"]
    _, err = run("-q", *command(name, files), *args, expect=EXIT_USAGE)
    assert "--triton" in err and "is a folder" in err and "config.pbtxt" in err
    assert everything_under(tmp_path) == before


@pytest.mark.parametrize("where", ["read-only folder", "under a file", "model.onnx a folder"])
def test_demo_checks_its_out_folder_before_training(run, read_only, tmp_path, where):
    if where == "read-only folder":
        out = read_only / "demo"
    elif where == "under a file":
        (tmp_path / "a-file").write_text("")
        out = tmp_path / "a-file" / "demo"
    else:
        out = tmp_path / "demo"
        (out / "model.onnx").mkdir(parents=True)
    before = everything_under(tmp_path)
    _, err = run("demo", "--quick", "--out", out, expect=EXIT_USAGE)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0] and str(out) in lines[0], err
    assert everything_under(tmp_path) == before


def failing_rename(target_name: str, monkeypatch):
    """Make the rename onto ``target_name`` fail as a full or read-only disk would."""
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == target_name:
            raise OSError(28, "No space left on device")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize(
    "name, last",
    [
        ("export", "config.pbtxt"),
        ("attach", "config.pbtxt"),
        ("compare", "r.csv"),
        ("adapt", "o.onnx"),
    ],
)
def test_a_failure_while_writing_takes_back_what_was_written(
    run, files, tmp_path, monkeypatch, name, last
):
    """The last file's rename fails: the files renamed before it are removed again,
    with the folders made for them and every temporary file."""
    if name == "compare":
        options = ["--plot", tmp_path / "out" / "p.png", "--output", tmp_path / "out" / "r.csv"]
        flag = "--output"
    elif name == "adapt":
        options, flag = ["--onnx", tmp_path / "out" / "o.onnx"], "--onnx"
    else:
        options = ["--onnx", tmp_path / "out" / "o.onnx", "--triton", tmp_path / "repo"]
        flag = "--triton"
    before = everything_under(tmp_path)
    failing_rename(last, monkeypatch)
    _, err = run("-q", *command(name, files), *options, expect=EXIT_USAGE)
    assert flag in err and last in err and "No space left" in err
    assert everything_under(tmp_path) == before
    monkeypatch.undo()
    # the same command writes every file once the disk is back
    run("-q", *command(name, files), *options, expect=EXIT_OK)
    assert all(p.stat().st_size > 0 for p in everything_under(tmp_path) if p.is_file())
    assert not [p for p in everything_under(tmp_path) if p.name.startswith(".")]


def test_write_triton_repository_leaves_nothing_when_a_file_fails(files, tmp_path, monkeypatch):
    onx = onnx.load(files / "model.onnx")
    failing_rename("config.pbtxt", monkeypatch)
    with pytest.raises(OSError, match="config.pbtxt"):
        write_triton_repository(onx, tmp_path / "repo", "lr")
    assert everything_under(tmp_path) == set()
    monkeypatch.undo()
    # an existing repository keeps its files when the new version cannot be written
    folder = write_triton_repository(onx, tmp_path / "repo", "lr")
    old = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    failing_rename("config.pbtxt", monkeypatch)
    with pytest.raises(OSError):
        write_triton_repository(onx, tmp_path / "repo", "lr", version=2)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == old
    assert not (folder / "2").exists()


def test_write_triton_repository_into_a_read_only_folder(files, read_only):
    with pytest.raises(OSError) as caught:
        write_triton_repository(onnx.load(files / "model.onnx"), read_only / "repo", "lr")
    assert str(read_only / "repo") in str(caught.value)
    assert not (read_only / "repo").exists()


@pytest.mark.parametrize("name", ["export", "attach"])
def test_onnx_and_triton_on_one_path_are_refused_before_any_work(run, files, tmp_path, name):
    # --onnx same --triton same was found only when writing, after the fit and the
    # parity check ("cannot write same: Is a directory"); the paths now clash up front
    before = everything_under(tmp_path)
    same = tmp_path / "same"
    _, err = run(*command(name, files), "--onnx", same, "--triton", same, expect=EXIT_USAGE)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bernonnx: error:"), err
    assert "--triton" in lines[0] and "inside" in lines[0] and "--onnx" in lines[0]
    assert everything_under(tmp_path) == before


def test_temperature_on_probabilities_reads_them_as_probabilities(run, files, tmp_path):
    # `export --method temperature` on a column of probabilities read them as log-odds,
    # fitted temperature_ = inf, exported a constant 1/2 and reported parity as passed
    from bernonnx.deploy import run_onnx

    out = tmp_path / "t.onnx"
    stdout, _ = run(
        "export", files / "scores.csv", "--label", "default", "--score", "p",
        "--method", "temperature", "--onnx", out,
    )  # fmt: skip
    assert "read as probabilities (input='proba')" in stdout
    p = pd.read_csv(files / "scores.csv")["p"].to_numpy()[:, None]
    proba = run_onnx(onnx.load(out), {"X": p})["probabilities"][:, 1]
    assert np.ptp(proba) > 0.5  # calibrated, not a constant


def test_a_constant_calibration_is_never_reported_as_a_success(run, files, tmp_path):
    # scores ranking the labels backwards: no inverse temperature >= 0 beats 1/2, the fit
    # is a constant, and export says so
    frame = pd.read_csv(files / "scores.csv")
    frame["p"] = 1.0 - frame["p"]
    frame.to_csv(tmp_path / "noise.csv", index=False)
    out = tmp_path / "n.onnx"
    _, err = run(
        "export", tmp_path / "noise.csv", "--label", "default", "--score", "p",
        "--method", "temperature", "--onnx", out, expect=EXIT_USAGE,
    )  # fmt: skip
    assert "maps every row of the file to the same probabilities" in err
    assert not out.exists()
