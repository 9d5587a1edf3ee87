"""Time ``dimobench evaluate`` of PreCoMem on the XL suite shape; prints JSON.

Usage: ``python benchmarks/evaluate.py [--system precomem] [--suite DIR]`` (without ``--suite`` an XL suite,
5 x 1,050 turns, 3 drifts, seed 7, is generated into a temporary directory first). Target: <= 150 s wall time
for precomem on 2 CPU cores.
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
    """Generate (or take) a suite, evaluate one system, print wall time and per-turn latency."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="precomem")
    ap.add_argument("--suite", type=Path, default=None)
    ap.add_argument("--embedding", default="auto")
    args = ap.parse_args()
    from dimobench.evaluate.api import EvalConfig, evaluate

    with tempfile.TemporaryDirectory() as tmp:
        suite = args.suite
        if suite is None:
            from dimobench.api import generate_suite
            from dimobench.generate.config import make_config

            suite = Path(tmp) / "xl"
            generate_suite(make_config("xl", seed=7), suite)
        t0 = time.perf_counter()
        report = evaluate(EvalConfig(suites=[suite], systems=[args.system], bootstrap=200, plots=False,
                                     embedding=args.embedding), Path(tmp) / "out")
        wall = time.perf_counter() - t0
    fig = report.systems[args.system]
    suite_cfg = next(iter(report.config["suite_configs"].values()))
    turns = int(suite_cfg.get("turns", 0)) * int(suite_cfg.get("personas", 0))
    print(json.dumps({
        "system": args.system, "suite": str(args.suite or "generated xl (seed 7)"), "turns": turns,
        "questions": fig.n, "wall_s": round(wall, 2), "target_s": 150, "within_target": wall <= 150,
        "per_turn_ms": round(1000 * wall / max(turns, 1), 3),
        "latency_ms": fig.latency_ms.model_dump() if fig.latency_ms else None,
        "overall": fig.overall, "embedding": report.config["answerer"]["embedding"],
        "cpu_count": os.cpu_count(), "load_avg": os.getloadavg()[0],
    }, indent=2))


if __name__ == "__main__":
    main()
