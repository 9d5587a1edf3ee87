"""Suite format v1: one pydantic model per record (DESIGN.md section 4).

Field names here are the contract between generate, verify, review, evaluate and the importers. Records accept
extra fields (the format allows additions); required fields and types are enforced.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT = "dimobench-suite"
FORMAT_VERSION = 1

Phase = Literal["stable", "transition", "post_change", "maintenance"]
QAType = Literal["current_state", "temporal", "inference", "stability"]
TurnKind = Literal["cue", "filler", "chatter", "entity", "decoy"]
PHASES: tuple[str, ...] = ("stable", "transition", "post_change", "maintenance")
QA_TYPES: tuple[str, ...] = ("current_state", "temporal", "inference", "stability")


class Record(BaseModel):
    """Base of every suite record: extra fields are kept, declared ones are checked."""

    model_config = ConfigDict(extra="allow")


class State(Record):
    state_id: str
    description: str
    """What holds for the user in this state; benchmark-side."""


class Trait(Record):
    trait_id: str
    topic: str
    states: list[State] = Field(min_length=2)
    initial_state: str
    """``state_id`` the persona starts in."""


class Entity(Record):
    entity_id: str
    name: str
    relation: str
    """How the persona knows them ("brother", "coworker")."""


class Persona(Record):
    persona_id: str
    name: str
    profile: dict[str, object]
    traits: list[Trait]
    entities: list[Entity]


class Drift(Record):
    drift_id: str
    trait_id: str
    from_state: str
    to_state: str
    onset_turn: int
    """First turn of the transition phase (new-state cues start to appear)."""
    change_point_turn: int
    """Last turn of the transition; from the next turn on the latent state is ``to_state``."""
    settle_turn: int
    """Last turn of post_change; maintenance follows until the next drift's onset."""


class PhaseSpan(Record):
    start_turn: int
    end_turn: int
    phase: Phase
    drift_id: str | None


class Schedule(Record):
    persona_id: str
    drifts: list[Drift]
    phases: list[PhaseSpan]


class Annotation(Record):
    kind: TurnKind
    trait_id: str | None = None
    state_id: str | None = None
    entity_id: str | None = None


class Turn(Record):
    persona_id: str
    turn: int = Field(ge=1)
    session: int = Field(ge=1)
    timestamp: str
    user: str
    assistant: str
    annotation: Annotation | None = None
    speaker: str | None = None
    """Imports: who said ``user`` (generated suites leave it unset: the user speaks)."""


class QAItem(Record):
    qa_id: str
    persona_id: str
    ask_turn: int = Field(ge=1)
    """The question is asked after this turn; only turns <= ask_turn may be used."""
    qa_type: QAType | None
    phase: Phase | None
    trait_id: str | None
    drift_id: str | None
    question: str
    options: list[str]
    answer_index: int | None
    answer: str
    stale_index: int | None
    """Option that held earlier and is wrong now (old-memory pull), if any."""
    confounder_index: int | None
    """Option suggested by a confounder turn (premature correction), if any."""
    evidence_turns: list[int]
    source_type: str | None = None
    """Imports: the source benchmark's own category."""


Verdict = Literal["ACCEPT", "REVISE", "REJECT"]
CriterionVerdict = Literal["ACCEPT", "REJECT", "UNSCORED"]


class CriterionResult(Record):
    verdict: CriterionVerdict
    explanation: str


class VerifierInfo(Record):
    provider: str
    model: str
    prompt_hash: str | None


class VerdictRecord(Record):
    qa_id: str
    verdict: Verdict
    criteria: dict[str, CriterionResult]
    verifier: VerifierInfo


class Manifest(Record):
    format: Literal["dimobench-suite"] = FORMAT
    format_version: int = FORMAT_VERSION
    status: Literal["complete", "partial", "imported"] = "complete"
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
