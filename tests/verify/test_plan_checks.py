"""Stage 6 rejects what the audit flags: plan checks on ``--qa-rules valid`` suites, calibrated on planted flags.

The suite records the catalog it was made from, so verify and audit judge it against that catalog whatever
``$DIMOBENCH_CATALOG`` says when they run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dimobench.suite.io import write_jsonl
from dimobench.suite.load import load_suite
from dimobench.verify import verify_suite
from dimobench.verify.calibrate import calibrate
from dimobench.verify.plant_flags import NEW_OFF_TOPIC, PLAN_DEFECTS
from tests.helpers.suites import generate

CATALOG_V2 = Path(__file__).resolve().parents[2] / "data" / "catalog-v2"


@pytest.fixture(scope="module")
def valid_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 personas x 300 turns, 2 drifts each, made from catalog-v2 under the validity rules."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIMOBENCH_CATALOG", str(CATALOG_V2))
        return generate(tmp_path_factory.mktemp("plan") / "valid", turns=300, drifts=2, personas=2, seed=41,
                        qa_rules="valid")


def test_the_suite_records_its_catalog_and_is_judged_against_it(valid_suite: Path, tmp_path: Path) -> None:
    manifest = json.loads((valid_suite / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["catalog"] == "catalog-v2"
    copy = tmp_path / "s"
    shutil.copytree(valid_suite, copy)
    # no $DIMOBENCH_CATALOG now: the packaged catalog would flag every option as off-topic
    result = verify_suite(copy, write=False)
    planned = [v for v in result.verdicts if any("plan check" in c.explanation for c in v.criteria.values())]
    assert planned == []
    assert sum(v.verdict == "ACCEPT" for v in result.verdicts) / len(result.verdicts) >= 0.9


def test_a_planted_new_words_option_is_rejected_unless_plan_checks_are_off(valid_suite: Path,
                                                                         tmp_path: Path) -> None:
    copy = tmp_path / "s"
    shutil.copytree(valid_suite, copy)
    suite = load_suite(copy)
    items = list(suite.qa)
    q = items[0]
    wrong = next(i for i in range(len(q.options)) if i != q.answer_index)
    options = list(q.options)
    options[wrong] = NEW_OFF_TOPIC[0]
    items[0] = q.model_copy(update={"options": options})
    write_jsonl(copy / "qa.jsonl", items)
    on = {v.qa_id: v for v in verify_suite(copy, write=False).verdicts}[q.qa_id]
    assert on.verdict == "REJECT"
    assert "plan check: off_topic_option" in on.criteria["unambiguous"].explanation
    off = {v.qa_id: v for v in verify_suite(copy, write=False, plan_checks="off").verdicts}[q.qa_id]
    assert "plan check" not in off.criteria["unambiguous"].explanation


def test_calibration_plants_each_flag_kind_and_catches_it(valid_suite: Path) -> None:
    report = calibrate(valid_suite, per_defect=10, seed=2)
    rows = report["per_defect"]
    assert isinstance(rows, dict)
    planted = {k for k in PLAN_DEFECTS if k in rows}
    # two drifts per persona: every kind has items it applies to, the reversion one included when drawn
    assert planted >= set(PLAN_DEFECTS) - {"temporal_ambiguous"}
    for kind in planted:
        assert rows[kind]["caught_rate"] >= 0.95, (kind, rows[kind])
    assert report["false_reject_rate"] is not None and report["false_reject_rate"] <= 0.05


def test_default_suites_keep_their_verdicts_and_on_rejects_their_distractors(tmp_path: Path) -> None:
    suite = generate(tmp_path / "v1", turns=120, personas=1, seed=3)
    auto = verify_suite(suite, write=False)
    assert not any("plan check" in c.explanation for v in auto.verdicts for c in v.criteria.values())
    on = verify_suite(suite, write=False, plan_checks="on")
    flagged = [v for v in on.verdicts if "plan check: never_gold_option" in v.criteria["implicit"].explanation]
    assert flagged and all(v.verdict == "REJECT" for v in flagged)


def test_bad_catalog_and_plan_checks_values_are_one_line_errors(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "dimobench", "generate", "--catalog", "no-such", "--out",
                        str(tmp_path / "x")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--catalog no-such" in r.stderr and "catalog-v2" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x").exists()
    r = subprocess.run([sys.executable, "-m", "dimobench", "verify", str(tmp_path), "--plan-checks", "maybe"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--plan-checks" in r.stderr and "Traceback" not in r.stderr
