"""One-screen summaries the CLI prints after a command (rich tables on stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.table import Table

from dimobench.suite.card import noise_note
from dimobench.suite.schema import Manifest


def print_generate_summary(console: Console, out: Path, manifest: Manifest, verified: bool) -> None:
    """Print what a generate run wrote: counts by question type, turn kind and phase, and any stage 6 verdicts."""
    # the manifest types these as plain objects; generate writes nested dicts (see suite.load.counts)
    c = cast("dict[str, Any]", manifest.counts)
    cfg = cast("dict[str, Any]", manifest.config)
    console.print(f"[bold]suite written to {out}[/]: {c['personas']} personas x {cfg['turns']} turns, "
                  f"{cfg['drifts']} drift(s) each, {c['qa']} questions (seed {cfg['seed']})")
    table = Table(title="questions by type and turns by kind", show_header=True)
    table.add_column("qa_type")
    table.add_column("n", justify="right")
    table.add_column("turn kind")
    table.add_column("n", justify="right")
    by_type = list(c["by_qa_type"].items())
    kinds = list(c["turn_kinds"].items())
    for i in range(max(len(by_type), len(kinds))):
        a = by_type[i] if i < len(by_type) else ("", "")
        b = kinds[i] if i < len(kinds) else ("", "")
        table.add_row(a[0], str(a[1]), b[0], str(b[1]))
    console.print(table)
    console.print("phases: " + ", ".join(f"{k} {v}" for k, v in c["by_phase"].items()))
    verdicts = c.get("verdicts")
    if verified and isinstance(verdicts, dict) and c["qa"]:
        accepted = verdicts.get("ACCEPT", 0)
        console.print(f"stage 6 verification ({cfg['backends']['verifier']}): {accepted}/{c['qa']} ACCEPT "
                      f"({100 * accepted / c['qa']:.1f}%), " + ", ".join(f"{k} {v}" for k, v in verdicts.items())
                      + f"; details: dimobench verify {out}")
    elif not verified:
        console.print("stage 6 (verification) skipped (--no-verify); run: dimobench verify " + str(out))
    audit = (manifest.model_extra or {}).get("audit")
    if isinstance(audit, dict):
        best = audit.get("strongest") or {}
        shortcuts = ", ".join(f"{k} {v}" for k, v in (audit.get("shortcuts") or {}).items())
        console.print(f"validity audit: {'PASS' if audit.get('passed') else 'FAIL'}; strongest no-context attack "
                      f"{best.get('name')} {best.get('accuracy')} (chance {audit.get('chance')}), {shortcuts}, "
                      f"{audit.get('flagged_items')} flagged item(s); card in {out}/README.md")
        note = noise_note(best.get("accuracy"), best.get("null_p95"), audit.get("gates"))
        if note:
            console.print(note)
    console.print(f"next: dimobench validate {out}")


def print_llm_summary(console: Console, out: Path, run: dict[str, object]) -> None:
    """Calls, cache hits, tokens, estimated cost, and every item that could not be made."""
    cost = run.get("cost_usd_estimate")
    console.print(f"LLM {run['generator']}: {run['calls']} call(s), {run['cache_hits']} from cache, "
                  f"{run['input_tokens']} input + {run['output_tokens']} output tokens, "
                  f"estimated cost {'unknown' if cost is None else f'${cost:.4f}'}")
    failed = run.get("failed_items") or []
    assert isinstance(failed, list)
    for f in failed:
        console.print(f"[red]failed[/] {f['item']}: {f['error']}", markup=True, highlight=False)
    if failed:
        console.print(f"[red]{len(failed)} LLM item(s) could not be made[/]: they keep the offline text and the "
                      f"suite is partial; rerun with --resume to retry only them "
                      f"(details in {out}/.dimobench/failures.jsonl)")
