"""A model calibrated on last year's class balance, moved to this year's unlabeled rows.
=====================================================================================

A bank calibrated its default model on last year's clients, of whom 22 % defaulted. This
year the default rate is about twice that, and this year's rows have no labels yet. The
probabilities are then too low for every client, however well the calibrator was fitted:
they are calibrated for last year's balance.

1. ``CalibratedClassifier`` records the balance it was calibrated for
   (``calibration_prior_``);
2. ``PriorShiftAdapter`` estimates this year's balance from the unlabeled rows (EM on the
   calibrated probabilities, Saerens, Latinne & Decaestecker 2002) with a bootstrap
   interval, and moves the probabilities to it by Bayes' rule;
3. the reliability diagrams (drawn here with the labels the bank will only have later)
   show the probabilities before and after;
4. ``to_onnx(adapter, X, priors_input=True)`` writes ONE graph, base model, calibrator and
   adaptation, whose optional input ``priors`` lets a server change the balance per
   request without exporting again; it reproduces Python on every row.

Data: the credit-card default table shipped inside the package (float64 array); this
year's rows are held-out rows subsampled to a 45 % default rate (the rows of each class
are the table's own: only the balance moves).

Run: ``python examples/prior_shift.py [--figure docs/_static/prior_shift.png]``
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from bernonnx import CalibratedClassifier, PriorShiftAdapter, check_parity, to_onnx
from bernonnx.datasets import load_credit_default
from bernonnx.deploy import run_onnx
from bernonnx.metrics import log_loss, smooth_calibration_error
from bernonnx.shift import adapt_proba


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", help="write the reliability diagrams to this PNG file")
    args = parser.parse_args(argv)

    X, y, _ = load_credit_default()
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=0
    )
    X_cal, X_new, y_cal, y_new = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=0
    )
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(X_train, y_train)
    # last year: calibrated on rows of last year's balance
    clf = CalibratedClassifier(FrozenEstimator(model)).fit(X_cal, y_cal)
    print(f"calibrated for a default rate of {clf.calibration_prior_[1]:.3f}")

    # this year: 45 % defaults, no labels yet (y_this_year is kept for the check only)
    rng = np.random.default_rng(0)
    pos, neg = np.flatnonzero(y_new == 1), np.flatnonzero(y_new == 0)
    rows = np.concatenate([rng.choice(pos, 1350, replace=False), rng.choice(neg, 1650, False)])
    X_this_year, y_this_year = X_new[rows], y_new[rows]

    adapter = PriorShiftAdapter(clf, random_state=0).fit(X_this_year)
    low, high = adapter.prior_interval_[1]
    print(
        f"estimated default rate this year: {adapter.prior_[1]:.3f} "
        f"(95% interval {low:.3f} to {high:.3f}; true {y_this_year.mean():.3f})"
    )
    before = clf.predict_proba(X_this_year)[:, 1]
    after = adapter.predict_proba(X_this_year)[:, 1]
    for name, p in (("before", before), ("after", after)):
        print(
            f"{name:>6}: log loss {log_loss(y_this_year, p):.4f}, smooth ECE "
            f"{smooth_calibration_error(y_this_year, p):.4f}"
        )

    # one graph; the priors an optional input whose default is the estimate
    onx = to_onnx(adapter, X_this_year[:5], priors_input=True)
    print(check_parity(adapter, onx, X_this_year).summary())
    next_month = np.array([[0.5, 0.5]])  # a server's per-request balance
    served = run_onnx(onx, {"X": X_this_year, "priors": next_month})["probabilities"]
    python = adapt_proba(clf.predict_proba(X_this_year), adapter.train_prior_, next_month)
    print(f"priors fed per request: max |graph - Python| = {np.abs(served - python).max():.1e}")

    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from bernonnx.plotting import reliability_diagram

        fig, ax = plt.subplots(figsize=(6.4, 5.2))
        reliability_diagram(
            y_this_year,
            {
                f"calibrated for {clf.calibration_prior_[1]:.0%} defaults": before,
                f"adapted to the estimate {adapter.prior_[1]:.0%} [{low:.0%}, {high:.0%}]": (
                    after
                ),
            },
            ax=ax,
            title=f"This year's rows ({y_this_year.mean():.0%} defaults)",
        )
        fig.savefig(args.figure, dpi=110, bbox_inches="tight")
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
