"""Real-data parity cells: shared by ``tests/test_real_parity.py`` and the benchmark.

Not a public API. One *cell* is: a shared data set, a target (binary or multiclass), a
preprocessing (ColumnTransformer in a Pipeline, as users have), a base model, a
calibration mode (prefit or 3-fold), the calibrator options and the graph's float type.
:func:`run_cell` fits it in Python, exports it with :func:`bernonnx.export.to_onnx`, runs
the graph in onnxruntime (CPU, one thread) on every test row and compares.

Why here: the pytest module imports it as a sibling (pytest puts ``tests/`` on
``sys.path``), and the benchmark script inserts ``tests/`` into ``sys.path``, the way
``examples/`` share ``_study.py``. It stays out of the installed package, which does not
depend on pandas, and out of the wheel.

Choices, all deterministic:

- Splits are 50 / 25 / 25 train / calibration / test, stratified, ``random_state=0``.
  k-fold cells fit ``CalibratedClassifier(pipeline, cv=3)`` on train + calibration.
- Every numeric or boolean column, integer-coded categoricals included, is cast to the
  graph's float type before fitting and before predicting: the float32 graph receives
  float32 features (``to_onnx`` and ``onnx_inputs`` cast them so), and Python sees the same
  numbers. String columns stay strings (one string input each).
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
from _parity import PROMISED, tolerance
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
from bernonnx.deploy import run_onnx
from bernonnx.export import onnx_inputs, to_onnx

ROOT = Path(__file__).resolve().parents[1]
#: Set to a folder to override :func:`default_data_dir` (pytest takes no ``--data``).
DATA_ENV = "BERNONNX_SHARED_DATA"
DTYPES = {"float32": np.float32, "float64": np.float64}
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
    """``$BERNONNX_SHARED_DATA``, else ``<checkout>/../shared/data``.

    In a ``git worktree`` checkout (``.git`` is a file naming the main repository's git
    folder) whose own ``../shared/data`` is absent, the main checkout's is used.
    """
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    default = ROOT.parent / "shared" / "data"
    dot_git = ROOT / ".git"
    if not default.is_dir() and dot_git.is_file():
        text = dot_git.read_text().strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            common = gitdir / "commondir"
            main_git = (gitdir / common.read_text().strip()) if common.is_file() else gitdir
            candidate = main_git.resolve().parent.parent / "shared" / "data"
            if candidate.is_dir():
                return candidate
    return default


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
            f"shared data file {path} not found; pass --data pointing to the folder holding "
            f"{spec.file} (default {DEFAULT_DATA_DIR})"
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


def make_preprocessor(kind: str, numeric, categorical) -> ColumnTransformer:
    """``ColumnTransformer`` of a scaler on the numeric and a one-hot on the categorical."""
    scalers = {
        "standard": StandardScaler(),
        "minmax": MinMaxScaler(),
        "robust": RobustScaler(),
        "impute": Pipeline(
            [("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())]
        ),
    }
    parts = [("num", scalers[kind], list(numeric))]
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


@dataclass(frozen=True)
class Cell:
    """One measured configuration; ``id`` is stable and names it in tables and tests."""

    dataset: str
    model: str
    dtype: str = "float32"
    mode: str = "prefit"  # or "kfold" (cv=3, ensemble)
    task: str = "binary"  # or "multiclass" (see MULTICLASS)
    preprocessing: str = "standard"
    calibration: str = "default"  # default BernsteinCalibrator; "log_odds": log_odds=True

    @property
    def id(self) -> str:
        return "-".join(
            [
                self.dataset,
                self.task,
                self.preprocessing,
                self.model,
                self.mode,
                self.calibration,
                self.dtype,
            ]
        )


def quick_cells() -> list[Cell]:
    """The cells ``tests/test_real_parity.py`` enforces and ``real_parity.py --quick`` runs.

    Credit and shoppers, standard preprocessing, prefit: LogisticRegression,
    RandomForest, HistGradientBoosting, MLPClassifier and GaussianNB with
    ``log_odds=True`` (seed 000's case); plus a 3-fold HistGradientBoosting on shoppers
    and a multiclass LogisticRegression on diabetes ``GenHlth``; each in both dtypes.
    """
    cells = []
    for dtype in DTYPES:
        for dataset in ("credit", "shoppers"):
            for model in ("LogisticRegression", "RandomForest", "HistGradientBoosting"):
                cells.append(Cell(dataset, model, dtype))
            cells.append(Cell(dataset, "MLPClassifier", dtype))
            cells.append(Cell(dataset, "GaussianNB", dtype, calibration="log_odds"))
        cells.append(Cell("shoppers", "HistGradientBoosting", dtype, mode="kfold"))
        cells.append(Cell("diabetes", "LogisticRegression", dtype, task="multiclass"))
    return cells


@lru_cache(maxsize=16)
def _prepared(dataset: str, task: str, impute: bool, dtype: str, data_dir: str):
    X, y, categorical = load(dataset, data_dir, task=task, impute=impute)
    numeric = [c for c in X.columns if c not in categorical]
    return split(as_float(X, DTYPES[dtype]), y), numeric, categorical


def fit_cell(cell: Cell, data_dir: Path | str = DEFAULT_DATA_DIR):
    """The fitted ``CalibratedClassifier`` of ``cell`` and its typed test rows."""
    (X_train, y_train, X_cal, y_cal, X_test, y_test), numeric, categorical = _prepared(
        cell.dataset, cell.task, cell.preprocessing == "impute", cell.dtype, str(data_dir)
    )
    if cell.model == "XGBoost":  # XGBClassifier takes the labels 0, ..., K - 1 only
        encode = LabelEncoder().fit(np.r_[y_train, y_cal]).transform
        y_train, y_cal, y_test = encode(y_train), encode(y_cal), encode(y_test)
    pipeline = make_pipeline(cell.preprocessing, cell.model, numeric, categorical)
    options = {"log_odds": cell.calibration == "log_odds"}
    # few iterations on purpose (speed); the fit, not convergence, is what is measured
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if cell.mode == "prefit":
            rows = SVC_ROWS if cell.model == "SVC" else None
            pipeline.fit(X_train[:rows], y_train[:rows])
            model = CalibratedClassifier(FrozenEstimator(pipeline), **options)
            model.fit(X_cal, y_cal)
        elif cell.mode == "kfold":
            X_fit, y_fit = pd.concat([X_train, X_cal]), np.r_[y_train, y_cal]
            rows = SVC_ROWS * 3 // 2 if cell.model == "SVC" else None
            model = CalibratedClassifier(pipeline, cv=3, **options)
            model.fit(X_fit[:rows], y_fit[:rows])
        else:
            raise ValueError(f"mode must be 'prefit' or 'kfold', got {cell.mode!r}")
    return model, X_test, y_test


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_cell(cell: Cell, data_dir: Path | str = DEFAULT_DATA_DIR) -> dict:
    """Fit, export, run and compare one cell; failures are recorded, not raised.

    Returns the cell's fields plus ``n_test``, ``max_abs_error`` (over every test row and
    class), ``n_above`` (rows with any class above ``tolerance``), ``n_label_mismatch``,
    ``fit_time``, ``export_time`` and ``error`` (``None``, or the stage and exception).
    """
    result = {
        **asdict(cell),
        "id": cell.id,
        "tolerance": tolerance(cell.dtype, PROMISED),  # issue 9's targets
        "n_test": 0,
        "max_abs_error": np.nan,
        "n_above": None,
        "n_label_mismatch": None,
        "fit_time": np.nan,
        "export_time": np.nan,
        "error": None,
    }
    stage = "fit"
    try:
        start = time.perf_counter()
        model, X_test, _ = fit_cell(cell, data_dir)
        result["fit_time"] = time.perf_counter() - start
        result["n_test"] = len(X_test)
        stage = "export"
        start = time.perf_counter()
        onx = to_onnx(model, X_test[:5], dtype=DTYPES[cell.dtype])
        result["export_time"] = time.perf_counter() - start
        stage = "onnxruntime"
        outputs = run_onnx(onx, onnx_inputs(onx, X_test, DTYPES[cell.dtype]))
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
    except DataMissing:
        raise
    except Exception as exc:  # a failing cell is a finding: record it and go on
        result["error"] = f"{stage}: {_short(exc)}"
        result["traceback"] = traceback.format_exc(limit=-3)
    return result
