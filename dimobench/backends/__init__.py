"""LLM backends, resolved from ``"provider/model"`` strings; the built-in ``offline`` one needs nothing.

Providers map to lazy ``"module:Class"`` strings so an SDK is imported only when its backend is chosen
(STYLE.md convention 3). A provider without a model gets its default (``openai`` -> ``openai/gpt-4o``,
``gemini`` -> ``gemini/gemini-2.5-pro``). Real backends come wrapped in the reply cache.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from dimobench.backends.base import LLM, BaseLLM, ChatLLM, Message, Request, Response, Usage
from dimobench.errors import BackendError, ConfigError

__all__ = ["LLM", "BaseLLM", "ChatLLM", "Message", "OfflineBackend", "Request", "Response", "Usage",
           "normalize_spec", "resolve_backend"]

PROVIDERS: dict[str, tuple[str, str, str]] = {
    "openai": ("dimobench.backends.openai:OpenAIBackend", "gpt-4o", "openai"),
    "gemini": ("dimobench.backends.gemini:GeminiBackend", "gemini-2.5-pro", "google-genai"),
}
"""provider -> (lazy class path, default model, the pip package its SDK comes from)."""


class OfflineBackend:
    """The deterministic built-in generator: stages render text from the catalog's templates.

    Randomness comes from the stage's seeded generator, so the same seed gives the same bytes.
    """

    spec = "offline"


def normalize_spec(spec: str, flag: str = "--generator") -> str:
    """``openai`` -> ``openai/gpt-4o``; check the provider exists. ``offline`` stays ``offline``."""
    spec = spec.strip()
    if spec == "offline":
        return spec
    provider, _, model = spec.partition("/")
    if provider not in PROVIDERS:
        raise ConfigError(f"{flag} {spec!r}: unknown provider {provider!r} (choose offline, "
                          f"{', '.join(p + '/<model>' for p in PROVIDERS)})")
    return f"{provider}/{model or PROVIDERS[provider][1]}"


def resolve_backend(spec: str, *, base_url: str | None = None, cache_dir: Path | None = None,
                    use_cache: bool = True, timeout: float = 120.0, json_mode: str | None = None) -> LLM:
    """Return the backend for ``spec``; real ones are wrapped in the shared reply cache.

    ``json_mode`` (``json_schema``, ``json_object``, ``prompt`` or ``auto``; see
    :mod:`dimobench.backends.jsonmode`) defaults to the enclosing ``jsonmode.json_mode`` block's, which the
    CLI's ``--json-mode`` sets for every role of a command.

    Raises ``BackendError`` in one line when the SDK is missing or the key is not in the environment.
    """
    spec = normalize_spec(spec)
    if spec == "offline":
        return OfflineBackend()
    provider, _, model = spec.partition("/")
    path, _, package = PROVIDERS[provider]
    module_name, _, cls_name = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
        backend: ChatLLM = cls(model=model, base_url=base_url, timeout=timeout, json_mode=json_mode)
    except ImportError as exc:
        raise BackendError(f"the {provider} backend needs the {package} package ({exc.name} is missing): "
                           f"pip install {package}") from None
    if not use_cache:
        return backend
    from dimobench.backends.cache import CachedLLM, ReplyCache

    return CachedLLM(backend, ReplyCache(cache_dir))
