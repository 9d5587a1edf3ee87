"""Small source files in each benchmark's documented format (reference/benchmarks.md), built per test."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[3] / "shared"
"""``/work/shared`` when the repository is ``/work/main``."""
LOCOMO_REAL = SHARED / "data" / "locomo10.json"


def locomo_sample() -> list[dict[str, Any]]:
    """One LoCoMo sample: two sessions (keys out of order), a stray date key, odd evidence, every category."""
    conv = {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_2_date_time": "10:05 am on 9 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "Lovely! Here is my garden.", "img_url": ["x"],
             "blip_caption": "a photo of a garden", "query": "garden"},
        ],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I started pottery classes."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "I ran a marathon in 2022."},
        ],
        "session_3_date_time": "2:00 pm on 1 July, 2023",
    }
    qa = [
        {"question": "What did Ana adopt?", "answer": "a cat", "evidence": ["D2:1"], "category": 4},
        {"question": "When did Ben run a marathon?", "answer": 2022, "evidence": ["D1:2"], "category": 2},
        {"question": "What are Ana's hobbies and pets?", "answer": "pottery, a cat",
         "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "Would Ben enjoy a race?", "answer": "likely yes", "evidence": ["D1:2 D2:2", "D:1:1"],
         "category": 3},
        {"question": "What did Ben adopt?", "adversarial_answer": "a cat", "evidence": ["D2:1", "D", "D9:9"],
         "category": 5},
        {"question": "Is Miso Ben's cat?", "adversarial_answer": "Yes", "answer": "No", "evidence": [],
         "category": 5},
    ]
    return [{"sample_id": "conv-1", "conversation": conv, "qa": qa, "event_summary": {}, "observation": {},
             "session_summary": {}}]


def longmemeval_items() -> list[dict[str, Any]]:
    """Three questions: q1 and q2 share a haystack, q3 has its own (with a session lacking has_answer)."""
    shared = {
        "haystack_session_ids": ["s_a", "answer_1"],
        "haystack_dates": ["2023/05/20 (Sat) 09:00", "2023/05/25 (Thu) 18:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I like jazz."}, {"role": "assistant", "content": "Nice."}],
            [{"role": "user", "content": "My new car is a blue Civic.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations!"}],
        ],
    }
    own = {
        "haystack_session_ids": ["answer_2", "s_b"],
        "haystack_dates": ["2023/04/01 (Sat) 10:00", "2023/04/02 (Sun) 11:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "I moved to Lyon."}, {"role": "assistant", "content": "Bienvenue."}],
            [{"role": "user", "content": "Weather talk."}],
        ],
    }
    return [
        {"question_id": "q1", "question_type": "single-session-user", "question": "What car do I drive?",
         "answer": "a blue Civic", "question_date": "2023/05/30 (Tue) 21:56",
         "answer_session_ids": ["answer_1"],
         **json.loads(json.dumps(shared))},
        {"question_id": "q2_abs", "question_type": "knowledge-update", "question": "What bike do I ride?",
         "answer": "You did not mention a bike", "question_date": "2023/05/31 (Wed) 08:00",
         "answer_session_ids": ["answer_1", "ghost"], **json.loads(json.dumps(shared))},
        {"question_id": "q3", "question_type": "temporal-reasoning", "question": "Where do I live?",
         "answer": 1, "question_date": "2023/04/03 (Mon) 12:00", "answer_session_ids": ["answer_2"], **own},
    ]


PERSONAMEM_COLUMNS = ["persona_id", "question_id", "question_type", "topic", "context_length_in_tokens",
                      "context_length_in_letters", "distance_to_ref_in_blocks", "distance_to_ref_in_tokens",
                      "num_irrelevant_tokens", "distance_to_ref_proportion_in_context",
                      "user_question_or_message", "correct_answer", "all_options", "shared_context_id",
                      "end_index_in_shared_context"]


def personamem_files(root: Path, rows: list[dict[str, str]] | None = None,
                     contexts: dict[str, list[dict[str, str]]] | None = None) -> Path:
    """Write ``questions_32k.csv`` and ``shared_contexts_32k.jsonl`` under ``root``; return the CSV path."""
    contexts = contexts if contexts is not None else {
        "ctx1": [{"role": "system", "content": "You are talking to Kim, 34, a nurse."},
                 {"role": "user", "content": "I love spicy food."},
                 {"role": "assistant", "content": "Noted!"},
                 {"role": "system", "content": "New session: travel."},
                 {"role": "user", "content": "Actually I now avoid spicy food."},
                 {"role": "assistant", "content": "Understood."}],
        "ctx_unused": [{"role": "system", "content": "Unused persona."}],
    }
    opts = ["(a) Spicy curry", "(b) A mild risotto", "(c) Hot wings", "(d) Chili"]
    rows = rows if rows is not None else [
        {"persona_id": "7", "question_id": "pq1", "question_type": "recalling_facts_mentioned_by_the_user",
         "topic": "foodRecommendation", "user_question_or_message": "What food do I love?",
         "correct_answer": "(a)", "all_options": json.dumps(opts), "shared_context_id": "ctx1",
         "end_index_in_shared_context": "3", "distance_to_ref_in_blocks": "1"},
        {"persona_id": "7", "question_id": "pq2", "question_type": "acknowledge_latest_preferences",
         "topic": "foodRecommendation", "user_question_or_message": "Suggest dinner.",
         "correct_answer": "(b)", "all_options": repr(opts), "shared_context_id": "ctx1",
         "end_index_in_shared_context": "6"},
    ]
    q = root / "questions_32k.csv"
    with q.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=PERSONAMEM_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: "" for c in PERSONAMEM_COLUMNS} | r)
    with (root / "shared_contexts_32k.jsonl").open("w", encoding="utf-8") as fh:
        for cid, msgs in contexts.items():
            fh.write(json.dumps({cid: msgs}) + "\n")
    return q


def amemgym_users() -> list[dict[str, Any]]:
    """One user, two periods; the city changes in period 1, so period 1's question has a stale option."""
    def session(t: str, text: str, exposed: dict[str, str]) -> dict[str, Any]:
        return {"event": "chat", "exposed_states": exposed, "query": text, "session_time": t,
                "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "OK."}]}

    return [{
        "id": "u1", "start_time": "2025-01-01",
        "state_schema": {"city": ["Paris", "Oslo"], "diet": ["vegan", "any"]},
        "user_profile": {"uuid": "abc", "formatted_str": "Lee, 30", "name": "Lee"},
        "periods": [
            {"period_start": "2025-01-01", "period_end": "2025-02-01", "period_summary": "start",
             "sessions": [session("2025-01-05 10:00", "I live in Paris.", {"city": "Paris"}),
                          session("2025-01-09 10:00", "I am vegan.", {"diet": "vegan"})],
             "state": {"city": "Paris", "diet": "vegan"}, "updates": {}, "update_cnts": {}},
            {"period_start": "2025-02-01", "period_end": "2025-03-01", "period_summary": "moved",
             "sessions": [session("2025-02-03T09:30:00", "We moved to Oslo!", {"city": "Oslo"})],
             "state": {"city": "Oslo", "diet": "vegan"}, "updates": {"city": {"old": "Paris", "new": "Oslo"}},
             "update_cnts": {"city": 1}},
        ],
        "qas": [{"query": "Which restaurant should I book?", "required_info": ["city", "diet"],
                 "answer_choices": [
                     {"state": ["Paris", "vegan"], "answer": "A vegan bistro in Paris", "type": "experience"},
                     {"state": ["Oslo", "vegan"], "answer": "A vegan cafe in Oslo", "type": "experience"},
                     {"state": ["Oslo", "any"], "answer": "A steakhouse in Oslo", "type": "random"}]}],
    }]


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` and return it."""
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path
