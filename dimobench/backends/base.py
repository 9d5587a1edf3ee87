"""The one LLM interface: a request in, a validated response out, with one retry policy for every backend.

Every call asks for JSON-schema structured output and validates the reply with pydantic. Retries are
configured once here with tenacity (STYLE.md convention 13): each backend's ``should_retry(exc)`` says which
of its errors are transient (rate limits, 5xx, timeouts); invalid JSON and schema-invalid replies are always
retried. The SDKs' own retries are switched off so this is the only policy. ``DIMOBENCH_RETRY_WAIT_SCALE``
multiplies every wait (tests set it to 0).

Two failures end a whole run rather than one call (:class:`RunAborted`; the call loops re-raise it): a server
that is not there (:class:`Unreachable`: connection refused, unknown host; one quick retry, then every later
call of that backend fails at once with the same line, so a run of hundreds of calls gives up in seconds) and
a spent time budget (:class:`OutOfTime`, set with :func:`run_limits`, the CLI's ``--timeout``); both live in
:mod:`dimobench.backends.limits`.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Literal, Protocol, runtime_checkable

import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dimobench.backends.limits import (
    UNREACHABLE_ATTEMPTS,
    UNREACHABLE_WAIT_S,
    RunAborted,
    Unreachable,
    out_of_time,
    rerun_hint,
    time_left,
)
from dimobench.errors import BackendError

MAX_ATTEMPTS = 5
"""Attempts per call (the first try included)."""
MAX_WAIT_S = 60.0
"""Longest single wait, Retry-After included."""


class Message(BaseModel):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class Request(BaseModel):
    """What a stage asks a backend for."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: list[Message]
    response_model: type[BaseModel]
    """The pydantic model the reply must validate against; its JSON schema is sent with the call."""
    temperature: float = 0.7
    seed: int | None = None
    """Providers that support it sample reproducibly; the cache only keeps seeded or temperature-0 replies."""
    item: str = ""
    """What this call is for (``p01/session-3``), for logs and the failure summary; not part of the cache key."""
    max_tokens: int = 4096
    check: Any = Field(default=None, exclude=True)
    """Optional ``check(parsed)`` raising ``ValueError`` for a reply that parses but breaks a content rule
    (e.g. a cue naming its state); such a reply is retried like invalid JSON. Not part of the cache key."""


class Usage(BaseModel):
    """Token counts of one call (zero for cache hits and offline)."""

    input_tokens: int = 0
    output_tokens: int = 0


class Response(BaseModel):
    """A validated reply."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    """The raw JSON text the model sent."""
    parsed: Any
    """``text`` validated into the request's ``response_model``."""
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 1
    cached: bool = False


@runtime_checkable
class LLM(Protocol):
    """What a stage is handed as its ``llm``: a name for the manifest and, for real backends, ``complete``."""

    @property
    def spec(self) -> str:
        """``provider/model`` as recorded in the manifest (``offline`` for the built-in generator)."""
        ...


class ChatLLM(LLM, Protocol):
    """A backend that can be called."""

    def complete(self, request: Request) -> Response:
        """Send ``request`` and return its validated reply, or raise ``BackendError`` after the last retry."""
        ...


class TransientError(BackendError):
    """A failure worth another try (a backend maps its timeouts, 5xx and rate limits to this or says so)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidReply(TransientError):
    """The reply was not JSON, or did not validate against the response model; another sample may."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the shape OpenAI strict mode and Gemini accept.

    References are inlined, titles dropped, every object closed (``additionalProperties: false``) with every
    property required.
    """
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return fix(defs[node["$ref"].split("/")[-1]])
        out = {k: fix(v) for k, v in node.items() if k not in ("title", "default")}
        if out.get("type") == "object":
            out["additionalProperties"] = False
            out["required"] = list(out.get("properties", {}))
        return out

    return fix(raw)


def parse_reply(text: str | None, model: type[BaseModel]) -> Any:
    """Validate a reply's JSON text into ``model``; raise ``InvalidReply`` saying what was wrong."""
    if not text:
        raise InvalidReply("empty reply", raw=text or "")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidReply(f"reply is not valid JSON ({exc.msg} at char {exc.pos})", raw=text) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"])) or "reply"
        raise InvalidReply(f"reply does not match {model.__name__}: {where}: {err['msg']} "
                           f"({exc.error_count()} problem(s))", raw=text) from None


def check_reply(request: Request, parsed: Any, text: str) -> Any:
    """Run the request's content check; a broken rule is an ``InvalidReply`` (retried)."""
    if request.check is not None:
        try:
            request.check(parsed)
        except ValueError as exc:
            raise InvalidReply(f"reply breaks a rule: {exc}", raw=text) from None
    return parsed


def wait_scale() -> float:
    """Factor applied to every retry wait, from ``DIMOBENCH_RETRY_WAIT_SCALE`` (tests set 0); 1 when unset or bad."""
    try:
        return max(0.0, float(os.environ.get("DIMOBENCH_RETRY_WAIT_SCALE", "1")))
    except ValueError:
        return 1.0


def backoff(state: tenacity.RetryCallState) -> float:
    """Seconds before the next attempt: the server's Retry-After if it sent one, else exponential with jitter."""
    exc = state.outcome.exception() if state.outcome else None
    after = getattr(exc, "retry_after", None)
    if after is None:
        after = min(MAX_WAIT_S, 2.0 ** state.attempt_number) + random.random()
    return min(MAX_WAIT_S, max(0.0, after))


class BaseLLM:
    """Shared machinery: the retry loop, reply validation and secret redaction. Subclasses implement ``_send``.

    ``_send(request, schema)`` returns ``(text, usage)`` or raises; ``should_retry(exc)`` says whether an
    exception is transient; ``_translate(exc)`` may turn an SDK exception into a ``TransientError`` (with
    ``retry_after``), an :class:`Unreachable` or a ``BackendError``. Once a call found the server unreachable,
    every later call of this instance fails at once with the same line (a circuit breaker: concurrent calls do
    not each wait out their retries against a closed port).
    """

    provider = "base"

    def __init__(self, model: str, max_attempts: int = MAX_ATTEMPTS, timeout: float = 120.0) -> None:
        self.model = model
        self.max_attempts = max_attempts
        self.timeout = timeout
        """Seconds per HTTP request (cut shorter when the run's budget has less left)."""
        self.waits: list[float] = []
        """Every wait the retry policy chose, before ``DIMOBENCH_RETRY_WAIT_SCALE`` (tests read it)."""
        self.down: str | None = None
        """The line of the first unreachable failure; set, every call raises it at once."""

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        seconds = UNREACHABLE_WAIT_S if isinstance(exc, Unreachable) else backoff(state)
        self.waits.append(seconds)
        seconds *= wait_scale()
        left = time_left()
        if left is not None and seconds >= left:
            raise out_of_time()
        return seconds

    def _retry(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if exc is None:
            return False
        if isinstance(exc, Unreachable):
            return state.attempt_number < UNREACHABLE_ATTEMPTS and self.down is None
        return self.should_retry(exc)

    def request_timeout(self) -> float:
        """Seconds the next HTTP request may take: ``timeout``, or less when the run's budget is nearly spent."""
        left = time_left()
        return self.timeout if left is None else max(0.001, min(self.timeout, left))

    @property
    def spec(self) -> str:
        """``provider/model``, as recorded in the manifest and the reply cache."""
        return f"{self.provider}/{self.model}"

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is worth another attempt; by default only a ``TransientError`` is."""
        return isinstance(exc, TransientError)

    def _translate(self, exc: Exception) -> Exception:
        return exc

    def _send(self, request: Request, schema: dict[str, Any]) -> tuple[str | None, Usage]:
        raise NotImplementedError

    def _attempt(self, request: Request, schema: dict[str, Any]) -> Response:
        if self.down is not None:  # another call found the server gone while this one waited
            raise Unreachable(self.down)
        if time_left() == 0:
            raise out_of_time()
        try:
            text, usage = self._send(request, schema)
        except BackendError:
            raise
        except Exception as exc:  # SDK errors: the backend decides what they mean
            raise self._translate(exc) from None
        return Response(text=text or "", parsed=check_reply(request, parse_reply(text, request.response_model),
                                                         text or ""), usage=usage)

    def complete(self, request: Request) -> Response:
        """Send ``request``, retrying transient failures; raise ``BackendError`` (redacted) after the last.

        Raises :class:`Unreachable` or :class:`OutOfTime` (both :class:`RunAborted`) when the run should stop.
        """
        if self.down is not None:
            raise Unreachable(self.down)
        schema = strict_schema(request.response_model)
        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.max_attempts), wait=self._wait,
                                     retry=self._retry, reraise=True)
        try:
            response = retrying(self._attempt, request, schema)
        except Unreachable as exc:
            if self.down is None:
                self.down = redact(f"{self.spec}: {exc}, then {rerun_hint()}")
            raise Unreachable(self.down) from None
        except RunAborted as exc:
            raise type(exc)(redact(f"{self.spec}: {exc}")) from None
        except BackendError as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise BackendError(redact(f"{self.spec}: {exc} (after {attempts} attempt(s))")) from None
        except Exception as exc:
            raise BackendError(redact(f"{self.spec}: {type(exc).__name__}: {exc}")) from None
        response.attempts = retrying.statistics.get("attempt_number", 1)
        return response


SECRET_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def redact(text: str) -> str:
    """Replace every API key from the environment found in ``text`` by ``***``."""
    for var in SECRET_VARS:
        secret = os.environ.get(var)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, if there is one."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
