"""One-screen summaries the CLI prints after a command (rich tables on stderr)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from dimobench.schema import Manifest


def print_generate_summary(console: Console, out: Path, manifest: Manifest, verified: bool) -> None:
    c = manifest.counts
    cfg = manifest.config
    console.print(f"[bold]suite written to {out}[/]: {c['personas']} personas x {cfg['turns']} turns, "
                  f"{cfg['drifts']} drift(s) each, {c['qa']} questions (seed {cfg['seed']})")
    table = Table(title="questions by type and turns by kind", show_header=True)
    table.add_column("qa_type")
    table.add_column("n", justify="right")
    table.add_column("turn kind")
    table.add_column("n", justify="right")
    by_type = list(c["by_qa_type"].items())  # type: ignore[union-attr]
    kinds = list(c["turn_kinds"].items())  # type: ignore[union-attr]
    for i in range(max(len(by_type), len(kinds))):
        a = by_type[i] if i < len(by_type) else ("", "")
        b = kinds[i] if i < len(kinds) else ("", "")
        table.add_row(a[0], str(a[1]), b[0], str(b[1]))
    console.print(table)
    console.print("phases: " + ", ".join(f"{k} {v}" for k, v in c["by_phase"].items()))  # type: ignore[union-attr]
    console.print(f"next: dimobench validate {out}")
