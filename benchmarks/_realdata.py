"""The shared real data sets, as the tests and the benchmarks load them, and the parity cells.

Not a public API. :data:`DATASETS` names each table of the data folder
(:func:`default_data_dir`: the copies bundled with bernonnx, or ``$BERNONNX_SHARED_DATA``),
:func:`load` reads it as pandas gives it and :func:`split`
splits it; :func:`calibration_scores` gives a base model's scores on it.

One parity *cell* is: a shared data set, a target (binary or multiclass), an input
layout (a DataFrame into a ColumnTransformer pipeline, into a plain Pipeline or a bare
model, or a float64 array), a preprocessing, a base model, a calibration mode (prefit or
3-fold), the calibrator options, the data's types (as read, or cast to float32) and
``to_onnx``'s ``dtype`` argument. :func:`run_cell` fits it in Python on the
data as held, exports it with :func:`bernonnx.export.to_onnx`, feeds the graph every
test row at its declared input types (:func:`bernonnx.export.onnx_inputs`) in
onnxruntime (CPU, one thread) and compares with ``predict_proba`` on the same rows; or
records the refusal an explicit float32 export must give (issue 21 item 6).

Why here: the benchmark scripts import it as a sibling (``import _realdata``, as they
import ``_harness``), and the tests as ``benchmarks._realdata`` (``tests/conftest.py``
puts the checkout's root on ``sys.path``); benchmarks never import ``tests/``. It stays
out of the installed package, which does not depend on pandas, and out of the wheel.

Choices, all deterministic:

- Splits are 50 / 25 / 25 train / calibration / test, stratified, ``random_state=0``.
  k-fold cells fit ``CalibratedClassifier(pipeline, cv=3)`` on train + calibration.
- By default nothing is cast: the tables are used as ``pandas.read_csv`` gives them
  (int64, float64, bool and string columns), so ``to_onnx``'s default builds a float64
  graph. ``data="float32"`` casts every numeric or boolean column to float32 before
  fitting and predicting, to test float32 data (a float32 graph by default). String
  columns stay strings (one string input each, ColumnTransformer layout only).
- The plain-Pipeline, bare and array layouts use the numeric columns only (the
  ColumnTransformer one-hot encodes the categorical ones); credit's array is the bundled
  loader's (:func:`bernonnx.datasets.load_credit_default`, all 23 columns, float64).
- Tolerance by the graph's declared input type: 1e-9 float64, 1e-6 float32. An explicit
  ``dtype="float32"`` on test rows that float32 cannot hold exactly (magic, shoppers) is
  expected to raise ``ValueError`` ("cannot carry"): that is the cell's passing outcome.
- Diabetes is a stratified subsample (:data:`DIABETES_ROWS` rows, ``random_state=0``) so the
  whole matrix runs in minutes; every test row of that subsample is compared.
- Multiclass: diabetes ``GenHlth`` (self-rated general health, 5 classes); the other
  columns, ``Diabetes_binary`` included, are features.
- The ``impute`` preprocessing (credit only) sets ``AGE`` to NaN on the rows whose ``ID`` is
  divisible by 10, and ``LIMIT_BAL`` and ``BILL_AMT1`` on those whose ``ID`` leaves 3 modulo
  10 (10% of rows each), before splitting; then median imputation and standard scaling.
- SVC is trained on at most :data:`SVC_ROWS` rows (prefit: the first rows of the training
  split; k-fold: 1.5 times that, so each fold trains on about that many).
"""

from __future__ import annotations

import os
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    LabelEncoder,
    MinMaxScaler,
    OneHotEncoder,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC, LinearSVC

from bernonnx import CalibratedClassifier
from bernonnx.datasets import data_folder
from bernonnx.deploy import run_onnx
from bernonnx.export import PARITY_TOLERANCE, onnx_inputs, to_onnx
from bernonnx.export.parity import _graph_float_dtype

#: Set to a folder to override :func:`default_data_dir` (pytest takes no ``--data``).
DATA_ENV = "BERNONNX_SHARED_DATA"
DIABETES_ROWS = 40_000
SVC_ROWS = 3_000
SEED = 0

# --------------------------------------------------------------------------- data sets

_DIABETES_CATEGORICAL = [
    "HighBP", "HighChol", "CholCheck", "Smoker", "Stroke", "HeartDiseaseorAttack",
    "PhysActivity", "Fruits", "Veggies", "HvyAlcoholConsump", "AnyHealthcare", "NoDocbcCost",
    "GenHlth", "DiffWalk", "Sex", "Education", "Income",
]  # fmt: skip


@dataclass(frozen=True)
class Dataset:
    """One shared CSV: its file, label column and categorical columns (the rest numeric)."""

    file: str
    label: str
    categorical: tuple[str, ...]
    drop: tuple[str, ...] = ()
    max_rows: int | None = None


DATASETS = {
    "credit": Dataset(
        "uci_credit_card.csv.gz",
        "default.payment.next.month",
        ("SEX", "EDUCATION", "MARRIAGE"),
        drop=("ID",),
    ),
    # seed 000's split: these 17 one-hot, Age, BMI, MentHlth, PhysHlth numeric
    "diabetes": Dataset(
        "diabetes_brfss2015.csv.gz",
        "Diabetes_binary",
        tuple(_DIABETES_CATEGORICAL),
        max_rows=DIABETES_ROWS,
    ),
    "magic": Dataset("magic_gamma_telescope.csv.gz", "class", ()),
    "shoppers": Dataset(
        "online_shoppers_intention.csv.gz",
        "Revenue",
        (
            "Month",
            "VisitorType",
            "Weekend",
            "OperatingSystems",
            "Browser",
            "Region",
            "TrafficType",
        ),
    ),
}

#: Multiclass targets: data set -> (label column, the binary label that becomes a feature).
MULTICLASS = {"diabetes": ("GenHlth", "Diabetes_binary")}


def default_data_dir() -> Path:
    """``$BERNONNX_SHARED_DATA`` when set (an override: another copy of the tables),
    else the copies bundled with bernonnx (:func:`bernonnx.datasets.data_folder`)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return data_folder()


DEFAULT_DATA_DIR = default_data_dir()


class DataMissing(FileNotFoundError):
    """A shared data file is absent; the message names ``--data`` and the folder."""


@lru_cache(maxsize=8)
def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path)


def load(name: str, data_dir: Path | str, *, task: str = "binary", impute: bool = False):
    """Features ``X`` (DataFrame, raw types), labels ``y`` and the categorical columns."""
    spec = DATASETS[name]
    path = Path(data_dir) / spec.file
    if not path.is_file():
        raise DataMissing(
            f"data file {path} not found; pass --data pointing to the folder holding "
            f"{spec.file} (default: the copies bundled with bernonnx, {data_folder()})"
        )
    df = _read(str(path))
    if impute:
        df = df.copy()
        ids = df["ID"].to_numpy()
        df["AGE"] = df["AGE"].astype(float).where(ids % 10 != 0)
        for column in ("LIMIT_BAL", "BILL_AMT1"):
            df[column] = df[column].astype(float).where(ids % 10 != 3)
    categorical = list(spec.categorical)
    label = spec.label
    if task == "multiclass":
        label, former_label = MULTICLASS[name]
        categorical = [c for c in categorical if c != label] + [former_label]
    if spec.max_rows is not None and len(df) > spec.max_rows:
        df, _ = train_test_split(
            df, train_size=spec.max_rows, stratify=df[spec.label], random_state=SEED
        )
    y = df[label].to_numpy()
    X = df.drop(columns=[label, *spec.drop])
    return X, y, categorical


def as_float(X: pd.DataFrame, dtype) -> pd.DataFrame:
    """Every numeric or boolean column cast to ``dtype``; strings unchanged."""
    X = X.copy()
    for column in X.columns:
        if X[column].dtype.kind in "biuf":
            X[column] = X[column].astype(dtype)
    return X


def split(X, y):
    """50 / 25 / 25 train / calibration / test, stratified."""
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=SEED
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=SEED
    )
    return X_train, y_train, X_cal, y_cal, X_test, y_test


def calibration_scores(name: str, model, method: str, data_dir=None):
    """A base model's scores on a shared data set's calibration rows, and their labels.

    The numeric columns only; ``model`` fitted on the training rows (:func:`split`),
    ``method`` its scoring method, the positive class's column of a probability matrix.
    Raises :class:`DataMissing` without the data.
    """
    X, y, categorical = load(name, DEFAULT_DATA_DIR if data_dir is None else data_dir)
    X = X.drop(columns=categorical).to_numpy(dtype=float)
    X_tr, y_tr, X_cal, y_cal, _, _ = split(X, y)
    s = getattr(model.fit(X_tr, y_tr), method)(X_cal)
    return (s[:, 1] if s.ndim == 2 else s), y_cal


# --------------------------------------------------------------------------- pipelines

PREPROCESSING = ("standard", "minmax", "robust", "impute")


def _scaler(kind: str):
    """The numeric columns' step of a ``preprocessing`` kind."""
    if kind == "impute":
        return Pipeline(
            [("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())]
        )
    return {"standard": StandardScaler, "minmax": MinMaxScaler, "robust": RobustScaler}[kind]()


def make_preprocessor(kind: str, numeric, categorical) -> ColumnTransformer:
    """``ColumnTransformer`` of a scaler on the numeric and a one-hot on the categorical."""
    parts = [("num", _scaler(kind), list(numeric))]
    if categorical:
        # dense: HistGradientBoosting and GaussianNB reject the sparse matrix a
        # ColumnTransformer returns when one-hot columns dominate (shoppers)
        one_hot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        parts.append(("cat", one_hot, list(categorical)))
    return ColumnTransformer(parts)


BASE_MODELS = {
    "LogisticRegression": LogisticRegression(max_iter=500),
    "LinearSVC": LinearSVC(random_state=SEED),
    "SVC": SVC(random_state=SEED),
    "SGDClassifier": SGDClassifier(random_state=SEED),
    # min_samples_leaf=5 keeps the graphs (and skl2onnx's conversion time) small
    "RandomForest": RandomForestClassifier(
        n_estimators=30, min_samples_leaf=5, random_state=SEED, n_jobs=1
    ),
    "ExtraTrees": ExtraTreesClassifier(
        n_estimators=30, min_samples_leaf=5, random_state=SEED, n_jobs=1
    ),
    "GradientBoosting": GradientBoostingClassifier(n_estimators=30, random_state=SEED),
    "HistGradientBoosting": HistGradientBoostingClassifier(max_iter=50, random_state=SEED),
    "MLPClassifier": MLPClassifier((32,), max_iter=50, random_state=SEED),
    "GaussianNB": GaussianNB(),
}
#: XGBoost and LightGBM (``pip install bernonnx[boosters]``): the classifiers of the
#: ``boosters`` extra, when installed; their calibrated score is the raw margin.
BOOSTERS = ("XGBoost", "LightGBM")
try:
    from lightgbm import LGBMClassifier
    from xgboost import XGBClassifier
except ImportError:  # the extra is absent: tests/test_boosters.py skips
    pass
else:
    BASE_MODELS["XGBoost"] = XGBClassifier(
        n_estimators=50, max_depth=4, n_jobs=1, random_state=SEED
    )
    BASE_MODELS["LightGBM"] = LGBMClassifier(
        n_estimators=50, n_jobs=1, random_state=SEED, verbose=-1
    )
#: Base models whose calibrated score is ``predict_proba`` (``log_odds`` applies).
PROBA_MODELS = ("RandomForest", "ExtraTrees", "MLPClassifier", "GaussianNB")


def make_pipeline(preprocessing: str, model: str, numeric, categorical) -> Pipeline:
    return Pipeline(
        [
            ("pre", make_preprocessor(preprocessing, numeric, categorical)),
            ("model", clone(BASE_MODELS[model])),
        ]
    )


# --------------------------------------------------------------------------- cells

#: How the data reach the model (issue 21 item 2); see :func:`fit_cell`.
LAYOUTS = ("column_transformer", "pipeline", "bare", "array")
#: ``"as_read"``: the table as ``pandas.read_csv`` gives it, nothing cast (int64, float64,
#: bool and string columns; the bundled loader's float64 array). ``"float32"``: every
#: numeric or boolean column cast to float32 before fitting and predicting, the one place
#: that casts: it tests float32 data (a float32 graph by default).
DATA = ("as_read", "float32")
#: ``to_onnx``'s ``dtype`` argument: ``"default"`` passes None (the graph follows the data).
EXPORT_DTYPES = {"default": None, "float32": np.float32, "float64": np.float64}
#: What a cell's result can be: every row within tolerance and labels identical
#: (``exact``), some row or label differs (``off``), ``to_onnx`` says float32 "cannot
#: carry" the inputs (``refused``), or anything else raised (``error``).
OUTCOMES = ("exact", "off", "refused", "error")


#: The registry calibrators a cell can name besides the default Bernstein one.
CALIBRATIONS = ("beta", "quadratic-scaling", "venn-abers")
#: registry calibrators a cell may name that the quick cells do not loop over (their own
#: test module runs a few cells: ``tests/test_stacked.py``)
OTHER_CALIBRATIONS = ("stack",)


def calibration_options(calibration: str) -> dict:
    """``CalibratedClassifier`` keywords of a cell's ``calibration``."""
    if calibration in ("default", "log_odds"):
        return {"log_odds": calibration == "log_odds"}
    from bernonnx._registry import CALIBRATORS

    for entry in CALIBRATORS:
        for variant in entry.variants:
            if variant.cli_name == calibration:
                return {"calibrator": entry.make(variant)}
    raise ValueError(f"no registry calibrator named {calibration!r}")


@dataclass(frozen=True)
class Cell:
    """One measured configuration; ``id`` is stable and names it in tables and tests.

    ``layout``: ``"column_transformer"`` (the frame into a ColumnTransformer of a scaler on
    the numeric columns and a one-hot on the categorical ones); ``"pipeline"`` (the
    numeric columns' frame into ``Pipeline([scaler, model])``); ``"bare"`` (the numeric
    frame straight into the model; ``preprocessing="none"``); ``"array"`` (the numeric
    columns as a float64 ndarray into the pipeline; credit: the bundled loader's array,
    :func:`bernonnx.datasets.load_credit_default`). ``data``: see :data:`DATA`.
    ``dtype``: see :data:`EXPORT_DTYPES`.
    """

    dataset: str
    model: str
    dtype: str = "default"
    mode: str = "prefit"  # or "kfold" (cv=3, ensemble)
    task: str = "binary"  # or "multiclass" (see MULTICLASS)
    preprocessing: str = "standard"  # "none" with layout="bare" only
    #: default BernsteinCalibrator; "log_odds": log_odds=True; or a --method name of
    #: the registry (:data:`CALIBRATIONS`), that calibrator with log_odds="auto"
    calibration: str = "default"
    layout: str = "column_transformer"
    data: str = "as_read"

    def __post_init__(self):
        for field, allowed in (
            ("layout", LAYOUTS),
            ("data", DATA),
            ("dtype", tuple(EXPORT_DTYPES)),
            ("mode", ("prefit", "kfold")),
            ("calibration", ("default", "log_odds", *CALIBRATIONS, *OTHER_CALIBRATIONS)),
        ):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {allowed}, got {getattr(self, field)!r}")
        if (self.layout == "bare") != (self.preprocessing == "none"):
            raise ValueError("preprocessing='none' goes with layout='bare', and only with it")
        if self.layout == "array" and self.preprocessing == "impute":
            raise ValueError("the impute holes are made in the frame: no array layout")

    @property
    def id(self) -> str:
        return "-".join(
            [
                self.dataset,
                self.task,
                self.layout,
                self.preprocessing,
                self.model,
                self.mode,
                self.calibration,
                self.data,
                self.dtype,
            ]
        )


def quick_cells() -> list[Cell]:
    """The cells ``tests/test_real_parity.py`` enforces and ``real_parity.py --quick`` runs.

    On the data as read and the default dtype unless said: credit and shoppers into a
    ColumnTransformer, prefit: LogisticRegression, RandomForest, HistGradientBoosting,
    MLPClassifier and GaussianNB with ``log_odds=True``; a 3-fold HistGradientBoosting on
    shoppers; a multiclass LogisticRegression on diabetes ``GenHlth``; the numeric
    columns into a plain Pipeline, a bare model and an array (credit's from the bundled
    loader); float32 data (a float32 graph); an explicit float32 export accepted (credit:
    int64 columns, which float32 holds) and one refused (shoppers: float64 durations and
    rates); an explicit float64 export of a model fitted on float32 data.
    """
    cells = []
    for dataset in ("credit", "shoppers"):
        for model in ("LogisticRegression", "RandomForest", "HistGradientBoosting"):
            cells.append(Cell(dataset, model))
        cells.append(Cell(dataset, "MLPClassifier"))
        cells.append(Cell(dataset, "GaussianNB", calibration="log_odds"))
    cells.append(Cell("shoppers", "HistGradientBoosting", mode="kfold"))
    cells.append(Cell("diabetes", "LogisticRegression", task="multiclass"))
    for dataset, model, layout in (
        ("credit", "LogisticRegression", "pipeline"),
        ("shoppers", "HistGradientBoosting", "pipeline"),
        ("credit", "HistGradientBoosting", "bare"),
        ("shoppers", "LogisticRegression", "bare"),
        ("shoppers", "RandomForest", "bare"),
        ("credit", "HistGradientBoosting", "array"),
        ("credit", "RandomForest", "array"),
        ("shoppers", "LogisticRegression", "array"),
    ):
        preprocessing = "none" if layout == "bare" else "standard"
        cells.append(Cell(dataset, model, layout=layout, preprocessing=preprocessing))
    cells.append(Cell("credit", "HistGradientBoosting", data="float32"))
    cells.append(Cell("credit", "HistGradientBoosting", dtype="float32"))
    cells.append(Cell("shoppers", "LogisticRegression", dtype="float32"))
    cells.append(Cell("shoppers", "RandomForest", dtype="float64", data="float32"))
    # the binary maps of the CalArena leaders: decision values, probabilities, exact
    # log-odds (GaussianNB), 3-fold, one-vs-rest multiclass, a bare model, float32 data
    for calibration in CALIBRATIONS:
        cells.append(Cell("credit", "LogisticRegression", calibration=calibration))
        cells.append(Cell("shoppers", "RandomForest", calibration=calibration))
        cells.append(Cell("magic", "GaussianNB", calibration=calibration))
        cells.append(
            Cell("shoppers", "HistGradientBoosting", mode="kfold", calibration=calibration)
        )
        cells.append(
            Cell("diabetes", "LogisticRegression", task="multiclass", calibration=calibration)
        )
        cells.append(
            Cell(
                "credit",
                "HistGradientBoosting",
                layout="bare",
                preprocessing="none",
                calibration=calibration,
            )
        )
        cells.append(
            Cell("credit", "HistGradientBoosting", data="float32", calibration=calibration)
        )
    return cells


def float32_rounds(X) -> list:
    """The numeric columns of ``X`` (a frame, or the column indices of an array) that
    float32 may not hold exactly, where an explicit float32 export must refuse: float64
    columns whatever their values, integer columns holding a value float32 rounds."""
    if isinstance(X, pd.DataFrame):
        columns = {c: X[c] for c in X.columns if X[c].dtype.kind in "biuf"}
    else:
        columns = dict(enumerate(np.asarray(X).T))
    found = []
    for name, column in columns.items():
        if np.asarray(column).dtype == np.float64:
            found.append(name)
            continue
        values = np.asarray(column, dtype=np.float64)
        if not np.array_equal(values.astype(np.float32), values, equal_nan=True):
            found.append(name)
    return found


@lru_cache(maxsize=64)
def _prepared(dataset: str, task: str, impute: bool, layout: str, data: str, data_dir: str):
    if layout == "array" and dataset == "credit" and task == "binary":
        from bernonnx.datasets import load_credit_default

        X, y, _ = load_credit_default()  # the bundled loader: float64, all 23 columns
        numeric, categorical = list(range(X.shape[1])), []
    else:
        X, y, categorical = load(dataset, data_dir, task=task, impute=impute)
        numeric = [c for c in X.columns if c not in categorical]
        if layout != "column_transformer":  # the numeric columns only, as read
            X, categorical = X[numeric], []
        if layout == "array":
            X, numeric = X.to_numpy(dtype=np.float64), list(range(len(numeric)))
    if data == "float32":  # the float32 test: the one place numeric columns are cast
        X = X.astype(np.float32) if isinstance(X, np.ndarray) else as_float(X, np.float32)
    return split(X, y), numeric, categorical


def make_model(cell: Cell, numeric, categorical):
    """The estimator that ``cell``'s layout fits: a Pipeline, or the bare base model."""
    model = clone(BASE_MODELS[cell.model])
    if cell.layout == "bare":
        return model
    if cell.layout == "column_transformer":
        return make_pipeline(cell.preprocessing, cell.model, numeric, categorical)
    return Pipeline([("pre", _scaler(cell.preprocessing)), ("model", model)])


def fit_cell(cell: Cell, data_dir: Path | str = DEFAULT_DATA_DIR):
    """The fitted ``CalibratedClassifier`` of ``cell`` and its test rows as held."""
    (X_train, y_train, X_cal, y_cal, X_test, y_test), numeric, categorical = _prepared(
        cell.dataset,
        cell.task,
        cell.preprocessing == "impute",
        cell.layout,
        cell.data,
        str(data_dir),
    )
    if cell.model == "XGBoost":  # XGBClassifier takes the labels 0, ..., K - 1 only
        encode = LabelEncoder().fit(np.r_[y_train, y_cal]).transform
        y_train, y_cal, y_test = encode(y_train), encode(y_cal), encode(y_test)
    estimator = make_model(cell, numeric, categorical)
    options = calibration_options(cell.calibration)
    # few iterations on purpose (speed); the fit, not convergence, is what is measured
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if cell.mode == "prefit":
            rows = SVC_ROWS if cell.model == "SVC" else None
            estimator.fit(X_train[:rows], y_train[:rows])
            model = CalibratedClassifier(FrozenEstimator(estimator), **options)
            model.fit(X_cal, y_cal)
        else:
            concat = np.concatenate if isinstance(X_train, np.ndarray) else pd.concat
            X_fit, y_fit = concat([X_train, X_cal]), np.r_[y_train, y_cal]
            rows = SVC_ROWS * 3 // 2 if cell.model == "SVC" else None
            model = CalibratedClassifier(estimator, cv=3, **options)
            model.fit(X_fit[:rows], y_fit[:rows])
    return model, X_test, y_test


#: Models that compute in float32 when fitted on float32 data (float32 coefficients:
#: float32 BLAS sums), which a float64 graph cannot repeat within 1e-9.
FLOAT32_COEFFICIENTS = ("LogisticRegression", "SGDClassifier", "MLPClassifier")


def expected_outcome(cell: Cell, X_test) -> str:
    """``"refused"`` for an explicit float32 export of values float32 cannot hold (the
    test rows'); on float32 data, for GaussianNB's probabilities (numpy's float32 exp,
    not correctly rounded) and for float64 graphs of models with float32 coefficients;
    else ``"exact"``."""
    if cell.dtype == "float32" and float32_rounds(X_test):
        return "refused"
    # the model itself sees float32 data (no one-hot columns, which are float64, join
    # them) and so fits float32 parameters: GaussianNB's probabilities (the default
    # calibrator reads them) and float32 coefficients in a float64 graph are refused
    sees_float32 = cell.data == "float32" and (
        cell.layout != "column_transformer" or not DATASETS[cell.dataset].categorical
    )
    if sees_float32 and cell.model == "GaussianNB" and cell.calibration != "log_odds":
        return "refused"
    if sees_float32 and cell.model == "MLPClassifier":  # float32 layers: batch-dependent
        return "refused"
    if sees_float32 and cell.dtype == "float64" and cell.model in FLOAT32_COEFFICIENTS:
        return "refused"
    return "exact"


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_cell(cell: Cell, data_dir: Path | str = DEFAULT_DATA_DIR) -> dict:
    """Fit, export, run and compare one cell; failures are recorded, not raised.

    The graph is exported with ``to_onnx(model, X_test[:5], dtype=...)``, fed
    ``onnx_inputs(onx, X_test)`` (each input at its declared type) and compared with
    ``model.predict_proba(X_test)`` on the test rows as held. Returns the cell's fields
    plus ``graph_dtype`` (of the graph's declared inputs), ``tolerance`` (1e-6 float32,
    1e-9 float64), ``n_test``, ``max_abs_error`` (over every test row and class),
    ``n_above`` (rows with any class above ``tolerance``), ``n_label_mismatch``,
    ``fit_time``, ``export_time``, ``outcome`` (:data:`OUTCOMES`), ``expected``
    (:func:`expected_outcome`), ``passed`` (the two agree), ``refusal`` (the message
    of a refusal) and ``error`` (``None``, or the stage and exception).
    """
    result = {
        **asdict(cell),
        "id": cell.id,
        "graph_dtype": None,
        "tolerance": np.nan,
        "n_test": 0,
        "max_abs_error": np.nan,
        "n_above": None,
        "n_label_mismatch": None,
        "fit_time": np.nan,
        "export_time": np.nan,
        "outcome": "error",
        "expected": None,
        "passed": False,
        "refusal": None,
        "error": None,
    }
    stage = "fit"
    try:
        start = time.perf_counter()
        model, X_test, _ = fit_cell(cell, data_dir)
        result["fit_time"] = time.perf_counter() - start
        result["n_test"] = len(X_test)
        result["expected"] = expected_outcome(cell, X_test)
        stage = "export"
        start = time.perf_counter()
        try:
            onx = to_onnx(model, X_test[:5], dtype=EXPORT_DTYPES[cell.dtype])
        except (ValueError, NotImplementedError) as exc:
            if "cannot carry" not in str(exc) and "fitted on float32" not in str(exc):
                raise
            result["export_time"] = time.perf_counter() - start
            result["outcome"] = "refused"
            result["refusal"] = _short(exc, 240)
            result["passed"] = result["expected"] == "refused"
            return result
        result["export_time"] = time.perf_counter() - start
        graph = _graph_float_dtype(onx)  # as check_parity reads it
        result["graph_dtype"] = graph.name
        result["tolerance"] = PARITY_TOLERANCE[graph]  # what check_parity promises
        stage = "onnxruntime"
        outputs = run_onnx(onx, onnx_inputs(onx, X_test))
        stage = "compare"
        expected = model.predict_proba(X_test)
        error = np.abs(outputs["probabilities"].astype(np.float64) - expected)
        labels = outputs["label"]
        python_labels = model.predict(X_test)
        if labels.dtype.kind != python_labels.dtype.kind:  # e.g. bool classes come back as int
            labels = labels.astype(python_labels.dtype)
        result["max_abs_error"] = float(error.max())
        result["n_above"] = int((error.max(axis=1) > result["tolerance"]).sum())
        result["n_label_mismatch"] = int((labels != python_labels).sum())
        exact = result["n_above"] == 0 and result["n_label_mismatch"] == 0
        result["outcome"] = "exact" if exact else "off"
        result["passed"] = result["outcome"] == result["expected"]
    except DataMissing:
        raise
    except Exception as exc:  # a failing cell is a finding: record it and go on
        result["error"] = f"{stage}: {_short(exc)}"
        result["traceback"] = traceback.format_exc(limit=-3)
    return result
