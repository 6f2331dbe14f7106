"""``--sets C`` of ``bernonnx export`` and ``bernonnx attach``: conformal prediction sets
(:class:`bernonnx.ConformalClassifier`) around the fitted calibrator, in the same graph.

The sets need labelled rows the calibrator was not fitted on: a share of the file's rows
(``--sets-rows``, stratified by label, seeded) is held out for them, and the calibrator
is fitted on the others.
"""

from __future__ import annotations

import warnings

import numpy as np

from bernonnx._registry import entry_for

from ._base import InputError, _fraction
from ._csv import _binary_target
from ._files import _class_labels

__all__ = ["add_sets_arguments", "describe_sets", "split_rows", "wrap_in_sets"]


def add_sets_arguments(parser) -> None:
    """``--sets C`` and its options (``cli/_sets.py``), for export and attach."""
    parser.add_argument(
        "--sets",
        type=_fraction,
        metavar="C",
        help="add conformal prediction sets at confidence C (the true class in the set for "
        "a share C of new rows): the graph output 'prediction_set', bool [N, K]; a share "
        "--sets-rows of the file's rows is held out for them, the calibrator fitted on the "
        "rest",
    )
    parser.add_argument(
        "--set-score",
        choices=("lac", "aps", "raps"),
        default="lac",
        help="the sets' conformity score (default: lac, the smallest sets)",
    )
    parser.add_argument(
        "--sets-rows",
        type=_fraction,
        default=0.5,
        metavar="F",
        help="share of the rows held out for the sets (default: 0.5)",
    )
    parser.add_argument(
        "--class-conditional",
        action="store_true",
        help="one threshold per class: coverage C within every class",
    )
    parser.add_argument(
        "--sets-seed", type=int, default=0, help="seed of the held-out split (default: 0)"
    )


def split_rows(labels, S: np.ndarray, args):
    """``(labels, S)`` of the calibrator's rows, then of the conformalization rows."""
    from sklearn.model_selection import train_test_split

    labels = np.asarray(labels)
    index = np.arange(len(labels))
    try:
        fit, held = train_test_split(
            index, test_size=args.sets_rows, stratify=labels, random_state=args.sets_seed
        )
    except ValueError:  # a label with one row cannot be stratified
        fit, held = train_test_split(index, test_size=args.sets_rows, random_state=args.sets_seed)
    return labels[fit], S[fit], labels[held], S[held]


def _targets(calibrator, S, labels, args) -> np.ndarray:
    """The labels as the calibrator was fitted on them (``_fit_labelled``'s rule)."""
    if entry_for(calibrator).multiclass and S.shape[1] > 1:
        return _class_labels(labels)
    return _binary_target(labels, args.label, args.pos_label)[0]


def wrap_in_sets(calibrator, S: np.ndarray, labels, args):
    """The fitted ``ConformalClassifier`` around ``calibrator``, conformalized on the
    held-out rows ``S``; every problem an :class:`InputError`."""
    from bernonnx import ConformalClassifier
    from bernonnx.conformal import ConformalWarning

    sets = ConformalClassifier(
        calibrator,
        confidence=args.sets,
        score=args.set_score,
        class_conditional=args.class_conditional,
        random_state=args.sets_seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConformalWarning)
        try:
            sets.fit(S, _targets(calibrator, S, labels, args))
        except (ValueError, ConformalWarning) as exc:
            raise InputError(
                f"--sets {args.sets:g}: {exc} (the {len(S)} rows held out by --sets-rows "
                f"{args.sets_rows:g})"
            ) from None
    return sets


def describe_sets(sets) -> str:
    """One line on the sets: confidence, score, rows and thresholds."""
    thresholds = np.unique(np.round(sets.threshold_, 6))
    shown = ", ".join(f"{t:.6g}" for t in thresholds[:6]) + (
        ", ..." if len(thresholds) > 6 else ""
    )
    mode = "one threshold per class" if sets.class_conditional else "one threshold"
    return (
        f"prediction sets at confidence {sets.confidence:g} ({sets.score}, {mode}: {shown}) "
        f"from {sets.n_conformal_} held-out rows; output 'prediction_set', bool "
        f"[N, {len(sets.classes_)}] in the order of the classes {sets.classes_.tolist()}"
    )
