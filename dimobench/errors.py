"""One error hierarchy; the CLI prints any of these as one line and exits 2."""

from __future__ import annotations

from pathlib import Path


class DimobenchError(Exception):
    """Base of every error a user can fix."""


class InputError(DimobenchError):
    """Bad input, located as precisely as we can: ``file:line: field: message``."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.message = path, line, field, message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{field + ': ' if field else ''}{message}")


class ConfigError(DimobenchError):
    """A command-line or config value that cannot work (e.g. too many drifts for the turns)."""


class BackendError(DimobenchError):
    """An LLM backend could not be used or failed after its retries."""


class ResumeConflict(DimobenchError):
    """``--resume`` found a run made with a different configuration."""
