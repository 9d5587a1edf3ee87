"""The worker side of a parallel evaluation: one unit (system x suite x persona) per call, models loaded once.

A worker process (a ``ProcessPoolExecutor`` worker started with ``spawn``, or a Ray worker) keeps the suites,
the systems and the offline answerer it has built in module-level caches, so a model loads once per worker and
not once per unit. Because every system is ``reset`` per persona, a unit gives the same answers in any worker
as in the parent (see :mod:`dimobench.evaluate.units`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from dimobench.evaluate.replay import SystemRun

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM")


class WorkerSpec(BaseModel):
    """What every unit of one evaluation shares: how to build its systems and its answerer."""

    model_config = ConfigDict(frozen=True)

    window_n: int
    """Turns the ``window`` baseline keeps."""
    k: int
    """Items recalled per question."""
    stats_every: int
    """Sample stats() every this many turns."""
    embedding: str
    """The answerer's embedding backend (``auto``, ``minilm``, ``hashing``)."""
    call_timeout_s: float
    """Longest one system call may take (only bounds ``module:Class`` systems)."""
    answerer: str = "offline"
    """The offline answerer's kind (one of ``dimobench.evaluate.gloss.OFFLINE_ANSWERERS``)."""
    threads: int = 1
    """Torch (and BLAS) threads of this worker: the machine's cores shared among the workers."""
    device: str = "cpu"
    """Where this worker's encoders run (``cpu`` or ``cuda``)."""


class Unit(BaseModel):
    """One unit of work: a system on one persona of one suite."""

    model_config = ConfigDict(frozen=True)

    system: str
    """System name, as given to ``--system``."""
    suite: str
    """The suite's key in the report."""
    suite_path: str
    """The suite's directory (read by the worker, so it must be reachable there)."""
    persona: str
    """Persona id."""

    def key(self) -> tuple[str, str, str]:
        """``(system, suite, persona)``: the order shards are cut in."""
        return (self.system, self.suite, self.persona)


_SUITES: dict[str, Any] = {}
_SYSTEMS: dict[str, Any] = {}
_ANSWERERS: dict[str, Any] = {}
_WATCHING: list[int] = []


def init_worker(threads: int) -> None:
    """Start-up of a pool worker: cap its threads before torch loads and end it when its parent dies.

    A SIGKILLed parent cannot end its pool; without the watchdog its workers would finish their unit and keep
    writing into a folder that a resumed run now owns.
    """
    for var in THREAD_VARS[:-1]:
        os.environ[var] = str(threads)
    os.environ[THREAD_VARS[-1]] = "false"  # the tokenizers' own pool would oversubscribe the cores again
    parent = os.getppid()
    if not _WATCHING:
        _WATCHING.append(parent)
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(0.2)


def _set_threads(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _suite(path: str) -> Any:
    if path not in _SUITES:
        from dimobench.suite.load import load_suite

        _SUITES[path] = load_suite(Path(path))  # the parent validated it before any unit was sent
    return _SUITES[path]


def _system(name: str, spec: WorkerSpec) -> Any:
    key = f"{name}\x00{spec.window_n}\x00{spec.call_timeout_s}\x00{spec.device}"
    if key not in _SYSTEMS:
        from dimobench.evaluate.systems import make_system

        _SYSTEMS[key] = make_system(name, spec.window_n, call_timeout_s=spec.call_timeout_s)
    return _SYSTEMS[key]


def _answerer(embedding: str, kind: str, device: str) -> Any:
    key = f"{kind}\x00{embedding}\x00{device}"
    if key not in _ANSWERERS:
        from dimobench.embed import get_embedder, set_default_backend
        from dimobench.evaluate.gloss import make_offline_answerer

        set_default_backend(embedding)  # the baselines embed with the evaluation's backend, as in the parent
        _ANSWERERS[key] = make_offline_answerer(kind, get_embedder(embedding))
    return _ANSWERERS[key]


def run_unit(unit: Unit, spec: WorkerSpec, save_to: str | None = None) -> SystemRun:
    """Replay one unit here; with ``save_to`` (the evaluation folder) keep it there before returning it.

    Saving in the worker means a SIGKILLed run loses at most the unit each worker had in progress. The unit
    comes back as the store reads it back, so the report is built from the same values whoever saved it.
    """
    from dimobench.embed import use_device
    from dimobench.evaluate.replay import run_persona

    use_device(spec.device)  # a Ray worker on another machine has not seen the parent's environment
    _set_threads(spec.threads)
    suite = _suite(unit.suite_path)
    answerer = _answerer(spec.embedding, spec.answerer, spec.device)
    system = _system(unit.system, spec)
    part = run_persona(unit.system, system, suite, unit.suite, unit.persona, answerer, spec.k, spec.stats_every)
    _set_threads(spec.threads)  # a model loaded during the unit may have reset torch's thread count
    if save_to is None:
        return part
    from dimobench.evaluate.units import UnitStore

    return UnitStore(Path(save_to)).save(unit.system, unit.suite, unit.persona, part)
