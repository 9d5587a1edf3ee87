"""Offline verification speed and quality on the XL shape: prints JSON figures.

- ``xl_verify_s``: wall time of ``verify_suite`` on the XL suite (``generate --turns 1050 --drifts 3
  --seed 7``, 2,100 items), model load included (``model_load_s`` separately); target <= 60 s on the 2-core
  reference machine.
- ``xl_accept_rate``: share of XL items the offline verifier accepts (the paper reports 96.4% on its XL).
- ``cli_verify_s`` is not measured here: the CLI adds only the table printing.

Run: ``.venv/bin/python benchmarks/verify.py``
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    from dimobench.api import generate_suite
    from dimobench.generate.config import make_config

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "xl"
        generate_suite(make_config(turns=1050, drifts=3, seed=7), out)
        t0 = time.perf_counter()
        from dimobench.verify.embed import shared_embedder

        embedder = shared_embedder()
        load = time.perf_counter() - t0
        from dimobench.verify import verify_suite

        t1 = time.perf_counter()
        result = verify_suite(out, embedder=embedder)
        judge = time.perf_counter() - t1
    n = len(result.verdicts)
    accept = sum(v.verdict == "ACCEPT" for v in result.verdicts)
    print(json.dumps({
        "xl_verify_s": {"total": round(load + judge, 2), "model_load_s": round(load, 2),
                        "judge_s": round(judge, 2), "items": n, "target": 60.0},
        "xl_accept_rate": round(accept / n, 4) if n else None,
        "embedder": result.embedder,
    }, indent=2))


if __name__ == "__main__":
    main()
