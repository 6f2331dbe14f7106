"""Head to head against CalArena's leaders: binary (the quality study) and multiclass.
==================================================================================

Binary: the quality study's splits (``quality_study.py``; its cache of base scores, the
five issue models): tuning (credit, magic; seeds 0-2), held out A (diabetes, shoppers;
seeds 0-2) and held out B (all four; seeds 3-5). Multiclass: the cases of
``benchmarks/multiclass_default.py`` (tuning: diabetes GenHlth and Income, seeds 0-1;
held out: the other 16).

Methods (``_methods.py``): the probmetrics 1.3.0 calibrators CalArena (Berta, Holzmüller,
Bach and Jordan 2026) ranks first, fed the model's ``predict_proba`` as CalArena feeds
them; scikit-learn's ``CalibratedClassifierCV`` sigmoid, isotonic and temperature; ours
(``CalibratedClassifier``'s default, Platt, isotonic and temperature scaling; for
multiclass also the previous default, without its SMS stage); the uncalibrated model; and
the binary prototypes of ``_nested.py``, whose variant is chosen on the tuning split only
(fewest losses beyond two standard errors against the issue's peers, then the best mean
rank) and reported unchanged on the held-out splits.

Statistics (``_headtohead.py``): per case, the paired bootstrap over test rows of
``quality_floor.py`` (``--n-boot`` resamples; multiclass top-label smooth ECE on the first
``--n-boot-ece`` of them). Every fit's test probabilities are cached in ``--preds`` (each
group of methods once), so reruns only compute the statistics.

Run (the binary cache of ``quality_study.py`` is built when absent)::

    python benchmarks/quality/peers.py --cache /tmp/qs/cache --preds /tmp/qs/preds \\
        --out benchmarks/quality/peers.md

``--quick``: credit and one seed, two multiclass cases.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import threadpoolctl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
import _methods as mt  # noqa: E402
import multiclass_default as mcd  # noqa: E402
from _harness import git_revision, machine, now  # noqa: E402
from _headtohead import (  # noqa: E402
    case_stats,
    fmt_gap,
    gap,
    h2h_table,
    head_to_head,
    is_loss,
    rank_table,
    ranks,
)
from _nested import NestedBinary, probability_log_odds  # noqa: E402
from quality_floor import SPLITS, row_loss  # noqa: E402
from quality_study import DEFAULT_DATA_DIR, ISSUE_MODELS, cached_case  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from bernonnx import (  # noqa: E402
    CalibratedClassifier,
    TemperatureBernsteinCalibrator,
    TemperatureCalibrator,
)

B_VARIANTS = ("param-cv", *(f"nest-{a}-{k}se" for a in ("corr", "default") for k in (0, 1, 2)))
VARIANTS_TEXT = """Variants (`_nested.NestedBinary`, on the log-odds the default reads, `t`): three
strictly increasing maps of `t`, logistic regressions with non-negative slopes, `affine`
(Platt), `beta` (Beta calibration: `-a softplus(-t) + b softplus(t) + c`, i.e.
`a log p - b log(1 - p) + c` with `p = sigmoid(t)`), `quadratic` (of the median/IQR-scaled
score, log-compressed beyond 4, increasing on the calibration range, linear beyond);
`param-cv`: the one of least 5-fold CV log loss on the calibration rows (the default's
folds); `nest-corr-ks`: that map, then `BernsteinCalibrator()` on its log-odds when the
5-fold CV loss of the pair (refitted per fold) is below the map's by more than `k` standard
errors of the row-wise differences, else the map; `nest-default-ks`: the same test for
today's default (`BernsteinCalibrator()` on `t`) in place of the map."""
MC_GROUPS = ("base", "peers")
B_TARGET_PEERS = (
    "Beta", "quadratic scaling", "affine scaling", "Venn-Abers (IVAP)", "MLI spline", "SMS",
    "sklearn sigmoid", "sklearn isotonic",
)  # fmt: skip
M_TARGET_PEERS = (
    "SMS", "SVS", "matrix scaling", "vector scaling", "temperature scaling", "uncalibrated",
)  # fmt: skip
B_METHODS = (
    "uncalibrated", "sklearn sigmoid", "sklearn isotonic", "sklearn temperature", "default",
    "Platt (ours)", "isotonic (ours)", "temperature (ours)", *mt.BINARY_PEERS,
)  # fmt: skip
M_OURS = ("default", "previous default", "temperature (ours)", "sklearn sigmoid",
          "sklearn isotonic", "sklearn temperature")  # fmt: skip
M_METHODS = ("uncalibrated", *M_OURS, *mt.MULTICLASS_PEERS)


def cached(path: Path, compute):
    """``compute()``'s dict of arrays, stored at ``path`` once."""
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    out = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def _pack(runs):
    """name -> (p, seconds) as arrays ``p:name`` and ``t:name``."""
    out = {}
    for name, (p, seconds) in runs.items():
        out[f"p:{name}"], out[f"t:{name}"] = p, np.float64(seconds)
    return out


def binary_fit(data, model, seed, args):
    case = cached_case(data, model, seed, args)
    stem = f"{data}_{model}_{seed}"
    groups = {
        "peers": lambda: _pack(mt.binary_peers(case)),
        "ours": lambda: _pack(mt.binary_ours(case)),
        "nested": lambda: _nested_binary(case),
    }
    probs = {
        "uncalibrated": case["pp_test"],
        "sklearn sigmoid": case["p_sigmoid"],
        "sklearn isotonic": case["p_isotonic"],
        "sklearn temperature": case["p_temperature"],
    }
    times = {}
    for group, compute in groups.items():
        got = cached(args.preds / f"bin_{group}_{stem}.npz", compute)
        probs |= {k[2:]: v for k, v in got.items() if k.startswith("p:")}
        times |= {k[2:]: float(v) for k, v in got.items() if k.startswith("t:")}
    if "p_default_cc" in case:  # computed in this run: the default is CalibratedClassifier's
        np.testing.assert_allclose(probs["default"], case["p_default_cc"], rtol=0, atol=1e-12)
    y = case["y_test"]
    return {m: row_loss(y, p) for m, p in probs.items()}, probs, y, times


def _nested_binary(case):
    start = time.perf_counter()
    # the maps read log-odds: a probability score (a model with neither a decision function
    # nor log-probabilities: the random forest) is read as its clipped logit
    is_proba = np.array_equal(case["lp_cal"], case["pp_cal"])
    conv = probability_log_odds if is_proba else (lambda s: s)
    out, info = NestedBinary().fit_predict(
        case["lp_cal"], case["y_cal"], case["lp_test"], conv=conv
    )
    seconds = time.perf_counter() - start
    packed = _pack({k: (p, seconds) for k, p in out.items()})
    packed["i:family"] = np.array(info["family"])
    return packed


# --------------------------------------------------------------------------- multiclass


def mc_base(target, model_name, seed, args):
    """As ``multiclass_default.run_case``: the split, the base model, ours and sklearn's."""
    frozen, X_cal, y_cal, X_test, y_test = mcd.split_case(
        target, model_name, seed, args.rows, args.data
    )
    kind = "logits" if hasattr(frozen, "decision_function") else "proba"
    methods = {
        "default": CalibratedClassifier(frozen),
        "temperature (ours)": CalibratedClassifier(frozen, TemperatureCalibrator(input=kind)),
        **{
            f"sklearn {m}": CalibratedClassifierCV(frozen, method=m)
            for m in ("sigmoid", "isotonic", "temperature")
        },
    }
    runs = {}

    def timed(name, cal):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            cal.fit(X_cal, y_cal)
        runs[name] = (cal.predict_proba(X_test), time.perf_counter() - start)

    for name, cal in methods.items():
        timed(name, cal)
    # the default before SMS: the same scores, no first stage
    told = methods["default"].calibrated_classifiers_[0].calibrators[0]
    methods["previous default"] = CalibratedClassifier(
        frozen,
        TemperatureBernsteinCalibrator(input=told.input),
        log_odds=methods["default"].log_odds_,
    )
    timed("previous default", methods["previous default"])
    chosen = [
        methods[m].calibrated_classifiers_[0].calibrators[0].method_
        for m in ("default", "previous default")
    ]
    return _pack(runs) | {
        "y_cal": y_cal,
        "y_test": y_test,
        "pp_cal": frozen.predict_proba(X_cal),
        "pp_test": frozen.predict_proba(X_test),
        "i:chosen": np.array(chosen),
    }


def mc_fit(target, model_name, seed, args):
    stem = f"{target}_{model_name}_{seed}_{args.rows}"
    base = cached(
        args.preds / f"mc_base_{stem}.npz", lambda: mc_base(target, model_name, seed, args)
    )

    peers = cached(args.preds / f"mc_peers_{stem}.npz", lambda: _pack(mt.multiclass_peers(base)))
    probs = {"uncalibrated": base["pp_test"]}
    times = {}
    for got in (base, peers):
        probs |= {k[2:]: v for k, v in got.items() if k.startswith("p:")}
        times |= {k[2:]: float(v) for k, v in got.items() if k.startswith("t:")}
    y = base["y_test"]
    eps = np.finfo(np.float64).eps
    losses = {m: -np.log(np.clip(p[np.arange(y.shape[0]), y], eps, 1.0)) for m, p in probs.items()}
    default, previous = (str(c) for c in base["i:chosen"])
    return losses, probs, y, times, f"default: SMS then {default}; previous default: {previous}"


# --------------------------------------------------------------------------- report


def verdict(stats_list, ours, peers, metric="log loss", min_share=None):
    """The targets' counts against each peer: a list of failures (empty: met)."""
    failed = []
    for p in peers:
        h = head_to_head(stats_list, ours, p, metric)
        if h["losses"]:
            failed.append(f"{h['losses']} loss(es) beyond 2 SE against {p} ({metric})")
        if min_share is not None and h["wins"] < min_share * h["n"]:
            failed.append(f"wins {h['wins']} / {h['n']} against {p}")
    return failed


def choose_variant(stats_list, variants, methods, peers, metrics_=("log loss",)):
    """Tuning split only: fewest 2-SE losses against ``peers``, fewest wins, best rank."""
    rows = []
    for v in variants:
        losses = sum(head_to_head(stats_list, v, p, m)["losses"] for p in peers for m in metrics_)
        min_wins = min(head_to_head(stats_list, v, p)["wins"] for p in peers)
        rank = ranks(stats_list, [*methods, v])[v]
        rows.append((losses, -min_wins, rank, v))
    rows.sort()
    table = ["| variant | 2-SE losses vs the peers | fewest wins vs a peer | mean rank |",
             "|---|---|---|---|"]  # fmt: skip
    table += [f"| {v} | {a} | {-b} / {len(stats_list)} | {c:.2f} |" for a, b, c, v in rows]
    return rows[0][3], "\n".join(table)


def loss_cases(stats_list, name, peers, metrics_):
    """The cases where ``name`` is worse than a peer by more than two standard errors."""
    found = []
    for st in stats_list:
        for metric in metrics_:
            worse = []
            for p in peers:
                g, se = gap(st, name, p, metric)
                if is_loss(g, se):
                    worse.append(f"{p} {fmt_gap(g, metric)} ± {fmt_gap(se, metric).lstrip('+')}")
            if worse:
                found.append(f"{st['name']} ({metric}): " + ", ".join(worse))
    return found


def target_lines(stats_list, name, methods, peers, metrics_, min_share):
    r = ranks(stats_list, methods)
    first = min(r, key=r.get)
    fails = []
    for metric in metrics_:
        fails += verdict(stats_list, name, peers, metric, min_share)
    lines = [
        f"- **{name}**: mean rank {r[name]:.2f} "
        + ("(first)" if first == name else f"(first: {first}, {r[first]:.2f})")
        + ("; every peer target met" if not fails else "; not met: " + "; ".join(fails))
    ]
    lines += [f"  - worse beyond 2 SE: {c}" for c in loss_cases(stats_list, name, peers, metrics_)]
    return lines


def fit_times(all_times, methods):
    got = {m: [t[m] for t in all_times if m in t] for m in methods}
    return {m: f"{np.mean(v):.3f}" if v else "—" for m, v in got.items()}


def binary_section(args):
    parts, per_split, times = [], {}, []
    for split, (tables, seeds) in SPLITS.items():
        if split not in args.splits:
            continue
        stats_list = []
        for data in tables:
            for model in ISSUE_MODELS:
                fits = []
                for seed in seeds:
                    losses, probs, y, t = binary_fit(data, model, seed, args)
                    fits.append((losses, probs, y))
                    times.append(t)
                name = f"{data} {model} {seeds}"
                methods = [*B_METHODS, *B_VARIANTS]
                stats_list.append(case_stats(name, fits, methods, args.n_boot))
                print(f"binary {split}: {data} {model} load {os.getloadavg()[0]:.1f}", flush=True)
        per_split[split] = stats_list
    first = next(iter(per_split))
    variant, variant_table = choose_variant(
        per_split[first], B_VARIANTS, B_METHODS, B_TARGET_PEERS
    )
    parts += [
        "",
        "## Binary",
        "",
        f"The prototype's variant, chosen on the {first} split only (fewest losses beyond "
        "two standard errors against the issue's eight peers, then fewest wins against "
        "one of them, then the best mean rank among all methods; `_nested.py`): "
        f"**{variant}**. It is reported unchanged on the other splits.",
        "",
        VARIANTS_TEXT,
        "",
        variant_table,
    ]
    proto = "nested prototype"
    for stats_list in per_split.values():
        for s in stats_list:
            s["methods"] = [proto if m == variant else m for m in s["methods"]]
    methods = [*B_METHODS, proto]
    time_col = {
        "mean fit time (s)": fit_times(times, B_METHODS)
        | {proto: fit_times(times, [variant])[variant]}
    }
    pooled = [s for v in per_split.values() for s in v]
    for split, stats_list in [*per_split.items(), ("all splits pooled", pooled)]:
        peers = [m for m in methods if m not in ("default", proto)]
        parts += [
            "",
            f"### {split} ({len(stats_list)} cases)",
            "",
            rank_table(stats_list, methods, time_col),
            "",
            "Head to head (log loss; wins: lower seed-averaged test log loss; losses: "
            "worse by more than two paired bootstrap standard errors; mean gap: "
            "ours / peer - 1, averaged over cases):",
            "",
            h2h_table(stats_list, ["default", proto], peers, rank_of=ranks(stats_list, methods)),
            "",
            "Targets (mean rank first; >= 60% wins and no loss beyond 2 SE against each of "
            + ", ".join(B_TARGET_PEERS)
            + "):",
            "",
            *target_lines(stats_list, "default", methods, B_TARGET_PEERS, ["log loss"], 0.6),
            *target_lines(stats_list, proto, methods, B_TARGET_PEERS, ["log loss"], 0.6),
        ]
    return parts


def multiclass_section(args):
    groups = (
        {"quick": mcd.QUICK} if args.quick else {"tuning": mcd.TUNING, "held out": mcd.HELD_OUT}
    )
    times, per_split, infos, missing = [], {}, [], []
    both = ("log loss", "ece")
    ours = ["default", "previous default"]
    ece_methods = [*ours, *M_TARGET_PEERS, "temperature (ours)"]
    for split, cases in groups.items():
        stats_list = []
        for target, model_name, seed in cases:
            stem = f"{target}_{model_name}_{seed}_{args.rows}"
            done = all((args.preds / f"mc_{g}_{stem}.npz").is_file() for g in MC_GROUPS)
            if args.cached_only and not done:
                missing.append(f"{target} {model_name} s{seed} ({split})")
                continue
            losses, probs, y, t, info = mc_fit(target, model_name, seed, args)
            times.append(t)
            infos.append(f"{target} {model_name} s{seed}: {info}")
            stem = f"{target}_{model_name}_{seed}_{args.rows}_{args.n_boot}_{args.n_boot_ece}"
            stats_list.append(
                case_stats(
                    f"{target} {model_name} {seed}",
                    [(losses, probs, y)],
                    M_METHODS,
                    args.n_boot,
                    ece_methods,
                    args.n_boot_ece,
                    args.preds / f"mc_ece_{stem}",
                )  # fmt: skip
            )
            print(f"multiclass {split}: {target} {model_name} {seed} "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
        per_split[split] = stats_list
    parts = [
        "",
        "## Multiclass",
        "",
        'The default is `TemperatureBernsteinCalibrator(scaling="sms")`: our structured '
        "matrix scaling, then SMS itself, a temperature on its logits, or per-class "
        "Bernstein maps (the last only when they lower the 5-fold log loss by more than "
        "two standard errors). *previous default*: the same without the SMS stage. The "
        "tuning split chose this design (as a prototype on probmetrics' SMS); the held-out "
        "cases were not used for it.",
    ]
    time_col = {"mean fit time (s)": fit_times(times, M_METHODS)}
    for split, stats_list in [
        *per_split.items(),
        ("all cases pooled", [s for v in per_split.values() for s in v]),
    ]:
        ece = {m: f"{np.mean([s['ece_point'][m] for s in stats_list]):.4f}" for m in ece_methods}
        peers = [m for m in M_METHODS if m not in ours]
        parts += [
            "",
            f"### {split} ({len(stats_list)} cases)",
            "",
            rank_table(stats_list, M_METHODS, {"mean top-label smooth ECE": ece} | time_col),
            "",
            "Head to head, log loss:",
            "",
            h2h_table(stats_list, ours, peers, rank_of=ranks(stats_list, M_METHODS)),
            "",
            "Head to head, top-label smooth ECE (gap: ours - peer):",
            "",
            h2h_table(stats_list, ours, [p for p in peers if p in ece_methods], metric="ece"),
            "",
            "Targets (mean rank first; no loss beyond 2 SE in log loss or top-label smooth "
            "ECE against " + ", ".join(M_TARGET_PEERS) + "):",
            "",
            *target_lines(stats_list, "default", M_METHODS, M_TARGET_PEERS, both, None),
        ]
    if missing:
        parts += ["", "**Not run in time** (left out of every table above): " + ", ".join(missing)]
    parts += ["", "Choices per case:", "", *(f"- {i}" for i in infos)]
    return parts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, help="quality_study.py's cache of base scores")
    parser.add_argument("--preds", type=Path, required=True, help="cache of the fits' outputs")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="shared data folder")
    parser.add_argument("--max-rows", type=int, default=40_000, help="as quality_study.py")
    parser.add_argument("--rows", type=int, default=40_000, help="as multiclass_default.py")
    parser.add_argument(
        "--splits", default=",".join(SPLITS), help="binary splits, comma-separated"
    )
    parser.add_argument("--n-boot", type=int, default=200, help="bootstrap resamples")
    parser.add_argument("--n-boot-ece", type=int, default=100, help="of them, for the ECE")
    parser.add_argument("--skip", choices=("binary", "multiclass"), help="leave one part out")
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    parser.add_argument(
        "--cached-only", action="store_true", help="multiclass: only the cases fitted already"
    )
    parser.add_argument("--quick", action="store_true", help="credit seed 0; 2 multiclass cases")
    args = parser.parse_args(argv)
    args.splits = args.splits.split(",")
    if args.quick:
        SPLITS.clear()
        SPLITS["quick"] = (("credit",), (0,))
        args.splits, args.max_rows, args.rows, args.n_boot, args.n_boot_ece = (
            ["quick"], 4_000, 8_000, 50, 20
        )  # fmt: skip
    start = time.perf_counter()
    load = os.getloadavg()
    parts = [
        "# Head to head against CalArena's leaders",
        "",
        f"Written by `python benchmarks/quality/peers.py` ({now()}, {git_revision()}, "
        f"{machine()}; load average at start {load[0]:.1f}, one thread per fit). "
        f"{args.n_boot} paired bootstrap resamples over test rows (top-label smooth ECE: "
        f"the first {args.n_boot_ece}). probmetrics 1.3.0; fit times are noisy under the "
        "shared machine's load and include the 5-fold searches of ours and the prototypes.",
    ]
    with threadpoolctl.threadpool_limits(1):
        if args.skip != "binary":
            parts += binary_section(args)
        if args.skip != "multiclass":
            parts += multiclass_section(args)
    parts += ["", f"total {time.perf_counter() - start:.0f} s, load average at end "
              f"{os.getloadavg()[0]:.1f}"]  # fmt: skip
    text = "\n".join(parts) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
