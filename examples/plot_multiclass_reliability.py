"""Top-label reliability of a five-class model, before and after calibration
=========================================================================

A Gaussian naive Bayes classifier predicts self-reported general health (five
classes, ``GenHlth`` 1 to 5) from the other health indicators of the CDC BRFSS 2015
survey (bundled with bernonnx: :func:`bernonnx.datasets.load_diabetes_brfss`; 30,000
of its rows here). For class probabilities :func:`bernonnx.plotting.reliability_diagram`
draws the top-label diagram: the accuracy of the predicted class against its
probability (Guo et al. 2017). Naive Bayes, treating correlated indicators as
independent, is over-confident. Temperature scaling (one parameter, every row's class
ranking kept) and the multiclass default of :class:`bernonnx.CalibratedClassifier` are
fitted on rows the model has not seen and drawn on held-out rows.

Run: ``python examples/plot_multiclass_reliability.py`` (a few seconds).
"""

import matplotlib.pyplot as plt
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from bernonnx import CalibratedClassifier, TemperatureCalibrator
from bernonnx.datasets import load_diabetes_brfss
from bernonnx.plotting import reliability_diagram

X, diabetes = load_diabetes_brfss()
X["Diabetes_binary"] = diabetes  # the former label is a feature here
y = X.pop("GenHlth")  # int64, 1 (excellent) to 5 (poor)
X, _, y, _ = train_test_split(X, y, train_size=30_000, stratify=y, random_state=0)
X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.5, random_state=0)
X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)

model = GaussianNB().fit(X_train, y_train)
frozen = FrozenEstimator(model)
probabilities = {
    "GaussianNB": model.predict_proba(X_test),
    "temperature scaling": CalibratedClassifier(frozen, TemperatureCalibrator())
    .fit(X_cal, y_cal)
    .predict_proba(X_test),
    "CalibratedClassifier default": CalibratedClassifier(frozen)
    .fit(X_cal, y_cal)
    .predict_proba(X_test),
}

# %%
# The top-label curve of each: below the diagonal, the model is over-confident.
ax = reliability_diagram(
    y_test,
    probabilities,
    n_bins=10,
    title=f"BRFSS 2015 general health, 5 classes: {len(y_test):,} held-out rows",
)
plt.show()
