"""``verify --repair``, ``--show``, ``--calibrate`` through the CLI, and a light CLI start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from dimobench.cli.app import app
from dimobench.suite.load import load_suite
from dimobench.verify.calibrate import plant_defects
from dimobench.verify.repair import repair_suite


def test_repair_fixes_planted_items_and_keeps_counts(verify_base: Path, tmp_path: Path) -> None:
    copy = tmp_path / "planted"
    planted = plant_defects(verify_base, copy, per_defect=3, seed=2)
    before = load_suite(copy).qa
    result = repair_suite(copy)
    after = load_suite(copy).qa
    assert [q.qa_id for q in after] == [q.qa_id for q in before]
    assert set(planted) <= set(result.repaired) | set(result.unrepaired)
    assert len(result.repaired) >= 0.9 * len(planted)
    assert all(v.verdict == "ACCEPT" for v in result.verdicts if v.qa_id in result.repaired)
    assert CliRunner().invoke(app, ["validate", str(copy)]).exit_code == 0


def test_cli_verify_show_and_errors(suite_copy: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["verify", str(suite_copy), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert {"overall", "criterion", "qa_type", "persona"} <= set(summary)
    qa_id = load_suite(suite_copy).qa[0].qa_id
    res = runner.invoke(app, ["verify", str(suite_copy), "--show", qa_id])
    assert res.exit_code == 0 and "temporally_valid" in res.stdout and "evidence" in res.stdout
    assert runner.invoke(app, ["verify", str(suite_copy), "--only", "nonsense"]).exit_code == 2
    assert runner.invoke(app, ["verify", str(suite_copy), "--show", "nope"]).exit_code == 2


def test_cli_calibrate_json(verify_base: Path) -> None:
    res = CliRunner().invoke(app, ["verify", "--calibrate", str(verify_base), "--per-defect", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["planted"] > 0


def test_cli_start_up_imports_no_torch_or_pandas() -> None:
    code = "import sys, dimobench.cli.app; print('torch' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
