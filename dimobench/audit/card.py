"""The validity card: typed results of an audit, its gates, and ``audit.md``."""

from __future__ import annotations

from pydantic import BaseModel

from dimobench.suite.card import noise_note

DEFAULT_GATES = {"no_context": 0.30, "bow_window": 0.35, "recent_mention": 0.35, "bow_window_inverse": 0.35,
                 "recent_mention_inverse": 0.35, "bow_window_replies": 0.35, "recent_mention_replies": 0.35,
                 "bow_window_replies_inverse": 0.35, "recent_mention_replies_inverse": 0.35, "past_inverse": 0.35,
                 "flagged_items": 0,
                 "lint_findings": 0}
"""Upper bounds: the strongest no-context attack, each shortcut baseline, flagged items, text lints."""


class Score(BaseModel):
    """One attack's or baseline's accuracy on the audited items."""

    name: str
    describe: str = ""
    accuracy: float | None
    """Mean credit per item (ties shared); None when no item has options."""
    ci: tuple[float, float] | None = None
    """95% interval resampling persona x trait units (see :func:`dimobench.audit.items.cluster_interval`)."""
    n: int = 0
    null_p95: float | None = None
    """No-context attacks: the 95th percentile of the attack's accuracy when each unit's held state is relabelled
    at random (:func:`dimobench.audit.items.relabel_null`), i.e. what it scores on a suite of this shape with no
    leak. A figure under it is within the noise; None when no item offers only states (imports, catalog v1)."""


class Gate(BaseModel):
    """One bound the card checks."""

    name: str
    value: float | None
    """What was measured (None: does not apply to this suite)."""
    limit: float
    passed: bool


class AuditReport(BaseModel):
    """What ``dimobench audit`` found: attacks, shortcuts, flags, lints, diversity, and the gates' verdict."""

    suites: list[str]
    train: list[str]
    """Suites the learned attacks were trained on (empty: leave-one-persona-out)."""
    items: int
    """Multiple-choice items audited."""
    chance: float | None
    attacks: list[Score]
    strongest: Score | None
    """The no-context attack that scored most: the figure a leak is judged by."""
    strongest_null_p95: float | None = None
    """The 95th percentile of the best of all attacks under the same relabellings: what the strongest attack
    scores at most, 95 times in 100, on a suite of this shape with no leak (None where no null applies)."""
    shortcuts: list[Score]
    flags: dict[str, int] | None
    """Flag -> items raising it (None: the suites carry no latent plan, e.g. imports)."""
    flagged: dict[str, list[str]] = {}
    """qa_id -> its flags, for every flagged item."""
    lints: dict[str, list[str]] = {}
    diversity: dict[str, dict[str, object]] = {}
    gates: list[Gate]
    passed: bool


def check_gates(report: AuditReport, limits: dict[str, float]) -> list[Gate]:
    """Every gate in ``limits`` against the report's figures (a figure that does not apply passes)."""
    values: dict[str, float | None] = {
        "no_context": report.strongest.accuracy if report.strongest else None,
        "flagged_items": float(len(report.flagged)) if report.flags is not None else None,
        "lint_findings": float(sum(len(v) for v in report.lints.values())),
    }
    values.update({s.name: s.accuracy for s in report.shortcuts})
    return [Gate(name=k, value=values.get(k), limit=v, passed=(x := values.get(k)) is None or x <= v + 1e-12)
            for k, v in limits.items()]


def summary(report: AuditReport) -> dict[str, object]:
    """The part of a card a suite's manifest and README carry (``dimobench audit`` gives the rest)."""
    best = report.strongest
    return {"passed": report.passed, "items": report.items, "chance": report.chance,
            "train": report.train or "leave-one-persona-out",
            "strongest": None if best is None else {"name": best.name, "accuracy": best.accuracy,
                                                    "ci": list(best.ci) if best.ci else None,
                                                    **({"null_p95": report.strongest_null_p95}
                                                       if report.strongest_null_p95 is not None else {})},
            "shortcuts": {s.name: s.accuracy for s in report.shortcuts},
            "flags": report.flags, "flagged_items": len(report.flagged),
            "lints": {k: len(v) for k, v in report.lints.items()},
            "gates": [g.model_dump(mode="json") for g in report.gates]}


_LOPO = ("the other personas (leave-one-persona-out: on a generated suite, whose golds are balanced across its "
         "personas, this reads high; `--train` suites of other seeds do not)")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _ci(s: Score) -> str:
    return f"[{_pct(s.ci[0])}, {_pct(s.ci[1])}]" if s.ci else ""


def markdown(report: AuditReport) -> str:
    """``audit.md``: the gates first, then every figure behind them."""
    lines = [f"# Validity audit: {', '.join(report.suites)}", "",
             f"**{'PASS' if report.passed else 'FAIL'}** on {report.items} multiple-choice items "
             f"(chance {_pct(report.chance)}); attacks trained on "
             f"{', '.join(report.train) if report.train else _LOPO}.", "",
             "| gate | measured | limit | |", "|---|---|---|---|"]
    best = report.strongest
    note = noise_note(best.accuracy if best else None, report.strongest_null_p95,
                      [g.model_dump() for g in report.gates])
    for g in report.gates:
        counted = g.name.endswith(("items", "findings"))
        shown = "n/a" if g.value is None else (f"{g.value:.0f}" if counted else _pct(g.value))
        lines.append(f"| {g.name} | {shown} | {g.limit:g} | {'ok' if g.passed else '**FAIL**'} |")
    lines += ["", note] if note else []
    lines += ["", "## No-context attacks (never read the dialogue)", "",
              "Null p95: what the attack scores at most, 95 times in 100, when each persona's held states are "
              "relabelled at random, i.e. on a suite of this shape with no leak. The strongest of them all: "
              f"{_pct(report.strongest_null_p95)}.", "",
              "| attack | accuracy | 95% CI | null p95 | what |", "|---|---|---|---|---|"]
    lines += [f"| {s.name} | {_pct(s.accuracy)} | {_ci(s)} | {_pct(s.null_p95)} | {s.describe} |"
              for s in report.attacks]
    lines += ["", "## Shortcut baselines (read the dialogue, understand nothing)", "",
              "| baseline | accuracy | 95% CI |", "|---|---|---|"]
    lines += [f"| {s.name} | {_pct(s.accuracy)} | {_ci(s)} |" for s in report.shortcuts]
    lines += ["", "## Per-item flags", ""]
    if report.flags is None:
        lines.append("Not applicable: the suite carries no latent plan.")
    else:
        lines += [f"- {k}: {v}" for k, v in report.flags.items()]
    lines += ["", "## Text lints", ""] + [f"- {k}: {len(v)}" for k, v in report.lints.items()]
    lines += ["", "## Diversity", ""]
    for key, d in report.diversity.items():
        lines.append(f"- {key}: {d}")
    return "\n".join(lines) + "\n"
