"""``verify --calibrate``: plant known defects into a copy of a suite and measure what the verifier catches.

Up to ``per_defect`` items get each defect of :data:`~dimobench.verify.plant.DEFECTS` (an item gets at most
one); the copy is verified as a whole. *Caught* means the planted item's verdict is not ACCEPT; *flagged by
its criterion* means the criterion whose kind the defect is did not ACCEPT. The false-reject rate is the share
of unplanted (clean) items that were not accepted.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from dimobench.suite.io import write_jsonl
from dimobench.suite.load import load_suite
from dimobench.verify.embed import Embedder
from dimobench.verify.plant import DEFECTS, Planter
from dimobench.verify.plant_flags import PLAN_DEFECTS
from dimobench.verify.verdicts import plan_checks_apply, verify_offline

SUITE_FILES = ("manifest.json", "personas.jsonl", "schedules.jsonl", "dialogues.jsonl", "qa.jsonl")


def plant_defects(src: str | Path, dst: str | Path, per_defect: int = 40, seed: int = 0,
                  plan_checks: str = "auto") -> dict[str, str]:
    """Copy the suite at ``src`` to ``dst`` with defects planted; return qa_id -> defect name. The kinds of
    :data:`~dimobench.verify.plant_flags.PLAN_DEFECTS` are planted only where ``plan_checks`` applies to the suite."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for name in SUITE_FILES:
        shutil.copyfile(src / name, dst / name)
    suite = load_suite(dst)
    planter = Planter.of(suite, seed)
    order = list(range(len(suite.qa)))
    planter.rng.shuffle(order)
    planted: dict[str, str] = {}
    items = list(suite.qa)
    planned = plan_checks_apply(suite, plan_checks)
    for defect, (_, plant) in {**DEFECTS, **(PLAN_DEFECTS if planned else {})}.items():
        n = 0
        for i in order:
            if n >= per_defect:
                break
            q = items[i]
            if q.qa_id in planted:
                continue
            bad = plant(q, planter)
            if bad is None or bad.model_dump() == q.model_dump():
                continue
            items[i] = bad
            planted[q.qa_id] = defect
            n += 1
    write_jsonl(dst / "qa.jsonl", items)
    return planted


def calibrate(src: str | Path, per_defect: int = 40, seed: int = 0, out: str | Path | None = None,
              embedder: Embedder | None = None, plan_checks: str = "auto") -> dict[str, object]:
    """Plant, verify the copy, and report catch rates per defect and per criterion and the false-reject rate.

    The copy goes to ``out`` when given (kept), else to a temporary directory (removed).
    """
    from contextlib import nullcontext

    from dimobench.suite.outdir import claim_out

    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="dimobench-calibrate-")
        out = Path(tmp) / "suite"
    try:  # a kept copy goes only where an earlier calibration copy (or nothing) is
        with claim_out(Path(out), "verify --calibrate", force=True) if tmp is None else nullcontext():
            planted = plant_defects(src, Path(out), per_defect, seed, plan_checks)
            result = verify_offline(out, embedder=embedder, plan_checks=plan_checks)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    per_defect_rows: dict[str, dict[str, Any]] = {}
    per_criterion: dict[str, list[int]] = {}
    clean_total = clean_rejected = 0
    for v in result.verdicts:
        defect = planted.get(v.qa_id)
        if defect is None:
            clean_total += 1
            clean_rejected += v.verdict != "ACCEPT"
            continue
        criterion = {**DEFECTS, **PLAN_DEFECTS}[defect][0]
        row = per_defect_rows.setdefault(defect, {"criterion": criterion, "n": 0, "caught": 0,
                                                  "by_criterion": 0})
        row["n"] = int(row["n"]) + 1
        caught = v.verdict != "ACCEPT"
        row["caught"] = int(row["caught"]) + caught
        own = v.criteria.get(criterion)
        flagged = own is not None and own.verdict != "ACCEPT"
        row["by_criterion"] = int(row["by_criterion"]) + flagged
        per_criterion.setdefault(criterion, [0, 0])
        per_criterion[criterion][0] += 1
        per_criterion[criterion][1] += caught
    for row in per_defect_rows.values():
        row["caught_rate"] = _rate(int(row["caught"]), int(row["n"]))
        row["criterion_rate"] = _rate(int(row["by_criterion"]), int(row["n"]))
    n_planted = sum(v[0] for v in per_criterion.values())
    caught_total = sum(v[1] for v in per_criterion.values())
    return {
        "suite": str(src), "embedder": result.embedder, "planted": n_planted, "caught": caught_total,
        "caught_rate": _rate(caught_total, n_planted),
        "per_criterion": {c: {"n": n, "caught": k, "caught_rate": _rate(k, n)}
                          for c, (n, k) in per_criterion.items()},
        "per_defect": per_defect_rows,
        "clean": clean_total, "false_rejects": clean_rejected,
        "false_reject_rate": _rate(clean_rejected, clean_total),
    }


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None
