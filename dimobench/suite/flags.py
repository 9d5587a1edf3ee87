"""Per-item flags: questions whose options or gold the suite's own latent plan shows to be wrong or leaky.

The audit counts them and the offline verifier rejects them (both read them from here).

Only generated suites carry a plan (``schedules.jsonl``, turn annotations); for imported ones these checks do
not apply and the card says so. Each flag is one rule, stated where it is computed:

- ``gold_mismatch``: the gold text is not an option text of the state the plan says holds (a wrong label).
- ``gold_ungrounded``: fewer than two cue turns of the gold state in its period before ``ask_turn``.
- ``never_gold_option``: an option from a list whose texts are never gold (the catalog's distractor lists):
  dropping such options is a free shortcut.
- ``off_topic_option``: an option from no list of the question's topic.
- ``form_mismatch``: an option of the other form (an answer among recommendations or the reverse).
- ``second_supported_option``: a wrong option that another of the persona's traits supports at ``ask_turn``
  (``data/conflicts.json``).
- ``said_elsewhere_option``: a wrong option sharing two content stems with a user turn up to ``ask_turn`` that is
  not about the question's trait (``dimobench.suite.evidence.EvidenceIndex.first_said``): to a reader, the user
  has said it.
- ``transition_contradicted``: a present-tense item on the drifting trait during its transition whose gold
  the majority of that trait's last five cues contradict.
- ``temporal_ambiguous``: a "before the latest change" item offering a second option whose state also held
  before that change, in the plan or as a distant past the user recalled before the question.
"""

from __future__ import annotations

import re
from collections import defaultdict

from dimobench.catalog import Catalog, TraitEntry, suite_catalog
from dimobench.suite.evidence import EvidenceIndex
from dimobench.suite.load import Suite
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import QAItem

_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    """Case- and space-folded text, the key under which an option text is counted across suites."""
    return _SPACE.sub(" ", text.strip().lower())


FLAGS = ("gold_mismatch", "gold_ungrounded", "never_gold_option", "off_topic_option", "form_mismatch",
         "second_supported_option", "said_elsewhere_option", "transition_contradicted", "temporal_ambiguous")
MIN_SUPPORT = 2
RECENT_CUES = 5


class TraitTexts:
    """Where each option text of one trait comes from: ``(state_id or None, pool)``."""

    def __init__(self, entry: TraitEntry) -> None:
        self.where: dict[str, tuple[str | None, str]] = {}
        for s in entry.states:
            for t in s.answers:
                self.where[norm(t)] = (s.state_id, "answers")
            for t in s.recommendations:
                self.where[norm(t)] = (s.state_id, "recommendations")
        for t in entry.distractor_answers:
            self.where.setdefault(norm(t), (None, "answers"))
        for t in entry.distractor_recommendations:
            self.where.setdefault(norm(t), (None, "recommendations"))

    def state_of(self, text: str) -> str | None:
        """The state whose lists hold ``text`` (None for a distractor or an unknown text)."""
        return self.where.get(norm(text), (None, ""))[0]

    def pool_of(self, text: str) -> str | None:
        """``answers`` or ``recommendations`` (None for a text of no list of this trait)."""
        got = self.where.get(norm(text))
        return got[1] if got else None


class FlagContext:
    """Catalog look-ups shared by every item of a suite."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.traits = {t.trait_id: TraitTexts(t) for tp in catalog.topics for t in tp.traits}
        self.topic_texts: dict[str, set[str]] = {}
        for tp in catalog.topics:
            texts = {k for t in tp.traits for k in self.traits[t.trait_id].where}
            for t in tp.traits:
                self.topic_texts[t.trait_id] = texts
        self.conflicts = {norm(k): [tuple(c) for c in v] for k, v in catalog.conflicts.items()}


def _question_form(q: QAItem, entry: TraitEntry) -> str | None:
    """The option form a question asks for: from its template, else from its type (None: cannot tell)."""
    for form, templates in (("recommendations", entry.inference_questions),
                            ("answers", (*entry.current_questions, *entry.past_questions))):
        if any(tpl.split("{name}")[0] and q.question.startswith(tpl.split("{name}")[0]) for tpl in templates):
            return form
    return {"inference": "recommendations", "current_state": "answers", "temporal": "answers"}.get(
        q.qa_type or "")


def _gold_state(q: QAItem, plan: LatentPlan) -> tuple[str, int, int] | None:
    """The state the plan says is the answer, and the turns ``(since, upto]`` in which its cues count."""
    assert q.trait_id is not None
    change = plan.last_change(q.trait_id, q.ask_turn)
    if q.qa_type == "temporal":
        if change is None:
            return None
        earlier = plan.last_change(q.trait_id, change.onset_turn)
        return change.from_state, earlier.change_point_turn if earlier else 0, change.change_point_turn
    return plan.state_at(q.trait_id, q.ask_turn), change.change_point_turn if change else 0, q.ask_turn


def _held_before(plan: LatentPlan, trait_id: str, turn: int) -> set[str]:
    """Every state the trait was in at some turn up to ``turn`` (a state holds after its change point)."""
    held = {next(t.initial_state for t in plan.persona.traits if t.trait_id == trait_id)}
    held |= {d.to_state for d in plan.schedule.drifts if d.trait_id == trait_id and d.change_point_turn < turn}
    return held


def item_flags(q: QAItem, plan: LatentPlan, cues: dict[str, list[tuple[int, str]]], ctx: FlagContext,
               said: EvidenceIndex | None = None) -> list[str]:
    """The flags (see the module docstring) raised by one generated item (``said``: the persona's turns indexed,
    for ``said_elsewhere_option``)."""
    if q.trait_id is None or q.answer_index is None or q.trait_id not in ctx.traits:
        return []
    texts = ctx.traits[q.trait_id]
    entry = ctx.catalog.trait(q.trait_id)
    out: list[str] = []
    gold_text = q.options[q.answer_index]
    got = _gold_state(q, plan)
    if got is not None:
        state, since, upto = got
        if texts.state_of(gold_text) != state:
            out.append("gold_mismatch")
        support = [n for n, s in cues.get(q.trait_id, []) if s == state and since < n <= min(upto, q.ask_turn)]
        if len(support) < MIN_SUPPORT:
            out.append("gold_ungrounded")
    wrong = [o for i, o in enumerate(q.options) if i != q.answer_index]
    if any(texts.state_of(o) is None and texts.pool_of(o) is not None for o in wrong):
        out.append("never_gold_option")
    if any(norm(o) not in ctx.topic_texts.get(q.trait_id, set()) for o in q.options):
        out.append("off_topic_option")
    form = _question_form(q, entry)
    if form and any(texts.pool_of(o) not in (None, form) for o in q.options):
        out.append("form_mismatch")
    now = {(t.trait_id, plan.state_at(t.trait_id, q.ask_turn)) for t in plan.persona.traits
           if t.trait_id != q.trait_id}
    if any(c in now for o in wrong for c in ctx.conflicts.get(norm(o), ())):
        out.append("second_supported_option")
    if said is not None and any((n := said.first_said(o, q.trait_id)) is not None and n <= q.ask_turn
                                for o in wrong):
        out.append("said_elsewhere_option")
    drift = plan.active_drift(q.ask_turn)
    if (q.phase == "transition" and drift is not None and drift.trait_id == q.trait_id and got is not None
            and q.qa_type in ("current_state", "inference")):
        recent = [s for n, s in cues.get(q.trait_id, []) if n <= q.ask_turn][-RECENT_CUES:]
        if recent and sum(s != got[0] for s in recent) > len(recent) / 2:
            out.append("transition_contradicted")
    if q.qa_type == "temporal" and got is not None:
        change = plan.last_change(q.trait_id, q.ask_turn)
        assert change is not None
        held = _held_before(plan, q.trait_id, change.change_point_turn) - {got[0]}
        if said is not None:  # a distant past the user recalled held before the change too
            held |= said.recalled(q.trait_id, q.ask_turn) - {got[0]}
        if any(texts.state_of(o) in held for o in wrong):
            out.append("temporal_ambiguous")
    return out


def _cues(index: EvidenceIndex) -> dict[str, list[tuple[int, str]]]:
    """Cue turns per trait as ``(turn, state_id)``, in turn order (from the persona's evidence index)."""
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (trait, state), turns in index.cues.items():
        out[trait] += [(n, state) for n in turns]
    for found in out.values():
        found.sort()
    return out


def suite_flags(suite: Suite, catalog: Catalog | None = None) -> dict[str, list[str]] | None:
    """``qa_id -> flags`` for every flagged item of a generated suite; None when the suite has no plan."""
    if not suite.schedules:
        return None
    ctx = FlagContext(catalog or suite_catalog(suite.manifest.config))
    plans = {s.persona_id: LatentPlan(p, s) for p in suite.personas for s in suite.schedules
             if s.persona_id == p.persona_id}
    said = {pid: EvidenceIndex.build(suite.turns_of(pid)) for pid in plans}
    cues = {pid: _cues(said[pid]) for pid in plans}
    out = {}
    for q in suite.qa:
        if q.persona_id in plans:
            found = item_flags(q, plans[q.persona_id], cues[q.persona_id], ctx, said[q.persona_id])
            if found:
                out[q.qa_id] = found
    return out
