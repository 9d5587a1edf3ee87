"""QA: the four types in their shares, along the whole timeline, with gold answers from the latent plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from dimobench.catalog import content_words, load_catalog
from dimobench.suite.load import load_suite
from dimobench.suite.plan import LatentPlan


def _state_of_option(trait_id: str, text: str) -> str | None:
    for st in load_catalog().trait(trait_id).states:
        if text in st.answers or text in st.recommendations:
            return st.state_id
    return None


def test_xl_shape_and_type_shares(xl_suite: Path) -> None:
    suite = load_suite(xl_suite)
    assert len(suite.personas) == 5 and len(suite.qa) == 2100
    assert all(len(suite.turns_of(p.persona_id)) == 1050 for p in suite.personas)
    for kind, n in suite.manifest.counts["by_qa_type"].items():
        assert 0.15 <= n / 2100 <= 0.35, kind
    for s in suite.schedules:
        assert len(s.drifts) == 3


def test_every_50_turn_window_has_questions(xl_suite: Path) -> None:
    suite = load_suite(xl_suite)
    for p in suite.personas:
        asked = {q.ask_turn // 50 for q in suite.qa if q.persona_id == p.persona_id}
        assert asked >= set(range(1050 // 50))


def test_gold_comes_from_the_plan_and_questions_do_not_leak(small_suite: Path) -> None:
    suite = load_suite(small_suite)
    plans = {p.persona_id: LatentPlan(p, s) for p, s in zip(suite.personas, suite.schedules)}
    turns = {(t.persona_id, t.turn): t for t in suite.dialogues}
    stale_seen = confounder_seen = 0
    for q in suite.qa:
        plan = plans[q.persona_id]
        assert len(q.options) == 4 and len(set(q.options)) == 4
        assert q.phase == plan.phase_at(q.ask_turn)
        gold_state = _state_of_option(q.trait_id, q.answer)
        if q.qa_type == "temporal":
            change = plan.last_change(q.trait_id, q.ask_turn)
            assert gold_state == change.from_state and q.stale_index is None
        else:
            assert gold_state == plan.state_at(q.trait_id, q.ask_turn)
        if q.qa_type == "stability":
            assert q.trait_id in plan.stable_traits and q.confounder_index is not None
        if q.stale_index is not None:
            stale_seen += 1
            change = plan.last_change(q.trait_id, q.ask_turn)
            assert _state_of_option(q.trait_id, q.options[q.stale_index]) == change.from_state
        if q.confounder_index is not None:
            confounder_seen += 1
            shown = _state_of_option(q.trait_id, q.options[q.confounder_index])
            assert any(t.annotation.state_id == shown and t.annotation.kind in ("entity", "decoy")
                       for (pid, n), t in turns.items() if pid == q.persona_id and n <= q.ask_turn
                       and t.annotation.trait_id == q.trait_id)
        assert q.evidence_turns and max(q.evidence_turns) <= q.ask_turn
        for n in q.evidence_turns:
            ann = turns[(q.persona_id, n)].annotation
            assert ann.kind == "cue" and ann.trait_id == q.trait_id and ann.state_id == gold_state
        description = plan.description(q.trait_id, gold_state)
        assert not content_words(q.question) & content_words(description), q.question
    assert stale_seen > 20 and confounder_seen > 20


@pytest.mark.parametrize("turns,per_persona", [(120, 48), (350, 140)])
def test_default_question_count_is_forty_percent_of_turns(tmp_path: Path, turns: int, per_persona: int) -> None:
    from dimobench.api import generate_suite
    from dimobench.generate.config import make_config

    m = generate_suite(make_config(turns=turns, personas=2, seed=1), tmp_path / "s")
    assert m.counts["qa"] == 2 * per_persona


def test_preset_dimobench_is_the_paper_base_suite(tmp_path: Path) -> None:
    from dimobench.api import generate_suite
    from dimobench.generate.config import make_config

    m = generate_suite(make_config("dimobench", seed=0), tmp_path / "s")
    assert (m.counts["personas"], m.counts["turns"], m.counts["qa"]) == (5, 1750, 1000)
    assert m.config["drifts"] == 1
