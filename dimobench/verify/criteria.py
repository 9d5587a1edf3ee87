"""The six verification criteria as scorers (DESIGN.md section 3, STYLE.md convention 10).

Each scorer takes an :class:`~dimobench.verify.offline.ItemView` and the suite context and returns a
:class:`~dimobench.suite.schema.CriterionResult` with ``verdict`` ACCEPT, REJECT or UNSCORED and an explanation.
A REJECT carries ``fixable=True`` when rewording the item's question or options would fix it (the item then
gets REVISE rather than REJECT). Missing information (no latent plan, no annotations) gives UNSCORED, never a
pass. Scorers are selected by name from :data:`CRITERIA`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dimobench.catalog import EXPLICIT_CHANGE, NAMES_THE_USER, content_words
from dimobench.suite.schema import CriterionResult
from dimobench.verify.offline import (
    CONFOUNDER_KINDS,
    ItemView,
    SuiteContext,
    norm,
    template_kind,
    turn_points,
)

SENTIMENT = re.compile(r"\b(lov(e|es|ed|ing)|hat(e|es|ed|ing)|likes|liked|dislik(e|es|ed)|enjoy(s|ed|ing)?|"
                       r"ador(e|es|ed)|detest(s|ed)?|can'?t stand|fan of|favou?rites?|prefer(s|red)?|keen on|"
                       r"passionate|fond of|obsessed)\b", re.IGNORECASE)
"""Explicit sentiment words: naming how the user feels gives the answer away instead of requiring memory."""

Scorer = Callable[[ItemView, SuiteContext], CriterionResult]


def ok(explanation: str) -> CriterionResult:
    """A passing criterion result with ``explanation``."""
    return CriterionResult(verdict="ACCEPT", explanation=explanation)


def reject(problems: list[str], fixable: bool = False) -> CriterionResult:
    """A failing criterion result listing ``problems``; ``fixable`` marks ones a rewrite may repair."""
    return CriterionResult(verdict="REJECT", explanation="; ".join(problems), fixable=fixable)


def unscored(why: str) -> CriterionResult:
    """A criterion result for an item the criterion could not judge, saying ``why``."""
    return CriterionResult(verdict="UNSCORED", explanation=why)


def supported(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """The gold follows from evidence turns that exist, belong to the persona, precede the question and are
    real cue turns of the asked trait showing the gold's state."""
    q = v.item
    if not q.evidence_turns:
        return reject(["no evidence turns"])
    if not v.turns:
        return reject([f"persona {q.persona_id} has no dialogue"])
    problems, annotated = [], 0
    for n in q.evidence_turns:
        t = v.turns.get(n)
        if t is None:
            problems.append(f"turn {n} does not exist for {q.persona_id}")
            continue
        if n > q.ask_turn:
            problems.append(f"turn {n} comes after the question (ask_turn {q.ask_turn})")
        a = t.annotation
        if a is None:
            continue
        annotated += 1
        if a.kind != "cue":
            problems.append(f"turn {n} is a {a.kind} turn, not a cue")
        elif a.trait_id != q.trait_id:
            problems.append(f"turn {n} is a cue of {a.trait_id}, not {q.trait_id}")
        elif v.gold_state is None:
            problems.append(f"the gold option matches no state of {q.trait_id}")
        elif a.state_id != v.gold_state:
            problems.append(f"turn {n} shows {a.state_id}, the gold shows {v.gold_state}")
    if problems:
        return reject(sorted(set(problems), key=problems.index))
    if not annotated:
        return unscored("evidence turns carry no annotation: cannot tell what they show")
    return ok(f"{len(q.evidence_turns)} cue turn(s) before turn {q.ask_turn} show {v.gold_state}")


def temporally_valid(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """The gold matches the latent plan at ask_turn for what is asked; stale_index points at an option that
    held earlier and is wrong now; the phase label is the ask turn's phase."""
    q, plan = v.item, v.plan
    if plan is None or v.trait is None:
        return unscored("no latent plan for this persona or trait")
    if v.truth is None:
        return reject([f"{q.trait_id} did not change before turn {q.ask_turn}: "
                       "no earlier state to ask about"])
    problems, fixable = [], True
    if v.gold_state != v.truth:
        fixable = False
        what = "the earlier state" if q.qa_type == "temporal" else f"the state at turn {q.ask_turn}"
        problems.append(f"gold shows {v.gold_state or 'no state'}, but {what} is {v.truth}")
    if q.stale_index is not None:
        now = plan.state_at(q.trait_id or "", q.ask_turn)
        held = {plan.state_at(q.trait_id or "", n) for n in turn_points(v)}
        if not 0 <= q.stale_index < len(q.options) or q.stale_index == q.answer_index:
            problems.append(f"stale_index {q.stale_index} is not a distractor")
        else:
            s = v.option_states[q.stale_index]
            if s is None or s not in held or s == now:
                problems.append(f"stale option {q.stale_index} shows {s or 'no state'}: not a state that "
                                f"held earlier and is wrong now ({now})")
    if q.phase is not None and q.phase != plan.phase_at(q.ask_turn):
        problems.append(f"phase is {q.phase}, the plan says {plan.phase_at(q.ask_turn)} at turn {q.ask_turn}")
    if problems:
        return reject(problems, fixable)
    return ok(f"gold {v.gold_state} is what the plan holds for this {q.qa_type} question "
              f"at turn {q.ask_turn}")


def names_state_id(text: str, state_id: str) -> bool:
    """Whether ``text`` spells the state id as words (``ready_meals`` as "ready meals" or "ready-meals")."""
    sid, low = state_id.lower(), text.lower()
    forms = {sid, sid.replace("_", " "), sid.replace("_", "-")}
    return any(re.search(rf"\b{re.escape(f)}\b", low) for f in forms)


def implicit(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """Neither question nor options use explicit sentiment or state words that give the answer away, and the
    evidence cue turns show the state through behaviour, in the user's words and in the reply to them."""
    q = v.item
    problems, fixable = [], True
    if v.trait is not None:
        words = set().union(*(content_words(s.description) for s in v.trait.states))
        leaked = content_words(q.question) & words
        if leaked:
            problems.append(f"question uses state words {sorted(leaked)}")
        texts = [("question", q.question)] + [(f"option {i}", o) for i, o in enumerate(q.options)]
        for s in v.trait.states:
            for where, text in texts:
                if (where == "question" or "_" in s.state_id) and names_state_id(text, s.state_id):
                    problems.append(f"{where} names the state id {s.state_id}")
    for where, text in [("question", q.question)] + [(f"option {i}", o) for i, o in enumerate(q.options)]:
        m = SENTIMENT.search(text)
        if m:
            problems.append(f"{where} uses the sentiment word {m.group(0)!r}")
    for n in q.evidence_turns:
        t = v.turns.get(n)
        if t is None or t.annotation is None or t.annotation.kind != "cue":
            continue
        said = f" {t.user.lower()} "
        explicit = [w.strip() for w in EXPLICIT_CHANGE if w in said]
        if SENTIMENT.search(t.user) and re.search(r"\bi\b", t.user, re.IGNORECASE):
            explicit.append(SENTIMENT.search(t.user).group(0))  # type: ignore[union-attr]
        if v.trait is not None and t.annotation.state_id:
            desc = next((s.description for s in v.trait.states if s.state_id == t.annotation.state_id), "")
            dw = content_words(desc)
            if len(dw) >= 3 and dw <= content_words(t.user):
                explicit.append("the state's description")
        if explicit:
            fixable = False
            problems.append(f"cue turn {n} states it outright ({', '.join(explicit)})")
        summed = NAMES_THE_USER.search(t.assistant)
        if summed:  # a system observes the reply too
            fixable = False
            problems.append(f"the reply to cue turn {n} sums up the user ({summed.group(0)})")
    if problems:
        return reject(sorted(set(problems), key=problems.index), fixable)
    return ok("no state words, state ids or sentiment words; cues are behavioural")


def unambiguous(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """Exactly one option is right, distractors are plausible and distinct, and nothing but memory (length,
    position, wording overlap with the question) points at the gold."""
    q, th = v.item, ctx.thresholds
    if len(q.options) < 2:
        return unscored("fewer than two options: not a multiple-choice item")
    gi = v.gold_index
    if gi is None:
        return reject([f"answer_index {q.answer_index} is not an option"])
    problems = []
    if norm(q.answer) != norm(q.options[gi]):
        problems.append("answer text differs from the option at answer_index")
    target = v.truth or v.gold_state
    right = [i for i, s in enumerate(v.option_states) if s is not None and s == target]
    same_gold = [i for i, s in enumerate(v.option_states) if i != gi and s is not None and s == v.gold_state]
    if len(right) > 1 or same_gold:
        problems.append(f"options {sorted(set(right + same_gold + [gi]))} all show {target or v.gold_state}")
    emb = ctx.embedder
    for i in range(len(q.options)):
        for j in range(i + 1, len(q.options)):
            a, b = q.options[i], q.options[j]
            if norm(a) == norm(b) or emb.cos(a, b) >= th.near_duplicate:
                problems.append(f"options {i} and {j} are near-duplicates")
    for i, opt in enumerate(q.options):
        if i == gi or v.option_states[i] is not None or v.option_pools[i] is not None:
            continue
        refs = [q.question] + ([s.description for s in v.trait.states] if v.trait else [])
        if not norm(opt) or max(emb.cos(opt, r) for r in refs) < th.plausible:
            problems.append(f"option {i} is off-topic (implausible distractor)")
    lengths = [len(o) for o in q.options]
    others = [n for i, n in enumerate(lengths) if i != gi]
    if lengths[gi] >= th.length_ratio * max(others) and lengths[gi] - max(others) >= 15:
        problems.append(f"gold is much longer than every other option ({lengths[gi]} vs {max(others)} chars)")
    bias = ctx.bias
    if bias.get("favoured_position") == gi:
        problems.append(f"position {gi} holds the gold far more often than chance across the suite")
    if bias.get("longest_predictive") and lengths[gi] == max(lengths):
        problems.append("the longest option is the gold far more often than chance across the suite")
    sims = [emb.cos(q.question, o) for o in q.options]
    best = max(range(len(sims)), key=sims.__getitem__)
    runner_up = max(s for i, s in enumerate(sims) if i != best)
    if best == gi and sims[best] - runner_up >= th.no_context_margin:
        problems.append(f"answerable without context: the gold is by far the closest option to the question "
                        f"({sims[best]:.2f} vs {runner_up:.2f})")
    if problems:
        return reject(problems, fixable=True)
    return ok("one right option among plausible, distinct distractors; no length, position or wording cue")


def type_faithful(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """The item needs the reasoning its qa_type names: stability items target a trait that never drifts, after
    a confounder suggested otherwise; temporal items span a change; question and options fit the type."""
    q, plan = v.item, v.plan
    if q.qa_type is None:
        return unscored("no qa_type")
    if plan is None or v.trait is None:
        return unscored("no latent plan for this persona or trait")
    tid = v.trait.trait_id
    problems, fixable = [], True
    if q.qa_type == "stability":
        drifts = [d for d in plan.schedule.drifts if d.trait_id == tid]
        if drifts:
            fixable = False
            first = drifts[0]
            problems.append(f"{tid} drifts ({first.drift_id}, change at turn {first.change_point_turn}): "
                            "not a stability item")
        truth = plan.state_at(tid, q.ask_turn)
        if not any(t.annotation and t.annotation.kind != "chatter"
                   and t.annotation.state_id not in (None, truth) for t in v.confounders()):
            fixable = False
            problems.append(f"no confounder before turn {q.ask_turn} suggested a change: "
                            "nothing to stay stable against")
    elif q.qa_type == "temporal":
        if plan.last_change(tid, q.ask_turn) is None:
            fixable = False
            problems.append(f"{tid} did not change before turn {q.ask_turn}: the item spans no change")
    kind = template_kind(v, ctx)
    want = {"current_state": {"current"}, "inference": {"inference"}, "temporal": {"past"},
            "stability": {"current", "inference"}}[q.qa_type]
    if kind is not None and kind not in want:
        problems.append(f"the question is a {kind} question, not a {q.qa_type} one")
    pool = v.option_pools[v.gold_index] if v.gold_index is not None else None
    pools = {"inference": "recommendations", "current_state": "answers", "temporal": "answers"}
    want_pool = pools.get(q.qa_type)
    if pool is not None and want_pool is not None and pool != want_pool:
        problems.append(f"the gold is a {pool[:-1]}, not what a {q.qa_type} question asks for")
    if kind == "past" and q.qa_type == "stability":
        fixable = False
    if problems:
        return reject(problems, fixable)
    return ok(f"a {q.qa_type} item on {tid} as the plan allows at turn {q.ask_turn}")


def confounder_robust(v: ItemView, ctx: SuiteContext) -> CriterionResult:
    """No evidence turn is a confounder, the gold is not reachable from confounder turns alone, and
    confounder_index points at a state a confounder really suggested."""
    q = v.item
    if not v.turns or not any(t.annotation for t in v.turns.values()):
        return unscored("the dialogue carries no annotations: cannot tell confounders from cues")
    problems, fixable = [], False
    for n in q.evidence_turns:
        t = v.turns.get(n)
        if t is not None and t.annotation is not None and t.annotation.kind in CONFOUNDER_KINDS:
            who = "someone else" if t.annotation.kind == "entity" else (
                "the user's past" if t.annotation.kind == "decoy" else "not about the user")
            problems.append(f"evidence turn {n} is a {t.annotation.kind} confounder ({who})")
    shown = {t.annotation.state_id: t.turn for t in v.confounders() if t.annotation and t.annotation.state_id}
    gold = v.gold_state
    if gold is not None and gold in shown:
        start, end = _window(v)
        if gold != v.truth:
            problems.append(f"the gold {gold} is what a confounder suggested (turn {shown[gold]}), "
                            "not the truth")
        elif not v.cues(gold, start, end):
            problems.append(f"only confounders (turn {shown[gold]}) show {gold} before the question")
    ci = q.confounder_index
    if ci is not None:
        if not 0 <= ci < len(q.options) or ci == q.answer_index:
            problems.append(f"confounder_index {ci} is not a distractor")
        elif v.option_states[ci] not in shown:
            fixable = not problems
            problems.append(f"confounder option {ci} shows {v.option_states[ci] or 'no state'}, which no "
                            "confounder before the question suggested")
    if problems:
        return reject(problems, fixable)
    return ok("evidence is the user's own cues; no confounder leads to the gold")


def _window(v: ItemView) -> tuple[int, int]:
    """Turns ``(start, end]`` in which real cues for the gold should lie."""
    q, plan = v.item, v.plan
    if plan is None:
        return 0, q.ask_turn
    change = plan.last_change(q.trait_id or "", q.ask_turn)
    if q.qa_type == "temporal" and change is not None:
        before = plan.last_change(q.trait_id or "", change.change_point_turn)
        return (before.change_point_turn if before else 0), change.change_point_turn
    return (change.change_point_turn if change else 0), q.ask_turn


CRITERIA: dict[str, Scorer] = {
    "supported": supported,
    "temporally_valid": temporally_valid,
    "implicit": implicit,
    "unambiguous": unambiguous,
    "type_faithful": type_faithful,
    "confounder_robust": confounder_robust,
}
"""The six criteria by name, in the order DESIGN.md lists them."""
