"""Personas written side by side: stages 3-5 write each persona on its own random stream (its seed drawn from the
stage's stream in persona order), so forked processes can write them at once and the joined result has the same
bytes as one process writing them in turn."""

from __future__ import annotations

import multiprocessing
import os
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

R = TypeVar("R")

MIN_TURNS = 1000
"""Turns in all (personas x turns) from which :func:`auto_workers` uses more than one process (a preset suite has
1,750): below it, starting them costs about what they save (a test's 2 x 120-turn suite); the bytes are the same
either way."""

_SHARED: Any = None
"""What every persona's job reads (the stage's config and inputs and the personas' seeds), set before the workers
are forked so they inherit it instead of each unpickling the catalog."""


def auto_workers(personas: int, turns: int) -> int:
    """Processes for a suite of ``personas`` x ``turns`` when none are asked for: one per core, at most one per
    persona, where processes can be forked and the suite is large enough (:data:`MIN_TURNS`); else one."""
    if personas * turns < MIN_TURNS or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(personas, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def _job(args: tuple[Callable[[Any, int], Any], int]) -> Any:
    job, i = args
    return job(_SHARED, i)


def _seeded(bundle: tuple[Callable[[Any, int, random.Random], R], Any, list[int]], i: int) -> R:
    job, shared, seeds = bundle
    return job(shared, i, random.Random(seeds[i]))


def per_persona_stream(job: Callable[[Any, int, random.Random], R], shared: Any, rng: random.Random, n: int,
                       workers: int) -> list[R]:
    """``job(shared, i, stream)`` for persona ``i`` in ``range(n)`` (:func:`per_persona`), ``stream`` its own
    random stream: every persona's seed is drawn from ``rng`` first, in persona order, so the bytes are the same
    for any number of ``workers`` (stages 3-5)."""
    return per_persona(_seeded, (job, shared, [rng.getrandbits(64) for _ in range(n)]), n, workers)


def per_persona(job: Callable[[Any, int], R], shared: Any, n: int, workers: int) -> list[R]:
    """``job(shared, i)`` for persona ``i`` in ``range(n)``, in order, in up to ``workers`` forked processes
    (``job`` is a module-level function; one process where ``workers`` is 1 or there is one persona)."""
    global _SHARED
    if (workers <= 1 or n <= 1 or "fork" not in multiprocessing.get_all_start_methods()
            or multiprocessing.current_process().daemon):  # a pool's worker may not start processes of its own
        return [job(shared, i) for i in range(n)]
    _SHARED = shared
    try:
        try:
            pool = ProcessPoolExecutor(max_workers=min(workers, n), mp_context=multiprocessing.get_context("fork"))
        except (OSError, NotImplementedError):  # no semaphores here (a container without /dev/shm): in turn
            return [job(shared, i) for i in range(n)]
        with pool:
            try:
                return list(pool.map(_job, [(job, i) for i in range(n)]))
            except BrokenProcessPool:  # a worker was killed (for memory, say): the same bytes, written in turn
                return [job(shared, i) for i in range(n)]
    finally:
        _SHARED = None
