"""What the scores of a binary map are: probabilities or log-odds (``input``).

Beta calibration and quadratic scaling are defined on a probability ``p`` and its
log-odds; a classifier's ``decision_function`` gives a log-odds-like margin. ``input``
says which, ``"auto"`` deciding at fit time from the scores' range; the fitted choice
is ``input_``, which ``predict_proba`` and the ONNX converter read.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from bernonnx._core.increasing import softplus_pair
from bernonnx._validation import Interval, StrOptions

#: The parameters every binary map here shares.
INPUT_CONSTRAINTS: dict = {
    "input": [StrOptions({"auto", "proba", "logits"})],
    # below about 1.1e-16, 1 - eps rounds to 1 in float64 and logit(1) = inf
    "eps": [Interval(Real, 1e-15, 0.5, closed="left")],
}


def resolve_input(est, s: np.ndarray) -> str:
    """``est.input``, with ``"auto"`` read as ``"proba"`` when every score lies in
    ``[0, 1]`` and ``"logits"`` otherwise."""
    if est.input != "auto":
        return est.input
    return "proba" if float(s.min()) >= 0.0 and float(s.max()) <= 1.0 else "logits"


def check_range(est, s: np.ndarray, kind: str) -> None:
    """Refuse probability scores outside ``[0, 1]`` with a ValueError naming ``input``."""
    if kind != "proba":
        return
    lo, hi = float(s.min()), float(s.max())
    if lo < 0.0 or hi > 1.0:
        given = "" if est.input == "proba" else " (chosen by input='auto' at fit time)"
        raise ValueError(
            f"{type(est).__name__} with input='proba'{given} takes probability scores in "
            f"[0, 1]; got scores in [{lo:.6g}, {hi:.6g}]. Pass input='logits' for "
            "decision values or log-odds"
        )


def clipped(s: np.ndarray, eps: float) -> np.ndarray:
    """``min(max(s, eps), 1 - eps)``: the graph's ``Clip``."""
    return np.minimum(np.maximum(s, eps), 1.0 - eps)


def logit(est, s: np.ndarray) -> np.ndarray:
    """The log-odds the map reads: the score (``"logits"``) or ``log(c) - log(1 - c)``
    of the clipped probability (the graph's Log, Sub; ``1 - c`` as written there)."""
    check_range(est, s, est.input_)
    if est.input_ == "logits":
        return s
    return clipped_log_odds(s, est.eps)


def clipped_log_odds(p: np.ndarray, eps: float) -> np.ndarray:
    """``log(c) - log(1 - c)`` of ``c = clipped(p, eps)`` (``1 - c`` as the graph writes
    it, where ``bernonnx._core.transforms.clipped_log_odds`` takes ``log1p(-c)``)."""
    c = clipped(p, eps)
    return np.log(c) - np.log(1.0 - c)


def log_p_and_log_q(est, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log p`` and ``-log(1 - p)`` of the scores, Beta calibration's two features.

    Probabilities are clipped to ``[eps, 1 - eps]``. Log-odds ``l`` stand for
    ``p = 1 / (1 + exp(-l))``, whose logs are computed without forming ``p`` (which
    saturates): ``log p = min(l, 0) - r`` and ``-log(1 - p) = max(l, 0) + r`` with
    ``r = log(1 + exp(-|l|))``.
    """
    check_range(est, s, est.input_)
    if est.input_ == "proba":
        c = clipped(s, est.eps)
        return np.log(c), -np.log(1.0 - c)
    return softplus_pair(s)
