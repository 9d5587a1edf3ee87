"""No-context attacks: answer each question from the question and options alone, never reading the dialogue.

Each attack learns what it can from training items (``--train`` suites, or the suite's other personas when none
are given: leave-one-persona-out) and scores every option of a test item. A suite whose answers any of them
predicts well above chance leaks its labels; the card names the strongest. The learned combination
(:class:`Combined`) puts every signal below into one logistic regression, so a leak spread thin over several
cues still shows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache

from dimobench.audit.items import Item, credit
from dimobench.catalog import catalog_root, load_catalog, stemmed_words
from dimobench.suite.flags import norm

PRIOR_WEIGHT = 4.0
"""Pseudo-count pulling an option text's learned gold rate towards 1/4 (texts seen once mean little)."""


def shipped_lists() -> dict[str, frozenset[str]]:
    """Normalised option-like text -> the names of the shipped lists that hold it, for the catalog in use."""
    return _lists_of(catalog_root())


@lru_cache(maxsize=4)
def _lists_of(root: str) -> dict[str, frozenset[str]]:
    """One catalog's lists (cached per catalog directory, so ``$DIMOBENCH_CATALOG`` switches them)."""
    found: dict[str, set[str]] = defaultdict(set)
    catalog = load_catalog(root)
    for topic in catalog.topics:
        for trait in topic.traits:
            for state in trait.states:
                for text in state.answers:
                    found[norm(text)].add("answers")
                for text in state.recommendations:
                    found[norm(text)].add("recommendations")
            for text in trait.distractor_answers:
                found[norm(text)].add("distractor_answers")
            for text in trait.distractor_recommendations:
                found[norm(text)].add("distractor_recommendations")
    for text in catalog.conflicts:
        found[norm(text)].add("conflicts")
    return {k: frozenset(v) for k, v in found.items()}


def state_key(it: Item, i: int) -> str:
    """The trait state option ``i`` stands for, as one key (``-`` when it stands for none)."""
    state = it.states[i] if i < len(it.states) else None
    return f"{it.qa.trait_id}:{state}" if state else "-"


def signature(text: str) -> str:
    """Where an option text sits in the shipped data, as one key (``absent`` when nowhere)."""
    return "+".join(sorted(shipped_lists().get(norm(text), frozenset()))) or "absent"


class Rates:
    """Smoothed gold rate of a key (an option text, a signature, a position), learned from counted items."""

    def __init__(self, key: Callable[[Item, int], str]) -> None:
        self.key = key
        self.gold: Counter[str] = Counter()
        self.shown: Counter[str] = Counter()

    def add(self, it: Item, sign: int = 1) -> None:
        """Count (or with ``sign=-1`` uncount) one item's options."""
        for i in range(len(it.options)):
            k = self.key(it, i)
            self.shown[k] += sign
            self.gold[k] += sign * (i == it.gold)

    def rate(self, it: Item, i: int) -> float:
        """Smoothed gold rate of option ``i``'s key."""
        k = self.key(it, i)
        prior = 1.0 / len(it.options)
        return (self.gold[k] + PRIOR_WEIGHT * prior) / (self.shown[k] + PRIOR_WEIGHT)


class Attack:
    """An attack: ``fit`` on training items, then ``scores`` for each option of a test item."""

    name = ""
    describe = ""

    def prepare(self, items: Sequence[Item]) -> None:
        """Compute, in one batch, whatever scoring these items needs (default: nothing)."""

    def fit(self, train: Sequence[Item]) -> None:
        """Learn from items whose gold is known (default: nothing to learn)."""

    def scores(self, it: Item) -> list[float]:
        """One score per option; the best ones are the attack's answer."""
        raise NotImplementedError


class RateAttack(Attack):
    """Pick the option whose key was gold most often in training."""

    def __init__(self, name: str, describe: str, key: Callable[[Item, int], str]) -> None:
        self.name, self.describe, self.rates = name, describe, Rates(key)

    def fit(self, train: Sequence[Item]) -> None:
        """Count every training option under its key."""
        self.rates = Rates(self.rates.key)
        for it in train:
            self.rates.add(it)

    def scores(self, it: Item) -> list[float]:
        """Learned gold rate of each option's key."""
        return [self.rates.rate(it, i) for i in range(len(it.options))]


class DirectedAttack(Attack):
    """Pick the option with the highest, or the lowest, value of a feature: whichever did better in training."""

    def __init__(self, name: str, describe: str, feature: Callable[[Item, int], float]) -> None:
        self.name, self.describe, self.feature, self.sign = name, describe, feature, 1.0

    def fit(self, train: Sequence[Item]) -> None:
        """Choose the direction that scores more on the training items."""
        up = sum(credit(self._values(it), it.gold) for it in train)
        down = sum(credit([-v for v in self._values(it)], it.gold) for it in train)
        self.sign = 1.0 if up >= down else -1.0

    def _values(self, it: Item) -> list[float]:
        return [self.feature(it, i) for i in range(len(it.options))]

    def scores(self, it: Item) -> list[float]:
        """The feature, signed by the learned direction."""
        return [self.sign * v for v in self._values(it)]


def _trigrams(text: str) -> frozenset[str]:
    t = f" {norm(text)} "
    return frozenset(t[i:i + 3] for i in range(len(t) - 2))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def question_similarity(it: Item, i: int) -> float:
    """Shared stemmed words plus character-trigram overlap between the question and option ``i``."""
    return len(stemmed_words(it.qa.question) & stemmed_words(it.options[i])) + _jaccard(_trigrams(it.qa.question),
                                                                          _trigrams(it.options[i]))


def profile_text(it: Item) -> str:
    """The persona's public profile as one text (name, age, occupation, city, bio, ...)."""
    if it.persona is None:
        return ""
    return " ".join([it.persona.name, *(str(v) for v in it.persona.profile.values())])


def profile_similarity(it: Item, i: int) -> float:
    """Shared stemmed words plus trigram overlap between the persona's profile and option ``i``."""
    prof = profile_text(it)
    return len(stemmed_words(prof) & stemmed_words(it.options[i])) + _jaccard(_trigrams(prof), _trigrams(it.options[i]))


def length(it: Item, i: int) -> float:
    """Option length in characters."""
    return float(len(it.options[i]))


class Meaning:
    """Cosine between a question and each of its options in the sentence embedding the ``none`` system answers
    by (``dimobench evaluate``'s embedder: MiniLM, or its hashing fallback; :attr:`backend` says which ran).
    The word and trigram overlap of :func:`question_similarity` misses a question that is close in meaning to
    one state's options: on seed 2101 ``none`` scored 0.352 while the strongest attack of the card was 0.308."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, ...], list[float]] = {}
        self.backend: str | None = None

    @staticmethod
    def _key(it: Item) -> tuple[str, ...]:
        return (it.qa.question, *it.options)

    def prepare(self, items: Sequence[Item]) -> None:
        """Encode the questions and options of ``items`` not seen yet, in one batch."""
        todo = [it for it in items if self._key(it) not in self.values]
        if not todo:
            return
        from dimobench.embed import fixed_embedder

        embedder = fixed_embedder()
        self.backend = f"{embedder.backend}, {embedder.runtime}" if embedder.backend == "minilm" else embedder.backend
        texts = list(dict.fromkeys(t for it in todo for t in self._key(it)))
        rows = dict(zip(texts, embedder.encode(texts), strict=True))
        for it in todo:
            q = rows[it.qa.question]
            # rounded: the same answer whichever runtime (torch, ONNX Runtime) encoded the texts
            self.values[self._key(it)] = [round(float(q @ rows[o]), 6) for o in it.options]

    def cosine(self, it: Item, i: int) -> float:
        """The cosine of the question and option ``i`` (``prepare`` first)."""
        return self.values[self._key(it)][i]


class MeaningAttack(DirectedAttack):
    """Pick the option closest to (or furthest from) the question in meaning."""

    def __init__(self, meaning: Meaning) -> None:
        super().__init__("question_meaning", "option closest to (or furthest from) the question in meaning (the "
                         "sentence embedding the no-memory system answers by)", meaning.cosine)
        self.meaning = meaning

    def prepare(self, items: Sequence[Item]) -> None:
        """Encode the items' questions and options."""
        self.meaning.prepare(items)
        if self.meaning.backend is not None:
            self.describe = self.describe.split(" [")[0] + f" [{self.meaning.backend}]"


def recurrence_values(group: Sequence[Sequence[str]]) -> list[list[float]]:
    """Per question of one persona-and-trait group (its option texts), each option's recurrence: how often its
    stemmed words stand in the options of the group's other questions."""
    words = [[stemmed_words(o) for o in options] for options in group]
    # in how many of the group's options each word stands, and in how many of one item's own
    everywhere = Counter(w for item in words for option in item for w in option)
    out = []
    for item in words:
        own = Counter(w for option in item for w in option)
        out.append([float(sum(everywhere[w] - own[w] for w in option)) for option in item])
    return out


class Recurrence:
    """How much an option's words recur among the options of the same persona's other questions on the same
    trait: an attacker who sees all of a persona's questions may read the answer off what keeps being offered
    (a blind reader of seed 2251 suspected the gold's wording recurred while the distractors changed). An item
    without a trait (an import) scores 0 on every option."""

    def __init__(self) -> None:
        self.values: dict[int, list[float]] = {}

    def prepare(self, items: Sequence[Item]) -> None:
        """Score every option of ``items`` against its persona-and-trait group (every item given is counted)."""
        groups: dict[tuple[str, str, str], list[Item]] = defaultdict(list)
        for it in items:
            if it.qa.trait_id is None:
                self.values[id(it)] = [0.0] * len(it.options)
            else:
                groups[(it.suite, it.persona_id, it.qa.trait_id)].append(it)
        for group in groups.values():
            for it, values in zip(group, recurrence_values([it.options for it in group]), strict=True):
                self.values[id(it)] = values

    def value(self, it: Item, i: int) -> float:
        """Option ``i``'s recurrence (``prepare`` first)."""
        return self.values[id(it)][i]


class RecurrenceAttack(DirectedAttack):
    """Pick the option whose words recur most (or least) in the persona's other questions on the trait."""

    def __init__(self) -> None:
        self.recurrence = Recurrence()
        super().__init__("option_recurrence", "option whose words recur most (or least) among the options of the "
                         "persona's other questions on the same trait", self.recurrence.value)

    def prepare(self, items: Sequence[Item]) -> None:
        """Count the recurrences within each persona and trait."""
        self.recurrence.prepare(items)


class Combined(Attack):
    """Logistic regression over every no-context signal, one row per option, trained on the training items.

    The text, signature and state rates a training row sees are counted without its own persona, so the model learns
    how far such rates generalise to unseen personas instead of memorising its own labels.
    """

    name = "combined"
    describe = "logistic regression on all no-context signals (text and state priors, shipped lists, length, " \
               "position, question and profile similarity, question meaning)"

    def __init__(self, meaning: Meaning) -> None:
        self.meaning = meaning
        self.text = Rates(lambda it, i: norm(it.options[i]))
        self.sig = Rates(lambda it, i: signature(it.options[i]))
        self.state = Rates(state_key)
        self.model: object | None = None

    def _row(self, it: Item, i: int) -> list[float]:
        lengths = [len(o) for o in it.options]
        mean_len = sum(lengths) / len(lengths)
        spread = (max(lengths) - min(lengths)) or 1
        n = len(it.options)
        return [math.log(self.text.rate(it, i) * n), math.log(self.sig.rate(it, i) * n),
                math.log(self.state.rate(it, i) * n),
                (lengths[i] - mean_len) / spread, question_similarity(it, i), profile_similarity(it, i),
                self.meaning.cosine(it, i), *[float(i == p) for p in range(4)]]

    def prepare(self, items: Sequence[Item]) -> None:
        """Encode the items' questions and options."""
        self.meaning.prepare(items)

    def fit(self, train: Sequence[Item]) -> None:
        """Fit the regression; each row's rates leave out its own persona's items."""
        from sklearn.linear_model import LogisticRegression

        self.text, self.sig, self.state, self.model = Rates(self.text.key), Rates(self.sig.key), Rates(state_key), None
        tables = (self.text, self.sig, self.state)
        for it in train:
            for table in tables:
                table.add(it)
        by_persona: dict[tuple[str, str], list[Item]] = defaultdict(list)
        for it in train:
            by_persona[(it.suite, it.persona_id)].append(it)
        rows: list[list[float]] = []
        labels: list[int] = []
        for group in by_persona.values():
            for it in group:
                for table in tables:
                    table.add(it, -1)
            for it in group:
                for i in range(len(it.options)):
                    rows.append(self._row(it, i))
                    labels.append(int(i == it.gold))
            for it in group:
                for table in tables:
                    table.add(it)
        if len(set(labels)) == 2:
            self.model = LogisticRegression(max_iter=1000).fit(rows, labels)

    def scores(self, it: Item) -> list[float]:
        """The regression's decision value per option (all equal when there was nothing to fit)."""
        if self.model is None:
            return [0.0] * len(it.options)
        rows = [self._row(it, i) for i in range(len(it.options))]
        values = self.model.decision_function(rows)  # type: ignore[attr-defined]  # sklearn ships no types
        return [round(float(v), 9) for v in values]


def attacks() -> list[Attack]:
    """A fresh instance of every no-context attack."""
    meaning = Meaning()
    return [
        RateAttack("option_prior", "how often each option text was gold in training",
                   lambda it, i: norm(it.options[i])),
        RateAttack("shipped_lists", "gold rate of the package lists an option text sits in (answers, "
                   "recommendations, distractors, conflicts)", lambda it, i: signature(it.options[i])),
        RateAttack("state_prior", "how often each trait state was the answer in training (suites from a catalog)",
                   state_key),
        RateAttack("position", "gold rate of each option position", lambda it, i: str(i)),
        DirectedAttack("length", "longest (or shortest) option", length),
        DirectedAttack("question_similarity", "option closest to (or furthest from) the question's words",
                       question_similarity),
        DirectedAttack("profile_similarity", "option closest to (or furthest from) the persona's profile",
                       profile_similarity),
        MeaningAttack(meaning),
        RecurrenceAttack(),
        Combined(meaning),
    ]


def attack_scores(attack: Attack, test: Sequence[Item], train: Sequence[Item] | None) -> list[list[float]]:
    """Option scores per test item: trained once on ``train``, or leave-one-persona-out over ``test`` without it."""
    attack.prepare([*test, *(train or [])])
    if train:
        attack.fit(train)
        return [attack.scores(it) for it in test]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, it in enumerate(test):
        groups[(it.suite, it.persona_id)].append(n)
    out: list[list[float]] = [[] for _ in test]
    for key, members in groups.items():
        attack.fit([it for it in test if (it.suite, it.persona_id) != key])
        for n in members:
            out[n] = attack.scores(test[n])
    return out
