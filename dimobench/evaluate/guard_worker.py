"""Inside the worker process of one ``module:Class`` system: ``python -P -m dimobench.evaluate.guard_worker``.

One JSON object per line, on duplicates of this process's original stdin and stdout taken before the system
is imported; fd 0 then reads /dev/null and fd 1 writes to stderr, so a system that prints or reads stdin
cannot corrupt the protocol. Harness -> worker: ``{"op": "load", "args": [spec, memory_mb, parent_pid,
die_with_parent]}`` once, then ``{"op": call, "args": [...]}``; worker -> harness: ``{"ok": value}`` or
``{"fail": kind, "detail": line}`` (kinds as in :class:`Misbehaved`). Every call goes through
:func:`perform`, so whatever the system raises, ``SystemExit`` included, becomes a reply. SIGINT is ignored
here: a KeyboardInterrupt is the system's own. The memory bound is RLIMIT_DATA (heap and private writable
mappings), not RLIMIT_AS, so libraries that reserve large virtual address ranges (CUDA) still load. The
harness side is :mod:`dimobench.evaluate.guard_process`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import IO, Any

from dimobench.evaluate.guard import Misbehaved, describe, one_line, perform
from dimobench.evaluate.protocol import Recalled, SystemFailure, TurnView, import_class, instantiate

EXIT_OOM = 86
"""The worker's exit code when it could not even report a MemoryError."""
KINDS = ("failed", "bad", "timeout", "died", "load")
"""Reply kinds (:class:`Misbehaved`)."""

__all__ = ["EXIT_OOM", "KINDS", "main"]


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n"


OOM_REPLY = _encode({"fail": "failed", "detail": "MemoryError"})


def _bound(memory_mb: int, parent: int, die_with_parent: bool) -> None:
    if memory_mb:
        import resource

        limit = memory_mb << 20
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        try:  # soft and hard: the system cannot raise it back
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        except (ValueError, OSError):
            pass
    if die_with_parent and sys.platform.startswith("linux"):  # the harness killed: no orphan left spinning
        try:
            import ctypes

            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:  # also where PDEATHSIG is not to be had
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _load(spec: str) -> tuple[Any, dict[str, Any]]:
    try:
        system = instantiate(spec, import_class(spec))
        caps = {m: callable(getattr(system, m, None)) for m in ("answer", "stats")}
    except SystemFailure as exc:
        return None, {"fail": "load", "detail": one_line(str(exc))}
    except BaseException as exc:  # SystemExit at import time and the like
        return None, {"fail": "load", "detail": f"system {spec!r}: loading it raised {describe(exc)}"}
    return system, {"ok": caps}


def _wire(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], Recalled):
        return [{"text": r.text, "score": r.score, "source_turns": r.source_turns} for r in value]
    return value


def _serve(system: Any, line: bytes) -> bytes:
    try:
        req = json.loads(line)
        op, args = req["op"], req["args"]
        if op == "observe":
            args = [TurnView(args[0])]
        try:
            return _encode({"ok": _wire(perform(system, op, args, interrupt_is_system=True))})
        except Misbehaved as exc:
            return _encode({"fail": exc.kind, "detail": exc.detail})
    except MemoryError:
        return OOM_REPLY
    except BaseException as exc:  # a malformed request; say so rather than die
        return _encode({"fail": "failed", "detail": f"the worker could not serve the call: {describe(exc)}"})


def _send(out: IO[bytes], data: bytes) -> None:
    try:
        out.write(data)
        out.flush()
    except BrokenPipeError:  # the harness is gone
        os._exit(0)
    except MemoryError:
        os._exit(EXIT_OOM)


def main() -> None:
    """Serve one system over this process's original stdin/stdout until EOF."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # print() and os.write(1, ...) of the system land on stderr
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a KeyboardInterrupt in here is the system's own
    hello = json.loads(proto_in.readline() or b"null")
    if not isinstance(hello, dict) or hello.get("op") != "load":
        return
    spec, memory_mb, parent, die_with_parent = hello["args"]
    _bound(int(memory_mb), int(parent), bool(die_with_parent))
    system, reply = _load(str(spec))
    _send(proto_out, _encode(reply))
    if system is None:
        return
    for line in proto_in:
        _send(proto_out, _serve(system, line))


if __name__ == "__main__":
    main()
