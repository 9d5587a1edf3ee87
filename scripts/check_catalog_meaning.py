"""Check that every option text can be told apart from the other states' by what its state means.

The oracle system recalls the true state's description and habits; the shared offline answerer then picks the
option they support. If it cannot, the benchmark measures the answerer, not memory. For each trait of each topic
file given (default: all of ``data/topics/``), for each state as the truth and each of its option texts, this
offers that text beside one random text of each other state (``--draws`` draws per text, same pool), recalls the
true state's profile as the oracle does, and counts how often the answerer picks the true text. It prints the
texts that lose most often and exits 1 when any state's hit rate is below ``--min`` (default 0.95).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python scripts/check_catalog_meaning.py [data/topics/food.json ...]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from dimobench.catalog import TopicEntry
from dimobench.embed import get_embedder
from dimobench.evaluate.answerer import OfflineAnswerer
from dimobench.evaluate.protocol import Recalled


def profile(state) -> str:  # noqa: ANN001 - a catalog StateEntry
    """What the oracle recalls for a state: its description and habits as one item."""
    return "; ".join([state.description, *state.habits])


def check(path: Path, answerer: OfflineAnswerer, draws: int, rng: random.Random) -> list[tuple[str, float, list]]:
    """Per state and pool: the hit rate and the texts that lost, worst first."""
    topic = TopicEntry.model_validate(json.loads(path.read_text(encoding="utf-8")))
    out = []
    for trait in topic.traits:
        for pool, questions in (("answers", trait.current_questions), ("recommendations", trait.inference_questions)):
            for gold in trait.states:
                item = Recalled(text=profile(gold), score=1.0, source_turns=[1])
                hits, losses = 0, []
                for text in getattr(gold, pool):
                    for _ in range(draws):
                        others = [rng.choice(getattr(s, pool)) for s in trait.states if s is not gold]
                        options = [text, *others]
                        rng.shuffle(options)
                        question = rng.choice(questions).format(name="Sam")
                        choice = answerer.choose(question, options, [item])
                        if options[choice.index] == text:
                            hits += 1
                        else:
                            losses.append((text, options[choice.index]))
                total = draws * len(getattr(gold, pool))
                out.append((f"{path.name}: {trait.trait_id}/{gold.state_id} {pool}", hits / total, losses))
    return out


def main() -> None:
    """Check the named topic files (default all) and report states below the bar."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--draws", type=int, default=12)
    ap.add_argument("--min", type=float, default=0.95)
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[1] / "data" / "topics"
    files = args.files or sorted(root.glob("*.json"))
    answerer = OfflineAnswerer(get_embedder("minilm"))
    rng = random.Random(0)
    bad = 0
    for f in files:
        for where, rate, losses in check(f, answerer, args.draws, rng):
            flag = rate < args.min
            bad += flag
            print(f"{'LOW ' if flag else 'ok  '}{rate:.2f} {where}")
            if flag:
                worst: dict[str, int] = {}
                for text, _ in losses:
                    worst[text] = worst.get(text, 0) + 1
                for text, n in sorted(worst.items(), key=lambda kv: -kv[1])[:4]:
                    beaten_by = next(b for t, b in losses if t == text)
                    print(f"       lost {n}x: {text!r} (e.g. to {beaten_by!r})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
