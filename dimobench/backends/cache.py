"""A content-addressed cache of successful LLM replies, shared across runs (STYLE.md convention 8).

The key is sha256 of canonical JSON of (provider, model, messages, response schema, temperature, seed); the
base URL, the key and the request's ``item`` label are not part of it. Entries are JSON lines appended and
flushed one at a time, so a killed run loses at most the line it was writing; a truncated or garbled line is
skipped when the file is read. Only validated replies are stored; errors never are, and neither is unseeded
sampling (temperature above 0 without a seed). The file holds the reply text and token counts, never a key.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from dimobench.backends.base import BaseLLM, ChatLLM, Request, Response, Usage, check_reply, parse_reply
from dimobench.backends.wire import strict_schema

CACHE_FILE = "llm-replies.jsonl"


def default_cache_dir() -> Path:
    """``$DIMOBENCH_CACHE_DIR``, else the user cache directory (platformdirs)."""
    env = os.environ.get("DIMOBENCH_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("dimobench"))


def cache_key(provider: str, model: str, request: Request) -> str:
    """The cache key of ``request`` to this model: sha256 of the canonical JSON of what shapes the reply."""
    payload = {
        "provider": provider, "model": model,
        "messages": [m.model_dump() for m in request.messages],
        "schema": strict_schema(request.response_model),
        "temperature": request.temperature, "seed": request.seed,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def cacheable(request: Request) -> bool:
    return request.seed is not None or request.temperature == 0


class ReplyCache:
    """The JSON-lines store. Thread-safe within a process; appends from several processes interleave whole lines."""

    def __init__(self, directory: Path | None = None) -> None:
        self.path = (directory or default_cache_dir()) / CACHE_FILE
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        for line in raw.splitlines():
            try:
                entry = json.loads(line)
                self._entries[entry["key"]] = entry
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill, or garbage: skip it
        if raw and not raw.endswith(b"\n"):
            with self.path.open("ab") as fh:  # close off a truncated last line so the next append stands alone
                fh.write(b"\n")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for ``key`` (reply text and usage), or None on a miss."""
        with self._lock:
            self._load()
            return self._entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Append ``entry`` under ``key`` to the file (one flushed line) and keep it in memory."""
        entry = {"key": key, **entry}
        line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode()
        with self._lock:
            self._load()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)  # one write per entry, O_APPEND: no interleaving inside a line
            finally:
                os.close(fd)
            self._entries[key] = entry

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._entries)


class CachedLLM:
    """Wraps a backend: answers from the cache when it can, sends only misses, stores what validated."""

    def __init__(self, inner: ChatLLM, cache: ReplyCache) -> None:
        self.inner, self.cache = inner, cache
        self.provider, self.model = _split(inner.spec)

    @property
    def spec(self) -> str:
        """The wrapped backend's ``provider/model``."""
        return self.inner.spec

    @property
    def json_mode(self) -> str | None:
        """The wrapped backend's structured-output mode (``auto`` until its first call probed it)."""
        return getattr(self.inner, "json_mode", None)

    def key(self, request: Request) -> str:
        """The reply-cache key of ``request`` for the wrapped backend."""
        return cache_key(self.provider, self.model, request)

    def is_cached(self, request: Request) -> bool:
        """Whether ``request`` would be answered from the cache without a call."""
        return cacheable(request) and self.cache.get(self.key(request)) is not None

    def complete(self, request: Request) -> Response:
        """The cached reply when it still validates, else the wrapped backend's reply (stored when cacheable)."""
        key = self.key(request) if cacheable(request) else None
        hit = self.cache.get(key) if key else None
        if hit is not None:
            try:
                parsed = check_reply(request, parse_reply(hit["text"], request.response_model), hit["text"])
                return Response(text=hit["text"], parsed=parsed, cached=True, attempts=0)
            except Exception:
                pass  # an entry that no longer validates is treated as a miss
        response = self.inner.complete(request)
        if key:
            self.cache.put(key, {"provider": self.provider, "model": self.model, "text": response.text,
                                 "usage": response.usage.model_dump()})
        return response


def _split(spec: str) -> tuple[str, str]:
    provider, _, model = spec.partition("/")
    return provider, model


__all__ = ["BaseLLM", "CachedLLM", "ReplyCache", "Usage", "cache_key", "default_cache_dir"]
