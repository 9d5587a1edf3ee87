"""Issue 16's text figures for one catalog: prints JSON.

Generates ``--preset dimobench`` suites of the given seeds and one ``--preset xl`` suite (``--qa-rules valid``,
offline, no verification) from ``--catalog``, then reports per preset suite the verbatim overlap of its user
turns with the next seed's suite, distinct option texts, the share of cue turns sharing a word with their
state's description or options, the template lookup's recovery and the lint count; for the XL suite, distinct
templates (names, numbers and cities normalised) and the generation time.

Run: ``.venv/bin/python benchmarks/diversity.py --catalog catalog-v3 --seeds 501 502 503 504 505 --xl-seed 506``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--catalog", default="catalog-v3")
    ap.add_argument("--seeds", type=int, nargs="+", default=[501, 502, 503, 504, 505])
    ap.add_argument("--xl-seed", type=int, default=506)
    args = ap.parse_args()
    from dimobench.api import generate_suite, load_suite
    from dimobench.audit.diversity import diversity
    from dimobench.audit.lints import lints
    from dimobench.catalog import find_catalog
    from dimobench.generate.config import make_config

    found = find_catalog(args.catalog)
    if found is None:
        raise SystemExit(f"no catalog {args.catalog!r}")
    os.environ["DIMOBENCH_CATALOG"] = str(found)  # what generate --catalog sets
    out: dict[str, object] = {"catalog": args.catalog}
    with tempfile.TemporaryDirectory() as tmp:
        suites = {}
        for seed in args.seeds:
            path = Path(tmp) / f"p{seed}"
            generate_suite(make_config("dimobench", seed=seed, qa_rules="valid"), path, verify=False, audit=False)
            suites[seed] = load_suite(path)
        t0 = time.perf_counter()
        xl_path = Path(tmp) / "xl"
        generate_suite(make_config("xl", seed=args.xl_seed, qa_rules="valid"), xl_path, verify=False, audit=False)
        xl_s = time.perf_counter() - t0
        rows = {}
        for i, seed in enumerate(args.seeds):
            nxt = args.seeds[(i + 1) % len(args.seeds)]
            d = diversity(suites[seed], [(str(nxt), suites[nxt])])
            rows[str(seed)] = {"overlap_with_next_seed": d["overlap_with"][str(nxt)],  # type: ignore[index]
                               "distinct_option_texts": d["distinct_option_texts"],
                               "cue_word_share": d["cue_word_share"], "template_lookup": d["template_lookup"],
                               "reply_heard_again": d["reply_heard_again"],
                               "lints": sum(len(v) for v in lints(suites[seed]).values())}
        xl = load_suite(xl_path)
        dx = diversity(xl)
        out["presets"] = rows
        out["xl"] = {"seed": args.xl_seed, "user_turns": dx["user_turns"],
                     "distinct_templates": dx["distinct_templates"], "cue_word_share": dx["cue_word_share"],
                     "template_lookup": dx["template_lookup"], "reply_heard_again": dx["reply_heard_again"],
                     "lints": sum(len(v) for v in lints(xl).values()), "generate_s": round(xl_s, 2)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
