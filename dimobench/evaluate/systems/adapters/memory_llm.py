"""The LLM behind the full-mode adapters (``mem0``, ``amem``): dimobench's own backend, cached and retried.

``--memory-llm openai/<model>`` (``--base-url`` reaches any OpenAI-compatible server; the key comes from
``OPENAI_API_KEY`` only) is resolved with :func:`dimobench.backends.resolve_backend`, so each library's calls
go through the project's retry policy (429 with Retry-After, 5xx, timeouts, invalid or schema-invalid JSON),
its content-addressed reply cache (a rerun of the same suite sends nothing) and its key redaction. A small
facade in each adapter speaks the library's own LLM interface and replaces its client, so the libraries never
see the key. Calls go out at temperature 0 with seed 0 (cacheable) and a JSON schema for what the library parses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, create_model

from dimobench.backends import normalize_spec, resolve_backend
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.usage import Ledger
from dimobench.errors import ConfigError, DimobenchError
from dimobench.evaluate.protocol import SystemFailure

FLAG = "--memory-llm"
TEMPERATURE = 0.0
SEED = 0

__all__ = ["FLAG", "MemoryLLM", "check_memory_llm", "describe_memory_llm", "model_from_schema", "needs_llm"]


def check_memory_llm(spec: str | None) -> str | None:
    """None when unset, else the normalised ``provider/model``; ``ConfigError`` in one line for a bad one."""
    if spec is None or not spec.strip():
        return None
    spec = normalize_spec(spec, FLAG)
    if spec == "offline":
        raise ConfigError(f"{FLAG} offline: mem0 and amem need an LLM (openai/<model>); the offline adapters are "
                          "mem0-raw and amem-raw")
    return spec


def needs_llm(name: str) -> SystemFailure:
    """The one line a full-mode system gives when no memory LLM is configured."""
    return SystemFailure(f"system {name!r} runs its library's LLM memory policy and needs an LLM: pass {FLAG} "
                         f"openai/<model> (--base-url for an OpenAI-compatible server, key from OPENAI_API_KEY), "
                         f"or use {name}-raw offline")


def describe_memory_llm(spec: str) -> dict[str, Any]:
    """What report.json records about the memory LLM (no URL, no key)."""
    provider, _, model = spec.partition("/")
    return {"provider": provider, "model": model, "temperature": TEMPERATURE, "seed": SEED}


class MemoryLLM:
    """One structured call at a time for a memory library, counted in a :class:`Ledger`."""

    def __init__(self, spec: str, *, base_url: str | None = None, cache_dir: Path | None = None,
                 llm: ChatLLM | None = None) -> None:
        """Resolve ``spec`` now, so a missing key or SDK fails before any suite is replayed."""
        self.base_url = base_url
        try:
            self.spec = check_memory_llm(spec) or ""
            if not self.spec:
                raise ConfigError(f"{FLAG} is empty")
            self.llm: ChatLLM = llm or resolve_backend(self.spec, base_url=base_url,  # type: ignore[assignment]
                                                      cache_dir=cache_dir)
        except DimobenchError as exc:
            raise SystemFailure(str(exc)) from None
        self.ledger = Ledger(self.spec)
        self.last_error = ""
        self._mark = (0, 0, 0)

    def complete(self, messages: list[dict[str, Any]], model: type[BaseModel], max_tokens: int, item: str) -> str:
        """The reply's JSON text; the backend's ``BackendError`` (redacted) after its last retry."""
        request = Request(messages=[Message(role=m["role"], content=str(m["content"])) for m in messages],
                          response_model=model, temperature=TEMPERATURE, seed=SEED, max_tokens=max_tokens, item=item)
        try:
            resp = self.ledger.call(self.llm, request)
        except Exception as exc:
            self.last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise
        return resp.text

    def mark(self) -> None:
        """Start counting afresh (a new persona)."""
        s = self.ledger
        self._mark = (s.calls, s.cache_hits, s.failures)

    def counts(self) -> dict[str, int]:
        """Calls sent, cache hits and failures since :meth:`mark` (for ``stats()``)."""
        s, (calls, hits, failures) = self.ledger, self._mark
        return {"llm_calls": s.calls - calls, "llm_cache_hits": s.cache_hits - hits,
                "llm_failures": s.failures - failures}

    def check_alive(self, name: str, failures_before: int) -> None:
        """Fail the system when its calls fail and none has ever succeeded (a bad key, model or URL), instead of
        letting a library that swallows LLM errors (A-Mem) run a whole suite on its fallbacks."""
        s = self.ledger
        if s.failures > failures_before and s.calls + s.cache_hits - s.failures == 0:
            raise SystemFailure(f"system {name!r}: its LLM calls fail ({self.last_error})")


_TYPES: dict[str, type] = {"string": str, "boolean": bool, "integer": int, "number": float}
_MODELS: dict[str, type[BaseModel]] = {}


def _annotation(node: dict[str, Any]) -> Any:
    kind = node.get("type")
    if kind in _TYPES:
        return _TYPES[kind]
    if kind == "array":
        return list[_annotation(node.get("items") or {"type": "string"})]  # type: ignore[misc]
    if kind == "object":
        return model_from_schema(node, "item")
    raise SystemFailure(f"a memory library asked its LLM for JSON schema type {kind!r}, which the adapter "
                        "does not translate")


def model_from_schema(schema: dict[str, Any], name: str = "response") -> type[BaseModel]:
    """A pydantic model for a library's plain JSON schema (objects, arrays, strings, numbers, booleans), built
    once per schema; dimobench's backend sends it back as a strict schema (every property required)."""
    key = json.dumps([name, schema], sort_keys=True)
    if key not in _MODELS:
        fields: dict[str, Any] = {p: (_annotation(s), ...) for p, s in (schema.get("properties") or {}).items()}
        _MODELS[key] = create_model(name, **fields)
    return _MODELS[key]
