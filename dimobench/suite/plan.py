"""Questions about the latent plan: what state holds, which phase a turn is in, which drift is current.

Every stage after the schedules asks these, and so do verification and the oracle system, so they live
in one place. Definition (ours; the paper is silent): a drifting trait is in ``from_state`` up to and
including its change point and in ``to_state`` from the next turn on.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from dimobench.catalog import BarredWords, Catalog, barred_words
from dimobench.suite.schema import Drift, Persona, Schedule, Turn


@dataclass
class LatentPlan:
    """One persona's latent truth over its timeline."""

    persona: Persona
    schedule: Schedule
    _phase_starts: list[int] = field(init=False)
    _states: dict[tuple[str, int], str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._phase_starts = [p.start_turn for p in self.schedule.phases]

    @property
    def drifting_traits(self) -> set[str]:
        """Ids of the traits that drift at least once in the schedule."""
        return {d.trait_id for d in self.schedule.drifts}

    @property
    def stable_traits(self) -> list[str]:
        """Ids of the traits that never drift, in persona order (targets of ``stability`` questions)."""
        return [t.trait_id for t in self.persona.traits if t.trait_id not in self.drifting_traits]

    def state_at(self, trait_id: str, turn: int) -> str:
        """The trait's true state after ``turn``."""
        key = (trait_id, turn)
        state = self._states.get(key)
        if state is None:  # remembered: stage 5 asks ~150,000 times of an XL suite
            state = next(t.initial_state for t in self.persona.traits if t.trait_id == trait_id)
            for d in self.schedule.drifts:
                if d.trait_id == trait_id and d.change_point_turn < turn:
                    state = d.to_state
            self._states[key] = state
        return state

    def phase_at(self, turn: int) -> str:
        """The phase (``stable``, ``transition``, ...) the schedule assigns to ``turn``."""
        i = bisect_right(self._phase_starts, turn) - 1
        return self.schedule.phases[max(i, 0)].phase

    def active_drift(self, turn: int) -> Drift | None:
        """The drift whose transition or post_change holds ``turn``, if any."""
        for d in self.schedule.drifts:
            if d.onset_turn <= turn <= d.settle_turn:
                return d
        return None

    def last_change(self, trait_id: str, turn: int) -> Drift | None:
        """The latest drift of this trait whose change point is before ``turn``."""
        done = [d for d in self.schedule.drifts if d.trait_id == trait_id and d.change_point_turn < turn]
        return done[-1] if done else None

    def latest_drift(self, trait_id: str, turn: int) -> Drift | None:
        """The latest drift of this trait that has begun (onset at or before ``turn``)."""
        begun = [d for d in self.schedule.drifts if d.trait_id == trait_id and d.onset_turn <= turn]
        return begun[-1] if begun else None

    def held_states(self, trait_id: str) -> set[str]:
        """Every state the persona holds of ``trait_id`` in the suite's span: its initial one and each drift's."""
        held = {t.initial_state for t in self.persona.traits if t.trait_id == trait_id}
        return held | {d.to_state for d in self.schedule.drifts if d.trait_id == trait_id}

    def held_together(self) -> list[tuple[int, dict[str, str]]]:
        """Each stretch between changes as (its first turn, the state of every trait through it)."""
        starts = [1, *sorted({d.change_point_turn + 1 for d in self.schedule.drifts})]
        return [(t, {tr.trait_id: self.state_at(tr.trait_id, t) for tr in self.persona.traits}) for t in starts]

    def barred(self, catalog: Catalog, turn: int, cued: str | None = None) -> BarredWords | None:
        """What the persona would not say of its own life at ``turn``: the ``excludes`` of the states its traits
        hold then, leaving out the trait ``cued`` (a turn never contradicts the state it shows) and a trait in
        the middle of a drift (its cues are a mix of both states then), and of the states of its life's background
        (``profile["background"]``, :attr:`TraitEntry.background`); None when nothing is barred."""
        table = catalog.excludes() if catalog.text_rules == "v3" else {}
        if not table:
            return None
        drift = self.active_drift(turn)
        moving = drift.trait_id if drift is not None and turn <= drift.change_point_turn else None
        words: set[str] = set()
        for trait in self.persona.traits:
            if trait.trait_id not in (cued, moving):
                words.update(table.get((trait.trait_id, self.state_at(trait.trait_id, turn)), ()))
        background = self.persona.profile.get("background")
        if isinstance(background, dict):
            for trait_id, state_id in background.items():
                words.update(table.get((str(trait_id), str(state_id)), ()))
        return barred_words(frozenset(words))

    def description(self, trait_id: str, state_id: str) -> str:
        """The catalog description of ``state_id`` of the persona's trait ``trait_id``."""
        trait = next(t for t in self.persona.traits if t.trait_id == trait_id)
        return next(s.description for s in trait.states if s.state_id == state_id)


def turns_by_persona(turns: list[Turn]) -> dict[str, list[Turn]]:
    """Group turns by persona, keeping their order."""
    out: dict[str, list[Turn]] = {}
    for turn in turns:
        out.setdefault(turn.persona_id, []).append(turn)
    return out


def clashing(catalog: Catalog) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(trait_id, state_id) -> the states of other traits it cannot be held with (:attr:`Catalog.clashes`)."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for a, b, _ in catalog.clashes:
        x, y = tuple(a.split(":", 1)), tuple(b.split(":", 1))
        out.setdefault((x[0], x[1]), set()).add((y[0], y[1]))
        out.setdefault((y[0], y[1]), set()).add((x[0], x[1]))
    return out
