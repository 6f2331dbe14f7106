"""A real data set shipped with the package, so examples run with no download."""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

__all__ = ["load_credit_default"]

_FILE = "uci_credit_card.csv.gz"


def load_credit_default() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Default of credit card clients (Taiwan, 2005): 30,000 rows, 23 features.

    The UCI Machine Learning Repository data set "default of credit card
    clients" (I-Cheng Yeh, 2009), in its Kaggle layout, licensed CC BY 4.0.
    The target is ``default.payment.next.month`` (positive rate 0.221); the
    ``ID`` column is dropped.

    Returns
    -------
    X : ndarray of shape (30000, 23), float64
    y : ndarray of shape (30000,), int64
    feature_names : list of str

    References
    ----------
    I-C. Yeh, C-H. Lien, "The comparisons of data mining techniques for the
    predictive accuracy of probability of default of credit card clients",
    Expert Systems with Applications 36(2), 2009.

    Examples
    --------
    >>> from bernonnx.datasets import load_credit_default
    >>> X, y, names = load_credit_default()
    >>> X.shape, round(float(y.mean()), 3), names[0]
    ((30000, 23), 0.221, 'LIMIT_BAL')
    """
    with resources.files("bernonnx.data").joinpath(_FILE).open("rb") as raw:
        with gzip.open(raw, "rt") as text:
            header = text.readline().strip().split(",")
            table = np.loadtxt(text, delimiter=",")
    names = [h.strip('"') for h in header]
    target = names.index("default.payment.next.month")
    features = [i for i, name in enumerate(names) if i != target and name != "ID"]
    return table[:, features], table[:, target].astype(np.int64), [names[i] for i in features]
