"""Suite format v1: one pydantic model per record (DESIGN.md section 4).

Field names here are the contract between generate, verify, review, evaluate and the importers. Records accept
extra fields (the format allows additions); required fields and types are enforced.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

FORMAT: Final = "dimobench-suite"
FORMAT_VERSION = 1

Phase = Literal["stable", "transition", "post_change", "maintenance"]
QAType = Literal["current_state", "temporal", "inference", "stability"]
TurnKind = Literal["cue", "filler", "chatter", "entity", "decoy"]
Int = Annotated[int, Strict()]
"""An integer as JSON writes one: ``"5"``, ``5.0`` and ``true`` are refused, not coerced (pydantic is lax)."""
PHASES: tuple[str, ...] = ("stable", "transition", "post_change", "maintenance")
QA_TYPES: tuple[str, ...] = ("current_state", "temporal", "inference", "stability")


class Record(BaseModel):
    """Base of every suite record: extra fields are kept, declared ones are checked."""

    model_config = ConfigDict(extra="allow")


class State(Record):
    """One state a trait can be in (``gym_lifter`` of ``workout_style``, say)."""

    state_id: str
    description: str
    """What holds for the user in this state; benchmark-side."""


class Trait(Record):
    """One attitude or preference of a persona that can drift between its states."""

    trait_id: str
    topic: str
    states: list[State] = Field(min_length=2)
    initial_state: str
    """``state_id`` the persona starts in."""


class Entity(Record):
    """A person the persona mentions; confounder turns show them in states the user is not in."""

    entity_id: str
    name: str
    relation: str
    """How the persona knows them ("brother", "coworker")."""


class Persona(Record):
    """A simulated user: profile, traits and the people they know (one line of ``personas.jsonl``)."""

    persona_id: str
    name: str
    profile: dict[str, object]
    traits: list[Trait]
    entities: list[Entity]


class Drift(Record):
    """One change of a trait from one state to another, with the turns that bound its phases."""

    drift_id: str
    trait_id: str
    from_state: str
    to_state: str
    onset_turn: Int
    """First turn of the transition phase (new-state cues start to appear)."""
    change_point_turn: Int
    """Last turn of the transition; from the next turn on the latent state is ``to_state``."""
    settle_turn: Int
    """Last turn of post_change; maintenance follows until the next drift's onset."""


class PhaseSpan(Record):
    """A run of turns ``start_turn..end_turn`` in one phase, and the drift it belongs to, if any."""

    start_turn: Int
    end_turn: Int
    phase: Phase
    drift_id: str | None


class Schedule(Record):
    """A persona's latent plan: its drifts and the phase of every turn (one line of ``schedules.jsonl``)."""

    persona_id: str
    drifts: list[Drift]
    phases: list[PhaseSpan]


class Annotation(Record):
    """What a turn is for, benchmark-side: its kind and the trait, state or entity it shows."""

    kind: TurnKind
    trait_id: str | None = None
    state_id: str | None = None
    entity_id: str | None = None


class Turn(Record):
    """One exchange of a persona's dialogue (one line of ``dialogues.jsonl``)."""

    persona_id: str
    turn: Int = Field(ge=1)
    session: Int = Field(ge=1)
    timestamp: str
    user: str
    assistant: str
    annotation: Annotation | None = None
    speaker: str | None = None
    """Imports: who said ``user`` (generated suites leave it unset: the user speaks)."""


class QAItem(Record):
    """A multiple-choice question with its gold answer, traps and evidence (one line of ``qa.jsonl``)."""

    qa_id: str
    persona_id: str
    ask_turn: Int = Field(ge=1)
    """The question is asked after this turn; only turns <= ask_turn may be used."""
    qa_type: QAType | None
    phase: Phase | None
    trait_id: str | None
    drift_id: str | None
    question: str
    options: list[str]
    answer_index: Int | None
    answer: str
    stale_index: Int | None
    """Option that held earlier and is wrong now (old-memory pull), if any."""
    confounder_index: Int | None
    """Option suggested by a confounder turn (premature correction), if any."""
    evidence_turns: list[Int]
    source_type: str | None = None
    """Imports: the source benchmark's own category."""


Verdict = Literal["ACCEPT", "REVISE", "REJECT"]
CriterionVerdict = Literal["ACCEPT", "REJECT", "UNSCORED"]


class CriterionResult(Record):
    """The outcome of one verification criterion on one question, and why."""

    verdict: CriterionVerdict
    explanation: str


class VerifierInfo(Record):
    """Which verifier judged a question: provider, model and a hash of its prompt or settings."""

    provider: str
    model: str
    prompt_hash: str | None


class VerdictRecord(Record):
    """The verifier's verdict on one question, per criterion and overall (one line of ``verdicts.jsonl``)."""

    qa_id: str
    verdict: Verdict
    criteria: dict[str, CriterionResult]
    verifier: VerifierInfo


class Manifest(Record):
    """The suite's ``manifest.json``: format, status, the config that made it, counts and file hashes."""

    format: Literal["dimobench-suite"] = FORMAT
    format_version: Int = FORMAT_VERSION
    status: Literal["complete", "partial", "imported", "incomplete"] = "complete"
    """``incomplete``: a stage it was asked for (verification, the audit) has not finished; not to be used."""
    dimobench_version: str
    config: dict[str, object]
    counts: dict[str, object]
    files: dict[str, str]
    """File name -> sha256 of its bytes."""


RECORD_FILES: dict[str, type[Record]] = {
    "personas.jsonl": Persona,
    "schedules.jsonl": Schedule,
    "dialogues.jsonl": Turn,
    "qa.jsonl": QAItem,
    "verdicts.jsonl": VerdictRecord,
}
"""Every JSON Lines file of a suite and the record model of its lines."""
