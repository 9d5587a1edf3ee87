"""``report.html``: one self-contained page per evaluation (or per comparison of two) that opens from disk.

The page holds its data as JSON in a ``<script type="application/json">`` block and draws everything with
inline JavaScript: no server, no network. Every text of the suite (questions, options, recalled items) is
stored once in a table of texts that the rest refers to by index, because the same turn is recalled by many
systems for many questions; that, and scores rounded to three places, keeps the XL suite with five systems
a few megabytes. The tables are those of ``report.md``, parsed back from :func:`publish.markdown` so the two
files cannot disagree on a figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from dimobench.errors import InputError
from dimobench.strictjson import dumps

FORMAT = "dimobench-report-html"
FORMAT_VERSION = 1
SCORE_DIGITS = 3
EXTRA_FIELDS = ("answer_text", "reason", "error")
"""String fields an LLM answerer adds to an answer row; shown in the drill-down."""


@dataclass
class RunView:
    """One evaluation as the page shows it: its report, its answer rows and its suites' change points."""

    report: dict[str, Any]
    """The ``report.json`` structure."""
    answers: dict[str, list[dict[str, Any]]]
    """System -> its rows of ``answers-<system>.jsonl``."""
    change_points: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Suite key -> ``[{persona_id, trait_id, turn}]`` (empty when the suite could not be read)."""
    label: str | None = None
    """Run label in a comparison (``A``, ``B``); None for a single evaluation."""
    source: str = ""
    """Where the run came from (its folder), shown in the page header of a comparison."""


class _Texts:
    """Every distinct string once; callers keep its index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, text: Any) -> int:
        s = "" if text is None else str(text)
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def _key(run: RunView, system: str) -> str:
    return system if run.label is None else f"{run.label}:{system}"


def markdown_tables(md: str) -> list[dict[str, Any]]:
    """The tables of a ``report.md`` text: ``[{title, note, columns, rows}]``, up to its configuration.

    The first table (before any ``##`` heading) is titled ``Headline``; a paragraph between a heading and its
    table, or after a table, becomes that section's ``note``.
    """
    tables: list[dict[str, Any]] = []
    title, notes, rows = "Headline", list[str](), list[list[str]]()

    def flush() -> None:
        if rows:
            tables.append({"title": title, "note": " ".join(notes), "columns": rows[0], "rows": rows[1:]})
        elif notes and tables:
            tables[-1]["note"] = " ".join(filter(None, [tables[-1]["note"], *notes]))

    for line in md.splitlines():
        if line.startswith("## "):
            flush()
            title, notes, rows = line[3:].strip(), [], []
            if title == "Configuration":
                return tables
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} and c for c in cells):  # the |---| separator row
                rows.append(cells)
        elif line.strip() and not line.startswith("# ") and (rows or title != "Headline"):
            notes.append(line.strip())  # the headline's intro (before its table) is the page's own paragraph
    flush()
    return tables


def _intro(md: str) -> str:
    """The paragraph under ``report.md``'s title (suites, k, answerer, bootstrap)."""
    lines = md.splitlines()
    return next((x for x in lines[1:] if x.strip() and not x.startswith(("|", "#"))), "")


def _comparison_table(comparison: Mapping[str, Any]) -> dict[str, Any]:
    def pct(x: Any, sign: bool = False) -> str:
        return "-" if x is None else f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"

    rows = []
    for name, r in comparison.get("systems", {}).items():
        ci = f" [{pct(r.get('lo'), True)}, {pct(r.get('hi'), True)}]" if r.get("lo") is not None else ""
        rows.append([name, pct(r.get("a")), pct(r.get("b")), pct(r.get("diff"), True) + ci, str(r.get("n", 0))])
    only = [f"only in {k[-1].upper()}: {', '.join(comparison[k])}" for k in ("only_in_a", "only_in_b")
            if comparison.get(k)]
    return {"title": "B - A on shared questions (paired bootstrap 95% interval)", "note": "; ".join(only),
            "columns": ["system", "A", "B", "diff", "n"], "rows": rows}


def _tables(runs: Sequence[RunView], comparison: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], str]:
    from dimobench.evaluate.publish import markdown

    merged = {"systems": {_key(r, s): f for r in runs for s, f in r.report.get("systems", {}).items()},
              "config": runs[0].report.get("config", {})}
    md = markdown(merged)
    tables = markdown_tables(md)
    if comparison is not None:
        tables.insert(0, _comparison_table(comparison))
    return tables, _intro(md) if comparison is None else ""


def _curves(runs: Sequence[RunView]) -> dict[str, Any]:
    """Suite -> the window accuracy of every system (``[mid turn, accuracy, n]``), its length and change points."""
    out: dict[str, Any] = {}
    for run in runs:
        for suite, systems in run.report.get("suites", {}).items():
            entry = out.setdefault(suite, {"turns": 0, "change_points": [], "curves": {}})
            for name, fig in systems.items():
                wins = fig.get("windows") or []
                entry["turns"] = max([entry["turns"], *(int(w["end"]) for w in wins)])
                entry["curves"][_key(run, name)] = [[(w["start"] + w["end"]) / 2, w["accuracy"], w.get("n", 0)]
                                                    for w in wins if w.get("accuracy") is not None]
            seen = {(c["persona_id"], c["trait_id"], c["turn"]) for c in entry["change_points"]}
            for cp in run.change_points.get(suite, []):
                if (cp["persona_id"], cp["trait_id"], cp["turn"]) not in seen:
                    seen.add((cp["persona_id"], cp["trait_id"], cp["turn"]))
                    entry["change_points"].append({k: cp[k] for k in ("persona_id", "trait_id", "turn")})
    return out


def _question(row: Mapping[str, Any], texts: _Texts) -> dict[str, Any]:
    return {"id": row["qa_id"], "s": row["suite"], "p": row.get("persona_id"), "t": row.get("ask_turn"),
            "ty": row.get("qa_type"), "ph": row.get("phase"), "tr": row.get("trait_id"),
            "q": texts(row.get("question")), "o": [texts(o) for o in row.get("options") or []],
            "g": row.get("answer_index"), "st": row.get("stale_index"), "cf": row.get("confounder_index"),
            "ev": list(row.get("evidence_turns") or [])}


def _answer(row: Mapping[str, Any], texts: _Texts) -> list[Any]:
    """``[chosen, correct (1/0/None), [text, score, source turns, ...], extras]`` of one answer row."""
    recalled: list[Any] = []
    for it in row.get("recalled") or []:
        score = it.get("score")
        recalled += [texts(it.get("text")), None if score is None else round(float(score), SCORE_DIGITS),
                     list(it.get("source_turns") or [])]
    correct = row.get("correct")
    extra = {k: texts(row[k]) for k in EXTRA_FIELDS if isinstance(row.get(k), str) and row[k]}
    out = [row.get("chosen"), None if correct is None else int(bool(correct)), recalled]
    return out + [extra] if extra else out


def page_data(runs: Sequence[RunView], title: str, comparison: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON the page embeds: systems, curves, tables, questions and every system's answers.

    ``answers[system][i]`` belongs to ``questions[i]`` (None where that system did not answer it); the
    ``o``, ``q`` and recalled-text fields are indices into ``texts``.
    """
    texts = _Texts()
    systems = [{"key": _key(r, s), "name": s, "run": r.label} for r in runs for s in r.report.get("systems", {})]
    order: dict[tuple[str, str], int] = {}
    questions: list[dict[str, Any]] = []
    answers: dict[str, list[Any]] = {}
    for run in runs:
        for system, rows in run.answers.items():
            col = answers.setdefault(_key(run, system), [])
            for row in rows:
                qk = (str(row["suite"]), str(row["qa_id"]))
                if qk not in order:
                    order[qk] = len(questions)
                    questions.append(_question(row, texts))
                i = order[qk]
                col.extend([None] * (i + 1 - len(col)))
                col[i] = _answer(row, texts)
    for col in answers.values():
        col.extend([None] * (len(questions) - len(col)))
    tables, intro = _tables(runs, comparison)
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "title": title, "intro": intro,
            "runs": [{"label": r.label, "source": r.source, "config": r.report.get("config", {})} for r in runs],
            "systems": systems, "suites": _curves(runs),
            "tables": tables, "texts": texts.items, "questions": questions, "answers": answers}


def script_json(data: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` are escaped as
    ``\\u003c`` etc., so no suite string can close the element or open a comment, and the page still
    ``JSON.parse``\\ s the element's text back to the same value."""
    text = dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: Mapping[str, Any]) -> str:
    """The page: the packaged template with its stylesheet, script and ``data`` inlined."""
    from jinja2 import Environment
    from markupsafe import Markup

    web = resources.files("dimobench.evaluate") / "web"
    env = Environment(autoescape=True, keep_trailing_newline=True)
    template = env.from_string(web.joinpath("report.html.j2").read_text(encoding="utf-8"))
    # the stylesheet and script are our own package files; only ``data`` carries suite text, escaped above
    return template.render(title=data["title"], css=Markup(web.joinpath("report.css").read_text(encoding="utf-8")),
                           js=Markup(web.joinpath("report.js").read_text(encoding="utf-8")),
                           data=Markup(script_json(data)))


def write_html(out: Path, runs: Sequence[RunView], title: str, comparison: Mapping[str, Any] | None = None) -> Path:
    """Write ``out/report.html`` (atomically) and return its path."""
    from dimobench.suite.io import atomic_write_text

    path = Path(out) / "report.html"
    atomic_write_text(path, render(page_data(runs, title, comparison)))
    return path


def load_run(report_path: str | Path, label: str | None = None) -> RunView:
    """A finished evaluation read back from its ``report.json`` (or folder) and ``answers-*.jsonl`` files.

    Change points come from the suites at ``config.suite_paths`` when they can still be read; a moved
    suite only leaves the chart without its change-point marks. Malformed files are an ``InputError``.
    """
    from dimobench.evaluate.saved import read_saved

    report, answers = read_saved(report_path)
    path = Path(report_path)
    path = path / "report.json" if path.is_dir() else path
    cfg = report["config"]
    return RunView(report, answers, _suite_change_points(cfg.get("suites") or [], cfg.get("suite_paths") or []),
                   label, str(path.parent))


def _suite_change_points(keys: Iterable[str], paths: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    from dimobench.evaluate.report import change_points
    from dimobench.suite.load import load_suite

    out: dict[str, list[dict[str, Any]]] = {}
    for key, p in zip(keys, paths):
        try:
            out[str(key)] = change_points(load_suite(p))
        except (InputError, OSError, ValueError):
            continue  # the suite moved or changed since the run: the chart goes without marks
    return out

