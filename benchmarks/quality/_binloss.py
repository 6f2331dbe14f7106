"""Why the binary default loses to the parametric peers in two cases (study code).

``peers.md`` shows ``BernsteinCalibrator()`` (the default of ``CalibratedClassifier``)
worse than Beta, affine and quadratic scaling and SMS by more than two paired bootstrap
standard errors on shoppers RandomForest (both seed groups) and magic
HistGradientBoosting (seeds 3-5). This script fits, on the quality study's cached base
scores (``quality_study.py --cache``) and the peers' cached test probabilities
(``peers.py --preds``), candidate rules that change only the default's input or its
degree rule, and compares them with the peers on the three splits, as ``peers.py`` does:

* ``default``: today's default (the cached one of ``peers.py``);
* ``logit-in``: ``BernsteinCalibrator()`` on the log-odds of a probability score,
  ``log(q) - log(1 - q)`` with ``q`` clipped to ``[eps, 1 - eps]`` (``eps`` 1e-15, as
  ``CalibratedClassifier(log_odds=True)`` clips); other scores as the default. Of the
  quality study's five models only the random forest gives a probability score;
* ``logit-in-tight``: the same, clipped at half the smallest positive calibration
  probability (and symmetrically at 1), so exact 0 and 1 sit next to the rest;
* ``logit-in-tie``: the same, clipped at the smallest positive and the largest sub-1
  calibration probability (exact 0 and 1 tied to their nearest neighbours);
* ``targets``: the default fitted to Platt's targets instead of the 0/1 labels (see
  ``_Targets``); ``logit-in+targets``, ``logit-in-tie+targets``: on those scores;
* ``exact-cv``: the default with each fold's fit run to convergence (30 Newton steps
  from the all-rows fit instead of 2);
* ``1se``: the default with its degree by the one-standard-error rule over the five
  folds (every degree of the grid scored) instead of the least mean loss;
* ``warp-k``: the default with the logistic transform's two slopes times ``k`` (``k <
  1``: the calibration scores nearer ``u = 0.5``, where a low-degree polynomial of ``u``
  is nearly affine in the log-odds);
* ``nest-default-ks``: ``_nested.py``'s prototype (``ks`` standard errors; ``0se`` is
  the "nested prototype" of ``peers.md``), read from ``peers.py``'s cache;
  ``nest-logit-ks``: the same with its Bernstein arm on ``logit-in``'s score;
* ``Beta (ours)``, ``Platt-t (ours)``: ``BetaCalibrator`` and ``PlattCalibrator`` on
  the log-odds (references);
* ``deg-k``: the default at the fixed degree ``k`` (diagnosis only: no rule).

The reading of the results is in ``_binloss.md`` (written by hand above the tables).

Run (a few minutes with both caches, once the fits are stored in ``--preds``)::

    python benchmarks/quality/_binloss.py --cache /tmp/quality-study/cache \\
        --peers /tmp/quality-study/preds --preds /tmp/binloss/preds --out binloss.md
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit

import bernonnx._core.degree as degree_module
import bernonnx.calibrators.bernstein as bernstein_module
from bernonnx import BernsteinCalibrator, BetaCalibrator, PlattCalibrator
from bernonnx._base import AUTO_DEGREES
from bernonnx._core.degree import one_standard_error_choice
from bernonnx._core.points import fold_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _headtohead import case_stats, gap, head_to_head, is_loss, ranks  # noqa: E402
from _nested import FAMILIES, _oof, _param, probability_log_odds  # noqa: E402
from _nested import row_loss as nested_row_loss  # noqa: E402
from quality_floor import SPLITS, row_loss  # noqa: E402
from quality_study import ISSUE_MODELS  # noqa: E402

PEERS = (
    "Beta", "quadratic scaling", "affine scaling", "Venn-Abers (IVAP)", "MLI spline", "SMS",
    "sklearn sigmoid", "sklearn isotonic",
)  # fmt: skip
#: the other methods of the pool a mean rank is taken in (peers.md's binary table)
POOL = (*PEERS, "matrix scaling", "Platt (ours)", "isotonic (ours)", "temperature (ours)",
        "sklearn temperature", "uncalibrated")  # fmt: skip
CANDIDATES = (
    "default",
    "logit-in",
    "logit-in-tight",
    "logit-in-tie",
    "1se",
    "logit-in+1se",
    "exact-cv",
    "targets",
    "logit-in+targets",
    "logit-in-tie+targets",
    "nest-default-1se",
    "nest-default-2se",
    "nest-logit-0se",
    "nest-logit-1se",
    *(f"warp-{k}" for k in (0.25, 0.35, 0.5, 0.7, 1.5)),
)
FIXED = (2, 3, 4, 6, 8, 13, 20, 32)
EPS = 1e-15


def log_odds(p, eps):
    q = np.clip(p, eps, 1.0 - eps)
    return np.log(q) - np.log1p(-q)


def tight_eps(p):
    """Half the smallest positive distance of a calibration probability to 0 or 1."""
    inner = np.concatenate([p[p > 0], 1.0 - p[p < 1]])
    return max(float(inner.min()) / 2.0, EPS)


def bern(rule="min", degree="auto"):
    """``BernsteinCalibrator`` whose degree is chosen by ``rule`` ("min": the library's)."""
    if rule == "min":
        return BernsteinCalibrator(degree=degree)
    return _OneSE(degree=list(AUTO_DEGREES))


class _OneSE(BernsteinCalibrator):
    """The default with the one-standard-error rule over folds (every degree scored)."""

    def fit(self, X, y, sample_weight=None):
        keep = bernstein_module.least_loss_choice
        bernstein_module.least_loss_choice = one_standard_error_choice
        try:
            return super().fit(X, y, sample_weight)
        finally:
            bernstein_module.least_loss_choice = keep


class _Warp(BernsteinCalibrator):
    """The default with the logistic transform's two slopes multiplied by ``k``."""

    def __init__(self, k=1.0, degree="auto"):
        super().__init__(degree=degree)
        self.k = k

    def fit(self, X, y, sample_weight=None):
        keep = bernstein_module.fit_transform_params

        def scaled(*a, **kw):
            params = keep(*a, **kw)
            return params | {
                "scale": params["scale"] * self.k,
                "scale_below": params["scale_below"] * self.k,
            }

        bernstein_module.fit_transform_params = scaled
        try:
            return super().fit(X, y, sample_weight)
        finally:
            bernstein_module.fit_transform_params = keep


WARPS = (0.25, 0.35, 0.5, 0.7, 1.5)


def nest_logit(case):
    """``_nested``'s ``nest-default-ks`` with its default arm reading ``logit-in``'s score.

    Only a probability score (the random forest) changes; for other scores the arrays
    are left out and the cached ``nest-default-ks`` of ``peers.py`` stands in.
    """
    s, y, st = case["lp_cal"], case["y_cal"], case["lp_test"]
    if not np.array_equal(case["lp_cal"], case["pp_cal"]):
        return {"nest-logit-0se": np.zeros(0)}
    yf = y.astype(np.float64)
    folds = fold_of(0, s.shape[0], 5)
    conv = probability_log_odds
    oof = {f: _oof(_param(f, conv), s, yf, folds) for f in FAMILIES}
    fam = min(FAMILIES, key=lambda f: nested_row_loss(yf, oof[f]).mean())

    def arm(a, yy):
        cal = bern().fit(log_odds(a, EPS), yy)
        return lambda a2: log_odds(cal.predict_proba(log_odds(a2, EPS))[:, 1], 0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = nested_row_loss(yf, _oof(arm, s, yf, folds)) - nested_row_loss(yf, oof[fam])
        z = -d.mean() / (d.std(ddof=1) / np.sqrt(d.shape[0]) + 1e-300)
        p_arm = expit(arm(s, y)(st))
        p_map = expit(_param(fam, conv)(s, yf)(st))
    return {f"nest-logit-{k}se": p_arm if z > k else p_map for k in (0, 1, 2)}


class _ExactFolds(BernsteinCalibrator):
    """The default with each fold's fit run to convergence (``FOLD_STEPS`` Newton steps
    from the all-rows fit instead of 2), the transform kept from all rows."""

    def fit(self, X, y, sample_weight=None):
        keep = degree_module.FOLD_STEPS
        degree_module.FOLD_STEPS = 30
        try:
            return super().fit(X, y, sample_weight)
        finally:
            degree_module.FOLD_STEPS = keep


class _Targets:
    """``BernsteinCalibrator`` fitted to Platt's targets instead of the 0/1 labels.

    Each row enters twice, as a positive of weight ``T`` and a negative of weight
    ``1 - T``, with ``T = (N_+ + 1) / (N_+ + 2)`` for positives and ``1 / (N_- + 2)``
    for negatives (Platt 1999): the same loss as fitting the targets. The library's
    fit bins rows by class, so the degree is chosen here by exact 5-fold CV on the
    default's folds (a hash of the original row position, both copies of a row in the
    same fold), validated on the 0/1 labels; least mean loss, as the library's rule.
    """

    def __init__(self, degrees=AUTO_DEGREES):
        self.degrees = degrees

    @staticmethod
    def _doubled(s, y):
        n_pos, n_neg = y.sum(), (1 - y).sum()
        target = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
        x = np.concatenate([s, s])
        yy = np.concatenate([np.ones_like(y), np.zeros_like(y)])
        return x, yy, np.concatenate([target, 1 - target])

    def fit(self, s, y):
        y = np.asarray(y, dtype=np.int64)
        folds = fold_of(0, s.shape[0], 5)
        losses = []
        for d in self.degrees:
            total = 0.0
            for k in range(5):
                tr, te = folds != k, folds == k
                x, yy, w = self._doubled(s[tr], y[tr])
                cal = BernsteinCalibrator(degree=int(d)).fit(x, yy, sample_weight=w)
                total += row_loss(y[te], cal.predict_proba(s[te])[:, 1]).sum()
            losses.append(total)
        self.degree_ = int(self.degrees[int(np.argmin(losses))])
        x, yy, w = self._doubled(s, y)
        self.cal_ = BernsteinCalibrator(degree=self.degree_).fit(x, yy, sample_weight=w)
        return self

    def predict_proba(self, s):
        return self.cal_.predict_proba(s)


def fit_extra(case, out):
    """Candidates added after the first run: fitted where the cache lacks them."""
    s, y, st = case["lp_cal"], case["y_cal"], case["lp_test"]
    if "logit-in-tie+targets" not in out:
        out.pop("logit-in-tie", None)
    if "targets" not in out:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["targets"] = _Targets().fit(s, y).predict_proba(st)[:, 1]
            if np.array_equal(case["lp_cal"], case["pp_cal"]):
                t, tt = log_odds(s, EPS), log_odds(st, EPS)
                out["logit-in+targets"] = _Targets().fit(t, y).predict_proba(tt)[:, 1]
            else:
                out["logit-in+targets"] = out["targets"]
    if "logit-in-tie" not in out:
        if np.array_equal(case["lp_cal"], case["pp_cal"]):
            lo = float(s[s > 0].min())
            hi = float(s[s < 1].max())

            def tie(p):
                return log_odds(np.clip(p, lo, hi), 0.0)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out["logit-in-tie"] = bern().fit(tie(s), y).predict_proba(tie(st))[:, 1]
                tied = _Targets().fit(tie(s), y)
                out["logit-in-tie+targets"] = tied.predict_proba(tie(st))[:, 1]
        else:
            out["logit-in-tie"] = np.zeros(0)
            out["logit-in-tie+targets"] = np.zeros(0)
    if "exact-cv" not in out:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = _ExactFolds().fit(s, y)
        out["exact-cv"] = cal.predict_proba(st)[:, 1]
        out["i:degree-exact"] = np.array(cal.degree_)
    if "nest-logit-0se" not in out:
        out |= nest_logit(case)
    for k in WARPS:
        if f"warp-{k}" not in out:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[f"warp-{k}"] = _Warp(k).fit(s, y).predict_proba(st)[:, 1]
    return out


def fit_candidates(case):
    """Test probabilities of every candidate on one fit's cached scores."""
    s, y, st = case["lp_cal"], case["y_cal"], case["lp_test"]
    is_proba = np.array_equal(case["lp_cal"], case["pp_cal"])
    t, tt = (log_odds(s, EPS), log_odds(st, EPS)) if is_proba else (s, st)
    out = {}

    def run(name, cal, a, at):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[name] = cal.fit(a, y).predict_proba(at)[:, 1]
        return cal

    d = run("default", bern(), s, st)
    out["i:degree"] = np.array(d.degree_)
    run("1se", bern("1se"), s, st)
    if is_proba:
        run("logit-in", bern(), t, tt)
        eps = tight_eps(s)
        run("logit-in-tight", bern(), log_odds(s, eps), log_odds(st, eps))
        run("logit-in+1se", bern("1se"), t, tt)
    else:
        for k in ("logit-in", "logit-in-tight"):
            out[k] = out["default"]
        out["logit-in+1se"] = out["1se"]
    run("Beta (ours)", BetaCalibrator(input="logits"), t, tt)
    run("Platt-t (ours)", PlattCalibrator(), t, tt)
    for k in FIXED:
        run(f"deg-{k}", bern(degree=k), s, st)
    return out


def load_fit(data, model, seed, args):
    stem = f"{data}_{model}_{seed}"
    with np.load(args.cache / f"{stem}_40000.npz") as f:
        case = {k: f[k] for k in f.files}
    path = args.preds / f"{stem}.npz"
    if path.is_file():
        with np.load(path) as f:
            mine = {k: f[k] for k in f.files}
    else:
        mine = fit_candidates(case)
    if "logit-in-tie+targets" not in mine or not path.is_file():
        mine = fit_extra(case, mine)
        args.preds.mkdir(parents=True, exist_ok=True)
        np.savez(path, **mine)
    probs = {
        "uncalibrated": case["pp_test"],
        "sklearn sigmoid": case["p_sigmoid"],
        "sklearn isotonic": case["p_isotonic"],
        "sklearn temperature": case["p_temperature"],
    }
    for group in ("peers", "ours", "nested"):
        with np.load(args.peers / f"bin_{group}_{stem}.npz") as f:
            probs |= {k[2:]: f[k] for k in f.files if k.startswith("p:")}
    # the cached default of peers.py is today's default, fitted again here
    np.testing.assert_allclose(mine["default"], probs["default"], rtol=0, atol=1e-12)
    probs |= {k: v for k, v in mine.items() if not k.startswith("i:") and v.size}
    probs["nested prototype"] = probs["nest-default-0se"]
    if mine["logit-in-tie"].size == 0:
        probs["logit-in-tie"] = probs["default"]
        probs["logit-in-tie+targets"] = probs["targets"]
    for k in (0, 1, 2):  # the logit arm differs from nest-default-ks on probability scores
        own = mine.get(f"nest-logit-{k}se")
        fallback = own is None or own.size == 0
        probs[f"nest-logit-{k}se"] = probs[f"nest-default-{k}se"] if fallback else own
    y = case["y_test"]
    return {m: row_loss(y, p) for m, p in probs.items()}, probs, y, int(mine["i:degree"])


def report(args):
    methods = [*CANDIDATES, *POOL, "Beta (ours)", "Platt-t (ours)", "nested prototype"]
    methods += [f"deg-{k}" for k in FIXED]
    lines = [
        "# Where the binary default loses: input and degree rule",
        "",
        f"Written by `python benchmarks/quality/_binloss.py` (load average at start "
        f"{os.getloadavg()[0]:.1f}); 200 paired bootstrap resamples over test rows.",
    ]
    pooled = []
    for split, (tables, seeds) in SPLITS.items():
        stats_list, degrees = [], {}
        for data in tables:
            for model in ISSUE_MODELS:
                fits = []
                for seed in seeds:
                    losses, probs, y, deg = load_fit(data, model, seed, args)
                    fits.append((losses, probs, y))
                    degrees.setdefault(f"{data} {model}", []).append(deg)
                stats_list.append(case_stats(f"{data} {model} {seeds}", fits, methods, 200))
            print(f"{split}: {data} load {os.getloadavg()[0]:.1f}", flush=True)
        pooled += stats_list
        lines += split_section(split, stats_list, methods)
    lines += split_section("all splits pooled", pooled, methods)
    lines += ["", "## Losses beyond two standard errors, per candidate", ""]
    lines += loss_lines(pooled, (*CANDIDATES, "nested prototype"))
    lines += diagnose(args)
    lines += case_table(pooled, methods)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


def loss_lines(stats_list, cands):
    """The cases where a candidate is worse than a peer by more than two standard errors."""
    lines = []
    for c in cands:
        for s in stats_list:
            bad = []
            for p in PEERS:
                g, se = gap(s, c, p)
                if is_loss(g, se):
                    bad.append(f"{p} {100 * g:+.3f}% ± {100 * se:.3f}%")
            if bad:
                lines.append(f"- {c}, {s['name']}: " + "; ".join(bad))
    return lines


def diagnose(args):
    """Per seed of the two losing cases: degree, nested 5-fold CV and test loss, low tail.

    The CV refits the whole method inside each fold (the default's own degree search
    included) on the default's folds; ``diff`` is the default's mean row loss minus the
    Platt map's (on the log-odds ``t``), with the standard error of the row differences.
    ``p<0.005``: the test rows whose probability score is below 0.005 (random forest
    only): their summed log-loss difference default minus Beta (ours).
    """
    head = "| fit | degree | CV default | CV Platt-t | CV diff ± SE | test default | "
    head += "test Platt-t | test Beta (ours) | p<0.005: rows, summed diff |"
    lines = [
        "",
        "## Diagnosis per seed (two losing cases)",
        "",
        inspect.cleandoc(diagnose.__doc__.split("\n\n")[1]),
    ]
    lines += ["", head, "|" + "---|" * 9]
    for case in ("shoppers_RandomForest", "magic_HistGradientBoosting"):
        for seed in range(6):
            with np.load(args.cache / f"{case}_{seed}_40000.npz") as f:
                c = {k: f[k] for k in f.files}
            s, y, st, yt = c["lp_cal"], c["y_cal"], c["lp_test"], c["y_test"]
            is_proba = np.array_equal(s, c["pp_cal"])
            t, tt = (log_odds(s, EPS), log_odds(st, EPS)) if is_proba else (s, st)
            folds = fold_of(0, s.shape[0], 5)
            cv, test = {}, {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, make, a, at in (
                    ("default", bern, s, st),
                    ("platt", PlattCalibrator, t, tt),
                    ("beta", lambda: BetaCalibrator(input="logits"), t, tt),
                ):
                    r = np.empty(s.shape[0])
                    for k in range(5):
                        m = make().fit(a[folds != k], y[folds != k])
                        r[folds == k] = row_loss(
                            y[folds == k], m.predict_proba(a[folds == k])[:, 1]
                        )
                    cv[name] = r
                    cal = make().fit(a, y)
                    test[name] = row_loss(yt, cal.predict_proba(at)[:, 1])
                    if name == "default":
                        degree = cal.degree_
            d = cv["default"] - cv["platt"]
            se = d.std(ddof=1) / np.sqrt(len(d))
            low = st < 0.005 if is_proba else np.zeros(st.shape[0], bool)
            tail = (test["default"] - test["beta"])[low].sum()
            lines.append(
                f"| {case} {seed} | {degree} | {cv['default'].mean():.5f} | "
                f"{cv['platt'].mean():.5f} | {d.mean():+.5f} ± {se:.5f}"
                f" | {test['default'].mean():.5f} | {test['platt'].mean():.5f} | "
                f"{test['beta'].mean():.5f} | {int(low.sum())}, {tail:+.2f} |"
            )
    return lines


def split_section(split, stats_list, methods):
    lines = ["", f"## {split} ({len(stats_list)} cases)", ""]
    head = ["candidate", "mean rank in pool", "vs default: wins / 2-SE losses / mean gap"]
    head += [f"vs {p}" for p in PEERS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in (*CANDIDATES, "nested prototype"):
        r = ranks(stats_list, [c, *POOL])[c]
        cells = [c, f"{r:.2f}"]
        for p in ("default", *PEERS):
            h = head_to_head(stats_list, c, p)
            cells.append(f"{h['wins']}/{h['n']}, {h['losses']}, {100 * h['mean']:+.3f}%")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def case_table(stats_list, methods):
    """Per case: seed-averaged test log loss of the default, each candidate, fixed degrees."""
    cols = [*CANDIDATES, "Beta", "affine scaling", "Beta (ours)", "Platt-t (ours)"]
    cols += [f"deg-{k}" for k in FIXED]
    lines = ["", "## Per case: seed-averaged test log loss", ""]
    lines += ["| case | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for s in stats_list:
        v = [s["point"][s["methods"].index(m)] for m in cols]
        lines.append(f"| {s['name']} | " + " | ".join(f"{x:.5f}" for x in v) + " |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="quality_study.py's cache")
    parser.add_argument("--peers", type=Path, required=True, help="peers.py's --preds")
    parser.add_argument("--preds", type=Path, required=True, help="this script's fits")
    parser.add_argument("--out", type=Path)
    report(parser.parse_args())


if __name__ == "__main__":
    main()
