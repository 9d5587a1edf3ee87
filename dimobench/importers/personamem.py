"""PersonaMem v1 (``questions_{32k,128k,1M}.csv`` + ``shared_contexts_*.jsonl``) to the suite format.

- Each shared context that at least one question uses is one persona (id = ``shared_context_id``); contexts
  no question uses are listed in ``manifest.unused_contexts``. Every message, the leading ``system`` persona
  message included, is one turn (``speaker`` = ``role``, ``source_id`` = ``"<context id>:<index>"``), so the
  model sees what PersonaMem gives it. A ``system`` message after the first starts a new session.
  PersonaMem has no dates: ``timestamp`` is "".
- A question is asked after ``end_index_in_shared_context`` messages (loaders use ``context[:end_index]``),
  so ``ask_turn`` = ``end_index``. ``options`` are ``all_options`` without their ``(a)`` labels and
  ``answer_index`` comes from ``correct_answer`` (``(b)`` -> 1). PersonaMem v1 has no evidence turns.
- ``source_type`` is the canonical ``question_type`` (:data:`ALIASES` maps the spellings of the 32k, 128k
  and 1M files); the raw spelling is kept in ``source_question_type``. Unknown spellings are kept as given
  and listed in ``manifest.unknown_question_types``.
"""

from __future__ import annotations

import ast
import csv
import io
import re
from pathlib import Path
from typing import Any

from dimobench import strictjson
from dimobench.errors import InputError
from dimobench.importers.common import Imported, fail, read_text
from dimobench.suite.schema import Persona, QAItem, Turn

NAME = "personamem"
LICENCE = "see the PersonaMem dataset card (bowen-upenn/PersonaMem on Hugging Face); not verified here"
CITATION = "bowen-upenn/PersonaMem v1 (Jiang et al., COLM 2025)"

TYPES = ("recall_user_shared_facts", "suggest_new_ideas", "acknowledge_latest_user_preferences",
         "track_full_preference_evolution", "revisit_reasons_behind_preference_updates",
         "provide_preference_aligned_recommendations", "generalize_to_new_scenarios")
ALIASES = {
    "recalling_facts_mentioned_by_the_user": "recall_user_shared_facts",
    "recall_facts_mentioned_by_the_user": "recall_user_shared_facts",
    "recalling_user_shared_facts": "recall_user_shared_facts",
    "suggesting_new_ideas": "suggest_new_ideas",
    "acknowledge_latest_preferences": "acknowledge_latest_user_preferences",
    "acknowledging_latest_user_preferences": "acknowledge_latest_user_preferences",
    "track_full_preference_updates": "track_full_preference_evolution",
    "tracking_full_preference_evolution": "track_full_preference_evolution",
    "revisiting_reasons_behind_preference_updates": "revisit_reasons_behind_preference_updates",
    "providing_preference_aligned_recommendations": "provide_preference_aligned_recommendations",
    "generalizing_to_new_scenarios": "generalize_to_new_scenarios",
    "generalizing_past_reasons_in_memory_to_new_scenarios": "generalize_to_new_scenarios",
}
"""Other spellings of the seven ``question_type`` values -> the canonical one."""

REQUIRED = ("question_id", "question_type", "correct_answer", "all_options", "shared_context_id",
            "end_index_in_shared_context")
_LABEL = re.compile(r"^\s*\(?([a-zA-Z])\)\s*")
_COUNT = re.compile(r"[0-9]{1,9}(\.0*)?")
NOTES = [
    "One persona per shared context used by a question; every message (the system persona included) is one "
    "turn; no dates in the source, so `timestamp` is empty.",
    "`ask_turn` = `end_index_in_shared_context`; options without their `(a)` labels, `answer_index` from "
    "`correct_answer`; no evidence turns in PersonaMem v1.",
    "`source_type` = canonical question type (alias table), raw spelling in `source_question_type`.",
]


def canonical_type(raw: str) -> str:
    """The canonical PersonaMem question type of any known spelling (unknown ones are returned normalised)."""
    key = re.sub(r"[\s\-]+", "_", raw.strip().lower())
    return ALIASES.get(key, key)


def default_contexts(questions: Path) -> Path:
    """``questions_32k.csv`` -> ``shared_contexts_32k.jsonl`` beside it."""
    suffix = questions.stem.removeprefix("questions")
    return questions.with_name(f"shared_contexts{suffix}.jsonl")


def load(path: Path, contexts: Path | None = None) -> Imported:
    """Parse the questions CSV at ``path`` and its shared-context JSONL into an :class:`Imported`."""
    ctx_path = contexts or default_contexts(path)
    if not ctx_path.exists():
        raise fail(ctx_path, "no such file (the shared-context JSONL; pass --contexts)")
    rows = _rows(path)
    ctxs = _contexts(ctx_path)
    imp = Imported(NAME, LICENCE, CITATION, [path, ctx_path], notes=list(NOTES))
    used: dict[str, list[str]] = {}
    for _, row in rows:
        used.setdefault(row["shared_context_id"], [])
        if row.get("persona_id") and row["persona_id"] not in used[row["shared_context_id"]]:
            used[row["shared_context_id"]].append(row["persona_id"])
    for line, row in rows:
        if row["shared_context_id"] not in ctxs:
            raise fail(path, f"unknown shared context {row['shared_context_id']!r} (not in {ctx_path.name})",
                       "shared_context_id", line)
    for cid, messages in ctxs.items():
        if cid in used:
            _persona(imp, cid, messages, used[cid])
    imp.extra["unused_contexts"] = [cid for cid in ctxs if cid not in used]
    unknown: set[str] = set()
    seen: set[str] = set()
    for line, row in rows:
        _question(imp, row, line, path, len(ctxs[row["shared_context_id"]]), seen, unknown)
    imp.extra["unknown_question_types"] = sorted(unknown)
    return imp


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    columns = set(reader.fieldnames or [])
    missing = [c for c in REQUIRED if c not in columns]
    if "user_question_or_message" not in columns and "question" not in columns:
        missing.append("user_question_or_message")
    if missing:
        raise fail(path, f"missing column(s) {', '.join(missing)}", "header", 1)
    rows = []
    try:
        for row in reader:
            rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items() if k is not None}))
    except csv.Error as exc:
        raise fail(path, f"not valid CSV ({exc})", line=reader.line_num) from None
    if not rows:
        raise fail(path, "no questions", line=1)
    return rows


def _contexts(path: Path) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for n, obj in strictjson.jsonl(path, objects=False):  # split on "\n" only: U+2028 may sit in a message
        if isinstance(obj, InputError):
            raise obj
        if not isinstance(obj, dict) or not obj:
            raise fail(path, "expected an object {shared_context_id: [messages]}", line=n)
        for cid, messages in obj.items():
            if cid in out:
                raise fail(path, f"duplicate shared_context_id {cid!r}", cid, n)
            if not isinstance(messages, list) or not messages:
                raise fail(path, "expected a non-empty list of messages", cid, n)
            for j, m in enumerate(messages):
                if not isinstance(m, dict) or not isinstance(m.get("role"), str) or "content" not in m:
                    raise fail(path, "each message needs a string role and a content", f"{cid}[{j}]", n)
            out[cid] = [{"role": m["role"], "content": str(m["content"])} for m in messages]
    return out


def _persona(imp: Imported, cid: str, messages: list[dict[str, str]], persona_ids: list[str]) -> None:
    session = 1
    for j, m in enumerate(messages):
        if j > 0 and m["role"] == "system":
            session += 1
        imp.turns.append(Turn(persona_id=cid, turn=j + 1, session=session, timestamp="", user=m["content"],
                              assistant="", speaker=m["role"], source_id=f"{cid}:{j}"))
    one = len(persona_ids) == 1
    name = f"PersonaMem persona {persona_ids[0]}" if one else f"PersonaMem context {cid[:12]}"
    imp.personas.append(Persona(persona_id=cid, name=name, traits=[], entities=[],
                                profile={"source": NAME, "shared_context_id": cid, "persona_ids": persona_ids,
                                         "sessions": session}))


def _options(raw: str, path: Path, line: int) -> tuple[list[str], list[str]]:
    value: Any = None
    try:
        value = strictjson.loads(raw)
    except InputError:
        try:  # the 128k and 1M files write Python list reprs (single quotes)
            value = ast.literal_eval(raw)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
    if not isinstance(value, list) or not value or not all(isinstance(o, str) for o in value):
        raise fail(path, "expected a list of option strings", "all_options", line)
    labels = [m.group(1).lower() if (m := _LABEL.match(o)) else "" for o in value]
    return [_LABEL.sub("", o, count=1).strip() for o in value], labels


def _question(imp: Imported, row: dict[str, str], line: int, path: Path, n_messages: int, seen: set[str],
              unknown: set[str]) -> None:
    qid = row["question_id"]
    if not qid or qid in seen:
        raise fail(path, f"empty or duplicate question_id {qid!r}", "question_id", line)
    seen.add(qid)
    raw_end = row["end_index_in_shared_context"]
    # a whole number, "12" or "12.0" as pandas writes it; never "inf", "1e3" or "3.7" read as some count
    end = int(raw_end.split(".")[0]) if _COUNT.fullmatch(raw_end) else -1
    if not 1 <= end <= n_messages:
        raise fail(path, f"{row['end_index_in_shared_context']!r} is not a message count in 1..{n_messages}",
                   "end_index_in_shared_context", line)
    options, labels = _options(row["all_options"], path, line)
    m = _LABEL.match(row["correct_answer"]) or re.fullmatch(r"\s*([a-zA-Z])\s*", row["correct_answer"])
    letter = m.group(1).lower() if m else ""
    idx = labels.index(letter) if letter in labels else (ord(letter) - 97 if letter else -1)
    if not 0 <= idx < len(options):
        raise fail(path, f"{row['correct_answer']!r} names none of the {len(options)} options",
                   "correct_answer", line)
    qtype = canonical_type(row["question_type"])
    if qtype not in TYPES:
        unknown.add(row["question_type"])
    kept = ("topic", "distance_to_ref_in_blocks", "distance_to_ref_in_tokens")
    extra = {k: row[k] for k in kept if row.get(k)}
    imp.qa.append(QAItem(
        qa_id=qid, persona_id=row["shared_context_id"], ask_turn=end, qa_type=None, phase=None, trait_id=None,
        drift_id=None, question=row.get("user_question_or_message") or row.get("question", ""),
        options=options,
        answer_index=idx, answer=options[idx], stale_index=None, confounder_index=None, evidence_turns=[],
        source_type=qtype, source_question_type=row["question_type"], **extra))
