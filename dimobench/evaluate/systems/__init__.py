"""Built-in systems by name, resolved lazily; anything else is a ``module:Class`` path."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

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

__all__ = ["BUILTINS", "is_builtin", "make_system"]


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
                memory_llm: dict[str, Any] | None = None) -> Any:
    """Build a system from a built-in name or ``module:Class``; :class:`SystemFailure` with one clear line.

    ``precomem``: keyword arguments for the built-in PreCoMem systems (``agents``, ``base_url``, ``cache_dir``).
    ``memory_llm``: the LLM of the full-mode adapters ``mem0`` and ``amem`` (``spec``, ``base_url``, ``cache_dir``).
    """
    if is_builtin(name):
        system = instantiate(name, _builtin_factory(name, window_n, precomem, memory_llm))
        check_methods(name, system)
        return system
    if ":" not in name:
        raise SystemFailure(f"unknown system {name!r}: use one of {', '.join(BUILTINS)} or module:Class")
    return instantiate(name, import_class(name))
