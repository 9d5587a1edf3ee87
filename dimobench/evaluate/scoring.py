"""Metrics as small pure functions over answer rows (dicts as written to ``answers-<system>.jsonl``).

A row needs ``correct`` (bool, or None when unscored), ``chosen``, ``ask_turn``, ``qa_type``, ``phase``,
``persona_id``, ``trait_id``, ``stale_index`` and ``confounder_index``. Rows with ``correct is None`` are left
out of every rate. Every function returns None where its figure is undefined (no rows to average); all
figures are fractions in [0, 1] unless said otherwise, and higher is better except ``stale_rate``,
``confounder_rate`` and ``recovery_turns``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

Row = dict[str, Any]
METRIC_VERSION = "2"
"""2: ``by_phase`` counts a drift phase only for questions on the drifting trait (others: ``unaffected``)."""
HIGHER_IS_BETTER = {"overall": True, "plateau": True, "normalized": True, "stale_rate": False,
                    "confounder_rate": False, "recovery_turns": False}


def scored(rows: Iterable[Row]) -> list[Row]:
    """Rows whose correctness is known."""
    return [r for r in rows if r.get("correct") is not None]


def accuracy(rows: Sequence[Row]) -> float | None:
    """Share of scored rows answered correctly: ``sum(correct) / n``; None when ``n = 0``."""
    rs = scored(rows)
    return sum(bool(r["correct"]) for r in rs) / len(rs) if rs else None


def accuracy_by(rows: Sequence[Row], key: str) -> dict[str, float | None]:
    """Accuracy per value of ``key`` (``qa_type``, ``phase``, ...), keys sorted; None values become "none"."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in scored(rows):
        groups[str(r.get(key) or "none")].append(r)
    return {k: accuracy(v) for k, v in sorted(groups.items())}


def stale_rate(rows: Sequence[Row]) -> float | None:
    """Old-memory pull: among scored rows with a ``stale_index``, the share whose ``chosen == stale_index``."""
    rs = [r for r in scored(rows) if r.get("stale_index") is not None]
    return sum(r["chosen"] == r["stale_index"] for r in rs) / len(rs) if rs else None


def confounder_rate(rows: Sequence[Row]) -> float | None:
    """Premature correction: among rows with a ``confounder_index``, the share answered with it."""
    rs = [r for r in scored(rows) if r.get("confounder_index") is not None]
    return sum(r["chosen"] == r["confounder_index"] for r in rs) / len(rs) if rs else None


def window_accuracy(rows: Sequence[Row], window: int, total_turns: int) -> list[dict[str, Any]]:
    """Accuracy per window of ``window`` turns: windows ``[1, w], [w+1, 2w], ...`` up to ``total_turns``.

    Each entry is ``{start, end, n, accuracy}``; ``accuracy`` is None for a window without questions.
    """
    out = []
    for start in range(1, max(total_turns, 1) + 1, window):
        end = min(start + window - 1, total_turns)
        inside = [r for r in rows if start <= r["ask_turn"] <= end]
        out.append({"start": start, "end": end, "n": len(scored(inside)), "accuracy": accuracy(inside)})
    return out


def plateau(rows: Sequence[Row], total_turns: int, share: float = 0.2) -> float | None:
    """Accuracy over the last ``share`` of the timeline: questions with ``ask_turn > (1 - share) * T``."""
    cut = (1.0 - share) * total_turns
    return accuracy([r for r in rows if r["ask_turn"] > cut])


def recovery_turns(rows: Sequence[Row], change_points: Sequence[dict[str, Any]], total_turns: int,
                   window: int = 50, tolerance: float = 0.05,
                   levels: Sequence[float | None] | None = None) -> list[int | None]:
    """Turns from each change point until accuracy on that trait recovers.

    ``levels`` (one per change point, see :func:`recovery_levels`) is the accuracy to reach, the same for every
    system; without it each system's own final plateau minus ``tolerance`` is the target, as below, which lets a
    system that plateaus low "recover" early.

    For a change point ``{persona_id, trait_id, turn, next_turn}`` (``next_turn``: the trait's next change
    point or the end), take that persona's questions on that trait. The target is their accuracy in the last
    20% of the timeline (the final plateau) minus ``tolerance``; when no question falls there, the plateau of
    all of that persona's questions is used. Windows of ``window`` turns start right after the change point;
    the result is ``end of the first window whose accuracy >= target - turn`` (a window with no questions is
    skipped; questions after ``next_turn`` never count), or None when no window before ``next_turn`` reaches it.
    """
    out: list[int | None] = []
    for i, cp in enumerate(change_points):
        mine = [r for r in scored(rows) if r["persona_id"] == cp["persona_id"] and r["trait_id"] == cp["trait_id"]]
        if levels is not None:
            target = levels[i]
            final = None if target is None else target + tolerance
        else:
            final = plateau(mine, total_turns)
            if final is None:
                final = plateau([r for r in rows if r["persona_id"] == cp["persona_id"]], total_turns)
        if final is None:
            out.append(None)
            continue
        found: int | None = None
        start, stop = cp["turn"] + 1, cp.get("next_turn", total_turns)
        while start <= stop:
            end = start + window - 1
            acc = accuracy([r for r in mine if start <= r["ask_turn"] <= min(end, stop)])
            if acc is not None and acc >= final - tolerance:
                found = end - cp["turn"]
                break
            start = end + 1
        out.append(found)
    return out


RECOVERY_SHARE = 0.5
"""Recovered means closing this share of the gap between ``none`` and ``oracle`` on the changed trait."""


def recovery_levels(oracle: Sequence[Row], none: Sequence[Row] | None, change_points: Sequence[dict[str, Any]],
                    total_turns: int) -> list[float | None]:
    """Per change point, the accuracy every system must reach on that trait to count as recovered.

    ``none + RECOVERY_SHARE * (oracle - none)`` of the two reference systems' plateaus (accuracy on the trait's
    questions in the last 20% of the timeline; the whole timeline when none falls there); without ``none`` rows,
    ``RECOVERY_SHARE * oracle``.
    """
    def level(rows: Sequence[Row], cp: dict[str, Any]) -> float | None:
        mine = [r for r in scored(rows) if r["persona_id"] == cp["persona_id"] and r["trait_id"] == cp["trait_id"]]
        got = plateau(mine, total_turns)
        return got if got is not None else accuracy(mine)

    out: list[float | None] = []
    for cp in change_points:
        top = level(oracle, cp)
        low = level(none, cp) if none is not None else 0.0
        out.append(None if top is None or low is None else round(low + RECOVERY_SHARE * (top - low), 4))
    return out


def normalized(system: float | None, none: float | None, oracle: float | None) -> float | None:
    """``(system - none) / (oracle - none)``: 0 = no memory, 1 = oracle; None if any is missing or oracle <= none."""
    if system is None or none is None or oracle is None or oracle - none <= 1e-12:
        return None
    return (system - none) / (oracle - none)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation) of ``values``; None when empty."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None


def bootstrap_ci(rows: Sequence[Row], stat: Callable[[Sequence[Row]], float | None], n: int = 1000,
                 seed: int = 0, level: float = 0.95) -> list[float] | None:
    """Percentile bootstrap interval of ``stat``: resample rows with replacement ``n`` times (seeded).

    Resamples where ``stat`` is undefined are dropped; None when fewer than 2 rows or no defined resample.
    """
    if len(rows) < 2 or n <= 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(rows), size=(n, len(rows)))
    vals = [v for v in (stat([rows[i] for i in row]) for row in idx) if v is not None]
    if not vals:
        return None
    a = (1.0 - level) / 2.0
    return [float(np.quantile(vals, a)), float(np.quantile(vals, 1.0 - a))]


def bootstrap_rate_ci(hits: Sequence[bool], n: int = 1000, seed: int = 0,
                      level: float = 0.95) -> list[float] | None:
    """Fast percentile bootstrap of a mean of 0/1 values (same resampling as :func:`bootstrap_ci`)."""
    if len(hits) < 2 or n <= 0:
        return None
    x = np.asarray(hits, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n, len(x)))].mean(axis=1)
    a = (1.0 - level) / 2.0
    return [float(np.quantile(means, a)), float(np.quantile(means, 1.0 - a))]


def paired_bootstrap(a: Sequence[bool], b: Sequence[bool], n: int = 1000, seed: int = 0,
                     level: float = 0.95) -> dict[str, float | None]:
    """Difference ``mean(b) - mean(a)`` over paired questions, with a percentile interval from resampling pairs.

    Returns ``{diff, lo, hi, n}``; ``lo``/``hi`` are None with fewer than 2 pairs or ``n`` 0 (no resampling).
    """
    if len(a) != len(b):
        raise ValueError("paired_bootstrap needs equally long sequences")
    if not a:
        return {"diff": None, "lo": None, "hi": None, "n": 0}
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if len(d) < 2 or n < 1:
        return {"diff": float(d.mean()), "lo": None, "hi": None, "n": len(d)}
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    al = (1.0 - level) / 2.0
    return {"diff": float(d.mean()), "lo": float(np.quantile(means, al)), "hi": float(np.quantile(means, 1.0 - al)),
            "n": len(d)}


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of ``counts[i][j]``: raters who put item ``i`` in category ``j`` (same rater count per item).

    With N items, n raters and k categories: ``P_i = (sum_j n_ij^2 - n) / (n (n - 1))`` is the agreement on
    item i, ``P = mean_i P_i`` the observed agreement, ``p_j = sum_i n_ij / (N n)`` the share of category j
    and ``P_e = sum_j p_j^2`` the agreement expected by chance; ``kappa = (P - P_e) / (1 - P_e)``. 1 is perfect
    agreement, 0 chance level, negative worse than chance. For two raters it is Scott's pi.

    Edge cases: no items, fewer than 2 raters or unequal rater counts -> None; every rating in one category
    -> ``P_e = 1`` and kappa is 0/0: None.
    """
    if not counts:
        return None
    table = np.asarray(counts, dtype=np.float64)
    n = table.sum(axis=1)
    if n[0] < 2 or not np.all(n == n[0]):
        return None
    raters = float(n[0])
    p_item = ((table ** 2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_cat = table.sum(axis=0) / table.sum()
    p_e = float((p_cat ** 2).sum())
    if p_e >= 1 - 1e-12:
        return None
    return (float(p_item.mean()) - p_e) / (1 - p_e)


def judge_agreement(rows: Sequence[Row]) -> dict[str, Any] | None:
    """Agreement of the free-text judges over rows where every judge voted (``row["judges"]``, a list of votes
    ``{"judge", "match"}`` with ``match`` a reference letter or ``none``, None when the call failed).

    Returns ``{judges, n, unanimous, fleiss_kappa, cohen_kappa}``: ``n`` counts the items every judge labelled,
    ``unanimous`` is the share of them on which all judges gave the same label, ``fleiss_kappa`` is
    :func:`fleiss_kappa` over the labels used (both None for a single judge), and ``cohen_kappa`` maps
    ``"a | b"`` to Cohen's kappa of each pair (None where undefined, e.g. both judges constant). None when no
    row carries judge votes.
    """
    from dimobench.agreement import cohen_kappa

    voted = [r for r in rows if r.get("judges")]
    if not voted:
        return None
    judges = [v["judge"] for v in voted[0]["judges"]]
    full = [[v["match"] for v in r["judges"]] for r in voted
            if len(r["judges"]) == len(judges) and all(v["match"] is not None for v in r["judges"])]
    labels = sorted({x for votes in full for x in votes})
    several = len(judges) > 1 and bool(full)
    out: dict[str, Any] = {"judges": judges, "n": len(full),
                           "unanimous": sum(len(set(v)) == 1 for v in full) / len(full) if several else None,
                           "fleiss_kappa": fleiss_kappa([[v.count(c) for c in labels] for v in full])
                           if several else None, "cohen_kappa": {}}
    for i in range(len(judges)):
        for j in range(i + 1, len(judges)):
            kappa = cohen_kappa([v[i] for v in full], [v[j] for v in full]).value
            out["cohen_kappa"][f"{judges[i]} | {judges[j]}"] = kappa
    return out
