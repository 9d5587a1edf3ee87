"""Calls done, failed and left during a run, and the time to finish estimated from the measured latency.

Every metered call (:meth:`dimobench.backends.usage.Ledger.call`) reports here, and the call loop
(:func:`dimobench.backends.jobs.run_jobs`) says how many calls it plans, so one tracker covers every LLM role of a
command. The CLI opens it with :func:`tracking` and shows :meth:`CallProgress.line`: on a terminal as it
changes (a progress bar for ``generate``), never into captured output. Cache hits count as done without
touching the latency, so a warm rerun shows no time to wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ASSUMED_S_PER_CALL = {"hosted": 8.0, "local": 30.0}
"""Seconds a call is assumed to take before any was measured (dry runs): a hosted API, a local server."""


class CallProgress:
    """Counts of one command's LLM calls; thread-safe. ``on_change(line)`` is called after each change."""

    def __init__(self, on_change: Callable[[str], None] | None = None) -> None:
        self.on_change = on_change
        self.planned = 0
        self.done = 0
        self.failed = 0
        self.cached = 0
        self.sent_seconds = 0.0
        self.sent = 0
        self._lock = threading.Lock()

    def plan(self, calls: int) -> None:
        """``calls`` more calls are coming (a call loop's jobs)."""
        with self._lock:
            self.planned += calls
        self._changed()

    def record(self, *, ok: bool, cached: bool, seconds: float) -> None:
        """One call finished: answered (from the cache or the server) or failed after its retries."""
        with self._lock:
            self.done += int(ok)
            self.failed += int(not ok)
            self.cached += int(cached)
            if not cached:
                self.sent += 1
                self.sent_seconds += seconds
        self._changed()

    def seconds_per_call(self) -> float | None:
        """Mean wall time of the calls sent so far (retries included); None before the first."""
        with self._lock:
            return self.sent_seconds / self.sent if self.sent else None

    def left(self) -> int:
        """Planned calls not finished yet (0 for calls made outside a call loop, e.g. an evaluation's)."""
        with self._lock:
            return max(0, self.planned - self.done - self.failed)

    def line(self, concurrency: int = 1) -> str:
        """``LLM calls: 12 done, 1 failed, 30 left, ~6 min to go (24 s a call)``."""
        per, left = self.seconds_per_call(), self.left()
        text = f"LLM calls: {self.done} done, {self.failed} failed"
        if left:
            text += f", {left} left"
        if per is not None:
            if left:
                text += f", ~{duration(left * per / max(1, concurrency))} to go"
            text += f" ({per:.1f} s a call)"
        return text

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self.line())


class _Current:
    tracker: CallProgress | None = None


@contextmanager
def tracking(on_change: Callable[[str], None] | None = None) -> Iterator[CallProgress]:
    """Inside this block every metered call and call loop of the process reports to the yielded tracker."""
    saved = _Current.tracker
    _Current.tracker = CallProgress(on_change)
    try:
        yield _Current.tracker
    finally:
        _Current.tracker = saved


def current() -> CallProgress | None:
    """The tracker of the enclosing :func:`tracking` block, if any."""
    return _Current.tracker


def timed() -> Callable[[], float]:
    """A stopwatch: call the returned function for the seconds since :func:`timed` was called."""
    started = time.monotonic()
    return lambda: time.monotonic() - started


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``: the unit a person plans with."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
