"""Default plans of big matmuls chosen by the cost model among the heuristic's shortlist
(tuning/ranked.py): never slower than the heuristic by the model, still matching PyTorch, cached,
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
    assert fixed[0] == {}
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


def test_a_choice_never_predicted_slower_than_the_heuristic():
    expr = "F.linear(torch.randn(128,512), torch.randn(2048,512))"  # fp32, 2^27 MACs
    (task,) = tasks(deplo.compile(expr, seed=0, rank=False))
    assert ranked.eligible(task)
    plan, us, default_us = ranked.choose(task, "h100")
    assert us <= default_us
    assert plan == task.default or us < default_us * ranked.MARGIN


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
                                   '"default_us": 2}', "not json"])
def test_a_bad_cache_entry_is_chosen_again(k_proj_task, monkeypatch, tmp_path, entry):
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path))
    first = ranked.cached_choice(k_proj_task, "h100")
    (path,) = (tmp_path / "ranked").glob("*.json")
    path.write_text(entry)
    assert ranked.cached_choice(k_proj_task, "h100") == first


def test_a_failing_choice_leaves_the_heuristic(monkeypatch, capsys):
    def broken(*_):
        raise RuntimeError("model broke")

    monkeypatch.setattr(ranked, "cached_choice", broken)
    compiled = deplo.compile(K_PROJ, seed=0, verbose=1)
    assert _plan(compiled) == _plan(deplo.compile(K_PROJ, seed=0, rank=False))
    assert "could not choose: model broke" in capsys.readouterr().err
