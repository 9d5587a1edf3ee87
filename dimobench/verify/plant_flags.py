"""Planted defects of the audit's per-item flag kinds (:mod:`dimobench.suite.flags`), for ``verify --calibrate``.

Off-topic and other-form options are planted in words no catalog holds, so only a check of what the item offers
(not a lookup of catalog phrases the generator used) can catch them; a second right answer is a catalog text (one
another trait supports, or one whose words the user said on another subject: the check that finds it is the rule
that plants it, so its calibration shows the wiring, not the rule); the timing defects move the question instead.
"""

from __future__ import annotations

from dimobench.suite.schema import QAItem
from dimobench.verify.plant import Plant, Planter

NEW_OFF_TOPIC = ("A glazing course at the local ceramics studio", "Rebuilding a vintage moped engine",
                 "Keeping bees on an allotment", "Learning Esperanto from radio broadcasts",
                 "Restoring antique clocks in the shed", "Weekend shifts as a lifeguard")
"""Option texts written for planting (no catalog holds them): each fits no trait's question."""
NEW_OTHER_FORM = {"answers": ("Booking a taster session at the climbing gym next week",
                              "Trying a guided pottery evening this Friday",
                              "Ordering a starter kit for fermenting hot sauce"),
                  "recommendations": ("Has long kept a tidy weekly routine", "Mostly keeps to the same habits",
                                      "Usually does what they did last year")}
"""Texts of the other form (an invitation where a state is asked for, and the reverse), in new words."""


def _swap_wrong(q: QAItem, p: Planter, texts: list[str]) -> QAItem | None:
    """A random wrong option replaced by one of ``texts`` that the item does not already offer."""
    if q.answer_index is None:
        return None
    fresh = [t for t in texts if t.lower() not in {o.lower() for o in q.options}]
    wrong = [i for i in range(len(q.options)) if i != q.answer_index]
    if not fresh or not wrong:
        return None
    options = list(q.options)
    options[p.rng.choice(wrong)] = p.rng.choice(fresh)
    return q.model_copy(update={"options": options})


def off_topic_option(q: QAItem, p: Planter) -> QAItem | None:
    """A wrong option replaced by one of :data:`NEW_OFF_TOPIC` (new words, off the question's topic)."""
    return _swap_wrong(q, p, list(NEW_OFF_TOPIC))


def form_mismatch(q: QAItem, p: Planter) -> QAItem | None:
    """A wrong option replaced by a text of the other form (:data:`NEW_OTHER_FORM`, new words)."""
    return _swap_wrong(q, p, list(NEW_OTHER_FORM[p.pool_of(q)]))


def second_supported_option(q: QAItem, p: Planter) -> QAItem | None:
    """A wrong option replaced by a text another trait of the persona supports now (a second right answer)."""
    plan = p.plans[q.persona_id]
    now = {(t.trait_id, plan.state_at(t.trait_id, q.ask_turn)) for t in plan.persona.traits
           if t.trait_id != q.trait_id}
    texts = sorted(text for text, pairs in p.catalog.conflicts.items() if any(tuple(c) in now for c in pairs))
    topic = {x.lower() for s in p.catalog.trait(q.trait_id or "").states for x in s.answers + s.recommendations}
    return _swap_wrong(q, p, [t for t in texts if t.lower() in topic])


def said_elsewhere_option(q: QAItem, p: Planter) -> QAItem | None:
    """A wrong option replaced by a text of another state of the trait whose words the user said, on another
    subject, before the question (a second right answer to a reader)."""
    if q.trait_id is None or q.answer_index is None:
        return None
    index, gold = p.index[q.persona_id], p.state_of(q, q.answer_index)
    texts = sorted(x for s in p.catalog.trait(q.trait_id).states if s.state_id != gold
                   for x in getattr(s, p.pool_of(q))
                   if (n := index.first_said(x, q.trait_id)) is not None and n <= q.ask_turn)
    return _swap_wrong(q, p, texts)


def gold_ungrounded(q: QAItem, p: Planter) -> QAItem | None:
    """The question moved to just after the first cue of its gold state: one supporting turn, not two."""
    if q.qa_type == "temporal" or q.answer_index is None:
        return None
    plan = p.plans[q.persona_id]
    gold = p.state_of(q, q.answer_index)
    change = plan.last_change(q.trait_id or "", q.ask_turn)
    since = change.change_point_turn if change else 0
    cues = [n for n in p.kind_turns(q, ("cue",), q.ask_turn, q.trait_id, gold) if n > since]
    if len(cues) < 2 or cues[1] - cues[0] < 2:
        return None
    t = cues[0] + 1
    return q.model_copy(update={"ask_turn": t, "phase": plan.phase_at(t), "evidence_turns": [cues[0]]})


def transition_contradicted(q: QAItem, p: Planter) -> QAItem | None:
    """A present-tense question on the drifting trait moved late into its transition, gold still the old state."""
    if q.qa_type not in ("current_state", "inference") or q.answer_index is None:
        return None
    plan = p.plans[q.persona_id]
    drift = next((d for d in plan.schedule.drifts if d.trait_id == q.trait_id), None)
    if drift is None:
        return None
    for t in range(drift.change_point_turn, drift.onset_turn, -1):
        recent = [p.state_of_turn(q.persona_id, n) for n in p.kind_turns(q, ("cue",), t, q.trait_id)][-5:]
        if recent and sum(s == drift.to_state for s in recent) > len(recent) / 2:
            old = [i for i in range(len(q.options)) if p.state_of(q, i) == drift.from_state]
            if not old:
                return None
            ev = p.kind_turns(q, ("cue",), t, q.trait_id, drift.from_state)[-3:]
            return q.model_copy(update={"answer_index": old[0], "answer": q.options[old[0]], "ask_turn": t,
                                        "phase": plan.phase_at(t), "drift_id": drift.drift_id, "evidence_turns": ev})
    return None


def temporal_ambiguous(q: QAItem, p: Planter) -> QAItem | None:
    """A "before the latest change" question after a reversion (A -> B -> A) with the state of the earlier
    stretch B among its wrong options: two options held before the change. Needs two drifts on one trait."""
    if q.qa_type != "temporal" or q.answer_index is None:
        return None
    plan = p.plans[q.persona_id]
    change = plan.last_change(q.trait_id or "", q.ask_turn)
    if change is None:
        return None
    held = {d.from_state for d in plan.schedule.drifts
            if d.trait_id == q.trait_id and d.change_point_turn < change.onset_turn} - {change.from_state}
    for i in range(len(q.options)):
        if i != q.answer_index and p.state_of(q, i) not in held:
            for state in sorted(held):
                text = p.phrase(q, state, p.pool_of(q), list(q.options))
                if text is not None:
                    options = list(q.options)
                    options[i] = text
                    return q.model_copy(update={"options": options})
    return None


PLAN_DEFECTS: dict[str, tuple[str, Plant]] = {
    "off_topic_option": ("unambiguous", off_topic_option),
    "form_mismatch": ("type_faithful", form_mismatch),
    "second_supported_option": ("unambiguous", second_supported_option),
    "said_elsewhere_option": ("unambiguous", said_elsewhere_option),
    "gold_ungrounded": ("supported", gold_ungrounded),
    "transition_contradicted": ("temporally_valid", transition_contradicted),
    "temporal_ambiguous": ("unambiguous", temporal_ambiguous),
}
"""Defect name -> (criterion, planter), like :data:`~dimobench.verify.plant.DEFECTS`; planted only where the
verifier runs plan checks (``--plan-checks``)."""
