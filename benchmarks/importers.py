"""Import speed: prints JSON figures.

- ``locomo_import_s``: wall time of importing ``../shared/data/locomo10.json`` (10 conversations, 5,882 turns,
  1,986 QA) through the library (parse, write, hash, dataset card), fresh output directory each run; median
  and all runs.
- ``locomo_validate_s``: wall time of ``validate_suite`` on the imported suite (median).
- ``locomo_evaluate``: per system (``--system``, default precomem and bm25; ``--system none`` skips), the wall
  time of ``evaluate`` on the imported suite (one run: it takes minutes), its per-turn cost, and the evidence
  recall@10 it reached, so a speed change and a recall change show up together.

Run: ``.venv/bin/python benchmarks/importers.py [--runs 3] [--path ../shared/data/locomo10.json]
[--system precomem --system bm25]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--path", type=Path, default=DEFAULT)
    ap.add_argument("--system", action="append", default=None,
                    help="system to time on the imported suite (repeatable; 'none' skips the evaluation)")
    args = ap.parse_args()
    systems = [s for s in (args.system or ["precomem", "bm25"]) if s != "none"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if not args.path.is_file():
        sys.exit(f"no LoCoMo file at {args.path} (pass --path)")
    from dimobench.importers import import_benchmark
    from dimobench.suite.validate import validate_suite

    times, checks = [], []
    counts: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"l{i}"
            t0 = time.perf_counter()
            manifest = import_benchmark("locomo", args.path, out)
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            problems = validate_suite(out)
            checks.append(time.perf_counter() - t0)
            assert not problems, problems[:3]
            counts = {k: manifest.counts[k] for k in ("personas", "turns", "qa", "dropped_evidence")}
        evaluated = _evaluate(Path(tmp) / "l0", systems, tmp, int(counts.get("turns", 0) or 0))
    print(json.dumps({
        "locomo_import_s": {"median": round(statistics.median(times), 3),
                            "runs": [round(t, 3) for t in times]},
        "locomo_validate_s": {"median": round(statistics.median(checks), 3)},
        "counts": counts,
        "locomo_evaluate": evaluated,
        "cpu_count": os.cpu_count(), "load_avg": round(os.getloadavg()[0], 2),
    }, indent=2))


def _evaluate(suite: Path, systems: list[str], tmp: str, turns: int) -> dict[str, object]:
    """Evaluate each system alone on the imported suite (separate runs, so each wall time is its own)."""
    from dimobench.evaluate.api import EvalConfig, evaluate

    out: dict[str, object] = {}
    for name in systems:
        t0 = time.perf_counter()
        report = evaluate(EvalConfig(suites=[suite], systems=[name], bootstrap=0, plots=False),
                          Path(tmp) / f"eval-{name.replace(':', '_')}")
        wall = time.perf_counter() - t0
        fig = report.systems[name]
        out[name] = {"wall_s": round(wall, 1), "per_turn_ms": round(1000 * wall / max(turns, 1), 2),
                     "evidence_recall_at_10": fig.evidence_recall.value if fig.evidence_recall else None,
                     "latency_ms": fig.latency_ms.model_dump() if fig.latency_ms else None}
    return out


if __name__ == "__main__":
    main()
