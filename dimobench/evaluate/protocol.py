"""The system protocol a memory system meets to be evaluated, and loading one from a name or ``module:Class``.

A system is any class with::

    reset(persona_id)            # forget everything; a new persona starts
    observe(turn)                # one turn: turn, session, timestamp, user, assistant (dict or attributes)
    recall(query, k) -> list     # items with text, score and optional source_turns (dicts or objects)
    answer(question, options) -> int   # optional: pick an option yourself instead of the shared answerer
    stats() -> dict              # optional: memory footprint, sampled over the timeline

The harness never passes annotations or gold fields. Every failure inside a system is re-raised as a
:class:`SystemFailure` naming the system, persona, turn and call.
"""

from __future__ import annotations

import importlib
import itertools
import math
import operator
import reprlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dimobench.errors import DimobenchError

REQUIRED_METHODS = ("reset", "observe", "recall")
TURN_FIELDS = ("turn", "session", "timestamp", "user", "assistant")


class SystemFailure(DimobenchError):
    """A system could not be loaded, lacks a method, or raised while being evaluated."""


@runtime_checkable
class MemorySystem(Protocol):
    """What ``dimobench evaluate --system`` needs from a memory system."""

    def reset(self, persona_id: str) -> None:
        """Forget everything: a new persona starts."""

    def observe(self, turn: Any) -> None:
        """Take in one turn (``turn``, ``session``, ``timestamp``, ``user``, ``assistant``)."""

    def recall(self, query: str, k: int) -> list[Any]:
        """Return up to ``k`` items, best first, each with ``text``, ``score`` and optional ``source_turns``."""


class TurnView(Mapping[str, Any]):
    """A dialogue turn readable both as ``turn["user"]`` and ``turn.user``; holds only the public fields."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        """Keep ``data`` (already stripped of benchmark-side fields)."""
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("TurnView is read-only")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"TurnView({self._data!r})"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (a copy)."""
        return dict(self._data)


def public_turn(turn: Any) -> TurnView:
    """The view of a suite turn a system may see: the five public fields (plus ``speaker`` on imports)."""
    data = {f: getattr(turn, f) for f in TURN_FIELDS}
    speaker = getattr(turn, "speaker", None)
    if speaker is not None:
        data["speaker"] = speaker
    return TurnView(data)


@dataclass(frozen=True)
class Recalled:
    """One recalled item, normalised from whatever the system returned."""

    text: str
    score: float
    source_turns: list[int] = field(default_factory=list)


MAX_TEXT = 20_000
"""Characters kept of one recalled item's text (longer texts are truncated)."""
MAX_SOURCE_TURNS = 1_000
"""Source turns kept of one recalled item."""
MAX_TURN = 2**31
"""Source turns at or above this (or negative) are dropped: no suite has that many turns."""


class BadRecall(ValueError):
    """A recall result the harness cannot use (not a list of items, an item without text, a non-finite score)."""


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if type(obj) is dict or isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _score(pos: int, raw: Any) -> float:
    if raw is None:
        return 1.0
    try:
        score = float(raw)
    except OverflowError:
        score = math.inf
    except (TypeError, ValueError):
        raise BadRecall(f"recall item {pos} has a non-numeric score {reprlib.repr(raw)}") from None
    if not math.isfinite(score):  # the answerer weighs items by score: NaN or inf would decide for it
        raise BadRecall(f"recall item {pos} has a non-finite score {reprlib.repr(raw)} (scores must be finite)")
    return score


def _turn(t: Any) -> int | None:
    if isinstance(t, bool):
        return None
    if isinstance(t, float):
        n = int(t) if math.isfinite(t) and t.is_integer() else None
    else:
        try:
            n = operator.index(t)
        except TypeError:
            return None
    return n if n is not None and 0 <= n < MAX_TURN else None


def _turns(pos: int, raw: Any) -> list[int]:
    if type(raw) is list and len(raw) <= MAX_SOURCE_TURNS and all(type(t) is int and 0 <= t < MAX_TURN for t in raw):
        return list(raw)  # the common case: plain turn numbers (copied: the system may change its list)
    if raw is None or (isinstance(raw, str) and not raw):
        return []
    if isinstance(raw, (str, bytes, Mapping)):
        raise BadRecall(f"recall item {pos} has source_turns {reprlib.repr(raw)}, expected a list of turn numbers")
    try:
        it = iter(raw)
    except TypeError:
        raise BadRecall(f"recall item {pos} has source_turns {reprlib.repr(raw)}, "
                        f"expected a list of turn numbers") from None
    return [n for n in map(_turn, itertools.islice(it, MAX_SOURCE_TURNS)) if n is not None]


def _plain(it: Recalled) -> bool:
    turns = it.source_turns
    return (type(it.text) is str and len(it.text) <= MAX_TEXT and type(it.score) is float
            and math.isfinite(it.score) and type(turns) is list and len(turns) <= MAX_SOURCE_TURNS
            and all(type(t) is int and 0 <= t < MAX_TURN for t in turns))


def normalise_items(items: Any, k: int) -> list[Recalled]:
    """Turn a system's recall result into at most ``k`` :class:`Recalled`; :class:`BadRecall` when it cannot.

    Lazy: at most ``k`` items are taken from any iterable (an endless generator is fine). Strings are items with
    score 1. Texts are cut at :data:`MAX_TEXT` characters; a score must be a finite number (NaN, inf or an int
    too large for a float is rejected, not clamped: the answerer weighs by score, and a clamped value would
    silently decide for the system); source turns keep only non-negative integers (integral floats too), at most
    :data:`MAX_SOURCE_TURNS`, anything else dropped.
    """
    if items is None:
        return []
    try:
        if isinstance(items, (str, bytes, Mapping)):
            raise TypeError
        source = iter(items)
    except TypeError:
        raise BadRecall(f"recall returned {type(items).__name__} {reprlib.repr(items)}, "
                        f"expected a list of items") from None
    out: list[Recalled] = []
    for pos, it in enumerate(itertools.islice(source, max(k, 0))):
        if type(it) is Recalled and _plain(it):  # normalised already (frozen: safe to share)
            out.append(it)
            continue
        if isinstance(it, str):
            out.append(Recalled(str.__getitem__(it, slice(MAX_TEXT)), 1.0))
            continue
        text = _get(it, "text")
        if not isinstance(text, str):
            raise BadRecall(f"recall item {pos} has no text")
        out.append(Recalled(str.__getitem__(text, slice(MAX_TEXT)), _score(pos, _get(it, "score", 1.0)),
                            _turns(pos, _get(it, "source_turns"))))
    return out


def check_methods(name: str, obj: Any) -> None:
    """Raise :class:`SystemFailure` when ``obj`` lacks a required method."""
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(obj, m, None))]
    if missing:
        raise SystemFailure(f"system {name!r} lacks required method(s) {', '.join(missing)} "
                            f"(needs reset(persona_id), observe(turn), recall(query, k))")


def import_class(spec: str) -> Callable[..., Any]:
    """Import ``module:Class`` from ``PYTHONPATH``, installed packages or (searched last) the current directory."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemFailure(f"system {spec!r}: expected a built-in name or module:Class")
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # last: a matplotlib.py in the working directory must not shadow the real one
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemFailure(f"system {spec!r}: cannot import module {module_name!r} ({exc})") from None
    except Exception as exc:  # the user's module raised at import time
        raise SystemFailure(f"system {spec!r}: importing {module_name!r} raised "
                            f"{type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise SystemFailure(f"system {spec!r}: module {module_name!r} has no attribute {attr!r}")
    if not callable(obj):
        raise SystemFailure(f"system {spec!r}: {attr!r} is not a class or factory")
    return obj


def instantiate(name: str, factory: Callable[..., Any]) -> Any:
    """Call a user factory with no arguments and check the contract."""
    try:
        system = factory()
    except Exception as exc:
        raise SystemFailure(f"system {name!r}: constructing it raised {type(exc).__name__}: {exc}") from None
    check_methods(name, system)
    return system
