"""Rich tables for ``dimobench verify``: the run summary, calibration figures and one item in full."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dimobench.suite.schema import QAItem, Turn, VerdictRecord


def _pct(rate: object) -> str:
    """A share as a percentage; ``-`` when nothing was counted (e.g. a suite too small to keep clean items)."""
    return f"{rate:.1%}" if isinstance(rate, int | float) else "-"


def print_summary(console: Console, summary: dict[str, object], embedder: str, warnings: list[str],
                  verifier: str = "offline") -> None:
    """ACCEPT rate overall, per criterion, per qa_type and per persona."""
    for w in warnings[:20]:
        console.print(f"[yellow]warning:[/] {w}")
    if len(warnings) > 20:
        console.print(f"[yellow]warning:[/] ... and {len(warnings) - 20} more")
    overall = summary["overall"]
    assert isinstance(overall, dict)
    counts = summary.get("verdicts", {})
    assert isinstance(counts, dict)
    console.print(f"[bold]ACCEPT {_pct(overall.get('accept_rate'))}[/] of {overall['n']} items "
                  f"(ACCEPT {counts.get('ACCEPT', 0)}, REVISE {counts.get('REVISE', 0)}, "
                  f"REJECT {counts.get('REJECT', 0)}; verifier {verifier}"
                  + (f", embeddings {embedder})" if embedder else ")"))
    for group in ("criterion", "qa_type", "persona"):
        rows = summary.get(group, {})
        assert isinstance(rows, dict)
        table = Table(title=f"ACCEPT rate by {group}", show_header=True)
        table.add_column(group)
        table.add_column("n", justify="right")
        table.add_column("ACCEPT", justify="right")
        table.add_column("rate", justify="right")
        for name, row in rows.items():
            table.add_row(name, str(row["n"]), str(row["accept"]), _pct(row.get("accept_rate")))
        console.print(table)


def print_calibration(console: Console, report: dict[str, object]) -> None:
    """Share of planted defects caught per defect and per criterion, and the false-reject rate."""
    table = Table(title="planted defects caught (verdict not ACCEPT)", show_header=True)
    for col in ("defect", "criterion", "n", "caught", "by its criterion"):
        table.add_column(col, justify="left" if col in ("defect", "criterion") else "right")
    per_defect = report["per_defect"]
    assert isinstance(per_defect, dict)
    for name, row in per_defect.items():
        table.add_row(name, row["criterion"], str(row["n"]), _pct(row["caught_rate"]),
                      _pct(row["criterion_rate"]))
    console.print(table)
    per_criterion = report["per_criterion"]
    assert isinstance(per_criterion, dict)
    crit = Table(title="caught per criterion kind", show_header=True)
    for col in ("criterion", "n", "caught"):
        crit.add_column(col)
    for name, row in per_criterion.items():
        crit.add_row(name, str(row["n"]), _pct(row["caught_rate"]))
    console.print(crit)
    console.print(f"[bold]overall caught {_pct(report['caught_rate'])}[/] of {report['planted']} planted; "
                  f"false rejects on clean items {_pct(report['false_reject_rate'])} "
                  f"({report['false_rejects']} of "
                  f"{report['clean']}); embeddings {report['embedder']}")


def print_item(console: Console, item: QAItem, turns: dict[int, Turn], verdict: VerdictRecord) -> None:
    """One item, its evidence turns' text and every criterion verdict."""
    console.print(f"[bold]{item.qa_id}[/] ({item.qa_type}, persona {item.persona_id}, trait {item.trait_id}, "
                  f"asked after turn {item.ask_turn}, phase {item.phase})")
    console.print(f"Q: {escape(item.question)}")
    for i, opt in enumerate(item.options):
        marks = [m for m, idx in (("gold", item.answer_index), ("stale", item.stale_index),
                                  ("confounder", item.confounder_index)) if idx == i]
        console.print(f"  {i}. {escape(opt)}" + (f"  [dim]({', '.join(marks)})[/]" if marks else ""))
    console.print("evidence:")
    for n in item.evidence_turns:
        t = turns.get(n)
        if t is None:
            console.print(f"  turn {n}: [red](no such turn)[/]")
            continue
        a = t.annotation
        label = f"{a.kind} {a.trait_id or ''} {a.state_id or ''}".strip() if a else "no annotation"
        console.print(f"  turn {n} [dim]{escape(f'[{label}]')}[/]: user: {escape(t.user)}", highlight=False)
        console.print(f"      assistant: {escape(t.assistant)}", highlight=False)
    console.print(f"[bold]verdict {verdict.verdict}[/]")
    for name, r in verdict.criteria.items():
        colour = {"ACCEPT": "green", "REJECT": "red"}.get(r.verdict, "yellow")
        console.print(f"  [{colour}]{r.verdict:8}[/] {name}: {escape(r.explanation)}", highlight=False)
