"""LLM backends, resolved from ``"provider/model"`` strings; the built-in ``offline`` one needs nothing."""

from __future__ import annotations

from typing import Protocol

from dimobench.errors import ConfigError


class LLM(Protocol):
    """What a pipeline stage is handed as its ``llm``: a backend with a name it records in the manifest."""

    @property
    def spec(self) -> str:
        """``provider/model`` as recorded in the manifest (``offline`` for the built-in generator)."""
        ...


class OfflineBackend:
    """The deterministic built-in generator: stages render text from the catalog's templates.

    Randomness comes from the stage's seeded generator, so the same seed gives the same bytes.
    """

    spec = "offline"


def resolve_backend(spec: str) -> LLM:
    """Return the backend for ``spec``; only ``offline`` exists in this version."""
    if spec == "offline":
        return OfflineBackend()
    raise ConfigError(f"backend {spec!r} is not available yet: this version generates offline only")
