"""Limits that end a whole run instead of one call (a server that is not there, the run's time budget), and how
long a call waits between its attempts.

:class:`RunAborted` errors pass through the call loops (which record any other failure and go on) up to the
command, which prints their one line. :func:`run_limits` sets the budget the CLI's ``--timeout`` gives; it is
process-wide state because a process runs one command, and every worker thread of it shares the budget.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dimobench.errors import BackendError

if TYPE_CHECKING:
    import tenacity

MAX_WAIT_S = 60.0
"""Longest single wait, Retry-After included."""


def backoff(state: tenacity.RetryCallState) -> float:
    """Seconds before the next attempt: the server's Retry-After if it sent one, else exponential with jitter."""
    exc = state.outcome.exception() if state.outcome else None
    after = getattr(exc, "retry_after", None)
    if after is None:
        after = min(MAX_WAIT_S, 2.0 ** state.attempt_number) + random.random()
    return min(MAX_WAIT_S, max(0.0, after))


UNREACHABLE_ATTEMPTS = 2
"""Attempts at a server that refused the connection or whose host name did not resolve: one quick retry covers
a server that was restarting; more only make a user wait for a server that is not there."""
UNREACHABLE_WAIT_S = 1.0
"""Seconds before that one retry."""


class RunAborted(BackendError):
    """A failure that ends the whole run, not one call: the call loops re-raise it instead of recording it."""


class Unreachable(RunAborted):
    """Nothing answers at the backend's address (connection refused, unknown host): more tries will not help."""


class OutOfTime(RunAborted):
    """The run's time budget (:func:`run_limits`, ``--timeout``) is spent."""


class _Limits:
    """The process's run limits; one run per process (the CLI), so plain module state shared by all threads."""

    deadline: float | None = None
    seconds: float | None = None
    rerun: str = "rerun"


@contextmanager
def run_limits(timeout: float | None = None, rerun: str = "rerun") -> Iterator[None]:
    """Inside this block every backend call shares one wall-clock budget of ``timeout`` seconds (None: none).

    Once it is spent, the waiting call and every later one raise :class:`OutOfTime`; a request in flight is cut
    at the deadline. ``rerun`` is how the failure lines end (``rerun with --resume``), i.e. what to do next.
    """
    saved = (_Limits.deadline, _Limits.seconds, _Limits.rerun)
    _Limits.deadline = None if timeout is None else time.monotonic() + timeout
    _Limits.seconds, _Limits.rerun = timeout, rerun
    try:
        yield
    finally:
        _Limits.deadline, _Limits.seconds, _Limits.rerun = saved


def rerun_hint() -> str:
    """How the failure lines of this run end: what to do once the cause is fixed."""
    return _Limits.rerun


def time_left() -> float | None:
    """Seconds left of the run's budget (None without one, 0 once spent)."""
    return None if _Limits.deadline is None else max(0.0, _Limits.deadline - time.monotonic())


def out_of_time() -> OutOfTime:
    """The error of a spent budget: what happened and what to do next, in one line."""
    return OutOfTime(f"the run's LLM calls used up --timeout {_Limits.seconds:g} s (a slow server may need more); "
                     f"{_Limits.rerun}")


def unreachable(url: str, exc: BaseException, default_url: str | None = None) -> Unreachable | None:
    """An :class:`Unreachable` for ``url`` when ``exc`` (or what caused it) is a failure to connect, else None.

    A connect *timeout* is not one: a slow server is retried like any timeout.
    """
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:  # the SDK's error, the HTTP library's, the socket's
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    if not any(type(e).__name__ == "ConnectError" or isinstance(e, ConnectionRefusedError | socket.gaierror)
               for e in chain):
        return None
    if any(isinstance(e, socket.gaierror) for e in chain):
        reason = "host name not found"
    elif any(isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower() for e in chain):
        reason = "connection refused"
    else:
        reason = str(chain[-1]).replace("\n", " ")[:200] or type(chain[-1]).__name__
    url = url.rstrip("/")
    fix = ("check the network connection" if default_url and url == default_url.rstrip("/")
           else "check --base-url or start the server")
    return Unreachable(f"no server at {url} ({reason}); {fix}")
