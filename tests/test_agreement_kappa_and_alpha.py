"""Agreement metrics against hand-computed values and scikit-learn, including the undefined cases."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from dimobench.agreement import (
    bootstrap_kappa,
    cohen_kappa,
    confusion,
    krippendorff_alpha,
    raw_agreement,
)


def from_matrix(labels: list[str], matrix: list[list[int]]) -> tuple[list[str], list[str]]:
    """Rater labels realising a confusion matrix (rows: rater a)."""
    a, b = [], []
    for i, row in enumerate(matrix):
        for j, n in enumerate(row):
            a += [labels[i]] * n
            b += [labels[j]] * n
    return a, b


def test_two_class_hand_computed() -> None:
    # 10 items, [[4, 1], [1, 4]]: p_o = 0.8, p_e = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = 0.3 / 0.5 = 0.6
    a, b = from_matrix(["ACCEPT", "REJECT"], [[4, 1], [1, 4]])
    k = cohen_kappa(a, b)
    assert k.value == pytest.approx(0.6) and k.n == 10 and k.note is None
    assert raw_agreement(a, b).value == pytest.approx(0.8)
    assert confusion(a, b, ["ACCEPT", "REJECT"]) == [[4, 1], [1, 4]]


def test_three_class_hand_computed() -> None:
    # rows 5, 3, 2; columns 4, 3, 3; p_o = 8/10; p_e = (20 + 9 + 6) / 100 = 0.35; kappa = 0.45 / 0.65
    labels = ["ACCEPT", "REVISE", "REJECT"]
    a, b = from_matrix(labels, [[4, 1, 0], [0, 2, 1], [0, 0, 2]])
    assert cohen_kappa(a, b).value == pytest.approx(0.45 / 0.65)
    assert confusion(a, b, labels) == [[4, 1, 0], [0, 2, 1], [0, 0, 2]]


@pytest.mark.parametrize("seed", range(10))
def test_kappa_equals_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    labels = ["ACCEPT", "REVISE", "REJECT"]
    a = [rng.choice(labels) for _ in range(60)]
    b = [x if rng.random() < 0.7 else rng.choice(labels) for x in a]
    assert cohen_kappa(a, b).value == cohen_kappa_score(a, b)


def test_bootstrap_interval_is_seeded_and_brackets_kappa() -> None:
    a, b = from_matrix(["ACCEPT", "REVISE", "REJECT"], [[40, 5, 1], [4, 20, 2], [1, 2, 25]])
    k = cohen_kappa(a, b).value
    ci = bootstrap_kappa(a, b, seed=1)
    assert ci is not None and ci[0] < k < ci[1]
    assert bootstrap_kappa(a, b, seed=1) == ci and bootstrap_kappa(a, b, seed=2) != ci


def test_bootstrap_replicate_formula_matches_sklearn() -> None:
    # one replicate with n_boot = 1 resamples the items; check it against sklearn on the same resample
    import numpy as np

    a, b = from_matrix(["ACCEPT", "REJECT", "REVISE"], [[9, 2, 1], [3, 7, 0], [1, 1, 6]])
    idx = np.random.default_rng(9).integers(0, len(a), size=(1, len(a)))[0]
    expected = cohen_kappa_score([a[i] for i in idx], [b[i] for i in idx])
    lo, hi = bootstrap_kappa(a, b, n_boot=1, seed=9, level=0.0)  # type: ignore[misc]
    assert lo == hi == pytest.approx(expected, abs=1e-4)


def test_single_class_for_both_raters_is_undefined_not_a_crash() -> None:
    k = cohen_kappa(["ACCEPT"] * 8, ["accept".upper()] * 8)
    assert k.value is None and k.n == 8 and "p_e = 1" in (k.note or "")
    assert bootstrap_kappa(["ACCEPT"] * 8, ["ACCEPT"] * 8) is None
    assert raw_agreement(["ACCEPT"] * 8, ["ACCEPT"] * 8).value == 1.0


def test_one_constant_rater_is_defined() -> None:
    a = ["ACCEPT"] * 6
    b = ["ACCEPT"] * 4 + ["REJECT"] * 2
    assert cohen_kappa(a, b).value == cohen_kappa_score(a, b) == 0.0


def test_blanks_are_left_out_and_empty_is_explained() -> None:
    a = ["ACCEPT", None, "REJECT", "ACCEPT"]
    b = ["ACCEPT", "REJECT", None, "REJECT"]
    assert cohen_kappa(a, b).n == 2
    empty = cohen_kappa([None, None], [None, "ACCEPT"])
    assert empty.value is None and empty.n == 0 and "no item" in (empty.note or "")
    assert cohen_kappa([], []).value is None
    assert raw_agreement([], []).value is None


def test_krippendorff_reference_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units, nominal: 0.743
    rows = ["1 2 3 3 2 1 4 1 2 . . .", "1 2 3 3 2 2 4 1 2 5 . 3", ". 3 3 3 2 3 4 2 2 5 1 .",
            "1 2 3 3 2 4 4 1 2 5 1 ."]
    coders = [[None if v == "." else v for v in r.split()] for r in rows]
    alpha = krippendorff_alpha(list(zip(*coders, strict=True)))
    assert alpha.value == pytest.approx(0.743, abs=5e-4) and alpha.n == 11


def test_krippendorff_edge_cases() -> None:
    assert krippendorff_alpha([["A", "A", "A"], ["B", "B", None]]).value == pytest.approx(1.0)
    same = krippendorff_alpha([["A", "A"], ["A", "A", "A"]])
    assert same.value is None and "D_e = 0" in (same.note or "")
    none = krippendorff_alpha([["A", None], [None, None]])
    assert none.value is None and none.n == 0
