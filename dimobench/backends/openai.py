"""``openai/<model>``: the official openai SDK, chat completions with a strict JSON schema.

``base_url`` (``--base-url`` or ``OPENAI_BASE_URL``) reaches any OpenAI-compatible server (vLLM, Ollama, ...).
The key comes from ``OPENAI_API_KEY`` only. The SDK's own retries are off (``max_retries=0``): the retry
policy is :mod:`dimobench.backends.base`'s.
"""

from __future__ import annotations

import os
from typing import Any

from dimobench.backends.base import BaseLLM, InvalidReply, Request, TransientError, Usage
from dimobench.backends.limits import unreachable
from dimobench.backends.wire import retry_after_seconds, strict_schema
from dimobench.errors import BackendError

DEFAULT_MODEL = "gpt-4o"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARS = ("OPENAI_API_KEY",)


class OpenAIBackend(BaseLLM):
    """Chat completions with ``response_format={"type": "json_schema", "strict": true}`` (or a weaker
    ``--json-mode`` for servers without it)."""

    provider = "openai"

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, timeout: float = 120.0,
                 max_attempts: int | None = None, json_mode: str | None = None) -> None:
        super().__init__(model, timeout=timeout, json_mode=json_mode,
                         **({"max_attempts": max_attempts} if max_attempts else {}))
        import openai

        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise BackendError("OPENAI_API_KEY is not set: the openai backend reads its key from the environment "
                               "(any non-empty value for a local OpenAI-compatible server)")
        self._openai = openai
        self.client = openai.OpenAI(api_key=key, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
                                    timeout=timeout, max_retries=0)

    def should_retry(self, exc: BaseException) -> bool:
        """Retry only a ``TransientError``, which ``_translate`` makes of rate limits, timeouts and the like."""
        return isinstance(exc, TransientError)

    def _translate(self, exc: Exception) -> Exception:
        o = self._openai
        if isinstance(exc, o.RateLimitError):
            return TransientError(f"rate limited (429): {_brief(exc)}", retry_after_seconds(exc.response.headers))
        if isinstance(exc, o.APITimeoutError):
            return TransientError("request timed out")
        if isinstance(exc, o.APIConnectionError):  # after APITimeoutError, its subclass: timeouts stay retried
            return (unreachable(str(self.client.base_url), exc, DEFAULT_BASE_URL)
                    or TransientError(f"connection failed: {_brief(exc)}"))
        if isinstance(exc, o.APIStatusError):
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                return TransientError(f"server error {exc.status_code}: {_brief(exc)}",
                                      retry_after_seconds(exc.response.headers))
            return BackendError(f"request refused ({exc.status_code}): {_brief(exc)}")
        if isinstance(exc, (ValueError, o.APIResponseValidationError)):  # a body that was not JSON at all
            return InvalidReply(f"unreadable response: {_brief(exc)}")
        return BackendError(f"{type(exc).__name__}: {_brief(exc)}")

    def body(self, request: Request, schema: dict[str, Any] | None = None, mode: str = "json_schema"
             ) -> dict[str, Any]:
        """The chat-completions request body for ``request``: what ``_send`` sends and what a batch line holds.

        ``mode`` (:mod:`dimobench.backends.jsonmode`) picks the ``response_format``: the strict schema,
        ``json_object``, or none at all (``prompt``).
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": request.response_model.__name__, "strict": True,
                "schema": schema if schema is not None else strict_schema(request.response_model)}}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        if request.seed is not None:
            body["seed"] = request.seed
        return body

    def _send(self, request: Request, schema: dict[str, Any], mode: str = "json_schema"
              ) -> tuple[str | None, Usage]:
        return completion_text(self.client.chat.completions.create(**self.body(request, schema, mode),
                                                                   timeout=self.request_timeout()))


def completion_text(reply: Any) -> tuple[str | None, Usage]:
    """The reply text and token counts of a chat completion (the SDK's object, synchronous or from a batch line).

    Raises ``InvalidReply`` for a reply without choices and ``BackendError`` for a refusal.
    """
    if not reply.choices:
        raise InvalidReply("reply has no choices")
    choice = reply.choices[0]
    if getattr(choice.message, "refusal", None):
        raise BackendError(f"the model refused: {str(choice.message.refusal)[:200]}")
    usage = Usage(finish_reason=getattr(choice, "finish_reason", None))
    if reply.usage is not None:
        usage = Usage(input_tokens=reply.usage.prompt_tokens or 0, output_tokens=reply.usage.completion_tokens or 0,
                      finish_reason=usage.finish_reason)
    return choice.message.content, usage


def _brief(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text[:300]
