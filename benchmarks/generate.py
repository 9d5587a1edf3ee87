"""Generation speed: prints JSON figures.

- ``xl_generate_s``: wall time of ``generate --turns 1050 --drifts 3 --no-verify`` (library call, fresh output
  directory each run), median and all runs; target <= 5 s on the 2-core reference machine.
- ``xl_generate_v3_s``: the same for ``--qa-rules valid --catalog catalog-v3`` (composed turns, typed slots;
  issue 16's target is the same 5 s);
- ``xl_generate_v3_one_process_s``: the same with ``--workers 1`` (personas written in turn; the two above use
  ``generate``'s default, one process per core: ``workers`` gives the number used);
- ``cli_help_s``: wall time of ``dimobench --help`` in a new process (start-up cost); target <= 0.5 s.

Every run but the first finds the catalog loaded (as in one process that generates several suites); the package's
remembered per-text results (seasons, hours, stems, barred words: ``functools.lru_cache``) are forgotten before
each run, so a run of the same seed is not sped up by the one before it.

Run: ``.venv/bin/python benchmarks/generate.py [--runs 5]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import os

    from dimobench.api import generate_suite
    from dimobench.catalog import find_catalog
    from dimobench.generate.config import RunOptions, make_config
    from dimobench.generate.parallel import auto_workers

    def forget() -> None:
        for name, module in list(sys.modules.items()):
            if name == "dimobench" or name.startswith(("dimobench.", "precomem")):
                for key, value in list(vars(module).items()):
                    if callable(getattr(value, "cache_clear", None)) and not key.endswith("load_catalog"):
                        value.cache_clear()

    def timed(workers: int | None = None, **options: object) -> list[float]:
        out = []
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.runs):
                forget()
                t0 = time.perf_counter()
                generate_suite(make_config(turns=1050, drifts=3, seed=7, **options), Path(tmp) / f"xl{i}",
                               options=RunOptions(workers=workers))
                out.append(time.perf_counter() - t0)
        return out

    times = timed()
    os.environ["DIMOBENCH_CATALOG"] = str(find_catalog("catalog-v3"))  # what generate --catalog sets
    times_v3 = timed(qa_rules="valid")
    times_v3_one = timed(1, qa_rules="valid")
    del os.environ["DIMOBENCH_CATALOG"]
    dimobench = Path(sys.executable).with_name("dimobench")
    cmd = [str(dimobench), "--help"] if dimobench.exists() else [sys.executable, "-m", "dimobench", "--help"]
    helps = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        helps.append(time.perf_counter() - t0)
    print(json.dumps({
        "xl_generate_s": {"median": round(statistics.median(times), 3), "runs": [round(t, 3) for t in times],
                          "target": 5.0},
        "xl_generate_v3_s": {"median": round(statistics.median(times_v3), 3),
                             "runs": [round(t, 3) for t in times_v3], "target": 5.0},
        "xl_generate_v3_one_process_s": {"median": round(statistics.median(times_v3_one), 3),
                                         "runs": [round(t, 3) for t in times_v3_one]},
        "workers": auto_workers(5, 1050),
        "cli_help_s": {"median": round(statistics.median(helps), 3), "runs": [round(t, 3) for t in helps],
                       "target": 0.5},
    }, indent=2))


if __name__ == "__main__":
    main()
