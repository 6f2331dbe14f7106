"""``bernonnx compare``: calibrators fitted on a CSV of scores, compared on held-out rows."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._base import EXIT_OK, InputError, _Progress
from ._csv import _Data
from ._files import _draw_reliability, _load, _Outputs, _plot_path
from ._methods import _METHOD_LIST, _check_probabilities, _fit, _Method, _method, _report
from ._stream import (
    _UNBOUNDED,
    _bounded,
    _check_method_scores,
    _evaluate_streamed,
    _refuse_unstreamable,
    _scan,
    _streamable,
    _streams,
)
from ._table import _csv_text, _json_safe, _table


def _input_name(method: _Method, scores: list[str]) -> str:
    if len(scores) == 1:
        return scores[0]
    if method.kind == "multi":
        return ", ".join(scores)
    return f"mean({', '.join(scores)})"


@dataclass(frozen=True)
class _Run:
    """One row of the comparison: ``method`` on the score columns ``columns`` (a
    one-score method reads their row mean), shown as ``input``."""

    method: _Method
    input: str
    columns: tuple[int, ...]

    def key(self, several: bool) -> str:
        """The name of its predictions (in the plot): the method, and with several
        inputs, what it read."""
        return f"{self.method.name} on {self.input}" if several else self.method.name


def _in_unit(values: np.ndarray) -> bool:
    return bool(values.min() >= 0.0 and values.max() <= 1.0)


def _one_score_inputs(data: _Data, progress: _Progress) -> list[tuple[str, tuple[int, ...]]]:
    """What the one-score methods read: each score column, and the columns' row mean when
    they are the same kind of score (all in [0, 1], or none).

    Averaging a probability with a margin or a logit gives a number of no meaning, so
    with mixed kinds the mean is left out and a notice says why.
    """
    k = data.S.shape[1]
    if k == 1:
        return [(data.scores[0], (0,))]
    inputs = [(name, (j,)) for j, name in enumerate(data.scores)]
    unit = [_in_unit(data.S[:, j]) for j in range(k)]
    mean = f"mean({', '.join(data.scores)})"
    if all(unit) or not any(unit):
        inputs.append((mean, tuple(range(k))))
    else:
        probabilities = ", ".join(c for c, u in zip(data.scores, unit, strict=True) if u)
        others = ", ".join(c for c, u in zip(data.scores, unit, strict=True) if not u)
        progress.note(
            f"no {mean} rows: {probabilities} in [0, 1] (probabilities) and {others} not "
            "(margins, logits or other scores) are different kinds of score, and their row "
            "mean means nothing; the one-score methods run on each column, the "
            "multivariate ones on all of them",
            always=True,
        )
    return inputs


def _select_runs(names: list[str] | None, data: _Data, progress: _Progress) -> list[_Run]:
    """The comparison's rows: every one-score method on every input of
    :func:`_one_score_inputs`, grouped by input, then the multivariate methods on the
    score matrix. Methods taking probabilities skip the inputs outside [0, 1]."""
    k = data.S.shape[1]
    if names:
        chosen = []
        for name in names:
            method = _method(name)
            if method not in chosen:
                chosen.append(method)
    else:
        chosen = [m for m in _METHOD_LIST if (m.kind != "multi" or k > 1) and m.by_default]
        # the slow log-loss fusion only on request: a cvxpy solve per degree and fold
        chosen = [m for m in chosen if m.name != "multivariate-log"]
    inputs = _one_score_inputs(data, progress)
    runs, skipped = [], []
    for method in (m for m in chosen if m.kind == "multi"):
        columns = tuple(range(k))
        runs.append(_Run(method, ", ".join(data.scores), columns))
    one_score = [m for m in chosen if m.kind != "multi"]
    for method in one_score:
        usable = [
            name
            for name, columns in inputs
            if not method.needs_probabilities or _in_unit(data.S[:, columns].mean(axis=1))
        ]
        if names and not usable:
            name, columns = inputs[0]
            where = f"column {name!r}" if len(columns) == 1 else name
            _check_probabilities(method, data.S[:, columns].mean(axis=1)[:, None], where)
        skipped += [(method.name, name) for name, _ in inputs if name not in usable]
    by_input = [
        _Run(method, name, columns)
        for name, columns in inputs
        for method in one_score
        if (method.name, name) not in skipped
    ]
    if skipped:
        where = sorted({name for _, name in skipped}, key=[n for n, _ in inputs].index)
        methods = list(dict.fromkeys(m for m, _ in skipped))
        progress.note(
            f"{', '.join(where)} {'is' if len(where) == 1 else 'are'} not in [0, 1]: "
            f"{', '.join(methods)} skipped there (taking probabilities)",
            always=bool(names),
        )
    return by_input + runs


def _evaluate(runs: list[_Run], data: _Data, args, progress: _Progress):
    """Held-out or cross-validated predictions and metrics of every run."""
    from sklearn.model_selection import StratifiedKFold, train_test_split

    n = data.y.shape[0]
    if args.cv is not None:
        if args.cv < 2:
            raise InputError(f"--cv needs at least 2 folds, got {args.cv}")
        if np.bincount(data.y).min() < args.cv:
            raise InputError(
                f"--cv {args.cv} needs at least {args.cv} rows of each class; the rarer class "
                f"has {np.bincount(data.y).min()}"
            )
        folds = list(
            StratifiedKFold(args.cv, shuffle=True, random_state=args.seed).split(data.S, data.y)
        )
        evaluation = {"mode": "cv", "folds": args.cv, "n_eval": n}
        eval_index = np.arange(n)
    else:
        try:
            train, test = train_test_split(
                np.arange(n), test_size=args.test_size, random_state=args.seed, stratify=data.y
            )
        except ValueError as exc:
            raise InputError(
                f"cannot split {n} rows with --test-size {args.test_size}: {exc}"
            ) from None
        folds = [(train, test)]
        evaluation = {"mode": "holdout", "test_size": args.test_size, "n_eval": len(test)}
        eval_index = np.sort(test)
    several = len({run.input for run in runs if run.method.kind != "multi"}) > 1
    rows, predictions = [], {}
    for run in runs:
        method, S = run.method, data.S[:, run.columns]
        out = np.empty(n)
        seconds = 0.0
        label = run.key(several)
        with progress.step(f"{label}: fitting on {len(folds)} split(s)"):
            for train, test in folds:
                start = time.perf_counter()
                predict = _fit(method, S[train], data.y[train])
                seconds += time.perf_counter() - start
                out[test] = predict(S[test])
        proba = out[eval_index]
        predictions[label] = proba
        row = {"method": method.name, "input": run.input}
        row.update(_report(data.y[eval_index], proba, args.n_bins, seed=args.seed))
        row["fit_seconds"] = 0.0 if method.kind == "reference" else seconds / len(folds)
        rows.append(row)
    return rows, evaluation, data.y[eval_index], predictions


def _select_streamed(names, scanned, args, progress: _Progress) -> list[_Method]:
    """:func:`_select_methods` for a streamed file: the methods that fit in passes."""
    if names:
        chosen = []
        for name in names:
            method = _method(name)
            if method not in chosen:
                _refuse_unstreamable(method, args)
                chosen.append(method)
        for method in chosen:
            _check_method_scores(method, scanned)
            if not _bounded(method):
                progress.note(_UNBOUNDED.format(method.name), always=True)
        return chosen
    multi = len(scanned.scores) > 1
    chosen = [m for m in _METHOD_LIST if (m.kind != "multi" or multi) and m.by_default]
    skipped = [m.name for m in chosen if not _streamable(m)]
    if skipped:
        progress.note(f"not fitted in passes, so skipped: {', '.join(skipped)}")
    chosen = [m for m in chosen if _streamable(m)]
    skipped = [m.name for m in chosen if not _bounded(m)]
    if skipped:
        progress.note(
            f"skipped {', '.join(skipped)}: streamed, their fit holds a table of the distinct "
            "scores, which grows with the file; ask for one with --method to fit it anyway"
        )
    chosen = [m for m in chosen if _bounded(m)]
    if not (scanned.lo >= 0.0 and scanned.hi <= 1.0):
        where = "the row mean of the score columns" if multi else f"column {scanned.scores[0]!r}"
        skipped = [m.name for m in chosen if m.needs_probabilities]
        progress.note(
            f"{where} is not in [0, 1]: skipping {', '.join(skipped)} (they take probabilities)"
        )
        chosen = [m for m in chosen if not m.needs_probabilities]
    return chosen


def _compare_streamed(args, progress: _Progress):
    if args.plot:
        raise InputError(
            "--plot draws the held-out predictions, which a streamed file does not keep in "
            "memory; pass --no-stream to load the file, or drop --plot"
        )
    scanned = _scan(args, progress)
    if len(scanned.scores) > 1:
        progress.note(
            f"streamed, the one-score methods read the row mean of {', '.join(scanned.scores)}"
            " (input 'mean(...)'), and nothing checks that the columns are one kind of score "
            "(the mean of a probability and a margin means nothing); for rows per column, "
            "pass --no-stream or run once per column",
            always=True,
        )
    methods = _select_streamed(args.method, scanned, args, progress)
    rows, evaluation = _evaluate_streamed(methods, args, scanned, progress)
    for row, method in zip(rows, methods, strict=True):
        row["input"] = _input_name(method, scanned.scores)
    about = {
        "file": str(scanned.path),
        "n_rows": scanned.rows,
        "n_missing_label": scanned.n_missing,
        "label": scanned.label,
        "positive_label": scanned.positive,
        "positive_rate": scanned.n_positive / scanned.rows,
        "scores": scanned.scores,
    }
    return about, rows, evaluation


def _cmd_compare(args, progress: _Progress) -> int:
    for name in args.method or ():
        _method(name)  # an unknown method fails before the file is read
    plot = _plot_path(args.plot) if args.plot else None
    outputs = _Outputs([Path(args.csv)])
    if args.output:
        outputs.add(f"--output {args.output}", Path(args.output))
    if plot is not None:
        outputs.add(f"--plot {args.plot}", plot)
    if _streams(args):
        about, rows, evaluation = _compare_streamed(args, progress)
    else:
        with progress.step(f"reading {args.csv}"):
            data = _load(args, progress)
        runs = _select_runs(args.method, data, progress)
        rows, evaluation, y_eval, predictions = _evaluate(runs, data, args, progress)
        about = {
            "file": str(data.path),
            "n_rows": int(data.y.shape[0]),
            "n_missing_label": data.n_missing_label,
            "label": data.label,
            "positive_label": data.positive,
            "positive_rate": float(data.y.mean()),
            "scores": data.scores,
        }
    if args.format == "json":
        document = {
            **about,
            "evaluation": evaluation,
            "n_bins": args.n_bins,
            "seed": args.seed,
            "results": [{k: _json_safe(v) for k, v in row.items()} for row in rows],
        }
        text = json.dumps(document, indent=2) + "\n"
    elif args.format == "csv":
        text = _csv_text(rows)
    else:
        if evaluation["mode"] == "cv":
            how = f"{evaluation['folds']}-fold cross-validated out-of-fold predictions"
        else:
            how = f"held-out {evaluation['n_eval']} rows (test size {args.test_size})"
        if evaluation.get("streamed"):
            how += (
                f", chosen by {evaluation['split']}; AUC from {evaluation['auc_bins']} "
                "probability bins"
            )
        text = (
            f"{about['file']}: {about['n_rows']} rows, positive label "
            f"{about['positive_label']!r} (rate {about['positive_rate']:.4f}); metrics on "
            f"{how}; ECE and MCE with {args.n_bins} bins; smECE: smooth ECE (Błasiok and "
            f"Nakkiran 2024) with its 90% bootstrap interval; fit s per fit\n\n"
            + _table(rows, ("method", "input"))
        )
    if plot is not None:
        raw = [key for key in predictions if key.split(" on ")[0] == "uncalibrated"]
        if evaluation["mode"] == "cv":
            evaluation_text = f"{evaluation['folds']}-fold out-of-fold predictions"
        else:
            evaluation_text = f"{evaluation['n_eval']} held-out rows"
        png = _draw_reliability(
            y_eval,
            predictions,
            args.n_bins,
            f"{data.path.name}: {evaluation_text}",
            progress,
            name=str(plot),
            reference=raw[0] if len(raw) == 1 else None,
            seed=args.seed,
        )
        if png is not None:
            outputs.stage(plot, png)
    if args.output:
        outputs.stage(Path(args.output), text)
    outputs.commit()
    if args.output:
        progress.note(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK
