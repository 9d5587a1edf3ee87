"""LongMemEval (``longmemeval_{oracle,s_cleaned,m_cleaned}.json``) to the suite format.

- Every question comes with its own haystack. Questions whose haystacks are identical (same session ids,
  dates, roles and contents) share one persona; otherwise each question is its own persona (in the released
  files nearly every haystack is distinct). The persona id is the first such question's ``question_id``.
- Each haystack session is one suite session (numbered 1.. in haystack order, ``source_session_id`` kept);
  each message is one turn (``user`` = ``content``, ``speaker`` = ``role``, ``assistant`` = "") with
  ``source_id`` = ``"<session id>:<message index>"`` and the session's ``haystack_dates`` entry as timestamp.
- Each question is asked after the last turn; ``source_type`` = ``question_type``, ``question_date`` kept
  (ISO 8601), ``abstention`` marks ``_abs`` items; answers are free text.
- Evidence: the question's own ``has_answer`` turns. An answer session without any ``has_answer`` turn
  counts as a whole (listed in ``manifest.session_level_evidence``); an ``answer_session_ids`` entry that is
  not in the haystack is dropped and listed in ``manifest.dropped_evidence``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dimobench.importers.common import Imported, as_text, fail, need, parse_date, read_json
from dimobench.suite.schema import Persona, QAItem, Turn

NAME = "longmemeval"
LICENCE = "MIT (LongMemEval repository licence; check the dataset card of the file you use)"
CITATION = "xiaowu0162/LongMemEval, HF xiaowu0162/longmemeval-cleaned (Wu et al., ICLR 2025)"

NOTES = [
    "Questions with identical haystacks share one persona; otherwise one persona per question "
    "(persona id = the first question's `question_id`).",
    "One suite session per haystack session (`source_session_id` kept); one turn per message, "
    "`speaker` = role, `source_id` = `<session id>:<index>`; timestamps from `haystack_dates`.",
    "Questions are asked after the last turn; `source_type` = `question_type`; `question_date` kept; "
    "`abstention` marks `_abs` questions. Answers are free text (`options` empty).",
    "Evidence = turns flagged `has_answer`; an answer session with no flagged turn counts whole "
    "(`session_level_evidence`); answer session ids missing from the haystack are dropped.",
]


def load(path: Path) -> Imported:
    """Parse a LongMemEval JSON file (a list of question instances) into an :class:`Imported`."""
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise fail(path, "expected a non-empty JSON list of LongMemEval questions", "record")
    imp = Imported(NAME, LICENCE, CITATION, [path], notes=list(NOTES))
    # haystack hash -> (persona id, first turn of each session, the persona's question ids)
    personas: dict[str, tuple[str, list[int], list[str]]] = {}
    session_level: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, inst in enumerate(data):
        where = f"[{i}]"
        qid = as_text(need(inst, "question_id", (str, int), path, where))
        if qid in seen:
            raise fail(path, f"duplicate question_id {qid!r}", f"{where}.question_id")
        seen.add(qid)
        sids, dates, sessions = _haystack(inst, where, path)
        key = hashlib.sha256(json.dumps(
            [sids, dates, [[(m["role"], m["content"]) for m in s] for s in sessions]]).encode()).hexdigest()
        if key not in personas:
            qids: list[str] = []
            personas[key] = (qid, _add_persona(imp, qid, sids, dates, sessions, where, path), qids)
        pid, starts, qids = personas[key]
        qids.append(qid)
        evidence: set[int] = set()
        for k, sess in enumerate(sessions):
            evidence.update(starts[k] + j for j, m in enumerate(sess) if m.get("has_answer") is True)
        for sid in [as_text(s) for s in need(inst, "answer_session_ids", list, path, where)]:
            if sid not in sids:
                imp.dropped_evidence.append({"qa_id": qid, "source_id": sid,
                                             "reason": "answer session not in the haystack"})
                continue
            k = sids.index(sid)
            if not any(m.get("has_answer") is True for m in sessions[k]):
                evidence.update(range(starts[k], starts[k] + len(sessions[k])))
                session_level.append({"qa_id": qid, "source_session_id": sid})
        last = starts[-1] + len(sessions[-1]) - 1
        imp.qa.append(QAItem(
            qa_id=qid, persona_id=pid, ask_turn=last, qa_type=None, phase=None, trait_id=None, drift_id=None,
            question=as_text(need(inst, "question", str, path, where)), options=[], answer_index=None,
            answer=as_text(need(inst, "answer", (str, int, float), path, where)), stale_index=None,
            confounder_index=None, evidence_turns=sorted(evidence),
            source_type=as_text(need(inst, "question_type", str, path, where)),
            question_date=parse_date(need(inst, "question_date", str, path, where), path,
                                     f"{where}.question_date"),
            abstention=qid.endswith("_abs")))
    by_id = {p.persona_id: p for p in imp.personas}
    for pid, _, qids in personas.values():
        by_id[pid].profile["question_ids"] = qids
    imp.extra["session_level_evidence"] = session_level
    return imp


def _haystack(inst: dict[str, Any], where: str, path: Path) -> tuple[list[str], list[str], list[list[dict]]]:
    sids = [as_text(s) for s in need(inst, "haystack_session_ids", list, path, where)]
    dates = need(inst, "haystack_dates", list, path, where)
    sessions = need(inst, "haystack_sessions", list, path, where)
    if not (len(sids) == len(dates) == len(sessions)) or not sessions:
        raise fail(path, f"haystack_session_ids ({len(sids)}), haystack_dates ({len(dates)}) and "
                         f"haystack_sessions ({len(sessions)}) must be non-empty and of equal length", where)
    for k, sess in enumerate(sessions):
        sw = f"{where}.haystack_sessions[{k}]"
        if not isinstance(sess, list) or not sess:
            raise fail(path, "expected a non-empty list of messages", sw)
        for j, m in enumerate(sess):
            need(m, "role", str, path, f"{sw}[{j}]")
            need(m, "content", str, path, f"{sw}[{j}]")
    return sids, dates, sessions


def _add_persona(imp: Imported, pid: str, sids: list[str], dates: list[Any], sessions: list[list[dict]],
                 where: str, path: Path) -> list[int]:
    """Append the persona and its turns; return the first turn number of each session."""
    starts: list[int] = []
    turn = 1
    for k, (sid, date, sess) in enumerate(zip(sids, dates, sessions, strict=True)):
        stamp = parse_date(date, path, f"{where}.haystack_dates[{k}]")
        starts.append(turn)
        for j, m in enumerate(sess):
            imp.turns.append(Turn(persona_id=pid, turn=turn, session=k + 1, timestamp=stamp,
                                  user=m["content"], assistant="", speaker=m["role"], source_id=f"{sid}:{j}",
                                  source_session_id=sid))
            turn += 1
    imp.personas.append(Persona(persona_id=pid, name=f"LongMemEval haystack of {pid}",
                                profile={"source": NAME, "question_ids": [], "sessions": len(sessions)},
                                traits=[], entities=[]))
    return starts
