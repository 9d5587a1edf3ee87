"""``evaluate --shard i/n`` and ``dimobench merge``: one evaluation cut into n folders, then put back together.

A shard folder holds its units (see :mod:`dimobench.evaluate.units`), the run's fingerprint and a marker
(``.dimobench/shard.json``: the whole config, ``i``, ``n`` and the units it owes) but no report. ``merge``
checks that the folders are the n shards of one evaluation, each once and finished, copies their units into a
fresh evaluation folder and runs that evaluation with ``--resume`` (:mod:`dimobench.evaluate.merge`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dimobench.backends.jobs import STATE_DIR
from dimobench.errors import DimobenchError, InputError
from dimobench.evaluate.results import EvalReport
from dimobench.evaluate.units import RUN_FILE, UNITS
from dimobench.evaluate.worker import Unit
from dimobench.strictjson import dumps, loads, read_text
from dimobench.suite.io import atomic_write_text

SHARD_FILE = "shard.json"
SAME_RUN = ("shard", "jobs", "executor", "ray_address", "device")
"""Config fields shards of one evaluation may differ in (how, not what, they ran)."""


class ShardError(DimobenchError):
    """The folders given to ``merge`` are not the finished shards of one evaluation."""


class ShardMarker(BaseModel):
    """``.dimobench/shard.json`` of a shard folder."""

    index: int
    """This shard's ``i`` (1-based)."""
    count: int
    """The ``n`` of the split."""
    fingerprint: str
    """The evaluation's fingerprint (every setting that changes an answer)."""
    config: dict[str, Any]
    """The :class:`EvalConfig` as JSON (paths as strings)."""
    units: list[list[str]]
    """The ``(system, suite, persona)`` units this shard owes."""
    complete: bool = False
    """True once every unit of the shard is done."""


def write_marker(out: Path, cfg: Any, shard: tuple[int, int], units: list[Unit], complete: bool) -> None:
    """Write (atomically) the marker of a shard run in ``out``."""
    run = loads(read_text(out / STATE_DIR / RUN_FILE), out / STATE_DIR / RUN_FILE)
    marker = ShardMarker(index=shard[0], count=shard[1], fingerprint=str(run["fingerprint"]),
                         config=json.loads(cfg.model_dump_json()), units=[list(u.key()) for u in units],
                         complete=complete)
    atomic_write_text(out / STATE_DIR / SHARD_FILE, dumps(marker.model_dump(), indent=2) + "\n")


def shard_report(cfg: Any, shard: tuple[int, int]) -> EvalReport:
    """What ``evaluate`` returns for a shard: no figures, the config marked partial."""
    from dimobench.evaluate.scoring import METRIC_VERSION

    return EvalReport(format="dimobench-report", format_version=1, metric_version=METRIC_VERSION, systems={},
                      suites={}, config={"status": "partial", "shard": f"{shard[0]}/{shard[1]}",
                                         "systems": list(cfg.systems)})


def _marker(folder: Path) -> ShardMarker:
    path = folder / STATE_DIR / SHARD_FILE
    if not path.is_file():
        raise ShardError(f"{folder}: not a shard (no {STATE_DIR}/{SHARD_FILE}; make shards with evaluate "
                         f"--shard i/n)")
    try:
        return ShardMarker.model_validate(loads(read_text(path), path))
    except (InputError, ValueError) as exc:
        raise ShardError(f"{folder}: unreadable shard marker ({str(exc).splitlines()[0]})") from None


def unit_file(folder: Path, key: Sequence[str]) -> Path:
    """Where :class:`~dimobench.evaluate.units.UnitStore` keeps the unit ``(system, suite, persona)``."""
    from dimobench.evaluate.replay import safe_name

    system, suite, persona = key
    return folder / STATE_DIR / UNITS / safe_name(system) / safe_name(suite) / f"{safe_name(persona)}.json"


def check_shards(folders: Sequence[Path]) -> list[tuple[Path, ShardMarker]]:
    """The shards in index order, once each is checked; :class:`ShardError` naming the first bad folder."""
    if not folders:
        raise ShardError("merge: give the shard folders")
    seen: dict[int, tuple[Path, ShardMarker]] = {}
    first: tuple[Path, ShardMarker] | None = None
    for folder in map(Path, folders):
        m = _marker(folder)
        if first is None:
            first = (folder, m)
        else:
            _same_run(folder, m, *first)
        if m.index in seen:
            raise ShardError(f"{folder}: shard {m.index}/{m.count} given twice (also {seen[m.index][0]})")
        missing = [u for u in m.units if not unit_file(folder, u).is_file()]
        if not m.complete or missing:
            raise ShardError(f"{folder}: shard {m.index}/{m.count} is unfinished ({len(m.units) - len(missing)} "
                             f"of {len(m.units)} units); finish it with evaluate --shard {m.index}/{m.count} "
                             f"--resume")
        seen[m.index] = (folder, m)
    assert first is not None
    absent = [str(i) for i in range(1, first[1].count + 1) if i not in seen]
    if absent:
        raise ShardError(f"shard(s) {', '.join(f'{i}/{first[1].count}' for i in absent)} missing "
                         f"(given {len(seen)} of {first[1].count}, the first {first[0]})")
    return [seen[i] for i in sorted(seen)]


def _same_run(folder: Path, m: ShardMarker, ref_folder: Path, ref: ShardMarker) -> None:
    keys = sorted(set(m.config) | set(ref.config))
    differ = [k for k in keys if k not in SAME_RUN and m.config.get(k) != ref.config.get(k)]
    if m.count != ref.count:
        differ.insert(0, "shard count")
    if m.fingerprint != ref.fingerprint and not differ:
        differ.append("suite files, settings or code")
    if differ:
        raise ShardError(f"{folder}: not a shard of the same evaluation as {ref_folder} "
                         f"(differs in {', '.join(differ)})")
