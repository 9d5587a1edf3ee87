"""Known defects, planted the way a careless generator would make them (used by ``verify --calibrate``).

Each planter takes an item and a :class:`Planter` (the suite's plans and turn index) and returns a defective
copy, or None where the defect does not apply to that item. Defects are consistent where a bad generator
would be: a gold swapped to the stale state comes with evidence showing the stale state, so only the
criterion it targets can catch it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dimobench.catalog import Catalog, suite_catalog
from dimobench.errors import InputError
from dimobench.suite.evidence import EvidenceIndex
from dimobench.suite.load import Suite
from dimobench.suite.plan import LatentPlan
from dimobench.suite.questions import QuestionMaker
from dimobench.suite.schema import QAItem, Turn


@dataclass
class Planter:
    """The suite as a generator would see it: plans, cue/confounder index and turns per persona."""

    catalog: Catalog
    plans: dict[str, LatentPlan]
    index: dict[str, EvidenceIndex]
    turns: dict[str, list[Turn]]
    rng: random.Random
    rules: str = "v1"
    """The suite's ``qa_rules`` (the question maker rebuilds items under the rules the suite was made with)."""

    @classmethod
    def of(cls, suite: Suite, seed: int) -> Planter:
        """Index ``suite`` for planting; ``seed`` seeds every random choice the planters make."""
        schedules = {s.persona_id: s for s in suite.schedules}
        turns: dict[str, list[Turn]] = {}
        for t in suite.dialogues:
            turns.setdefault(t.persona_id, []).append(t)
        plans = {p.persona_id: LatentPlan(p, schedules[p.persona_id]) for p in suite.personas}
        catalog = suite_catalog(suite.manifest.config)
        _check_states(suite, catalog)
        return cls(catalog, plans,
                   {k: EvidenceIndex.build(v) for k, v in turns.items()}, turns, random.Random(seed),
                   str(suite.manifest.config.get("qa_rules", "v1")))

    def kind_turns(self, q: QAItem, kinds: tuple[str, ...], upto: int, trait: str | None = None,
                   state: str | None = None, other_trait: bool = False) -> list[int]:
        """Turns up to ``upto`` of ``kinds``; of ``trait`` (``other_trait``: of any other) and ``state`` if given."""
        out = []
        for t in self.turns.get(q.persona_id, []):
            a = t.annotation
            if t.turn > upto or a is None or a.kind not in kinds:
                continue
            if trait is not None and (a.trait_id == trait) == other_trait:
                continue
            if state is not None and a.state_id != state:
                continue
            out.append(t.turn)
        return out

    def phrase(self, q: QAItem, state: str, pool: str, avoid: list[str]) -> str | None:
        """A random catalog text of ``state`` from ``pool`` that is not in ``avoid``; None when none is left."""
        entry = self.catalog.trait(q.trait_id or "")
        st = next(s for s in entry.states if s.state_id == state)
        texts = [x for x in getattr(st, pool) if x.lower() not in {a.lower() for a in avoid}]
        return self.rng.choice(texts) if texts else None

    def pool_of(self, q: QAItem) -> str:
        """The catalog pool (``answers`` or ``recommendations``) the gold option comes from."""
        entry = self.catalog.trait(q.trait_id or "")
        gold = q.options[q.answer_index or 0]
        return "recommendations" if any(gold in s.recommendations for s in entry.states) else "answers"

    def state_of(self, q: QAItem, i: int) -> str | None:
        """The catalog state whose texts hold option ``i``, or None for a text outside the trait's pools."""
        entry = self.catalog.trait(q.trait_id or "")
        return next((s.state_id for s in entry.states if q.options[i] in s.answers + s.recommendations), None)

    def state_of_turn(self, persona_id: str, turn: int) -> str | None:
        """The state a turn's annotation shows (None for a turn that shows none)."""
        t = next((t for t in self.turns.get(persona_id, []) if t.turn == turn), None)
        return t.annotation.state_id if t is not None and t.annotation is not None else None

    def maker(self, persona_id: str) -> QuestionMaker:
        """A question maker for ``persona_id`` sharing this planter's plan, index and random stream."""
        return QuestionMaker(self.catalog, self.plans[persona_id], self.index[persona_id], self.rng,
                             rules=self.rules)


Plant = Callable[[QAItem, Planter], "QAItem | None"]


def _with_gold(q: QAItem, i: int, **extra: object) -> QAItem:
    return q.model_copy(update={"answer_index": i, "answer": q.options[i], **extra})


def _last(turns: list[int], k: int = 3) -> list[int]:
    return turns[-k:]


def evidence_after_question(q: QAItem, p: Planter) -> QAItem | None:
    """Evidence moved to cues of the gold state that come after the question is asked."""
    gold = p.state_of(q, q.answer_index or 0)
    later = [n for n in p.kind_turns(q, ("cue",), 10**9, q.trait_id, gold) if n > q.ask_turn]
    return q.model_copy(update={"evidence_turns": later[:3]}) if later else None


def evidence_filler(q: QAItem, p: Planter) -> QAItem | None:
    """Evidence replaced by filler turns, which show no state."""
    fill = p.kind_turns(q, ("filler",), q.ask_turn)
    return q.model_copy(update={"evidence_turns": _last(fill)}) if fill else None


def evidence_other_trait(q: QAItem, p: Planter) -> QAItem | None:
    """Evidence replaced by cues of another trait."""
    other = p.kind_turns(q, ("cue",), q.ask_turn, q.trait_id, other_trait=True)
    return q.model_copy(update={"evidence_turns": _last(other)}) if other else None


def gold_to_stale(q: QAItem, p: Planter) -> QAItem | None:
    """Gold and stale options swapped, with evidence showing the stale state."""
    if q.stale_index is None or q.answer_index is None:
        return None
    stale_state = p.state_of(q, q.stale_index)
    ev = _last(p.kind_turns(q, ("cue",), q.ask_turn, q.trait_id, stale_state))
    return _with_gold(q, q.stale_index, stale_index=q.answer_index, evidence_turns=ev or q.evidence_turns)


def gold_before_change(q: QAItem, p: Planter) -> QAItem | None:
    """Temporal: gold swapped to the current state; others: gold replaced by the state before the change."""
    plan = p.plans[q.persona_id]
    change = plan.last_change(q.trait_id or "", q.ask_turn)
    if change is None or q.answer_index is None:
        return None
    target = change.to_state if q.qa_type == "temporal" else change.from_state
    for i in range(len(q.options)):
        if i != q.answer_index and p.state_of(q, i) == target:
            ev = _last(p.kind_turns(q, ("cue",), q.ask_turn, q.trait_id, target))
            return _with_gold(q, i, stale_index=None, evidence_turns=ev or q.evidence_turns)
    text = p.phrase(q, target, p.pool_of(q), q.options)
    if text is None:
        return None
    options = list(q.options)
    options[q.answer_index] = text
    ev = _last(p.kind_turns(q, ("cue",), q.ask_turn, q.trait_id, target))
    return q.model_copy(update={"options": options, "answer": text, "evidence_turns": ev or q.evidence_turns})


def question_state_words(q: QAItem, p: Planter) -> QAItem | None:
    """The question reworded to name the gold state (its description or its id)."""
    plan = p.plans[q.persona_id]
    gold = p.state_of(q, q.answer_index or 0)
    if gold is None:
        return None
    desc = plan.description(q.trait_id or "", gold)
    variants = [f"{q.question.rstrip('?')}, given that they {desc}?",
                f"{q.question.rstrip('?')} (as someone who is a {gold.replace('_', ' ')})?",
                f"Since they {desc}, {q.question[0].lower()}{q.question[1:]}"]
    return q.model_copy(update={"question": p.rng.choice(variants)})


def option_sentiment(q: QAItem, p: Planter) -> QAItem | None:
    """Feelings named in the options: the gold one "loves" its answer, and sometimes a wrong one "hates"."""
    if q.answer_index is None:
        return None
    options = list(q.options)
    word = p.rng.choice(["Loves", "Really enjoys", "Is a big fan of"])
    options[q.answer_index] = f"{word} {options[q.answer_index][0].lower()}{options[q.answer_index][1:]}"
    if p.rng.random() < 0.5:
        j = next(i for i in range(len(options)) if i != q.answer_index)
        options[j] = f"Hates {options[j][0].lower()}{options[j][1:]}"
    return q.model_copy(update={"options": options, "answer": options[q.answer_index]})


def two_gold_options(q: QAItem, p: Planter) -> QAItem | None:
    """A spare distractor replaced by another phrasing of the gold state, so two options are right."""
    gold = p.state_of(q, q.answer_index or 0)
    spare = [i for i in range(len(q.options)) if i not in (q.answer_index, q.stale_index, q.confounder_index)]
    text = p.phrase(q, gold, p.pool_of(q), q.options) if gold else None
    if gold is not None and p.rng.random() < 0.5:  # a paraphrase the catalog does not hold
        desc = p.plans[q.persona_id].description(q.trait_id or "", gold)
        text = desc[0].upper() + desc[1:]
    if not spare or text is None:
        return None
    options = list(q.options)
    options[p.rng.choice(spare)] = text
    return q.model_copy(update={"options": options})


def near_duplicate_option(q: QAItem, p: Planter) -> QAItem | None:
    """A spare distractor replaced by a near copy of the gold text."""
    spare = [i for i in range(len(q.options)) if i not in (q.answer_index, q.stale_index, q.confounder_index)]
    if not spare or q.answer_index is None:
        return None
    gold = q.options[q.answer_index]
    words = gold.split()
    variants = [gold.lower() + ".", f"Mostly {gold[0].lower()}{gold[1:]}",
                " ".join(words[:-1] + ["regularly"]),
                f"{gold} most weeks"]
    options = list(q.options)
    options[p.rng.choice(spare)] = p.rng.choice(variants)
    return q.model_copy(update={"options": options})


def gold_much_longer(q: QAItem, p: Planter) -> QAItem | None:
    """The gold option padded with a long tail, so its length gives it away."""
    if q.answer_index is None:
        return None
    tails = [", which fits everything they have described over the past several weeks of conversation",
             " as they keep mentioning, and it matches nearly every detail they have shared so far",
             ", because that is clearly what their recent messages and questions point to"]
    options = list(q.options)
    options[q.answer_index] = options[q.answer_index] + p.rng.choice(tails)
    return q.model_copy(update={"options": options, "answer": options[q.answer_index]})


def stability_on_drifting_trait(q: QAItem, p: Planter) -> QAItem | None:
    """A ``stability`` question remade about a trait that drifts."""
    if q.qa_type != "stability":
        return None
    plan = p.plans[q.persona_id]
    maker = p.maker(q.persona_id)
    drifting = sorted(plan.drifting_traits)
    ok = [tr for tr in drifting if tr in maker.candidates("current_state", q.ask_turn)]
    if not ok:
        return None
    trait = p.rng.choice(ok)
    maker.candidates = lambda kind, t: [trait]  # type: ignore[method-assign]
    made = maker.make("current_state", q.ask_turn, q.qa_id)
    return made.model_copy(update={"qa_type": "stability", "drift_id": None})


def temporal_before_change(q: QAItem, p: Planter) -> QAItem | None:
    """A ``temporal`` question moved to before the change it asks about (its own drift, else its trait's
    first), where "before the change" has not happened yet."""
    if q.qa_type != "temporal":
        return None
    plan = p.plans[q.persona_id]
    drifts = [d for d in plan.schedule.drifts if d.trait_id == q.trait_id]
    change = next((d for d in drifts if d.drift_id == q.drift_id), drifts[0] if drifts else None)
    if change is None:
        return None
    early = [n for n in q.evidence_turns if n <= change.change_point_turn]
    if not early:
        return None
    t = p.rng.randint(max(early), change.change_point_turn)
    return q.model_copy(update={"ask_turn": t, "phase": plan.phase_at(t), "evidence_turns": early})


def type_relabelled(q: QAItem, p: Planter) -> QAItem | None:
    """The ``current_state`` and ``inference`` labels swapped."""
    swap = {"current_state": "inference", "inference": "current_state"}
    return q.model_copy(update={"qa_type": swap[q.qa_type]}) if q.qa_type in swap else None


def evidence_confounder(q: QAItem, p: Planter) -> QAItem | None:
    """Evidence replaced by entity or decoy confounder turns (those showing the gold state when any do)."""
    gold = p.state_of(q, q.answer_index or 0)
    same = p.kind_turns(q, ("entity", "decoy"), q.ask_turn, q.trait_id, gold)
    turns = same or p.kind_turns(q, ("entity", "decoy"), q.ask_turn, q.trait_id)
    return q.model_copy(update={"evidence_turns": _last(turns)}) if turns else None


def gold_to_confounder(q: QAItem, p: Planter) -> QAItem | None:
    """Gold and confounder options swapped, with the confounder turns of that state as evidence."""
    if q.confounder_index is None or q.answer_index is None:
        return None
    state = p.state_of(q, q.confounder_index)
    ev = _last(p.kind_turns(q, ("entity", "decoy"), q.ask_turn, q.trait_id, state))
    return _with_gold(q, q.confounder_index, confounder_index=q.answer_index,
                      evidence_turns=ev or q.evidence_turns)


DEFECTS: dict[str, tuple[str, Plant]] = {
    "evidence_after_question": ("supported", evidence_after_question),
    "evidence_filler": ("supported", evidence_filler),
    "evidence_other_trait": ("supported", evidence_other_trait),
    "gold_to_stale": ("temporally_valid", gold_to_stale),
    "gold_before_change": ("temporally_valid", gold_before_change),
    "question_state_words": ("implicit", question_state_words),
    "option_sentiment": ("implicit", option_sentiment),
    "two_gold_options": ("unambiguous", two_gold_options),
    "near_duplicate_option": ("unambiguous", near_duplicate_option),
    "gold_much_longer": ("unambiguous", gold_much_longer),
    "stability_on_drifting_trait": ("type_faithful", stability_on_drifting_trait),
    "temporal_before_change": ("type_faithful", temporal_before_change),
    "type_relabelled": ("type_faithful", type_relabelled),
    "evidence_confounder": ("confounder_robust", evidence_confounder),
    "gold_to_confounder": ("confounder_robust", gold_to_confounder),
}
"""Defect name -> (the criterion whose kind it is, the planter)."""


def _check_states(suite: Suite, catalog: Catalog) -> None:
    """Every trait and state of the suite is in ``catalog``; else one line naming where (a suite made from
    another catalog than it records, e.g. before suites recorded theirs)."""
    known = {tr.trait_id: {s.state_id for s in tr.states} for tp in catalog.topics for tr in tp.traits}
    for line, p in enumerate(suite.personas, start=1):
        for tr in p.traits:
            missing = sorted({s.state_id for s in tr.states} - known.get(tr.trait_id, set()))
            if tr.trait_id not in known or missing:
                raise InputError(f"trait {tr.trait_id!r} (states {missing or 'all'}) is not in the catalog this suite "
                                 f"is read against ({suite.manifest.config.get('catalog') or 'the packaged one'}); "
                                 "if it was made from another, set $DIMOBENCH_CATALOG to that one",
                                 Path(suite.path) / "personas.jsonl", line=line, field="traits")
