"""``verify --repair``: regenerate every REVISE/REJECT item in its own slot until it passes or a cap is hit.

A new item keeps the old ``qa_id``, persona and ask turn (so the suite keeps its counts and its spread over
the timeline) and, where the plan still allows it there, its ``qa_type``; it is made by the QA stage's own
machinery with a seed derived from the suite seed, the item id and the attempt, so a repair is reproducible.
``qa.jsonl``, ``verdicts.jsonl`` and the manifest are rewritten atomically; what could not be repaired is
listed.
"""

from __future__ import annotations

import random
from pathlib import Path

from pydantic import BaseModel

from dimobench.rng import derive_seed
from dimobench.suite.load import load_suite
from dimobench.suite.questions import TARGET_SHARE, QuestionMaker
from dimobench.suite.schema import QAItem, VerdictRecord
from dimobench.verify.embed import Embedder
from dimobench.verify.plant import Planter
from dimobench.verify.verdicts import judge, judge_suite, stale_warnings, verifier_info, write_results

MAX_TRIES = 8


class RepairResult(BaseModel):
    """What ``repair_suite`` did."""

    verdicts: list[VerdictRecord]
    """The verdicts after repair, one per item."""
    repaired: list[str] = []
    """Items regenerated until they passed."""
    unrepaired: list[str] = []
    """Items still failing after ``max_tries``."""
    warnings: list[str] = []
    embedder: str = ""


def repair_suite(path: str | Path, max_tries: int = MAX_TRIES, embedder: Embedder | None = None,
                 only: list[str] | None = None) -> RepairResult:
    """Verify the suite, regenerate its failing items, and write the repaired suite and verdicts."""
    root = Path(path)
    suite = load_suite(root)
    warnings = stale_warnings(suite)
    verdicts, ctx = judge_suite(suite, only, embedder)
    names = list(verdicts[0].criteria) if verdicts else []
    info = verifier_info(ctx.embedder, names)
    seed = suite.manifest.config.get("seed", 0)
    root_seed = seed if isinstance(seed, int) else 0
    planter = Planter.of(suite, root_seed)
    items = list(suite.qa)
    repaired, unrepaired = [], []
    for i, (q, v) in enumerate(zip(items, verdicts, strict=True)):
        if v.verdict == "ACCEPT":
            continue
        fixed = None
        if q.persona_id in planter.plans and q.persona_id in planter.index:
            for attempt in range(max_tries):
                rng = random.Random(derive_seed(root_seed, "repair", q.qa_id, attempt))
                maker = QuestionMaker(planter.catalog, planter.plans[q.persona_id], planter.index[q.persona_id], rng,
                                      rules=planter.rules)
                candidate = respin(maker, q, rng, planter.turns[q.persona_id][-1].turn)
                if candidate is None:
                    break
                verdict = judge(candidate, ctx, names, info)
                if verdict.verdict == "ACCEPT":
                    fixed = (candidate, verdict)
                    break
        if fixed is None:
            unrepaired.append(q.qa_id)
            continue
        items[i], verdicts[i] = fixed
        repaired.append(q.qa_id)
    write_results(root, suite, verdicts, "offline", qa=items)
    return RepairResult(verdicts=verdicts, repaired=repaired, unrepaired=unrepaired, warnings=warnings,
                        embedder=ctx.embedder.name)


def respin(maker: QuestionMaker, q: QAItem, rng: random.Random, end: int) -> QAItem | None:
    """A fresh item for the slot of ``q``: same ask turn (else the next askable one up to ``end``), same type
    when feasible there."""
    for t in range(q.ask_turn, max(end, q.ask_turn) + 1):
        kinds = [k for k in TARGET_SHARE if maker.candidates(k, t)]
        if not kinds:
            continue
        kind = q.qa_type if q.qa_type in kinds else rng.choice(kinds)
        return maker.make(kind, t, q.qa_id)
    return None
