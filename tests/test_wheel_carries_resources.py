"""A built wheel carries prompts/ and data/ and finds them without the checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_prompts_and_data(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("dimobench-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "dimobench/_resources/prompts/README.md" in names
    assert "dimobench/_resources/data/templates.json" in names
    assert any(n.startswith("dimobench/_resources/data/topics/") for n in names)
    assert any(n.startswith("precomem/") for n in names)
    # the web pages' assets: the review app's and report.html's (no CDN, so they must ship)
    assert {"dimobench/review/web/index.html", "dimobench/review/web/app.js",
            "dimobench/evaluate/web/report.html.j2", "dimobench/evaluate/web/report.js"} <= set(names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("from dimobench.resources import resource_dir; from dimobench.catalog import load_catalog; "
            "print(resource_dir('data')); print(len(load_catalog().topics))")
    r = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    where, topics = r.stdout.split()
    assert where.startswith(str(site)) and int(topics) >= 12
