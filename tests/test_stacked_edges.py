"""``StackedCalibrator`` at the edges a demanding user reaches: calibration rows the score
separates (a corpus table as pandas reads it), the exported graph as onnxruntime loads it,
weights that are shares rather than counts or whose total overflows, decision values at
1e300, 1e-310 and the float maximum, a handful of rows.

One regression test per defect found; ``tests/test_stacked.py`` holds the calibrator's
main properties.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _parity import run_onnx, tolerance

from bernonnx import CalibratedClassifier, StackedCalibrator
from bernonnx.export import to_onnx

#: the corpus beside the checkout (``../shared/data/corpus``); $BERNONNX_CORPUS overrides
CORPUS = Path(
    os.environ.get(
        "BERNONNX_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus"
    )
)


def corpus_table(name: str) -> pd.DataFrame:
    """A corpus table as ``pandas.read_csv`` gives it, rows shuffled (seed 0)."""
    path = CORPUS / f"{name}.csv.gz"
    if not path.is_file():
        pytest.skip(f"the corpus table {path} is not there (set BERNONNX_CORPUS)")
    return _read(path).copy()


@cache
def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path).sample(frac=1, random_state=0).reset_index(drop=True)


def test_separated_calibration_rows_never_give_probability_0_or_1():
    # kr_vs_kp (36 int64 columns, string labels) into a bare gradient-boosting model: its
    # decision values separate the 200 calibration rows. The unpenalised members put
    # their log-odds at the clip, +-36, and the stack's weights summed to 1.6, so the
    # stack's log-odds reached +-58: 637 of 1196 test rows got probability exactly 1,
    # among them a 'nowin' row (its class got probability 0: infinite log loss), and
    # others 1e-21, where the docstring promised float64's epsilon at worst
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.frozen import FrozenEstimator

    df = corpus_table("kr_vs_kp")
    X, y = df.drop(columns="target"), df["target"]
    model = HistGradientBoostingClassifier(max_iter=50, random_state=0).fit(X[:800], y[:800])
    cc = CalibratedClassifier(FrozenEstimator(model), StackedCalibrator())
    cc.fit(X[800:1000], y[800:1000])
    proba = cc.predict_proba(X[2000:])
    eps = np.finfo(np.float64).eps
    assert proba.min() >= eps / 2 and proba.max() <= 1 - eps / 2
    onx = to_onnx(cc, X[2000:2005])
    _, graph = run_onnx(onx, X[2000:])
    assert np.abs(graph - proba).max() <= tolerance(np.float64)
    assert graph.min() > 0 and graph.max() < 1


def test_graph_has_no_unused_initializer():
    # eeg_eye_state into GaussianNB: the stack uses the affine and Venn-Abers members.
    # The parametric emitter wrote a 0 constant for every member, the affine one included,
    # which never reads it: onnxruntime printed "Removing initializer 'cal_zero'. It is not
    # used by any node" at every load of the graph (to_onnx's own parity check included)
    import onnx
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB

    df = corpus_table("eeg_eye_state")
    X, y = df.drop(columns="target"), df["target"]
    model = GaussianNB().fit(X[:1000], y[:1000])
    cc = CalibratedClassifier(FrozenEstimator(model), StackedCalibrator())
    cc.fit(X[1000:2000], y[1000:2000])
    (cal,) = cc.calibrated_classifiers_[0].calibrators
    assert cal.weights_[0] > 0 and np.all(cal.weights_[1:3] == 0)  # affine alone
    graph = to_onnx(cc, X[:5]).graph
    read = {name for node in graph.node for name in node.input}
    for node in graph.node:  # subgraphs read outer initializers too
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                read |= {name for sub in attr.g.node for name in sub.input}
    assert [i.name for i in graph.initializer if i.name not in read] == []


def test_weights_given_as_shares_keep_the_quadratic_members_shape():
    # htru2_pulsar's integrated-profile skewness as the score. Weights that sum to 1
    # (shares, as many users normalise them) put every row's position in numpy's
    # percentile rule at 0 or past 1 (it divides by the total weight minus 1): the
    # quadratic member was centred at the smallest score with an interquartile range of
    # 1e-12, its out-of-fold log loss 0.0915 instead of 0.0866. Its fit divides the loss
    # by the total weight, so equal shares should give it the map of equal counts (the
    # Venn-Abers member does depend on the total: docs/guarantees.rst)
    df = corpus_table("htru2_pulsar")
    s, y = df["IP_Skewness"].iloc[:1500], df["target"].iloc[:1500]
    counts = StackedCalibrator().fit(s, y)
    shares = StackedCalibrator().fit(s, y, sample_weight=np.full(s.shape[0], 1 / s.shape[0]))
    a, b = counts.members_["quadratic"], shares.members_["quadratic"]
    np.testing.assert_allclose(b.shape_, a.shape_, rtol=1e-12)
    grid = np.linspace(s.min() - 1, s.max() + 1, 201)
    np.testing.assert_allclose(b.log_odds(grid), a.log_odds(grid), atol=1e-6)


@pytest.mark.parametrize("scale", [1e200, 1e300, 1e-310])
def test_decision_values_at_extreme_scales_fit_without_overflow(scale):
    # htru2_pulsar's IP_Skewness as decision values, multiplied by 1e200, 1e300 and 1e-310
    # (the scales docs/guarantees.rst promises the one-score calibrators). The parametric
    # members' feature norm squared the deviations: 'overflow encountered in square'
    # escaped from fit, and the norm was inf, so the affine and Beta members were flat;
    # at 1e-310 the squares underflowed and the norm's floor, 1e-300, flattened them too.
    # The affine map reads the log-odds linearly: on scaled scores it is the same map
    import warnings

    df = corpus_table("htru2_pulsar")
    s, y = df["IP_Skewness"].to_numpy()[:1500], df["target"].to_numpy()[:1500]
    plain = StackedCalibrator().fit(s, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        big = StackedCalibrator().fit(s * scale, y)
        grid = np.linspace(s.min() - 1, s.max() + 1, 201)
        p = big.predict_proba(grid * scale)[:, 1]
    np.testing.assert_allclose(
        big.members_["affine"].log_odds(grid * scale),
        plain.members_["affine"].log_odds(grid),
        atol=1e-6,
    )
    assert np.all(np.diff(p) >= 0) and p.min() > 0 and p.max() < 1
    _, graph = run_onnx(to_onnx(big, grid[:2, None] * scale), grid[:, None] * scale)
    assert np.abs(graph[:, 1] - p).max() <= tolerance(np.float64)


def test_weights_whose_total_overflows_are_refused_by_name():
    # 1000 htru2_pulsar rows of weight 1e306: every weight is finite but their total is
    # inf, and the fit failed deep in the Bernstein member's QP with an IndexError (the
    # Venn-Abers member alone returned NaN probabilities)
    df = corpus_table("htru2_pulsar")
    s, y = df["IP_Skewness"].to_numpy()[:1000], df["target"].to_numpy()[:1000]
    with pytest.raises(ValueError, match="sample_weight"):
        StackedCalibrator().fit(s, y, sample_weight=np.full(1000, 1e306))


@pytest.mark.parametrize(("n", "seed"), [(6, 2), (7, 11), (8, 1), (10, 21), (30, 0)])
def test_a_few_rows_fit_quietly_and_stay_off_0_and_1(n, seed):
    # generated, as an addition to the kr_vs_kp case: on 6 to 10 rows the out-of-fold
    # members can separate the labels, and the stack's log-odds ran past +-37 (probability
    # exactly 1) on these seeds before the clip; no warning may escape, the map stays
    # monotone
    import warnings

    rng = np.random.default_rng(seed)
    s = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * s))).astype(int)
    y[:2] = [0, 1]
    grid = np.sort(np.r_[s, np.linspace(-1e3, 1e3, 201), -1.7e308, 1.7e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cal = StackedCalibrator().fit(s, y)
        p = cal.predict_proba(grid)
    assert np.all(np.diff(p[:, 1]) >= 0)
    assert p.min() > 0 and p.max() < 1


@pytest.mark.parametrize("unit", [1.0, 0.1])
@pytest.mark.parametrize("big", [1e308, -np.finfo(np.float64).max])
def test_calibration_scores_at_the_float_maximum_fit_quietly(big, unit):
    # htru2_pulsar's IP_Skewness (in units of 1 and 0.1) with its first three rows set to
    # +-1e308 or the float maximum (finite scores, as a saturated decision function gives
    # them): the parametric members' feature mean summed them to inf ('overflow
    # encountered in matmul' escaped from fit) and kept mean_ = +-inf; in units of 0.1
    # (interquartile range below 1) the quadratic member's (t - centre) / scale overflowed
    # too ('overflow encountered in divide'), its fitted range was infinite and its mean NaN
    import warnings

    df = corpus_table("htru2_pulsar")
    s = df["IP_Skewness"].to_numpy()[:1000] * unit
    y = df["target"].to_numpy()[:1000]
    s[:3] = big
    grid = np.sort(np.r_[s, np.linspace(-50, 50, 201), -big, big])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        cal = StackedCalibrator().fit(s, y)
        p = cal.predict_proba(grid)[:, 1]
    for m in ("affine", "beta", "quadratic"):
        fit = cal.members_[m]
        assert np.isfinite(fit.mean_).all() and np.isfinite(fit.norm_).all()
    assert np.isfinite(cal.members_["quadratic"].shape_).all()
    assert np.all(np.diff(p) >= 0) and p.min() > 0 and p.max() < 1
    _, graph = run_onnx(to_onnx(cal, grid[:2, None]), grid[:, None])
    assert np.abs(graph[:, 1] - p).max() <= tolerance(np.float64)
