"""``agreement.md``: the agreement figures as a lead annotator reads them, worst first."""

from __future__ import annotations

from typing import Any

from dimobench.review.sheets import FIELDS


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _ci(ci: Any) -> str:
    return "" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _gate(res: dict[str, Any]) -> str:
    g = res["gate"]
    if g["value"] is None:
        return (f"**Gate: not met.** Verdict kappa is undefined ({g['note']}); the gate needs kappa >= "
                f"{g['min_kappa']}.")
    word = "passed" if g["passed"] else "not met"
    return f"**Gate: {word}.** Verdict kappa {g['value']:.3f} (gate >= {g['min_kappa']})."


def _by_field(res: dict[str, Any]) -> list[str]:
    alpha = res.get("alpha")
    head = "| label | disagreement | kappa | 95% CI | raw agreement |" + (" alpha |" if alpha else "")
    lines = ["## Where people disagree most, by criterion", "", head,
             "|---|---:|---:|---|---:|" + ("---:|" if alpha else "")]
    order = sorted(FIELDS, key=lambda f: -(res["disagreement"][f] or 0))
    for f in order:
        row = (f"| {f} | {_pct(res['disagreement'][f])} | {_num(res['kappa'][f])} | "
               f"{_ci(res['kappa_ci'][f])} | {_pct(res['raw_agreement'][f])} |")
        lines.append(row + (f" {_num(alpha[f])} |" if alpha else ""))
    alpha_notes = {f"{k} (alpha)": v for k, v in res.get("alpha_notes", {}).items()}
    notes = {**res.get("kappa_notes", {}), **alpha_notes}
    if notes:
        lines += ["", *[f"- {f}: {n}" for f, n in notes.items()]]
    return lines


def _by_stratum(res: dict[str, Any]) -> list[str]:
    lines = ["## Where people disagree most, by stratum", "",
             "| stratum | items | verdict disagreement | any label disagreement | worst criterion |",
             "|---|---:|---:|---:|---|"]
    for name, s in res["by_stratum"].items():
        crit = {f: r for f, r in s["disagreement"].items() if f != "verdict" and r}
        worst = max(crit, key=lambda f: crit[f]) if crit else "-"
        worst_text = f"{worst} ({_pct(crit[worst])})" if crit else "-"
        lines.append(f"| {name} | {s['n']} | {_pct(s['disagreement']['verdict'])} | "
                     f"{_pct(s['any_disagreement'])} | {worst_text} |")
    return lines


def _confusion(res: dict[str, Any]) -> list[str]:
    lines = ["## Verdict confusion", ""]
    for pair, fields in res["confusion"].items():
        c = fields["verdict"]
        lines += [f"{pair} (rows: {c['rows']}, columns: {c['columns']})", "",
                  "| | " + " | ".join(c["labels"]) + " |", "|---|" + "---:|" * len(c["labels"])]
        lines += [f"| {label} | " + " | ".join(map(str, row)) + " |"
                  for label, row in zip(c["labels"], c["matrix"], strict=True)]
        lines.append("")
    return lines


def _items(res: dict[str, Any]) -> list[str]:
    if not res["top_disagreements"]:
        return ["## Items to settle", "", "No disagreements."]
    lines = ["## Items to settle first", "", "| qa_id | stratum | verdicts | labels in dispute |",
             "|---|---|---|---|"]
    for it in res["top_disagreements"]:
        verdicts = ", ".join(f"{n}: {v or '-'}" for n, v in it["verdicts"].items())
        lines.append(f"| {it['qa_id']} | {it['stratum']} | {verdicts} | {', '.join(it['fields'])} |")
    lines += ["", "`dimobench review adjudicate` lists every one of them with each annotator's labels."]
    return lines


def _verifier(v: dict[str, Any] | None) -> list[str]:
    if not v:
        return ["## Verifier and people", "",
                "No verifier verdicts to compare (score with `--suite` on a verified suite)."]
    lines = ["## Verifier and people", "",
             f"The verifier agrees with the people on {_pct(v['agreement'])} of {v['n']} items "
             f"({v['source']}); the paper reports 96.9% judge-human agreement.", "",
             "| annotator | items | agreement with verifier | kappa |", "|---|---:|---:|---:|"]
    for name, a in v["per_annotator"].items():
        lines.append(f"| {name} | {a['n']} | {_pct(a['agreement'])} | {_num(a['kappa'])} |")
    if v["n_without_verdict"]:
        lines += ["", f"{v['n_without_verdict']} sampled items have no verifier verdict."]
    return lines


def render_markdown(res: dict[str, Any]) -> str:
    """The report text for an ``agreement.json`` dict."""
    cal = res["calibration"]
    head = [f"# Annotator agreement: sample {res['sample_id']}", "",
            f"Annotators: {', '.join(res['annotators'])}. Items: {res['n_items']} "
            f"(calibration: {cal['n']}). Kappa: {res['kappa_method']}.", "", _gate(res), ""]
    calib = ["## Calibration items", ""]
    if cal["n"]:
        calib.append(f"On the {cal['n']} shared calibration items verdict kappa is "
                     f"{_num(cal['kappa'].get('verdict'))} and verdicts differ on "
                     f"{_pct(cal['disagreement']['verdict'])} of them.")
    else:
        calib.append("No calibration items were marked.")
    parts = [head, _by_field(res), [""], _by_stratum(res), [""], _confusion(res), _items(res), [""], calib,
             [""], _verifier(res.get("verifier"))]
    return "\n".join(line for part in parts for line in part).rstrip() + "\n"
