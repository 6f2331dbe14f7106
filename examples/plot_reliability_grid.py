"""Reliability diagrams of four calibrators, one panel each
==========================================================

A Gaussian naive Bayes classifier on the MAGIC gamma-telescope data (bundled with
bernonnx: :func:`bernonnx.datasets.load_magic_telescope`) is badly calibrated: its
independence assumption pushes the probabilities to 0 and 1. Four calibrators are
fitted on rows the model has not seen, through :class:`bernonnx.CalibratedClassifier`
(the model frozen), and :func:`bernonnx.plotting.reliability_grid` draws each on held-out
rows, with the raw model in grey behind it in every panel.

Run: ``python examples/plot_reliability_grid.py`` (a few seconds; opens no window when
matplotlib has no display).
"""

import matplotlib.pyplot as plt
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from bernonnx import (
    BernsteinCalibrator,
    CalibratedClassifier,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
)
from bernonnx.datasets import load_magic_telescope
from bernonnx.plotting import reliability_grid

X, label = load_magic_telescope()
y = (label == "h").to_numpy()  # hadrons (background) are the positive class
X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.5, random_state=0)
X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)

model = GaussianNB().fit(X_train, y_train)
probabilities = {"GaussianNB": model.predict_proba(X_test)[:, 1]}
for calibrator in (
    BernsteinCalibrator(),
    PlattCalibrator(),
    IsotonicCalibrator(),
    HistogramCalibrator(),
):
    calibrated = CalibratedClassifier(FrozenEstimator(model), calibrator).fit(X_cal, y_cal)
    probabilities[type(calibrator).__name__] = calibrated.predict_proba(X_test)[:, 1]

# %%
# Each panel: the positive rate against the mean prediction in 10 equal-width bins
# (marker size: the bin's share of the rows), the model's curve in grey.
reliability_grid(
    y_test,
    probabilities,
    reference="GaussianNB",
    title=f"MAGIC: GaussianNB and four calibrators on {len(y_test):,} held-out rows",
)
plt.show()
