"""Finished evaluation units (system x suite x persona) kept on disk, so ``evaluate --resume`` redoes only the rest.

A persona is the unit because every system is ``reset`` between personas: what one persona's replay produces
does not depend on the others, so a unit replayed after a kill gives what the first run would have. Each unit is
one strict-JSON file written atomically under ``<out>/.dimobench/units/`` once the unit is done; a kill loses at
most the unit in progress. The run's fingerprint (everything that changes an answer) is checked before any unit
is reused: a resume with other settings is refused rather than mixing two runs' answers in one report.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dimobench.backends.jobs import STATE_DIR
from dimobench.errors import InputError, ResumeConflict
from dimobench.evaluate.replay import SystemRun, safe_name
from dimobench.strictjson import dumps, loads, read_text
from dimobench.suite.io import atomic_write_text

UNITS = "units"
RUN_FILE = "evaluate.json"
FIELDS = ("answers", "observe_ms", "recall_ms", "memory")


def fingerprint(settings: dict[str, Any]) -> str:
    """sha256 of the settings that change answers (canonical JSON)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


class UnitStore:
    """The units of one evaluation folder; :meth:`begin` once, then :meth:`load` and :meth:`save` per unit."""

    def __init__(self, out: Path) -> None:
        """Units of the evaluation in ``out`` (its ``.dimobench/units/``)."""
        self.root = out / STATE_DIR / UNITS
        self.run_file = out / STATE_DIR / RUN_FILE

    def begin(self, settings: dict[str, Any], resume: bool) -> None:
        """Record this run's fingerprint; with ``resume`` an earlier one must match, else ``ResumeConflict``."""
        plain = json.loads(json.dumps(settings, default=str))  # as the run file holds them, so keys compare
        digest = fingerprint(plain)
        if resume and self.run_file.is_file():
            earlier = loads(read_text(self.run_file), self.run_file)
            before = earlier.get("settings", {}) if isinstance(earlier, dict) else {}
            if not isinstance(earlier, dict) or earlier.get("fingerprint") != digest:
                changed = sorted(k for k in plain if not isinstance(before, dict) or before.get(k) != plain[k])
                raise ResumeConflict(f"--resume: this folder's evaluation was made with other settings "
                                     f"({', '.join(changed) or 'unknown'}); rerun with --force to start over")
        atomic_write_text(self.run_file, dumps({"fingerprint": digest, "settings": plain}, indent=2) + "\n")

    def _path(self, system: str, suite: str, persona: str) -> Path:
        return self.root / safe_name(system) / safe_name(suite) / f"{safe_name(persona)}.json"

    def load(self, system: str, suite: str, persona: str) -> SystemRun | None:
        """A finished unit, or None if it has not been run (a unit file that does not parse is run again)."""
        path = self._path(system, suite, persona)
        if not path.is_file():
            return None
        try:
            data = loads(read_text(path), path)
        except InputError:
            return None
        if not isinstance(data, dict) or data.get("persona_id") != persona or any(
                not isinstance(data.get(f), list) for f in FIELDS):
            return None
        if any(isinstance(a, dict) and a.get("failed") for a in data["answers"]):
            return None  # LLM answers that failed after their retries: the unit is replayed (cache hits) to retry them
        return SystemRun(system, suite, k=int(data.get("k", 10)), **{f: data[f] for f in FIELDS})

    def save(self, system: str, suite: str, persona: str, part: SystemRun) -> SystemRun:
        """Keep one finished unit (atomic) and return it as a resumed run will read it back, so a clean run and a
        resumed one build their report from the same values."""
        record = {"system": system, "suite": suite, "persona_id": persona, "k": part.k,
                  **{f: getattr(part, f) for f in FIELDS}}
        text = dumps(record, ensure_ascii=False) + "\n"
        atomic_write_text(self._path(system, suite, persona), text)
        data = json.loads(text)
        return SystemRun(system, suite, k=part.k, **{f: data[f] for f in FIELDS})
