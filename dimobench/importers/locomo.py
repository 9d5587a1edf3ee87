"""LoCoMo (snap-research/LoCoMo ``data/locomo10.json``) to the suite format.

- Each sample (``conv-26`` ...) is one persona named after its two speakers; each utterance is one turn
  (``user`` = ``text``, ``speaker``, ``assistant`` = ""), with ``source_id`` = its ``dia_id``. Image turns
  keep ``blip_caption`` as ``image_caption`` (not shown to systems, which see ``user`` only).
- Sessions are the ``session_N`` lists in numeric order (not the ``*_date_time`` keys: conv-26 has 35 dates
  but 19 sessions); every turn of a session gets that session's date as an ISO 8601 timestamp.
- Every QA item is kept and asked after the last turn. ``source_type`` is the category name (1 multi-hop,
  2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and ``source_category`` the number. Answers are free
  text (``options`` empty, ``answer_index`` null); int answers become strings. Category 5 has no ``answer``:
  the gold is "not mentioned in the conversation" (the two items that do carry an ``answer`` keep it) and
  ``adversarial_answer`` (the trap) is kept in ``distractors``.
- Evidence strings are split on ``;``, ``,`` and whitespace (``"D8:6; D9:17"``, ``"D9:1 D4:4"``);
  ``"D:11:26"`` is read as ``D11:26`` and ``"D30:05"`` as ``D30:5`` (listed in
  ``manifest.repaired_evidence``).
  Ids that resolve to no turn (malformed like ``"D"``, or absent) are dropped and listed in
  ``manifest.dropped_evidence`` with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dimobench.importers.common import Imported, as_text, fail, need, parse_date, read_json, unique_records
from dimobench.suite.schema import Persona, QAItem, Turn

NAME = "locomo"
LICENCE = "CC BY-NC 4.0"
CITATION = "snap-research/LoCoMo, data/locomo10.json (Maharana et al., 2024)"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL_GOLD = "not mentioned in the conversation"

_SESSION = re.compile(r"session_(\d+)")
_LOOSE_ID = re.compile(r"D:?(\d+):(\d+)")
_SPLIT = re.compile(r"[;,\s]+")

NOTES = [
    "One persona per LoCoMo sample; one turn per utterance (`source_id` = `dia_id`); sessions are the "
    "`session_N` lists in numeric order, each turn timestamped with its session's date.",
    "Every question is asked after the last turn (`ask_turn` = last turn).",
    "`source_type`: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial "
    "(number in `source_category`).",
    f"Category 5 gold is \"{ADVERSARIAL_GOLD}\" unless the item has its own `answer`; the "
    "`adversarial_answer` trap is kept in `distractors`. Answers are free text (`options` empty).",
    "Evidence strings are split on `;`, `,` and whitespace; `D:11:26` and `D30:05` are read as `D11:26` "
    "and `D30:5` (listed in `repaired_evidence`); ids that resolve to no turn are dropped (listed below).",
]


def load(path: Path) -> Imported:
    """Parse a LoCoMo JSON file (a list of samples, or one sample) into an :class:`Imported`."""
    data = read_json(path)
    if isinstance(data, dict) and "conversation" in data:
        data = [data]
    if not isinstance(data, list) or not data:
        raise fail(path, "expected a non-empty JSON list of LoCoMo samples", "record")
    imp = Imported(NAME, LICENCE, CITATION, [path], notes=list(NOTES))
    repaired: list[dict[str, str]] = []
    for i, pid, sample in unique_records(data, "sample_id", path):
        ids = _sample(sample, i, pid, path, imp)
        _qa(sample, i, pid, ids, path, imp, repaired)
    imp.extra["repaired_evidence"] = repaired
    return imp


def _sample(sample: dict[str, Any], i: int, pid: str, path: Path, imp: Imported) -> dict[str, int]:
    where = f"[{i}].conversation"
    conv = need(sample, "conversation", dict, path, f"[{i}]")
    a = as_text(need(conv, "speaker_a", str, path, where))
    b = as_text(need(conv, "speaker_b", str, path, where))
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    if not numbers:
        raise fail(path, "no session_N lists", where)
    ids: dict[str, int] = {}
    n = len(imp.turns)
    for s in numbers:
        key = f"session_{s}"
        turns = need(conv, key, list, path, where)
        stamp = parse_date(need(conv, f"{key}_date_time", str, path, where), path, f"{where}.{key}_date_time")
        for j, t in enumerate(turns):
            tw = f"{where}.{key}[{j}]"
            dia = as_text(need(t, "dia_id", str, path, tw))
            extra: dict[str, Any] = {"source_id": dia}
            if t.get("blip_caption"):
                extra["image_caption"] = str(t["blip_caption"])
            turn = len(imp.turns) - n + 1
            if dia in ids:
                raise fail(path, f"duplicate dia_id {dia!r}", f"{tw}.dia_id")
            ids[dia] = turn
            imp.turns.append(Turn(persona_id=pid, turn=turn, session=s, timestamp=stamp,
                                  user=need(t, "text", str, path, tw), assistant="",
                                  speaker=as_text(need(t, "speaker", str, path, tw)), **extra))
    if not ids:
        raise fail(path, "the conversation has no turns", where)
    profile = {"source": NAME, "sample_id": pid, "speaker_a": a, "speaker_b": b, "sessions": len(numbers)}
    imp.personas.append(Persona(persona_id=pid, name=f"{a} and {b}", profile=profile, traits=[], entities=[]))
    return ids


def split_evidence(items: list[Any]) -> list[str]:
    """The individual evidence tokens of a LoCoMo ``evidence`` list (``"D8:6; D9:17"`` gives two)."""
    out: list[str] = []
    for item in items:
        out.extend(tok for tok in _SPLIT.split(as_text(item)) if tok)
    return out


def _qa(sample: dict[str, Any], i: int, pid: str, ids: dict[str, int], path: Path, imp: Imported,
        repaired: list[dict[str, str]]) -> None:
    items = need(sample, "qa", list, path, f"[{i}]")
    last = len(ids)
    for j, q in enumerate(items):
        where = f"[{i}].qa[{j}]"
        qa_id = f"{pid}-q{j + 1:04d}"
        cat = need(q, "category", int, path, where)
        evidence = need(q, "evidence", list, path, where) if "evidence" in q else []
        turns: list[int] = []
        for tok in split_evidence(evidence):
            m = _LOOSE_ID.fullmatch(tok)
            ref = f"D{int(m.group(1))}:{int(m.group(2))}" if m else tok
            if ref in ids:
                turns.append(ids[ref])
                if ref != tok:
                    repaired.append({"qa_id": qa_id, "source_id": tok, "as": ref})
            else:
                reason = "no turn with this dia_id" if m else "malformed id, not D<session>:<turn>"
                imp.dropped_evidence.append({"qa_id": qa_id, "source_id": tok, "reason": reason})
        if cat == 5 and q.get("answer") is None:
            answer = ADVERSARIAL_GOLD
        else:
            answer = as_text(need(q, "answer", (str, int, float), path, where))
        extra: dict[str, Any] = {"source_category": cat, "source_evidence": [as_text(e) for e in evidence]}
        if "adversarial_answer" in q:
            extra["distractors"] = [as_text(q["adversarial_answer"])]
        imp.qa.append(QAItem(
            qa_id=qa_id, persona_id=pid, ask_turn=last, qa_type=None, phase=None, trait_id=None,
            drift_id=None,
            question=need(q, "question", str, path, where), options=[], answer_index=None, answer=answer,
            stale_index=None, confounder_index=None, evidence_turns=sorted(set(turns)),
            source_type=CATEGORIES.get(cat, f"category-{cat}"), **extra))
