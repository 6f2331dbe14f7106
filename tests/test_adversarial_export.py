"""Adversarial inputs for the export path (``to_onnx``, ``onnx_inputs``, ``make_safe``,
``attach`` and the converters), the companion of ``test_adversarial.py``.

Two properties, over every converter input bernonnx accepts (OneHotEncoder settings,
pandas' column types, frames changed between export and serving, argument types):

- never silently wrong: on every row that Python or the graph accepts, both accept it
  and agree within the parity tolerance (1e-9 for float64 graphs);
- never an unnamed error: what ``to_onnx`` refuses is our ``ValueError`` (bad input,
  naming the argument or the column) or ``NotImplementedError`` (a step no converter
  reproduces, naming it), never an exception of skl2onnx, onnx or numpy.

The column types are those pandas gives users (``read_csv``'s int64, float64, bool and
strings; the nullable ``Int64``, ``Float64``, ``boolean`` and ``string``; categoricals
of integers, floats and strings), the real column is credit's ``EDUCATION`` as
``pandas.read_csv`` reads the bundled table. The large matrix is marked slow.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from functools import cache
from importlib import resources

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, SplineTransformer, StandardScaler

from bernonnx import BernsteinCalibrator, CalibratedClassifier, PlattCalibrator, attach
from bernonnx.export import check_parity, make_safe, onnx_inputs, to_onnx
from bernonnx.export._ort_rewrites import find_hazards

TOL = 1e-9  # float64 graphs; every graph here is float64 (int64 and float64 data)


def credit(rows=3000):
    """The bundled credit table as ``pandas.read_csv`` reads it (int64 columns): a copy
    of the first ``rows`` rows, read once per size (the one-hot matrix reads 800 rows
    in each of its cases)."""
    frame, y = _read_credit(rows)
    return frame.copy(), y.copy()


@cache
def _read_credit(rows):
    with resources.files("bernonnx.data").joinpath("uci_credit_card.csv.gz").open("rb") as f:
        frame = pd.read_csv(f, compression="gzip", nrows=rows)
    y = frame.pop("default.payment.next.month").to_numpy()
    return frame.drop(columns="ID"), y


def _session(onx):
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 4  # the refused unknown categories below are expected
    return ort.InferenceSession(
        onx.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _both(clf, session, onx, frame):
    """(Python's probabilities or None, the graph's or None) on ``frame``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            python = clf.predict_proba(frame)
        except Exception:  # noqa: BLE001 - Python refusing the row is one outcome
            python = None
    try:
        graph = session.run(["probabilities"], onnx_inputs(onx, frame))[0]
    except Exception:  # noqa: BLE001 - the graph (or onnx_inputs) refusing it, the other
        graph = None
    return python, graph


def disagreements(clf, onx, frame) -> list:
    """Rows where Python and the graph do not both refuse or both agree within TOL."""
    out = []
    _compare(clf, _session(onx), onx, frame, 0, out)
    return sorted(out, key=lambda row: row[0])


def _compare(clf, session, onx, frame, start, out) -> None:
    """``disagreements`` of ``frame`` (rows from ``start``): the block at once, halved
    until each refused row is alone (a few refused rows cost a few halvings each)."""
    python, graph = _both(clf, session, onx, frame)
    if python is not None and graph is not None:
        bad = np.flatnonzero(np.abs(python - graph).max(axis=1) > TOL)
        out += [(start + int(i), python[i].tolist(), graph[i].tolist()) for i in bad]
    elif len(frame) == 1:
        if (python is None) != (graph is None):
            out.append((start, python, graph))
    else:
        half = len(frame) // 2
        _compare(clf, session, onx, frame.iloc[:half], start, out)
        _compare(clf, session, onx, frame.iloc[half:], start + half, out)


def fit_frame(frame, y, encoder, columns):
    pre = ColumnTransformer(
        [("onehot", encoder, columns), ("num", StandardScaler(), ["LIMIT_BAL", "AGE"])]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a fixed degree: these tests are about the columns, and the degree search of two
        # folds took most of each case's time; the graph keeps the default's Bernstein form
        model = make_pipeline(pre, LogisticRegression())
        return CalibratedClassifier(model, BernsteinCalibrator(degree=8), cv=2).fit(frame, y)


# ------------------------------------------------- one-hot columns served other values


def test_one_hot_compares_values_not_truncations():
    """Fitted on credit's int64 EDUCATION, served floats: 2.5 and 2.0000001 are unknown
    to scikit-learn (all zeros), never category 2; unseen integers stay unknown."""
    X, y = credit()
    X = X[["EDUCATION", "LIMIT_BAL", "AGE"]]
    clf = fit_frame(X, y, OneHotEncoder(handle_unknown="ignore"), ["EDUCATION"])
    onx = to_onnx(clf, X[:5])
    served = X.iloc[[0] * 8].astype({"EDUCATION": "float64"})  # one row, 8 educations
    served["EDUCATION"] = [2.5, 2.0000001, 99.0, -1.0, 1e10, 2.0, 1.9999999, np.nan]
    assert disagreements(clf, onx, served) == []
    assert disagreements(clf, onx, X) == []
    # the row of 2.5 is the unknown row, not category 2's
    p = clf.predict_proba(served)[:, 1]
    assert p[0] == pytest.approx(p[2], abs=TOL) and abs(p[0] - p[5]) > 1e-3


@pytest.mark.parametrize("handle_unknown", ["error", "infrequent_if_exist", "warn"])
def test_one_hot_unknowns_follow_handle_unknown(handle_unknown):
    """ "error": Python raises, so does onnxruntime; the infrequent variants give the
    infrequent column to unknown values, as scikit-learn does."""
    X, y = credit()
    X = X[["EDUCATION", "LIMIT_BAL", "AGE"]]
    encoder = OneHotEncoder(handle_unknown=handle_unknown, min_frequency=40)
    clf = fit_frame(X, y, encoder, ["EDUCATION"])
    onx = to_onnx(clf, X[:5])
    served = X[:6].astype({"EDUCATION": "float64"})
    served["EDUCATION"] = [2.5, 99.0, 0.0, 2.0, -1.0, 5.0]
    assert disagreements(clf, onx, served) == []


# ------------------------------------------------- frames read by position


def _permuted(frame):
    return frame[frame.columns[[1, 0, *range(2, frame.shape[1])]]]


def _positional_cases():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(400, 6))
    y = (A[:, 0] + 0.5 * A[:, 1] > 0).astype(int)
    ints = pd.DataFrame(A)  # column names 0..5: scikit-learn records no names
    named = ints.add_prefix("f")

    def calibrated(base, X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return CalibratedClassifier(base, cv=2).fit(X, y)

    scaler_lr = lambda: make_pipeline(StandardScaler(), LogisticRegression())  # noqa: E731
    by_position = ColumnTransformer([("n", StandardScaler(), [0, 1, 2])])
    return {
        "integer names": (calibrated(scaler_lr(), ints), ints),
        "fitted on an array": (calibrated(scaler_lr(), A), named),
        "ColumnTransformer, integer names": (
            calibrated(make_pipeline(by_position, LogisticRegression()), ints),
            ints,
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "integer names",
        "fitted on an array",
        "ColumnTransformer, integer names",
    ],
)
def test_frames_read_by_position_refuse_another_order(case):
    clf, frame = _positional_cases()[case]
    onx = to_onnx(clf, frame[:5])
    assert check_parity(clf, onx, frame)["passed"]
    permuted = _permuted(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        moved = np.abs(clf.predict_proba(permuted) - clf.predict_proba(frame)).max()
    assert moved > 0.05  # Python reads positions: the permutation changes its answer
    for call in (lambda: onnx_inputs(onx, permuted), lambda: check_parity(clf, onx, permuted)):
        with pytest.raises(ValueError, match="reads its columns by position"):
            call()
    with pytest.raises(ValueError, match="reads its columns by position"):
        onnx_inputs(onx, frame.assign(extra=1.0))


@pytest.mark.parametrize("columns", [["a", "b", "c"], [0, 1, 2]], ids=["names", "positions"])
def test_a_column_transformer_fitted_on_names_reads_any_order(columns):
    """Fitted on a frame with string names, a ColumnTransformer selects by name (also
    where its columns were given as positions): the columns may come in any order and
    among others, in Python as in the graph; a sample without one it reads is refused."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd"))
    y = (frame["a"] - frame["c"] > 0).astype(int).to_numpy()
    pre = ColumnTransformer([("n", StandardScaler(), columns)])
    clf = CalibratedClassifier(make_pipeline(pre, LogisticRegression()), cv=2).fit(frame, y)
    onx = to_onnx(clf, frame[:5])
    for served in (frame[["c", "a", "d", "b"]], frame.assign(e=2.0)):
        report = check_parity(clf, onx, served)
        assert report["passed"], report.summary()
    # "d" is read by no part: a sample (and served frames) may go without it, where the
    # graph can map the parts' columns (by name)
    if columns == ["a", "b", "c"]:
        onx = to_onnx(clf, frame[["c", "b", "a"]][:5])
        assert check_parity(clf, onx, frame)["passed"]
    else:
        with pytest.raises(ValueError, match=r"lacks the columns \['d'\].*by position"):
            to_onnx(clf, frame[["c", "b", "a"]][:5])
    with pytest.raises(ValueError, match=r"lacks the columns \['a'\]"):
        to_onnx(clf, frame[["b", "c", "d"]][:5])


# ------------------------------------------------- errors that name something


def test_passthrough_steps_export_exactly():
    X, y = credit(2000)
    X = X[["LIMIT_BAL", "AGE", "PAY_0", "BILL_AMT1"]]
    bases = [
        Pipeline([("nothing", "passthrough"), ("lr", LogisticRegression(max_iter=500))]),
        Pipeline(
            [("s", StandardScaler()), ("none", None), ("lr", LogisticRegression(max_iter=500))]
        ),
        make_pipeline(
            ColumnTransformer(
                [("n", Pipeline([("i", SimpleImputer()), ("p", "passthrough")]), list(X.columns))]
            ),
            StandardScaler(),
            LogisticRegression(max_iter=500),
        ),
    ]
    for base in bases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = CalibratedClassifier(base, cv=2).fit(X, y)
        onx = to_onnx(clf, X[:5])
        report = check_parity(clf, onx, X)
        assert report["passed"], report.summary()
    outer = Pipeline([("p", "passthrough"), ("cal", CalibratedClassifier(cv=2))]).fit(X, y)
    assert check_parity(outer, to_onnx(outer, X[:5]), X)["passed"]


def test_object_columns_of_numbers_are_named():
    X, y = credit(600)
    X = X[["EDUCATION", "LIMIT_BAL", "AGE"]].astype({"LIMIT_BAL": object})
    clf = fit_frame(X, y, OneHotEncoder(handle_unknown="ignore"), ["EDUCATION"])
    with pytest.raises(
        ValueError, match=r"column 'LIMIT_BAL' \(read by .*StandardScaler.*to_numeric"
    ):
        to_onnx(clf, X[:5])
    # strings fitted, numbers served: the graph's string input is refused, not guessed
    text = X.astype({"LIMIT_BAL": "int64"}).assign(EDUCATION=X["EDUCATION"].astype(str))
    clf = fit_frame(text, y, OneHotEncoder(handle_unknown="ignore"), ["EDUCATION"])
    onx = to_onnx(clf, text[:5])
    for served in (
        text.assign(EDUCATION=1),
        text.assign(EDUCATION=pd.Series([1] * 600, dtype=object)),
    ):
        with pytest.raises(ValueError, match="column 'EDUCATION' has .*takes strings"):
            onnx_inputs(onx, served)


def test_to_onnx_arguments_are_named():
    import scipy.sparse as sp

    X, y = credit(600)
    X = X[["LIMIT_BAL", "AGE"]]
    clf = CalibratedClassifier(LogisticRegression(), cv=2).fit(X.to_numpy(float), y)
    A = X.to_numpy(float)[:3]
    twin = X[:3].copy()
    twin.columns = ["a", "a"]
    cases = [
        ({"X_sample": sp.csr_matrix(A)}, "sparse"),
        ({"X_sample": twin}, "duplicate column names"),
        ({"X_sample": A.astype(np.float16)}, "float16"),
        ({"X_sample": np.array([["x", "y"]])}, "must hold numbers"),
        ({"X_sample": A, "basis": "x"}, "basis"),
        ({"X_sample": A, "target_opset": "17"}, "target_opset"),
        ({"X_sample": A, "target_opset": {"": 99}}, "target_opset"),
        ({"X_sample": A, "name": 3}, "name must be a str"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            to_onnx(clf, **kwargs)
    ct = fit_frame(
        credit(600)[0][["EDUCATION", "LIMIT_BAL", "AGE"]],
        y,
        OneHotEncoder(handle_unknown="ignore"),
        ["EDUCATION"],
    )
    with pytest.raises(ValueError, match=r"lacks the columns \['EDUCATION'\]"):
        to_onnx(ct, X[:3])


def test_failures_inside_skl2onnx_name_the_step():
    X, y = credit(600)
    X = X[["LIMIT_BAL", "AGE"]].to_numpy(float)
    base = make_pipeline(SplineTransformer(n_knots=3), LogisticRegression(max_iter=500))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = CalibratedClassifier(base, cv=2).fit(X, y)
        with pytest.raises(NotImplementedError, match="SplineTransformer"):
            to_onnx(clf, X[:3], allow_inexact=True)


def test_make_safe_and_attach_name_bad_arguments(tmp_path):
    s = np.linspace(-3, 3, 100).reshape(-1, 1)
    cal = PlattCalibrator().fit(s, s[:, 0] > 0)
    onx = to_onnx(cal, s[:2])
    path = tmp_path / "m.onnx"
    onnx.save(onx, path)
    for bad in (str(path), path, onx.SerializeToString(), None, onx.graph, [onx]):
        with pytest.raises(ValueError, match="model must be an onnx.ModelProto"):
            make_safe(bad)
        with pytest.raises(ValueError, match="model must be an onnx.ModelProto"):
            find_hazards(bad)
    assert make_safe(onnx.load(path)) == []
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00not a model")
    for bad, match in [
        (garbage, "is not an ONNX model file"),
        (tmp_path / "missing.onnx", "no such file"),
        (os.fspath(tempfile.gettempdir()), "no such file"),
    ]:
        with pytest.raises(ValueError, match=match):
            attach(bad, cal, output="probabilities", column=1)
    for calibrator in ("x", LogisticRegression().fit(s, s[:, 0] > 0)):
        with pytest.raises(ValueError, match="calibrator must be a fitted bernonnx calibrator"):
            attach(onx, calibrator, output="probabilities", column=1)


def test_object_columns_of_bools_with_pd_na_are_named():
    """bools and pd.NA in an object column (a nullable column concatenated with floats):
    scikit-learn reads pd.NA as an unknown object, not NaN, which no float feed holds."""
    X, y = credit(800)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": _column("boolean", len(X), rng).values})
    frame[["LIMIT_BAL", "AGE"]] = X[["LIMIT_BAL", "AGE"]]
    clf = fit_frame(frame, y, OneHotEncoder(handle_unknown="ignore"), ["c"])
    onx = to_onnx(clf, frame[:5])
    mixed = frame[:20].astype({"c": object})
    assert mixed["c"].isna().any()
    with pytest.raises(ValueError, match="column 'c' holds pd.NA among numbers"):
        onnx_inputs(onx, mixed)
    plain = mixed.dropna()  # bools held as objects: fed as numbers, as Python reads them
    assert disagreements(clf, onx, plain) == []


def test_values_python_refuses_are_refused_before_the_graph():
    """NaN and infinities: where scikit-learn refuses them (a scaler, a one-hot column,
    a linear model), onnx_inputs refuses them too instead of feeding a graph that would
    answer; where it accepts them (a one-hot column fitted with NaN, a histogram
    gradient boosting model) both answer, alike."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = credit(1500)
    X = X[["EDUCATION", "LIMIT_BAL", "AGE"]].astype({"EDUCATION": "float64"})
    X.loc[X.index[::50], "EDUCATION"] = np.nan  # a category of its own
    clf = fit_frame(X, y, OneHotEncoder(handle_unknown="ignore"), ["EDUCATION"])
    onx = to_onnx(clf, X[:5])
    for column, value in [("EDUCATION", np.inf), ("LIMIT_BAL", np.nan), ("AGE", -np.inf)]:
        served = X[:20].astype("float64")
        served.loc[served.index[3], column] = value
        with pytest.raises(ValueError, match=f"column '{column}' holds .*refuses in Python"):
            onnx_inputs(onx, served)
        assert disagreements(clf, onx, served) == []  # both refuse
    nan_rows = X[X["EDUCATION"].isna()]
    assert len(nan_rows) and disagreements(clf, onx, nan_rows) == []  # both answer
    A = X.drop(columns="EDUCATION").to_numpy(float)
    trees = CalibratedClassifier(HistGradientBoostingClassifier(max_iter=10), cv=2).fit(A, y)
    onx = to_onnx(trees, A[:5])
    served = A[:10].copy()
    served[0, 0], served[1, 1], served[2, 0] = np.nan, np.inf, -np.inf
    python = trees.predict_proba(served)
    graph = _session(onx).run(["probabilities"], onnx_inputs(onx, served))[0]
    np.testing.assert_allclose(graph, python, rtol=0, atol=TOL)


# ------------------------------------------------- the one-hot matrix


def _column(kind, n, rng):
    """One column of each type pandas gives users, some with missing values."""
    missing = rng.random(n) < 0.1
    return {
        "int64": pd.Series(rng.choice([0, 1, 2, 3, 5], n)),
        "float": pd.Series(rng.choice([0.5, 1.5, 2.25, np.nan], n)),
        "str_nan": pd.Series(rng.choice(["a", "b", "nan"], n).astype(object)).mask(missing),
        "str_none": pd.Series(np.where(missing, None, rng.choice(["a", "None"], n)), dtype=object),
        "bool": pd.Series(rng.random(n) < 0.3),
        "Int64": pd.Series(pd.array(rng.integers(0, 4, n), dtype="Int64")).mask(missing),
        "Float64": pd.Series(pd.array(rng.choice([0.5, 1.0, 3.0], n), dtype="Float64")).mask(
            missing
        ),
        "boolean": pd.Series(pd.array(rng.random(n) < 0.5, dtype="boolean")).mask(missing),
        "string": pd.Series(pd.array(rng.choice(["x", "y", "z"], n), dtype="string")),
        "cat_int": pd.Series(pd.Categorical(rng.choice([1, 2, 3], n))),
        "cat_float": pd.Series(pd.Categorical(rng.choice([0.5, 1.5], n))),
        "cat_str": pd.Series(pd.Categorical(rng.choice(["p", "q", None], n))),
    }[kind]


#: values served in each column type: unseen, near a category, missing, the string
#: "nan" beside NaN
SERVED = {
    "int64": [2.5, 2.0000001, 99.0, -1.0, 1e10, np.nan, 2.0, -0.0],
    "float": [1.0, 0.5000001, 99.0, np.nan, 1.5],
    "bool": [0.5, 2.0, 1.0, np.nan],
    "Int64": [2.5, 7.0, np.nan],
    "Float64": [0.5000001, np.nan, 3.0],
    "cat_int": [1.5, 4.0, np.nan],
    "cat_float": [0.5, 2.0, np.nan],
    "str_nan": ["zz", "nan", None, np.nan, "a"],
    "str_none": ["None", None, np.nan, "zz"],
    "string": ["w", "x", None],
    "cat_str": ["zz", None, "p"],
}
TEXT = {"str_nan", "str_none", "string", "cat_str"}
ENCODERS = {
    f"{unknown}-{drop}-{frequency}": dict(
        handle_unknown=unknown, drop=drop, min_frequency=frequency
    )
    for unknown in ("ignore", "error", "infrequent_if_exist", "warn")
    for drop in (None, "first", "if_binary")
    for frequency in (None, 100)
} | {
    "max_categories": dict(handle_unknown="ignore", max_categories=2),
    "float32": dict(dtype=np.float32, handle_unknown="ignore"),
    "int64": dict(dtype=np.int64, handle_unknown="ignore"),
    "sparse": dict(sparse_output=True, handle_unknown="ignore"),
    "bool": dict(dtype=bool, handle_unknown="ignore"),
    "infrequent-drop": dict(handle_unknown="infrequent_if_exist", max_categories=2, drop="first"),
}
#: the quick run's share of the matrix: each column type once, each setting once
QUICK = [
    ("int64", "ignore-None-None"),
    ("float", "error-first-100"),
    ("str_nan", "error-first-100"),  # every category infrequent, the one column dropped
    ("str_none", "infrequent_if_exist-None-100"),
    ("bool", "ignore-None-None"),
    ("Int64", "warn-if_binary-None"),
    ("Float64", "max_categories"),
    ("boolean", "int64"),
    ("string", "sparse"),
    ("cat_int", "infrequent-drop"),
    ("cat_float", "float32"),
    ("cat_str", "bool"),
]


#: the column types whose cases include handle_unknown="warn": scikit-learn fits and
#: transforms with "warn" as with "infrequent_if_exist" (plus a warning) and the
#: converter tells only "error" apart, so for the other types a "warn" case exports the
#: graph of the "infrequent_if_exist" case with the same drop and min_frequency
WARN_KINDS = ("Int64", "str_nan")  # a nullable integer column (its quick case), text


def _matrix():
    kinds = list(SERVED) + ["boolean"]
    for kind in kinds:
        for name in ENCODERS:
            quick = (kind, name) in QUICK
            if name.startswith("warn-") and kind not in WARN_KINDS:
                continue
            yield pytest.param(kind, name, marks=() if quick else pytest.mark.slow)


@pytest.mark.parametrize("kind, encoder", list(_matrix()))
def test_one_hot_matrix_agrees_or_refuses_by_name(kind, encoder):
    """Each column type under each encoder setting that scikit-learn fits: exported, and
    the graph agrees with Python on every row either accepts (both refuse the rest)."""
    X, y = credit(800)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": _column(kind, len(X), rng).values, "LIMIT_BAL": X["LIMIT_BAL"]})
    frame["AGE"] = X["AGE"]
    try:
        clf = fit_frame(frame, y, OneHotEncoder(**ENCODERS[encoder]), ["c"])
    except (TypeError, ValueError):
        pytest.skip("scikit-learn cannot fit this column with this encoder")
    # every column type and setting scikit-learn fits exports: a refusal, however well
    # named, would make the agreement below vacuous, so it fails here
    onx = to_onnx(clf, frame[:5])
    rows = frame[:60]
    if kind in SERVED:
        served = frame.iloc[[0] * len(SERVED[kind])].copy()
        served["c"] = pd.Series(SERVED[kind], dtype=object if kind in TEXT else float).values
        rows = pd.concat([rows, served], ignore_index=True)
    # one comparison (one session) of the first 60 rows, then the served values
    # (rows 60 on): a disagreement is listed with its row number
    assert disagreements(clf, onx, rows) == []


@pytest.mark.parametrize(
    "dtype, categories, handle_unknown, served",
    [
        ("int64", [0, 1, 2, 3, 4, 5, 6], "ignore", [2.5, 7.0, 3.0]),
        ("int64", [0, 1, 2, 3, 4, 5, 6], "error", [2.5, 7.0, 3.0]),
        ("float64", [0.5, 1.0, 2.0, 3.0], "ignore", [0.5, 2.0, 2.5, np.nan]),
        ("float64", [1.0, 2.0, 3.0, np.nan], "ignore", [np.nan, 2.0, 9.0]),
        ("str", ["1", "2", "3", "zz"], "ignore", ["zz", "4", None]),
    ],
)
def test_one_hot_with_categories_given(dtype, categories, handle_unknown, served):
    X, y = credit(800)
    frame = X[["EDUCATION", "LIMIT_BAL", "AGE"]].astype({"EDUCATION": dtype})
    encoder = OneHotEncoder(categories=[categories], handle_unknown=handle_unknown)
    clf = fit_frame(frame, y, encoder, ["EDUCATION"])
    onx = to_onnx(clf, frame[:5])
    rows = frame.iloc[[0] * len(served)].copy()
    rows["EDUCATION"] = pd.Series(served, dtype=object if dtype == "str" else float).values
    assert disagreements(clf, onx, pd.concat([frame[:60], rows], ignore_index=True)) == []


def test_one_hot_on_a_numeric_frame_in_a_plain_pipeline():
    """No ColumnTransformer: the encoder reads the one input X, column by column."""
    X, y = credit(800)
    frame = X[["EDUCATION", "MARRIAGE"]]
    for unknown in ("ignore", "infrequent_if_exist"):
        encoder = OneHotEncoder(handle_unknown=unknown, min_frequency=20)
        base = make_pipeline(encoder, LogisticRegression())
        clf = CalibratedClassifier(base, cv=2).fit(frame, y)
        onx = to_onnx(clf, frame[:5])
        served = frame.iloc[[0] * 4].astype(float)
        served["EDUCATION"] = [2.5, 99.0, np.nan, 1.0]
        served["MARRIAGE"] = [1.0, 0.5, 2.0, 7.0]
        rows = pd.concat([frame[:60].astype(float), served], ignore_index=True)
        assert disagreements(clf, onx, rows) == []
        with pytest.raises(ValueError, match="exported from an array"):
            onnx_inputs(to_onnx(clf, frame[:5].to_numpy()), frame)


@pytest.mark.parametrize("unknown", ["ignore", "infrequent_if_exist"])
@pytest.mark.parametrize("drop", [None, "first"])
def test_one_hot_of_many_columns_in_one_comparison(unknown, drop):
    """Several numeric columns of different category counts (one-column DataFrame
    inputs, as read_csv gives them): one Equal for all columns, and every row, served
    unknown and fractional values included, as Python transforms it."""
    X, y = credit(800)
    columns = ["SEX", "EDUCATION", "MARRIAGE", "PAY_0"]
    frame = X[[*columns, "LIMIT_BAL", "AGE"]]
    encoder = OneHotEncoder(handle_unknown=unknown, drop=drop, min_frequency=20)
    clf = fit_frame(frame, y, encoder, columns)
    onx = to_onnx(clf, frame[:5])
    folds = len(clf.calibrated_classifiers_)  # one base model each
    assert [n.op_type for n in onx.graph.node].count("Equal") == folds
    served = frame.iloc[[0] * 4].astype(float)
    served["EDUCATION"] = [2.5, 99.0, np.nan, 1.0]
    served["PAY_0"] = [-2.0, 8.0, 0.5, np.nan]
    rows = pd.concat([frame[:200].astype(float), served], ignore_index=True)
    assert disagreements(clf, onx, rows) == []
    assert check_parity(clf, onx, frame)["passed"]


def test_attach_names_a_model_without_an_opset():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None, 2])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    s = np.linspace(-3, 3, 100).reshape(-1, 1)
    cal = PlattCalibrator().fit(s, s[:, 0] > 0)
    with pytest.raises(ValueError, match="opset none"):
        attach(helper.make_model(graph, opset_imports=[]), cal, output="y", column=0)


def test_unfitted_bernonnx_models_are_named_not_called_unsupported():
    from bernonnx import BetaCalibrator, PriorShiftAdapter

    X = np.linspace(0.0, 1.0, 20)[:, None]
    for model in (
        BetaCalibrator(),
        CalibratedClassifier(),
        make_pipeline(StandardScaler(), CalibratedClassifier()),
        PriorShiftAdapter(CalibratedClassifier()),
    ):
        with pytest.raises(ValueError, match="model is not fitted"):
            to_onnx(model, X)
    graph = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], []))
    with pytest.raises(ValueError, match="calibrator is not fitted"):
        attach(graph, BetaCalibrator(), output="p")


def test_priors_input_must_be_a_bool():
    X = np.linspace(-2.0, 2.0, 40)
    y = (X > 0).astype(int)
    model = PlattCalibrator().fit(X, y)
    with pytest.raises(ValueError, match="priors_input must be True or False"):
        to_onnx(model, X[:5, None], priors_input="yes")
