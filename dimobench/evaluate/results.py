"""The typed face of ``report.json``: what :func:`dimobench.api.evaluate` returns.

``report.json`` is written from the same figures, so a loaded report and a returned one validate alike
(:meth:`EvalReport.load`). Over several suites every plain number also gets a ``<name>_std`` beside it; those,
and the LLM-only figures (``failed``, ``judge_agreement``), are kept as extra fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

Interval = list[float | None] | None
"""A 95% bootstrap interval ``[low, high]`` (None when it cannot be computed or bootstrap is off)."""


class Latency(BaseModel):
    """Milliseconds per call of the system's own methods (P50 and P95), measured during the replay."""

    model_config = ConfigDict(extra="allow")

    observe_p50: float | None = None
    observe_p95: float | None = None
    recall_p50: float | None = None
    recall_p95: float | None = None


class EvidenceRecall(BaseModel):
    """Share of a question's evidence turns that the system's top-k recalled items cite."""

    model_config = ConfigDict(extra="allow")

    k: int | float
    value: float | None
    """Mean over questions with evidence; None when no recalled item carries source turns."""
    by_type: dict[str, float | None] = {}
    """The same, by ``qa_type`` (generated suites) or the source benchmark's category (imported ones)."""
    questions: int | float = 0
    skipped: int | float = 0


class SystemScores(BaseModel):
    """One system's figures: on one suite, or the mean over suites (``report.systems``)."""

    model_config = ConfigDict(extra="allow")

    n: int | float
    """Scored questions."""
    overall: float | None
    """Accuracy (higher is better)."""
    by_type: dict[str, float | None] = {}
    by_phase: dict[str, float | None] = {}
    stale_rate: float | None = None
    """Of questions with a stale option, the share where it was chosen (lower is better)."""
    confounder_rate: float | None = None
    """Of questions with a confounder option, the share where it was chosen (lower is better)."""
    plateau: float | None = None
    recovery_turns: list[int | float | None] = []
    """Per change point, turns until the windowed accuracy on the changed trait recovered (None: never)."""
    recovery_turns_mean: float | None = None
    recovered_share: float | None = None
    latency_ms: Latency | None = None
    evidence_recall: EvidenceRecall | None = None
    normalized: float | None = None
    """(system - none) / (oracle - none), when both reference systems ran."""
    windows: list[dict[str, Any]] | None = None
    """Per-suite only: accuracy per window of turns."""
    memory: list[dict[str, Any]] | None = None
    """Per-suite only: the mean of each numeric ``stats()`` field over personas, per sampled turn."""
    overall_ci: Interval = None
    stale_rate_ci: Interval = None
    confounder_rate_ci: Interval = None
    by_type_ci: dict[str, Interval] | None = None
    by_phase_ci: dict[str, Interval] | None = None
    higher_is_better: dict[str, bool] | None = None


class EvalReport(BaseModel):
    """An evaluation: every system's figures over all suites, each suite alone, and the run's settings."""

    format: str
    format_version: int
    metric_version: str
    systems: dict[str, SystemScores]
    """System -> figures pooled or averaged over the suites, with intervals."""
    suites: dict[str, dict[str, SystemScores]]
    """Suite key -> system -> figures on that suite alone."""
    config: dict[str, Any]
    """k, window, seed, suites, answerer, prompts and versions: everything that produced these figures."""

    @classmethod
    def load(cls, path: str | Path) -> EvalReport:
        """Read a ``report.json`` (or the folder that holds one)."""
        p = Path(path)
        p = p / "report.json" if p.is_dir() else p
        return cls.model_validate_json(p.read_text(encoding="utf-8"))
