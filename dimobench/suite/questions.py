"""How a question is built from the latent plan, with its gold answer (DESIGN.md section 3).

Ask turns are spread evenly over each persona's timeline. At each ask turn the feasible types are found
(``temporal`` needs a change before the question; ``stability`` needs a never-drifting trait that a
confounder has already made look changed), and a type is drawn with weights that correct for how often each
type is feasible, so every type lands near its target share across the suite.

Options are four: the gold, the stale state where the trait changed before (``stale_index``), the state a
confounder suggested where it differs from both (``confounder_index``), then the trait's other states; only a
trait with fewer than four states falls back to its distractor lists. With four states every option text is
gold exactly when the persona is in its state, so no text, list or position tells the answer. An option text
that one of the persona's *other* traits supports right now (``catalog.conflicts``) is never offered, as gold
or as a wrong option: it would be a second right answer, and offering it only as gold would make it gold more
often than its peers.

The validity rules (``rules="valid"``, ``generate --qa-rules valid``; the audit's per-item flags check them,
``dimobench.suite.flags``). ``rules="v1"``, the default, builds the items of earlier versions unchanged: one
supporting cue is enough, transitions and reversions are asked about, and a conflict text can still be gold.

- **Grounded gold**: at least :data:`MIN_EVIDENCE` cue turns of the gold state lie in its period before the
  question (since the trait's last change; for ``temporal``, in the period before that change).
- **No question about a trait while it is in transition**: between a drift's onset and its change point the
  cues are a mix of both states, so a present-tense question on that trait (``current_state``, ``inference``)
  is not asked then; the other traits still are.
- **One option true in the asked period**: ``temporal`` ("before the latest change") is asked only about a
  trait whose latest change is its first, so exactly one of its states held before it (after a reversion
  A -> B -> A, A held before the latest change too), and whose distant past the user recalled (a decoy), if
  any, is that state ("years ago I ..." held before the change as well).
- **No option the user has said on another subject**: an option text sharing ``SAID_SHARED`` content stems with a
  user turn up to the question that is not about the question's trait (another trait's cue, a filler) is not
  offered, as gold or as a wrong option (:meth:`dimobench.suite.evidence.EvidenceIndex.first_said`).
- **One question per trait at one turn**: two items asked after the same turn are about two traits.
- **No length cue** (catalogs with ``text_rules`` v3): the four texts are drawn until their order by length is
  one drawn at random beforehand, never looking at which is gold (:meth:`QuestionMaker._rank_lengths`).
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import overload

from dimobench.catalog import Catalog, StateEntry, TraitEntry, content_words, stemmed_words
from dimobench.suite.evidence import EvidenceIndex
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import QAItem

TARGET_SHARE = {"current_state": 0.3, "inference": 0.25, "temporal": 0.2, "stability": 0.25}
MIN_EVIDENCE = 2
"""Cue turns of the gold state a question needs before it (fewer: the question is not asked there)."""
LENGTH_TRIES = 100
"""Draws :meth:`QuestionMaker._rank_lengths` makes to meet an order of the options by length."""


def _ranked_draw(draws: list[tuple[list[float], float, int]], lengths: list[list[int]], order: list[int],
                 rand: Callable[[], float]) -> list[int]:
    """Indexes drawn into each option's texts (``draws``: cumulative weights, their total, the last index) until
    the options' ``lengths`` fall strictly in ``order`` (then the texts differ too), at most :data:`LENGTH_TRIES`
    times; what :meth:`QuestionMaker._pick` draws, with four options written out (the common case, ~110,000
    draws in an XL suite)."""
    if len(draws) == 4:
        (c0, t0, l0), (c1, t1, l1), (c2, t2, l2), (c3, t3, l3) = draws
        a, b, c, d = order
        la, lb, lc, ld = lengths[a], lengths[b], lengths[c], lengths[d]
        for _ in range(LENGTH_TRIES):
            p = (bisect_right(c0, rand() * t0, 0, l0), bisect_right(c1, rand() * t1, 0, l1),
                 bisect_right(c2, rand() * t2, 0, l2), bisect_right(c3, rand() * t3, 0, l3))
            if la[p[a]] > lb[p[b]] > lc[p[c]] > ld[p[d]]:
                break
        return list(p)
    picks: list[int] = []
    for _ in range(LENGTH_TRIES):
        picks = [bisect_right(cum, rand() * total, 0, last) for cum, total, last in draws]
        ranked = [lengths[i][picks[i]] for i in order]
        if all(x > y for x, y in zip(ranked, ranked[1:])):
            break
    return picks


class QuestionMaker:
    """Builds one persona's questions from its latent plan and evidence index."""

    def __init__(self, catalog: Catalog, plan: LatentPlan, index: EvidenceIndex, rng: random.Random,
                 rules: str = "v1") -> None:
        self.catalog, self.plan, self.index, self.rng = catalog, plan, index, rng
        self.valid = rules == "valid"
        self.length_ranks = self.valid and catalog.text_rules == "v3"
        self.first = plan.persona.name.split()[0]
        self.traits = [t.trait_id for t in plan.persona.traits]
        self._candidates: dict[tuple[str, int], list[str]] = {}
        self.shown: dict[str, int] = {}
        """Under the validity rules: in how many of this persona's items so far each option text stands."""

    def make_all(self, n: int, turns: int) -> list[QAItem]:
        """``n`` questions at evenly spaced turns of ``turns``, question types weighted towards their target shares."""
        slots = [min(turns, max(1, round((i + 0.5) * turns / n))) for i in range(n)] if n else []
        feasible_share = self._feasible_share(slots)
        items: list[QAItem] = []
        for i, t0 in enumerate(slots):
            item = None
            qa_id = f"{self.plan.persona.persona_id}-q{i + 1:04d}"
            for t in range(t0, turns + 1):
                # validity rules: one question per trait at one turn (two slots that found nothing askable before
                # the same turn asked the same thing twice in other words: the blind read of seed 2731)
                asked = frozenset(q.trait_id for q in items if q.ask_turn == t and q.trait_id) if self.valid \
                    else frozenset[str]()
                kinds = [k for k in TARGET_SHARE if set(self.candidates(k, t)) - asked]
                while kinds and item is None:
                    weights = [TARGET_SHARE[k] / max(feasible_share[k], 0.05) for k in kinds]
                    kind = self.rng.choices(kinds, weights)[0]
                    item = self.make(kind, t, qa_id, strict=self.valid, exclude=asked)
                    kinds.remove(kind)
                if item is not None:
                    break
            if item is None:  # nothing askable after t0: fall back to the latest feasible turn before it
                for t in range(t0, 0, -1):
                    kinds = [k for k in TARGET_SHARE if self.candidates(k, t)]
                    if kinds:
                        item = self.make(self.rng.choice(kinds), t, qa_id)
                        break
            if item is not None:
                items.append(item)
        return items

    def _feasible_share(self, slots: list[int]) -> dict[str, float]:
        if not slots:
            return dict.fromkeys(TARGET_SHARE, 1.0)
        return {k: sum(1 for t in slots if self.candidates(k, t)) / len(slots) for k in TARGET_SHARE}

    def candidates(self, kind: str, t: int) -> list[str]:
        """Traits this kind of question can be asked about after turn ``t`` (remembered: the plan and the turns do
        not change while questions are made, and each slot asks of every kind at several turns)."""
        found = self._candidates.get((kind, t))
        if found is None:
            found = self._candidates[(kind, t)] = self._find_candidates(kind, t)
        return found

    def _find_candidates(self, kind: str, t: int) -> list[str]:
        plan, idx = self.plan, self.index

        need = MIN_EVIDENCE if self.valid else 1

        def grounded(trait: str, state: str, upto: int, since: int = 0) -> bool:
            return len(idx.evidence(trait, state, upto, since)) >= need

        if kind in ("current_state", "inference"):
            drift = plan.active_drift(t)
            moving = drift.trait_id if (self.valid and drift and drift.onset_turn <= t <= drift.change_point_turn
                                        ) else None
            return [tr for tr in self.traits
                    if tr != moving and grounded(tr, plan.state_at(tr, t), t, self._since(tr, t))]
        if kind == "temporal":
            out = []
            for tr in plan.drifting_traits:
                change = plan.last_change(tr, t)
                if change is None or (self.valid and plan.last_change(tr, change.change_point_turn) is not None):
                    continue  # no change yet, or a second change: more than one state held before it
                # validity rules: a distant past of another state is "before the change" too (the blind read of
                # seed 2747: "before things shifted" offered the state the user held "years ago")
                if self.valid and idx.recalled(tr, t) - {change.from_state}:
                    continue
                if grounded(tr, change.from_state, change.change_point_turn):
                    out.append(tr)
            return sorted(out)
        return [tr for tr in plan.stable_traits
                if grounded(tr, plan.state_at(tr, t), t)
                and idx.confounder_state(tr, t, {plan.state_at(tr, t)})]

    def _since(self, trait: str, t: int) -> int:
        change = self.plan.last_change(trait, t)
        return change.change_point_turn if change else 0

    @overload
    def make(self, kind: str, t: int, qa_id: str) -> QAItem: ...

    @overload
    def make(self, kind: str, t: int, qa_id: str, strict: bool, exclude: frozenset[str] = ...) -> QAItem | None: ...

    def make(self, kind: str, t: int, qa_id: str, strict: bool = False,
             exclude: frozenset[str] = frozenset()) -> QAItem | None:
        """One ``kind`` question asked after turn ``t`` about a drawn trait (changed or drifting ones favoured),
        never one of ``exclude``.

        A trait whose four states cannot all be offered right now (every text of one is supported by another
        trait) is passed over for the next draw. When no candidate can, ``strict`` gives None (the caller asks
        something else); otherwise a distractor fills the place, as for a trait with fewer than four states.
        """
        plan, rng = self.plan, self.rng
        candidates = [tr for tr in self.candidates(kind, t) if tr not in exclude]
        active = plan.active_drift(t)
        weights = [3.0 if plan.last_change(tr, t) or (active and active.trait_id == tr) else 1.0 for tr in candidates]
        while True:
            trait_id = rng.choices(candidates, weights)[0]
            item = self._make_on(kind, t, qa_id, trait_id, strict=self.valid and (strict or len(candidates) > 1))
            if item is not None or len(candidates) == 1:
                return item
            i = candidates.index(trait_id)
            candidates, weights = candidates[:i] + candidates[i + 1:], weights[:i] + weights[i + 1:]

    def _make_on(self, kind: str, t: int, qa_id: str, trait_id: str, strict: bool) -> QAItem | None:
        """The question on ``trait_id``; None when ``strict`` and its options would need a distractor."""
        plan, idx, rng = self.plan, self.index, self.rng
        entry = self.catalog.trait(trait_id)
        now = plan.state_at(trait_id, t)
        change = plan.last_change(trait_id, t)
        stale = confounder = None
        if kind == "temporal":
            assert change is not None
            gold = change.from_state
            evidence = idx.evidence(trait_id, gold, change.change_point_turn)
            pool, templates = "answers", entry.past_questions
            others = [now]
        else:
            gold = now
            evidence = idx.evidence(trait_id, gold, t, self._since(trait_id, t))
            stale = change.from_state if change and change.from_state != gold else None
            confounder = idx.confounder_state(trait_id, t, {gold, stale} if stale else {gold})
            use_inference = kind == "inference" or (kind == "stability" and rng.random() < 0.5)
            pool = "recommendations" if use_inference else "answers"
            templates = entry.inference_questions if use_inference else entry.current_questions
            others = []
        drift = plan.latest_drift(trait_id, t) if kind != "stability" else None
        question = "" if self.valid else self._question(templates, entry, gold)
        # what the persona's other traits hold now: a wrong option they support would be a second right answer
        blocked = {(tr, plan.state_at(tr, t)) for tr in self.traits if tr != trait_id}
        options, answer_index, stale_index, confounder_index, padded = self._options(
            entry, pool, gold, stale, confounder, others, blocked, t)
        if strict and padded and len(entry.states) >= 4:
            return None
        if self.valid:
            question = self._neutral_question(templates, options)
            for text in options:  # counted once the item stands (a set passed over was never offered)
                self.shown[text] = self.shown.get(text, 0) + 1
        return QAItem(
            qa_id=qa_id, persona_id=plan.persona.persona_id, ask_turn=t, qa_type=kind,
            phase=plan.phase_at(t), trait_id=trait_id,
            drift_id=drift.drift_id if drift else None, question=question, options=options,
            answer_index=answer_index, answer=options[answer_index], stale_index=stale_index,
            confounder_index=confounder_index, evidence_turns=evidence,
        )

    def _question(self, templates: list[str], entry: TraitEntry, gold: str) -> str:
        """A question whose words (name included) share nothing with the gold state's description."""
        banned = content_words(next(s.description for s in entry.states if s.state_id == gold))
        order = self.rng.sample(templates, len(templates))
        for tpl in order:
            q = tpl.format(name=self.first)
            if not content_words(q) & banned:
                return q
        return order[0].format(name="they").capitalize()

    def _neutral_question(self, templates: list[str], options: list[str]) -> str:
        """A question sharing as few words as possible with any of the options (which are chosen first).

        The choice looks at all four options alike, never at which is gold, so the wording cannot point to it.
        """
        words = [stemmed_words(o) for o in options]
        order = self.rng.sample(templates, len(templates))
        texts = [tpl.format(name=self.first) for tpl in order]
        return min(texts, key=lambda q: max(len(stemmed_words(q) & w) for w in words))

    def _options(self, entry: TraitEntry, pool: str, gold: str, stale: str | None, confounder: str | None,
                 others_first: list[str], blocked: set[tuple[str, str]], t: int
                 ) -> tuple[list[str], int, int | None, int | None, bool]:
        """Options, gold, stale and confounder indexes, and whether the set is uneven: a distractor had to fill a
        place, or the gold had to be a text that is never offered as a wrong option here."""
        rng = self.rng
        states = {s.state_id: s for s in entry.states}
        conflicts = self.catalog.conflicts

        def unsaid(text: str) -> bool:
            said = self.index.first_said(text, entry.trait_id) if self.valid else None
            return said is None or said > t

        def free(text: str) -> bool:
            return unsaid(text) and not any(tuple(c) in blocked for c in conflicts.get(text, ()))

        offers: dict[str, list[str]] = {}  # asked twice of a state: for its phrase and for _rank_lengths

        def offered(s: StateEntry) -> list[str]:
            found = offers.get(s.state_id)
            if found is None:
                found = offers[s.state_id] = [x for x in getattr(s, pool) if free(x)]
            return found

        def phrase(s: StateEntry) -> str | None:
            ok = offered(s)
            return self._pick(ok) if ok else None

        gold_texts = getattr(states[gold], pool)
        gold_free = [x for x in gold_texts if free(x)] if self.valid else gold_texts
        # where every gold text is barred, one that is only another trait's (uneven, counted) before one the user
        # said on another subject: offering that as gold alone would point at it
        gold_pool = gold_free or [x for x in gold_texts if unsaid(x)] or gold_texts
        chosen: list[tuple[str, str]] = [("gold", self._pick(gold_pool))]
        pools: dict[int, list[str]] = {}  # position in chosen -> its state's texts, for _rank_lengths
        for role, state in (("stale", stale), ("confounder", confounder)):
            text = phrase(states[state]) if state else None
            if text is not None:
                pools[len(chosen)] = offered(states[state]) if state else []
                chosen.append((role, text))
        used_states = {gold, stale, confounder}
        rest = [s for s in others_first if s not in used_states]
        rest += rng.sample([s for s in states if s not in used_states and s not in rest],
                           len([s for s in states if s not in used_states and s not in rest]))
        distractors = entry.distractor_recommendations if pool == "recommendations" else entry.distractor_answers
        fill = [("state", phrase(states[s]), s) for s in rest] + [
            ("distractor", d, None) for d in rng.sample(distractors, len(distractors)) if free(d)]
        for role, text, state in fill:
            if len(chosen) == 4:
                break
            if text is not None and text.lower() not in {c[1].lower() for c in chosen}:
                if state is not None:
                    pools[len(chosen)] = offered(states[state])
                chosen.append((role, text))
        if self.length_ranks:
            chosen = self._rank_lengths(chosen, {0: gold_pool, **pools})
        rng.shuffle(chosen)
        roles = [c[0] for c in chosen]
        return ([c[1] for c in chosen], roles.index("gold"),
                roles.index("stale") if "stale" in roles else None,
                roles.index("confounder") if "confounder" in roles else None, "distractor" in roles or not gold_free)

    def _pick(self, texts: list[str], cum: list[float] | None = None) -> str:
        """One of ``texts``: under the validity rules the less this persona has been offered it, the likelier
        (weight ``1 / (1 + times)**2``), so a state's texts take turns instead of a few recurring (a preset suite
        of seed 2324 offered 956 distinct texts, under issue 16's 1,000). Which state an option stands for is
        decided before, so the weights never see which option is gold. ``cum``: :meth:`_cum` of ``texts``, when
        the caller draws from them many times."""
        if not self.valid:
            return self.rng.choice(texts)
        cum = cum or self._cum(texts)
        # what rng.choices(texts, cum_weights=cum)[0] draws, without its checks on the per-item path
        return texts[bisect_right(cum, self.rng.random() * cum[-1], 0, len(texts) - 1)]

    def _cum(self, texts: list[str]) -> list[float]:
        """The cumulative draw weights :meth:`_pick` gives ``texts`` now."""
        return list(accumulate(1.0 / (1 + self.shown.get(t, 0)) ** 2 for t in texts))

    def _rank_lengths(self, chosen: list[tuple[str, str]], pools: dict[int, list[str]]) -> list[tuple[str, str]]:
        """Draw the options' texts again, each from its own state's texts, until their order by length is one
        drawn at random beforehand (at most :data:`LENGTH_TRIES` draws; then the last draw stands).

        Without it a state whose texts run long is the longest option whenever it is gold: on seed 811 the gold
        was the longest option in 40% of items and a length attack learned on the other personas scored 0.37.
        The draw never looks at which option is gold, so every text is picked as often in either role and the
        gold rate of a text stays its state's (a first version chose the wrong options around the gold's length,
        and a text prior learned on other seeds then scored 0.42 in a simulation over the catalog's lists).
        Over the catalog's lists (simulated, 40,000 items) the target order is met in 75% of items, and the
        share of a (trait, gold state)'s items whose gold is the longest option strays from 0.25 by 0.08 on
        average instead of 0.13; states whose texts are all longer than their siblings' keep some of that lead.
        """
        if len(pools) < len(chosen):
            return chosen  # a distractor list filled a place: its text is fixed, leave the draw as it is
        rng = self.rng
        order = list(range(len(chosen)))
        rng.shuffle(order)  # order[j]: the option that is to be the j-th longest
        # _pick(pools[i], its cum) inlined (length ranks are drawn under the validity rules only): an XL suite
        # draws ~450,000 texts here
        draws = [(cum, cum[-1], len(pools[i]) - 1) for i, cum in ((i, self._cum(pools[i])) for i in range(len(chosen)))]
        picks = _ranked_draw(draws, [[len(x) for x in pools[i]] for i in range(len(chosen))], order, rng.random)
        texts = [pools[i][pick] for i, pick in enumerate(picks)]
        if len({t.lower() for t in texts}) < len(texts):
            return chosen
        return [(role, text) for (role, _), text in zip(chosen, texts, strict=True)]
