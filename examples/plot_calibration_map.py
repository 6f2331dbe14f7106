"""Calibration maps: the probability each calibrator gives a score
================================================================

A logistic regression on the online shoppers data (bundled with bernonnx:
:func:`bernonnx.datasets.load_online_shoppers`; its numeric columns, as pandas reads
them) predicts whether a session ends in a purchase. Its decision values (margins) are
calibrated by four calibrators fitted on held-out rows, and
:func:`bernonnx.plotting.plot_calibration_function` draws each one's map from score to
probability over the empirical positive rates of the score's bins. The Bernstein
calibrator is smooth and monotone, isotonic regression a monotone staircase, Platt
scaling a sigmoid, histogram binning (equal-count bins) a step per bin.

Run: ``python examples/plot_calibration_map.py`` (a few seconds).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import (
    BernsteinCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
)
from bernonnx.datasets import load_online_shoppers
from bernonnx.plotting import plot_calibration_function

X, y = load_online_shoppers()
X = X.select_dtypes("number")  # int64 and float64 columns, as read
X_train, X_cal, y_train, y_cal = train_test_split(X, y, test_size=0.5, random_state=0)
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
model.fit(X_train, y_train)
margins = model.decision_function(X_cal)

# %%
# One panel per calibrator, fitted on the calibration rows' margins; the dots are those
# rows' positive rates per score bin.
figure, axes = plt.subplots(1, 4, figsize=(14, 3.6), sharey=True, layout="constrained")
for ax, calibrator in zip(
    axes,
    (
        BernsteinCalibrator(),
        PlattCalibrator(),
        IsotonicCalibrator(),
        HistogramCalibrator(strategy="quantile"),
    ),
    strict=True,
):
    calibrator.fit(margins, y_cal)
    plot_calibration_function(
        calibrator, scores=margins, y=y_cal, ax=ax, title=type(calibrator).__name__
    )
    # a few sessions have margins far out: the axis shows the middle 99% of the rows
    ax.set_xlim(*np.quantile(margins, [0.005, 0.995]))
figure.suptitle("Online shoppers: P(purchase) against the logistic regression's margin")
plt.show()
