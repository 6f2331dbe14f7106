"""Spark fits equal the in-memory fit of the same rows (``bernonnx.spark``).

One ``local[2]`` SparkSession serves the module (about 20 s to start). Every fit is
compared with the in-memory fit of ``df.toPandas()``'s columns, the order whose
positions fix the degree search's folds: the same degree, probabilities within 1e-9.
Arrow batches of 2 500 rows make a partition arrive in several batches, as large
partitions do.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bernonnx
from benchmarks._realdata import DEFAULT_DATA_DIR, DataMissing, load
from bernonnx import (
    BernsteinCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    PlattHistogramCalibrator,
)

pyspark = pytest.importorskip(
    "pyspark", reason="the spark extra is not installed (pip install -e '.[spark]')"
)
pd = pytest.importorskip("pandas", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from bernonnx.spark import SparkSource, fit_calibrator, with_probability  # noqa: E402

pytestmark = [
    # a JVM and a Spark session: slow, outside the quick run (pytest -m "not slow")
    pytest.mark.slow,
    # one worker runs the module: one JVM for the suite, not one per xdist worker
    pytest.mark.xdist_group("spark"),
    # pyspark 4 asks for pandas < 3 on every Arrow conversion and passes pandas 3 a
    # deprecated copy= keyword; everything used here works
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

#: Spark against in-memory probabilities; both add the same sums in another order
ATOL = 1e-9


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    for key in saved:
        os.environ[key] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("bernonnx-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "2500")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _frame(spark, columns: dict, partitions: int):
    """A cached DataFrame of ``columns`` in ``partitions`` partitions, and its toPandas()."""
    df = spark.createDataFrame(pd.DataFrame(columns)).repartition(partitions).cache()
    return df, df.toPandas()


def _assert_same_fit(fitted, expected, scores):
    grid = np.concatenate([scores, np.linspace(scores.min() - 1, scores.max() + 1, 501)])
    assert type(fitted) is type(expected)
    np.testing.assert_array_equal(fitted.classes_, expected.classes_)
    if hasattr(expected, "degree_"):
        assert fitted.degree_ == expected.degree_
    dp = np.abs(fitted.predict_proba(grid) - expected.predict_proba(grid)).max()
    assert dp <= ATOL, f"max |dp| = {dp:.3g}"


@pytest.fixture(scope="module")
def magic(spark):
    """A logistic regression's decision values on MAGIC's held-out half; labels "g"/"h"."""
    try:
        X, y, _ = load("magic", DEFAULT_DATA_DIR)
    except DataMissing as exc:
        pytest.skip(str(exc))
    X_fit, X_cal, y_fit, y_cal = train_test_split(
        X.to_numpy(), y, test_size=0.5, stratify=y, random_state=0
    )
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_fit, y_fit)
    return _frame(spark, {"score": model.decision_function(X_cal), "label": y_cal}, 3)


@pytest.fixture(scope="module")
def weighted(spark):
    """Generated scores, 0/1 labels and exponential weights, every seventh weight zero."""
    rng = np.random.default_rng(0)
    n = 12_000
    s = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-1.5 * s - 0.3 * s**2))).astype(np.int64)
    w = rng.exponential(size=n)
    w[::7] = 0.0
    return _frame(spark, {"score": s, "label": y, "w": w}, 4)


def test_real_scores_auto_degree_log_loss(magic):
    df, local = magic
    fitted = fit_calibrator(df, "score", "label", calibrator=BernsteinCalibrator())
    expected = BernsteinCalibrator().fit(local["score"].to_numpy(), local["label"].to_numpy())
    _assert_same_fit(fitted, expected, local["score"].to_numpy())
    assert list(fitted.classes_) == ["g", "h"]
    # an ordinary fitted calibrator: it exports
    assert bernonnx.to_onnx(
        fitted, local[["score"]].to_numpy()[:10], dtype=np.float64
    ).graph.output


@pytest.mark.parametrize(
    "params",
    [
        {"degree": "auto", "loss": "squared"},
        {"degree": 7, "loss": "log"},
    ],
)
def test_weighted_with_zero_weights(weighted, params):
    df, local = weighted
    fitted = fit_calibrator(df, "score", "label", "w", BernsteinCalibrator(**params))
    expected = BernsteinCalibrator(**params).fit(
        local["score"].to_numpy(), local["label"].to_numpy(), local["w"].to_numpy()
    )
    _assert_same_fit(fitted, expected, local["score"].to_numpy())


@pytest.mark.parametrize(
    "calibrator",
    [PlattCalibrator(), IsotonicCalibrator(), HistogramCalibrator(), PlattHistogramCalibrator()],
    ids=lambda c: type(c).__name__,
)
def test_other_calibrators_equal_in_memory(weighted, calibrator):
    df, local = weighted
    fitted = fit_calibrator(df, "score", "label", "w", calibrator)
    expected = clone(calibrator).fit(
        local["score"].to_numpy(), local["label"].to_numpy(), local["w"].to_numpy()
    )
    _assert_same_fit(fitted, expected, local["score"].to_numpy())


def test_chunks_carry_their_rows_positions(weighted):
    """Every chunk's ``start`` is its first row's position in ``toPandas()``'s order,
    with chunks smaller than Spark's Arrow batches and larger than them."""
    df, local = weighted
    n = len(local)
    for chunk_rows in (1_000, 4_000):
        source = SparkSource(df, "score", "label", "w", chunk_rows=chunk_rows)
        assert source.n_rows == n

        def place(chunk, n=n):
            out = np.zeros((2, n))
            out[0, chunk.start : chunk.start + chunk.s.shape[0]] = chunk.s
            out[1, chunk.start : chunk.start + chunk.s.shape[0]] = 1
            return out

        placed = source.reduce(place)
        np.testing.assert_array_equal(placed[1], 1.0)  # each position exactly once
        np.testing.assert_array_equal(placed[0], local["score"].to_numpy())


def test_with_probability_equals_predict_proba(spark, weighted):
    _, local = weighted
    s = local["score"].to_numpy()[:2000]
    cal = BernsteinCalibrator(degree=5).fit(s, local["label"].to_numpy()[:2000])
    frame = pd.DataFrame({"s64": s, "s32": s.astype(np.float32)})
    frame.loc[3, ["s64", "s32"]] = np.nan  # becomes null in Spark
    sdf = spark.createDataFrame(frame).selectExpr("s64", "cast(s32 as float) as s32")
    out = with_probability(sdf, cal, score_col="s64")
    out = with_probability(out, cal, score_col="s32", output_col="p32").toPandas()
    keep = np.ones(len(s), dtype=bool)
    keep[3] = False
    assert out["probability"].isna().to_numpy()[3] and out["p32"].isna().to_numpy()[3]
    # Arrow batches split the rows differently from one predict_proba call, and numpy's
    # vectorised exp differs by an ulp from its scalar loop on a batch's last few rows
    np.testing.assert_array_max_ulp(
        out["probability"].to_numpy()[keep], cal.predict_proba(s[keep])[:, 1], maxulp=2
    )
    expected32 = cal.predict_proba(s[keep].astype(np.float32))[:, 1]
    np.testing.assert_array_max_ulp(out["p32"].to_numpy()[keep], expected32, maxulp=2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"score_col": "nope"}, r"score_col='nope' is not a column"),
        ({"label_col": "missing"}, r"label_col='missing' is not a column"),
        ({"weight_col": "label_text"}, r"weight_col='label_text' must be a numeric column"),
        ({"score_col": "label_text"}, r"score_col='label_text' must be a numeric column"),
        ({"weight_col": "negative"}, r"weight_col='negative' has negative values"),
        ({"score_col": "with_null"}, r"score_col='with_null' has 1 null values; drop or fill"),
        ({"label_col": "one_class"}, r"single class"),
    ],
)
def test_bad_columns_are_named(spark, kwargs, match):
    frame = pd.DataFrame(
        {
            "score": [0.1, 0.4, 0.35, 0.8],
            "label": [0, 0, 1, 1],
            "label_text": ["a", "a", "b", "b"],
            "negative": [1.0, -1.0, 1.0, 1.0],
            "with_null": [0.1, None, 0.3, 0.4],
            "one_class": [1, 1, 1, 1],
        }
    )
    df = spark.createDataFrame(frame)
    with pytest.raises(ValueError, match=match):
        fit_calibrator(df, **{"score_col": "score", "label_col": "label", **kwargs})


def test_not_a_pass_calibrator_is_refused(magic):
    from sklearn.linear_model import LogisticRegression as NotACalibrator

    with pytest.raises(ValueError, match="LogisticRegression does not"):
        fit_calibrator(magic[0], calibrator=NotACalibrator())


def test_dotted_column_names_are_names(spark):
    frame = pd.DataFrame({"model.score": [0.1, 0.4, 0.35, 0.8, 0.2, 0.9], "y": [0, 0, 1, 1, 0, 1]})
    df = spark.createDataFrame(frame)
    fitted = fit_calibrator(df, "model.score", "y", calibrator=IsotonicCalibrator())
    expected = IsotonicCalibrator().fit(frame["model.score"].to_numpy(), frame["y"].to_numpy())
    _assert_same_fit(fitted, expected, frame["model.score"].to_numpy())


def test_import_bernonnx_spark_does_not_import_pyspark():
    code = (
        "import sys, bernonnx, bernonnx.spark\n"
        "assert 'pyspark' not in sys.modules, 'pyspark imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
