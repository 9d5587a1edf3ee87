"""Stratified review samples: largest-remainder allocation, seeded picks, a shared calibration subset.

A sample is identified by ``sample_id``, a short hash of its sorted ``qa_id`` set; every sheet and
``sample.jsonl`` row carries it, so sheets from two different samples can never be scored together.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from dimobench.errors import ConfigError
from dimobench.suite.schema import QAItem

DEFAULT_BY: tuple[str, ...] = ("qa_type", "phase")


@dataclass(frozen=True)
class SampleItem:
    """One sampled question."""

    qa_id: str
    stratum: str
    calibration: bool


@dataclass(frozen=True)
class Sample:
    """A drawn sample: items in suite order, the strata sizes and how many were drawn from each."""

    sample_id: str
    items: list[SampleItem]
    sizes: dict[str, int]
    drawn: dict[str, int]


def sample_id_of(qa_ids: Sequence[str]) -> str:
    """Short stable id of a set of question ids (sha256 of the sorted ids, 12 hex digits)."""
    return hashlib.sha256("\n".join(sorted(set(qa_ids))).encode("utf-8")).hexdigest()[:12]


def stratum_of(item: QAItem, by: Sequence[str]) -> str:
    """The stratum key of ``item``: its ``by`` field values joined by ``/`` (a missing value: ``none``)."""
    parts = []
    for name in by:
        value = getattr(item, name, None)
        parts.append("none" if value is None or value == "" else str(value))
    return "/".join(parts)


def allocate(sizes: dict[str, int], frac: float) -> dict[str, int]:
    """Share ``round(frac * N)`` draws among strata by largest-remainder (Hamilton) rounding.

    Each stratum first gets ``floor(frac * size)``; the draws still owed go one each to the strata with the
    largest fractional parts (ties broken by stratum name, so the result is deterministic). Hence the total is
    exactly ``round(frac * N)`` (half rounds up) and every stratum gets ``floor`` or ``floor + 1`` of its
    quota, i.e. it is within one item of ``frac * size``.

    Args:
        sizes: stratum -> number of items.
        frac: fraction to draw, in [0, 1].

    Returns:
        stratum -> number of items to draw.
    """
    if not 0.0 <= frac <= 1.0:
        raise ConfigError(f"--frac must be between 0 and 1 (got {frac})")
    quotas = {s: frac * n for s, n in sizes.items()}
    total = math.floor(frac * sum(sizes.values()) + 0.5)
    out = {s: min(math.floor(q), sizes[s]) for s, q in quotas.items()}
    owed = total - sum(out.values())
    order = sorted(quotas, key=lambda s: (-(quotas[s] - math.floor(quotas[s])), s))
    for s in order:
        if owed <= 0:
            break
        if out[s] < sizes[s]:
            out[s] += 1
            owed -= 1
    return out


def draw_sample(qa: Sequence[QAItem], frac: float = 0.2, by: Sequence[str] = DEFAULT_BY,
                calibration: int = 30, seed: int = 0) -> Sample:
    """Draw a stratified sample of ``qa`` and mark a seeded calibration subset of it.

    Within a stratum the items are picked by ``random.Random(f"{seed}:{stratum}")``, so adding a stratum
    does not change the picks of the others. The calibration items are ``min(calibration, len(sample))``
    sample items picked by ``random.Random(f"{seed}:calibration")``; every annotator labels them.

    Args:
        qa: the suite's questions.
        frac: share of each stratum to draw.
        by: QA fields that define the strata.
        calibration: size of the shared calibration subset.
        seed: random seed.

    Returns:
        The sample, items in the suite's order.
    """
    if calibration < 0:
        raise ConfigError(f"--calibration must be 0 or more (got {calibration})")
    known = set(QAItem.model_fields)
    bad = [b for b in by if b not in known]
    if bad or not by:
        raise ConfigError(f"--by: unknown field {', '.join(bad) or '(none)'} (choose from qa_type, phase, "
                          "persona_id, trait_id, ...)")
    groups: dict[str, list[str]] = {}
    for item in qa:
        groups.setdefault(stratum_of(item, by), []).append(item.qa_id)
    sizes = {s: len(ids) for s, ids in sorted(groups.items())}
    drawn = allocate(sizes, frac)
    chosen: set[str] = set()
    for s, ids in sorted(groups.items()):
        chosen.update(random.Random(f"{seed}:{s}").sample(ids, drawn[s]))
    ordered = [q for q in qa if q.qa_id in chosen]
    picked = sorted(q.qa_id for q in ordered)
    calib = set(random.Random(f"{seed}:calibration").sample(picked, min(calibration, len(picked))))
    items = [SampleItem(q.qa_id, stratum_of(q, by), q.qa_id in calib) for q in ordered]
    return Sample(sample_id_of(picked), items, sizes, drawn)
