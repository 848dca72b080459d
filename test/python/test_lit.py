"""Runs the whole lit suite once (lit -j2) and reports one pytest item per .mlir file.

`pytest -k loop/ops` selects one file's result; lit's own output is shown when a file fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LIT_DIR = Path(__file__).resolve().parents[1] / "lit"
LIT_FILES = sorted(p.relative_to(LIT_DIR).as_posix() for p in LIT_DIR.rglob("*.mlir"))


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("lit")
    report = out / "results.json"
    env = dict(os.environ, DEPLO_LIT_OUT=str(out))
    cmd = [sys.executable, "-c", "import lit.main; lit.main.main()", str(LIT_DIR), "-q",
           "-j2", "-o", str(report)]
    subprocess.run(cmd, check=False, env=env, capture_output=True, text=True)
    data = json.loads(report.read_text())
    return {Path(t["name"].split(" :: ", 1)[1]).as_posix(): t for t in data["tests"]}


@pytest.mark.parametrize("name", LIT_FILES)
def test_lit(name: str, lit_results: dict[str, dict]) -> None:
    result = lit_results.get(name)
    assert result is not None, f"lit did not run {name}"
    assert result["code"] in ("PASS", "XFAIL"), result.get("output", "")
