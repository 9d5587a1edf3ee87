"""Import speed: prints JSON figures.

- ``locomo_import_s``: wall time of importing ``../shared/data/locomo10.json`` (10 conversations, 5,882 turns,
  1,986 QA) through the library (parse, write, hash, dataset card), fresh output directory each run; median
  and all runs.
- ``locomo_validate_s``: wall time of ``validate_suite`` on the imported suite (median).

Run: ``.venv/bin/python benchmarks/importers.py [--runs 3] [--path ../shared/data/locomo10.json]``
"""

from __future__ import annotations

import argparse
import json
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
    args = ap.parse_args()
    if not args.path.is_file():
        sys.exit(f"no LoCoMo file at {args.path} (pass --path)")
    from dimobench.importers import import_benchmark
    from dimobench.validate import validate_suite

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
    print(json.dumps({
        "locomo_import_s": {"median": round(statistics.median(times), 3),
                            "runs": [round(t, 3) for t in times]},
        "locomo_validate_s": {"median": round(statistics.median(checks), 3)},
        "counts": counts,
    }, indent=2))


if __name__ == "__main__":
    main()
