"""The package layout the import contracts describe, checked the way a user would notice it breaking."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def test_precomem_runs_without_loading_any_dimobench_module():
    code = ("import sys; from precomem import PreCoMem, PreCoMemConfig; "
            "m = PreCoMem(PreCoMemConfig(encoder='hashing', nli='rule')); "
            "m.observe('I run along the canal before work most mornings.', turn=1); "
            "assert m.recall('morning exercise', k=3); "
            "print(sorted(n for n in sys.modules if n == 'dimobench' or n.startswith('dimobench.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


def test_no_module_imports_itself_back_through_another():
    graph = grimp.build_graph("dimobench", "precomem", exclude_type_checking_imports=True, cache_dir=None)
    cycles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.append((module, *back))
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_import_contracts_hold():
    out = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:]


def test_modules_stay_small_enough_to_read_in_one_sitting():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
             for pkg in ("dimobench", "precomem") for p in (ROOT / pkg).rglob("*.py")}
    assert statistics.median(sizes.values()) < 150
    assert not {p: n for p, n in sizes.items() if n > 400}
