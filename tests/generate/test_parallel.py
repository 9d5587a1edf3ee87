"""Personas written in parallel processes come back in order, and a machine where processes cannot be used (no
semaphores, a worker killed) still gets every persona, written in turn."""

from __future__ import annotations

import os

import pytest

from dimobench.generate import parallel

PARENT = os.getpid()


def _square(shared: int, i: int) -> tuple[int, int]:
    return i * i + shared, os.getpid()


def _dies_in_a_worker(shared: int, i: int) -> int:
    if os.getpid() != PARENT:
        os._exit(1)  # what the kernel's OOM killer leaves behind
    return i + shared


def test_jobs_run_in_other_processes_and_come_back_in_order():
    made = parallel.per_persona(_square, 10, 6, workers=3)
    assert [v for v, _ in made] == [i * i + 10 for i in range(6)]
    assert {pid for _, pid in made} - {os.getpid()}  # written elsewhere


def test_one_worker_or_one_persona_stays_in_this_process():
    assert {pid for _, pid in parallel.per_persona(_square, 0, 4, workers=1)} == {os.getpid()}
    assert {pid for _, pid in parallel.per_persona(_square, 0, 1, workers=4)} == {os.getpid()}


def test_no_semaphores_means_one_process(monkeypatch: pytest.MonkeyPatch):
    def no_pool(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")  # sem_open in a container without /dev/shm

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", no_pool)
    assert [v for v, _ in parallel.per_persona(_square, 1, 3, workers=2)] == [1, 2, 5]


def test_a_killed_worker_leaves_the_personas_written_in_turn():
    assert parallel.per_persona(_dies_in_a_worker, 5, 4, workers=2) == [5, 6, 7, 8]


def test_small_suites_are_written_in_one_process():
    assert parallel.auto_workers(2, 120) == 1
    assert parallel.auto_workers(5, 1050) == min(5, len(os.sched_getaffinity(0)))


def _personas_in_a_daemon(shared: int, i: int) -> list[int]:
    return [v for v, _ in parallel.per_persona(_square, shared, 3, workers=2)]


def test_a_daemon_worker_writes_its_personas_in_turn():
    # a multiprocessing.Pool worker is a daemon, which may not have children of its own
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_personas_in_a_daemon, (2, 0)) == [2, 3, 6]
