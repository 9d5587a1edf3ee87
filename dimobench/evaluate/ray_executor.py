"""``--executor ray``: each unit a Ray task (one CPU, and one GPU under ``--device cuda``), its result saved here
as soon as it arrives.

Ray is imported only when chosen. Workers may be on other machines, so they only read the suites (which must be
reachable at the same path there) and send every unit back; this process keeps each one in the unit store the
moment it arrives, so ``--resume`` after a kill redoes only the units that were in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from dimobench.errors import ConfigError
from dimobench.evaluate.replay import SystemRun
from dimobench.evaluate.worker import Unit, WorkerSpec

RAY_EXTRA = 'ray support needs the "ray" extra: pip install "dimobench[ray]"'


def ray_module() -> Any:
    """The ``ray`` package; ``ConfigError`` naming the extra when it is not installed."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--executor ray: {RAY_EXTRA}") from None
    return ray


def ray_unit(unit: Unit, spec: WorkerSpec) -> SystemRun:
    """The Ray task: cap this worker's threads (Ray gives it one CPU), then replay the unit."""
    import os

    from dimobench.evaluate.worker import THREAD_VARS, run_unit

    for var in THREAD_VARS[:-1]:
        os.environ.setdefault(var, "1")
    return run_unit(unit, spec.model_copy(update={"threads": 1}))


def submit(units: list[Unit], spec: WorkerSpec, store: Any, address: str | None
           ) -> tuple[dict[tuple[str, str, str], Future[SystemRun]], Callable[[bool], None]]:
    """Send every unit to Ray (connecting to ``address``, or starting a local Ray, unless one is connected).

    Returns a future per unit key, each resolved once its unit is saved in ``store``, and a closer that
    cancels what is still queued when the run is abandoned.
    """
    ray = ray_module()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    # Ray hides the GPUs from a task that asks for none (CUDA_VISIBLE_DEVICES=""), so a cuda unit asks for one.
    task = ray.remote(num_cpus=1, num_gpus=1 if spec.device == "cuda" else 0, max_retries=0)(ray_unit)
    refs = {u.key(): task.remote(u, spec) for u in units}
    futures: dict[tuple[str, str, str], Future[SystemRun]] = {}
    for key, ref in refs.items():
        saved: Future[SystemRun] = Future()
        ref.future().add_done_callback(lambda f, key=key, saved=saved: _keep(store, key, f, saved))
        futures[key] = saved

    def close(abort: bool) -> None:
        if abort:
            for ref in refs.values():
                ray.cancel(ref, force=True)

    return futures, close


def _keep(store: Any, key: tuple[str, str, str], done: Future[SystemRun], saved: Future[SystemRun]) -> None:
    exc = done.exception()
    if exc is not None:
        cause = getattr(exc, "cause", None)  # a RayTaskError carries the task's own exception
        saved.set_exception(cause if isinstance(cause, Exception) else exc)
        return
    try:
        saved.set_result(store.save(*key, done.result()))
    except Exception as err:  # a full disk: the unit fails, not the callback thread
        saved.set_exception(err)
