"""Shared pieces of the importers: the parsed result, input readers with located errors, dates and writing.

An importer parses its whole input into an :class:`Imported` first; only then does :func:`write_imported`
touch ``--out``. So malformed input raises :class:`~dimobench.errors.InputError` with nothing written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dimobench import strictjson
from dimobench.errors import InputError
from dimobench.suite.outdir import claim_out
from dimobench.suite.schema import Persona, QAItem, Turn


@dataclass
class Imported:
    """Everything one source file becomes, before anything is written."""

    source: str
    """Importer name (``locomo``, ``longmemeval``, ...)."""
    licence: str
    """Licence of the source data, named in the manifest and the dataset card."""
    citation: str
    """Where the source comes from (repository or dataset page)."""
    paths: list[Path]
    """Input files (only their basenames reach the manifest)."""
    personas: list[Persona] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    qa: list[QAItem] = field(default_factory=list)
    dropped_evidence: list[dict[str, str]] = field(default_factory=list)
    """``{qa_id, source_id, reason}`` for every source evidence id that resolves to no turn."""
    notes: list[str] = field(default_factory=list)
    """Import decisions worth stating in the dataset card."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More manifest fields (e.g. repaired evidence ids)."""


def fail(path: Path, message: str, field_name: str | None = None, line: int | None = None) -> InputError:
    """An ``InputError`` for ``path`` (raise it): ``file:line: field: message``."""
    return InputError(message, path, line, field_name)


def read_json(path: Path) -> Any:
    """Parse a whole strict-JSON file (:func:`dimobench.strictjson.loads`); every failure names file and line."""
    return strictjson.loads(read_text(path), path)


def read_text(path: Path) -> str:
    """Read a UTF-8 file (a BOM is allowed); a missing, unreadable or undecodable file is an ``InputError``."""
    return strictjson.read_text(path)


def need(obj: Any, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    """``obj[key]`` checked to be of ``kind``; otherwise an ``InputError`` naming the field ``where.key``."""
    name = f"{where}.{key}" if where else key
    if not isinstance(obj, dict):
        raise fail(path, f"expected an object, got {type(obj).__name__}", where or "record")
    if key not in obj:
        raise fail(path, "missing", name)
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # JSON true is no id
        want = " or ".join(k.__name__ for k in kinds)
        raise fail(path, f"expected {want}, got {type(value).__name__}", name)
    return value


def unique_records(data: list[Any], key: str, path: Path) -> Iterator[tuple[int, str, Any]]:
    """Yield ``(index, id, record)`` for a list of source records whose ``key`` must be present and unique."""
    seen: set[str] = set()
    for i, rec in enumerate(data):
        rid = as_text(need(rec, key, (str, int), path, f"[{i}]"))
        if rid in seen:
            raise fail(path, f"duplicate {key} {rid!r}", f"[{i}].{key}")
        seen.add(rid)
        yield i, rid, rec


def as_text(value: Any) -> str:
    """Answers may be ints (LoCoMo ``2022``) or missing: keep them as text."""
    return "" if value is None else str(value)


_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%Y/%m/%d %H:%M",  # LongMemEval "2023/05/30 (Tue) 21:56" once the weekday is removed
    "%Y/%m/%d",
    "%d %B, %Y",
    "%d %B %Y",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
)
_WEEKDAY = re.compile(r"\s*\([A-Za-z]{3,9}\)\s*")


def parse_date(text: Any, path: Path, where: str) -> str:
    """A source date string as ISO 8601 (``2023-05-08T13:56:00``); unparseable dates are an ``InputError``."""
    if not isinstance(text, str) or not text.strip():
        raise fail(path, f"expected a date string, got {text!r}", where)
    s = _WEEKDAY.sub(" ", text.strip()).strip()
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(s, fmt).isoformat()
        except ValueError:
            continue
    raise fail(path, f"cannot read date {text!r}", where)


def source_counts(imp: Imported) -> dict[str, object]:
    """Counts of the suite (``dimobench.suite.load.counts``) plus per-source-type, session and dropped counts."""
    from dimobench.suite.load import counts

    out = counts(imp.personas, imp.turns, imp.qa)
    by_src = Counter(q.source_type or "none" for q in imp.qa)
    out["by_source_type"] = dict(sorted(by_src.items()))
    out["sessions"] = len({(t.persona_id, t.session) for t in imp.turns})
    out["evidence_turns"] = sum(len(q.evidence_turns) for q in imp.qa)
    out["dropped_evidence"] = len(imp.dropped_evidence)
    return out


def write_imported(imp: Imported, out: Path, force: bool = False) -> Any:
    """Write ``imp`` as an imported suite (atomic, hashed files; manifest last; dataset card) and return
    the manifest."""
    from dimobench import __version__
    from dimobench.suite.io import atomic_write_text
    from dimobench.suite.load import write_suite

    names = [p.name for p in imp.paths]
    config: dict[str, object] = {"source": imp.source, "path": names if len(names) > 1 else names[0],
                                 "licence": imp.licence, "citation": imp.citation}
    with claim_out(out, "import", force):
        manifest = write_suite(out, {"personas.jsonl": imp.personas, "schedules.jsonl": [],
                                     "dialogues.jsonl": imp.turns, "qa.jsonl": imp.qa},
                               {"status": "imported", "dimobench_version": __version__, "config": config,
                                "counts": source_counts(imp), "dropped_evidence": imp.dropped_evidence,
                                "import_notes": imp.notes, **imp.extra})
        atomic_write_text(out / "README.md", render_card(imp, manifest))
    return manifest


def render_card(imp: Imported, manifest: Any) -> str:
    """The dataset card of an imported suite: source, licence, counts, decisions and dropped ids."""
    c = manifest.counts
    rows = "\n".join(f"| {k} | {v} |" for k, v in c["by_source_type"].items())
    notes = "\n".join(f"- {n}" for n in imp.notes)
    dropped = "\n".join(f"- `{d['qa_id']}`: `{d['source_id']}` ({d['reason']})" for d in imp.dropped_evidence)
    return f"""# {imp.source} imported into the dimobench suite format

Converted by `dimobench import {imp.source}` (dimobench {manifest.dimobench_version}) from
`{manifest.config['path']}`. This is a conversion of third-party data: the source's licence applies, not
dimobench's.

- **Source:** {imp.citation}
- **Licence:** {imp.licence}
- **Counts:** {c['personas']} personas, {c['sessions']} sessions, {c['turns']} turns, {c['qa']} questions,
  {c['evidence_turns']} evidence turns; {c['dropped_evidence']} source evidence id(s) dropped.

| source_type | questions |
|---|---|
{rows}

## Import decisions

{notes or '- none'}

## Dropped evidence ids

{dropped or '- none'}

Each source utterance is one turn (`user` holds it, `speaker` names who said it, `assistant` is empty) and
keeps its source id in `source_id`. Latent-plan fields (`schedules.jsonl`, `phase`, `trait_id`, `drift_id`,
`qa_type`) are empty: imported suites keep their own categories in `source_type`. Check with
`dimobench validate DIR`.
"""
