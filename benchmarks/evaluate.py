"""Time ``dimobench evaluate`` of PreCoMem on the XL suite shape at several ``--jobs``, and LoCoMo; prints JSON.

Usage: ``python benchmarks/evaluate.py [--system precomem] [--suite DIR] [--jobs 1,2] [--locomo FILE]``
(without ``--suite`` an XL suite, 5 x 1,050 turns, 3 drifts, seed 7, is generated into a temporary directory
first). With ``--locomo`` (default ``../shared/data/locomo10.json`` when it exists) the file is imported and
precomem + full + bm25 are evaluated on it with the last ``--jobs``. Targets (issue 20): XL ``--jobs 1`` <= 90 s,
``--jobs 2`` <= 50 s, speed-up >= 1.7x; LoCoMo <= 120 s with ``--jobs 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _run(suite: Path, systems: list[str], jobs: int, out: Path, embedding: str) -> tuple[float, object]:
    from dimobench.evaluate.api import EvalConfig, evaluate

    t0 = time.perf_counter()
    report = evaluate(EvalConfig(suites=[suite], systems=systems, bootstrap=200, plots=False, embedding=embedding,
                                 jobs=jobs), out)
    return time.perf_counter() - t0, report


def main() -> None:
    """Generate (or take) a suite, evaluate one system per ``--jobs``, then LoCoMo; print wall times as JSON."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="precomem")
    ap.add_argument("--suite", type=Path, default=None)
    ap.add_argument("--embedding", default="auto")
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values to time on the suite")
    default_locomo = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
    ap.add_argument("--locomo", type=lambda s: Path(s) if s else None,  # "" skips LoCoMo
                    default=default_locomo if default_locomo.is_file() else None)
    ap.add_argument("--no-xl", action="store_true", help="only the LoCoMo run")
    args = ap.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    result: dict[str, object] = {"cpu_count": os.cpu_count(), "load_avg_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        suite = args.suite
        if suite is None and not args.no_xl:
            from dimobench.api import generate_suite
            from dimobench.generate.config import make_config

            suite = Path(tmp) / "xl"
            generate_suite(make_config("xl", seed=7), suite)
        if suite is not None and not args.no_xl:
            walls: dict[str, float] = {}
            for j in jobs:
                wall, report = _run(suite, [args.system], j, Path(tmp) / f"out-{j}", args.embedding)
                walls[str(j)] = round(wall, 2)
            fig = report.systems[args.system]  # type: ignore[attr-defined]
            result["xl"] = {"system": args.system, "suite": str(args.suite or "generated xl (seed 7)"),
                            "wall_s_by_jobs": walls, "overall": fig.overall,
                            "speedup": round(walls[str(jobs[0])] / walls[str(jobs[-1])], 2) if len(jobs) > 1
                            else None, "targets_s": {"1": 90, "2": 50}, "target_speedup": 1.7}
        if args.locomo is not None:
            locomo = Path(tmp) / "locomo"
            r = subprocess.run([sys.executable, "-m", "dimobench", "import", "locomo", str(args.locomo), "--out",
                                str(locomo)], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            systems = ["precomem", "full", "bm25"]
            wall, report = _run(locomo, systems, jobs[-1], Path(tmp) / "out-locomo", args.embedding)
            lat = report.systems["full"].latency_ms  # type: ignore[attr-defined]
            result["locomo"] = {"systems": systems, "jobs": jobs[-1], "wall_s": round(wall, 2), "target_s": 120,
                                "full_recall_p95_ms": lat.recall_p95 if lat else None,
                                "overall": {s: report.systems[s].overall for s in systems}}  # type: ignore[attr-defined]
    result["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
