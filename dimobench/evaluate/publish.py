"""Write report.md (tables a person reads) and PNG plots (matplotlib, Agg) from a report dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dimobench.suite.load import Suite


def _f(x: Any, pct: bool = True) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}" if pct else f"{x:.1f}"


def _ci(ci: Any) -> str:
    return f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""


def _std(fig: dict[str, Any], key: str) -> str:
    s = fig.get(f"{key}_std")
    return f" ± {100 * s:.1f}" if isinstance(s, (int, float)) and s else ""


def markdown(report: dict[str, Any]) -> str:
    """Tables: headline figures, accuracy by type and by phase, latency, and the run configuration."""
    systems: dict[str, dict[str, Any]] = report["systems"]
    cfg = report["config"]
    how = cfg["answerer"].get("embedding") or cfg["answerer"].get("spec")  # offline: embedding; LLM: provider/model
    lines = ["# dimobench evaluation", "",
             f"Suites: {', '.join(cfg['suites'])}; k = {cfg['k']}; answerer: {cfg['answerer']['name']} "
             f"({how}); bootstrap {cfg['bootstrap']} resamples, seed {cfg['seed']}. "
             "Figures are percentages; brackets hold 95% bootstrap intervals over questions; ± is the std over "
             "suites.", "",
             "| system | overall | plateau | stale rate ↓ | confounder rate ↓ | normalized | recovery turns ↓ |",
             "|---|---|---|---|---|---|---|"]
    for name, f in systems.items():
        rec = f.get("recovery_turns_mean")
        lines.append(f"| {name} | {_f(f.get('overall'))}{_std(f, 'overall')}{_ci(f.get('overall_ci'))} | "
                     f"{_f(f.get('plateau'))}{_std(f, 'plateau')} | "
                     f"{_f(f.get('stale_rate'))}{_ci(f.get('stale_rate_ci'))} | "
                     f"{_f(f.get('confounder_rate'))}{_ci(f.get('confounder_rate_ci'))} | "
                     f"{_f(f.get('normalized'))} | {_f(rec, pct=False)} |")
    for title, key in (("Accuracy by question type", "by_type"), ("Accuracy by phase", "by_phase")):
        cols = list(dict.fromkeys(c for f in systems.values() for c in (f.get(key) or {})))
        lines += ["", f"## {title}", "", "| system | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for name, f in systems.items():
            vals = f.get(key) or {}
            lines.append(f"| {name} | " + " | ".join(_f(vals.get(c)) for c in cols) + " |")
    ev = {name: f.get("evidence_recall") or {} for name, f in systems.items()}
    if any(e.get("value") is not None for e in ev.values()):
        cols = list(dict.fromkeys(c for e in ev.values() for c in (e.get("by_type") or {})))
        lines += ["", f"## Evidence recall@{cfg['k']} (share of a question's evidence turns among the recalled "
                  "items' source turns)", "", "| system | all | " + " | ".join(cols) + " |",
                  "|---" * (len(cols) + 2) + "|"]
        for name, e in ev.items():
            by = e.get("by_type") or {}
            lines.append(f"| {name} | {_f(e.get('value'))} | " + " | ".join(_f(by.get(c)) for c in cols) + " |")
    if all(f.get("overall") is None for f in systems.values()):
        lines += ["", "These questions have free-text answers and no options, so the offline answerer does not "
                  "score them; token-F1 of recalled text against the gold (LoCoMo's own metric) would measure "
                  "wording, not memory. Evidence recall is the offline figure; answer accuracy needs an LLM "
                  "answerer and judge."]
    judged = {name: f["judge_agreement"] for name, f in systems.items() if f.get("judge_agreement")}
    if judged:
        lines += ["", "## Judges of free-text answers (" + ", ".join(cfg.get("judges", {}).get("judges", [])) + ")",
                  "", "| system | items | unanimous | Fleiss' kappa | failed |", "|---|---|---|---|---|"]
        for name, j in judged.items():
            kappa = "-" if j.get("fleiss_kappa") is None else f"{j['fleiss_kappa']:.3f}"
            lines.append(f"| {name} | {j['n']} | {_f(j.get('unanimous'))} | {kappa} | "
                         f"{systems[name].get('failed', 0)} |")
    lines += ["", "## Latency (ms per call)", "", "| system | observe P50 | observe P95 | recall P50 | recall P95 |",
              "|---|---|---|---|---|"]
    for name, f in systems.items():
        lat = f.get("latency_ms") or {}
        lines.append(f"| {name} | " + " | ".join(_f(lat.get(k), pct=False) for k in
                                                  ("observe_p50", "observe_p95", "recall_p50", "recall_p95")) + " |")
    lines += ["", "## Configuration", "", "```json"]
    import json

    lines += [json.dumps(cfg, indent=2), "```", ""]
    return "\n".join(lines)


def plots(report: dict[str, Any], suites: dict[str, Suite], out: Path) -> list[str]:
    """``accuracy-<suite>.png`` (window accuracy per system, change points dashed) and ``memory-<suite>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dimobench.evaluate.report import change_points

    written = []
    for key, systems in report["suites"].items():
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for name, f in systems.items():
            pts = [((w["start"] + w["end"]) / 2, w["accuracy"]) for w in f["windows"] if w["accuracy"] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=name)
        for i, cp in enumerate(change_points(suites[key])):
            ax.axvline(cp["turn"], color="grey", ls="--", lw=0.8, label="change point" if i == 0 else None)
        ax.set(xlabel="turn", ylabel="accuracy", ylim=(0, 1.02), title=f"Accuracy over turns: {key}")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        name = f"accuracy-{key}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
        curves = {n: f["memory"] for n, f in systems.items() if f.get("memory")}
        if curves:
            fig, ax = plt.subplots(figsize=(9, 4.5))
            for n, mem in curves.items():
                field = "effective_memory" if "effective_memory" in mem[0] else "raw_items"
                ax.plot([m["turn"] for m in mem], [m.get(field, 0) for m in mem], label=f"{n} ({field})")
            ax.set(xlabel="turn", ylabel="memory (mean over personas)", title=f"Memory over turns: {key}")
            ax.set_yscale("symlog")
            ax.legend(fontsize=7)
            fig.tight_layout()
            name = f"memory-{key}.png"
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            written.append(name)
    return written
