"""How a backend asks for structured output, chosen per run (``--json-mode``) or found by one probe call.

- ``json_schema``: the server enforces the JSON schema (OpenAI strict mode, Gemini ``response_json_schema``,
  vLLM, llama.cpp's server, Ollama >= 0.5, LM Studio). The default, and what every request sent before.
- ``json_object``: the server only promises *some* JSON object (``response_format={"type": "json_object"}``,
  Gemini ``response_mime_type`` alone); the schema goes into the prompt.
- ``prompt``: no structured output at all (``transformers serve``, servers that reject ``response_format``);
  the schema goes into the prompt and the reply parser digs the JSON out of fences and prose.
- ``auto``: one probe call per backend and run decides. The probe asks for a constant the model cannot guess
  (``PROBE_VALUE``) under ``json_schema`` without mentioning it in the prompt: only a server that enforces the
  schema answers it. Failing that, ``json_object`` is kept when the server accepts it and the model answers a
  bare object; else ``prompt``.

The setting is process-wide like the run's time budget (:func:`dimobench.backends.limits.run_limits`): a
process runs one command, and every backend it resolves (generator, verifier, answerer, judges, sub-agents)
takes the command's ``--json-mode``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, cast

from pydantic import BaseModel, ValidationError

from dimobench.errors import ConfigError

JsonMode = Literal["json_schema", "json_object", "prompt"]
MODES: tuple[str, ...] = ("json_schema", "json_object", "prompt", "auto")
DEFAULT = "json_schema"
PROBE_VALUE = "dimobench-probe-7f3a"
PROBE_MAX_TOKENS = 48


class Probe(BaseModel):
    """The probe's reply: one constant no model writes unless the server holds it to the schema."""

    probe: Literal["dimobench-probe-7f3a"]


def probe_passed(text: str | None) -> bool:
    """Whether a probe reply is bare JSON holding the constant: what only an enforced schema gives."""
    try:
        Probe.model_validate_json(text or "")
    except ValidationError:
        return False
    return True


class _Setting:
    mode: str = DEFAULT


def check_mode(mode: str, flag: str = "--json-mode") -> str:
    """``mode`` when it is one of :data:`MODES`, else a ``ConfigError`` listing them."""
    if mode not in MODES:
        raise ConfigError(f"{flag} {mode!r}: choose one of {', '.join(MODES)}")
    return mode


@contextmanager
def json_mode(mode: str | None) -> Iterator[None]:
    """Inside this block, backends resolved without an explicit mode use ``mode`` (None: the default)."""
    saved = _Setting.mode
    _Setting.mode = check_mode(mode) if mode is not None else DEFAULT
    try:
        yield
    finally:
        _Setting.mode = saved


def current() -> str:
    """The mode backends resolved now get (``json_schema`` outside any :func:`json_mode` block)."""
    return _Setting.mode


def resolved(mode: str) -> JsonMode:
    """``mode`` narrowed once it is no longer ``auto``."""
    if mode == "auto":
        raise ValueError("json mode not probed yet")
    return cast(JsonMode, mode)
