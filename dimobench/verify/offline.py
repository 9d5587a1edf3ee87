"""What the offline verifier knows about a suite before it judges any item.

:class:`SuiteContext` holds the latent plans, turn lookups, the catalog's option pools and the embeddings of
every distinct text; :func:`analyse` turns one QA item into an :class:`ItemView`: the state each option shows
(catalog lookup first, embedding similarity to the trait's state descriptions second), the state the plan says
the gold must show, and the confounder turns seen so far. The six criteria only read these views.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from dimobench.catalog import Catalog, TraitEntry, suite_catalog
from dimobench.suite.load import Suite
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import QAItem, Trait, Turn
from dimobench.verify.embed import HASHING, Embedder, shared_embedder

CONFOUNDER_KINDS = ("entity", "decoy", "chatter")


@dataclass(frozen=True)
class Thresholds:
    """Similarity cut-offs; hashing vectors are less smooth than MiniLM's, so they get their own."""

    map_min: float
    """Least cosine for an option outside the catalog to be read as showing a state."""
    map_margin: float
    """Least lead of the best state over the second for that reading."""
    near_duplicate: float
    """Cosine at or above which two options count as the same answer."""
    plausible: float
    """Least cosine of a distractor to the trait's texts or the question to count as on-topic."""
    no_context_margin: float
    """Lead of the gold over every other option in question-option similarity that flags a context-free
    item."""
    length_ratio: float = 1.6
    """Gold this many times longer than the longest other option (and 15+ characters more) is a giveaway."""


THRESHOLDS = {  # the hashing row was set for a 512-wide trigram hashing; re-checked for today's 1,024-wide one in
    # session 23: verdicts identical on seeds 2351 (catalog-v3, valid rules) and 2381 (v1), calibrate 826/826 and
    # 600/600 caught with no clean item rejected
    "all-MiniLM-L6-v2": Thresholds(map_min=0.45, map_margin=0.04, near_duplicate=0.9, plausible=0.2,
                                   no_context_margin=0.25),
    HASHING: Thresholds(map_min=0.3, map_margin=0.05, near_duplicate=0.85, plausible=0.05,
                        no_context_margin=0.3),
}


def norm(text: str) -> str:
    """Lower case, punctuation dropped, spaces collapsed: the key for exact option matching."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


@dataclass
class SuiteContext:
    """Everything the criteria need besides the item itself."""

    suite: Suite
    catalog: Catalog
    embedder: Embedder
    plans: dict[str, LatentPlan]
    turns: dict[str, dict[int, Turn]]
    pools: dict[str, dict[str, tuple[str | None, str]]]
    """trait_id -> normalised option text -> (state_id or None for a trait distractor, pool name)."""
    bias: dict[str, object] = field(default_factory=dict)
    """Suite-level position and length bias of the gold (see :func:`suite_bias`)."""

    @property
    def thresholds(self) -> Thresholds:
        """The similarity cut-offs tuned for this embedder (the hashing ones for an unknown embedder)."""
        return THRESHOLDS.get(self.embedder.name, THRESHOLDS[HASHING])

    def entry(self, trait_id: str | None) -> TraitEntry | None:
        """The catalog entry of ``trait_id``, or None when there is no id or the catalog lacks it (imports)."""
        try:
            return self.catalog.trait(trait_id) if trait_id else None
        except KeyError:
            return None


@dataclass
class ItemView:
    """One item as the criteria see it."""

    item: QAItem
    plan: LatentPlan | None
    trait: Trait | None
    entry: TraitEntry | None
    truth: str | None
    """The state the gold must show per the plan (None: no plan, or a temporal item with no earlier
    change)."""
    option_states: list[str | None]
    option_pools: list[str | None]
    turns: dict[int, Turn]

    @property
    def gold_index(self) -> int | None:
        """The gold option's index, or None when the item has none or it is out of range."""
        i = self.item.answer_index
        return i if i is not None and 0 <= i < len(self.item.options) else None

    @property
    def gold_state(self) -> str | None:
        """The state the gold option shows, or None when there is no gold or it shows no known state."""
        i = self.gold_index
        return self.option_states[i] if i is not None else None

    def confounders(self, upto: int | None = None) -> list[Turn]:
        """This trait's confounder turns up to ``upto`` (default: the ask turn)."""
        end = self.item.ask_turn if upto is None else upto
        return [t for n, t in sorted(self.turns.items()) if n <= end and t.annotation is not None
                and t.annotation.kind in CONFOUNDER_KINDS and t.annotation.trait_id == self.item.trait_id]

    def cues(self, state: str | None, start: int, end: int) -> list[int]:
        """Real cue turns of this trait showing ``state`` in ``(start, end]``."""
        return [n for n, t in self.turns.items() if start < n <= end and t.annotation is not None
                and t.annotation.kind == "cue" and t.annotation.trait_id == self.item.trait_id
                and t.annotation.state_id == state]


def build_context(suite: Suite, embedder: Embedder | None = None) -> SuiteContext:
    """Index the suite and batch-encode every distinct text it and its catalog traits hold."""
    catalog = suite_catalog(suite.manifest.config)
    schedules = {s.persona_id: s for s in suite.schedules}
    plans = {p.persona_id: LatentPlan(p, schedules[p.persona_id]) for p in suite.personas
             if p.persona_id in schedules}
    turns: dict[str, dict[int, Turn]] = {}
    for t in suite.dialogues:
        turns.setdefault(t.persona_id, {})[t.turn] = t
    pools: dict[str, dict[str, tuple[str | None, str]]] = {}
    for tp in catalog.topics:
        for tr in tp.traits:
            pool = pools.setdefault(tr.trait_id, {})
            for text in tr.distractor_answers:
                pool[norm(text)] = (None, "answers")
            for text in tr.distractor_recommendations:
                pool[norm(text)] = (None, "recommendations")
            for st in tr.states:
                for text in st.answers:
                    pool[norm(text)] = (st.state_id, "answers")
                for text in st.recommendations:
                    pool[norm(text)] = (st.state_id, "recommendations")
    ctx = SuiteContext(suite, catalog, embedder or shared_embedder(), plans, turns, pools)
    texts = [s.description for p in suite.personas for tr in p.traits for s in tr.states]
    for q in suite.qa:
        texts.append(q.question)
        texts.extend(q.options)
    unknown = {q.trait_id for q in suite.qa
               if any(norm(o) not in pools.get(q.trait_id or "", {}) for o in q.options)}
    for trait_id in sorted(t for t in unknown if t):  # options outside the catalog are mapped by similarity
        entry = ctx.entry(trait_id)
        if entry is not None:
            texts += entry.distractor_answers + entry.distractor_recommendations
            texts += [x for st in entry.states for x in st.answers + st.recommendations]
    ctx.embedder.encode(texts)
    ctx.bias = suite_bias(suite.qa)
    return ctx


def analyse(item: QAItem, ctx: SuiteContext) -> ItemView:
    """Map an item onto the latent plan and the catalog."""
    plan = ctx.plans.get(item.persona_id)
    trait = None
    if plan is not None and item.trait_id:
        trait = next((t for t in plan.persona.traits if t.trait_id == item.trait_id), None)
    entry = ctx.entry(item.trait_id)
    truth = None
    if plan is not None and trait is not None:
        if item.qa_type == "temporal":
            change = plan.last_change(trait.trait_id, item.ask_turn)
            truth = change.from_state if change else None
        else:
            truth = plan.state_at(trait.trait_id, item.ask_turn)
    states, pools = [], []
    for opt in item.options:
        state, pool = map_option(opt, item.trait_id, trait, ctx)
        states.append(state)
        pools.append(pool)
    return ItemView(item, plan, trait, entry, truth, states, pools, ctx.turns.get(item.persona_id, {}))


def map_option(text: str, trait_id: str | None, trait: Trait | None, ctx: SuiteContext
               ) -> tuple[str | None, str | None]:
    """The state an option shows: exact catalog match, else the state whose texts it is clearly closest to."""
    hit = ctx.pools.get(trait_id or "", {}).get(norm(text))
    if hit is not None:
        return hit
    if trait is None:
        return None, None
    entry = ctx.entry(trait_id)
    th = ctx.thresholds
    scores = []
    for st in trait.states:
        refs = [st.description]
        cat = next((s for s in entry.states if s.state_id == st.state_id), None) if entry else None
        if cat is not None:
            refs += cat.answers + cat.recommendations
        scores.append((max(ctx.embedder.cos(text, r) for r in refs), st.state_id))
    if entry is not None:
        distract = entry.distractor_answers + entry.distractor_recommendations
        scores.append((max(ctx.embedder.cos(text, r) for r in distract), ""))
    scores.sort(reverse=True)
    best, state = scores[0]
    second = scores[1][0] if len(scores) > 1 else -1.0
    if state and best >= th.map_min and best - second >= th.map_margin:
        return state, None
    return None, None


def suite_bias(items: list[QAItem]) -> dict[str, object]:
    """Whether the gold's position or being the longest option predicts it across the suite.

    A heuristic is *predictive* when its hit rate beats chance by 10 points and by z > 4 (binomial normal
    approximation, z = (hits - n p) / sqrt(n p (1 - p))); small suites never trip it by chance.
    """
    scored = [q for q in items if q.answer_index is not None and len(q.options) >= 2]
    out: dict[str, object] = {"n": len(scored), "favoured_position": None, "longest_predictive": False}
    if not scored:
        return out
    p = sum(1 / len(q.options) for q in scored) / len(scored)
    pos = Counter(q.answer_index for q in scored)
    top, hits = pos.most_common(1)[0]
    out["position_rate"] = hits / len(scored)
    if _predictive(hits, len(scored), p):
        out["favoured_position"] = top
    longest = sum(1 for q in scored
                  if max(range(len(q.options)), key=lambda i: len(q.options[i])) == q.answer_index)
    out["longest_rate"] = longest / len(scored)
    out["longest_predictive"] = _predictive(longest, len(scored), p)
    return out


def _predictive(hits: int, n: int, p: float) -> bool:
    sd = math.sqrt(n * p * (1 - p)) or 1.0
    return hits / n > p + 0.1 and (hits - n * p) / sd > 4


def turn_points(v: ItemView) -> list[int]:
    """Turns at which each state of the trait held up to the question (start and just after each change)."""
    assert v.plan is not None
    points = [1] + [d.change_point_turn + 1 for d in v.plan.schedule.drifts
                    if d.trait_id == v.item.trait_id and d.change_point_turn < v.item.ask_turn]
    return points


def template_kind(v: ItemView, ctx: SuiteContext) -> str | None:
    """Which catalog template family (current, inference, past) the question comes from, if recognisable."""
    if v.entry is None or v.plan is None:
        return None
    first = v.plan.persona.name.split()[0]
    fams = {"current": v.entry.current_questions, "inference": v.entry.inference_questions,
            "past": v.entry.past_questions}
    key = norm(v.item.question)
    texts = {name: [tpl.format(name=who) for tpl in templates for who in (first, "they")]
             for name, templates in fams.items()}
    for name, family in texts.items():
        if any(norm(t) == key for t in family):
            return name
    best, kind = -1.0, None
    for name, family in texts.items():
        for text in family:
            sim = ctx.embedder.cos(v.item.question, text)
            if sim > best:
                best, kind = sim, name
    return kind if best >= 0.8 else None
