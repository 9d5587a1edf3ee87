"""Reading and writing suites: records in, JSON Lines and a hashed manifest out, and back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from dimobench.errors import InputError
from dimobench.suite.io import atomic_write_text, iter_jsonl, read_json, sha256_file, write_jsonl
from dimobench.suite.schema import (
    QA_TYPES,
    RECORD_FILES,
    Manifest,
    Persona,
    QAItem,
    Schedule,
    Turn,
    VerdictRecord,
)

if TYPE_CHECKING:
    import pandas as pd

SUITE_FILES = ("personas.jsonl", "schedules.jsonl", "dialogues.jsonl", "qa.jsonl")


@dataclass
class Suite:
    """A loaded suite. ``qa_frame()`` and ``turns_frame()`` give pandas views for analysis."""

    path: Path
    manifest: Manifest
    personas: list[Persona]
    schedules: list[Schedule]
    dialogues: list[Turn]
    qa: list[QAItem]
    verdicts: list[VerdictRecord] = field(default_factory=list)

    def turns_of(self, persona_id: str) -> list[Turn]:
        """This persona's turns in order."""
        if not hasattr(self, "_by_persona"):
            from dimobench.suite.plan import turns_by_persona

            self._by_persona = turns_by_persona(self.dialogues)
        return self._by_persona.get(persona_id, [])

    def qa_frame(self) -> pd.DataFrame:
        """The questions as a pandas DataFrame, one row per item."""
        import pandas as pd

        return pd.DataFrame([q.model_dump() for q in self.qa])

    def turns_frame(self) -> pd.DataFrame:
        """The turns as a pandas DataFrame, annotations flattened into columns."""
        import pandas as pd

        rows = []
        for t in self.dialogues:
            row = t.model_dump(exclude={"annotation"})
            ann = t.annotation.model_dump() if t.annotation else {}
            row.update({f"annotation_{k}": v for k, v in ann.items()})
            rows.append(row)
        return pd.DataFrame(rows)


def counts(personas: list[Persona], turns: list[Turn], qa: list[QAItem]) -> dict[str, object]:
    """The manifest's counts: personas, turns, questions, and questions by type and by phase."""
    by_type: dict[str, int] = dict.fromkeys(QA_TYPES, 0)
    by_phase: dict[str, int] = {}
    for q in qa:
        if q.qa_type:
            by_type[q.qa_type] = by_type.get(q.qa_type, 0) + 1
        key = q.phase or "none"
        by_phase[key] = by_phase.get(key, 0) + 1
    kinds: dict[str, int] = {}
    for t in turns:
        k = t.annotation.kind if t.annotation else "none"
        kinds[k] = kinds.get(k, 0) + 1
    return {"personas": len(personas), "turns": len(turns), "qa": len(qa), "by_qa_type": by_type,
            "by_phase": dict(sorted(by_phase.items())), "turn_kinds": dict(sorted(kinds.items()))}


def write_suite(out: Path, records: dict[str, list[Any]], manifest_fields: dict[str, Any]) -> Manifest:
    """Write every record file atomically, then the manifest with their sha256 (written last)."""
    for name, recs in records.items():
        write_jsonl(out / name, recs)
    files = {name: sha256_file(out / name) for name in records}
    manifest = Manifest(files=files, **manifest_fields)
    text = json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False)
    atomic_write_text(out / "manifest.json", text + "\n")
    return manifest


def _read_records(path: Path, model: type[BaseModel]) -> list[Any]:
    out = []
    for line, data in iter_jsonl(path):
        try:
            out.append(model.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"])) or "record"
            raise InputError(err["msg"].lower(), path, line, where) from None
    return out


def load_suite(path: str | Path) -> Suite:
    """Load a suite directory; the first unreadable record raises ``InputError`` with file, line and field.

    ``dimobench validate`` reports *every* problem instead; use it to check a suite.
    """
    root = Path(path)
    manifest_path = root / "manifest.json"
    if not root.is_dir():
        raise InputError("not a suite: no such directory" if not root.exists() else "not a suite: not a directory",
                         root)
    if not manifest_path.exists():
        raise InputError("not a suite: manifest.json is missing", root)
    try:
        manifest = Manifest.model_validate(read_json(manifest_path))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"].lower(), manifest_path, None, ".".join(map(str, err["loc"]))) from None
    loaded: dict[str, list[Any]] = {}
    for name, model in RECORD_FILES.items():
        file = root / name
        if file.exists():
            loaded[name] = _read_records(file, model)
        elif name in SUITE_FILES:
            raise InputError(f"{name} is missing", root)
    return Suite(root, manifest, loaded["personas.jsonl"], loaded["schedules.jsonl"], loaded["dialogues.jsonl"],
                 loaded["qa.jsonl"], loaded.get("verdicts.jsonl", []))
