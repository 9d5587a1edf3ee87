"""Agreement metrics as small pure functions: Cohen's kappa, a bootstrap interval, Krippendorff's alpha.

Labels are strings; ``None`` marks an item a rater left blank. Pairwise metrics use the items both raters
labelled. An undefined value is ``None`` with a sentence saying why, never ``nan`` and never an exception.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METRICS: dict[str, dict[str, object]] = {
    "cohen_kappa": {"version": 1, "higher_is_better": True, "range": [-1, 1]},
    "krippendorff_alpha_nominal": {"version": 1, "higher_is_better": True, "range": [-1, 1]},
    "raw_agreement": {"version": 1, "higher_is_better": True, "range": [0, 1]},
}
"""Metric metadata recorded in ``agreement.json``."""


@dataclass(frozen=True)
class Value:
    """A metric value (``None`` when undefined), the items it rests on, and why it is undefined."""

    value: float | None
    n: int
    note: str | None = None


def paired(a: Sequence[str | None], b: Sequence[str | None]) -> tuple[list[str], list[str]]:
    """Keep the positions both raters labelled."""
    keep = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return [x for x, _ in keep], [y for _, y in keep]


def raw_agreement(a: Sequence[str | None], b: Sequence[str | None]) -> Value:
    """Share of items both raters labelled on which they gave the same label: ``p_o = matches / n``.

    Edge case: no item labelled by both -> ``None``.
    """
    x, y = paired(a, b)
    if not x:
        return Value(None, 0, "no item labelled by both annotators")
    return Value(sum(p == q for p, q in zip(x, y, strict=True)) / len(x), len(x))


def cohen_kappa(a: Sequence[str | None], b: Sequence[str | None], labels: Sequence[str] | None = None
                ) -> Value:
    """Cohen's kappa of two raters (scikit-learn's ``cohen_kappa_score``) over the items both labelled.

    ``kappa = (p_o - p_e) / (1 - p_e)`` where, over the n items and the k x k confusion matrix C,
    ``p_o = sum_k C[k, k] / n`` is the observed agreement and ``p_e = sum_k (row_k / n) * (col_k / n)`` the
    agreement expected by chance from each rater's own label rates. 1 is perfect agreement, 0 is chance
    level, negative is worse than chance.

    Edge cases: no item labelled by both -> ``None``. Both raters used one and the same label for every item
    -> ``p_e = 1`` and kappa is 0/0: ``None``, with the note that raw agreement is 100%. (If only one rater
    is constant, ``p_e < 1`` and kappa is defined, typically 0.)
    """
    x, y = paired(a, b)
    if not x:
        return Value(None, 0, "undefined: no item labelled by both annotators")
    used = sorted(set(x) | set(y))
    if len(used) == 1:
        return Value(None, len(x), f"undefined: both annotators labelled all {len(x)} items {used[0]}, so "
                                   "chance agreement p_e = 1 and kappa = (p_o - p_e) / (1 - p_e) is 0/0 "
                                   "(raw agreement 100%)")
    from sklearn.metrics import cohen_kappa_score

    return Value(float(cohen_kappa_score(x, y, labels=list(labels) if labels else None)), len(x))


def confusion(a: Sequence[str | None], b: Sequence[str | None], labels: Sequence[str]) -> list[list[int]]:
    """Counts ``C[i][j]`` of items rater a labelled ``labels[i]`` and rater b ``labels[j]``.

    Items either rater left blank are not counted.
    """
    x, y = paired(a, b)
    index = {label: i for i, label in enumerate(labels)}
    out = [[0] * len(labels) for _ in labels]
    for p, q in zip(x, y, strict=True):
        out[index[p]][index[q]] += 1
    return out


def bootstrap_kappa(a: Sequence[str | None], b: Sequence[str | None], n_boot: int = 1000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's kappa, resampling items with replacement (seeded).

    Each replicate recomputes ``(p_o - p_e) / (1 - p_e)`` from its confusion matrix (vectorised; it equals
    scikit-learn's value). Replicates where kappa is undefined (``p_e = 1``) are dropped. Returns ``None``
    when kappa itself is undefined or fewer than half the replicates are defined.
    """
    x, y = paired(a, b)
    if len(set(x) | set(y)) < 2:
        return None
    labels = sorted(set(x) | set(y))
    code = {label: i for i, label in enumerate(labels)}
    k, n = len(labels), len(x)
    xi = np.array([code[v] for v in x])
    yi = np.array([code[v] for v in y])
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    cells = xi[idx] * k + yi[idx] + (np.arange(n_boot) * k * k)[:, None]
    counts = np.bincount(cells.ravel(), minlength=n_boot * k * k).reshape(n_boot, k, k) / n
    p_o = np.trace(counts, axis1=1, axis2=2)
    p_e = (counts.sum(axis=2) * counts.sum(axis=1)).sum(axis=1)
    ok = p_e < 1 - 1e-12
    if ok.sum() < n_boot / 2:
        return None
    kappas = (p_o[ok] - p_e[ok]) / (1 - p_e[ok])
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(kappas, [tail, 100 - tail])
    return round(float(lo), 4), round(float(hi), 4)


def krippendorff_alpha(units: Sequence[Sequence[str | None]]) -> Value:
    """Krippendorff's alpha for nominal labels, any number of raters, blanks allowed.

    ``alpha = 1 - D_o / D_e``. Build the coincidence matrix ``o``: every unit u with ``m_u >= 2`` labels adds,
    for each ordered pair of its labels (c, k) from different raters, ``1 / (m_u - 1)`` to ``o[c, k]``.
    With ``n_c = sum_k o[c, k]`` and ``n = sum_c n_c`` (the pairable labels),
    ``D_o = sum_{c != k} o[c, k] / n`` and ``D_e = sum_{c != k} n_c * n_k / (n * (n - 1))``, so
    ``alpha = 1 - (n - 1) * sum_{c != k} o[c, k] / sum_{c != k} n_c * n_k``. Units with fewer than two labels
    are not pairable and are left out. 1 is perfect agreement, 0 is chance level.

    Edge cases: no pairable unit -> ``None``; every pairable label the same -> ``D_e = 0``: ``None``.

    Args:
        units: one sequence per item, one label (or ``None``) per rater.
    """
    o: defaultdict[tuple[str, str], float] = defaultdict(float)
    for unit in units:
        values = Counter(v for v in unit if v is not None)
        m = sum(values.values())
        if m < 2:
            continue
        for c, nc in values.items():
            for k, nk in values.items():
                o[(c, k)] += (nc * (nc - 1) if c == k else nc * nk) / (m - 1)
    n_c: defaultdict[str, float] = defaultdict(float)
    for (c, _), v in o.items():
        n_c[c] += v
    n = sum(n_c.values())
    pairable = sum(1 for u in units if sum(v is not None for v in u) >= 2)
    if n == 0:
        return Value(None, 0, "undefined: no item labelled by two or more annotators")
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        only = next(iter(n_c))
        return Value(None, pairable, f"undefined: every label is {only}, so expected disagreement D_e = 0")
    observed = sum(v for (c, k), v in o.items() if c != k)
    return Value(1 - (n - 1) * observed / expected, pairable)
