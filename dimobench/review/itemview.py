"""What the web app shows of one item beyond its sheet row: the dialogue around the evidence, from the suite.

Only dialogue text leaves this module (turn number, timestamp, speaker, the user and assistant lines). Turn
annotations (cue or decoy, the state shown), verifier verdicts and the gold index stay out, as they stay out
of the blind sheet. No turn after the item's ``ask_turn`` is shown: the question is asked right after it, and
a later turn would let an annotator judge with what the memory system cannot know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dimobench.errors import InputError
from dimobench.suite.schema import QAItem, Turn

AROUND = 2
"""Turns of context shown on each side of an evidence turn."""
ASK_CONTEXT = 3
"""Turns shown at the ask turn (the ask turn and the two before it, as the sheet's ``context`` column)."""


def turn_view(turn: Turn, evidence: bool = False, ask: bool = False) -> dict[str, Any]:
    """The plain text of one turn, flagged as evidence or as the ask turn."""
    return {"turn": turn.turn, "timestamp": turn.timestamp, "speaker": turn.speaker or "user", "user": turn.user,
            "assistant": turn.assistant, "evidence": evidence, "ask": ask}


def spans(evidence: Sequence[int], ask_turn: int, around: int = AROUND) -> list[tuple[int, int]]:
    """Turn ranges to show: ``around`` turns each side of each evidence turn and the ask turn's context.

    Ranges that overlap or touch are merged, and none goes past ``ask_turn`` or below turn 1.

    Returns:
        Sorted, disjoint ``(first, last)`` pairs, both ends included.
    """
    wanted = [(max(1, e - around), min(ask_turn, e + around)) for e in evidence if 1 <= e <= ask_turn]
    wanted.append((max(1, ask_turn - ASK_CONTEXT + 1), ask_turn))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(wanted):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


@dataclass
class SuiteView:
    """The suite a sample was drawn from, indexed for the pages: questions by id, turns by persona and number."""

    path: Path
    qa: dict[str, QAItem]
    turns: dict[str, dict[int, Turn]]

    @classmethod
    def load(cls, path: Path, qa_ids: Sequence[str]) -> SuiteView:
        """Load ``path`` and check it holds every sampled question.

        Raises:
            InputError: not a suite, or a sampled ``qa_id`` it does not have (a sample of another suite).
        """
        from dimobench.suite.load import load_suite

        suite = load_suite(path)
        qa = {q.qa_id: q for q in suite.qa}
        missing = [q for q in qa_ids if q not in qa]
        if missing:
            raise InputError(f"{missing[0]} is not a question of this suite ({len(missing)} sampled item(s) are "
                             "not): give the suite the sample was drawn from", path, None, "--suite")
        turns: dict[str, dict[int, Turn]] = {}
        for t in suite.dialogues:
            turns.setdefault(t.persona_id, {})[t.turn] = t
        return cls(path, qa, turns)

    def dialogue(self, qa_id: str) -> list[list[dict[str, Any]]]:
        """The turns around the evidence of ``qa_id``, one list per :func:`spans` range, in turn order."""
        item = self.qa[qa_id]
        turns = self.turns.get(item.persona_id, {})
        evidence = set(item.evidence_turns)
        out = []
        for lo, hi in spans(item.evidence_turns, item.ask_turn):
            shown = [turn_view(turns[n], n in evidence, n == item.ask_turn) for n in range(lo, hi + 1) if n in turns]
            if shown:
                out.append(shown)
        return out

    def trait_history(self, qa_id: str) -> list[dict[str, Any]]:
        """The persona's turns up to the ask turn that the suite ties to the question's trait, oldest first."""
        item = self.qa[qa_id]
        if item.trait_id is None:
            return []
        turns = self.turns.get(item.persona_id, {})
        evidence = set(item.evidence_turns)
        return [turn_view(t, t.turn in evidence, t.turn == item.ask_turn) for n, t in sorted(turns.items())
                if n <= item.ask_turn and t.annotation is not None and t.annotation.trait_id == item.trait_id]
