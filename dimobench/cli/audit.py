"""``dimobench audit``: the validity card of one or more suites; exit 1 when a gate fails.

Only typer is imported at module level; the audit loads inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def audit(
    suites: Annotated[list[Path], typer.Argument(help="Suite directories, audited together.")],
    train: Annotated[Optional[list[Path]], typer.Option(
        help="Suites the learned attacks train on (other seeds of the same config).")] = None,
    reference: Annotated[Optional[int], typer.Option(
        help="Train the learned attacks on N offline suites of other seeds, generated from the config the suite's "
             "manifest records (what generate's card does, with 3); for suites dimobench generated offline. "
             "Default: 3 for such suites when no --train is given, else leave-one-persona-out (0), which reads "
             "high on a generated suite (its golds are balanced across personas).")] = None,
    against: Annotated[Optional[list[Path]], typer.Option(
        help="Suites whose user turns this one should not repeat verbatim.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write audit.json and audit.md here (an empty folder, or one "
                                                     "holding an earlier audit, which is replaced).")] = None,
    gate: Annotated[Optional[list[str]], typer.Option(
        help="Override a gate, NAME=LIMIT (no_context, bow_window, recent_mention, their _inverse, _replies and "
             "_replies_inverse, flagged_items, lint_findings).")] = None,
) -> None:
    """Attack the suites: no-context priors, word-overlap shortcuts, per-item flags, lints, diversity."""
    from dimobench.errors import ConfigError, DimobenchError

    try:
        limits: dict[str, float] = {}
        for g in gate or []:
            name, sep, value = g.partition("=")
            try:
                limits[name.strip()] = float(value)
            except ValueError:
                raise ConfigError(f"--gate {g!r}: expected NAME=NUMBER") from None
            if not sep:
                raise ConfigError(f"--gate {g!r}: expected NAME=NUMBER")
        from dimobench.api import audit_suite

        report = audit_suite(suites, train=train or [], against=against or [], gates=limits, out=out,
                             reference=reference)
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None
    # typer takes `--train A B` as --train A plus a suite B to audit: say what was audited and what trained
    trained = (", ".join(str(t) for t in train) if train else
               ", ".join(t.removeprefix("train:") for t in report.train) if report.train else
               "the other personas (leave-one-persona-out)")
    typer.echo(f"audited: {', '.join(str(s) for s in suites)}; attacks trained on: {trained}")
    if train and len(suites) > 1:
        typer.echo("  (several suites are audited together; to train on several, repeat --train before each)")
    best = report.strongest
    typer.echo(f"{report.items} items, chance {report.chance}; strongest no-context attack: "
               f"{best.name if best else '-'} {best.accuracy if best else '-'}")
    for outcome in report.gates:
        typer.echo(f"  {outcome.name:16s} {outcome.value!s:>8} <= {outcome.limit:g}  "
                   f"{'ok' if outcome.passed else 'FAIL'}")
    if out is not None:
        typer.echo(f"wrote {out}/audit.json, audit.md")
    if not report.passed:
        raise typer.Exit(1)
