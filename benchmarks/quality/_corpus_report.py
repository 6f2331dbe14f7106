"""The corpus study's results page (``corpus_study.py``): ranks and head-to-head counts.

A case is (table, base model); its metric is the seed-average of the test metric and its
standard errors come from the paired bootstrap over each seed's test rows
(``_headtohead.case_stats``). Every table is given for the tuning and the reporting
tables separately (``_corpus_tables.py``).
"""

from __future__ import annotations

import os
import time

import _corpus_rules as rules
import _corpus_tables as ct
import _methods as mt
import numpy as np
from _harness import git_revision, machine
from _headtohead import case_stats, fmt_gap, gap, ranks

B_TARGET_PEERS = (
    "Beta", "quadratic scaling", "affine scaling", "Venn-Abers (IVAP)", "MLI spline", "SMS",
    "sklearn sigmoid", "sklearn isotonic",
)  # fmt: skip
M_TARGET_PEERS = (
    "SMS", "SVS", "matrix scaling", "vector scaling", "temperature scaling", "uncalibrated",
)  # fmt: skip
B_OURS = ("default", "Platt (ours)", "Beta (ours)", "quadratic (ours)", "Venn-Abers (ours)",
          "isotonic (ours)", "stack (ours)")  # fmt: skip
#: the chosen rule as the library ships it (``StackedCalibrator``): ``stack-noid`` with the
#: default's log-odds bound, ``stack-noid-b15`` (taken by the criterion in ``_corpus_rules``)
SHIPPED_RULE = "stack (ours)"
SHIPPED_TWIN = "stack-noid-b15"
#: rules that are (nearly) the shipped calibrator: ranked in a field without it, where
#: the two would split their ranks
TWINS = {"stack-noid": SHIPPED_RULE, SHIPPED_TWIN: SHIPPED_RULE}


def joined(field, e):
    """``field`` with ``e`` added and ``e``'s twin (if any) left out."""
    return [m for m in field if m != TWINS.get(e)] + ([] if e in field else [e])


B_FIELD = ("uncalibrated", "sklearn sigmoid", "sklearn isotonic", "sklearn temperature",
           *mt.BINARY_PEERS, *B_OURS)  # fmt: skip
M_OURS = ("default", "temperature (ours)", "vector (ours)", "matrix (ours)", "SVS (ours)",
          "SMS (ours)")  # fmt: skip
M_FIELD = ("uncalibrated", "sklearn sigmoid", "sklearn isotonic", "sklearn temperature",
           *mt.MULTICLASS_PEERS, *M_OURS)  # fmt: skip


def stats_of(fits, kind, args):
    """(table, model) -> case statistics; fits: per seed (probs, seconds, y, info)."""
    from corpus_study import row_losses

    out = {}
    for (k, table, model), per_seed in fits.items():
        if k != kind:
            continue
        name = f"{table} {model}"
        methods = list(per_seed[0][0])
        seeds = [(row_losses(p, y), p, y) for p, _, y, _ in per_seed]
        st = case_stats(name, seeds, methods, args.n_boot)
        st["reorders"] = {
            k[9:] for _, _, _, info in per_seed for k in info if k[:9] == "reorders:"
        }
        if kind == "multiclass":  # top-label smooth ECE (the slow part): first seed only
            from corpus_study import LIB_HASH

            (args.cache / "ece").mkdir(parents=True, exist_ok=True)
            st["ece_point"], st["ece_boot"] = {}, {}
            for group, tag in ((M_OURS, f"_{LIB_HASH}"), (None, "")):
                ms = [m for m in methods if (m in M_OURS) == (group is not None)]
                first = case_stats(
                    name, seeds[:1], ms, args.n_boot, ece_methods=ms,
                    n_boot_ece=args.n_boot_ece,
                    ece_cache=args.cache / "ece" / f"{table}_{model}{tag}",
                )  # fmt: skip
                st["ece_point"] |= first["ece_point"]
                st["ece_boot"] |= first["ece_boot"]
        out[(table, model)] = st
    return out


def h2h(stats_list, a, b, metric="log loss"):
    g = np.array([gap(s, a, b, metric) for s in stats_list])
    if g.size == 0:
        return {"wins": 0, "n": 0, "l2": 0, "l3": 0, "mean": np.nan}
    tie = 1e-12
    reorders = np.array([b in s.get("reorders", ()) for s in stats_list])
    l2 = (g[:, 0] > 2 * g[:, 1]) & (g[:, 0] > tie)
    return {
        "wins": int(np.sum(g[:, 0] < -tie)),
        "n": len(g),
        "l2": int(np.sum(l2)),
        "l2r": int(np.sum(l2 & reorders)),
        "l3": int(np.sum((g[:, 0] > 3 * g[:, 1]) & (g[:, 0] > tie))),
        "mean": g[:, 0].mean(),
    }


def h2h_table(stats_list, ours, peers, metric="log loss"):
    head = ["peer", *(f"{o}: wins / n, losses > 2 SE, > 3 SE, mean gap" for o in ours)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in peers:
        cells = [p]
        for o in ours:
            h = h2h(stats_list, o, p, metric)
            share = 100 * h["wins"] / max(h["n"], 1)
            cells.append(
                f"{h['wins']} / {h['n']} ({share:.0f}%), {h['l2']}, {h['l3']}, "
                f"{fmt_gap(h['mean'], metric)}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ece_ranks(stats_list, methods):
    from scipy.stats import rankdata

    r = [rankdata([s["ece_point"][m] for m in methods]) for s in stats_list]
    return dict(zip(methods, np.mean(r, axis=0), strict=True))


def rank_table(stats_list, field, extra_methods=(), ece=False):
    """Every method of ``field`` by mean rank; each of ``extra_methods`` ranked in the field
    alone (its rank when it joins the field), never against the other extras."""
    r = ranks(stats_list, list(field))
    for e in extra_methods:
        r[e] = ranks(stats_list, joined(field, e))[e]
    rows = list(field) + list(extra_methods)
    ll = {m: np.mean([s["point"][s["methods"].index(m)] for s in stats_list]) for m in rows}
    head = ["method", "mean rank (log loss)", "mean log loss"]
    if ece:
        re = ece_ranks(stats_list, list(field))
        head += ["mean rank (top-label smooth ECE)", "mean smooth ECE"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in sorted(rows, key=r.get):
        tag = " (post-hoc rule)" if m in rules.POST_HOC else " (rule)"
        cells = [m + (tag if m in extra_methods else ""), f"{r[m]:.2f}", f"{ll[m]:.5f}"]
        if ece:
            cells += [f"{re[m]:.2f}", f"{np.mean([s['ece_point'][m] for s in stats_list]):.4f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_table(stats, tables, models, field, ours, peers, metric="log loss"):
    """Per table: our methods' mean rank in the field, best method, losses beyond 2 / 3 SE."""
    head = ["table", *(f"{o}: mean rank, losses > 2 SE / > 3 SE" for o in ours), "best (rank)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in tables:
        sl = [stats[(t, m)] for m in models if (t, m) in stats]
        if not sl:
            continue
        r = ranks(sl, list(field))
        cells = [t]
        for o in ours:
            ro = r[o] if o in r else ranks(sl, joined(field, o))[o]
            ls = [h2h(sl, o, p, metric) for p in peers]
            cells.append(f"{ro:.2f}, {sum(h['l2'] for h in ls)} / {sum(h['l3'] for h in ls)}")
        best = min(field, key=r.get)
        cells.append(f"{best} ({r[best]:.2f})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def loss_list(stats, keys, o, peers, metric="log loss"):
    found = []
    for key in keys:
        if key not in stats:
            continue
        for p in peers:
            g, se = gap(stats[key], o, p, metric)
            if g > 2 * se and g > 1e-12:
                mark = "*" if p in stats[key].get("reorders", ()) else ""
                found.append(
                    f"{' '.join(key)} vs {p}{mark}: {fmt_gap(g, metric)} ({g / se:.1f} SE)"
                )
    return "; ".join(found) if found else "none"


def verdict(stats_list, o, field, peers, metrics_, min_wins=True):
    """The issue's targets (binary: with ``min_wins``, 60% wins against each peer)."""
    r = ranks(stats_list, joined(field, o))
    first = min(r, key=r.get) == o
    fails = [] if first else [f"mean rank {r[o]:.2f}, first is {min(r, key=r.get)}"]
    for metric in metrics_:
        for p in peers:
            h = h2h(stats_list, o, p, metric)
            if min_wins and metric == "log loss" and h["wins"] < 0.6 * h["n"]:
                fails.append(f"wins {h['wins']}/{h['n']} vs {p}")
            if h["l2"] > 0.05 * h["n"] or h["l3"]:
                r = f", {h['l2r']} where {p} reorders the rows" if h["l2r"] else ""
                fails.append(f"{h['l2']} > 2 SE ({h['l3']} > 3 SE{r}) vs {p} ({metric})")
    return fails


def _rules_text():
    """The rules module's description of its members and rules, as markdown."""
    doc = rules.__doc__.split("\n\n", 1)[1].replace("``", "`")
    return "Selection rules (study code, `_corpus_rules.py`). " + doc.strip()


def choose_rule(stats_list, field, peers):
    """Tuning tables only: the rule with the fewest losses beyond 2 SE against ``peers``
    (log loss), then the fewest beyond 3 SE, then the largest smallest win count against
    a peer, then the best mean rank in the field. Returns (rule, markdown table)."""
    rows = []
    for v in rules.RULES:
        hs = [h2h(stats_list, v, p) for p in peers]
        rank = ranks(stats_list, joined(field, v))[v]
        l2, l3 = sum(h["l2"] for h in hs), sum(h["l3"] for h in hs)
        rows.append((l2, l3, -min(h["wins"] for h in hs), rank, v))
    rows.sort()
    n = len(stats_list)
    table = ["| rule | losses > 2 SE vs the peers | > 3 SE | fewest wins vs a peer | "
             "mean rank |", "|---|---|---|---|---|"]  # fmt: skip
    table += [f"| {v} | {a} | {b} | {-c} / {n} | {d:.2f} |" for a, b, c, d, v in rows]
    return rows[0][4], "\n".join(table)


def member_table(stats, keys, peers):
    """Our members against the default on the cases where it loses beyond 2 SE."""
    members = [m for m in B_OURS if m != "default"]
    head = ["case (default loses beyond 2 SE)", *(f"{m} vs default" for m in members)]
    lines = ["Our members where the default loses (test log loss gap, its SE):", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]  # fmt: skip
    for key in keys:
        st = stats[key]
        if not any(gap(st, "default", p)[0] > 2 * gap(st, "default", p)[1] for p in peers):
            continue
        cells = [" ".join(key)]
        for m in members:
            g, se = gap(st, m, "default")
            cells.append(f"{fmt_gap(g, 'log loss')} ({100 * se:.2f}%)")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def time_table(fits, kind, methods):
    """Median fit seconds over every fit of ``kind`` (under the load the header gives)."""
    secs = {m: [] for m in methods}
    for (k, _, _), per_seed in fits.items():
        if k == kind:
            for _, seconds, _, _ in per_seed:
                for m in methods:
                    if m in seconds:
                        secs[m].append(seconds[m])
    base = np.median(secs["default"])
    lines = ["| method | median fit seconds | / default's |", "|---|---|---|"]
    for m in methods:
        if secs[m]:
            med = np.median(secs[m])
            lines.append(f"| {m} | {med:.4f} | {med / base:.2f} |")
    return "\n".join(lines)


def render(fits, args):
    from corpus_study import ISSUE_MODELS, MC_MODELS

    lines = [
        "# Corpus study: 22 corpus tables and the four shared ones",
        "",
        f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {git_revision()}, "
        f"{machine()}, load average {os.getloadavg()[0]:.1f}. Seeds {list(args.seeds)}; "
        f"rows per fit capped at {args.caps['train']} train / {args.caps['cal']} calibration "
        f"/ {args.caps['test']} test; {args.n_boot} paired bootstrap resamples of the test "
        f"rows (multiclass smooth ECE: {args.n_boot_ece}, first seed).",
        "",
        f"Binary tuning tables: {', '.join(ct.BINARY_TUNING)}.",
        f"Binary reporting tables: {', '.join(ct.BINARY_REPORTING)}.",
        f"Multiclass tuning tables: {', '.join(ct.MULTICLASS_TUNING)}.",
        f"Multiclass reporting tables: {', '.join(ct.MULTICLASS_REPORTING)}.",
        "",
    ]
    kinds = [k for k in ("binary", "multiclass") if any(key[0] == k for key in fits)]
    for kind in kinds:
        stats = stats_of(fits, kind, args)
        binary = kind == "binary"
        field = B_FIELD if binary else M_FIELD
        peers = B_TARGET_PEERS if binary else M_TARGET_PEERS
        models = ISSUE_MODELS if binary else MC_MODELS
        chosen = None
        if binary:
            # the rules are chosen and ranked in the field without the shipped rule, whose
            # twin among them would split its ranks
            rule_field = tuple(m for m in field if m != SHIPPED_RULE)
            tune = [stats[(t, m)] for t in ct.BINARY_TUNING for m in models if (t, m) in stats]
            chosen, choice_table = choose_rule(tune, rule_field, peers)
        metrics_ = ("log loss",) if binary else ("log loss", "smooth ECE")
        split = {
            "tuning": ct.BINARY_TUNING if binary else ct.MULTICLASS_TUNING,
            "reporting": ct.BINARY_REPORTING if binary else ct.MULTICLASS_REPORTING,
        }
        lines += [f"## {kind.capitalize()}", ""]
        if binary:
            lines += [
                _rules_text(),
                "",
                "Choice of the rule, on the tuning tables only "
                f"(`_corpus_report.choose_rule`): **{chosen}**.",
                "",
                choice_table,
                "",
            ]
        for part, tables in split.items():
            if part not in args.parts:
                continue
            keys = [(t, m) for t in tables for m in models if (t, m) in stats]
            sl = [stats[k] for k in keys]
            if not sl:
                continue
            # every rule on the tuning tables; on the reporting tables only the chosen one
            # post-hoc rules (written after the reporting tables were seen) are shown
            # apart and never chosen
            # on the tuning tables every rule, in the field without the shipped one; on the
            # reporting tables the chosen rule as the library ships it (StackedCalibrator,
            # in the field) when it is the shipped one, else the chosen rule
            part_field, extras, ours = field, (), ("default",)
            if binary and part == "tuning":
                part_field, extras = rule_field, rules.RULES
                ours = ("default", chosen)
            elif binary:
                # the shipped stack in the field; the chosen rule as chosen (no bound: the
                # held-out result) beside it; the bound's own rule is the shipped stack
                extras, ours = (chosen,), ("default", SHIPPED_RULE, chosen)
            post_hoc = tuple(m for m in rules.POST_HOC if part == "tuning" or m != SHIPPED_TWIN)
            extras += post_hoc if binary else ()
            ours += post_hoc if binary else ()
            lines += [f"### {kind.capitalize()}, {part} tables ({len(sl)} cases)", ""]
            if binary and SHIPPED_RULE in ours:
                lines += [_twin_note(fits), ""]
            for o in ours:
                fails = verdict(sl, o, part_field, peers, metrics_, min_wins=binary)
                status = "targets met" if not fails else "not met: " + "; ".join(fails)
                lines += [f"- **{o}**: {status}."]
            lines += ["", rank_table(sl, part_field, extras, ece=not binary), ""]
            for metric in metrics_:
                lines += [f"Head to head in {metric} (a loss: worse than the peer by more "
                          f"than 2 or 3 bootstrap standard errors):", ""]  # fmt: skip
                lines += [h2h_table(sl, ours, peers, metric), ""]
            lines += ["Per table (ranks in the field over its base models; losses against "
                      "the target peers, log loss):", ""]  # fmt: skip
            lines += [per_table(stats, tables, models, part_field, ours, peers), ""]
            for o in ours:
                for metric in metrics_:
                    note = "" if not binary else (
                        "; `*`: the peer's map is not monotone on that case's test rows: it "
                        "reorders at least one pair, which no strictly increasing "
                        "calibrator can do")  # fmt: skip
                    lines += [f"Losses beyond 2 SE of {o} ({metric}{note}): "
                              f"{loss_list(stats, keys, o, peers, metric)}.", ""]  # fmt: skip
            if binary:
                lines += [member_table(stats, keys, peers), ""]
        timed = [m for m in field if m != "uncalibrated" and not m.startswith("sklearn")]
        timed += [chosen] if chosen else []
        lines += [f"### {kind.capitalize()} fit times", "",
                  "Wall-clock seconds of one calibrator fit and prediction on the capped "
                  "rows (every case, every seed), measured when the caches were filled "
                  "on the shared 2-core machine at load averages of about 1 to 9 (the "
                  "other helpers' jobs): compare within this table only, never as "
                  "absolute figures. A rule's time is the sum of its members' fold and "
                  "full fits. Multiclass: ours go through `CalibratedClassifier` on the "
                  "frozen pipeline, so their time includes the model's prediction of the "
                  "calibration and test rows; the peers read cached probabilities.", "",
                  time_table(fits, kind, timed), ""]  # fmt: skip
    return "\n".join(lines) + "\n"


def _twin_note(fits):
    """How far the shipped stack's test probabilities are from the study's rule."""
    gaps = [
        float(np.max(np.abs(probs[SHIPPED_RULE] - probs[SHIPPED_TWIN])))
        for (kind, _, _), runs in fits.items()
        if kind == "binary"
        for probs, *_ in runs
    ]
    return (
        f"`{SHIPPED_RULE}` is `StackedCalibrator()` fitted as `CalibratedClassifier` fits it: "
        f"the chosen rule `stack-noid` with the default's log-odds bound, `{SHIPPED_TWIN}`, "
        f"which the library took by the criterion written in `_corpus_rules.py` (met on the "
        f"tuning tables). Its test probabilities equal `{SHIPPED_TWIN}`'s within "
        f"{max(gaps):.1e} on every fit ({len(gaps)} fits; median {np.median(gaps):.1e}). The "
        "bound was written after these tables showed `stack-noid` giving probabilities of "
        "exactly 0 and 1, so its figures here are post hoc; `stack-noid`, the rule as "
        "chosen, is the held-out result, and is shown beside it (each ranked in the field "
        "without the other)."
    )
