"""The corpus study's fixed table split and its selection rules (benchmarks/quality)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

QUALITY = Path(__file__).resolve().parents[1] / "benchmarks" / "quality"


@pytest.fixture(scope="module")
def study():
    sys.path[:0] = [str(QUALITY), str(QUALITY.parent)]
    try:
        import _corpus_rules
        import _corpus_tables

        yield _corpus_tables, _corpus_rules
    finally:
        del sys.path[:2]


def test_split_is_the_committed_one(study):
    """The tuning / reporting split was fixed before tuning: it must never move."""
    ct, _ = study
    assert ct.BINARY_TUNING == (
        "credit", "diabetes", "magic", "shoppers", "coil2000_insurance", "mushroom",
        "musk_v2", "phishing_websites", "skin_segmentation",
    )  # fmt: skip
    assert ct.MULTICLASS_TUNING == ("dry_bean", "satimage")
    binary = set(ct.BINARY_TUNING) | set(ct.BINARY_REPORTING)
    assert binary == set(ct.CORPUS_BINARY) | set(ct.SHARED_BINARY)
    assert not set(ct.BINARY_TUNING) & set(ct.BINARY_REPORTING)
    assert set(ct.MULTICLASS_TUNING) | set(ct.MULTICLASS_REPORTING) == set(ct.CORPUS_MULTICLASS)
    assert not set(ct.MULTICLASS_TUNING) & set(ct.MULTICLASS_REPORTING)
    assert ct.role("wilt") == "reporting" and ct.role("credit") == "tuning"
    with pytest.raises(ValueError, match="table"):
        ct.role("iris")


@pytest.mark.slow
def test_rules_are_monotone_on_real_scores(study):
    """Every rule's test probabilities are non-decreasing in the score (credit slice)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from bernonnx.datasets import load_credit_default

    _, rules = study
    X, y, _ = load_credit_default()
    X, y = X[:3000], y[:3000]
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.5, random_state=0)
    X_cal, X_te, y_cal, y_te = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)
    for model in (make_pipeline(StandardScaler(), LogisticRegression()), GaussianNB()):
        model.fit(X_tr, y_tr)
        if hasattr(model, "decision_function"):
            s_cal, s_te = model.decision_function(X_cal), model.decision_function(X_te)
        else:
            lp_c, lp_t = model.predict_log_proba(X_cal), model.predict_log_proba(X_te)
            s_cal, s_te = lp_c[:, 1] - lp_c[:, 0], lp_t[:, 1] - lp_t[:, 0]
        b = {"lp_cal": s_cal, "lp_test": s_te, "pp_cal": None, "y_cal": y_cal}
        out = rules.binary_rules(b)
        order = np.argsort(s_te, kind="stable")
        for name in (*rules.RULES, *rules.POST_HOC):
            p = out[f"p:{name}"][order]
            assert np.all((p >= 0) & (p <= 1)), name
            assert np.all(np.diff(p) >= -1e-12), name
