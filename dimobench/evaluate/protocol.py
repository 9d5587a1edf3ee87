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


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def normalise_items(items: Any, k: int) -> list[Recalled]:
    """Turn a system's recall result into at most ``k`` :class:`Recalled` (ValueError on a malformed item)."""
    if items is None:
        return []
    out: list[Recalled] = []
    for pos, it in enumerate(list(items)[:k]):
        if isinstance(it, str):
            out.append(Recalled(it, 1.0))
            continue
        text = _get(it, "text")
        if not isinstance(text, str):
            raise ValueError(f"recall item {pos} has no text")
        score = _get(it, "score", 1.0)
        try:
            score_f = float(score) if score is not None else 1.0
        except (TypeError, ValueError):
            raise ValueError(f"recall item {pos} has a non-numeric score {score!r}") from None
        turns = _get(it, "source_turns") or []
        out.append(Recalled(text, score_f, [int(t) for t in turns if isinstance(t, (int, float))]))
    return out


def check_methods(name: str, obj: Any) -> None:
    """Raise :class:`SystemFailure` when ``obj`` lacks a required method."""
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(obj, m, None))]
    if missing:
        raise SystemFailure(f"system {name!r} lacks required method(s) {', '.join(missing)} "
                            f"(needs reset(persona_id), observe(turn), recall(query, k))")


def import_class(spec: str) -> Callable[..., Any]:
    """Import ``module:Class`` from the current directory or ``PYTHONPATH``; one clear error otherwise."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemFailure(f"system {spec!r}: expected a built-in name or module:Class")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
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
