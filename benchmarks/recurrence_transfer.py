"""Does the direction of ``option_recurrence`` carry from one set of suites to another, trait by trait?

``dimobench audit``'s ``option_recurrence`` picks the option whose words recur most (or least, one direction
learned on the training suites) among the options of the persona's other questions on the same trait. A
stronger attacker learns the direction *per trait*: if a trait's gold state tends to have the more (or less)
repetitive wording, that survives from seed to seed and scores above chance on suites never seen. This learns
each trait's direction on the ``--train`` suites and scores the ``--test`` suites with it, beside the two
single directions. Session 24: learned on 2411-2416, 0.212 pooled on 2441-2446, and 0.211 the other way round:
below chance, so what a trait's direction is on one seed set does not carry to the next, and an attacker
cannot learn it. The single direction's sign also flips between the two sets; the questions of one persona and
trait share their states, so each set holds only ~180 independent units and both departures from 0.25 are
within about 1.5 of their standard errors.

Prints JSON. Run: ``.venv/bin/python benchmarks/recurrence_transfer.py --train S1 S2 ... --test T1 T2 ...``
(suite folders; seconds).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from dimobench.audit.attacks import recurrence_values

Row = tuple[str, list[float], int]
"""(trait id, each option's recurrence, the gold's index)."""


def rows(suite: Path) -> list[Row]:
    """Every question of ``suite`` with its options' recurrence, as the audit counts it."""
    qa = [json.loads(line) for line in (suite / "qa.jsonl").read_text(encoding="utf-8").splitlines() if line]
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for q in qa:
        if q.get("trait_id"):
            groups[(q["persona_id"], q["trait_id"])].append(q)
    out = []
    for group in groups.values():
        for q, values in zip(group, recurrence_values([q["options"] for q in group]), strict=True):
            out.append((q["trait_id"], values, q["answer_index"]))
    return out


def accuracy(items: list[Row], direction: dict[str, int], default: int) -> float:
    """Share of items whose gold has the highest recurrence times its trait's direction (ties: first option)."""
    hits = 0
    for trait, values, gold in items:
        d = direction.get(trait, default)
        hits += max(range(len(values)), key=lambda i: (d * values[i], -i)) == gold
    return hits / len(items) if items else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=Path, nargs="+", required=True)
    ap.add_argument("--test", type=Path, nargs="+", required=True)
    args = ap.parse_args()
    train = [r for s in args.train for r in rows(s)]
    direction = {}
    for trait in sorted({r[0] for r in train}):
        mine = [r for r in train if r[0] == trait]
        direction[trait] = 1 if accuracy(mine, {}, 1) >= accuracy(mine, {}, -1) else -1
    per_suite = {}
    for s in args.test:
        test = rows(s)
        per_suite[s.name] = {"per_trait": round(accuracy(test, direction, 1), 4),
                             "most": round(accuracy(test, {}, 1), 4), "least": round(accuracy(test, {}, -1), 4)}
    pooled = [r for s in args.test for r in rows(s)]
    print(json.dumps({"per_suite": per_suite, "pooled_per_trait": round(accuracy(pooled, direction, 1), 4),
                      "traits": len(direction), "chance": 0.25}, indent=2))


if __name__ == "__main__":
    main()
