"""One error hierarchy; the CLI prints any of these as one line and exits 2."""

from __future__ import annotations

import re
from pathlib import Path

_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with control characters and line breaks escaped as ``repr`` does (``\\n``, ``\\x1b``).

    Messages quote what a file holds (a key, an id); escaped, a hostile value cannot break the one-line
    error or move the terminal's cursor.
    """
    return _BREAKS.sub(lambda m: repr(m.group())[1:-1], text)


class DimobenchError(Exception):
    """Base of every error a user can fix; its text is always one line (see :func:`one_line`)."""

    def __str__(self) -> str:
        return one_line(super().__str__())


class InputError(DimobenchError):
    """Bad input, located as precisely as we can: ``file:line: field: message``."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        message, field = one_line(message), one_line(field) if field else field
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
