"""Fits on Dask collections equal the in-memory fit (issue 13), on a 2-worker LocalCluster.

Skipped, with the reason, only when the ``dask`` extra is not installed; CI installs it.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed", reason='needs the dask extra: pip install -e ".[dask]"')
pytest.importorskip("dask.dataframe", reason='needs the dask extra: pip install -e ".[dask]"')

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402
from scipy.special import expit  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402

import bernonnx  # noqa: E402
from benchmarks._realdata import DEFAULT_DATA_DIR, DataMissing, load, split  # noqa: E402
from bernonnx import (  # noqa: E402
    BernsteinCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
)
from bernonnx.dask import predict_proba  # noqa: E402

EXACT = 1e-9

# one worker runs the module: one LocalCluster for the suite, not one per xdist worker;
# starting it makes the module slow, outside the quick run (pytest -m "not slow")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dask")]


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def credit_scores():
    """Real scores: a HistGradientBoosting decision function on the shared credit data."""
    try:
        X, y, categorical = load("credit", DEFAULT_DATA_DIR)
    except DataMissing as exc:  # pragma: no cover - the shared data are part of CI
        pytest.skip(str(exc))
    X = X.drop(columns=categorical).to_numpy(dtype=float)
    X_tr, y_tr, X_cal, y_cal, _, _ = split(X, y)
    model = HistGradientBoostingClassifier(max_iter=50, random_state=0).fit(X_tr, y_tr)
    return model.decision_function(X_cal), y_cal


def _diff(a, b, s):
    return float(np.max(np.abs(a.predict_proba(s) - b.predict_proba(s))))


@pytest.mark.parametrize("params", [{}, {"loss": "squared"}, {"degree": 16}], ids=str)
def test_bernstein_on_dask_arrays_equals_in_memory(client, credit_scores, params):
    s, y = credit_scores
    w = np.random.default_rng(0).integers(0, 3, s.shape[0]).astype(float)
    ref = BernsteinCalibrator(**params).fit(s, y, w)
    cal = BernsteinCalibrator(**params).fit(
        da.from_array(s, chunks=1_500), da.from_array(y, chunks=2_000), da.from_array(w, 1_000)
    )
    assert cal.degree_ == ref.degree_
    assert _diff(cal, ref, s) <= EXACT
    # an ordinary fitted calibrator: it exports
    onx = bernonnx.to_onnx(cal, s[:10, None], dtype=np.float64)
    assert onx.graph.output


def test_dataframe_columns_and_scoring(client):
    rng = np.random.default_rng(1)
    n = 60_000  # above COMPRESS_ABOVE: bins, then Newton passes on the partitions
    s = rng.normal(size=n)
    y = np.where(rng.random(n) < expit(2 * s - 1), "fraud", "ok")
    frame = dd.from_pandas(pd.DataFrame({"score": s, "label": y}), npartitions=5)
    cal = BernsteinCalibrator().fit(frame[["score"]], frame["label"])
    ref = BernsteinCalibrator().fit(s, y)
    assert list(cal.classes_) == ["fraud", "ok"]
    assert cal.degree_ == ref.degree_ and _diff(cal, ref, s) <= EXACT
    p = predict_proba(cal, frame["score"]).compute()
    assert np.array_equal(p.to_numpy(), cal.predict_proba(s)[:, 1])
    q = predict_proba(cal, da.from_array(s, chunks=7_000)).compute()
    assert np.array_equal(q, cal.predict_proba(s)[:, 1])


@pytest.mark.parametrize(
    "calibrator", [PlattCalibrator(), IsotonicCalibrator(), HistogramCalibrator()], ids=repr
)
def test_baselines_on_dask_equal_in_memory(client, credit_scores, calibrator):
    s, y = credit_scores
    ref = calibrator.fit(s, y).predict_proba(s)
    cal = type(calibrator)().fit(da.from_array(s, chunks=2_500), da.from_array(y, chunks=2_500))
    assert np.max(np.abs(cal.predict_proba(s) - ref)) <= EXACT


def test_dask_errors_name_the_argument(client):
    s = da.from_array(np.linspace(0, 1, 100), chunks=30)
    with pytest.raises(ValueError, match="y has 50"):
        BernsteinCalibrator().fit(s, da.zeros(50, chunks=10))
    two = dd.from_pandas(pd.DataFrame({"a": np.ones(100), "b": np.ones(100)}), npartitions=2)
    with pytest.raises(ValueError, match="X must be one column"):
        BernsteinCalibrator().fit(two, da.zeros(100, chunks=10))
    with pytest.raises(ValueError, match="single class"):
        BernsteinCalibrator().fit(s, da.zeros(100, chunks=10))
