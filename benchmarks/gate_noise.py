"""How far a leak-free suite's no-context attacks stray from chance: the noise under issue 15's per-suite gate.

Generates ``--preset dimobench`` suites (``--qa-rules valid``) for ``--train`` and ``--test`` seeds, fits every
no-context attack of ``dimobench audit`` on the train suites once, and scores each test suite. Beside each
observed accuracy it draws the audit's null (:func:`dimobench.audit.items.relabel_null`): in every (persona,
trait) unit the held state is relabelled by a random permutation of the trait's states, the same for all of
the unit's questions, and the attack's fixed scores are counted against the relabelled gold. Nothing an
attacker can learn predicts a random relabelling, so the null is what a suite of this shape scores with no leak
at all. Its spread is large because a unit's questions share their gold state for long stretches: a
1,000-question suite holds only ~30 independent units.

Prints JSON: per attack and test suite the observed accuracy, the null's mean, standard deviation and 95th
percentile, and the share of null draws above ``--gate``; pooled over the test suites, the observed accuracy;
and for the strongest attack (what the gate reads) the same, its null being the per-draw best of all attacks.

Run: ``.venv/bin/python benchmarks/gate_noise.py --train 2001 ... 2012 --test 2013 ... 2024`` (about 3 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--catalog", default="catalog-v3")
    ap.add_argument("--train", type=int, nargs="+", default=list(range(2001, 2013)))
    ap.add_argument("--test", type=int, nargs="+", default=list(range(2013, 2025)))
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--gate", type=float, default=0.30)
    args = ap.parse_args()
    from dimobench.api import generate_suite, load_suite
    from dimobench.audit.attacks import attacks
    from dimobench.audit.check import items_with_states
    from dimobench.audit.items import credit, p95, relabel_null
    from dimobench.catalog import find_catalog
    from dimobench.generate.config import make_config

    found = find_catalog(args.catalog)
    if found is None:
        raise SystemExit(f"no catalog {args.catalog!r}")
    os.environ["DIMOBENCH_CATALOG"] = str(found)
    items, states = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.train + args.test:
            path = Path(tmp) / f"p{seed}"
            generate_suite(make_config("dimobench", seed=seed, qa_rules="valid"), path, verify=False, audit=False)
            suite = [(f"p{seed}", load_suite(path))]
            items[seed] = items_with_states(suite)
            states[seed] = [list(it.states) for it in items[seed]]
    train = [it for s in args.train for it in items[s]]
    out: dict[str, Any] = {"catalog": args.catalog, "train": args.train, "test": args.test, "gate": args.gate,
                           "attacks": {}}
    nulls: dict[int, list[list[float]]] = {seed: [] for seed in args.test}
    observed_best: dict[int, float] = dict.fromkeys(args.test, 0.0)
    for attack in attacks():
        attack.prepare([*train, *(it for seed in args.test for it in items[seed])])
        attack.fit(train)
        rows, pooled = {}, []
        for seed in args.test:
            scores = [attack.scores(it) for it in items[seed]]
            observed = [credit(sc, it.gold) for sc, it in zip(scores, items[seed], strict=True)]
            pooled += observed
            null = relabel_null(scores, items[seed], states[seed], draws=args.draws, seed=seed)
            nulls[seed].append(null)
            observed_best[seed] = max(observed_best[seed], statistics.mean(observed))
            rows[f"p{seed}"] = {"observed": round(statistics.mean(observed), 4),
                                "null_mean": round(statistics.mean(null), 4),
                                "null_sd": round(statistics.pstdev(null), 4),
                                "null_p95": p95(null),
                                "null_above_gate": round(sum(x > args.gate for x in null) / len(null), 3)}
        out["attacks"][attack.name] = {
            "pooled_observed": round(statistics.mean(pooled), 4),
            "suites_above_gate": sum(r["observed"] > args.gate for r in rows.values()),
            "mean_null_above_gate": round(statistics.mean(r["null_above_gate"] for r in rows.values()), 3),
            "suites": rows}
    # the same seed relabels alike for every attack: the per-draw best is the null of the strongest attack
    best = {seed: [max(draw) for draw in zip(*nulls[seed], strict=True)] for seed in args.test}
    out["strongest"] = {
        "suites_above_gate": sum(v > args.gate for v in observed_best.values()),
        "mean_null_above_gate": round(statistics.mean(sum(x > args.gate for x in best[s]) / len(best[s])
                                                      for s in args.test), 3),
        "suites": {f"p{s}": {"observed": round(observed_best[s], 4),
                             "null_p95": p95(best[s])}
                   for s in args.test}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
