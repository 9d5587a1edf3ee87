"""What every attack reads: one row per multiple-choice question, its options' words, and how a score is counted.

An attack gives each option a score; the item counts as answered by the attack with the share of the top-scoring
options that are gold (a tie between the gold and one wrong option counts one half), so no attack gains from a
lucky tie-break and the figures are deterministic.

Intervals resample whole units of one persona's questions on one trait (:func:`cluster_interval`): those share
their gold state for long stretches, so they are not independent, and an interval over single items would claim
a precision the suite does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dimobench.suite.load import Suite
from dimobench.suite.schema import Persona, QAItem


@dataclass(frozen=True)
class Item:
    """One scorable question as the attacks see it (the gold index is only read when counting)."""

    suite: str
    persona_id: str
    qa: QAItem
    persona: Persona | None
    states: tuple[str | None, ...] = ()
    """The trait state each option stands for in the suite's catalog (None: a distractor or no catalog; empty
    unless built by :func:`dimobench.audit.check.items_with_states`)."""

    @property
    def gold(self) -> int:
        """Index of the right option."""
        assert self.qa.answer_index is not None
        return self.qa.answer_index

    @property
    def options(self) -> list[str]:
        """The option texts."""
        return self.qa.options


def items_of(suites: Sequence[tuple[str, Suite]]) -> list[Item]:
    """Every question with at least two options and a gold index, in suite order."""
    out = []
    for key, suite in suites:
        personas = {p.persona_id: p for p in suite.personas}
        for q in suite.qa:
            if q.answer_index is not None and len(q.options) >= 2:
                out.append(Item(key, q.persona_id, q, personas.get(q.persona_id)))
    return out


def credit(scores: Sequence[float], gold: int) -> float:
    """Share of the best-scoring options that is the gold (1, 1/2, 1/3 ... or 0)."""
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s == best]
    return 1.0 / len(top) if gold in top else 0.0


def unit(it: Item) -> tuple[str, str, str]:
    """The resampling unit of an item: its suite, persona and trait."""
    return it.suite, it.persona_id, it.qa.trait_id or ""


def cluster_interval(credits: Sequence[float], units: Sequence[tuple[str, str, str]], n_boot: int = 1000,
                     seed: int = 0) -> tuple[float, float] | None:
    """95% percentile interval of the mean credit, resampling units (persona x trait) with replacement."""
    import numpy as np

    if not credits:
        return None
    keys = sorted(set(units))
    index = {k: i for i, k in enumerate(keys)}
    sums = np.zeros(len(keys))
    counts = np.zeros(len(keys))
    for c, u in zip(credits, units, strict=True):
        sums[index[u]] += c
        counts[index[u]] += 1
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    means = sums[draws].sum(axis=1) / np.maximum(counts[draws].sum(axis=1), 1)
    low, high = np.percentile(means, [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


NULL_DRAWS = 1000
"""Relabellings per null: enough for a stable 95th percentile, and vectorised, so cheap."""


def relabel_null(scores: Sequence[Sequence[float]], items: Sequence[Item], states: Sequence[Sequence[str | None]],
                 draws: int = NULL_DRAWS, seed: int = 0) -> list[float]:
    """Mean credit of fixed option ``scores`` when each unit's held state is relabelled at random: what a suite of
    this shape scores with no leak at all.

    In every unit (:func:`unit`) the states its items offer are permuted, one permutation per unit and draw, and
    each item's gold moves to the option of the state its gold state maps to. ``states[n][i]`` is the state option
    ``i`` of item ``n`` stands for (None: a distractor, or no known state). An item that cannot be relabelled
    (an option of no state, the same state offered twice, or the mapped state not among its options) counts
    its chance credit, the mean over its options: with no information the gold is any option. A unit's items
    share their gold state for long stretches, so an attack that has learned a state is right or wrong on the
    whole unit at once: this null, unlike one that moves each item's gold on its own, has the spread such an
    attack really has on a suite of few units. Draw ``d`` is the same relabelling for every attack scored on
    the same items and seed, so a per-draw maximum over attacks is the null of the strongest one.
    """
    import numpy as np

    fixed, movable = 0.0, []
    for n, (sc, st) in enumerate(zip(scores, states, strict=True)):
        if None in st or len(set(st)) < len(st):
            fixed += sum(credit(sc, i) for i in range(len(sc))) / len(sc)
        else:
            movable.append(n)
    if not items:
        return []
    names: dict[tuple[str, str, str], list[str]] = {}
    for n in movable:
        names.setdefault(unit(items[n]), [])
        names[unit(items[n])] = sorted({*names[unit(items[n])], *(x for x in states[n] if x is not None)})
    if not movable:
        return [round(fixed / len(items), 6)] * draws
    keys = sorted(names)
    width = max(len(v) for v in names.values())
    widest = max(len(scores[n]) for n in movable)
    unit_of = np.array([keys.index(unit(items[n])) for n in movable])
    gold_state = np.array([names[unit(items[n])].index(str(states[n][items[n].gold])) for n in movable])
    option_of = np.full((len(movable), width), -1)
    credits = np.zeros((len(movable), widest))
    for row, n in enumerate(movable):
        for i, state in enumerate(states[n]):
            option_of[row, names[unit(items[n])].index(str(state))] = i
            credits[row, i] = credit(scores[n], i)
    sizes = np.array([len(names[k]) for k in keys])
    rng = np.random.default_rng(seed)
    draw_keys = rng.random((draws, len(keys), width))
    draw_keys[:, np.arange(width)[None, :] >= sizes[:, None]] = np.inf  # a unit permutes only its own states
    perms = np.argsort(draw_keys, axis=2)
    moved = perms[:, unit_of, gold_state]
    options = option_of[np.arange(len(movable))[None, :], moved]
    chance = np.array([credits[row, : len(scores[n])].mean() for row, n in enumerate(movable)])
    picked = credits[np.arange(len(movable))[None, :], np.maximum(options, 0)]
    totals = np.where(options < 0, chance[None, :], picked).sum(axis=1) + fixed
    return [round(float(x), 6) for x in totals / len(items)]


def p95(values: Sequence[float]) -> float:
    """The 95th percentile of a null's draws (the lower one of a pair), rounded as the card shows it."""
    return round(sorted(values)[int(0.95 * (len(values) - 1))], 4)


def chance(items: Sequence[Item]) -> float | None:
    """Mean of 1 / number of options: what guessing scores."""
    return round(sum(1 / len(it.options) for it in items) / len(items), 4) if items else None
