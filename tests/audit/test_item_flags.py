"""Each per-item flag fires on an item built to have its defect, and stays quiet on the same item without it."""

from __future__ import annotations

import pytest

from dimobench.catalog import TraitEntry, load_catalog, stemmed_words
from dimobench.suite.evidence import EvidenceIndex
from dimobench.suite.flags import FlagContext, item_flags, norm
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import Annotation, Drift, Persona, PhaseSpan, QAItem, Schedule, State, Trait, Turn

CATALOG = load_catalog()
CTX = FlagContext(CATALOG)


def _entry(min_states: int = 3) -> TraitEntry:
    return next(t for tp in CATALOG.topics for t in tp.traits if len(t.states) >= min_states)


def _trait(entry: TraitEntry, initial: str) -> Trait:
    return Trait(trait_id=entry.trait_id, topic=CATALOG.topic_of(entry.trait_id).topic_id,
                 states=[State(state_id=s.state_id, description=s.description) for s in entry.states],
                 initial_state=initial)


def _plan(traits: list[Trait], drifts: list[Drift], turns: int = 100) -> LatentPlan:
    persona = Persona(persona_id="p01", name="Ann Lee", profile={"city": "Oslo"}, traits=traits, entities=[])
    phases = [PhaseSpan(start_turn=1, end_turn=turns, phase="stable", drift_id=None)]
    if drifts:
        d = drifts[-1]
        phases = [PhaseSpan(start_turn=1, end_turn=d.onset_turn - 1, phase="stable", drift_id=d.drift_id),
                  PhaseSpan(start_turn=d.onset_turn, end_turn=d.change_point_turn, phase="transition",
                            drift_id=d.drift_id),
                  PhaseSpan(start_turn=d.change_point_turn + 1, end_turn=turns, phase="post_change",
                            drift_id=d.drift_id)]
    return LatentPlan(persona, Schedule(persona_id="p01", drifts=drifts, phases=phases))


def _item(entry: TraitEntry, kind: str, phase: str, ask: int, gold: str, wrong: list[str]) -> QAItem:
    options = [gold, *wrong]
    return QAItem(qa_id="p01-q0001", persona_id="p01", ask_turn=ask, qa_type=kind, phase=phase,
                  trait_id=entry.trait_id, drift_id=None, question="What fits Ann now?", options=options,
                  answer_index=0, answer=gold, stale_index=None, confounder_index=None, evidence_turns=[])


def _answers(entry: TraitEntry, i: int) -> list[str]:
    return entry.states[i].answers


@pytest.fixture
def three_states() -> TraitEntry:
    return _entry(3)


def test_gold_that_is_not_the_planned_state_is_a_mismatch_and_two_cues_ground_it(three_states):
    e = three_states
    a, b, c = (s.state_id for s in e.states[:3])
    plan = _plan([_trait(e, a)], [])
    wrong = [_answers(e, 1)[0], _answers(e, 2)[0]]
    right = _item(e, "current_state", "stable", 50, _answers(e, 0)[0], wrong)
    assert item_flags(right, plan, {e.trait_id: [(10, a), (20, a)]}, CTX) == []
    assert "gold_ungrounded" in item_flags(right, plan, {e.trait_id: [(10, a), (60, a)]}, CTX)
    mislabeled = _item(e, "current_state", "stable", 50, _answers(e, 1)[0], [_answers(e, 0)[0]])
    assert "gold_mismatch" in item_flags(mislabeled, plan, {e.trait_id: [(10, a), (20, a)]}, CTX)


def test_an_option_from_a_never_gold_list_or_another_topic_is_flagged(three_states):
    e = three_states
    a = e.states[0].state_id
    plan = _plan([_trait(e, a)], [])
    cues = {e.trait_id: [(10, a), (20, a)]}
    assert "never_gold_option" in item_flags(
        _item(e, "current_state", "stable", 50, _answers(e, 0)[0], [e.distractor_answers[0]]), plan, cues, CTX)
    other_topic = next(t for tp in CATALOG.topics for t in tp.traits
                       if CATALOG.topic_of(t.trait_id).topic_id != CATALOG.topic_of(e.trait_id).topic_id)
    assert "off_topic_option" in item_flags(
        _item(e, "current_state", "stable", 50, _answers(e, 0)[0], [other_topic.states[0].answers[0]]), plan, cues,
        CTX)
    assert "form_mismatch" in item_flags(
        _item(e, "current_state", "stable", 50, _answers(e, 0)[0], [e.states[1].recommendations[0]]), plan, cues,
        CTX)


def test_a_transition_item_whose_gold_the_recent_cues_contradict_is_flagged(three_states):
    e = three_states
    a, b = e.states[0].state_id, e.states[1].state_id
    drift = Drift(drift_id="d1", trait_id=e.trait_id, from_state=a, to_state=b, onset_turn=40,
                  change_point_turn=60, settle_turn=80)
    plan = _plan([_trait(e, a)], [drift])
    item = _item(e, "current_state", "transition", 55, _answers(e, 0)[0], [_answers(e, 1)[0], _answers(e, 2)[0]])
    mostly_new = {e.trait_id: [(10, a), (20, a), (42, b), (45, b), (48, a), (50, b), (53, b)]}
    mostly_old = {e.trait_id: [(10, a), (20, a), (42, b), (45, a), (48, a), (50, b), (53, a)]}
    assert "transition_contradicted" in item_flags(item, plan, mostly_new, CTX)
    assert "transition_contradicted" not in item_flags(item, plan, mostly_old, CTX)


def test_before_the_latest_change_is_ambiguous_after_a_reversion(three_states):
    e = three_states
    a, b, c = (s.state_id for s in e.states[:3])
    there = Drift(drift_id="d1", trait_id=e.trait_id, from_state=a, to_state=b, onset_turn=20,
                  change_point_turn=30, settle_turn=40)
    back = Drift(drift_id="d2", trait_id=e.trait_id, from_state=b, to_state=a, onset_turn=60,
                 change_point_turn=70, settle_turn=80)
    plan = _plan([_trait(e, a)], [there, back])
    cues = {e.trait_id: [(5, a), (10, a), (32, b), (35, b), (50, b), (75, a)]}
    reverted = _item(e, "temporal", "post_change", 90, _answers(e, 1)[0], [_answers(e, 0)[0], _answers(e, 2)[0]])
    assert "temporal_ambiguous" in item_flags(reverted, plan, cues, CTX)
    clean = _item(e, "temporal", "post_change", 90, _answers(e, 1)[0], [_answers(e, 2)[0], _answers(e, 2)[1]])
    assert item_flags(clean, plan, cues, CTX) == []
    once = _plan([_trait(e, a)], [there])
    before = _item(e, "temporal", "post_change", 50, _answers(e, 0)[0], [_answers(e, 1)[0], _answers(e, 2)[0]])
    assert item_flags(before, once, cues, CTX) == [], "the state the change led to did not hold before it"
    # the blind read of seed 2747: "before things shifted" offered the state the user recalled from years ago
    def told(past_turn: int) -> EvidenceIndex:
        turns = [Turn(persona_id="p01", session=1, turn=n, timestamp="2024-05-01T10:00:00", user="Hi.",
                      assistant="Hello.", annotation=Annotation(kind="cue", trait_id=e.trait_id, state_id=s))
                 for n, s in cues[e.trait_id] if n < 40]
        turns.append(Turn(persona_id="p01", session=1, turn=past_turn, timestamp="2024-05-01T10:00:00",
                          user="Years ago I did that.", assistant="A long time ago.",
                          annotation=Annotation(kind="decoy", trait_id=e.trait_id, state_id=c)))
        return EvidenceIndex.build(sorted(turns, key=lambda t: t.turn))

    assert "temporal_ambiguous" in item_flags(before, once, cues, CTX, told(45))
    assert "temporal_ambiguous" not in item_flags(before, once, cues, CTX, told(55)), "recalled after the question"


def test_a_wrong_option_another_trait_supports_now_is_a_second_right_answer():
    text, (other_trait, other_state) = next(
        (t, tuple(c[0])) for t, c in CATALOG.conflicts.items()
        if any(norm(t) in {norm(x) for s in tr.states for x in s.answers} for tp in CATALOG.topics
               for tr in tp.traits if tr.trait_id != c[0][0]))
    e = next(tr for tp in CATALOG.topics for tr in tp.traits
             if tr.trait_id != other_trait and any(norm(text) in {norm(x) for x in s.answers} for s in tr.states))
    holder = next(i for i, s in enumerate(e.states) if norm(text) in {norm(x) for x in s.answers})
    gold_i = next(i for i in range(len(e.states)) if i != holder)
    other = next(tr for tp in CATALOG.topics for tr in tp.traits if tr.trait_id == other_trait)
    gold_state = e.states[gold_i].state_id
    cues = {e.trait_id: [(10, gold_state), (20, gold_state)]}
    item = _item(e, "current_state", "stable", 50, _answers(e, gold_i)[0], [text])
    supported = _plan([_trait(e, gold_state), _trait(other, other_state)], [])
    elsewhere = next(s.state_id for s in other.states if s.state_id != other_state)
    not_supported = _plan([_trait(e, gold_state), _trait(other, elsewhere)], [])
    assert "second_supported_option" in item_flags(item, supported, cues, CTX)
    if (other_trait, elsewhere) not in {tuple(c) for c in CATALOG.conflicts[text]}:
        assert "second_supported_option" not in item_flags(item, not_supported, cues, CTX)


def _turn(n: int, user: str, kind: str = "filler", trait: str | None = None) -> Turn:
    return Turn(persona_id="p01", turn=n, session=1, timestamp="2024-01-01T10:00:00", user=user, assistant="Sure.",
                annotation=Annotation(kind=kind, trait_id=trait))


def test_a_wrong_option_whose_words_the_user_said_on_another_subject_is_flagged_from_that_turn_on(three_states):
    e = three_states
    a = e.states[0].state_id
    wrong = _answers(e, 1)[0]
    words = sorted(stemmed_words(wrong))
    assert len(words) >= 2, wrong
    plan = _plan([_trait(e, a)], [])
    cues = {e.trait_id: [(10, a), (20, a)]}
    item = _item(e, "current_state", "stable", 50, _answers(e, 0)[0], [wrong])
    # two of the option's words in one turn about something else, before the question: a reader hears it
    said = EvidenceIndex.build([_turn(30, f"Could you explain {words[0]} and {words[1]} to me?", "cue", "other")])
    assert "said_elsewhere_option" in item_flags(item, plan, cues, CTX, said)
    # the same turn after the question, one shared word only, or a turn on the question's own trait: quiet
    later = EvidenceIndex.build([_turn(60, f"Could you explain {words[0]} and {words[1]} to me?", "cue", "other")])
    one = EvidenceIndex.build([_turn(30, f"Could you explain {words[0]} to me?")])
    own = EvidenceIndex.build([_turn(30, f"Could you explain {words[0]} and {words[1]} to me?", "cue", e.trait_id)])
    for index in (later, one, own):
        assert "said_elsewhere_option" not in item_flags(item, plan, cues, CTX, index)
    assert "said_elsewhere_option" not in item_flags(item, plan, cues, CTX), "no turns given: not checked"
    # the gold itself may be what the user said: it is the answer, not a second one
    gold_words = sorted(stemmed_words(_answers(e, 0)[0]) - stemmed_words(wrong))
    assert len(gold_words) >= 2, _answers(e, 0)[0]
    gold_said = EvidenceIndex.build([_turn(30, f"Tell me about {gold_words[0]} and {gold_words[1]}.", "cue", "x")])
    assert "said_elsewhere_option" not in item_flags(item, plan, cues, CTX, gold_said)
