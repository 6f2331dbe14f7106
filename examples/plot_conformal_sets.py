"""Prediction sets: how many classes it takes to hold the true one
==================================================================

Self-rated general health (``GenHlth``, 1 excellent to 5 poor) predicted from the other
health indicators of the CDC's BRFSS 2015 survey (bundled:
:func:`bernonnx.datasets.load_diabetes_brfss`, as pandas reads it). No model gets this
right most of the time; a calibrated model still knows *which* rows it is sure about.
:class:`bernonnx.ConformalClassifier` turns its probabilities into sets that hold the
true class for a chosen share of new rows: a set of one class is an answer to act on, a
larger set a row to look at. This target is hard (46 % accuracy): at 90 % the sets hold
two or three of the five classes, and which two or three is what the model knows.

Run: ``python examples/plot_conformal_sets.py [--figure docs/_static/conformal_sets.png]``
(about 20 s).
"""

import argparse

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bernonnx import CalibratedClassifier, ConformalClassifier, to_onnx
from bernonnx.datasets import load_diabetes_brfss
from bernonnx.deploy import run_onnx
from bernonnx.export import onnx_inputs

parser = argparse.ArgumentParser()
parser.add_argument("--figure", help="also save the figure there")
args, _ = parser.parse_known_args()  # sphinx-gallery passes its own arguments

X, diabetes = load_diabetes_brfss()
X = X.assign(Diabetes_binary=diabetes).sample(30_000, random_state=0)
y = X.pop("GenHlth").to_numpy()
X_fit, X_rest, y_fit, y_rest = train_test_split(X, y, train_size=10_000, random_state=0)
X_conf, X_test, y_conf, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)

# %%
# A calibrated model on 10,000 rows; 10,000 others, labelled but never fitted on, are
# the conformalization rows; the last 10,000 are new rows.
model = CalibratedClassifier(make_pipeline(StandardScaler(), LogisticRegression()), cv=3)
model.fit(X_fit, y_fit)
print(f"accuracy on new rows: {np.mean(model.predict(X_test) == y_test):.3f}")

sets = ConformalClassifier(model, confidence=0.9).fit(X_conf, y_conf)
found = sets.predict_set(X_test)
index = np.searchsorted(sets.classes_, y_test)
size = found.sum(axis=1)
print(f"90 % sets: coverage {found[np.arange(len(index)), index].mean():.3f}")
for k in range(1, 6):
    share = np.mean(size == k)
    if share:
        print(f"  {k} class(es): {share:6.1%} of the rows")

# %%
# The same sets from the ONNX graph: a third output ``prediction_set`` beside ``label``
# and ``probabilities``, identical on every row.
onx = to_onnx(sets, X_test[:5])
graph = run_onnx(onx, onnx_inputs(onx, X_test))["prediction_set"]
print(
    f"graph sets identical to Python's on {np.all(graph == found, axis=1).sum()} of "
    f"{len(found)} rows"
)

# %%
# Set size and coverage against the confidence asked for: the coverage follows the
# diagonal (the guarantee), and the sets grow as it rises. LAC gives the smallest sets;
# APS and RAPS, which grow each set from the most likely class and never leave one
# empty, are barely larger here.
levels = np.round(np.linspace(0.5, 0.98, 13), 2)
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for score in ("lac", "aps", "raps"):
    sizes, covers = [], []
    for level in levels:
        found = ConformalClassifier(model, confidence=level, score=score, random_state=0)
        found = found.fit(X_conf, y_conf).predict_set(X_test)
        sizes.append(found.sum(axis=1).mean())
        covers.append(found[np.arange(len(index)), index].mean())
    left.plot(levels, sizes, marker="o", label=score.upper())
    right.plot(levels, covers, marker="o", label=score.upper())
right.plot([0.5, 1], [0.5, 1], color="grey", linestyle="--", label="asked for")
left.set(xlabel="confidence asked for", ylabel="mean set size (of 5 classes)")
right.set(xlabel="confidence asked for", ylabel="coverage on new rows")
left.legend()
right.legend()
left.set_title("Set size")
right.set_title("Coverage")
fig.tight_layout()
if args.figure:
    fig.savefig(args.figure, dpi=110)
