"""The harness's end of a worker process running one ``module:Class`` system (:func:`open_worker`).

The worker (:mod:`dimobench.evaluate.guard_worker`) is ``python -P -m dimobench.evaluate.guard_worker``
(``-P``: the working directory is not put first on ``sys.path``; :func:`import_class` appends it last, so a
``matplotlib.py`` there shadows nothing), in a session of its own. Its argv holds no suite path and its
environment no ``DIMOBENCH_*`` variable nor any variable naming a hidden path (``hide``); all it learns comes
over the pipe: the system's spec, public turn fields, questions and options. Each call waits with poll()
until its deadline; past it the worker's whole process group is killed. A worker that dies (an exit, a signal,
the kernel's OOM killer) fails the call that was running. A dropped transport's worker is killed when it is
collected, and at exit.

Not a sandbox: the worker runs as the same user and can read whatever that user can, the harness's
``/proc/<pid>/cmdline`` included; keeping out a determined system needs an OS sandbox (a container, another
user). POSIX only (poll on pipes, process groups, setrlimit).
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dimobench.evaluate.guard import (
    DEFAULT_CALL_TIMEOUT_S,
    MIN_LOAD_TIMEOUT_S,
    GuardedSystem,
    Misbehaved,
    one_line,
)
from dimobench.evaluate.guard_worker import EXIT_OOM, KINDS
from dimobench.evaluate.protocol import MAX_SOURCE_TURNS, MAX_TEXT, SystemFailure

WORKER_MODULE = "dimobench.evaluate.guard_worker"

__all__ = ["WorkerTransport", "default_memory_mb", "open_worker", "worker_env"]


def default_memory_mb() -> int:
    """Three quarters of this machine's memory (or of its cgroup's limit, when lower), in MiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 16 << 30
    try:
        total = min(total, int(Path("/sys/fs/cgroup/memory.max").read_text().strip()))
    except (OSError, ValueError):  # no cgroup v2 limit ("max") or not Linux
        pass
    return max(1024, int(total * 0.75) >> 20)


def worker_env(hide: Iterable[str | Path] = ()) -> dict[str, str]:
    """This environment without ``DIMOBENCH_*`` and without any variable whose value names a ``hide`` path."""
    hidden = {str(Path(p).resolve()) for p in hide} - {"/", ""}
    return {k: v for k, v in os.environ.items()
            if not k.upper().startswith("DIMOBENCH_") and not any(h in v for h in hidden)}


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 2.0) -> None:
    """End a worker: EOF on its stdin, a short wait, then SIGKILL to its whole process group."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    if grace_s > 0 and proc.poll() is None:
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:  # also whatever the system started (the group outlives a reaped leader while members remain)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


class WorkerTransport:
    """The harness's end of one worker: send a call, wait for its reply until a deadline, kill on timeout."""

    def __init__(self, memory_mb: int, hide: Iterable[str | Path] = ()) -> None:
        """Start the worker (the system is loaded by the first call, ``load``)."""
        self.memory_mb = memory_mb
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", WORKER_MODULE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=worker_env(hide), start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._out, self._in = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._out, False)  # a worker that stops reading must not block us past the deadline
        self._can_read, self._can_write = select.poll(), select.poll()
        self._can_read.register(self._in, select.POLLIN)
        self._can_write.register(self._out, select.POLLOUT)
        self._buf = bytearray()
        self._dead: str | None = None
        self._finalizer = weakref.finalize(self, _stop, self.proc, 0.0)

    def call(self, op: str, args: list[Any], timeout_s: float | None) -> Any:
        """One call's ``ok`` value, or :class:`Misbehaved` (timeout and death end the worker)."""
        if self._dead is not None:
            raise Misbehaved("died", self._dead)
        data = json.dumps({"op": op, "args": args}, separators=(",", ":"), default=str).encode("ascii") + b"\n"
        deadline = None if not timeout_s else time.monotonic() + timeout_s
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._out, view):]
            except BlockingIOError:
                self._wait(self._can_write, deadline)
            except BrokenPipeError:
                raise self._died() from None
        cap = 4 << 20 if op != "recall" else (4 << 20) + int(args[1]) * 12 * (MAX_TEXT + MAX_SOURCE_TURNS + 100)
        while (end := self._buf.find(b"\n")) < 0:
            if not self._wait(self._can_read, deadline):
                continue
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise self._died()
            self._buf += chunk
            if len(self._buf) > cap:
                raise self._died(f"its worker sent a reply over {cap} bytes")
        line = bytes(self._buf[:end])
        del self._buf[:end + 1]
        return self._reply(line)

    def _reply(self, line: bytes) -> Any:
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            reply = None
        if isinstance(reply, dict) and "ok" in reply:
            return reply["ok"]
        if isinstance(reply, dict) and reply.get("fail") in KINDS and isinstance(reply.get("detail"), str):
            raise Misbehaved(reply["fail"], one_line(reply["detail"]))
        raise self._died("its worker sent a malformed reply")

    def _wait(self, poller: select.poll, deadline: float | None) -> bool:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            self._end("timed out")
            raise Misbehaved("timeout", "timed out")
        return bool(poller.poll(None if left is None else max(1, math.ceil(left * 1000))))

    def _died(self, why: str | None = None) -> Misbehaved:
        if why is None:
            try:
                rc = self.proc.wait(5)
            except subprocess.TimeoutExpired:  # closed its pipe but lives on
                rc = None
            why = _exit_reason(rc, self.memory_mb)
        self._end(why)
        return Misbehaved("died", why)

    def _end(self, why: str) -> None:
        self._dead = f"its worker had stopped earlier ({why})"
        self._finalizer.detach()
        _stop(self.proc, 0.0)

    def close(self) -> None:
        """End the worker (EOF first: it exits on its own unless the system hangs)."""
        if self._finalizer.detach() is not None:
            _stop(self.proc)
        self._dead = self._dead or "the system was closed"


def _exit_reason(rc: int | None, memory_mb: int) -> str:
    if rc is None:
        return "its worker closed the pipe"
    if rc == EXIT_OOM:
        return f"it ran out of memory (bound {memory_mb} MiB)"
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
        hint = " (the kernel's out-of-memory killer?)" if -rc == signal.SIGKILL else ""
        return f"its worker process was killed by {name}{hint}"
    return f"its worker process exited with code {rc}"


def open_worker(name: str, timeout_s: float | None = DEFAULT_CALL_TIMEOUT_S, memory_mb: int | None = None,
                hide: Iterable[str | Path] = ()) -> GuardedSystem:
    """Load the ``module:Class`` system ``name`` in a worker process behind the guard.

    ``timeout_s``: per call (None or 0: none; loading gets at least :data:`MIN_LOAD_TIMEOUT_S`).
    ``memory_mb``: the worker's memory bound (None: :func:`default_memory_mb`; 0: none).
    """
    mb = default_memory_mb() if memory_mb is None else memory_mb
    try:
        transport = WorkerTransport(mb, hide)
    except OSError as exc:
        raise SystemFailure(f"system {name!r}: cannot start its worker process ({exc})") from None
    load_s = None if not timeout_s else max(timeout_s, MIN_LOAD_TIMEOUT_S)
    main_thread = threading.current_thread() is threading.main_thread()
    try:
        caps = transport.call("load", [name, mb, os.getpid(), main_thread], load_s)
    except Misbehaved as exc:
        transport.close()
        if exc.kind == "load":
            raise SystemFailure(exc.detail) from None
        if exc.kind == "timeout":
            raise SystemFailure(f"system {name!r} timed out after {load_s:g}s while loading") from None
        raise SystemFailure(f"system {name!r} died while loading: {exc.detail}") from None
    caps = caps if isinstance(caps, dict) else {}
    return GuardedSystem(name, transport, caps.get("answer") is True, caps.get("stats") is True, timeout_s,
                         memory_mb=mb or None)
