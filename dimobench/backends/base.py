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

import threading
import time
from typing import Any, Literal, Protocol, runtime_checkable

import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dimobench.backends import jsonmode, replies
from dimobench.backends.limits import (
    UNREACHABLE_ATTEMPTS,
    UNREACHABLE_WAIT_S,
    RunAborted,
    Unreachable,
    backoff,
    out_of_time,
    rerun_hint,
    time_left,
)
from dimobench.backends.wire import env_int, redact, strict_schema, wait_scale
from dimobench.errors import BackendError

MAX_ATTEMPTS = 5
"""Attempts per call (the first try included); ``DIMOBENCH_MAX_ATTEMPTS`` overrides it."""


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
    finish_reason: str | None = Field(default=None, exclude=True)
    """Why the server stopped (``length``: it hit ``max_tokens``); not stored in the cache or the run log."""

    def plus(self, other: Usage) -> Usage:
        """Both calls' tokens (the finish reason is one reply's, so it is dropped)."""
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens)


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


class CallFailed(BackendError):
    """A call that failed after its retries, with what it spent: each attempt that got a reply was billed."""

    def __init__(self, message: str, attempts: int = 0, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.usage = usage or Usage()


class Truncated(InvalidReply):
    """The server stopped at ``max_tokens`` (``finish_reason: length``) before the JSON was whole.

    Retried once with twice the room; ``final`` marks the second cut, which is not retried again.
    """

    def __init__(self, message: str, raw: str = "", final: bool = False) -> None:
        super().__init__(message, raw)
        self.final = final


def parse_reply(text: str | None, model: type[BaseModel]) -> Any:
    """Validate a reply's JSON text into ``model``; raise ``InvalidReply`` saying what was wrong."""
    return parse_text(text, model)[0]


def parse_text(text: str | None, model: type[BaseModel]) -> tuple[Any, str]:
    """The reply validated into ``model`` and the JSON text it came from (fences and prose dropped).

    A bare JSON reply is returned unchanged; see :func:`dimobench.backends.replies.extract_json`.
    """
    if not text:
        raise InvalidReply("empty reply", raw=text or "")
    try:
        data, json_text = replies.extract_json(text)
    except replies.NoJSON as exc:
        raise InvalidReply(exc.message, raw=text) from None
    try:
        return model.model_validate(data), json_text
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


class BaseLLM:
    """Shared machinery: the retry loop, reply validation and secret redaction. Subclasses implement ``_send``.

    ``_send(request, schema, mode)`` returns ``(text, usage)`` or raises; ``should_retry(exc)`` says whether an
    exception is transient; ``_translate(exc)`` may turn an SDK exception into a ``TransientError`` (with
    ``retry_after``), an :class:`Unreachable` or a ``BackendError``. Once a call found the server unreachable,
    every later call of this instance fails at once with the same line (a circuit breaker: concurrent calls do
    not each wait out their retries against a closed port).
    """

    provider = "base"

    def __init__(self, model: str, max_attempts: int | None = None, timeout: float = 120.0,
                 json_mode: str | None = None) -> None:
        self.model = model
        self.json_mode = jsonmode.check_mode(json_mode or jsonmode.current())
        """How structured output is asked for (:mod:`dimobench.backends.jsonmode`); ``auto`` until probed."""
        self.probe_seconds: float | None = None
        """How long the probe call took (``auto`` mode), a first measure of the server's latency."""
        self._mode_lock = threading.Lock()
        # a small local model on a CPU may take minutes a call: its users bound the run with fewer attempts
        self.max_attempts = max_attempts or env_int("DIMOBENCH_MAX_ATTEMPTS", MAX_ATTEMPTS) or MAX_ATTEMPTS
        self.timeout = timeout
        """Seconds per HTTP request (cut shorter when the run's budget has less left)."""
        self.waits: list[float] = []
        """Every wait the retry policy chose, before ``DIMOBENCH_RETRY_WAIT_SCALE`` (tests read it)."""
        self.down: str | None = None
        """The line of the first unreachable failure; set, every call raises it at once."""
        self._probe_usage = Usage()

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
        if isinstance(exc, Truncated) and exc.final:
            return False
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

    def _send(self, request: Request, schema: dict[str, Any], mode: str = "json_schema"
              ) -> tuple[str | None, Usage]:
        """Send ``request`` once; ``mode`` says whether to ask the server for ``schema`` (or just JSON)."""
        raise NotImplementedError

    def mode(self) -> jsonmode.JsonMode:
        """The structured-output mode calls use; in ``auto`` mode the first caller probes the server (once)."""
        with self._mode_lock:
            if self.json_mode == "auto":
                started = time.monotonic()
                self.json_mode = self._probe()
                self.probe_seconds = round(time.monotonic() - started, 3)
            return jsonmode.resolved(self.json_mode)

    def _take_probe_usage(self) -> Usage:
        """The probe's billed tokens, handed once to the call that made it probe (then zero)."""
        with self._mode_lock:
            spent, self._probe_usage = self._probe_usage, Usage()
            return spent

    def _probe(self) -> jsonmode.JsonMode:
        """Find the strongest structured-output mode the server honours (module doc of ``jsonmode``)."""
        ask = Message(role="user", content="Say hello.")
        for mode in ("json_schema", "json_object"):
            request = Request(messages=[ask], response_model=jsonmode.Probe, temperature=0.0, seed=0,
                              max_tokens=jsonmode.PROBE_MAX_TOKENS, item="json-mode probe")
            retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.max_attempts), wait=self._wait,
                                         retry=self._probe_retry, reraise=True)
            try:
                text, usage = retrying(self._send_raw, self._wire(request, mode), mode)
                self._probe_usage = self._probe_usage.plus(usage)
            except RunAborted:
                raise
            except BackendError:  # refused (400: unsupported response_format) or unreadable: a weaker mode
                continue
            if jsonmode.probe_passed(text):
                return mode
        return "prompt"

    def _probe_retry(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        return not isinstance(exc, InvalidReply) and self._retry(state)  # a bad probe reply is an answer

    def _wire(self, request: Request, mode: str) -> Request:
        """``request`` as sent in ``mode``: the schema goes into the prompt unless the server enforces it."""
        if mode == "json_schema":
            return request
        msgs = replies.schema_messages([m.model_dump() for m in request.messages],
                                       strict_schema(request.response_model))
        return request.model_copy(update={"messages": [Message(**m) for m in msgs]})

    def _send_raw(self, request: Request, mode: str) -> tuple[str | None, Usage]:
        if self.down is not None:  # another call found the server gone while this one waited
            raise Unreachable(self.down)
        if time_left() == 0:
            raise out_of_time()
        try:
            return self._send(request, strict_schema(request.response_model), mode)
        except BackendError:
            raise
        except Exception as exc:  # SDK errors: the backend decides what they mean
            raise self._translate(exc) from None

    def _attempt(self, tries: _Tries, mode: str) -> Response:
        request = tries.next_request()
        text, usage = self._send_raw(self._wire(request, mode), mode)
        tries.spend(usage)
        try:
            parsed, json_text = parse_text(text, request.response_model)
            parsed = check_reply(request, parsed, json_text)
        except InvalidReply as exc:
            if usage.finish_reason == "length":
                exc = Truncated(f"reply cut off at max_tokens {request.max_tokens} (finish_reason length; "
                                f"{exc})", raw=exc.raw, final=tries.grown)
            tries.failed(exc)
            raise exc from None
        return Response(text=json_text, parsed=parsed, usage=tries.spent)

    def complete(self, request: Request) -> Response:
        """Send ``request``, retrying transient failures; raise ``BackendError`` (redacted) after the last.

        Raises :class:`Unreachable` or :class:`OutOfTime` (both :class:`RunAborted`) when the run should stop.
        """
        if self.down is not None:
            raise Unreachable(self.down)
        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.max_attempts), wait=self._wait,
                                     retry=self._retry, reraise=True)
        tries = _Tries(request)
        try:
            mode = self.mode()
            tries.spend(self._take_probe_usage())
            response = retrying(self._attempt, tries, mode)
        except Unreachable as exc:
            if self.down is None:
                self.down = redact(f"{self.spec}: {exc}, then {rerun_hint()}")
            raise Unreachable(self.down) from None
        except RunAborted as exc:
            raise type(exc)(redact(f"{self.spec}: {exc}")) from None
        except BackendError as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise CallFailed(redact(f"{self.spec}: {exc} (after {attempts} attempt(s))"), attempts,
                             tries.spent) from None
        except Exception as exc:
            raise BackendError(redact(f"{self.spec}: {type(exc).__name__}: {exc}")) from None
        response.attempts = retrying.statistics.get("attempt_number", 1)
        return response


class _Tries:
    """One call's attempts: the next request to send, given how the previous attempt failed.

    After a reply cut at ``max_tokens`` the same messages go again with twice the room (once). After any other
    unusable reply the model is shown its reply and the parse or validation error (``replies.feedback_messages``)
    rather than being sent the same prompt again.
    """

    def __init__(self, request: Request) -> None:
        cap = env_int("DIMOBENCH_MAX_TOKENS", None)
        # a cap for servers whose models ramble to max_tokens: not part of the cache key, like max_tokens itself
        self.request = request if cap is None or request.max_tokens <= cap else \
            request.model_copy(update={"max_tokens": cap})
        self.grown = False
        self.last: InvalidReply | None = None
        self.spent = Usage()
        """Tokens of every reply received so far, usable or not: what the provider bills for the call."""

    def spend(self, usage: Usage) -> None:
        self.spent = self.spent.plus(usage)

    def failed(self, exc: InvalidReply) -> None:
        self.last = exc

    def next_request(self) -> Request:
        exc, self.last = self.last, None
        if exc is None:
            return self.request
        if isinstance(exc, Truncated):
            self.grown = True
            self.request = self.request.model_copy(update={"max_tokens": self.request.max_tokens * 2})
            return self.request
        msgs = replies.feedback_messages([m.model_dump() for m in self.request.messages], exc.raw, str(exc))
        return self.request.model_copy(update={"messages": [Message(**m) for m in msgs]})
