"""``scripted``: the test double. A queue of canned replies or a callable, a history of requests.

Replies go through the same retry loop and validation as real backends, so a test can plant a bad reply and
watch it being retried. A reply is a ``str`` (sent as the raw reply text), a ``dict`` or ``BaseModel``
(serialised to JSON), or an exception (raised, e.g. ``TransientError`` to simulate a rate limit). When the
queue runs out the backend fails loudly instead of inventing text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any, Union

from pydantic import BaseModel

from dimobench.backends.base import BaseLLM, Request, Usage
from dimobench.errors import BackendError

Reply = Union[str, dict[str, Any], BaseModel, BaseException]


class ScriptedBackend(BaseLLM):
    """Serves ``replies`` in order (or calls ``replies(request)``); every request lands in ``history``."""

    provider = "scripted"

    def __init__(self, replies: Iterable[Reply] | Callable[[Request], Reply] = (), model: str = "test",
                 max_attempts: int | None = None) -> None:
        super().__init__(model, max_attempts=max_attempts)
        self._fn = replies if callable(replies) else None
        self._queue: list[Reply] = [] if callable(replies) else list(replies)
        self.history: list[Request] = []
        self._lock = threading.Lock()

    def _send(self, request: Request, schema: dict[str, Any], mode: str = "json_schema"
              ) -> tuple[str | None, Usage]:
        with self._lock:
            self.history.append(request)
            if self._fn is not None:
                reply = self._fn(request)
            elif self._queue:
                reply = self._queue.pop(0)
            else:
                raise BackendError(f"scripted backend ran out of replies at request {len(self.history)} "
                                   f"({request.item or 'unnamed'})")
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, BaseModel):
            reply = reply.model_dump(mode="json")
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return text, Usage(input_tokens=sum(len(m.content) for m in request.messages) // 4,
                           output_tokens=len(text) // 4)
