"""Score a checked set of sheets: kappa, alpha, raw agreement, confusion, strata, and the verifier vs people.

``compute_agreement`` returns the plain dict written to ``agreement.json``. With two sheets ``kappa`` is
Cohen's kappa; with more it is the mean of the defined pairwise kappas (Light's kappa) and ``alpha`` holds
Krippendorff's alpha. The gate reads ``kappa["verdict"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, cast

from dimobench.agreement import (
    METRICS,
    Value,
    bootstrap_kappa,
    cohen_kappa,
    confusion,
    krippendorff_alpha,
    raw_agreement,
)
from dimobench.review.checks import ReviewSet
from dimobench.review.sheets import CRITERIA, FIELDS, labels_for

FORMAT = "dimobench-agreement"
FORMAT_VERSION = 1


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def column(rs: ReviewSet, sheet: int, field: str, ids: Sequence[str] | None = None) -> list[str | None]:
    """One annotator's labels of one field, in sample order (or for ``ids``)."""
    labels = rs.sheets[sheet].labels
    return [labels[q][field] for q in (rs.qa_ids if ids is None else ids)]


def disagrees(rs: ReviewSet, qa_id: str, field: str) -> bool | None:
    """Whether the annotators who labelled ``field`` of ``qa_id`` differ (``None``: fewer than 2 labels)."""
    given = [s.labels[qa_id][field] for s in rs.sheets if s.labels[qa_id][field] is not None]
    return None if len(given) < 2 else len(set(given)) > 1


def _rate(flags: Sequence[bool | None]) -> float | None:
    known = [f for f in flags if f is not None]
    return _r(sum(known) / len(known)) if known else None


def _field_kappa(rs: ReviewSet, field: str, ids: Sequence[str] | None = None) -> Value:
    pairs = list(combinations(range(len(rs.sheets)), 2))
    values = [cohen_kappa(column(rs, i, field, ids), column(rs, j, field, ids)) for i, j in pairs]
    if len(pairs) == 1:
        return values[0]
    defined = [v.value for v in values if v.value is not None]
    if not defined:
        return Value(None, 0, "undefined for every pair: " + (values[0].note or ""))
    return Value(sum(defined) / len(defined), min(v.n for v in values),
                 None if len(defined) == len(values) else f"mean over {len(defined)} of {len(values)} pairs")


def _pairs(rs: ReviewSet, n_boot: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, j in combinations(range(len(rs.sheets)), 2):
        entry: dict[str, Any] = {"kappa": {}, "kappa_ci": {}, "raw_agreement": {}, "confusion": {}}
        for f in FIELDS:
            a, b = column(rs, i, f), column(rs, j, f)
            entry["kappa"][f] = cohen_kappa(a, b).value
            entry["kappa_ci"][f] = bootstrap_kappa(a, b, n_boot=n_boot, seed=seed)
            entry["raw_agreement"][f] = _r(raw_agreement(a, b).value)
            entry["confusion"][f] = {"rows": rs.names[i], "columns": rs.names[j],
                                     "labels": list(labels_for(f)), "matrix": confusion(a, b, labels_for(f))}
        out[f"{rs.names[i]} vs {rs.names[j]}"] = entry
    return out


def _strata(rs: ReviewSet) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for q in rs.qa_ids:
        groups.setdefault(rs.strata.get(q, "all"), []).append(q)
    out: dict[str, dict[str, Any]] = {}
    for name, ids in groups.items():
        rates = {f: _rate([disagrees(rs, q, f) for q in ids]) for f in FIELDS}
        anyd = _rate([any(disagrees(rs, q, f) for f in FIELDS) for q in ids])
        out[name] = {"n": len(ids), "disagreement": rates, "any_disagreement": anyd}
    return dict(sorted(out.items(), key=lambda kv: (-(kv[1]["disagreement"]["verdict"] or 0), kv[0])))


def _items(rs: ReviewSet, limit: int = 20) -> list[dict[str, Any]]:
    rows = []
    for q in rs.qa_ids:
        fields = [f for f in FIELDS if disagrees(rs, q, f)]
        if fields:
            rows.append({"qa_id": q, "stratum": rs.strata.get(q, "all"), "fields": fields,
                         "verdicts": {s.name: s.labels[q]["verdict"] for s in rs.sheets}})
    rows.sort(key=lambda r: (-("verdict" in r["fields"]), -len(r["fields"]), r["qa_id"]))
    return rows[:limit]


def consensus(rs: ReviewSet) -> dict[str, str]:
    """Items whose verdict every annotator labelled alike: ``qa_id -> verdict``."""
    out: dict[str, str] = {}
    for q in rs.qa_ids:
        given = {s.labels[q]["verdict"] for s in rs.sheets}
        if len(given) == 1 and None not in given:
            out[q] = cast(str, next(iter(given)))  # the one label given, and it is not None
    return out


def _versus(people: Mapping[str, str | None], machine: Mapping[str, str]) -> dict[str, Any]:
    ids = [q for q in people if people[q] is not None and q in machine]
    a, b = [people[q] for q in ids], [machine[q] for q in ids]
    k = cohen_kappa(a, b)
    return {"n": len(ids), "agreement": _r(raw_agreement(a, b).value), "kappa": _r(k.value),
            "kappa_note": k.note}


def verifier_agreement(rs: ReviewSet, verdicts: Mapping[str, Any], human: Mapping[str, str] | None
                       ) -> dict[str, Any]:
    """How often the verifier's verdicts (``qa_id -> VerdictRecord``) match the people's.

    The headline ``agreement`` compares with the adjudicated human verdicts when the suite has them
    (``human_verdicts.jsonl``), otherwise with the items every annotator labelled alike.
    """
    machine = {q: verdicts[q].verdict for q in rs.qa_ids if q in verdicts}
    out: dict[str, Any] = {"n_with_verdict": len(machine), "n_without_verdict": len(rs.qa_ids) - len(machine)}
    out["per_annotator"] = {s.name: _versus({q: s.labels[q]["verdict"] for q in rs.qa_ids}, machine)
                            for s in rs.sheets}
    per_criterion: dict[str, Any] = {}
    for c in CRITERIA:
        mc = {q: verdicts[q].criteria[c].verdict for q in machine if c in verdicts[q].criteria}
        per_criterion[c] = {s.name: _versus({q: s.labels[q][c] for q in rs.qa_ids}, mc) for s in rs.sheets}
    out["per_criterion"] = per_criterion
    out["consensus"] = _versus(dict(consensus(rs)), machine)
    if human is not None:
        out["adjudicated"] = _versus({q: human.get(q) for q in rs.qa_ids}, machine)
    head = out.get("adjudicated") or out["consensus"]
    out["source"] = "human_verdicts.jsonl" if human is not None else "items all annotators agreed on"
    out["agreement"], out["n"] = head["agreement"], head["n"]
    return out


def compute_agreement(rs: ReviewSet, min_kappa: float = 0.75, verdicts: Mapping[str, Any] | None = None,
                      human: Mapping[str, str] | None = None, n_boot: int = 1000, seed: int = 0
                      ) -> dict[str, Any]:
    """Every agreement figure of a checked set of sheets, as the plain dict of ``agreement.json``."""
    kappas = {f: _field_kappa(rs, f) for f in FIELDS}
    pairs = _pairs(rs, n_boot, seed)
    two = len(rs.sheets) == 2
    only = next(iter(pairs.values()))
    out: dict[str, Any] = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "sample_id": rs.sample_id,
        "annotators": rs.names, "sheets": [str(s.path) for s in rs.sheets], "n_items": len(rs.qa_ids),
        "fields": list(FIELDS), "metrics": METRICS,
        "kappa": {f: v.value for f, v in kappas.items()},
        "kappa_ci": dict(only["kappa_ci"]) if two else dict.fromkeys(FIELDS),
        "kappa_notes": {f: v.note for f, v in kappas.items() if v.note},
        "kappa_method": "cohen" if two else "mean pairwise cohen (intervals per pair under pairwise)",
        "n_labelled": {f: {s.name: sum(s.labels[q][f] is not None for q in rs.qa_ids) for s in rs.sheets}
                       for f in FIELDS},
        "raw_agreement": dict(only["raw_agreement"]) if two else
        {f: _r(_mean([p["raw_agreement"][f] for p in pairs.values()])) for f in FIELDS},
        "disagreement": {f: _rate([disagrees(rs, q, f) for q in rs.qa_ids]) for f in FIELDS},
    }
    if not two:
        alphas = {f: krippendorff_alpha([[s.labels[q][f] for s in rs.sheets] for q in rs.qa_ids])
                  for f in FIELDS}
        out["alpha"] = {f: v.value for f, v in alphas.items()}
        out["alpha_notes"] = {f: v.note for f, v in alphas.items() if v.note}
    out["pairwise"] = pairs
    out["confusion"] = {name: p["confusion"] for name, p in pairs.items()}
    out["by_stratum"] = _strata(rs)
    out["top_disagreements"] = _items(rs)
    calib = [q for q in rs.qa_ids if q in rs.calibration]
    ck = {f: _field_kappa(rs, f, calib) for f in FIELDS} if calib else {}
    out["calibration"] = {"n": len(calib), "kappa": {f: v.value for f, v in ck.items()},
                          "disagreement": {f: _rate([disagrees(rs, q, f) for q in calib]) for f in FIELDS}}
    value = kappas["verdict"].value
    out["gate"] = {"metric": "kappa.verdict", "min_kappa": min_kappa, "value": value,
                   "passed": value is not None and value >= min_kappa - 1e-12,
                   "note": kappas["verdict"].note}
    out["verifier"] = verifier_agreement(rs, verdicts, human) if verdicts else None
    return out


def _mean(xs: Sequence[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return sum(got) / len(got) if got else None
