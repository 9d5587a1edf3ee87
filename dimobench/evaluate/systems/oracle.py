"""The oracle: recall returns the latent state at ask time, read from the suite's personas and schedules.

It tests the answerer and the options, not memory: an answerer that cannot pick the right option from the
true state descriptions caps every system. For every trait of the persona it returns the current state's
description joined with the catalog's behaviour phrases for that state (``habits``; never the option pools;
one item per state so every trait fits in k; score 1, source turn = the turn just observed). When the query
asks about an earlier time (the answerer's ``PAST`` words: "before", "earlier", ...) it also returns, for every
past state of a trait that drifted, the same text with a much lower score (0.1, source turn = the change point
that ended it), as a perfect memory that keeps history and knows what is current would; for any other query a
superseded state is not returned (it was the oracle's largest error source: on a 700-turn, 2-drift suite it
pulled 26 current-state answers to the stale option).
Items are ranked by relevance to the query. Ranking a question about an earlier time by score times relevance
cut the superseded states (score 0.1) from the top k in favour of the current states of unrelated traits:
with 10+ traits they were never returned, and the oracle missed temporal questions.
Traits the catalog does not know (imported or LLM-written suites) get their description alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dimobench.embed import get_embedder
from dimobench.evaluate.answerer import PAST
from dimobench.evaluate.gloss import state_gloss
from dimobench.suite.plan import LatentPlan

if TYPE_CHECKING:
    from dimobench.suite.load import Suite

PAST_SCORE = 0.1
"""A superseded state's score: the answerer weighs it well below every current state, as in a memory that keeps
history but knows what is current (ranking is by relevance alone)."""


class OracleMemory:
    """Benchmark-side system: the harness binds the suite's latent plans before the run."""

    needs_latent_plan = True

    def __init__(self) -> None:
        """Start unbound."""
        self.plans: dict[str, LatentPlan] = {}
        self.plan: LatentPlan | None = None
        self.habits: dict[tuple[str, str], list[str]] = {}
        self.turn = 0

    def bind_suite(self, suite: Suite) -> None:
        """Read personas and schedules (only the oracle gets them)."""
        schedules = {s.persona_id: s for s in suite.schedules}
        self.plans = {p.persona_id: LatentPlan(p, schedules[p.persona_id]) for p in suite.personas
                      if p.persona_id in schedules}
        self.habits = {}
        try:
            from dimobench.catalog import suite_catalog

            catalog = suite_catalog(suite.manifest.config)
            for plan in self.plans.values():
                for trait in plan.persona.traits:
                    try:
                        entry = catalog.trait(trait.trait_id)
                    except (KeyError, StopIteration):
                        continue
                    for st in entry.states:
                        self.habits[(trait.trait_id, st.state_id)] = list(st.habits)
        except Exception:  # no catalog: descriptions alone
            self.habits = {}

    def _texts(self, trait_id: str, state_id: str) -> list[str]:
        # one item per state (description and habits joined) so every trait fits in k
        assert self.plan is not None
        return [state_gloss(self.plan.description(trait_id, state_id), self.habits.get((trait_id, state_id), []))]

    def reset(self, persona_id: str) -> None:
        """Switch to this persona's plan."""
        self.plan = self.plans.get(persona_id)
        self.turn = 0

    def observe(self, turn: Any) -> None:
        """Only the turn number matters."""
        self.turn = int(turn["turn"])

    def recall(self, query: str, k: int) -> list[dict[str, object]]:
        """Current (and past) state descriptions of every trait, most relevant first."""
        plan = self.plan
        if plan is None:
            return []
        past = bool(PAST.search(query))
        items: list[dict[str, object]] = []
        for trait in plan.persona.traits:
            now = plan.state_at(trait.trait_id, self.turn)
            items += [{"text": t, "score": 1.0, "source_turns": [self.turn]}
                      for t in self._texts(trait.trait_id, now)]
            for d in plan.schedule.drifts if past else ():
                if d.trait_id == trait.trait_id and d.change_point_turn < self.turn:
                    items += [{"text": t, "score": PAST_SCORE, "source_turns": [d.change_point_turn]}
                              for t in self._texts(trait.trait_id, d.from_state)]
        emb = get_embedder()
        rel = emb.encode([it["text"] for it in items]) @ emb.encode([query])[0]  # type: ignore[misc]
        key = np.maximum(rel, 0.0)
        order = np.argsort(-key, kind="stable")[:k]
        return [items[i] for i in order]
