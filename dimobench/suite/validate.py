"""``dimobench validate``: check a suite without running anything and list every problem.

Each problem is one line ``file:line: field: message``. Checks: JSON on every line, record types, unique
ids, references (persona, trait, state, entity, drift), dialogue order (persona, then turns 1..N), phases
tiling each timeline, drifts inside it and in order, QA answers consistent with options, evidence turns that
exist and precede the question, and manifest hashes and counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from dimobench.errors import InputError
from dimobench.suite.io import sha256_file
from dimobench.suite.load import SUITE_FILES
from dimobench.suite.schema import RECORD_FILES, Manifest


class Problems(list[str]):
    """The validator's findings, one ``file:line: field: message`` string each."""

    def add(self, file: str, line: int | None, fld: str, msg: str) -> None:
        """Record one problem at ``line`` of ``file`` (None: the whole file) in field ``fld``."""
        self.append(f"{file}:{line if line is not None else '-'}: {fld}: {msg}")


def validate_suite(path: str | Path) -> list[str]:
    """Return every problem found in the suite at ``path`` (empty: the suite is valid)."""
    root = Path(path)
    problems = Problems()
    manifest = _manifest(root, problems)
    records: dict[str, list[tuple[int, Any]]] = {}
    for name, model in RECORD_FILES.items():
        file = root / name
        if not file.is_file():
            if name in SUITE_FILES:
                problems.add(name, None, "file", "missing")
            continue
        records[name] = _records(file, name, model, problems)
    if all(n in records for n in SUITE_FILES):
        _check_references(records, problems, imported=bool(manifest and manifest.status == "imported"))
    if manifest:
        for name, digest in manifest.files.items():
            file = root / name
            if file.is_file() and sha256_file(file) != digest:
                problems.add("manifest.json", None, f"files.{name}", "sha256 does not match the file")
    return problems


def _manifest(root: Path, problems: Problems) -> Manifest | None:
    file = root / "manifest.json"
    if not file.is_file():
        problems.add("manifest.json", None, "file", "missing")
        return None
    try:
        return Manifest.model_validate(json.loads(file.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        problems.add("manifest.json", exc.lineno, "json", exc.msg)
    except ValidationError as exc:
        for err in exc.errors():
            problems.add("manifest.json", None, ".".join(map(str, err["loc"])), err["msg"].lower())
    return None


def _records(file: Path, name: str, model: type[BaseModel], problems: Problems) -> list[tuple[int, Any]]:
    out = []
    with file.open(encoding="utf-8-sig") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.add(name, n, "json", f"not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            try:
                out.append((n, model.model_validate(data)))
            except ValidationError as exc:
                for err in exc.errors():
                    problems.add(name, n, ".".join(map(str, err["loc"])) or "record", err["msg"].lower())
    return out


def _check_references(recs: dict[str, list[tuple[int, Any]]], problems: Problems, imported: bool) -> None:
    personas: dict[str, Any] = {}
    for n, p in recs["personas.jsonl"]:
        if p.persona_id in personas:
            problems.add("personas.jsonl", n, "persona_id", f"duplicate id {p.persona_id!r}")
        personas[p.persona_id] = p
        seen = set()
        for i, tr in enumerate(p.traits):
            if tr.trait_id in seen:
                problems.add("personas.jsonl", n, f"traits.{i}.trait_id", f"duplicate id {tr.trait_id!r}")
            seen.add(tr.trait_id)
            if tr.initial_state not in {s.state_id for s in tr.states}:
                problems.add("personas.jsonl", n, f"traits.{i}.initial_state", f"unknown state {tr.initial_state!r}")
    turns_by_persona = _check_dialogues(recs["dialogues.jsonl"], personas, problems)
    drifts = _check_schedules(recs["schedules.jsonl"], personas, turns_by_persona, problems)
    _check_qa(recs["qa.jsonl"], personas, turns_by_persona, drifts, problems, imported)


def _states(persona: Any, trait_id: str) -> set[str] | None:
    tr = next((t for t in persona.traits if t.trait_id == trait_id), None)
    return {s.state_id for s in tr.states} if tr else None


def _check_dialogues(rows: list[tuple[int, Any]], personas: dict[str, Any], problems: Problems) -> dict[str, int]:
    last: dict[str, int] = {}
    order: list[str] = []
    f = "dialogues.jsonl"
    for n, t in rows:
        p = personas.get(t.persona_id)
        if p is None:
            problems.add(f, n, "persona_id", f"unknown persona {t.persona_id!r}")
            continue
        if t.persona_id not in last:
            if t.persona_id in order:
                problems.add(f, n, "persona_id", "turns of a persona must be contiguous")
            order.append(t.persona_id)
            last[t.persona_id] = 0
        elif order[-1] != t.persona_id:
            problems.add(f, n, "persona_id", "turns of a persona must be contiguous")
        if t.turn != last[t.persona_id] + 1:
            problems.add(f, n, "turn", f"expected turn {last[t.persona_id] + 1}, got {t.turn} (duplicate or gap)")
        last[t.persona_id] = max(last[t.persona_id], t.turn)
        a = t.annotation
        if a and a.trait_id:
            states = _states(p, a.trait_id)
            if states is None:
                problems.add(f, n, "annotation.trait_id", f"unknown trait {a.trait_id!r}")
            elif a.state_id and a.state_id not in states:
                problems.add(f, n, "annotation.state_id", f"unknown state {a.state_id!r}")
        if a and a.entity_id and a.entity_id not in {e.entity_id for e in p.entities}:
            problems.add(f, n, "annotation.entity_id", f"unknown entity {a.entity_id!r}")
    return last


def _check_schedules(rows: list[tuple[int, Any]], personas: dict[str, Any], turns: dict[str, int],
                     problems: Problems) -> dict[str, set[str]]:
    f = "schedules.jsonl"
    drifts: dict[str, set[str]] = {}
    for n, s in rows:
        p = personas.get(s.persona_id)
        if p is None:
            problems.add(f, n, "persona_id", f"unknown persona {s.persona_id!r}")
            continue
        if s.persona_id in drifts:
            problems.add(f, n, "persona_id", f"duplicate schedule for {s.persona_id!r}")
        drifts[s.persona_id] = {d.drift_id for d in s.drifts}
        prev_end = 0
        for i, d in enumerate(s.drifts):
            states = _states(p, d.trait_id)
            if states is None:
                problems.add(f, n, f"drifts.{i}.trait_id", f"unknown trait {d.trait_id!r}")
            elif {d.from_state, d.to_state} - states:
                problems.add(f, n, f"drifts.{i}", "from_state/to_state not states of the trait")
            if not prev_end < d.onset_turn <= d.change_point_turn <= d.settle_turn:
                problems.add(f, n, f"drifts.{i}", "needs previous settle < onset <= change_point <= settle")
            prev_end = d.settle_turn
        expected = 1
        for i, ph in enumerate(s.phases):
            if ph.start_turn != expected or ph.end_turn < ph.start_turn:
                problems.add(f, n, f"phases.{i}", f"phases must tile the timeline: expected start {expected}")
            if ph.drift_id is not None and ph.drift_id not in drifts[s.persona_id]:
                problems.add(f, n, f"phases.{i}.drift_id", f"unknown drift {ph.drift_id!r}")
            expected = ph.end_turn + 1
        if s.phases and turns.get(s.persona_id) and expected - 1 != turns[s.persona_id]:
            problems.add(f, n, "phases", f"phases end at {expected - 1} but the dialogue has "
                                         f"{turns[s.persona_id]} turns")
    return drifts


def _check_qa(rows: list[tuple[int, Any]], personas: dict[str, Any], turns: dict[str, int],
              drifts: dict[str, set[str]], problems: Problems, imported: bool) -> None:
    f = "qa.jsonl"
    seen: set[str] = set()
    for n, q in rows:
        if q.qa_id in seen:
            problems.add(f, n, "qa_id", f"duplicate id {q.qa_id!r}")
        seen.add(q.qa_id)
        p = personas.get(q.persona_id)
        if p is None:
            problems.add(f, n, "persona_id", f"unknown persona {q.persona_id!r}")
            continue
        last = turns.get(q.persona_id, 0)
        if q.ask_turn > last:
            problems.add(f, n, "ask_turn", f"turn {q.ask_turn} is past the dialogue's last turn {last}")
        if q.trait_id is not None and _states(p, q.trait_id) is None:
            problems.add(f, n, "trait_id", f"unknown trait {q.trait_id!r}")
        if q.drift_id is not None and q.drift_id not in drifts.get(q.persona_id, set()):
            problems.add(f, n, "drift_id", f"unknown drift {q.drift_id!r}")
        for ev in q.evidence_turns:
            if not 1 <= ev <= last:
                problems.add(f, n, "evidence_turns", f"turn {ev} does not exist for {q.persona_id}")
            elif ev > q.ask_turn:
                problems.add(f, n, "evidence_turns", f"turn {ev} comes after the question (ask_turn {q.ask_turn})")
        _check_options(q, n, problems, imported)


def _check_options(q: Any, n: int, problems: Problems, imported: bool) -> None:
    f = "qa.jsonl"
    if not q.options:
        if not imported:
            problems.add(f, n, "options", "a generated suite needs options")
        return
    if len({o.strip().lower() for o in q.options}) != len(q.options):
        problems.add(f, n, "options", "duplicate options")
    for name in ("answer_index", "stale_index", "confounder_index"):
        idx = getattr(q, name)
        if idx is not None and not 0 <= idx < len(q.options):
            problems.add(f, n, name, f"{idx} is not an option index (0..{len(q.options) - 1})")
    if q.answer_index is None:
        problems.add(f, n, "answer_index", "required when options are given")
    elif 0 <= q.answer_index < len(q.options):
        if q.options[q.answer_index] != q.answer:
            problems.add(f, n, "answer", "does not equal options[answer_index]")
        if q.answer_index in (q.stale_index, q.confounder_index):
            problems.add(f, n, "answer_index", "the gold cannot be the stale or confounder option")


def require_valid(path: str | Path) -> None:
    """Raise ``InputError`` with the first problem if the suite is not valid."""
    problems = validate_suite(path)
    if problems:
        raise InputError(f"{problems[0]} ({len(problems)} problem(s); run dimobench validate)")
