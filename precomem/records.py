"""What observe() and recall() return."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Regime(str, Enum):
    """The three update regimes; a str, so ``u.regime == "PROFILE"`` holds."""

    MAINTAIN = "MAINTAIN"
    PROFILE = "PROFILE"
    CORRECT = "CORRECT"

    def __str__(self) -> str:
        return self.value


@dataclass
class Update:
    """The outcome of one observe() call."""

    turn: int
    """The observation's turn."""
    regime: Regime
    """Regime chosen by the gate (or forced to PROFILE when nothing supports a proposition in an empty
    store)."""
    surprisal: float
    """Effective surprisal rho * mix(deviation, contradiction), in [0, 1]."""
    reliability: float
    """rho = 1 - normalised entropy of the top-K retrieval scores, in [0, 1]."""
    deviation: float = 0.0
    """Semantic deviation from the score-weighted evidence embedding, in [0, 1]."""
    contradiction: float = 0.0
    """Max gated contradiction probability over retrieved beliefs, in [0, 1]."""
    propositions: list[str] = field(default_factory=list)
    """What the extractor took from the observation."""
    created: list[str] = field(default_factory=list)
    """Ids of beliefs written this turn."""
    reinforced: list[str] = field(default_factory=list)
    """Ids of beliefs MAINTAIN (or a PROFILE duplicate) reinforced."""
    promoted: list[str] = field(default_factory=list)
    """Ids of hypotheses promoted to facts."""
    decayed: list[str] = field(default_factory=list)
    """Ids of beliefs CORRECT softly decayed."""
    pruned: list[str] = field(default_factory=list)
    """Ids of beliefs removed by the lifecycle this turn."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        d = asdict(self)
        d["regime"] = self.regime.value
        return d


@dataclass(frozen=True)
class RecallItem:
    """One retrieved belief; readable by attribute or as a mapping (``item["text"]``)."""

    id: str
    text: str
    kind: str
    """``fact`` or ``hypothesis``."""
    confidence: float
    score: float
    source_turns: list[int]
    topic: str
    deprecated: bool

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)
