"""PreCoMem speed and memory figures, printed as JSON.

    HF_HUB_OFFLINE=1 python benchmarks/precomem.py [--turns 1000] [--encoder auto|minilm|hashing] [--paper]
        [--mixed-schedules] [--suite DIR]

1. ``stream``: observe and recall latency (P50/P95, ms) over a stream of varied synthetic turns with the
   default encoders and verifier (``encoders`` says which ran), and memory every 100 turns (raw items vs
   effective memory, N_active, deprecated facts, and the deprecated share of top-10 slots over the recalls
   so far; ``deprecated_share_topk_by_query`` splits it by whether the query asks about the past, and
   ``stale_live_share_topk_present`` counts, in present-time recalls after a drop was said, the slots taken by
   a belief that is *not* deprecated and rests only on turns telling a habit since dropped: the contamination a
   deprecated share cannot see). Measure it alone: ``load_1min_at_end`` is the machine's load when it finished.
2. ``scaling``: recall latency at 1k/10k/100k stored beliefs, excluding query encoding (the store is filled
   with random unit embeddings and random text: ranking cost does not depend on what the vectors mean).

``--suite DIR`` instead replays the user turns of a suite's ``dialogues.jsonl`` (e.g. a DiMoBench-XL suite from
``dimobench generate --preset xl --catalog catalog-v3 --qa-rules valid``) through the engine, one persona at a
time, and prints effective memory and N_active at turns 200, 500, 1,000 and the end, per persona and averaged,
beside the paper's DiMoBench-XL figures (a 25.8-28.5 plateau by turn 200, N_active 16-19 after it).

The text is generated here from small word lists written for this benchmark, not from dimobench's catalog.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precomem import PreCoMem, PreCoMemConfig  # noqa: E402
from precomem.beliefs import BeliefMeta  # noqa: E402
from precomem.encoders import tokenize  # noqa: E402

HABITS = [
    ("play chess online", "chess"),
    ("bake sourdough bread", "baking"),
    ("swim laps at the pool", "swimming"),
    ("practise the cello", "cello"),
    ("go birdwatching by the river", "birds"),
    ("cook Thai curries", "curry"),
    ("run along the canal", "running"),
    ("host board game nights", "board games"),
    ("read science fiction", "sci-fi"),
    ("work on my vegetable garden", "garden"),
    ("cycle to work", "cycling"),
    ("watch old westerns", "westerns"),
    ("paint with watercolours", "painting"),
    ("volunteer at the animal shelter", "shelter"),
    ("go bouldering at the gym", "climbing"),
]
WHEN = ["every morning", "on weekends", "most evenings", "twice a week", "after work", "on Sundays", "daily"]
FRAMES = [
    "I {h} {w}.",
    "These days I {h} {w}.",
    "Lately I love to {h} {w}.",
    "I usually {h} {w}, it keeps me sane.",
    "Spent the afternoon trying to {h} again.",
    "Can't wait to {h} {w} like always.",
    "Honestly I {h} {w} and it is the highlight of my week.",
]
DROPPED = [
    "I gave up trying to {h}, it isn't for me anymore.",
    "I don't {h} anymore, no time.",
    "I stopped trying to {h}; I avoid it now.",
]
OTHERS = [
    "My neighbour likes to {h} {w}.",
    "Jake said he wants to {h} {w}.",
    "My sister keeps trying to {h}.",
]
PAST = ["Back in college I used to {h} {w}.", "When I was a kid I used to {h}."]
REQUESTS = [
    "Rewrite this email to my landlord about the leaking tap.",
    "Can you summarise this article about tariffs?",
    "Translate 'good morning' into Portuguese.",
    "Suggest a title for my quarterly report.",
    "What is a polite way to decline a meeting?",
    "Help me plan a budget for next month.",
    "Draft a birthday message for a colleague.",
    "How do I convert Celsius to Fahrenheit?",
]
FILLER = [
    "The weather turned cold again today.",
    "I finally fixed the squeaky door.",
    "Traffic was awful this morning.",
    "My phone screen cracked when it fell.",
    "I had leftover pasta for lunch.",
    "The neighbours are renovating their kitchen.",
    "I found a nice cafe near the station.",
]
EVENTS = [
    "I moved into a new flat on March 3.",
    "I started a new job next month.",
    "I adopted a puppy last week.",
]
QUERIES = [
    "What does the user do {w}?",
    "Does the user like {k}?",
    "hobbies and free time",
    "How does the user relax?",
    "what should I recommend for the weekend",
    "the user's routine",
    "{k}",
    "What did the user do {w} before?",
]


def stream(n: int, seed: int = 0, mixed_schedules: bool = False) -> list[str]:
    """The turns of :func:`annotated_stream`, text only."""
    return [text for text, _, _ in annotated_stream(n, seed, mixed_schedules)]


def annotated_stream(n: int, seed: int = 0, mixed_schedules: bool = False) -> list[tuple[str, str, int]]:
    """Varied turns as (text, kind, habit index): habits (some dropped halfway: kind ``dropped`` from then on),
    requests, filler, other people, the past, events.

    Each habit keeps one schedule, in the present and in the past ("I run along the canal every morning" is never
    retold as "... on Sundays"), as a person's habit does. ``mixed_schedules`` gives every mention a random
    schedule (the stream before session 15), so that a retelling may be a partial change of the habit. The two
    streams have the same turns otherwise (the schedules come from a generator of their own)."""
    rng = np.random.default_rng(seed)
    dropped = {int(i) for i in rng.choice(len(HABITS), size=3, replace=False)}
    schedule = np.random.default_rng([seed, 1]).integers(len(WHEN), size=len(HABITS))
    out = []
    for t in range(n):
        h, _ = HABITS[int(rng.integers(len(HABITS)))]
        w = WHEN[int(rng.integers(len(WHEN)))]
        kind = rng.choice(
            ["habit", "request", "filler", "other", "past", "event"], p=[0.45, 0.2, 0.15, 0.1, 0.07, 0.03]
        )
        idx = [i for i, (hh, _) in enumerate(HABITS) if hh == h][0]
        if kind in ("habit", "past") and not mixed_schedules:
            w = WHEN[int(schedule[idx])]
        if kind == "habit":
            pool = DROPPED if idx in dropped and t > n // 2 else FRAMES
            kind = "dropped" if pool is DROPPED else "habit"
        else:
            pool = {"request": REQUESTS, "filler": FILLER, "other": OTHERS, "past": PAST, "event": EVENTS}[kind]
        out.append((pool[int(rng.integers(len(pool)))].format(h=h, w=w), str(kind), idx))
    return out


def _stale(turns: list[tuple[str, str, int]], t: int) -> set[int]:
    """Turns that told a habit in the present which the user has said, before turn ``t``, they dropped since."""
    dropped_at: dict[int, int] = {}
    for turn, (_, kind, idx) in enumerate(turns[: t - 1], start=1):
        if kind == "dropped":
            dropped_at.setdefault(idx, turn)
    return {turn for turn, (_, kind, idx) in enumerate(turns[: t - 1], start=1)
            if kind == "habit" and idx in dropped_at and turn < dropped_at[idx]}


def _pct(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs) * 1000
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 2),
        "p95_ms": round(float(np.percentile(a, 95)), 2),
        "mean_ms": round(float(a.mean()), 2),
        "n": len(xs),
    }


def run_stream(turns: int, encoder: str, paper: bool = False, mixed_schedules: bool = False) -> dict:
    """Observe ``turns`` turns with a recall after each; memory every 100 turns (``paper``: the paper preset)."""
    make = PreCoMemConfig.paper if paper else PreCoMemConfig
    mem = PreCoMem(make(encoder=encoder))
    t0 = time.perf_counter()
    mem.recall("warm up")  # model load and topic prototypes are a one-off, not per-turn latency
    load_s = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    obs, rec, curve = [], [], []
    window: list[float] = []
    shares: dict[str, list[float]] = {"present": [], "past": []}
    # present-time recalls after a drop was said: top-10 slots taken by a live (not deprecated) belief resting
    # only on turns that told a habit the user has since said they dropped, over every such recall and over
    # those asking about a dropped habit: the contamination the deprecated share cannot see when nothing is
    # deprecated
    stale: dict[str, list[float]] = {"any_query": [], "query_names_a_dropped_habit": []}
    annotated = annotated_stream(turns, mixed_schedules=mixed_schedules)
    for t, (text, _, _) in enumerate(annotated, start=1):
        s = time.perf_counter()
        mem.observe(text, turn=t)
        obs.append(time.perf_counter() - s)
        h, k = HABITS[int(rng.integers(len(HABITS)))]
        q = QUERIES[int(rng.integers(len(QUERIES)))].format(w=WHEN[int(rng.integers(len(WHEN)))], k=k)
        s = time.perf_counter()
        items = mem.recall(q)
        rec.append(time.perf_counter() - s)
        window.append(sum(it.deprecated for it in items) / mem.config.top_k)
        shares["past" if " before?" in q else "present"].append(window[-1])
        old = _stale(annotated, t + 1) if " before?" not in q else set()
        if old:
            live = sum(not it.deprecated and bool(it.source_turns) and set(it.source_turns) <= old for it in items)
            stale["any_query"].append(live / mem.config.top_k)
            if any(annotated[s - 1][2] == HABITS.index((h, k)) for s in old) and k in q:
                stale["query_names_a_dropped_habit"].append(live / mem.config.top_k)
        if t % 100 == 0:
            st = mem.stats()
            curve.append(
                {
                    "turn": t,
                    "raw_items": st["raw_items"],
                    "written_total": mem.store.next_id - 1,
                    "effective_memory": st["effective_memory"],
                    "n_active": st["n_active"],
                    "facts": st["facts"],
                    "deprecated": st["deprecated"],
                    "deprecated_share_topk": st["deprecated_share_topk"],
                    "deprecated_share_topk_window": round(float(np.mean(window)), 4),
                }
            )
            window = []
    return {
        "turns": turns,
        "load_s": round(load_s, 2),
        "observe": _pct(obs),
        "recall": _pct(rec),
        "memory": curve,
        # Deprecated share of top-10 slots over all 1,000 recalls, by whether the query asks about the past
        # (there the corrected facts are the evidence asked for; about the present they are contamination).
        "deprecated_share_topk_by_query": {k: round(float(np.mean(v)), 4) for k, v in shares.items() if v},
        "stale_live_share_topk_present": {k: {"share": round(float(np.mean(v)), 4), "recalls": len(v)}
                                          for k, v in stale.items() if v},
        "regimes": mem.stats()["regimes"],
        "encoders": mem.encoders(),
    }


def run_scaling(sizes: list[int], encoder: str, queries: int = 200) -> dict:
    """Recall latency by store size, excluding query encoding."""
    out = {}
    base = PreCoMem(PreCoMemConfig(encoder=encoder))  # type: ignore[arg-type]
    qs = base.encoder.encode([f"does the user like {k}?" for _, k in HABITS])
    vocab = sorted({w for h, _ in HABITS for w in tokenize(h)} | {w for f in FILLER + REQUESTS for w in tokenize(f)})
    rng = np.random.default_rng(0)
    for size in sizes:
        mem = PreCoMem(base.config, encoder=base.encoder)
        store = mem.store
        emb = rng.normal(size=(size, store.dim)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        for i in range(size):
            toks = list(rng.choice(vocab, size=int(rng.integers(4, 10))))
            meta = BeliefMeta(store.new_id(), " ".join(toks), "statement", "user", toks, [i + 1])
            store.add(
                meta,
                emb[i],
                float(rng.uniform(0.2, 1.0)),
                i + 1,
                fact=bool(rng.random() < 0.5),
                protected=False,
                topic=int(rng.integers(0, 24)),
            )
        mem.turn = size
        times = []
        for j in range(queries):
            q_tokens = tokenize(f"does the user like {HABITS[j % len(HABITS)][1]}")
            s = time.perf_counter()
            mem.search(qs[j % len(qs)], q_tokens)
            times.append(time.perf_counter() - s)
        out[str(size)] = _pct(times)
    return out


def run_suite(path: Path, paper: bool) -> dict[str, object]:
    """Effective memory and N_active of the engine replaying each persona's user turns of a suite."""
    turns: dict[str, list[dict]] = {}
    with (path / "dialogues.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            t = json.loads(line)
            turns.setdefault(t["persona_id"], []).append(t)
    marks = (200, 500, 1000)
    per: dict[str, dict[str, dict[str, float]]] = {}
    for pid, rows in turns.items():
        mem = PreCoMem(PreCoMemConfig.paper() if paper else PreCoMemConfig())
        rows.sort(key=lambda t: t["turn"])
        seen: dict[str, dict[str, float]] = {}
        for t in rows:
            mem.observe(t["user"], turn=t["turn"], timestamp=t["timestamp"])
            if t["turn"] in marks or t is rows[-1]:
                st = mem.stats()
                seen[str(t["turn"]) if t["turn"] in marks else "end"] = {
                    "effective_memory": round(float(st["effective_memory"]), 2), "n_active": float(st["n_active"])}
        per[pid] = seen
    keys = sorted({k for v in per.values() for k in v}, key=lambda k: (k == "end", int(k) if k != "end" else 0))
    mean = {k: {m: round(sum(v[k][m] for v in per.values() if k in v) / sum(k in v for v in per.values()), 2)
                for m in ("effective_memory", "n_active")} for k in keys}
    return {"suite": str(path), "mean": mean, "per_persona": per,
            "paper_dimobench_xl": {"effective_memory_plateau": [25.8, 28.5], "n_active_after_200": [16, 19]}}


def main() -> None:
    """Run both parts (or ``--suite``) and print one JSON object."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--encoder", default="auto")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--paper", action="store_true", help="the paper preset (cross-encoder, plain clock)")
    ap.add_argument("--mixed-schedules", action="store_true",
                    help="the stream before session 15: each mention of a habit draws a new schedule")
    ap.add_argument("--suite", type=Path, help="replay this suite's user turns instead (memory figures only)")
    args = ap.parse_args()
    if args.suite is not None:
        print(json.dumps({"config": "paper" if args.paper else "default", **run_suite(args.suite, args.paper)},
                         indent=2))
        return
    result = {
        "config": "paper" if args.paper else "default",
        "stream_kind": "mixed schedules" if args.mixed_schedules else "one schedule per habit",
        "stream": run_stream(args.turns, args.encoder, args.paper, args.mixed_schedules),
        "scaling_recall_excluding_query_encoding": run_scaling([int(s) for s in args.sizes.split(",")], args.encoder),
        "targets": {"observe_p95_ms": 50, "recall_p95_ms": 20, "recall_100k_ms": 20, "deprecated_share_topk": 0.02},
        "threads": {"torch": _torch_threads(), "cpus": os.cpu_count()},
        "load_1min_at_end": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))


def _torch_threads() -> int | None:
    try:
        import torch

        return int(torch.get_num_threads())
    except ImportError:
        return None


if __name__ == "__main__":
    main()
