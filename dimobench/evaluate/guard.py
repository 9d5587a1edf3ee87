"""The guard every evaluated system runs behind: the same methods, and each misbehaviour one SystemFailure line.

:class:`GuardedSystem` has a system's methods (``reset``, ``observe``, ``recall``, and ``answer`` / ``stats``
only when the system has them, so ``callable(getattr(system, "answer", None))`` still tells) and sends each
call through a transport: :class:`InProcess` for the trusted built-ins, or a worker process
(:mod:`dimobench.evaluate.guard_process`) for ``module:Class`` systems. Either way:

- ``recall`` takes at most ``k`` items lazily, so an endless generator is fine; a result that is no list of
  items, a NaN/inf/overflowing score or an item without text fails (see :func:`normalise_items`);
- any ``BaseException`` the system raises (``SystemExit``, ``GeneratorExit``, a ``KeyboardInterrupt`` it raises
  itself, ``MemoryError`` at its memory bound) becomes :class:`SystemFailure`, never an exit;
- ``answer`` must return an option index; ``stats`` keeps at most :data:`MAX_STATS` plain, finite values.

Each failure names the system, the call and where the replay was (persona and last observed turn). Results
are checked here again whatever the transport, so a worker's reply is never trusted further than a system's.
In process there is no timeout and no memory bound: built-ins are our own code, and a thread could not stop a
runaway call anyway. A real Ctrl-C still interrupts an in-process call.
"""

from __future__ import annotations

import itertools
import math
import operator
import reprlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dimobench.evaluate.protocol import TURN_FIELDS, BadRecall, Recalled, SystemFailure, TurnView, normalise_items

DEFAULT_CALL_TIMEOUT_S = 300.0
"""Seconds one call of a worker-run system may take (loading it: at least :data:`MIN_LOAD_TIMEOUT_S`)."""
MIN_LOAD_TIMEOUT_S = 60.0
"""Importing and constructing a system may load a model: it gets at least this long."""
MAX_STATS = 100
"""stats() keys kept."""
MAX_STR = 1_000
"""Characters kept of a stats string or an error message."""

__all__ = ["DEFAULT_CALL_TIMEOUT_S", "GuardedSystem", "InProcess", "Misbehaved", "perform"]


class Misbehaved(Exception):
    """One call went wrong; ``kind`` is failed, bad, timeout, died or load (``detail`` is then the whole line)."""

    def __init__(self, kind: str, detail: str) -> None:
        """Keep the kind and the one-line detail."""
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def one_line(text: str) -> str:
    """The first line of ``text``, at most :data:`MAX_STR` characters."""
    lines = text.splitlines()
    return (lines[0] if lines else "")[:MAX_STR]


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (a message that cannot be printed is left out)."""
    try:
        msg = one_line(str(exc))
    except BaseException:  # a hostile __str__ must not escape
        msg = ""
    name = type(exc).__name__
    return f"{name}: {msg}" if msg else name


def plain_stats(raw: Any) -> dict[str, Any]:
    """A stats() result as plain JSON values: str keys; None, bool, ints that fit 64 bits, finite floats, strings."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, value in itertools.islice(raw.items(), 10 * MAX_STATS):
        if len(out) >= MAX_STATS:
            break
        if not isinstance(key, str):
            continue
        key = _cut(key)
        if value is None or isinstance(value, bool):
            out[key] = None if value is None else bool(value)
        elif isinstance(value, int) and -(2**63) <= value < 2**63:
            out[key] = int(value)
        elif isinstance(value, float) and math.isfinite(value):
            out[key] = float(value)
        elif isinstance(value, str):
            out[key] = _cut(value)
    return out


def _cut(text: str) -> str:
    return str.__getitem__(text, slice(MAX_STR))  # a plain str, whatever str subclass came in


def option_index(raw: Any, n: int) -> int:
    """``raw`` as an option index ``0..n-1``; :class:`Misbehaved` (bad) otherwise."""
    index = None
    if not isinstance(raw, bool):
        try:
            index = operator.index(raw)
        except TypeError:
            pass
    if index is None or not 0 <= index < n:
        raise Misbehaved("bad", f"{reprlib.repr(raw)} is not an option index 0..{n - 1}")
    return index


def perform(system: Any, op: str, args: list[Any], *, interrupt_is_system: bool) -> Any:
    """Make one call on ``system`` and return its checked, plain result; :class:`Misbehaved` on any problem.

    ``interrupt_is_system``: a KeyboardInterrupt came from the system itself (the worker ignores SIGINT), so it
    fails the call; in process it is the user's Ctrl-C and goes on up.
    """
    try:
        if op == "recall":
            return normalise_items(system.recall(args[0], args[1]), args[1])
        if op == "observe":
            system.observe(args[0])
        elif op == "reset":
            system.reset(args[0])
        elif op == "answer":
            return option_index(system.answer(args[0], args[1]), len(args[1]))
        elif op == "stats":
            return plain_stats(system.stats())
        else:
            raise Misbehaved("failed", f"unknown call {op!r}")
        return None
    except Misbehaved:
        raise
    except BadRecall as exc:
        raise Misbehaved("bad", one_line(str(exc))) from None
    except KeyboardInterrupt:
        if not interrupt_is_system:
            raise
        raise Misbehaved("failed", "KeyboardInterrupt") from None
    except BaseException as exc:  # SystemExit and the like must not end the run
        raise Misbehaved("failed", describe(exc)) from None


class Transport(Protocol):
    """Where a guarded system's calls run."""

    def call(self, op: str, args: list[Any], timeout_s: float | None) -> Any:
        """Run one call; its result or :class:`Misbehaved`."""

    def close(self) -> None:
        """Release the system (a worker process is ended)."""


class InProcess:
    """Calls straight into a system object in this process (built-ins: no timeout, no memory bound)."""

    def __init__(self, system: Any) -> None:
        """Wrap ``system``."""
        self.system = system

    def call(self, op: str, args: list[Any], timeout_s: float | None) -> Any:
        """Run the call here; ``timeout_s`` is not enforced in process."""
        return perform(self.system, op, args, interrupt_is_system=False)

    def close(self) -> None:
        """Nothing to release."""


def _turn_number(turn: Any) -> Any:
    try:
        value = turn.get("turn") if isinstance(turn, (TurnView, dict, Mapping)) else getattr(turn, "turn", None)
    except Exception:  # only used to say where a failure happened
        return None
    return value if isinstance(value, int) else None


def plain_turn(turn: Any) -> dict[str, Any]:
    """The public fields of a turn (a mapping or an object with attributes) as a dict."""
    if type(turn) is TurnView:
        return turn.to_dict()
    if isinstance(turn, Mapping):
        return dict(turn)
    return {f: getattr(turn, f) for f in (*TURN_FIELDS, "speaker") if hasattr(turn, f)}


class GuardedSystem:
    """A memory system behind the guard; every misbehaviour is one :class:`SystemFailure` line.

    ``answer`` and ``stats`` exist only when the system has them (``has_answer`` / ``has_stats`` say so too).
    In process, other attributes (the oracle's ``bind_suite``) are the system's own; a worker-run system shows
    none, so a user system can never ask for the suite.
    """

    answer: Callable[[str, list[str]], int]
    stats: Callable[[], dict[str, Any]]

    def __init__(self, name: str, transport: Transport, has_answer: bool, has_stats: bool,
                 timeout_s: float | None = None, inner: Any = None, memory_mb: int | None = None) -> None:
        """Guard ``transport`` (``inner``: the in-process system object, whose other attributes show through)."""
        self.name, self.transport, self.timeout_s, self.memory_mb = name, transport, timeout_s, memory_mb
        self.has_answer, self.has_stats = has_answer, has_stats
        self.isolated = inner is None
        self._inner = inner
        self._pid: str | None = None
        self._turn: int | None = None
        if has_answer:
            self.answer = self._answer
        if has_stats:
            self.stats = self._stats

    def __getattr__(self, attr: str) -> Any:
        inner = self.__dict__.get("_inner")
        if attr.startswith("_") or inner is None:
            raise AttributeError(attr)
        return getattr(inner, attr)

    def where(self) -> str:
        """Where the replay is: ``persona P turn T`` (the last observed turn)."""
        if self._pid is None:
            return "before the first persona"
        return f"persona {self._pid}" + ("" if self._turn is None else f" turn {self._turn}")

    def _call(self, op: str, args: list[Any]) -> Any:
        try:
            return self.transport.call(op, args, self.timeout_s)
        except Misbehaved as exc:
            raise SystemFailure(self._message(op, exc)) from None

    def _message(self, op: str, exc: Misbehaved) -> str:
        name, at, detail = self.name, self.where(), exc.detail
        if exc.kind == "load":
            return detail
        if exc.kind == "timeout":
            return f"system {name!r} timed out after {self.timeout_s:g}s in {op} at {at}"
        if exc.kind == "bad":
            return f"system {name!r} returned a bad {op} at {at}: {detail}"
        if exc.kind == "died":
            return f"system {name!r} died in {op} at {at}: {detail}"
        if detail.startswith("MemoryError") and self.memory_mb:
            detail += f" (over its memory bound of {self.memory_mb} MiB)"
        return f"system {name!r} failed in {op} at {at}: {detail}"

    def reset(self, persona_id: str) -> None:
        """Forget everything: a new persona starts."""
        self._pid, self._turn = str(persona_id), None
        self._call("reset", [persona_id])

    def observe(self, turn: Any) -> None:
        """Take in one turn."""
        self._turn = _turn_number(turn)
        self._call("observe", [turn if not self.isolated else plain_turn(turn)])

    def recall(self, query: str, k: int) -> list[Recalled]:
        """At most ``k`` checked items, best first."""
        raw = self._call("recall", [query, k])
        try:  # (a worker's reply is checked again here; in process, it holds checked items already)
            return normalise_items(raw, k)
        except BadRecall as exc:
            raise SystemFailure(self._message("recall", Misbehaved("bad", str(exc)))) from None

    def _answer(self, question: str, options: list[str]) -> int:
        raw = self._call("answer", [question, list(options)])
        try:
            return option_index(raw, len(options))
        except Misbehaved as exc:
            raise SystemFailure(self._message("answer", exc)) from None

    def _stats(self) -> dict[str, Any]:
        return plain_stats(self._call("stats", []))

    def close(self) -> None:
        """Release the system (ends its worker process)."""
        self.transport.close()

    def __enter__(self) -> GuardedSystem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GuardedSystem({self.name!r}, {'worker' if self.isolated else 'in process'})"
