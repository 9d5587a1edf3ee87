"""Evidence recall@k at turn level, for imported suites (DESIGN.md section 9). A pure function, no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

METRIC_VERSION = 1
HIGHER_IS_BETTER = True


def evidence_recall(records: Iterable[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """Share of each question's evidence turns found among the ``source_turns`` of its top-k recalled items.

    Each record describes one question:

    - ``evidence_turns``: the gold evidence turn numbers (duplicates count once);
    - ``source_type``: the source benchmark's category (``None`` is reported as ``"none"``);
    - ``recalled_source_turns``: one list of turn numbers per recalled item, in rank order (best first),
      i.e. ``[item["source_turns"] for item in system.recall(query, k)]``.

    Formula, per question q with evidence set E_q and recalled items r_1, r_2, ... in rank order::

        recall_q = |E_q ∩ (S(r_1) ∪ ... ∪ S(r_k))| / |E_q|

    where S(r) is an item's ``source_turns``. ``value`` is the unweighted mean of recall_q over the scored
    questions, and ``by_type[t]`` the same mean over the scored questions of source type t.

    Edge cases:

    - A question with no evidence turns has no defined recall: it is skipped and counted in ``skipped``.
    - Items past rank k are ignored; fewer than k items (or none) are fine (missing items recall nothing).
    - An item without source turns contributes nothing; turns outside E_q do not lower the score (this is
      recall, not precision).
    - With no scored question at all, ``value`` is ``None`` and ``by_type`` is empty.

    Args:
        records: One mapping per question, as above.
        k: How many top-ranked items count (at least 1).

    Returns:
        ``{"k": k, "value": float | None, "by_type": {source_type: float}, "questions": scored count,
        "skipped": count of questions without evidence}``.

    Raises:
        ValueError: ``k`` is below 1.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    scores: list[float] = []
    by_type: dict[str, list[float]] = {}
    skipped = 0
    for rec in records:
        evidence = {int(t) for t in rec.get("evidence_turns") or ()}
        if not evidence:
            skipped += 1
            continue
        items: Sequence[Iterable[int]] = rec.get("recalled_source_turns") or ()
        found: set[int] = set()
        for turns in list(items)[:k]:
            found.update(int(t) for t in turns or ())
        score = len(evidence & found) / len(evidence)
        scores.append(score)
        by_type.setdefault(str(rec.get("source_type") or "none"), []).append(score)
    return {
        "k": k,
        "value": sum(scores) / len(scores) if scores else None,
        "by_type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())},
        "questions": len(scores),
        "skipped": skipped,
    }
