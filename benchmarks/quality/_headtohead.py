"""Paired bootstrap head-to-head statistics and their markdown tables (``peers.py``).

A case holds one fit per seed (binary: the quality study's (table, model) pairs, three
seeds; multiclass: one fit). Its metric per method is the seed-average of the test log
loss. Resamples draw each seed's test rows with replacement, the same rows for every
method (paired), as ``quality_floor.py`` does; a gap of A against B is
``metric_A / metric_B - 1`` (log loss) or ``metric_A - metric_B`` (smooth ECE), its
standard error the standard deviation of the resampled gaps.
"""

from __future__ import annotations

import zlib

import numpy as np
from quality_floor import resample_counts
from scipy.stats import rankdata

from bernonnx.metrics import top_label_smooth_calibration_error


def case_rng(name):
    """The resamples of a case: its own seed, so a rerun or a part run draws the same rows."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def _ece_path(prefix, method):
    return prefix.with_name(f"{prefix.name}__{method.replace(' ', '_')}.npz")


def _ece_cached(prefix, method):
    """(point, resamples) of a method's smooth ECE stored under ``prefix``, or None."""
    if prefix is None:
        return None
    whole = prefix.with_name(prefix.name + ".npz")  # one file for several methods
    if whole.is_file():
        with np.load(whole) as f:
            if f"point:{method}" in f.files:
                return float(f[f"point:{method}"]), f[f"boot:{method}"]
    one = _ece_path(prefix, method)
    if one.is_file():
        with np.load(one) as f:
            return float(f["point"]), f["boot"]
    return None


def case_stats(name, fits, methods, n_boot, ece_methods=(), n_boot_ece=0, ece_cache=None):
    """Point and resampled metrics of one case; ``fits``: per seed ``(losses, probs, y)``.

    The top-label smooth ECE (multiclass: one fit per case) is stored under the path
    prefix ``ece_cache`` once per method: it is the slow part.
    """
    rng = case_rng(name)
    point, boot = [], []
    ece_point, ece_boot = {}, {}
    for losses, probs, y in fits:
        L = np.stack([losses[m] for m in methods])
        n = L.shape[1]
        counts = resample_counts(n, rng, n_boot)
        point.append(L.mean(axis=1))
        boot.append(counts @ L.T / n)
        for m in ece_methods:
            cached = _ece_cached(ece_cache, m)
            if cached is None:
                cached = (
                    top_label_smooth_calibration_error(y, probs[m]),
                    np.array(
                        [
                            top_label_smooth_calibration_error(y, probs[m], sample_weight=w)
                            for w in counts[:n_boot_ece]
                        ]
                    ),
                )
                if ece_cache is not None:
                    np.savez(_ece_path(ece_cache, m), point=cached[0], boot=cached[1])
            ece_point[m], ece_boot[m] = float(cached[0]), cached[1]
    return {
        "name": name,
        "methods": list(methods),
        "point": np.mean(point, axis=0),
        "boot": np.mean(boot, axis=0),
        "ece_point": ece_point,
        "ece_boot": ece_boot,
    }


#: gaps this small are rounding (two methods giving the same probabilities): ties
TIE = 1e-12


def is_loss(g, se):
    """Worse by more than two standard errors (and more than rounding)."""
    return (g > 2 * se) & (g > TIE)


def gap(stats, a, b, metric="log loss"):
    """(gap of a against b, its bootstrap standard error)."""
    if metric == "log loss":
        i, j = stats["methods"].index(a), stats["methods"].index(b)
        g = stats["point"][i] / stats["point"][j] - 1.0
        se = (stats["boot"][:, i] / stats["boot"][:, j] - 1.0).std(ddof=1)
        return g, se
    g = stats["ece_point"][a] - stats["ece_point"][b]
    return g, (stats["ece_boot"][a] - stats["ece_boot"][b]).std(ddof=1)


def ranks(stats_list, methods):
    """Mean rank (1: lowest log loss) of each of ``methods`` over the cases."""
    r = []
    for s in stats_list:
        v = np.array([s["point"][s["methods"].index(m)] for m in methods])
        r.append(rankdata(v))  # ties share their mean rank
    return dict(zip(methods, np.mean(r, axis=0), strict=True))


def head_to_head(stats_list, a, b, metric="log loss"):
    """Wins of a (gap below zero, beyond rounding), losses beyond 2 SE, mean gap."""
    g = np.array([gap(s, a, b, metric) for s in stats_list])
    wins = int(np.sum(g[:, 0] < -TIE))
    losses = int(np.sum(is_loss(g[:, 0], g[:, 1])))
    return {"wins": wins, "n": len(g), "losses": losses, "mean": g[:, 0].mean()}


def fmt_gap(x, metric):
    return f"{100 * x:+.3f}%" if metric == "log loss" else f"{x:+.4f}"


def h2h_table(stats_list, ours, peers, metric="log loss", rank_of=None):
    """Rows: peers; per method of ours: wins / n, 2-SE losses, mean gap."""
    head = ["peer", *(f"{o}: wins / losses > 2 SE / mean gap" for o in ours)]
    if rank_of is not None:
        head.append("peer's mean rank")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in peers:
        cells = [p]
        for o in ours:
            h = head_to_head(stats_list, o, p, metric)
            cells.append(f"{h['wins']} / {h['n']}, {h['losses']}, {fmt_gap(h['mean'], metric)}")
        if rank_of is not None:
            cells.append(f"{rank_of[p]:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rank_table(stats_list, methods, extra=None):
    """All methods by mean rank; ``extra``: name -> {method: text} further columns."""
    r = ranks(stats_list, methods)
    mean_ll = {
        m: np.mean([s["point"][s["methods"].index(m)] for s in stats_list]) for m in methods
    }
    head = ["method", "mean rank", "mean log loss", *(extra or {})]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in sorted(methods, key=r.get):
        cells = [m, f"{r[m]:.2f}", f"{mean_ll[m]:.5f}"]
        cells += [col.get(m, "") for col in (extra or {}).values()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
