"""Parquet input of ``bernonnx compare`` and ``export``: loaded, and streamed in passes.

The streamed results must equal the in-memory ones: the same fit on the same
rows (``fold_of`` folds by position), the same held-out metrics as
``calibration_report`` on the rows the position hash holds out.
"""

import json

import numpy as np
import onnxruntime as ort
import pytest
from threadpoolctl import threadpool_limits

from bernonnx import BernsteinCalibrator
from bernonnx.cli import EXIT_USAGE
from bernonnx.metrics import calibration_report

pa = pytest.importorskip("pyarrow", reason="Parquet input needs pyarrow (bernonnx[parquet])")
pq = pytest.importorskip("pyarrow.parquet")

N_ROWS = 3000


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """Batches and row groups far smaller than the file: many chunks per pass."""
    monkeypatch.setattr("bernonnx._core.parquet.BATCH_ROWS", 700)
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    x = rng.normal(size=N_ROWS)
    y = (rng.random(N_ROWS) < 1.0 / (1.0 + np.exp(-(1.5 * x - 1.0)))).astype(np.int64)
    s1 = x + rng.normal(scale=0.5, size=N_ROWS)
    s2 = 1.0 / (1.0 + np.exp(-(x + rng.normal(scale=0.7, size=N_ROWS))))
    # every 37th row without a label: dropped, and the positions count the others
    label = pa.array(y, mask=np.arange(N_ROWS) % 37 == 5)
    return {"s1": s1, "s2": s2, "y": y, "label": label}


@pytest.fixture(scope="module")
def parquet(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("parquet") / "scores.parquet"
    table = pa.table({"s1": data["s1"], "s2": data["s2"], "y": data["label"]})
    pq.write_table(table, path, row_group_size=500)
    return path


def labelled(data):
    keep = data["label"].is_valid().to_numpy(zero_copy_only=False)
    return data["s1"][keep], data["s2"][keep], data["y"][keep]


def held_out_mask(n, seed, test_size=0.3):
    from bernonnx.cli._stream import _position_hash

    return _position_hash(np.arange(n), seed) < test_size


STREAMED = ["bernstein", "bernstein-squared", "platt", "isotonic", "histogram"]


def test_streamed_compare_equals_the_in_memory_fit_on_the_same_rows(run, data, parquet):
    from bernonnx.cli._methods import _method

    args = ["compare", parquet, "--label", "y", "--score", "s1", "--stream", "--seed", "4"]
    args += [f"--method={name}" for name in STREAMED]
    out, err = run(*args, "--format", "json")
    assert "pass 1:" in err and "held-out metrics" in err
    report = json.loads(out)
    s, _, y = labelled(data)
    assert report["n_rows"] == len(y) and report["n_missing_label"] == N_ROWS - len(y)
    assert report["evaluation"]["streamed"] is True
    test = held_out_mask(len(y), 4)
    assert report["evaluation"]["n_eval"] == test.sum()
    for row, name in zip(report["results"], STREAMED, strict=True):
        cal = _method(name).make().fit(s[~test], y[~test])
        expected = calibration_report(y[test], cal.predict_proba(s[test])[:, 1])
        for key in ("ece", "mce", "brier", "log_loss"):
            assert row[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), (name, key)
        # AUC from 2^18 probability bins: ties within a bin count one half
        assert row["auc"] == pytest.approx(expected["auc"], abs=1e-4), name


def test_streamed_cross_validation_equals_in_memory_folds(run, data, parquet):
    out, _ = run(
        "-q", "compare", parquet, "--label", "y", "--score", "s2", "--stream", "--cv", "3",
        "--method", "uncalibrated", "--method", "bernstein", "--format", "json",
    )  # fmt: skip
    report = json.loads(out)
    _, s, y = labelled(data)
    from bernonnx.cli._stream import _position_hash

    fold = np.minimum((_position_hash(np.arange(len(y)), 0) * 3).astype(int), 2)
    p = np.empty(len(y))
    for j in range(3):
        cal = BernsteinCalibrator().fit(s[fold != j], y[fold != j])
        p[fold == j] = cal.predict_proba(s[fold == j])[:, 1]
    rows = {row["method"]: row for row in report["results"]}
    expected = calibration_report(y, p)
    for key in ("ece", "mce", "brier", "log_loss"):
        assert rows["bernstein"][key] == pytest.approx(expected[key], rel=1e-9), key
    reference = calibration_report(y, s)
    assert rows["uncalibrated"]["brier"] == pytest.approx(reference["brier"], rel=1e-12)
    assert report["evaluation"]["n_eval"] == len(y)


def test_parquet_in_memory_equals_the_same_rows_as_csv(run, data, parquet, tmp_path):
    s1, s2, y = labelled(data)
    csv = tmp_path / "same.csv"
    np.savetxt(csv, np.c_[y, s1, s2], delimiter=",", header="y,s1,s2", comments="", fmt="%.17g")
    args = ["--label", "y", "--score", "s1", "--method", "bernstein", "--method", "platt"]
    args += ["--format", "json"]
    from_parquet = json.loads(run("-q", "compare", parquet, "--no-stream", *args)[0])
    from_csv = json.loads(run("-q", "compare", csv, *args)[0])
    for a, b in zip(from_parquet["results"], from_csv["results"], strict=True):
        for key in ("ece", "brier", "log_loss", "auc"):
            assert a[key] == pytest.approx(b[key], rel=1e-12)
    assert from_parquet["n_missing_label"] == N_ROWS - len(y)


def test_streamed_export_writes_the_in_memory_graph(run, parquet, tmp_path):
    graphs = {}
    for flag in ("--stream", "--no-stream"):
        onnx = tmp_path / f"{flag.strip('-')}.onnx"
        out, err = run(
            "export", parquet, "--label", "y", "--score", "s1", "--method", "bernstein",
            "--onnx", onnx, "--dtype", "float64", flag,
        )  # fmt: skip
        graphs[flag] = ort.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
        assert ("parity on a sample" in out) == (flag == "--stream")
    grid = np.linspace(-6.0, 6.0, 2001)[:, None]
    p = {k: g.run(None, {g.get_inputs()[0].name: grid})[1] for k, g in graphs.items()}
    np.testing.assert_allclose(p["--stream"], p["--no-stream"], rtol=0, atol=1e-12)


def test_a_large_parquet_file_streams_by_default(run, parquet, monkeypatch):
    monkeypatch.setattr("bernonnx.cli._stream.STREAM_ROWS", 1000)
    out, err = run("compare", parquet, "--label", "y", "--score", "s1")
    assert "bernstein: pass" in err
    # the fits on distinct-score tables grow with the file: only on request
    assert (
        "skipped beta, quadratic-scaling, venn-abers, isotonic, histogram, platt-histogram" in err
    )
    assert "| platt " in out and "| isotonic " not in out
    monkeypatch.setattr("bernonnx.cli._stream.STREAM_ROWS", 10**6)
    _, err = run("compare", parquet, "--label", "y", "--score", "s1", "--method", "bernstein")
    assert "bernstein: pass" not in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--score", "s1", "--score", "s2", "--method", "multivariate"], "--no-stream"),
        (["--score", "s1", "--method", "sklearn-isotonic"], "methods that stream"),
        (["--score", "s1", "--plot", "x.png"], "--plot"),
        (["--score", "missing"], "'missing' is not in"),
    ],
)
def test_streaming_refuses_what_it_cannot_do(run, parquet, args, expected):
    _, err = run("compare", parquet, "--label", "y", "--stream", *args, expect=EXIT_USAGE)
    assert expected in err


def test_stream_needs_a_parquet_file(run, tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("y,s\n0,0.1\n1,0.9\n")
    _, err = run("compare", csv, "--label", "y", "--score", "s", "--stream", expect=EXIT_USAGE)
    assert "--stream reads Parquet files" in err


def test_bad_cells_name_the_column_and_row(run, tmp_path):
    path = tmp_path / "bad.parquet"
    score = pa.array([0.1, 0.2, None, 0.4] * 10)
    pq.write_table(pa.table({"s": score, "y": [0, 1] * 20}), path)
    for flag in ("--stream", "--no-stream"):
        _, err = run(
            "compare", path, "--label", "y", "--score", "s", flag, expect=EXIT_USAGE
        )  # fmt: skip
        assert "score column 's' is empty (null) at row 3" in err


def test_text_labels_need_pos_label_and_stream_like_numbers(run, data, tmp_path):
    path = tmp_path / "text.parquet"
    text = np.where(data["y"] == 1, "click", "skip")
    pq.write_table(pa.table({"s": data["s1"], "y": text}), path, row_group_size=400)
    _, err = run("compare", path, "--label", "y", "--score", "s", "--stream", expect=EXIT_USAGE)
    assert "--pos-label" in err
    args = ["--label", "y", "--score", "s", "--pos-label", "click", "--format", "json"]
    args += ["--method", "bernstein"]
    streamed = json.loads(run("-q", "compare", path, "--stream", *args)[0])
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"s": data["s1"], "y": data["y"]}), numbers, row_group_size=400)
    args = ["--label", "y", "--score", "s", "--format", "json", "--method", "bernstein"]
    reference = json.loads(run("-q", "compare", numbers, "--stream", *args)[0])
    assert streamed["positive_label"] == "click" and reference["positive_label"] == "1"
    for row in (*streamed["results"], *reference["results"]):
        del row["fit_seconds"]
    assert streamed["results"] == reference["results"]


def test_missing_pyarrow_names_the_extra(run, parquet, monkeypatch):
    def missing():
        raise ImportError('reading Parquet files needs pyarrow: pip install "bernonnx[parquet]"')

    monkeypatch.setattr("bernonnx._core.parquet.require_pyarrow", missing)
    _, err = run("compare", parquet, "--label", "y", "--score", "s1", expect=EXIT_USAGE)
    assert 'pip install "bernonnx[parquet]"' in err


def test_parquet_source_keeps_rows_by_position_numbered_again(data, parquet):
    from bernonnx._core.parquet import ParquetSource

    s, _, y = labelled(data)
    keep = np.arange(len(y)) % 3 != 1
    source = ParquetSource(
        parquet, "s1", "y", positive=[1], keep=lambda p: p % 3 != 1, batch_rows=700
    )
    sizes, starts = [], []
    for chunk in source.chunks():
        sizes.append(chunk.s.shape[0])
        starts.append(chunk.start)
    assert max(sizes) <= 700 and starts == list(np.cumsum([0, *sizes[:-1]]))
    streamed = BernsteinCalibrator()._fit_source(source)
    in_memory = BernsteinCalibrator().fit(s[keep], y[keep])
    grid = np.linspace(-5, 5, 1001)
    np.testing.assert_allclose(
        streamed.predict_proba(grid), in_memory.predict_proba(grid), rtol=0, atol=1e-12
    )
    assert source.passes > 3


def test_parquet_source_weights_equal_in_memory_sample_weight(data, tmp_path):
    from bernonnx import PlattCalibrator
    from bernonnx._core.parquet import ParquetSource

    w = np.random.default_rng(2).integers(0, 4, size=N_ROWS).astype(np.float64)
    path = tmp_path / "weighted.parquet"
    table = pa.table({"s": data["s1"], "y": data["y"], "w": w})
    pq.write_table(table, path, row_group_size=600)
    grid = np.linspace(-5, 5, 1001)
    for make in (BernsteinCalibrator, PlattCalibrator):
        source = ParquetSource(path, "s", "y", weight="w", batch_rows=500)
        streamed = make()._fit_source(source)
        in_memory = make().fit(data["s1"], data["y"], sample_weight=w)
        np.testing.assert_allclose(
            streamed.predict_proba(grid), in_memory.predict_proba(grid), rtol=0, atol=1e-12
        )
