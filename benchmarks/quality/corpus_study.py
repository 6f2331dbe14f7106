"""The corpus study: every corpus table and the four shared ones, against CalArena's leaders.
===========================================================================================

Tables (``_corpus_tables.py``, the tuning / reporting split fixed before any tuning): the
15 binary and 7 multiclass tables of ``shared/data/corpus`` and the four shared binary
tables. Each is read with pandas as it comes; the features go through what a user would
write: a ``ColumnTransformer`` with median imputation and standard scaling of the numeric
columns and most-frequent imputation and one-hot encoding of the others (strings,
booleans). Labels: the manifest's positive class (binary); multiclass labels as they
come, rows of a class with fewer than 20 rows in the table dropped (wine quality's 5 rows
of quality 9).

Splits: per seed (0, 1, 2), stratified test and calibration parts of a quarter of the rows
each, capped at ``--cap-test`` / ``--cap-cal`` rows (2,000), and at most ``--cap-train``
(4,000) training rows from the rest: the machine is shared, so big tables are subsampled.

Base models: binary logistic regression, linear SVM, Gaussian naive Bayes,
HistGradientBoosting and a random forest (``quality_study.make_model``); multiclass
logistic regression and HistGradientBoosting.

Methods: probmetrics 1.3.0 (``_methods.py``, fed ``predict_proba``), scikit-learn's
``CalibratedClassifierCV`` sigmoid, isotonic and temperature, ours (the default and each
member of the family, on the scores ``CalibratedClassifier`` reads), the uncalibrated model
and the selection rules of ``_corpus_rules.py`` (binary; study code).

Caches (``--cache``): one pickle per (table, model, seed) with the fitted pipeline, its
calibration and test rows and scores, and scikit-learn's calibrations; one ``.npz`` per
group of methods. The group ``ours`` is keyed by a hash of the library's source and the
group ``rules`` by a hash of ``_corpus_rules.py``, so a rerun after a change to either
refits that group only.

Run (``--data``: the shared data folder holding the four tables and ``corpus/``;
default ``$BERNONNX_SHARED_DATA``, else ``../shared/data`` beside the checkout)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/quality/corpus_study.py \\
        --cache /tmp/corpus-cache --out benchmarks/quality/corpus_study.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import threadpoolctl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
import _corpus_rules as rules  # noqa: E402
import _corpus_tables as ct  # noqa: E402
import _methods as mt  # noqa: E402
from quality_study import DATASETS, ISSUE_MODELS, make_model  # noqa: E402
from scipy.special import expit  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

import bernonnx  # noqa: E402
from bernonnx import (  # noqa: E402
    BernsteinCalibrator,
    BetaCalibrator,
    CalibratedClassifier,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    PlattCalibrator,
    QuadraticScalingCalibrator,
    StackedCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
    VennAbersCalibrator,
)
from bernonnx._meta import response_scores  # noqa: E402

#: the shared data folder beside the checkout (``../shared/data``, with ``corpus/``; a
#: git worktree one level deeper looks one level further up)
_BESIDE = [p / "shared" / "data" for p in Path(__file__).resolve().parents[3:5]]
SHARED = Path(
    os.environ.get("BERNONNX_SHARED_DATA", next((p for p in _BESIDE if p.is_dir()), _BESIDE[0]))
)
SEEDS = (0, 1, 2)
MC_MODELS = ("LogisticRegression", "HistGradientBoosting")
MIN_CLASS_ROWS = 20


# --------------------------------------------------------------------------- tables


def read_table(name, data_dir):
    """(features as read, integer labels, class names): binary label 1 is the positive class."""
    if name in ct.SHARED_BINARY:
        file, label, positive, _, drop = DATASETS[name]
        df = pd.read_csv(Path(data_dir) / file)
        y = (df[label] == positive).to_numpy().astype(np.int64)
        return df.drop(columns=[label, *drop]), y, np.array([0, 1])
    df = pd.read_csv(Path(data_dir) / "corpus" / f"{name}.csv.gz")
    manifest = json.loads((Path(data_dir) / "corpus" / "manifest.json").read_text())
    entry = next(e for e in manifest if e["file"] == f"{name}.csv.gz")
    if entry["task"] == "binary":
        y = (df["target"].astype(str) == str(entry["positive_class"])).to_numpy()
        return df.drop(columns=["target"]), y.astype(np.int64), np.array([0, 1])
    counts = df["target"].value_counts()
    df = df[df["target"].isin(counts.index[counts >= MIN_CLASS_ROWS])]
    classes, y = np.unique(df["target"].astype(str).to_numpy(), return_inverse=True)
    return df.drop(columns=["target"]), y.astype(np.int64), classes


def preprocessor(X):
    """Numeric: median imputation, scaling; the rest: most frequent, one-hot."""
    numeric = list(X.select_dtypes(include="number").columns)
    other = [c for c in X.columns if c not in numeric]
    parts = [("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric)]
    if other:
        one_hot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        impute = SimpleImputer(strategy="most_frequent")
        parts.append(("cat", make_pipeline(impute, one_hot), other))
    return ColumnTransformer(parts)


def split(X, y, seed, caps):
    """Stratified test and calibration parts (a quarter each, capped), capped training rows."""
    n = y.shape[0]
    n_test, n_cal = min(n // 4, caps["test"]), min(n // 4, caps["cal"])
    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=n_test, stratify=y, random_state=seed
    )
    X_rest, X_cal, y_rest, y_cal = train_test_split(
        X_rest, y_rest, test_size=n_cal, stratify=y_rest, random_state=seed
    )
    if y_rest.shape[0] > caps["train"]:
        X_rest, _, y_rest, _ = train_test_split(
            X_rest, y_rest, train_size=caps["train"], stratify=y_rest, random_state=seed
        )
    return X_rest, y_rest, X_cal, y_cal, X_test, y_test


# --------------------------------------------------------------------------- base


def fit_base(table, model, seed, args):
    """The fitted pipeline, its rows, scores and scikit-learn's calibrations of one fit."""
    X, y, classes = read_table(table, args.data)
    X_train, y_train, X_cal, y_cal, X_test, y_test = split(X, y, seed, args.caps)
    pipe = Pipeline([("pre", preprocessor(X)), ("clf", make_model(model, seed))])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_train, y_train)
    base = {"pipe": pipe, "X_cal": X_cal, "X_test": X_test, "y_cal": y_cal, "y_test": y_test}
    base["fit_seconds"] = time.perf_counter() - start
    frozen = FrozenEstimator(pipe)
    binary = classes.shape[0] == 2
    labels = np.arange(classes.shape[0])
    method = "decision_function" if hasattr(pipe, "decision_function") else "predict_proba"
    for part, Xp in (("cal", X_cal), ("test", X_test)):
        if binary:
            base[f"s_{part}"] = response_scores(frozen, Xp, method, False, labels)
            base[f"lp_{part}"] = base[f"s_{part}"]
            if model == "GaussianNB":  # CalibratedClassifier's non-saturating log-odds
                base[f"lp_{part}"] = response_scores(frozen, Xp, "predict_proba", True, labels)
            pp = frozen.predict_proba(Xp)[:, 1] if hasattr(pipe, "predict_proba") else None
            base[f"pp_{part}"] = expit(base[f"s_{part}"]) if pp is None else pp
        else:
            base[f"pp_{part}"] = frozen.predict_proba(Xp)
    for name in ("sigmoid", "isotonic", "temperature"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = CalibratedClassifierCV(frozen, method=name).fit(X_cal, y_cal)
        p = cal.predict_proba(X_test)
        base[f"p_sklearn {name}"] = p[:, 1] if binary else p
    if binary:
        ours = CalibratedClassifier(frozen).fit(X_cal, y_cal)
        base["p_default_cc"] = ours.predict_proba(X_test)[:, 1]
    return base


def load_base(table, model, seed, args):
    path = args.cache / "base" / f"{table}_{model}_{seed}.pkl"
    if path.is_file():
        with open(path, "rb") as f:
            return pickle.load(f)
    base = fit_base(table, model, seed, args)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(base, f)
    return base


# --------------------------------------------------------------------------- methods


def _timed(make, s_cal, y_cal, s_test):
    return mt.timed_fit_predict(make, s_cal, y_cal, s_test)


def binary_ours(b):
    """The default and each member on the scores CalibratedClassifier reads (``lp``)."""
    runs = {
        "default": (BernsteinCalibrator, "lp"),
        "Platt (ours)": (PlattCalibrator, "s"),
        "Beta (ours)": (BetaCalibrator, "lp"),
        "quadratic (ours)": (QuadraticScalingCalibrator, "lp"),
        "Venn-Abers (ours)": (VennAbersCalibrator, "lp"),
        "isotonic (ours)": (IsotonicCalibrator, "s"),
        # the corpus study's chosen rule (stack-noid), as the library ships it; it reads
        # probability scores as CalibratedClassifier tells it to (input="proba")
        "stack (ours)": (_stacked(b), "lp"),
    }
    out = {}
    for name, (cls, key) in runs.items():
        P, seconds = _timed(cls, b[f"{key}_cal"], b["y_cal"], b[f"{key}_test"])
        out[name] = (P[:, 1], seconds)
    # the default and the stack on cached scores are what CalibratedClassifier gives a user
    for name, cal in (("default", None), ("stack (ours)", StackedCalibrator())):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc = CalibratedClassifier(FrozenEstimator(b["pipe"]), cal)
            user = cc.fit(b["X_cal"], b["y_cal"]).predict_proba(b["X_test"])[:, 1]
        np.testing.assert_allclose(out[name][0], user, rtol=0, atol=1e-9)
    return out


def _stacked(b):
    """``StackedCalibrator`` told what the cached scores are, as CalibratedClassifier tells it."""
    is_proba = np.array_equal(b["lp_cal"], b["pp_cal"])
    return lambda: StackedCalibrator(input="proba" if is_proba else "logits")


def multiclass_ours(b):
    """The default and each member through ``CalibratedClassifier`` on the frozen model."""
    frozen = FrozenEstimator(b["pipe"])
    kind = "logits" if hasattr(b["pipe"], "decision_function") else "proba"
    members = {
        "default": None,
        "temperature (ours)": TemperatureCalibrator,
        "vector (ours)": VectorScalingCalibrator,
        "matrix (ours)": MatrixScalingCalibrator,
        "SVS (ours)": StructuredVectorScalingCalibrator,
        "SMS (ours)": StructuredMatrixScalingCalibrator,
    }
    out = {}
    for name, cls in members.items():
        start = time.perf_counter()
        cal = CalibratedClassifier(frozen, None if cls is None else cls(input=kind))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal.fit(b["X_cal"], b["y_cal"])
        out[name] = (cal.predict_proba(b["X_test"]), time.perf_counter() - start)
    return out


def source_hash(paths):
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


LIB_HASH = source_hash(Path(bernonnx.__file__).parent.rglob("*.py"))
RULES_HASH = source_hash([HERE / "_corpus_rules.py", HERE / "_nested.py"])


def _pack(runs):
    out = {}
    for name, (p, seconds) in runs.items():
        out[f"p:{name}"], out[f"t:{name}"] = p, np.float64(seconds)
    return out


def cached(path, compute):
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    out = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def one_fit(table, model, seed, args):
    """Every method's test probabilities of one fit: (probs, seconds, y_test, info)."""
    b = load_base(table, model, seed, args)
    binary = b["pp_test"].ndim == 1
    stem = f"{table}_{model}_{seed}"
    if binary:
        groups = {
            "peers": lambda: _pack(mt.binary_peers(b)),
            f"ours-{LIB_HASH}": lambda: _pack(binary_ours(b)),
            f"rules-{RULES_HASH}": lambda: rules.binary_rules(b),
        }
    else:
        groups = {
            "peers": lambda: _pack(mt.multiclass_peers(b)),
            f"ours-{LIB_HASH}": lambda: _pack(multiclass_ours(b)),
        }
    probs = {"uncalibrated": b["pp_test"]}
    probs |= {k[2:]: v for k, v in b.items() if k.startswith("p_sklearn")}
    seconds, info = {}, {}
    for group, compute in groups.items():
        got = cached(args.cache / "preds" / f"{group.split('-')[0]}_{stem}_{group}.npz", compute)
        probs |= {k[2:]: v for k, v in got.items() if k.startswith("p:")}
        seconds |= {k[2:]: float(v) for k, v in got.items() if k.startswith("t:")}
        info |= {k[2:]: str(v) for k, v in got.items() if k.startswith("i:")}
    if binary:  # maps that reorder the test rows (not non-decreasing in the score)
        order = np.argsort(b["lp_test"], kind="stable")
        s_sorted = b["lp_test"][order]
        for m, p in probs.items():
            d = np.diff(p[order])
            if np.any((d < -1e-9) & (np.diff(s_sorted) > 0)):
                info[f"reorders:{m}"] = "1"
    return probs, seconds, b["y_test"], info


def row_losses(probs, y):
    eps = np.finfo(np.float64).eps
    out = {}
    for m, p in probs.items():
        if p.ndim == 1:
            q = np.where(y == 1, p, 1.0 - p)
        else:
            q = p[np.arange(y.shape[0]), y]
        out[m] = -np.log(np.clip(q, eps, 1.0))
    return out


# --------------------------------------------------------------------------- main


def cases(kind):
    if kind == "binary":
        tables = (*ct.BINARY_TUNING, *ct.BINARY_REPORTING)
        return [(t, m) for t in tables for m in ISSUE_MODELS]
    tables = (*ct.MULTICLASS_TUNING, *ct.MULTICLASS_REPORTING)
    return [(t, m) for t in tables for m in MC_MODELS]


def compute_all(args, log):
    """Fill the caches (each fit once) and return every case's per-seed fits."""
    out = {}
    for kind in args.kinds:
        for table, model in cases(kind):
            if args.tables and table not in args.tables:
                continue
            fits = []
            for seed in args.seeds:
                start = time.perf_counter()
                fits.append(one_fit(table, model, seed, args))
                elapsed = time.perf_counter() - start
                load = os.getloadavg()[0]
                log(f"{kind} {table} {model} s{seed}: {elapsed:.1f}s, load {load:.1f}")
            out[(kind, table, model)] = fits
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--kinds", nargs="+", default=["binary", "multiclass"])
    ap.add_argument("--tables", nargs="*", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    ap.add_argument("--cap-train", type=int, default=4000)
    ap.add_argument("--cap-cal", type=int, default=2000)
    ap.add_argument("--cap-test", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--n-boot-ece", type=int, default=50)
    ap.add_argument("--compute-only", action="store_true")
    ap.add_argument("--parts", nargs="+", default=["tuning", "reporting"])
    args = ap.parse_args(argv)
    args.caps = {"train": args.cap_train, "cal": args.cap_cal, "test": args.cap_test}
    args.cache = args.cache / f"caps{args.cap_train}-{args.cap_cal}-{args.cap_test}"
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass

    def log(msg):
        print(time.strftime("%H:%M:%S"), msg, flush=True)

    with threadpoolctl.threadpool_limits(1):
        fits = compute_all(args, log)
    if args.compute_only or args.out is None:
        return
    import _corpus_report as report

    text = report.render(fits, args)
    args.out.write_text(text)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
