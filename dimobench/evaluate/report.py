"""Turn runs into ``report.json`` figures: per suite, then mean and std over suites with bootstrap intervals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean, pstdev
from typing import Any

from dimobench.evaluate import scoring as sc
from dimobench.evaluate.replay import SystemRun
from dimobench.suite.load import Suite

LIST_KEYS = ("recovery_turns", "windows", "memory")


def change_points(suite: Suite) -> list[dict[str, Any]]:
    """Every drift's change point: ``{persona_id, trait_id, turn, next_turn}`` (next change of that trait)."""
    total = total_turns(suite)
    out = []
    for sch in suite.schedules:
        for i, d in enumerate(sch.drifts):
            later = [e.change_point_turn for e in sch.drifts[i + 1:] if e.trait_id == d.trait_id]
            out.append({"persona_id": sch.persona_id, "trait_id": d.trait_id, "turn": d.change_point_turn,
                        "next_turn": later[0] if later else total})
    return out


def total_turns(suite: Suite) -> int:
    """Longest persona timeline of the suite."""
    return max((t.turn for t in suite.dialogues), default=0)


def scope_phases(rows: Sequence[dict[str, Any]], suite: Suite) -> list[dict[str, Any]]:
    """Rows whose ``phase`` counts only where the phase is about their trait (DESIGN.md, validity rules).

    A transition, post_change or maintenance phase is defined by one drift; a question on another trait asked
    then measures nothing about that drift, so it is counted as ``unaffected``. Stable-phase questions, and
    every question of a suite without schedules (imports), keep their phase.
    """
    spans = {s.persona_id: (s.phases, {d.drift_id: d.trait_id for d in s.drifts}) for s in suite.schedules}
    out = []
    for r in rows:
        phases, traits = spans.get(r.get("persona_id", ""), ([], {}))
        span = next((p for p in phases if p.start_turn <= r["ask_turn"] <= p.end_turn), None)
        if span is None or span.phase == "stable" or traits.get(span.drift_id or "") == r.get("trait_id"):
            out.append(r)
        else:
            out.append({**r, "phase": "unaffected"})
    return out


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def memory_curve(memory: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean of each numeric stats() field over personas, per sampled turn."""
    by_turn: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in memory:
        for k, v in m.items():
            if k not in ("persona_id", "turn") and isinstance(v, (int, float)) and not isinstance(v, bool):
                by_turn[int(m["turn"])][k].append(float(v))
    return [{"turn": t, **{k: round(mean(v), 4) for k, v in sorted(f.items())}} for t, f in sorted(by_turn.items())]


def figures(run: SystemRun, suite: Suite, window: int, levels: list[float | None] | None = None,
            rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every figure of one system on one suite (no intervals); ``levels``: the common recovery targets;
    ``rows``: the run's answers already through :func:`scope_phases`."""
    rows = scope_phases(run.answers, suite) if rows is None else rows
    total = total_turns(suite)
    rec = sc.recovery_turns(rows, change_points(suite), total, window, levels=levels)
    found = [x for x in rec if x is not None]
    fig = {
        "n": len(sc.scored(rows)), "overall": _r(sc.accuracy(rows)),
        "by_type": {k: _r(v) for k, v in sc.accuracy_by(rows, "qa_type").items()},
        "by_phase": {k: _r(v) for k, v in sc.accuracy_by(rows, "phase").items()},
        "stale_rate": _r(sc.stale_rate(rows)), "confounder_rate": _r(sc.confounder_rate(rows)),
        "plateau": _r(sc.plateau(rows, total)), "recovery_turns": rec,
        "recovery_turns_mean": _r(mean(found), 2) if found else None,
        "recovered_share": _r(len(found) / len(rec)) if rec else None,
        "latency_ms": {"observe_p50": _r(sc.percentile(run.observe_ms, 50), 3),
                       "observe_p95": _r(sc.percentile(run.observe_ms, 95), 3),
                       "recall_p50": _r(sc.percentile(run.recall_ms, 50), 3),
                       "recall_p95": _r(sc.percentile(run.recall_ms, 95), 3)},
        "windows": [{**w, "accuracy": _r(w["accuracy"])} for w in sc.window_accuracy(rows, window, total)],
        "memory": memory_curve(run.memory),
        "evidence_recall": _evidence_recall(run),
    }
    fig.update(llm_figures(rows))
    return fig


def llm_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """With an LLM answerer: ``failed`` (items whose calls failed after their retries, counted as wrong) and,
    with judges, ``judge_agreement`` (:func:`dimobench.evaluate.scoring.judge_agreement`). Empty offline."""
    out: dict[str, Any] = {}
    if any("failed" in r for r in rows):
        out["failed"] = sum(bool(r.get("failed")) for r in rows)
    agreement = sc.judge_agreement(rows)
    if agreement is not None:
        out["judge_agreement"] = {k: _r(v) if isinstance(v, float) else
                                  {kk: _r(vv) for kk, vv in v.items()} if isinstance(v, dict) else v
                                  for k, v in agreement.items()}
    return out


def _evidence_recall(run: SystemRun) -> dict[str, Any]:
    """Turn-level evidence recall@k (see :func:`dimobench.evaluate.evidence.evidence_recall`), by source type
    on imported suites and by qa_type on generated ones."""
    from dimobench.evaluate.evidence import evidence_recall

    out = evidence_recall(({"evidence_turns": r.get("evidence_turns", []),
                            "source_type": r.get("source_type") or r.get("qa_type"),
                            "recalled_source_turns": [it["source_turns"] for it in r["recalled"]]}
                           for r in run.answers), run.k)
    out["value"] = _r(out["value"])
    out["by_type"] = {t: _r(v) for t, v in out["by_type"].items()}
    return out


def _recovery_levels(runs: dict[str, list[SystemRun]], suites: dict[str, Suite]) -> dict[str, list[float | None]]:
    """Per suite, the common recovery level of each change point (empty when the oracle did not run)."""
    if "oracle" not in runs:
        return {}
    none = {r.suite: r.answers for r in runs.get("none", [])}
    return {r.suite: sc.recovery_levels(r.answers, none.get(r.suite), change_points(suites[r.suite]),
                                        total_turns(suites[r.suite])) for r in runs["oracle"]}


def _add_normalized(systems: dict[str, dict[str, Any]]) -> None:
    none, oracle = systems.get("none"), systems.get("oracle")
    for fig in systems.values():
        fig["normalized"] = _r(sc.normalized(fig.get("overall"), none.get("overall") if none else None,
                                             oracle.get("overall") if oracle else None))


def _intervals(rows: list[dict[str, Any]], n: int, seed: int) -> dict[str, Any]:
    ok = sc.scored(rows)
    ci: dict[str, Any] = {"overall_ci": sc.bootstrap_rate_ci([bool(r["correct"]) for r in ok], n, seed)}
    st = [r["chosen"] == r["stale_index"] for r in ok if r.get("stale_index") is not None]
    cf = [r["chosen"] == r["confounder_index"] for r in ok if r.get("confounder_index") is not None]
    ci["stale_rate_ci"] = sc.bootstrap_rate_ci(st, n, seed)
    ci["confounder_rate_ci"] = sc.bootstrap_rate_ci(cf, n, seed)
    for key, field in (("by_type_ci", "qa_type"), ("by_phase_ci", "phase")):
        groups: dict[str, list[bool]] = defaultdict(list)
        for r in ok:
            groups[str(r.get(field) or "none")].append(bool(r["correct"]))
        ci[key] = {k: sc.bootstrap_rate_ci(v, n, seed) for k, v in sorted(groups.items())}
    return {k: ([_r(x) for x in v] if isinstance(v, list) else
                {kk: [_r(x) for x in vv] if vv else None for kk, vv in v.items()} if isinstance(v, dict) else v)
            for k, v in ci.items()}


def _mean_std(per_suite: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over suites of every plain number (recursively), with ``<name>_std`` beside it."""
    out: dict[str, Any] = {}
    keys = list(dict.fromkeys(k for f in per_suite for k in f))
    for k in keys:
        vals = [f.get(k) for f in per_suite]
        if k in LIST_KEYS:
            continue
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums and len(nums) == len([v for v in vals if v is not None]):
            out[k] = _r(mean(nums))
            out[f"{k}_std"] = _r(pstdev(nums)) if len(nums) > 1 else 0.0
        elif all(isinstance(v, dict) for v in vals if v is not None) and any(vals):
            out[k] = _mean_std([v for v in vals if v])
        elif all(v is None for v in vals):
            out[k] = None
    return out


def build_report(runs: dict[str, list[SystemRun]], suites: dict[str, Suite], config: dict[str, Any],
                 window: int, bootstrap: int, seed: int) -> dict[str, Any]:
    """The report.json structure: ``systems`` (mean over suites + intervals), ``suites`` (each alone), ``config``."""
    per_suite: dict[str, dict[str, dict[str, Any]]] = {}
    levels = _recovery_levels(runs, suites)
    config["recovery_level"] = (f"none + {sc.RECOVERY_SHARE} x (oracle - none) on the changed trait"
                                if levels else "each system's own final plateau minus 0.05 (run oracle for a "
                                               "common level)")
    scoped = {(system, run.suite): scope_phases(run.answers, suites[run.suite])
              for system, rs in runs.items() for run in rs}
    for system, rs in runs.items():
        for run in rs:
            per_suite.setdefault(run.suite, {})[system] = figures(run, suites[run.suite], window,
                                                                  levels.get(run.suite), scoped[(system, run.suite)])
    for systems in per_suite.values():
        _add_normalized(systems)
    top: dict[str, dict[str, Any]] = {}
    for system, rs in runs.items():
        figs = [per_suite[r.suite][system] for r in rs]
        if len(figs) == 1:
            agg = {k: v for k, v in figs[0].items() if k not in ("windows", "memory")}
        else:
            agg = _mean_std(figs)
            agg["recovery_turns"] = [x for f in figs for x in f["recovery_turns"]]
        rows = [a for r in rs for a in scoped[(system, r.suite)]]
        agg.update(llm_figures(rows))  # pooled over suites, not averaged
        agg.update(_intervals(rows, bootstrap, seed))
        agg["higher_is_better"] = sc.HIGHER_IS_BETTER
        top[system] = agg
    return {"format": "dimobench-report", "format_version": 1, "metric_version": sc.METRIC_VERSION,
            "systems": top, "suites": per_suite, "config": config}
