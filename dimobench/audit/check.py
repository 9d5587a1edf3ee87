"""``audit_suites``: run every attack, shortcut, flag, lint and diversity figure on suites and apply the gates."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from dimobench.audit.attacks import Attack, attack_scores, attacks
from dimobench.audit.card import DEFAULT_GATES, AuditReport, Score, check_gates, markdown
from dimobench.audit.diversity import diversity
from dimobench.audit.items import Item, chance, cluster_interval, credit, items_of, p95, relabel_null, unit
from dimobench.audit.lints import lints
from dimobench.audit.shortcuts import run_shortcuts
from dimobench.catalog import suite_catalog
from dimobench.suite.flags import FLAGS, norm, suite_flags
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, load_suite


def _keys(paths: Sequence[Path]) -> list[str]:
    keys: list[str] = []
    for p in paths:
        base, key, i = p.resolve().name or "suite", p.resolve().name or "suite", 2
        while key in keys:
            key, i = f"{base}-{i}", i + 1
        keys.append(key)
    return keys


def _score(name: str, describe: str, credits: list[float], items: Sequence[Item]) -> Score:
    n = len(credits)
    acc = round(sum(credits) / n, 4) if n else None
    return Score(name=name, describe=describe, accuracy=acc, ci=cluster_interval(credits, [unit(it) for it in items]),
                 n=n)


def _attack_score(attack: Attack, items: Sequence[Item], train: Sequence[Item] | None,
                  states: Sequence[Sequence[str | None]]) -> tuple[Score, list[float] | None]:
    """The attack's score and its null draws (None when no item can be relabelled)."""
    scores = attack_scores(attack, items, train)
    score = _score(attack.name, attack.describe, [credit(sc, it.gold) for sc, it in zip(scores, items, strict=True)],
                   items)
    if not any(None not in st for st in states):
        return score, None
    null = relabel_null(scores, items, states)
    score.null_p95 = p95(null)
    return score, null


def option_states(suites: Sequence[tuple[str, Suite]], items: Sequence[Item]) -> list[list[str | None]]:
    """The trait state each option stands for, from the suite's catalog (None: a distractor, or no catalog)."""
    texts: dict[str, dict[tuple[str, str], str | None]] = {}
    for key, suite in suites:
        catalog = suite_catalog(suite.manifest.config) if suite.manifest.status != "imported" else None
        owners: dict[tuple[str, str], set[str]] = {}
        for topic in catalog.topics if catalog is not None else []:
            for trait in topic.traits:
                for state in trait.states:
                    for text in (*state.answers, *state.recommendations):
                        owners.setdefault((trait.trait_id, norm(text)), set()).add(state.state_id)
        # a text two states share stands for neither
        texts[key] = {k: next(iter(v)) if len(v) == 1 else None for k, v in owners.items()}
    return [[texts[it.suite].get((it.qa.trait_id or "", norm(o))) for o in it.options] for it in items]


def items_with_states(suites: Sequence[tuple[str, Suite]]) -> list[Item]:
    """The suites' items (:func:`items_of`), each carrying the state its options stand for (``Item.states``)."""
    bare = items_of(suites)
    return [dataclasses.replace(it, states=tuple(st)) for it, st in zip(bare, option_states(suites, bare),
                                                                           strict=True)]


def audit_suites(paths: Sequence[str | Path], train: Sequence[str | Path] = (), against: Sequence[str | Path] = (),
                 gates: dict[str, float] | None = None, out: str | Path | None = None) -> AuditReport:
    """Audit the suites at ``paths`` together (see :mod:`dimobench.audit`); write ``audit.json``/``audit.md``
    into ``out`` when given. ``gates`` override :data:`DEFAULT_GATES` by name."""
    limits = {**DEFAULT_GATES, **(gates or {})}
    unknown = sorted(set(limits) - set(DEFAULT_GATES))
    if unknown:
        from dimobench.errors import ConfigError

        raise ConfigError(f"unknown gate {', '.join(unknown)} (choose from {', '.join(DEFAULT_GATES)})")
    test_paths, train_paths = [Path(p) for p in paths], [Path(p) for p in train]
    suites: list[tuple[str, Suite]] = list(zip(_keys(test_paths), (load_suite(p) for p in test_paths), strict=True))
    trained: list[tuple[str, Suite]] = [(f"train:{k}", load_suite(p))
                                        for k, p in zip(_keys(train_paths), train_paths, strict=True)]
    items = items_with_states(suites)
    states = [list(it.states) for it in items]
    train_items = items_with_states(trained) if trained else None
    runs = [_attack_score(a, items, train_items, states) for a in attacks()]
    scored = [score for score, _ in runs]
    strongest = max((s for s in scored if s.accuracy is not None), key=lambda s: s.accuracy or 0.0, default=None)
    nulls = [null for _, null in runs if null is not None]
    # draw d relabels alike for every attack, so the per-draw best is the null of "the strongest of them"
    strongest_null = p95([max(draw) for draw in zip(*nulls, strict=True)]) if nulls else None
    shortcuts = [_score(k, "", v, items) for k, v in run_shortcuts(suites, items).items()]
    flagged: dict[str, list[str]] = {}
    planned = False
    for key, suite in suites:
        found = suite_flags(suite, suite_catalog(suite.manifest.config))
        if found is not None:
            planned = True
            flagged.update({f"{key}/{q}" if len(suites) > 1 else q: f for q, f in found.items()})
    counts = Counter(f for fs in flagged.values() for f in fs)
    others = [(f"against:{k}", load_suite(p)) for k, p in zip(_keys([Path(a) for a in against]),
                                                               [Path(a) for a in against], strict=True)]
    lint_found: dict[str, list[str]] = {}
    for key, suite in suites:
        for kind, where in lints(suite, suite_catalog(suite.manifest.config)).items():
            lint_found.setdefault(kind, []).extend(f"{key}/{w}" if len(suites) > 1 else w for w in where)
    report = AuditReport(
        suites=[k for k, _ in suites], train=[k for k, _ in trained], items=len(items), chance=chance(items),
        attacks=scored, strongest=strongest, strongest_null_p95=strongest_null, shortcuts=shortcuts,
        flags={f: counts.get(f, 0) for f in FLAGS} if planned else None, flagged=flagged, lints=lint_found,
        diversity={k: diversity(s, others, suite_catalog(s.manifest.config)) for k, s in suites}, gates=[], passed=True)
    report.gates = check_gates(report, limits)
    report.passed = all(g.passed for g in report.gates)
    if out is not None:
        from dimobench.suite.outdir import claim_out

        with claim_out(Path(out), "audit", force=True) as folder:  # an earlier audit there is replaced, nothing else
            atomic_write_text(folder / "audit.json", json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
            atomic_write_text(folder / "audit.md", markdown(report))
    return report
