"""Built-in systems by name, resolved lazily; anything else is a ``module:Class`` path; every one behind the guard.

Built-ins (our own code; the oracle also needs the suite's latent plan) run in this process behind the
in-process guard (bounded recall, any exception one line, no timeout); a ``module:Class`` system runs in a
worker process (:mod:`dimobench.evaluate.guard_process`) with a per-call timeout and a memory bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from dimobench.evaluate.guard import DEFAULT_CALL_TIMEOUT_S, GuardedSystem, InProcess, describe
from dimobench.evaluate.protocol import SystemFailure, check_methods, import_class, instantiate
from dimobench.evaluate.systems.precomem_system import ABLATIONS

BASELINES = ("none", "full", "recency", "window", "bm25", "oracle")
PRECOMEM_VARIANTS = tuple(v for v in ABLATIONS if v)
ADAPTER_SYSTEMS = ("mem0-raw", "langmem-store", "amem-raw", "mem0", "amem")
"""Outside libraries behind pip extras (imported only when chosen; ``mem0``, ``amem`` need ``memory_llm``): see
``systems/adapters``."""
BUILTINS: tuple[str, ...] = ("precomem", *(f"precomem:{v}" for v in PRECOMEM_VARIANTS), *BASELINES,
                             *ADAPTER_SYSTEMS)
"""Every built-in system name."""

__all__ = ["BUILTINS", "close_systems", "is_builtin", "make_system"]


def is_builtin(name: str) -> bool:
    """True for a built-in system name."""
    return name in BUILTINS


def _builtin_factory(name: str, window_n: int, precomem: dict[str, Any] | None = None,
                     memory_llm: dict[str, Any] | None = None) -> Callable[[], Any]:
    if name in ADAPTER_SYSTEMS:
        from dimobench.evaluate.systems.adapters import load_adapter

        return load_adapter(name, memory_llm)
    if name == "precomem" or name.startswith("precomem:"):
        from dimobench.evaluate.systems.precomem_system import PreCoMemSystem

        return partial(PreCoMemSystem, name.partition(":")[2], **(precomem or {}))
    from dimobench.evaluate.systems import baselines, oracle

    table: dict[str, Callable[[], Any]] = {
        "none": baselines.NoMemory, "full": baselines.FullMemory, "bm25": baselines.BM25Memory,
        "recency": baselines.RecencyMemory, "window": partial(baselines.WindowMemory, window_n),
        "oracle": oracle.OracleMemory,
    }
    return table[name]


def make_system(name: str, window_n: int = 20, precomem: dict[str, Any] | None = None,
                memory_llm: dict[str, Any] | None = None, *, call_timeout_s: float | None = DEFAULT_CALL_TIMEOUT_S,
                memory_mb: int | None = None, hide: Iterable[str | Path] = (), isolate: bool = True) -> GuardedSystem:
    """Build a system from a built-in name or ``module:Class`` behind the guard; :class:`SystemFailure` otherwise.

    ``precomem``: keyword arguments for the built-in PreCoMem systems (``agents``, ``base_url``, ``cache_dir``).
    ``memory_llm``: the LLM of the full-mode adapters ``mem0`` and ``amem`` (``spec``, ``base_url``, ``cache_dir``).
    For a ``module:Class`` system: ``call_timeout_s`` bounds each call (None or 0: no bound), ``memory_mb`` its
    worker's memory (None: three quarters of the machine's; 0: none), ``hide`` lists paths (the suites) no
    environment variable of its worker may name; ``isolate=False`` runs it in this process (no timeout, no
    memory bound: for debugging a system, never for scores others must trust).
    Call ``close()`` (or :func:`close_systems`) when done; a dropped system's worker is ended when collected.
    """
    if is_builtin(name):
        factory = _builtin_factory(name, window_n, precomem, memory_llm)
        return _in_process(name, instantiate(name, factory))
    if ":" not in name:
        raise SystemFailure(f"unknown system {name!r}: use one of {', '.join(BUILTINS)} or module:Class")
    if isolate:
        from dimobench.evaluate.guard_process import open_worker

        return open_worker(name, call_timeout_s, memory_mb, hide)
    try:
        system = instantiate(name, import_class(name))
    except SystemFailure:
        raise
    except (Exception, SystemExit) as exc:  # SystemExit raised while importing it
        raise SystemFailure(f"system {name!r}: loading it raised {describe(exc)}") from None
    return _in_process(name, system)


def _in_process(name: str, system: Any) -> GuardedSystem:
    check_methods(name, system)
    return GuardedSystem(name, InProcess(system), callable(getattr(system, "answer", None)),
                         callable(getattr(system, "stats", None)), inner=system)


def close_systems(systems: Iterable[Any]) -> None:
    """Close every guarded system (ends their workers); other objects are left alone."""
    for system in systems:
        if isinstance(system, GuardedSystem):
            system.close()
