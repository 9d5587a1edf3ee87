"""Check the catalog's wording against the validity rules: prints every problem, exit 1 if any.

A suite can be answered by matching words when an option shares words with the cues of its own state (the
audit's bag-of-words shortcut), and a state's options can only be balanced when the trait has four states. For
each topic file given (a catalog folder stands for its ``topics/*.json``; default: all of ``data/topics/``) this
reports:

- a trait with fewer than four states;
- an option text (``answers`` or ``recommendations``) sharing a stemmed content word with any cue (user side) of
  its own state, naming the words;
- a cue (user side) sharing a stemmed content word with its own state's description;
- the catalog schema's own problems (``dimobench.catalog_rules.check_topic``).

Run: ``.venv/bin/python scripts/check_catalog_words.py [data/topics/food.json ...] [--cues]`` (``--cues`` also
reports cue/description overlaps, which older states still have; states written as composed ``acts`` are
always checked for them, with their ``parts`` counted as cue words).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dimobench.catalog import TopicEntry
from dimobench.catalog_rules import check_topic, word_problems


def problems(path: Path, with_cues: bool) -> list[str]:
    """Every rule broken in one topic file."""
    topic = TopicEntry.model_validate(json.loads(path.read_text(encoding="utf-8")))
    return [f"{path.name}: {p}" for p in check_topic(topic) + word_problems(topic, with_cues)]


def main() -> None:
    """Check the files named on the command line (default: every topic file)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--cues", action="store_true", help="also report cues sharing words with the description")
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[1] / "data" / "topics"
    named = args.files or [root]
    files = [g for f in named for g in (sorted((f / "topics" if (f / "topics").is_dir() else f).glob("*.json"))
                                         if f.is_dir() else [f])]
    found = [p for f in files for p in problems(f, args.cues)]
    print("\n".join(found) if found else f"{len(files)} topic file(s): no problem")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
