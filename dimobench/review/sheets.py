"""Annotation sheets: blind CSV files a spreadsheet opens cleanly, and a strict reader for the filled-in ones.

Sheets are written with the ``csv`` module (fields holding commas, quotes or newlines are quoted) in UTF-8
with a BOM so Excel detects the encoding; they are read with or without the BOM. Labels are case-insensitive.
A blank label cell means "not labelled yet"; anything else outside the label set is an error.

A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is one a spreadsheet may run as a
formula (CSV injection: a question text ``=HYPERLINK(...)``): such cells, and cells starting with ``'``, are
written with a leading ``'`` as OWASP recommends, and the reader removes exactly that one ``'`` again, so a
sheet written and read back gives the same text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dimobench import strictjson
from dimobench.errors import InputError
from dimobench.suite.io import atomic_write_text, read_jsonl
from dimobench.suite.schema import QAItem, Turn

CRITERIA: tuple[str, ...] = ("supported", "temporally_valid", "implicit", "unambiguous", "type_faithful",
                             "confounder_robust")
FIELDS: tuple[str, ...] = (*CRITERIA, "verdict")
"""Every labelled column: the six criteria, then the overall verdict."""
CRITERION_LABELS: tuple[str, ...] = ("ACCEPT", "REJECT", "UNSCORED")
VERDICT_LABELS: tuple[str, ...] = ("ACCEPT", "REVISE", "REJECT")
LABEL_COLUMNS: tuple[str, ...] = (*FIELDS, "note")
INFO_COLUMNS: tuple[str, ...] = ("qa_id", "calibration", "stratum", "qa_type", "phase", "ask_turn",
                                 "question", "options", "gold", "stale_option", "confounder_option",
                                 "evidence", "context")
SHEET_COLUMNS: tuple[str, ...] = (*INFO_COLUMNS, *LABEL_COLUMNS, "sample_id")
CONTEXT_TURNS = 3
"""Turns shown as recent context: the ask turn and the ones just before it."""
MAX_CELL = 32000
"""Excel refuses cells over 32,767 characters; longer text is cut with a marker."""


FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection")."""
_ESCAPED = (*FORMULA_START, "'")
"""Cells written with a leading ``'``: the formula starts, and ``'`` itself so that reading back is exact."""


def escape_cell(text: str) -> str:
    """``text`` as written into a sheet: a leading ``'`` before a formula start (or before a ``'``)."""
    return "'" + text if text.startswith(_ESCAPED) else text


def unescape_cell(text: str) -> str:
    """The inverse of :func:`escape_cell`: a ``'`` is dropped only where the writer would have added it."""
    return text[1:] if text[:1] == "'" and text[1:2] != "" and text[1:2] in _ESCAPED else text


def labels_for(name: str) -> tuple[str, ...]:
    """The allowed labels of a labelled column."""
    return VERDICT_LABELS if name == "verdict" else CRITERION_LABELS


@dataclass
class Sheet:
    """One filled-in sheet: labels per item (``None`` = blank) and where each row starts in the file."""

    path: Path
    name: str
    sample_id: str | None
    labels: dict[str, dict[str, str | None]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    strata: dict[str, str] = field(default_factory=dict)
    calibration: set[str] = field(default_factory=set)
    notes: dict[str, str] = field(default_factory=dict)
    texts: dict[str, dict[str, str]] = field(default_factory=dict)
    """``qa_id -> {question, gold}`` as shown in the sheet (for adjudication)."""
    last_line: int = 1


def valid_annotator_name(name: str) -> bool:
    """An annotator name: letters, digits, ``-`` and ``_`` (so ``sheet_<name>.csv`` is a plain file name)."""
    return bool(name) and name.replace("-", "").replace("_", "").isalnum()


def annotator_names(count: int, names: Sequence[str] | None) -> list[str]:
    """``a, b, c, ...`` for ``count`` annotators, or the given names (letters, digits, ``-`` and ``_``)."""
    if names:
        out = [n.strip() for n in names if n.strip()]
        bad = [n for n in out if not valid_annotator_name(n)]
        if bad or len(set(out)) != len(out):
            from dimobench.errors import ConfigError

            raise ConfigError("--names must be distinct words of letters, digits, - or _ "
                              f"(got {', '.join(out)})")
    else:
        out = [chr(ord("a") + i) if i < 26 else f"a{i}" for i in range(count)]
    if len(out) < 2:
        from dimobench.errors import ConfigError

        raise ConfigError("review needs at least two annotators")
    return out


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 20] + " [... cut]"


def _turn_text(turn: Turn) -> str:
    who = turn.speaker or "user"
    text = f"t{turn.turn} ({turn.timestamp}) {who}: {turn.user}"
    return text + (f"\nassistant: {turn.assistant}" if turn.assistant else "")


def _option(item: QAItem, index: int | None) -> str:
    if index is None or not 0 <= index < len(item.options):
        return ""
    return f"{index + 1}. {item.options[index]}"


def sheet_row(item: QAItem, turns: dict[int, Turn], sample_id: str, stratum: str, calibration: bool
              ) -> dict[str, str]:
    """One blind sheet row: the question and its evidence, never a verifier verdict; label columns empty."""
    evidence = [turns[t] for t in item.evidence_turns if t in turns]
    first = max(1, item.ask_turn - CONTEXT_TURNS + 1)
    context = [turns[t] for t in range(first, item.ask_turn + 1) if t in turns]
    row = {
        "qa_id": item.qa_id, "calibration": "yes" if calibration else "", "stratum": stratum,
        "qa_type": item.qa_type or "", "phase": item.phase or "", "ask_turn": str(item.ask_turn),
        "question": item.question,
        "options": "\n".join(f"{i + 1}. {o}" for i, o in enumerate(item.options)),
        "gold": _option(item, item.answer_index) or item.answer,
        "stale_option": _option(item, item.stale_index),
        "confounder_option": _option(item, item.confounder_index),
        "evidence": _cut("\n\n".join(_turn_text(t) for t in evidence)),
        "context": _cut("\n\n".join(_turn_text(t) for t in context)),
        "sample_id": sample_id,
    }
    return {c: row.get(c, "") for c in SHEET_COLUMNS}


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, str]]) -> None:
    """Write a CSV atomically in UTF-8 with a BOM (Excel-friendly), quoting fields as needed.

    Cells a spreadsheet would run as formulas get a leading ``'`` (:func:`escape_cell`); a row's missing
    columns are blank.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writerow([escape_cell(c) for c in columns])
    writer.writerows([escape_cell(row.get(c, "")) for c in columns] for row in rows)
    atomic_write_text(path, "\ufeff" + buf.getvalue())


def read_csv(path: Path, required: Sequence[str]) -> tuple[list[tuple[int, dict[str, str]]], int, list[str]]:
    """Read a CSV (BOM or not): ``[(first line of the row, row)]``, the file's last line number, the header.

    Cells come back as they were before writing: :func:`unescape_cell` undoes the formula escaping.

    Raises:
        InputError: unreadable file, not UTF-8, malformed CSV or a missing required column.
    """
    try:
        text = strictjson.read_text(path)  # a folder, unreadable, bad bytes: one line naming file (and line)
    except InputError as exc:
        if not exc.message.startswith("not UTF-8"):
            raise
        raise InputError(f"{exc.message}; save the sheet as CSV UTF-8", path, exc.line) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = [unescape_cell(h.strip()) for h in next(reader, [])]
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"missing column{'s' if len(missing) > 1 else ''} (the header needs "
                             f"{', '.join(missing)})", path, 1, missing[0])
        start = reader.line_num + 1
        for cells in reader:
            if any(c.strip() for c in cells):
                rows.append((start, {h: (unescape_cell(cells[i]) if i < len(cells) else "")
                                     for i, h in enumerate(header)}))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"not a valid CSV ({exc})", path, reader.line_num) from None
    return rows, max(reader.line_num, 1), header


def normalise_label(raw: str, name: str, path: Path, line: int, allowed: Sequence[str] | None = None
                    ) -> str | None:
    """Upper-case a label cell; blank -> ``None``; a label outside ``allowed`` raises ``InputError``."""
    value = raw.strip().upper()
    if not value:
        return None
    allowed = allowed or labels_for(name)
    if value not in allowed:
        raise InputError(f"unknown label {raw.strip()!r} (use {', '.join(allowed)}, any case)", path, line,
                         name)
    return value


def sheet_name(path: Path) -> str:
    """Annotator name of a sheet: ``sheet_<name>.csv`` -> ``name``, otherwise the file stem."""
    stem = path.stem
    return stem[len("sheet_"):] if stem.startswith("sheet_") and len(stem) > 6 else stem


def read_sheet(path: Path) -> Sheet:
    """Read one filled-in sheet; the first problem raises ``InputError`` as ``file:line: field: message``."""
    rows, last, _ = read_csv(path, ("qa_id", "sample_id", *FIELDS))
    sheet = Sheet(path, sheet_name(path), None, last_line=last)
    for line, row in rows:
        qa_id = row["qa_id"].strip()
        if not qa_id:
            raise InputError("empty qa_id", path, line, "qa_id")
        if qa_id in sheet.lines:
            raise InputError(f"duplicate qa_id {qa_id} (first on line {sheet.lines[qa_id]})", path, line,
                             "qa_id")
        sid = row["sample_id"].strip()
        if sheet.sample_id is None:
            sheet.sample_id = sid
        elif sid != sheet.sample_id:
            raise InputError(f"sample {sid or '(blank)'} differs from sample {sheet.sample_id} of the rows "
                             "above (rows from two samples)", path, line, "sample_id")
        sheet.labels[qa_id] = {f: normalise_label(row[f], f, path, line) for f in FIELDS}
        sheet.lines[qa_id] = line
        sheet.strata[qa_id] = row.get("stratum", "").strip() or "all"
        if row.get("calibration", "").strip().lower() in ("yes", "true", "1", "x"):
            sheet.calibration.add(qa_id)
        sheet.texts[qa_id] = {"question": row.get("question", ""), "gold": row.get("gold", "")}
        if row.get("note", "").strip():
            sheet.notes[qa_id] = row["note"].strip()
    return sheet


def read_sample(path: Path) -> tuple[str, list[dict[str, object]]]:
    """Read ``sample.jsonl``: its sample id and its rows (``qa_id``, ``stratum``, ``calibration``)."""
    rows = [data for _, data in read_jsonl(path)]
    ids = {str(r.get("sample_id", "")) for r in rows}
    if len(ids) > 1:
        raise InputError("rows from more than one sample", path, None, "sample_id")
    return (ids.pop() if ids else ""), rows
