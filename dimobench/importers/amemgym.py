"""AMemGym (``data/v1.base/data.json``) to the suite format.

- Each user is one persona (id = ``id``; profile keeps ``user_profile``'s ``uuid`` and ``formatted_str``,
  ``start_time`` and the ``state_schema`` variable names). Sessions are numbered 1.. across ``periods``; each
  message of a session is one turn (``speaker`` = ``role``,
  ``source_id`` = ``"p<period>.s<session>:<index>"``, timestamp = ``session_time``). A session without
  ``messages`` contributes its ``query`` as one user turn.
- AMemGym asks every question after every period (its results are a ``[period][question]`` matrix), so each
  (period, question) pair is one QA item asked after the period's last turn. ``options`` are the
  ``answer_choices`` answers; ``answer_index`` is the choice whose ``state`` equals the period's ``state`` for
  ``required_info`` (as AMemGym's own scorer picks it); ``stale_index`` is the choice that held in the
  previous period when the state changed. AMemGym has no question category: ``source_type`` is null.
- Evidence (derived, AMemGym has none): for each required variable, the user turns of the latest session up
  to that period whose ``exposed_states`` name it. Questions of a period with no turn before them are listed
  in ``manifest.skipped_qa``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dimobench.importers.common import Imported, as_text, fail, need, parse_date, read_json, unique_records
from dimobench.suite.schema import Persona, QAItem, Turn

NAME = "amemgym"
LICENCE = "MIT (AMemGym repository licence; check the dataset card of the file you use)"
CITATION = "AGI-Eval-Official/amemgym, data/v1.base/data.json (HF AGI-Eval/AMemGym)"

NOTES = [
    "One persona per user; sessions numbered across periods; one turn per message, timestamps from "
    "`session_time`.",
    "Each question is asked after every period (one item per period and question, `period` kept); the gold "
    "option is the choice whose `state` equals the period state of `required_info`; `stale_index` is the "
    "previous period's choice when it changed. `source_type` is null (AMemGym has no categories).",
    "Evidence is derived: user turns of the latest session exposing each required variable.",
]


def load(path: Path) -> Imported:
    """Parse an AMemGym ``data.json`` (a list of users) into an :class:`Imported`."""
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise fail(path, "expected a non-empty JSON list of AMemGym users", "record")
    imp = Imported(NAME, LICENCE, CITATION, [path], notes=list(NOTES))
    imp.extra["skipped_qa"] = []
    for i, uid, user in unique_records(data, "id", path):
        _user(imp, user, uid, f"[{i}]", path)
    return imp


def _exposed(session: dict[str, Any]) -> set[str]:
    value = session.get("exposed_states") or {}
    return {str(k) for k in value} if isinstance(value, (dict, list)) else set()


def _user(imp: Imported, user: dict[str, Any], uid: str, where: str, path: Path) -> None:
    periods = need(user, "periods", list, path, where)
    raw_profile = user.get("user_profile")
    profile_src: dict[str, Any] = raw_profile if isinstance(raw_profile, dict) else {}
    schema = user.get("state_schema")
    # per period: last turn so far; per session: (period, exposed variables, its user turns)
    period_end: list[int] = []
    sessions: list[tuple[int, set[str], list[int]]] = []
    turn = 0
    for p, period in enumerate(periods):
        pw = f"{where}.periods[{p}]"
        for s, sess in enumerate(need(period, "sessions", list, path, pw)):
            sw = f"{pw}.sessions[{s}]"
            stamp = parse_date(need(sess, "session_time", str, path, sw), path, f"{sw}.session_time")
            messages = sess.get("messages") or [
                {"role": "user", "content": need(sess, "query", str, path, sw), "_query": True}]
            if not isinstance(messages, list):
                raise fail(path, f"expected list, got {type(messages).__name__}", f"{sw}.messages")
            user_turns = []
            for j, m in enumerate(messages):
                role = as_text(need(m, "role", str, path, f"{sw}.messages[{j}]"))
                content = as_text(need(m, "content", str, path, f"{sw}.messages[{j}]"))
                turn += 1
                imp.turns.append(Turn(persona_id=uid, turn=turn, session=len(sessions) + 1, timestamp=stamp,
                                      user=content, assistant="", speaker=role,
                                      source_id=f"p{p}.s{s}:{'query' if m.get('_query') else j}"))
                if role == "user":
                    user_turns.append(turn)
            sessions.append((p, _exposed(sess), user_turns))
        need(period, "state", dict, path, pw)
        period_end.append(turn)
    imp.personas.append(Persona(
        persona_id=uid, name=as_text(profile_src.get("name")) or f"AMemGym user {uid}", traits=[],
        entities=[],
        profile={"source": NAME, "id": uid, "uuid": profile_src.get("uuid"),
                 "formatted_str": profile_src.get("formatted_str"), "start_time": user.get("start_time"),
                 "state_variables": sorted(schema) if isinstance(schema, dict) else None,
                 "periods": len(periods), "sessions": len(sessions)}))
    qas = need(user, "qas", list, path, where)
    for p, _period in enumerate(periods):
        for q, qa in enumerate(qas):
            _question(imp, uid, p, periods, q, qa, period_end[p], sessions, f"{where}.qas[{q}]", path)


def _gold(choices: list[dict[str, Any]], state: dict[str, Any], info: list[str], path: Path,
          where: str) -> int | None:
    missing = [v for v in info if v not in state]
    if missing:
        raise fail(path, f"required_info {missing} not in the period state", where)
    golden = [state[v] for v in info]
    return next((c for c, ch in enumerate(choices) if ch["state"] == golden), None)


def _question(imp: Imported, uid: str, p: int, periods: list[dict[str, Any]], q: int, qa: dict[str, Any],
              last: int, sessions: list[tuple[int, set[str], list[int]]], where: str, path: Path) -> None:
    qa_id = f"{uid}-p{p:02d}-q{q:03d}"
    info = [as_text(v) for v in need(qa, "required_info", list, path, where)]
    choices = need(qa, "answer_choices", list, path, where)
    for c, ch in enumerate(choices):
        need(ch, "state", list, path, f"{where}.answer_choices[{c}]")
        need(ch, "answer", str, path, f"{where}.answer_choices[{c}]")
    if not choices:
        raise fail(path, "no answer choices", f"{where}.answer_choices")
    gold = _gold(choices, periods[p]["state"], info, path, f"{where} (period {p})")
    if gold is None:
        raise fail(path, f"no answer choice matches the state of periods[{p}]", f"{where}.answer_choices")
    stale = _gold(choices, periods[p - 1]["state"], info, path, f"{where} (period {p - 1})") if p else None
    if last < 1:
        imp.extra["skipped_qa"].append({"qa_id": qa_id, "reason": "no turn before this period's questions"})
        return
    evidence: set[int] = set()
    for var in info:
        latest = [turns for (sp, exposed, turns) in sessions if sp <= p and var in exposed]
        if latest:
            evidence.update(latest[-1])
    options = [ch["answer"] for ch in choices]
    imp.qa.append(QAItem(
        qa_id=qa_id, persona_id=uid, ask_turn=last, qa_type=None, phase=None, trait_id=None, drift_id=None,
        question=as_text(need(qa, "query", str, path, where)), options=options, answer_index=gold,
        answer=options[gold], stale_index=stale if stale not in (None, gold) else None, confounder_index=None,
        evidence_turns=sorted(evidence), source_type=None, period=p, source_qa_index=q, required_info=info,
        choice_types=[as_text(ch.get("type")) for ch in choices]))
