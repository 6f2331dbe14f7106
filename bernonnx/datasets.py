"""Real, public data sets shipped with the package, so examples and tests run with no
download.

Four tables, gzip-compressed CSV files in ``bernonnx/data`` (:func:`data_folder`):

============================  =========  ==========================  ==================
loader                        rows       label (positive rate)       licence
============================  =========  ==========================  ==================
:func:`load_credit_default`   30,000     default next month (0.221)  CC BY 4.0 (UCI)
:func:`load_diabetes_brfss`   253,680    diabetes (0.139)            public domain (CDC)
:func:`load_magic_telescope`  19,020     hadron ``"h"`` (0.352)      CC BY 4.0 (UCI)
:func:`load_online_shoppers`  12,330     purchase (0.155)            CC BY 4.0 (UCI)
============================  =========  ==========================  ==================

:func:`load_credit_default` returns numpy arrays; the others return the table as
pandas reads it (``pandas.read_csv``: int64, float64, bool and text columns), which is
how a user holds such data, and need pandas (``pip install pandas``).
"""

from __future__ import annotations

import gzip
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "data_folder",
    "load_credit_default",
    "load_diabetes_brfss",
    "load_magic_telescope",
    "load_online_shoppers",
]

_FILE = "uci_credit_card.csv.gz"


def data_folder() -> Path:
    """The folder of the bundled ``.csv.gz`` files, to read them as they are.

    Returns
    -------
    folder : pathlib.Path
        Holds ``uci_credit_card.csv.gz``, ``diabetes_brfss2015.csv.gz``,
        ``magic_gamma_telescope.csv.gz`` and ``online_shoppers_intention.csv.gz``, each
        with one header row (read them with ``pandas.read_csv``).

    Examples
    --------
    >>> from bernonnx.datasets import data_folder
    >>> sorted(p.name for p in data_folder().glob("*.csv.gz"))[:2]
    ['diabetes_brfss2015.csv.gz', 'magic_gamma_telescope.csv.gz']
    """
    return Path(str(resources.files("bernonnx.data")))


def _frame(filename: str, label: str):
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in every extra but plot
        raise ImportError(
            f"reading {filename} as a table needs pandas (pip install pandas)"
        ) from exc
    with resources.files("bernonnx.data").joinpath(filename).open("rb") as raw:
        table = pd.read_csv(raw, compression="gzip")
    return table.drop(columns=[label]), table[label]


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


def load_diabetes_brfss():
    """CDC BRFSS 2015 diabetes health indicators: 253,680 rows, 21 features.

    The Behavioral Risk Factor Surveillance System's 2015 survey, cleaned to 21
    health indicators by Alex Teboul (the full, unbalanced binary version,
    ``diabetes_binary_health_indicators_BRFSS2015.csv``); a work of the U.S. Centers
    for Disease Control and Prevention, in the public domain. The target is
    ``Diabetes_binary`` (1: prediabetes or diabetes; positive rate 0.139). Every
    column is an integer code or count: ``BMI``, ``MentHlth``, ``PhysHlth`` and ``Age``
    (13 age bands) are ordinal, the others 0/1 flags or ordinal categories
    (``GenHlth``, ``Education``, ``Income``).

    Returns
    -------
    X : pandas.DataFrame of shape (253680, 21)
        Every column int64, as ``pandas.read_csv`` reads them.
    y : pandas.Series of shape (253680,), int64
        0 or 1.

    References
    ----------
    Centers for Disease Control and Prevention, "Behavioral Risk Factor Surveillance
    System Survey Data", 2015, https://www.cdc.gov/brfss/.
    A. Teboul, "Diabetes Health Indicators Dataset", Kaggle, 2021; also UCI Machine
    Learning Repository, data set 891, https://archive.ics.uci.edu/dataset/891.

    Examples
    --------
    >>> from bernonnx.datasets import load_diabetes_brfss
    >>> X, y = load_diabetes_brfss()
    >>> X.shape, str(X["BMI"].dtype), round(float(y.mean()), 3)
    ((253680, 21), 'int64', 0.139)
    """
    return _frame("diabetes_brfss2015.csv.gz", "Diabetes_binary")


def load_magic_telescope():
    """MAGIC gamma telescope: 19,020 simulated events, 10 continuous features.

    Monte Carlo events of the MAGIC Cherenkov telescope, each described by 10 image
    parameters (``fLength``, ``fWidth``, ``fSize``, ... ``fDist``: float64 with many
    decimals, no missing values). The target ``class`` is ``"g"`` (gamma, signal) or
    ``"h"`` (hadron, background; rate 0.352). UCI Machine Learning Repository,
    licensed CC BY 4.0.

    Returns
    -------
    X : pandas.DataFrame of shape (19020, 10)
        float64 columns.
    y : pandas.Series of shape (19020,)
        Text, ``"g"`` or ``"h"``, as ``pandas.read_csv`` reads it (object or string
        dtype, depending on the pandas version).

    References
    ----------
    R. K. Bock, "MAGIC Gamma Telescope", UCI Machine Learning Repository, data set
    159, 2004, https://archive.ics.uci.edu/dataset/159.
    R. K. Bock, A. Chilingarian, M. Gaug et al., "Methods for multidimensional event
    classification: a case study using images from a Cherenkov gamma-ray telescope",
    Nuclear Instruments and Methods in Physics Research A 516(2-3), 2004.

    Examples
    --------
    >>> from bernonnx.datasets import load_magic_telescope
    >>> X, y = load_magic_telescope()
    >>> X.shape, sorted(set(y)), round(float((y == "h").mean()), 3)
    ((19020, 10), ['g', 'h'], 0.352)
    """
    return _frame("magic_gamma_telescope.csv.gz", "class")


def load_online_shoppers():
    """Online shoppers purchasing intention: 12,330 sessions, 17 features.

    E-commerce sessions of one year, one per user: page counts and durations
    (``Administrative`` ... ``ProductRelated_Duration``), Google Analytics rates
    (``BounceRates``, ``ExitRates``, ``PageValues``), ``SpecialDay``, the text
    categories ``Month`` and ``VisitorType``, the integer-coded categories
    ``OperatingSystems``, ``Browser``, ``Region`` and ``TrafficType``, and the bool
    ``Weekend``. The target ``Revenue`` (bool) says whether the session ended in a
    purchase (rate 0.155). UCI Machine Learning Repository, licensed CC BY 4.0.

    Returns
    -------
    X : pandas.DataFrame of shape (12330, 17)
        int64, float64, bool and text columns, as ``pandas.read_csv`` reads them.
    y : pandas.Series of shape (12330,), bool

    References
    ----------
    C. O. Sakar, S. O. Polat, M. Katircioglu, Y. Kastro, "Real-time prediction of
    online shoppers' purchasing intention using multilayer perceptron and LSTM
    recurrent neural networks", Neural Computing and Applications 31, 2019.
    UCI Machine Learning Repository, data set 468,
    https://archive.ics.uci.edu/dataset/468.

    Examples
    --------
    >>> from bernonnx.datasets import load_online_shoppers
    >>> X, y = load_online_shoppers()
    >>> X.shape, str(X["Weekend"].dtype), str(y.dtype), round(float(y.mean()), 3)
    ((12330, 17), 'bool', 'bool', 0.155)
    """
    return _frame("online_shoppers_intention.csv.gz", "Revenue")
