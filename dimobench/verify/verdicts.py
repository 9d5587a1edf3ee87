"""Stage 6: judge every QA item of a suite, write ``verdicts.jsonl`` and update the manifest.

``verify_suite`` always re-judges the current ``qa.jsonl``: a hand-edited suite (stale manifest hashes or
counts, an old ``verdicts.jsonl``) gives warnings, never a refusal. Only unreadable records stop the run
(``InputError`` with file and line).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from dimobench.suite.io import atomic_write_text, sha256_file, write_jsonl
from dimobench.suite.load import Suite, counts, load_suite
from dimobench.suite.schema import CriterionResult, QAItem, Turn, Verdict, VerdictRecord, VerifierInfo
from dimobench.verify.criteria import CRITERIA, reject
from dimobench.verify.embed import Embedder
from dimobench.verify.offline import THRESHOLDS, SuiteContext, analyse, build_context

VERIFIER_VERSION = "offline-1"

PLAN_CHECKS = ("auto", "on", "off")
"""``--plan-checks``: reject the per-item flags of :mod:`dimobench.suite.flags`; ``auto`` does so for suites made
with ``--qa-rules valid`` (whose generator promises none), and leaves the verdicts of ``v1`` suites as earlier
versions gave them (every v1 item offers a never-gold distractor, so ``on`` rejects all of them)."""

FLAG_CRITERION = {
    "gold_mismatch": "temporally_valid", "gold_ungrounded": "supported", "never_gold_option": "implicit",
    "off_topic_option": "unambiguous", "form_mismatch": "type_faithful", "second_supported_option": "unambiguous",
    "said_elsewhere_option": "unambiguous",
    "transition_contradicted": "temporally_valid", "temporal_ambiguous": "unambiguous",
}
"""The criterion whose kind each plan flag is: a flagged item's verdict on it becomes a (not fixable) REJECT."""


class VerifyResult(BaseModel):
    """What a verification run found (``dimobench.api.verify_suite`` returns it)."""

    path: Path
    """The suite folder."""
    verdicts: list[VerdictRecord]
    """One record per QA item, in ``qa.jsonl`` order."""
    warnings: list[str] = []
    """Problems that did not stop the run (stale manifest hashes, evidence after the question, ...)."""
    embedder: str = ""
    """Embedding model of the offline checks (empty for an LLM verifier)."""

    def summary(self) -> dict[str, object]:
        """ACCEPT rates overall, per criterion, per qa_type and per persona (see :func:`summarise`)."""
        suite = load_suite(self.path) if self.path.exists() else None
        return summarise(self.verdicts, suite.qa if suite else [])


def item_verdict(results: dict[str, CriterionResult]) -> Verdict:
    """ACCEPT if every criterion accepts; REJECT if any rejection is not fixable by rewording; else REVISE
    (fixable rejections, or criteria that could not be scored and need another look)."""
    verdicts = [r.verdict for r in results.values()]
    if all(v == "ACCEPT" for v in verdicts):
        return "ACCEPT"
    if any(r.verdict == "REJECT" and not getattr(r, "fixable", False) for r in results.values()):
        return "REJECT"
    return "REVISE"


def verifier_info(embedder: Embedder, only: list[str], plan_checks: bool = False) -> VerifierInfo:
    """Provider, the embedding model that ran, and a hash of the rules and thresholds in force."""
    rules: dict[str, object] = {"version": VERIFIER_VERSION, "criteria": only,
                                "thresholds": THRESHOLDS[embedder.name].__dict__}
    if plan_checks:  # only then, so the hashes of earlier verifications stay what they were
        rules["plan_checks"] = FLAG_CRITERION
    spec = json.dumps(rules, sort_keys=True)
    return VerifierInfo(provider="offline", model=embedder.name,
                        prompt_hash=hashlib.sha256(spec.encode()).hexdigest()[:16])


def judge(item: QAItem, ctx: SuiteContext, only: list[str], info: VerifierInfo,
          flags: Sequence[str] = ()) -> VerdictRecord:
    """All selected criteria on one item; a scorer that fails gives UNSCORED, never a pass. ``flags`` (plan
    flags of this item) turn their criterion into a REJECT that names them."""
    view = analyse(item, ctx)
    results: dict[str, CriterionResult] = {}
    for name in only:
        try:
            results[name] = CRITERIA[name](view, ctx)
        except Exception as exc:  # noqa: BLE001 - one broken item must not stop the run or pass silently
            results[name] = CriterionResult(verdict="UNSCORED", explanation=f"scorer failed: {exc!r}")
        raised = [f for f in flags if FLAG_CRITERION[f] == name]
        if raised:
            said = results[name].explanation if results[name].verdict != "ACCEPT" else ""
            results[name] = reject([*(f"plan check: {f}" for f in raised), *([said] if said else [])])
    return VerdictRecord(qa_id=item.qa_id, verdict=item_verdict(results),
                         criteria=results, verifier=info)


def check_criteria(only: list[str] | None) -> list[str]:
    """The criteria to run, in canonical order; unknown names raise ``ConfigError``."""
    from dimobench.errors import ConfigError

    if not only:
        return list(CRITERIA)
    unknown = [c for c in only if c not in CRITERIA]
    if unknown:
        raise ConfigError(f"unknown criterion {', '.join(unknown)} (choose from {', '.join(CRITERIA)})")
    return [c for c in CRITERIA if c in only]


def plan_checks_apply(suite: Suite, plan_checks: str = "auto") -> bool:
    """Whether ``plan_checks`` (see :data:`PLAN_CHECKS`) rejects the plan flags of ``suite``."""
    if plan_checks not in PLAN_CHECKS:
        from dimobench.errors import ConfigError

        raise ConfigError(f"--plan-checks {plan_checks!r}: choose {', '.join(PLAN_CHECKS)}")
    if plan_checks == "auto":
        return suite.manifest.config.get("qa_rules") == "valid"
    return plan_checks == "on"


def judge_suite(suite: Suite, only: list[str] | None = None, embedder: Embedder | None = None,
                plan_checks: str = "auto") -> tuple[list[VerdictRecord], SuiteContext]:
    """Judge every item of a loaded suite without writing anything."""
    names = check_criteria(only)
    ctx = build_context(suite, embedder)
    flagged: dict[str, list[str]] = {}
    planned = plan_checks_apply(suite, plan_checks)
    if planned:
        from dimobench.suite.flags import suite_flags

        flagged = suite_flags(suite, ctx.catalog) or {}
    info = verifier_info(ctx.embedder, names, planned)
    return [judge(q, ctx, names, info, flagged.get(q.qa_id, [])) for q in suite.qa], ctx


def verify_offline(path: str | Path, only: list[str] | None = None, embedder: Embedder | None = None,
                   write: bool = True, plan_checks: str = "auto") -> VerifyResult:
    """Verify the suite at ``path`` with the offline verifier (see :func:`dimobench.verify.verify_suite`)."""
    root = Path(path)
    suite = load_suite(root)
    warnings = stale_warnings(suite)
    verdicts, ctx = judge_suite(suite, only, embedder, plan_checks)
    for q in suite.qa:
        late = [n for n in q.evidence_turns if n > q.ask_turn]
        if late:
            warnings.append(f"{q.qa_id}: evidence turn(s) {late} come after the question (turn {q.ask_turn})")
    if write:
        write_results(root, suite, verdicts, "offline")
    return VerifyResult(path=root, verdicts=verdicts, warnings=warnings, embedder=ctx.embedder.name)


def stale_warnings(suite: Suite) -> list[str]:
    """Where the suite on disk no longer matches its manifest (hand edits): reported, then re-judged."""
    out = []
    for name, digest in suite.manifest.files.items():
        file = suite.path / name
        if name != "verdicts.jsonl" and file.is_file() and sha256_file(file) != digest:
            out.append(f"{name} changed since the manifest was written (hash differs); "
                       "re-judging it as it is")
    if suite.manifest.counts.get("qa") not in (None, len(suite.qa)):
        stated = suite.manifest.counts.get("qa")
        out.append(f"manifest counts {stated} questions, qa.jsonl has {len(suite.qa)}")
    if (suite.path / "verdicts.jsonl").is_file():
        out.append("an earlier verdicts.jsonl is replaced")
    return out


LLM_ONLY = {"config": ("verifier_prompts",), "counts": ("faithfulness",)}
"""Manifest entries only an LLM verification writes; any other run drops stale ones."""


def write_results(root: Path, suite: Suite, verdicts: list[VerdictRecord], verifier: str,
                  qa: list[QAItem] | None = None, dialogues: list[Turn] | None = None,
                  extra: dict[str, dict[str, object]] | None = None) -> None:
    """Write ``verdicts.jsonl`` (and ``qa.jsonl``, ``dialogues.jsonl`` when given), then the manifest with
    fresh hashes and counts; ``extra`` adds ``config`` and ``counts`` entries (see :data:`LLM_ONLY`)."""
    if qa is not None:
        write_jsonl(root / "qa.jsonl", qa)
    if dialogues is not None:
        write_jsonl(root / "dialogues.jsonl", dialogues)
    write_jsonl(root / "verdicts.jsonl", verdicts)
    manifest_path = root / "manifest.json"
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    config = data.setdefault("config", {})
    backends = config.get("backends") if isinstance(config.get("backends"), dict) else {}
    config["backends"] = {**backends, "verifier": verifier}
    new_counts = {**data.get("counts", {}),
                  **counts(suite.personas, dialogues or suite.dialogues, qa or suite.qa)}
    by = Counter(v.verdict for v in verdicts)
    new_counts["verdicts"] = {k: by.get(k, 0) for k in ("ACCEPT", "REVISE", "REJECT")}
    for section, target in (("config", config), ("counts", new_counts)):  # last, so reruns keep key order
        for key in LLM_ONLY[section]:
            target.pop(key, None)
        target.update((extra or {}).get(section, {}))
    data["counts"] = new_counts
    files = dict(data.get("files", {}))
    for name in (*files, "qa.jsonl", "verdicts.jsonl"):
        if (root / name).is_file():
            files[name] = sha256_file(root / name)
    data["files"] = files
    atomic_write_text(manifest_path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    _refresh_card(root, data)


def _refresh_card(root: Path, data: dict[str, object]) -> None:
    from dimobench.suite.card import render_card
    from dimobench.suite.schema import Manifest

    if (root / "README.md").is_file():
        atomic_write_text(root / "README.md", render_card(Manifest.model_validate(data)))


def summarise(verdicts: list[VerdictRecord], qa: list[QAItem]) -> dict[str, object]:
    """ACCEPT shares: overall, per criterion (its own verdict), per qa_type and per persona (item
    verdicts)."""
    by_id = {q.qa_id: q for q in qa}

    def rate(vs: list[str]) -> dict[str, object]:
        return {"n": len(vs), "accept": sum(v == "ACCEPT" for v in vs),
                "accept_rate": round(sum(v == "ACCEPT" for v in vs) / len(vs), 4) if vs else None}

    groups: dict[str, dict[str, list[str]]] = {"criterion": {}, "qa_type": {}, "persona": {}}
    for v in verdicts:
        for name, r in v.criteria.items():
            groups["criterion"].setdefault(name, []).append(r.verdict)
        q = by_id.get(v.qa_id)
        if q is not None:
            groups["qa_type"].setdefault(str(q.qa_type), []).append(v.verdict)
            groups["persona"].setdefault(q.persona_id, []).append(v.verdict)
    verdict_counts = Counter(v.verdict for v in verdicts)
    return {"overall": rate([v.verdict for v in verdicts]), "verdicts": dict(verdict_counts),
            **{g: {k: rate(vs) for k, vs in sorted(d.items())} for g, d in groups.items()}}
