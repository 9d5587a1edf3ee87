"""``gemini/<model>``: the official google-genai SDK, ``generateContent`` with a JSON schema.

The key comes from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` only. ``base_url`` points the SDK elsewhere
(``types.HttpOptions(base_url=...)``: a proxy, or the tests' local server). The SDK's retries are off
(``HttpRetryOptions(attempts=1)``): the retry policy is :mod:`dimobench.backends.base`'s.
"""

from __future__ import annotations

import os
from typing import Any

from dimobench.backends.base import BaseLLM, InvalidReply, Request, TransientError, Usage
from dimobench.backends.limits import time_left, unreachable
from dimobench.backends.wire import retry_after_seconds
from dimobench.errors import BackendError

DEFAULT_MODEL = "gemini-2.5-pro"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


class GeminiBackend(BaseLLM):
    """``generate_content`` with ``response_mime_type="application/json"`` and ``response_json_schema``."""

    provider = "gemini"

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, timeout: float = 120.0,
                 max_attempts: int | None = None, json_mode: str | None = None) -> None:
        super().__init__(model, timeout=timeout, json_mode=json_mode,
                         **({"max_attempts": max_attempts} if max_attempts else {}))
        from google import genai
        from google.genai import errors, types

        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise BackendError("GEMINI_API_KEY (or GOOGLE_API_KEY) is not set: the gemini backend reads its key "
                               "from the environment")
        self._errors, self._types = errors, types
        options = types.HttpOptions(timeout=int(timeout * 1000), api_version="v1beta",
                                    retry_options=types.HttpRetryOptions(attempts=1),
                                    **({"base_url": base_url} if base_url else {}))
        self.client = genai.Client(api_key=key, http_options=options)
        self.base_url = base_url or DEFAULT_BASE_URL

    def _translate(self, exc: Exception) -> Exception:
        errors = self._errors
        if isinstance(exc, errors.APIError):
            code = exc.code or 0
            headers = getattr(getattr(exc, "response", None), "headers", None)
            if code == 429:
                return TransientError(f"rate limited (429): {_brief(exc)}", retry_after_seconds(headers))
            if code >= 500 or code == 408:
                return TransientError(f"server error {code}: {_brief(exc)}", retry_after_seconds(headers))
            return BackendError(f"request refused ({code}): {_brief(exc)}")
        name = type(exc).__name__
        down = unreachable(self.base_url, exc, DEFAULT_BASE_URL)
        if down is not None:
            return down
        if "Timeout" in name or "Connect" in name or "Network" in name or "Protocol" in name:
            return TransientError(f"{name}: {_brief(exc)}")
        if isinstance(exc, (ValueError, errors.UnknownApiResponseError)):
            return InvalidReply(f"unreadable response: {_brief(exc)}")
        return BackendError(f"{name}: {_brief(exc)}")

    def _send(self, request: Request, schema: dict[str, Any], mode: str = "json_schema"
              ) -> tuple[str | None, Usage]:
        types = self._types
        system = "\n\n".join(m.content for m in request.messages if m.role == "system") or None
        contents = [types.Content(role="model" if m.role == "assistant" else "user",
                                  parts=[types.Part(text=m.content)])
                    for m in request.messages if m.role != "system"]
        config = types.GenerateContentConfig(
            system_instruction=system, temperature=request.temperature, seed=request.seed,
            max_output_tokens=request.max_tokens,
            **({"response_mime_type": "application/json"} if mode != "prompt" else {}),
            **({"response_json_schema": schema} if mode == "json_schema" else {}),
            # only under a run budget, so that requests without one are exactly as before
            **({"http_options": types.HttpOptions(timeout=int(self.request_timeout() * 1000))}
               if time_left() is not None else {}),
        )
        reply = self.client.models.generate_content(model=self.model, contents=contents, config=config)
        meta = reply.usage_metadata
        usage = Usage()
        if meta is not None:
            usage = Usage(input_tokens=meta.prompt_token_count or 0, output_tokens=meta.candidates_token_count or 0)
        if not reply.candidates:
            blocked = getattr(reply.prompt_feedback, "block_reason", None) if reply.prompt_feedback else None
            if blocked:
                raise BackendError(f"the prompt was blocked ({blocked})")
            raise InvalidReply("reply has no candidates")
        reason = getattr(reply.candidates[0], "finish_reason", None)
        usage.finish_reason = "length" if str(getattr(reason, "name", reason)) == "MAX_TOKENS" else None
        return reply.text, usage


def _brief(exc: Exception) -> str:
    return str(exc).replace("\n", " ")[:300]
