"""Issue 15's figures for one catalog on fresh seeds, in one run: prints JSON.

Generates ``--preset dimobench`` suites of ``--seeds`` and one ``--preset xl`` suite of ``--xl-seed``
(``--qa-rules valid``, offline verification and the generate-time audit on), then:

- audits each preset with its learned attacks trained on ``--train-seeds`` presets, generated for that and never
  tested (default: each seed plus 50,000; ``--train-seeds`` with no seed trains on the *other* presets, which
  biases a learned attack upwards: see below), and the XL suite likewise (the generate-time card's
  leave-one-persona-out figure is reported beside it), then each attack's mean over the presets (``mean``);
- evaluates ``none``, ``oracle``, ``full``, ``recency`` and ``precomem`` on each suite with each of
  ``--answerers`` (default both offline ones: ``offline``, the plain formula, and ``gloss``, the same formula
  reading recalled cue turns through the suite's catalog), reporting accuracy with its interval, stale and
  confounder rates, normalised score and evidence recall@10;
- runs ``verify --calibrate`` on the first preset;
- checks each comparison of the acceptance (none <= 0.30, oracle >= 0.95, precomem above full and recency,
  full's stale rate above precomem's, recency's confounder rate above precomem's).

Leave-one-suite-out training is biased: with about ten personas per trait over five suites, the states that were
gold in the other suites are less often gold in the held-out one (its own share is missing from the training
counts), and ``combined`` learns that from its leave-one-persona-out rows (session 17: 0.31 on average over seeds
1461-1465 trained on each other, 0.246 trained on the disjoint seeds 1501-1505).

Run: ``.venv/bin/python benchmarks/validity.py --catalog catalog-v3 --seeds 741 742 743 744 745 --xl-seed 746
[--extra precomem:aging] [--keep DIR]`` (about 25 minutes on 2 cores; ``--no-xl`` skips the XL suite; ``--extra``
adds systems, each checked as precomem is).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

SYSTEMS = ["none", "oracle", "full", "recency", "precomem"]


def _audit_row(report: Any, card: dict[str, Any]) -> dict[str, Any]:
    best = report.strongest
    shortcuts = {s.name: s.accuracy for s in report.shortcuts}
    return {"strongest": best.name if best else None, "strongest_accuracy": best.accuracy if best else None,
            "strongest_ci": list(best.ci) if best and best.ci else None,
            "strongest_null_p95": report.strongest_null_p95,
            "bow_window": shortcuts.get("bow_window"), "shortcuts_max": max(shortcuts.values(), default=None),
            "flags": sum(report.flags.values()) if report.flags else 0,
            "lints": sum(len(v) for v in report.lints.values()) if report.lints else 0,
            "gates_pass": report.passed, "generate_card": card}


def _checks(s: dict[str, Any], system: str) -> dict[str, bool]:
    return {
        f"{system}>full": s[system]["overall"] > s["full"]["overall"],
        f"{system}>recency": s[system]["overall"] > s["recency"]["overall"],
        f"stale full>{system}": (s["full"]["stale"] or 0) > (s[system]["stale"] or 0),
        f"confounder recency>{system}": (s["recency"]["confounder"] or 0) > (s[system]["confounder"] or 0),
    }


def _eval_row(report: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    rows = {}
    for name, f in report["systems"].items():
        er = f.get("evidence_recall") or {}
        rows[name] = {"overall": f["overall"], "ci": f.get("overall_ci"), "stale": f.get("stale_rate"),
                      "confounder": f.get("confounder_rate"), "normalised": f.get("normalized"),
                      "recall_at_10": er.get("value") if isinstance(er, dict) else None}
    s = rows
    checks = {"none<=0.30": s["none"]["overall"] <= 0.30, "oracle>=0.95": s["oracle"]["overall"] >= 0.95}
    for system in ["precomem", *extra]:
        checks.update(_checks(s, system))
    rows["checks"] = checks
    return rows


def _count_stale(counts: list[int], answers: Path) -> None:
    """Add one system's stale answers and stale-eligible questions of one suite to ``counts``."""
    for line in answers.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("stale_index") is not None and row.get("correct") is not None:
            counts[0] += row.get("chosen") == row["stale_index"]
            counts[1] += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--catalog", default="catalog-v3")
    ap.add_argument("--seeds", type=int, nargs="+", default=[741, 742, 743, 744, 745])
    ap.add_argument("--xl-seed", type=int, default=746)
    ap.add_argument("--no-xl", action="store_true")
    ap.add_argument("--answerers", nargs="+", default=["offline", "gloss"])
    ap.add_argument("--extra", nargs="*", default=[],
                    help="more systems to evaluate and check like precomem (e.g. precomem:aging)")
    ap.add_argument("--keep", type=Path, help="write the suites and evaluations here (an empty folder)")
    ap.add_argument("--train-seeds", type=int, nargs="*", default=None,
                    help="presets generated only to train the learned attacks on (disjoint from --seeds; default "
                         "each seed plus 50,000; none: train on the other presets)")
    args = ap.parse_args()
    from dimobench.api import EvalConfig, audit_suite, evaluate, generate_suite
    from dimobench.catalog import find_catalog
    from dimobench.evaluate.replay import safe_name
    from dimobench.evaluate.systems import is_builtin
    from dimobench.generate.config import make_config
    from dimobench.verify.calibrate import calibrate

    systems = list(dict.fromkeys(SYSTEMS + args.extra))
    unknown = [x for x in systems if not is_builtin(x)]
    if unknown:
        raise SystemExit(f"not a built-in system: {', '.join(unknown)}")
    found = find_catalog(args.catalog)
    if found is None:
        raise SystemExit(f"no catalog {args.catalog!r}")
    os.environ["DIMOBENCH_CATALOG"] = str(found)  # what generate --catalog sets
    out: dict[str, Any] = {"catalog": args.catalog, "seeds": args.seeds,
                           "xl_seed": None if args.no_xl else args.xl_seed,
                           "train_seeds": args.train_seeds if args.train_seeds is not None
                           else [s + 50_000 for s in args.seeds]}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        cards: dict[str, dict[str, Any]] = {}
        plan = [(f"p{s}", "dimobench", s) for s in args.seeds] + ([] if args.no_xl else [(f"x{args.xl_seed}", "xl",
                                                                                             args.xl_seed)])
        for key, preset, seed in plan:
            paths[key] = root / key
            generate_suite(make_config(preset, seed=seed, qa_rules="valid"), paths[key], verify=True, audit=True)
            card = json.loads((paths[key] / "manifest.json").read_text()).get("audit") or {}
            cards[key] = {"passed": card.get("passed"), "strongest": card.get("strongest")}
        presets = [f"p{s}" for s in args.seeds]
        trainers = []
        for seed in out["train_seeds"]:
            trainers.append(root / f"train{seed}")
            generate_suite(make_config("dimobench", seed=seed, qa_rules="valid"), trainers[-1], verify=False,
                           audit=False)
        out["audit"] = {}
        means: dict[str, list[float]] = {}
        for key in paths:
            train = trainers or [paths[k] for k in presets if k != key]
            report = audit_suite(paths[key], train=train)
            out["audit"][key] = _audit_row(report, cards[key])
            for score in report.attacks if key in presets else []:
                means.setdefault(score.name, []).append(score.accuracy or 0.0)
        # one suite's strongest attack has the spread of its ten personas (null p95 about 0.35-0.38); each
        # attack's mean over the presets is the figure a built-in leak shows in
        out["audit"]["mean"] = {k: round(sum(v) / len(v), 4) for k, v in means.items()}
        out["evaluate"] = {}
        pooled: dict[str, dict[str, list[int]]] = {}
        for answerer in args.answerers:
            rows = out["evaluate"].setdefault(answerer, {})
            for key in paths:
                where = root / f"eval-{answerer}-{key}"
                evaluate(EvalConfig(suites=[paths[key]], systems=systems, plots=False, jobs=None, answerer=answerer),
                         where)
                rows[key] = _eval_row(json.loads((where / "report.json").read_text()), systems[len(SYSTEMS):])
                for system in systems:
                    _count_stale(pooled.setdefault(answerer, {}).setdefault(system, [0, 0]),
                                 where / f"answers-{safe_name(system)}.jsonl")
        # each suite's stale rate rests on ~60 questions: the comparison pooled over all of them
        out["stale_pooled"] = {a: {system: {"stale": c[0], "of": c[1], "rate": round(c[0] / c[1], 4) if c[1] else None}
                                   for system, c in by.items()} for a, by in pooled.items()}
        cal = calibrate(paths[presets[0]])
        per_defect: dict[str, Any] = cal["per_defect"]  # type: ignore[assignment]
        out["calibrate"] = {"suite": presets[0], "caught": cal["caught_rate"], "planted": cal["planted"],
                            "false_reject_rate": cal["false_reject_rate"], "clean": cal["clean"],
                            "lowest_kind": min(((r["caught"] / r["n"], k) for k, r in per_defect.items()),
                                               default=None)}
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
