"""Where an evaluation's units run: in this process, in a pool of worker processes (``--jobs``) or on Ray.

The units are cut and ordered the same way whatever runs them (system-major, then suite, then persona), and
each system's run is assembled from its units in that order, so ``report.json`` (latency aside) is the same
for any ``--jobs``, ``--shard`` split or executor. Only systems whose units are self-contained go to workers:
the built-in systems with rule agents under the offline answerer. LLM-backed roles (an LLM answerer or judges,
LLM sub-agents, ``mem0``/``amem``) and ``module:Class`` systems stay in this process, so their usage log and
their guard worker are the parent's; ``--jobs`` does not apply to them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

from dimobench.errors import ConfigError
from dimobench.evaluate.protocol import SystemFailure
from dimobench.evaluate.replay import ProgressFn, SystemRun, run_persona
from dimobench.evaluate.worker import Unit, WorkerSpec, init_worker, run_unit
from dimobench.suite.load import Suite

EXECUTORS = ("local", "ray")
"""The ``--executor`` names."""


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"i/n"`` as ``(i, n)`` with ``1 <= i <= n``; None for None; ``ConfigError`` otherwise."""
    if text is None:
        return None
    head, _, tail = text.partition("/")
    if not (head.isdigit() and tail.isdigit()) or not 1 <= int(head) <= int(tail):
        raise ConfigError(f"--shard {text!r}: expected i/n with 1 <= i <= n (e.g. 2/3)")
    return int(head), int(tail)


def plan_units(systems: list[str], suites: dict[str, Suite], paths: dict[str, str]) -> list[Unit]:
    """Every unit of the evaluation, system-major, then suite, then persona (suite order)."""
    return [Unit(system=name, suite=key, suite_path=paths[key], persona=p.persona_id)
            for name in systems for key, suite in suites.items() for p in suite.personas]


def shard_units(units: list[Unit], shard: tuple[int, int] | None) -> list[Unit]:
    """Shard ``i`` of ``n``: every n-th unit of the sorted unit keys, from the i-th; the plan's order is kept."""
    if shard is None:
        return units
    i, n = shard
    keys = sorted(u.key() for u in units)
    mine = {k for pos, k in enumerate(keys) if pos % n == i - 1}
    return [u for u in units if u.key() in mine]


def poolable(name: str, parent_only: bool) -> bool:
    """Whether ``name``'s units may run in workers (see the module docstring)."""
    from dimobench.evaluate.systems import ADAPTER_SYSTEMS, is_builtin

    return not parent_only and is_builtin(name) and name not in ADAPTER_SYSTEMS


def check_executor(executor: str) -> None:
    """``ConfigError`` for an unknown executor, or for ``ray`` without the ``ray`` extra installed."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose {' or '.join(EXECUTORS)}")
    if executor == "ray":
        from dimobench.evaluate.ray_executor import ray_module

        ray_module()


def resolve_jobs(jobs: int | None) -> int:
    """``--jobs``: None means one per CPU core."""
    return max(1, jobs if jobs is not None else (os.cpu_count() or 1))


class Runner:
    """Runs the units of one evaluation and hands back each system's run as soon as all its units are done."""

    def __init__(self, spec: WorkerSpec, store: Any, built: dict[str, Any], answerer: Any,
                 progress: ProgressFn | None, *, out: str, jobs: int = 1, executor: str = "local",
                 ray_address: str | None = None, parent_only: bool = False) -> None:
        """``built``: the systems made in this process; ``store``: the :class:`UnitStore` of ``out``."""
        if executor not in EXECUTORS:
            raise ConfigError(f"--executor {executor!r}: choose {' or '.join(EXECUTORS)}")
        self.spec, self.store, self.built, self.answerer, self.progress = spec, store, built, answerer, progress
        self.out, self.jobs, self.executor, self.ray_address = out, jobs, executor, ray_address
        self.parent_only = parent_only
        self._futures: dict[tuple[str, str, str], Future[SystemRun]] = {}
        self._close: Callable[[bool], None] = lambda abort: None

    def run(self, units: list[Unit], suites: dict[str, Suite]) -> Iterator[tuple[str, list[SystemRun]]]:
        """Yield ``(system, its runs per suite)`` in system order; a failing unit raises :class:`SystemFailure`."""
        done = {u.key(): part for u in units if (part := self.store.load(*u.key())) is not None}
        remote = [u for u in units if u.key() not in done and self._remote(u.system)]
        try:
            if remote:
                self._submit(remote)
            for name in dict.fromkeys(u.system for u in units):
                mine = [u for u in units if u.system == name]
                parts = [self._part(u, done, suites[u.suite]) for u in mine]
                yield name, _assemble(name, mine, parts, self.spec.k)
        except BaseException:
            self._close(True)  # units in flight are not waited for: the run is failing or interrupted
            raise
        self._close(False)

    def _remote(self, name: str) -> bool:
        return (self.executor == "ray" or self.jobs > 1) and poolable(name, self.parent_only)

    def _part(self, unit: Unit, done: dict[tuple[str, str, str], SystemRun], suite: Suite) -> SystemRun:
        key = unit.key()
        if key in done:
            part = done[key]
        elif key in self._futures:
            try:
                part = self._futures[key].result()
            except SystemFailure:
                raise
            except Exception as exc:  # a worker that died (memory, a signal) or a Ray task error
                raise SystemFailure(f"system {unit.system!r} on persona {unit.persona}: its worker failed: "
                                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                                    ) from None
        else:
            part = run_persona(unit.system, self.built[unit.system], suite, unit.suite, unit.persona,
                               self.answerer, self.spec.k, self.spec.stats_every, self.progress)
            return self.store.save(*key, part)
        if self.progress is not None:
            for i, turn in enumerate(suite.turns_of(unit.persona)):
                self.progress(unit.system, unit.suite, unit.persona, turn.turn, i + 1)
        return part

    def _submit(self, units: list[Unit]) -> None:
        if self.executor == "ray":
            from dimobench.evaluate.ray_executor import submit

            self._futures, self._close = submit(units, self.spec, self.store, self.ray_address)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        workers = min(self.jobs, len(units))
        spec = self.spec.model_copy(update={"threads": max(1, (os.cpu_count() or 1) // workers)})
        # spawn, not fork: a forked copy of a process that has started torch's threads can deadlock
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=init_worker, initargs=(spec.threads,))
        self._futures = {u.key(): pool.submit(run_unit, u, spec, self.out) for u in units}
        self._close = lambda abort: pool.shutdown(wait=not abort, cancel_futures=True)


def _assemble(name: str, units: list[Unit], parts: list[SystemRun], k: int) -> list[SystemRun]:
    """One run per suite, its units' rows concatenated in persona order (as :func:`run_system` builds it)."""
    runs: dict[str, SystemRun] = {}
    for unit, part in zip(units, parts, strict=True):
        run = runs.setdefault(unit.suite, SystemRun(name, unit.suite, k=k))
        for field in ("answers", "observe_ms", "recall_ms", "memory"):
            getattr(run, field).extend(getattr(part, field))
    return list(runs.values())
