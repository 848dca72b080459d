"""`deplo explore`: one self-contained page holding every pass of the pipeline (IR after it, diff
against the IR before), the kernels (plan, launch, ptxas, prediction, CUDA) and the checks; a
TinyLlama layer's page stays small; a real browser renders it where one is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_cli import run

from deplo.tools.explore import _pass_levels, render

RMS = "torch.nn.RMSNorm(256)(torch.randn(2,8,256))"


def _blob(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.DOTALL)
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def rms_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore") / "rms.html"
    p = run("deplo", "explore", "-c", RMS, "--check", "-o", str(out))
    assert p.returncode == 0, p.stderr
    return out


def test_every_pass_with_its_ir_and_diff(rms_page) -> None:
    page = rms_page.read_text()
    data = _blob(page)
    names = [p["name"] for p in data["passes"]]
    assert names == ["import"] + [spec.split("{")[0] for spec, _ in _pass_levels()]
    assert [p["level"] for p in data["passes"]][:2] == ["torch", "tir"]
    assert data["passes"][-1]["level"] == "cuda"
    assert data["passes"][0]["ir"].startswith("builtin.module")
    for p in data["passes"][1:]:
        assert p["changed"] == bool(p["diff"]) and (p["ir"] is None) == (not p["changed"])
    assert any(p["name"] == "loop-fuse" and p["changed"] for p in data["passes"])


def test_kernels_speed_and_checks(rms_page) -> None:
    data = _blob(rms_page.read_text())
    (k,) = data["kernels"]
    assert k["plan"]["kind"] == "row_reduce" and k["predicted_us"] > 0 and k["bound"]
    assert 'extern "C" __global__' in k["cuda"] and k["registers"]
    checks = data["checks"]
    assert [c["after"] for c in checks][1:] == [p["name"] for p in data["passes"]][1:]
    assert {c["how"] for c in checks} == {"interp", "cpu"} and checks[-1]["level"] == "cuda"
    assert all(c["ok"] for c in checks), [c for c in checks if not c["ok"]]


def test_the_page_stands_alone(rms_page) -> None:
    page = rms_page.read_text()
    assert not re.search(r"<(script|img|link)[^>]*\b(src|href)=", page)
    assert "url(" not in page and "@import" not in page
    sneaky = render({"title": "x", "passes": [{"ir": "</script><b>"}]})
    assert "</script><b>" not in sneaky and _blob(sneaky)["passes"][0]["ir"] == "</script><b>"


def test_a_tinyllama_layer_page_stays_small(tmp_path) -> None:
    out = tmp_path / "layer.html"
    p = run("deplo", "explore", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--layer", "0", "-o",
            str(out))
    assert p.returncode == 0, p.stderr
    assert out.stat().st_size < 5e6
    data = _blob(out.read_text())
    assert {k["plan"]["kind"] for k in data["kernels"]} >= {"matmul", "row_reduce", "attention"}
    assert any(m.endswith("self_attn.q_proj") for k in data["kernels"] for m in k["modules"])
    # every torch op is listed with the kernels that implement it, and the two agree
    ops = {o["name"]: o for o in data["torch_ops"]}
    q = next(o for o in ops.values() if (o["module"] or "").endswith("self_attn.q_proj"))
    assert q["op"] == "aten.linear" and q["at"].startswith("modeling_llama.py:") and q["kernels"]
    by_name = {k["name"]: k for k in data["kernels"]}
    assert all(q["line"] in by_name[k]["origin"] for k in q["kernels"])
    sdpa = next(o for o in ops.values() if o["op"] == "aten.scaled_dot_product_attention")
    assert len(sdpa["kernels"]) == 1 and by_name[sdpa["kernels"][0]]["plan"]["kind"] == "attention"


CLICKS = """
const passes = document.querySelectorAll(".pass");
click(passes.find((p) => p.textContent.startsWith("loop-fuse")));
const adds = document.querySelectorAll("#diff .add").length;
click(document.querySelector("button[data-tab=kernels]"));
const rects = document.querySelectorAll("#speed rect").length;
click(document.querySelector("tr.op"));
const kernelsOfOp = document.querySelectorAll("tr.kernel.hl").map((r) => r.dataset.name);
click(document.querySelector("tr.kernel"));
const opsOfKernel = document.querySelectorAll("tr.op.hl").map((r) => r.dataset.line);
click(document.querySelector("button[data-tab=checks]"));
report({ passes: passes.length, adds, rects, kernelsOfOp, opsOfKernel,
         checks: document.querySelectorAll("#checks tr").length });
"""


def test_the_page_script_runs_under_node(rms_page, tmp_path) -> None:
    """Where no browser exists: the page's own script under node on a small DOM stand-in
    (test/python/explore_dom.js), clicked through every view, torch op <-> kernel included."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    checks = tmp_path / "checks.js"
    checks.write_text(CLICKS)
    p = subprocess.run(["node", str(Path(__file__).with_name("explore_dom.js")), str(rms_page),
                        str(checks)], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    data = _blob(rms_page.read_text())
    assert got["passes"] == len(data["passes"]) and got["adds"] > 0 and got["rects"] >= 2
    (op,) = data["torch_ops"]
    assert op["op"] == "aten.rms_norm" and op["module"] == "rmsnorm"
    assert got["kernelsOfOp"] == ["rms_norm"] and got["opsOfKernel"] == [op["line"]]
    assert got["checks"] == len(data["checks"]) + 1  # a header row and one row a pass


def test_a_browser_renders_it(rms_page, tmp_path) -> None:
    """Headless Chromium (playwright): no console errors, the pass list has every pass, a click
    on a pass shows its diff, the speed chart draws; a screenshot for review in tmp_path."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        try:
            browser = pw.chromium.launch()
        except sync_api.Error as e:
            pytest.skip(f"no usable Chromium ({str(e).splitlines()[0][:120]}); "
                        "`python -m playwright install --with-deps chromium`")
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(rms_page.as_uri())
        assert page.locator(".pass").count() == len(_blob(rms_page.read_text())["passes"])
        page.locator(".pass", has_text="loop-fuse").first.click()
        assert page.locator("#diff .add").count() > 0
        page.screenshot(path=str(tmp_path / "explore.png"), full_page=True)
        page.locator("button[data-tab=kernels]").click()
        assert page.locator("#speed rect").count() >= 2
        page.locator("tr.op").first.click()
        assert page.locator("tr.kernel.hl").count() == 1
        browser.close()
    assert errors == []
