"""``dimobench merge``: the shards of one ``evaluate --shard i/n`` split joined into one evaluation folder.

Every unit comes from a shard and is reused by an ``evaluate --resume`` run in the merged folder, so the merged
``report.json`` is the one a single run writes (latency aside).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from dimobench.backends.jobs import STATE_DIR
from dimobench.errors import ResumeConflict
from dimobench.evaluate.api import EvalConfig, evaluate
from dimobench.evaluate.results import EvalReport
from dimobench.evaluate.shards import ShardError, check_shards, unit_file
from dimobench.evaluate.units import RUN_FILE


def merge(folders: Sequence[Path], out: str | Path, *, force: bool = False) -> EvalReport:
    """Build one evaluation in ``out`` from the shard folders: report.json, answers and the rest, as a single
    run writes them. :class:`ShardError` when the folders are not the finished shards of one evaluation."""
    shards = check_shards(folders)
    # Every unit is finished, so nothing runs here: the CPU, whatever device the shards ran on.
    cfg = EvalConfig.model_validate({**shards[0][1].config, "shard": None, "jobs": 1, "executor": "local",
                                     "device": "cpu"})

    def prefill(target: Path) -> None:
        run_file = target / STATE_DIR / RUN_FILE
        run_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shards[0][0] / STATE_DIR / RUN_FILE, run_file)  # its fingerprint is checked on resume
        for folder, m in shards:
            for key in m.units:
                dest = unit_file(target, key)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(unit_file(folder, key), dest)

    try:
        return evaluate(cfg, out, force=force, resume=True, prefill=prefill)
    except ResumeConflict as exc:
        raise ShardError(f"{shards[0][0]}: the shards were made from other suite files or settings than "
                         f"those at the recorded paths now ({str(exc).partition('(')[2].partition(')')[0]})"
                         ) from None
