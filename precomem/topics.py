"""Generic life-topic prototypes: a topic label for each belief and a topic distribution for each query.

The prototype sentences are written here for PreCoMem and are deliberately generic; they are not taken from
dimobench's catalog, so the engine is never fitted to the benchmark's text.
"""

from __future__ import annotations

import numpy as np

from precomem.encoders import Encoder

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "food": (
        "I like cooking dinner at home",
        "my favourite restaurant serves spicy noodles",
        "I am trying a new diet and eat less meat",
    ),
    "drink": ("I drink coffee every morning", "we had a few beers at the pub", "I stopped drinking alcohol"),
    "fitness": (
        "I go to the gym three times a week",
        "I ran a half marathon",
        "my yoga class is on Tuesdays",
    ),
    "health": (
        "I have a doctor's appointment",
        "my back hurts and I can't sleep well",
        "I take medication daily",
    ),
    "sleep": ("I usually go to bed late", "I wake up early every day", "I took a long nap this afternoon"),
    "work": (
        "I work as a software engineer",
        "my manager scheduled another meeting",
        "I got a promotion at work",
    ),
    "study": ("I am taking an online course", "my exam is next week", "I am learning a new language"),
    "money": ("I am saving money for a house", "my rent went up again", "I paid off my credit card"),
    "home": ("I moved into a new apartment", "my landlord fixed the heating", "I rearranged the living room"),
    "family": ("my mother called me yesterday", "my kids have school tomorrow", "I visited my parents"),
    "relationships": (
        "I have been dating someone new",
        "my partner and I had an argument",
        "we celebrated our anniversary",
    ),
    "social": ("I threw a party for my friends", "I met friends for drinks", "I prefer quiet evenings alone"),
    "travel": ("I booked a flight to Spain", "we went on a road trip", "I love exploring new cities"),
    "outdoors": (
        "I went hiking in the mountains",
        "I enjoy camping by the lake",
        "I spend weekends in nature",
    ),
    "music": ("I play the guitar", "I went to a concert last night", "I listen to jazz while working"),
    "reading": ("I am reading a mystery novel", "I joined a book club", "I read before going to sleep"),
    "screen": (
        "I watched a new series on TV",
        "I play video games in the evening",
        "I saw a movie at the cinema",
    ),
    "pets": ("I adopted a dog", "my cat sleeps on the sofa", "I walk the dog twice a day"),
    "shopping": (
        "I bought new shoes online",
        "I went grocery shopping",
        "I avoid buying things I don't need",
    ),
    "tech": ("my laptop keeps crashing", "I set up a new phone", "I am building a small app"),
    "hobbies": ("I paint watercolours on weekends", "I started gardening", "I knit scarves in winter"),
    "commute": ("I take the train to work", "I bike to the office", "traffic was terrible this morning"),
    "mood": ("I feel stressed lately", "I have been really happy this week", "I feel tired and anxious"),
    "weather": ("it is raining again today", "the summer heat is unbearable", "I love snowy winter days"),
}
"""Topic name -> a few prototype sentences; a topic's vector is the normalised mean of their embeddings."""

TOPICS: tuple[str, ...] = (*PROTOTYPES, "general")
"""Topic labels; the last, ``general``, is assigned when no prototype is close."""

_CACHE: dict[str, np.ndarray] = {}


def prototype_matrix(enc: Encoder) -> np.ndarray:
    """Topic prototype vectors for this encoder, computed once per process and encoder."""
    if enc.name not in _CACHE:
        sents = [s for group in PROTOTYPES.values() for s in group]
        emb = enc.encode(sents)
        rows, start = [], 0
        for group in PROTOTYPES.values():
            v = emb[start : start + len(group)].mean(axis=0)
            rows.append(v / max(float(np.linalg.norm(v)), 1e-9))
            start += len(group)
        _CACHE[enc.name] = np.asarray(rows, dtype=np.float32)
    return _CACHE[enc.name]


def assign(emb: np.ndarray, enc: Encoder) -> np.ndarray:
    """Topic index per row of ``emb``; ``general`` (last index) when no prototype reaches relatedness."""
    sims = emb @ prototype_matrix(enc).T
    best = sims.argmax(axis=1)
    return np.where(sims.max(axis=1) >= enc.related, best, len(TOPICS) - 1).astype(np.int16)


def distribution(query: np.ndarray, enc: Encoder, temperature: float) -> np.ndarray:
    """Softmax over topics for one query embedding; ``general`` gets probability 0."""
    sims = prototype_matrix(enc) @ query / temperature
    p = np.exp(sims - sims.max())
    p /= p.sum()
    return np.append(p, 0.0).astype(np.float32)
