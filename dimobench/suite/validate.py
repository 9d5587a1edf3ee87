"""``dimobench validate``: check a suite without running anything and list every problem.

Each problem is one line ``file:line: field: message``. Checks: JSON on every line, record types, unique
ids, references (persona, trait, state, entity, drift), dialogue order (persona, then turns 1..N), phases
tiling each timeline, drifts inside it and in order, QA answers consistent with options (two or more, indices
in range), evidence turns that exist and precede the question, verdicts of known questions, and the manifest:
every listed file present with its sha256, every record file listed, counts equal to the records'.

Reading is strict (:mod:`dimobench.strictjson`): a byte that is not UTF-8, ``NaN``, deep nesting, a huge
integer or ``"5"`` where an integer belongs is a problem on its line, never a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from dimobench import strictjson
from dimobench.errors import InputError, one_line
from dimobench.suite.io import read_json, sha256_file
from dimobench.suite.load import SUITE_FILES, counts
from dimobench.suite.schema import RECORD_FILES, Manifest

_SHA256 = re.compile(r"[0-9a-f]{64}")
_COUNTED = ("personas", "turns", "qa", "by_qa_type", "by_phase", "turn_kinds")


class Problems(list[str]):
    """The validator's findings, one ``file:line: field: message`` string each."""

    def add(self, file: str, line: int | None, fld: str, msg: str) -> None:
        """Record one problem at ``line`` of ``file`` (None: the whole file) in field ``fld``."""
        self.append(one_line(f"{file}:{line if line is not None else '-'}: {fld}: {msg}"))

    def add_error(self, file: str, fld: str, err: InputError) -> None:
        """Record a reader's ``InputError`` under ``file``; ``fld`` names what failed unless the error does."""
        encoding = err.message.startswith("not UTF-8")
        self.add(file, err.line, err.field or ("encoding" if encoding else fld), err.message)


def validate_suite(path: str | Path) -> list[str]:
    """Return every problem found in the suite at ``path`` (empty: the suite is valid).

    Each problem is ``file:line: field: message`` (``-`` for the line when it concerns the whole file).
    """
    root = Path(path)
    problems = Problems()
    if not root.is_dir():
        problems.add("manifest.json", None, "suite", f"{root} is not a directory (give the suite's folder)"
                     if root.exists() else f"no such directory {root}")
        return problems
    manifest = _manifest(root, problems)
    records: dict[str, list[tuple[int, Any]]] = {}
    before = len(problems)
    for name, model in RECORD_FILES.items():
        file = root / name
        if not file.exists():
            if name in SUITE_FILES:
                problems.add(name, None, "file", "missing")
            continue
        records[name] = _records(file, name, model, problems)
    every_line_loaded = len(problems) == before
    if all(n in records for n in SUITE_FILES):
        _check_references(records, problems, imported=bool(manifest and manifest.status == "imported"))
        if manifest and every_line_loaded:  # a line that did not load would only repeat as a count
            _check_counts(manifest, records, problems)
    if "verdicts.jsonl" in records and "qa.jsonl" in records:
        _check_verdicts(records, problems)
    if manifest and manifest.status == "incomplete":
        problems.add("manifest.json", None, "status", "incomplete: a stage it was asked for (verification or the "
                     "audit) did not finish; rerun the command with --resume")
    if manifest:
        _check_files(root, manifest, problems)
    return problems


def _manifest(root: Path, problems: Problems) -> Manifest | None:
    file = root / "manifest.json"
    if not file.exists():
        problems.add("manifest.json", None, "file", "missing")
        return None
    try:
        return Manifest.model_validate(read_json(file))
    except InputError as exc:
        problems.add_error("manifest.json", "json", exc)
    except ValidationError as exc:
        for err in exc.errors():
            problems.add("manifest.json", None, ".".join(map(str, err["loc"])) or "manifest", err["msg"].lower())
    return None


def _check_files(root: Path, manifest: Manifest, problems: Problems) -> None:
    """Every file the manifest lists exists with its sha256; every record file present is listed."""
    for name, digest in manifest.files.items():
        fld = f"files.{name}"
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
            problems.add("manifest.json", None, fld, "not a file name inside the suite")
            continue
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            problems.add("manifest.json", None, fld, "not a sha256 (64 lower-case hex digits)")
            continue
        file = root / name
        if not file.exists():
            problems.add("manifest.json", None, fld, f"lists {name} but the file is missing")
        elif not file.is_file():
            problems.add("manifest.json", None, fld, f"lists {name} but it is not a file")
        else:
            try:
                ok = sha256_file(file) == digest
            except OSError as exc:
                problems.add(name, None, "file", f"cannot read the file ({exc.strerror or exc})")
                continue
            if not ok:
                problems.add("manifest.json", None, fld, "sha256 does not match the file (edited after writing?)")
    for name in RECORD_FILES:
        if name not in manifest.files and (root / name).is_file():
            problems.add("manifest.json", None, "files", f"{name} is not listed (its sha256 is unknown)")


def _check_counts(manifest: Manifest, recs: dict[str, list[tuple[int, Any]]], problems: Problems) -> None:
    """The manifest's counts equal the records' (only the keys the manifest has)."""
    actual = counts([p for _, p in recs["personas.jsonl"]], [t for _, t in recs["dialogues.jsonl"]],
                    [q for _, q in recs["qa.jsonl"]])
    for key in _COUNTED:
        if key in manifest.counts and manifest.counts[key] != actual[key]:
            problems.add("manifest.json", None, f"counts.{key}",
                         f"says {manifest.counts[key]!r} but the files have {actual[key]!r}")


def _check_verdicts(recs: dict[str, list[tuple[int, Any]]], problems: Problems) -> None:
    known = {q.qa_id for _, q in recs["qa.jsonl"]}
    seen: set[str] = set()
    for n, v in recs["verdicts.jsonl"]:
        if v.qa_id in seen:
            problems.add("verdicts.jsonl", n, "qa_id", f"duplicate verdict for {v.qa_id!r}")
        elif v.qa_id not in known:
            problems.add("verdicts.jsonl", n, "qa_id", f"unknown question {v.qa_id!r}")
        seen.add(v.qa_id)


def _records(file: Path, name: str, model: type[BaseModel], problems: Problems) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    try:
        lines = list(strictjson.jsonl(file, objects=False))
    except InputError as exc:  # the file cannot be read at all
        problems.add(name, None, "file", exc.message)
        return out
    for n, data in lines:
        if isinstance(data, InputError):
            problems.add_error(name, "json", data)
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
        if q.answer_index is not None:
            problems.add(f, n, "answer_index", f"{q.answer_index} given but the question has no options")
        return
    if len(q.options) < 2:
        problems.add(f, n, "options", "a multiple-choice question needs at least 2 options")
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
