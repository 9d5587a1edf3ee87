"""MiniLM and the NLI cross-encoder on torch vs ONNX Runtime (float32 and int8), printed as JSON.

    HF_HUB_OFFLINE=1 python benchmarks/encoders.py [--repeats 3] [--threads 1]

For each runtime (``torch``, ``onnx``, ``onnx-int8``; see ``precomem/onnx.py``):

- ``single_ms``: one sentence per encode, single-threaded (PreCoMem's per-turn encodes run on torch's thread count
  under ONNX Runtime since session 15, with the same bits; one thread keeps this a per-core figure; mean over the
  ~200 sentences, the median of ``--repeats`` passes);
- ``batch64_ms_per_text``: the same sentences but the four long ones (a batch holding one is padded to 256
  tokens, which swamps everything else) encoded in batches of 64 on ``--threads`` threads, as dimobench's
  answerer embeds (median of the passes);
- ``cosine_to_torch``: min and mean cosine of each sentence's single-encode vector to torch's;
- ``nli``: the cross-encoder's ms per call on 1 and on 4 pairs (single-threaded, per core),
  and the largest logit difference to torch and whether every argmax agrees.

``ratio_vs_torch`` divides torch's time by each runtime's, measured in the same run; passes alternate between the
runtimes so that load from other processes on a shared machine falls on all of them alike. The sentences are
generated here from small word lists written for this benchmark. ``export_s`` is the one-off cost per process of
loading (torch) or exporting (ONNX) a model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precomem.encoders import _STORE, MiniLMEncoder  # noqa: E402
from precomem.nli import CrossEncoderVerifier, _cross_encoder_base, cross_encoder_path  # noqa: E402

RUNTIMES = ("torch", "onnx", "onnx-int8")
SUBJECTS = ["I", "My sister", "We", "My manager", "Our neighbour"]
VERBS = ["started", "stopped", "love", "can't stand", "have been", "used to", "tried"]
THINGS = [
    "running along the canal before work",
    "baking sourdough on Sunday mornings",
    "playing chess online after dinner",
    "working from home three days a week",
    "cycling to the office, rain or shine",
    "eating meat since January",
    "loud parties that go on past midnight",
    "swimming laps at the lido",
]
TAILS = ["", " lately", ", and honestly it shows", " since the move to Lisbon", " because of my knee"]
SHORT = ["Thanks!", "no", "Sounds good.", "Maybe later?", "Ha, fair enough.", "What time is it there?"]


def sentences(n: int = 200) -> list[str]:
    """``n`` varied turns: generated clauses of several lengths, with very short replies mixed in."""
    combos = itertools.product(SUBJECTS, VERBS, THINGS, TAILS)
    rng = np.random.default_rng(0)
    pool = [f"{s} {v} {t}{tail}." for s, v, t, tail in combos]
    picked = [pool[i] for i in rng.choice(len(pool), n - len(SHORT) - 4, replace=False)]
    long = [" ".join(pool[i] for i in rng.choice(len(pool), k, replace=False)) for k in (4, 8, 16, 40)]
    return picked + SHORT + long


def pairs() -> list[tuple[str, str]]:
    """Belief and new-turn pairs of the kinds the verifier sees: support, reversal, unrelated."""
    out = []
    for thing in THINGS:
        out += [(f"I love {thing}.", f"Did some {thing} again today."),
                (f"I love {thing}.", f"I can't stand {thing} anymore."),
                (f"I love {thing}.", "The weather was lovely today.")]
    return out


def _timed(fn: object, *args: object) -> float:
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch and ONNX Runtime threads for batches")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    texts, nli_pairs = sentences(), pairs()
    ordinary = [t for t in texts if len(t) < 300]
    enc, nli, export_s = {}, {}, {}
    base = _cross_encoder_base()
    for rt in RUNTIMES:
        start = time.perf_counter()
        enc[rt] = MiniLMEncoder(small_batch_threads=1, runtime=rt)
        enc[rt].encode(["warm up"])
        if base is not None:
            nli[rt] = CrossEncoderVerifier(cross_encoder_path(), base, threads=1, runtime=rt)
            nli[rt].logits(["warm"], ["up"])
        export_s[rt] = round(time.perf_counter() - start, 2)

    single: dict[str, list[float]] = {rt: [] for rt in RUNTIMES}
    batch: dict[str, list[float]] = {rt: [] for rt in RUNTIMES}
    nli_ms: dict[str, dict[int, list[float]]] = {rt: {1: [], 4: []} for rt in RUNTIMES}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for rt in RUNTIMES:  # alternate, so that outside load is shared out evenly
            e = enc[rt]
            _STORE.clear()  # time the model, not the process's vector store (a second pass would only look up)
            start = time.perf_counter()
            vectors[rt] = np.concatenate([e.encode([t]) for t in texts])
            single[rt].append((time.perf_counter() - start) / len(texts) * 1000)
            _STORE.clear()
            batch[rt].append(_timed(e.encode, ordinary) / len(ordinary) * 1000)  # > 64 texts: batches of 64
            if rt in nli:
                for size in (1, 4):
                    chunks = [nli_pairs[i:i + size] for i in range(0, len(nli_pairs), size)]
                    total = sum(_timed(nli[rt].logits, [p for p, _ in c], [h for _, h in c]) for c in chunks)
                    nli_ms[rt][size].append(total / len(chunks) * 1000)

    prem, hyp = [p for p, _ in nli_pairs], [h for _, h in nli_pairs]
    ref_logits = nli["torch"].logits(prem, hyp) if nli else None
    out: dict[str, object] = {"sentences": len(texts), "pairs": len(nli_pairs), "repeats": args.repeats,
                              "batch_threads": args.threads, "load_1min": round(os.getloadavg()[0], 2)}
    med = statistics.median
    for rt in RUNTIMES:
        cos = np.einsum("ij,ij->i", vectors["torch"], vectors[rt])
        row: dict[str, object] = {
            "ran": enc[rt].runtime, "export_s": export_s[rt],
            "single_ms": round(med(single[rt]), 2), "batch64_ms_per_text": round(med(batch[rt]), 2),
            "cosine_to_torch": {"min": round(float(cos.min()), 7), "mean": round(float(cos.mean()), 7),
                                "worst": texts[int(cos.argmin())]},
            "ratio_vs_torch": {"single": round(med(single["torch"]) / med(single[rt]), 2),
                               "batch64": round(med(batch["torch"]) / med(batch[rt]), 2)},
        }
        if rt in nli and ref_logits is not None:
            logits = nli[rt].logits(prem, hyp)
            row["nli"] = {"ran": nli[rt].runtime,
                          "ms_per_call": {f"{k}_pairs": round(med(v), 2) for k, v in nli_ms[rt].items()},
                          "ratio_vs_torch": {f"{k}_pairs": round(med(nli_ms["torch"][k]) / med(v), 2)
                                             for k, v in nli_ms[rt].items()},
                          "max_abs_logit_diff": round(float(np.abs(logits - ref_logits).max()), 6),
                          "argmax_agrees": bool((logits.argmax(1) == ref_logits.argmax(1)).all())}
        out[rt] = row
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
