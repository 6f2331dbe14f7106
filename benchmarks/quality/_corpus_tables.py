"""The corpus study's tables and which of them tune and which report (fixed before tuning).

Binary: the 15 binary tables of ``shared/data/corpus`` and the four shared tables (credit,
diabetes, magic, shoppers). The four shared tables tuned every default so far, so they
always tune; one third of the 15 corpus tables (5) join them, chosen by a seeded shuffle
below; the other 10 corpus tables report. Multiclass: one third of the 7 corpus tables
(2, seeded shuffle) tune, the other 5 report.

This split was written and committed before any rule was tuned on the corpus; it is never
changed after looking at results. A rule chosen on the tuning tables is evaluated once on
the reporting tables.
"""

from __future__ import annotations

import numpy as np

#: the corpus' binary tables (file stems), in manifest order
CORPUS_BINARY = (
    "mushroom", "ai4i_predictive_maintenance", "rice_cammeo_osmancik", "htru2_pulsar",
    "occupancy_detection", "coil2000_insurance", "eeg_eye_state", "spambase",
    "skin_segmentation", "shill_bidding", "wilt", "ozone_eighthr", "phishing_websites",
    "kr_vs_kp", "musk_v2",
)  # fmt: skip
#: the corpus' multiclass tables, in manifest order
CORPUS_MULTICLASS = (
    "obesity_levels", "dry_bean", "wine_quality", "letter_recognition", "connect_4",
    "satimage", "pendigits",
)  # fmt: skip
#: the four shared tables (binary; the quality study's names)
SHARED_BINARY = ("credit", "diabetes", "magic", "shoppers")

#: the seed of the shuffle that splits tuning from reporting tables (never changed)
SPLIT_SEED = 20261206


def _pick(tables, n_tune, seed):
    order = np.random.default_rng(seed).permutation(len(tables))
    tune = tuple(sorted(tables[i] for i in order[:n_tune]))
    report = tuple(sorted(tables[i] for i in order[n_tune:]))
    return tune, report


_b_tune, _b_report = _pick(CORPUS_BINARY, len(CORPUS_BINARY) // 3, SPLIT_SEED)
_m_tune, _m_report = _pick(CORPUS_MULTICLASS, len(CORPUS_MULTICLASS) // 3, SPLIT_SEED + 1)

#: binary tables a rule may be tuned on
BINARY_TUNING = (*SHARED_BINARY, *_b_tune)
#: binary tables a rule is only reported on
BINARY_REPORTING = _b_report
#: multiclass tables a rule may be tuned on
MULTICLASS_TUNING = _m_tune
#: multiclass tables a rule is only reported on
MULTICLASS_REPORTING = _m_report


def role(table: str) -> str:
    """``"tuning"`` or ``"reporting"``."""
    if table in BINARY_TUNING or table in MULTICLASS_TUNING:
        return "tuning"
    if table in BINARY_REPORTING or table in MULTICLASS_REPORTING:
        return "reporting"
    raise ValueError(f"table: unknown table {table!r}")
