"""Default plans of big matmuls and attention chosen by the cost model among the heuristic's
shortlist (tuning/ranked.py): never slower than the heuristic by the model, still matching PyTorch, cached,
and out of the way of pinned plans, `rank=False`/`--no-rank` and a machine without NVRTC."""

from __future__ import annotations

import json

import pytest

import deplo
from deplo.hardware import model_for
from deplo.passes.tile import planner
from deplo.runtime.gpu import gpu_probe
from deplo.tools.deplo_main import main
from deplo.tuning import ranked
from deplo.tuning.search import plan_id
from deplo.tuning.tune import tasks

# TinyLlama's k_proj at 32 tokens in bf16: the heuristic sums 16 splits in a second kernel; the
# model prefers the last block of each tile summing them (8.6 -> 5.6 us predicted)
K_PROJ = ("F.linear(torch.randn(32,2048,dtype=torch.bfloat16), "
          "torch.randn(256,2048,dtype=torch.bfloat16))")
SMALL = "F.linear(torch.randn(64,256), torch.randn(96,256))"
# a long causal GQA attention in bf16: the heuristic walks the keys in 2 slices (blocks of 4
# warps); the model prefers 4 (10.5 -> 8.5 us)
ATTENTION = ("F.scaled_dot_product_attention(torch.randn(1,4,512,64,dtype=torch.bfloat16), "
             "torch.randn(1,1,512,64,dtype=torch.bfloat16), "
             "torch.randn(1,1,512,64,dtype=torch.bfloat16), is_causal=True, enable_gqa=True)")
GPU = model_for(None, *gpu_probe())  # the parameters a compile here chooses with
pytestmark = pytest.mark.skipif(not ranked.nvrtc_works(), reason="no NVRTC: nothing is ranked")


def _plan(compiled) -> dict:
    (plan,) = compiled.plans()["kernels"].values()
    return plan["knobs"]


@pytest.fixture(scope="module")
def k_proj_task():
    (task,) = tasks(deplo.compile(K_PROJ, seed=0, rank=False))
    return task


def test_the_shortlist_starts_with_the_heuristic_and_completes_to_distinct_legal_plans(
        k_proj_task):
    task = k_proj_task
    facts = dict(task.classes["matmul"])
    fixed = planner.matmul_shortlist(facts)
    assert {"split_sum": "kernel"} in fixed and any("splits" in f for f in fixed)
    plans = []
    for f in fixed:
        try:
            plans.append(planner.complete(task.name, "matmul", task.classes["matmul"], f))
        except planner.PlanError:
            pass
    ids = {plan_id(p.knob_dict) for p in plans}
    assert len(ids) >= 5  # tiles, splits and both sums: the model has something to choose from
    assert all(not p.violations() for p in plans)


def test_the_model_chooses_a_faster_plan_and_it_matches_pytorch(k_proj_task):
    plan, us, default_us = ranked.choose(k_proj_task, GPU)
    assert plan != k_proj_task.default
    assert us < default_us * ranked.MARGIN
    compiled = deplo.compile(K_PROJ, seed=0)
    assert _plan(compiled) == {k: v for k, v in plan.items() if k != "kind"}
    assert _plan(compiled) != _plan(deplo.compile(K_PROJ, seed=0, rank=False))
    assert compiled.check(seed=1).ok


@pytest.mark.parametrize("faster, chosen", [(0.5, "other"), (0.99, "heuristic")])
def test_the_fastest_wins_by_the_margin(k_proj_task, monkeypatch, faster, chosen):
    """The fastest candidate replaces the heuristic's plan only when it is MARGIN faster."""
    picked = {}

    def fake(task, plan, gpu, registers=False):
        if plan == task.default:
            return 10.0
        if not picked:  # the first other legal candidate is the fast one; the rest are slow
            picked["plan"] = plan
        return 10.0 * faster if plan == picked["plan"] else 20.0

    monkeypatch.setattr(ranked, "predict_us", fake)
    plan, us, default_us = ranked.choose(k_proj_task, "h100")
    assert default_us == 10.0
    expect = picked["plan"] if chosen == "other" else k_proj_task.default
    assert plan == expect and us == (10.0 * faster if chosen == "other" else 10.0)


def test_attention_is_ranked_and_the_choice_matches_pytorch():
    (task,) = tasks(deplo.compile(ATTENTION, seed=0, rank=False))
    assert ranked.eligible(task)
    plan, us, default_us = ranked.choose(task, GPU)
    assert plan != task.default and us < default_us * ranked.MARGIN
    compiled = deplo.compile(ATTENTION, seed=0)
    assert _plan(compiled) == {k: v for k, v in plan.items() if k != "kind"}
    assert compiled.check(seed=1).ok


def test_the_attention_shortlist_completes_to_legal_plans():
    """Slices of the keys and, on tensor cores, warps; SIMT rows, parts of the head dim (with
    the heuristic's lanes a row or their own): the plans the class refuses (a slice count the
    steps do not allow) are dropped, the rest are distinct and legal."""
    fp32 = ATTENTION.replace(",dtype=torch.bfloat16", "")
    simt = {"key_splits", "head_parts", "threads", "lane_keys"}
    for expr, knobs in ((fp32, simt), (ATTENTION, {"key_splits", "warps"})):
        (task,) = tasks(deplo.compile(expr, seed=0, rank=False))
        facts = task.classes["attention"]
        fixed = planner.attention_shortlist(dict(facts))
        assert fixed[0] == {} and {k for f in fixed for k in f} == knobs
        plans = []
        for f in fixed:
            try:
                plans.append(planner.complete(task.name, "attention", facts, f))
            except planner.PlanError:
                pass
        assert len({plan_id(p.knob_dict) for p in plans}) >= 3
        assert all(not p.violations() for p in plans)


def test_small_kernels_keep_the_heuristic():
    (task,) = tasks(deplo.compile(SMALL, seed=0, rank=False))
    assert not ranked.eligible(task)
    assert _plan(deplo.compile(SMALL, seed=0)) == _plan(deplo.compile(SMALL, seed=0, rank=False))


def test_the_choice_is_cached(k_proj_task, monkeypatch, tmp_path):
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path))
    first = ranked.cached_choice(k_proj_task, "h100")

    def fail(*_):
        raise AssertionError("predicted again")

    monkeypatch.setattr(ranked, "predict_us", fail)
    assert ranked.cached_choice(k_proj_task, "h100") == first
    assert list((tmp_path / "ranked").glob("*.json"))


def test_pinned_plans_win_over_the_choice(k_proj_task):
    heuristic = {k: v for k, v in k_proj_task.default.items() if k != "kind"}
    pins = {"format": "deplo-plans/1", "kernels": {k_proj_task.key: {
        "name": k_proj_task.name, "kind": "matmul", "knobs": heuristic}}}
    assert _plan(deplo.compile(K_PROJ, seed=0, schedule=pins)) == heuristic


def test_without_nvrtc_the_heuristic_stands(monkeypatch):
    monkeypatch.setattr(ranked, "nvrtc_works", lambda: False)
    assert _plan(deplo.compile(K_PROJ, seed=0)) == _plan(deplo.compile(K_PROJ, seed=0,
                                                                         rank=False))


def test_cli_no_rank_and_verbose(tmp_path, capsys):
    ranked_out, heuristic_out = tmp_path / "r.json", tmp_path / "h.json"
    assert main(["compile", "-c", K_PROJ, "-v", "--schedule-out", str(ranked_out)]) == 0
    assert f"chosen by the cost model ({GPU})" in capsys.readouterr().err
    assert main(["compile", "-c", K_PROJ, "--no-rank", "--schedule-out",
                 str(heuristic_out)]) == 0
    (r,) = json.loads(ranked_out.read_text())["kernels"].values()
    (h,) = json.loads(heuristic_out.read_text())["kernels"].values()
    assert r["knobs"]["split_sum"] == "last_block" and h["knobs"]["split_sum"] == "kernel"


def test_the_tuner_starts_from_the_choice(k_proj_task, tmp_path):
    """A store tuned with a small budget never pins a plan slower than the default compile's."""
    from deplo.tuning.store import TuningStore
    from deplo.tuning.tune import Evaluator, tune

    compiled = deplo.compile(K_PROJ, seed=0, rank=False)
    with TuningStore(tmp_path / "t.sqlite") as store:
        (rep,) = tune(compiled, store, 1, Evaluator("h100"), lambda plans: True)
    assert rep.best.time_us <= ranked.cached_choice(k_proj_task, "h100")[1] + 1e-9


@pytest.mark.parametrize("entry", ["[]", "null", '{"plan": "x", "us": 1, "default_us": 2}',
                                   '{"plan": {"kind": "matmul", "splits": 3}, "us": 1, '
                                   '"default_us": 2}', "not json", "OTHER_WITHOUT_TIMES"])
def test_a_bad_cache_entry_is_chosen_again(k_proj_task, monkeypatch, tmp_path, entry):
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path))
    first = ranked.cached_choice(k_proj_task, "h100")
    (path,) = (tmp_path / "ranked").glob("*.json")
    if entry == "OTHER_WITHOUT_TIMES":  # a plan other than the heuristic's needs its times
        entry = json.dumps({"plan": first[0], "us": None, "default_us": None})
    path.write_text(entry)
    assert ranked.cached_choice(k_proj_task, "h100") == first


def test_a_heuristic_plan_without_times_is_reused(k_proj_task, monkeypatch, tmp_path):
    """No prediction for the heuristic's plan (no registers): kept, and not chosen again."""
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ranked, "predict_us", lambda *a, **k: None)
    assert ranked.cached_choice(k_proj_task, "h100") == (k_proj_task.default, None, None)

    def fail(*_, **__):
        raise AssertionError("chosen again")

    monkeypatch.setattr(ranked, "predict_us", fail)
    assert ranked.cached_choice(k_proj_task, "h100") == (k_proj_task.default, None, None)


def test_a_failing_choice_leaves_the_heuristic(monkeypatch, capsys):
    def broken(*_):
        raise RuntimeError("model broke")

    monkeypatch.setattr(ranked, "cached_choice", broken)
    compiled = deplo.compile(K_PROJ, seed=0, verbose=1)
    assert _plan(compiled) == _plan(deplo.compile(K_PROJ, seed=0, rank=False))
    assert "could not choose: model broke" in capsys.readouterr().err


def test_bisect_lowers_with_the_plans_compile_uses():
    """bisect pins the program's plan file, which (like a tuning store's) may name other
    programs' kernels: not strict."""
    from deplo.tools.api import random_inputs
    from deplo.tools.bisect import bisect

    compiled = deplo.compile(K_PROJ, seed=0)
    plans = json.loads(compiled.plan_file())
    plans["kernels"]["0123456789abcdef"] = {"name": "other", "kind": "pointwise", "knobs": {}}
    program = compiled.program
    inputs = random_inputs(program, 0)
    reference = program.reference(inputs[: len(program.example_inputs)])
    steps = bisect(program.module, inputs, reference, "to-tile", schedule=json.dumps(plans),
                   strict=False, keep_going=True).steps  # (bf16 against fp32 tolerances)
    (planned,) = [s for s in steps if s.after == "tile-plan"]
    assert planned.error is None and planned.how == "cpu", planned.line()


def test_a_plan_that_spills_is_never_chosen(k_proj_task, monkeypatch):
    """A GPU build refuses a kernel that spills (runtime/program.py), so the model's choice
    must not pin one: with registers, a spilling report is no prediction."""
    from deplo.runtime.gpu.ptxas import PtxasReport
    from deplo.tuning import tune

    monkeypatch.setattr(tune, "_ptxas", lambda module: {"linear": PtxasReport(
        registers=255, spill_stores=8, spill_loads=8)})
    assert tune.predict_us(k_proj_task, k_proj_task.default, "h100", registers=True) is None
    assert tune.predict_us(k_proj_task, k_proj_task.default, "h100") is not None


# a conv1d whose 8 x 8 register tile takes 175 registers (its input window read from global
# memory): one block of 256 threads an SM, its blocks in two waves; 8 x 4 (80) fits two
CONV1D = "F.conv1d(torch.randn(8,256,1024), torch.randn(256,256,3), padding=1)"


def test_the_shortlist_offers_half_register_tiles_the_heuristic_does_not_pick():
    """The peaks rank 8 x 8 first and cannot see its registers; the model's shortlist has the
    fastest 8 x 4 or 4 x 8 tile as well, the heuristic's own tiles do not."""
    facts = {"chain": (8, 256, 1024), "k": 768, "tensor_cores": False, "splittable": True,
             "slabs": ("ik4",)}
    sizes = {f["reg_m"] * f["reg_n"] for f in planner.matmul_shortlist(facts) if "reg_m" in f}
    assert sizes == {64, 32}, sizes
    mma, heuristic = planner._tiles(facts, {})
    assert not mma and {t[0] * t[1] for t, *_ in heuristic} == {64, 16}


def test_the_model_chooses_a_half_register_tile_where_8x8_fits_one_block():
    (task,) = [t for t in tasks(deplo.compile(CONV1D, seed=0, rank=False))
               if t.default["kind"] == "matmul"]
    assert task.default["reg_m"] * task.default["reg_n"] == 64
    plan, us, default_us = ranked.choose(task, GPU)
    assert plan["reg_m"] * plan["reg_n"] == 32 and us < 0.7 * default_us, (plan, us, default_us)


# TinyLlama's fp32 causal GQA attention at 32 tokens: 2^21 multiply-adds, SIMT rows
FP32_ATTENTION = ("F.scaled_dot_product_attention(torch.randn(1,32,32,64), "
                  "torch.randn(1,4,32,64), torch.randn(1,4,32,64), is_causal=True, "
                  "enable_gqa=True)")


def test_short_simt_attention_is_ranked_over_parts_of_the_head_dim():
    """A key's dot product is a chain of a lane's FMAs: at 32 keys the model prefers 16
    elements a lane to the heuristic's 32, and the choice matches PyTorch."""
    (task,) = tasks(deplo.compile(FP32_ATTENTION, seed=0, rank=False))
    assert ranked.eligible(task) and task.default["head_parts"] == 2
    plan, us, default_us = ranked.choose(task, GPU)
    assert plan["head_parts"] == 4 and us < default_us * ranked.MARGIN, (plan, us, default_us)
    compiled = deplo.compile(FP32_ATTENTION, seed=0)
    assert _plan(compiled)["head_parts"] == 4 and compiled.check(seed=1).ok
