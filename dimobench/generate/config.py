"""Generation settings: one pydantic model, presets, and the checks that make a config workable."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from dimobench.errors import ConfigError

MIN_TURNS_PER_DRIFT = 60
"""A drift needs room for a stable stretch, a transition, post-change reinforcement and questions."""
MIN_TURNS = 30
NAMES_PER_PERSONA = 6
"""First names one persona can use up: its own and up to five people it mentions (stage ``personas`` draws 3-5
relations); no first name repeats inside a suite, so the catalog's first names bound ``--personas``."""

PRESETS: dict[str, dict[str, int]] = {
    "dimobench": {"personas": 5, "turns": 350, "drifts": 1, "qa": 200},
    "xl": {"personas": 5, "turns": 1050, "drifts": 3, "qa": 420},
}
"""Per paper: DiMoBench is 5 x 350 turns, 1 drift, 1,000 QA; DiMoBench-XL 5 x 1,050 turns, 3 drifts, 2,100 QA."""


class GenerateConfig(BaseModel):
    """Everything that decides a generated suite's bytes (with the catalog and dimobench's version)."""

    seed: int = 0
    preset: Literal["dimobench", "xl"] | None = None
    personas: int = Field(5, ge=1)
    turns: int = 350
    """Turns per persona."""
    drifts: int = 1
    """Drifts per persona; they never overlap and may revisit a trait (A -> B -> C)."""
    qa: int | None = None
    """Questions per persona; default round(0.4 x turns)."""
    traits: int = Field(6, ge=4, le=8)
    """Traits per persona (each from a different topic)."""
    transition_frac: float = Field(0.12, gt=0, le=0.4)
    """Transition length as a share of each drift's segment of the timeline."""
    post_change_frac: float = Field(0.12, gt=0, le=0.4)
    """post_change length as a share of each drift's segment."""
    cue_rate: float = Field(0.4, gt=0, le=0.8)
    """Share of turns that are behavioural cues in stable, transition and post_change phases."""
    maintenance_cue_rate: float = Field(0.28, gt=0, le=0.8)
    """Share of cue turns in maintenance (low-frequency reminders)."""
    confounder_rate: float = Field(0.16, ge=0, le=0.5)
    """Share of turns turned into chatter, entity confounders or temporal decoys."""
    generator: str = "offline"
    verifier: str = "offline"
    qa_rules: Literal["v1", "valid"] = "v1"
    """``valid``: the validity rules of :mod:`dimobench.suite.questions` (grounded gold, no present-tense question
    on a trait in transition, temporal questions only after a first change, conflict texts never offered, the
    persona's own city). ``v1`` (default) keeps the suites of earlier versions byte for byte: with the shipped
    catalog the rules alone cost PreCoMem its lead over ``full`` (docs/measurements.md, "Validity")."""

    @property
    def qa_per_persona(self) -> int:
        """Questions to ask per persona: ``qa`` when set, else 40% of ``turns`` (rounded)."""
        return self.qa if self.qa is not None else round(0.4 * self.turns)

    def check(self) -> GenerateConfig:
        """Raise ``ConfigError`` with one clear line when the settings cannot make a suite."""
        if self.turns < 1:
            raise ConfigError(f"--turns must be at least {MIN_TURNS} (got {self.turns})")
        if self.turns < MIN_TURNS:
            raise ConfigError(f"--turns must be at least {MIN_TURNS} (got {self.turns})")
        if self.drifts < 0:
            raise ConfigError(f"--drifts must be 0 or more (got {self.drifts})")
        if self.drifts * MIN_TURNS_PER_DRIFT > self.turns:
            most = self.turns // MIN_TURNS_PER_DRIFT
            raise ConfigError(f"--drifts {self.drifts} is too many for --turns {self.turns}: each drift needs "
                              f"{MIN_TURNS_PER_DRIFT} turns, so at most {most}")
        if self.qa is not None and self.qa < 0:
            raise ConfigError(f"--qa must be 0 or more (got {self.qa})")
        if self.qa_per_persona > 2 * self.turns:
            most = 2 * self.turns
            raise ConfigError(f"--qa {self.qa_per_persona} is too many for {self.turns} turns (at most {most})")
        most = max_personas()
        if self.personas > most:
            raise ConfigError(f"--personas {self.personas} is too many for the catalog: each persona takes up to "
                              f"{NAMES_PER_PERSONA} first names (its own and the people it mentions) and a last "
                              f"name, none shared with another persona, so at most {most}")
        from dimobench.backends import normalize_spec

        # "openai" alone means openai/gpt-4o; unknown providers fail here, before anything is written
        return self.model_copy(update={"generator": normalize_spec(self.generator, "--generator"),
                                       "verifier": normalize_spec(self.verifier, "--verifier")})


def newer_rules(qa_rules: str, text_rules: str | None) -> bool:
    """Whether a suite follows the validity rules or a catalog of text rules v3: what the stages' ``RULES_VERSION``
    behaviour covers ({city} bound to the persona's city, the QA rules of session 22); the default rules on the
    v1/v2 catalogs keep the bytes and fingerprints of earlier versions."""
    return qa_rules != "v1" or text_rules == "v3"


def max_personas() -> int:
    """The most personas one suite can have with the catalog in use (``$DIMOBENCH_CATALOG`` or the packaged one)."""
    from dimobench.catalog import load_catalog

    catalog = load_catalog()
    return min(len(catalog.first_names) // NAMES_PER_PERSONA, len(catalog.last_names))


class RunOptions(BaseModel):
    """How a run is carried out (LLM calls, processes); none of these change a suite's bytes, so no fingerprint
    covers them."""

    base_url: str | None = None
    """An OpenAI-compatible server (or a Gemini endpoint) instead of the provider's default."""
    cache_dir: Path | None = None
    """Where the reply cache lives (default ``$DIMOBENCH_CACHE_DIR``, else the user cache directory)."""
    concurrency: int = Field(8, ge=1, le=256)
    """LLM calls in flight at once."""
    timeout: float = Field(120.0, gt=0)
    """Seconds per HTTP request."""
    workers: int | None = Field(None, ge=1, le=256)
    """Processes writing personas at once in stages 3-5 (None: :func:`dimobench.generate.parallel.auto_workers`);
    any number gives the same bytes."""


def make_config(preset: str | None = None, **overrides: object) -> GenerateConfig:
    """Build a config from a preset plus explicit overrides (``None`` values are ignored)."""
    values: dict[str, object] = {}
    if preset is not None:
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r} (choose from {', '.join(PRESETS)})")
        values.update(PRESETS[preset], preset=preset)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return GenerateConfig.model_validate(values)
    except Exception as exc:  # pydantic's message is long; keep the first problem on one line
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            err = exc.errors()[0]
            raise ConfigError(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        raise
