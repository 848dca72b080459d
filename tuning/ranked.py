"""The cost model chooses the default plans of big matmuls and attention among the
heuristic's shortlist.

Why: the heuristic picks a matmul's tile and split of K by a peaks estimate
(`planner._tile_seconds`) that cannot see occupancy from ptxas's registers, the split-K sum's
cost or L2 reuse; the sm_90 model can, at about half a second a candidate. So for each matmul of
at least `RANKED_MACS` multiply-adds (a real model's projection, not a test's toy) the heuristic
proposes a few plans (`planner.matmul_shortlist`), the model predicts each (the kernel alone,
registers from NVRTC: `tune.predict_us`) and the fastest is pinned — the heuristic's own unless
another is `MARGIN` faster. A choice is cached on disk by the kernel, the GPU model, deplo's own
source and NVRTC's version. A tuning store's plans and --schedule's pins win over it; without
NVRTC (no registers, so occupancy would be a guess) the heuristic's plans stand. Only kernels
the heuristic plans as `matmul` (a token's projection is a row reduction) or `attention` (its
query rows x keys x head dim past the same size: `planner.attention_shortlist`) are ranked.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from deplo.dialects.tile_plan import PlanError
from deplo.passes.tile import planner
from deplo.runtime.cache import cache_dir, content_key, write_atomic
from deplo.tuning.search import plan_id
from deplo.tuning.tune import Task, plan_dict, predict_us, split_plan, tasks_of

RANKED_MACS = 1 << 24  # 32 x 256 x 2048: TinyLlama's k_proj at 32 tokens
RANKED_ATTENTION_MACS = 1 << 20
"""Attention's rows are chains of dependent FMAs whose latency the heuristic cannot weigh
(`planner.attention_shortlist`): ranked from a quarter of a prefill of 32 tokens (TinyLlama's:
32 heads x 32 rows x 32 keys x 64, 2^21)."""
MARGIN = 0.98  # another plan replaces the heuristic's when it is predicted 2% faster


def eligible(task: Task) -> bool:
    """A matmul or attention big enough that a better plan repays its seconds of choosing."""
    kind = task.default["kind"]
    if kind not in planner.SHORTLISTS:
        return False
    f = dict(task.classes[kind])
    if kind == "matmul":
        return math.prod(f["chain"]) * f["k"] >= RANKED_MACS
    return math.prod(f["rows"]) * f["keys"] * f["head_dim"] >= RANKED_ATTENTION_MACS


def choose(task: Task, gpu: str) -> tuple[dict, float | None, float | None]:
    """(plan, its predicted us, the heuristic's): the shortlist's fastest by the model."""
    kind = task.default["kind"]
    default_us = predict_us(task, task.default, gpu, registers=True)
    if default_us is None:
        return task.default, None, None
    best, best_us, seen = task.default, default_us, {plan_id(task.default)}
    for fixed in planner.SHORTLISTS[kind](dict(task.classes[kind])):
        try:
            plan = plan_dict(planner.complete(task.name, kind, task.classes[kind], fixed))
        except (PlanError, ValueError):
            continue  # a tile or split the class refuses here
        if (pid := plan_id(plan)) in seen:
            continue
        seen.add(pid)
        us = predict_us(task, plan, gpu, registers=True)  # no registers: no guess
        if us is not None and us < best_us:
            best, best_us = plan, us
    if best_us >= default_us * MARGIN:
        return task.default, default_us, default_us
    return best, best_us, default_us


@functools.cache
def _source_digest() -> str:
    """deplo's own source (and CUDA headers): any change may move a prediction."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for d in root.iterdir() if (d / "__init__.py").exists()
                   for p in d.rglob("*") if p.suffix in (".py", ".h", ".cuh"))
    files += sorted(root.glob("*.py"))
    return content_key(*(f"{p.relative_to(root)}\n{p.read_text()}" for p in files))


def cached_choice(task: Task, gpu: str) -> tuple[dict, float | None, float | None]:
    """`choose`, or what it chose before for this kernel, GPU, deplo and NVRTC (the registers);
    an entry that is not a legal plan of this kernel is chosen again."""
    from deplo.runtime.gpu.nvrtc import nvrtc_version

    key = content_key(task.text, gpu, _source_digest(), nvrtc_version())
    path = cache_dir("ranked") / f"{key[:40]}.json"
    try:
        got = json.loads(path.read_text())
        plan, us, default_us = got["plan"], got["us"], got["default_us"]
        kind, knobs = split_plan(plan)
        planner.complete(task.name, kind, task.classes[kind], knobs)  # legal, or chosen again
        if all(t is None or isinstance(t, float | int) for t in (us, default_us)) and \
                (plan == task.default or None not in (us, default_us)):
            return plan, us, default_us
    except (OSError, ValueError, KeyError, TypeError, AttributeError, PlanError):
        pass
    plan, us, default_us = choose(task, gpu)
    write_atomic(path, json.dumps({"plan": plan, "us": us, "default_us": default_us}))
    return plan, us, default_us


def nvrtc_works() -> bool:
    try:
        from deplo.runtime.gpu.nvrtc import nvrtc_version

        nvrtc_version()
        return True
    except Exception:  # noqa: BLE001 - any failure to load NVRTC: the heuristic's plans stand
        return False


def ranked_schedule(planned: ModuleOp, schedule: str | None, gpu_model: str | None = None,
                    verbose: int = 0) -> str | None:
    """The plan file to pin: `schedule`'s pins, plus the model's choice for each eligible
    kernel they leave to the heuristic (`planned`: the program after tile-plan with them); None
    when the model changes nothing. `gpu_model`: h100, h200, else the GPU's (`model_for`)."""
    from deplo.hardware import model_for
    from deplo.passes.tile.plan import Pin, pins_json, read_plans
    from deplo.runtime.gpu import gpu_probe

    where, pinned = read_plans(schedule) if schedule else ("schedule", {})
    todo = [t for t in tasks_of(planned) if t.key not in pinned and eligible(t)]
    if not todo or not nvrtc_works():
        return None
    gpu = model_for(gpu_model, *gpu_probe())
    chosen = {}
    for task in todo:
        try:
            plan, us, default_us = cached_choice(task, gpu)
        except Exception as e:  # noqa: BLE001 - a choice that fails leaves the heuristic's plan
            if verbose:
                print(f"deplo: plan of {task.name} [{task.key}]: the heuristic's (the cost "
                      f"model could not choose: {e})", file=sys.stderr)
            continue
        if plan != task.default:
            chosen[task.key] = (task.name, plan)
            if verbose:
                print(f"deplo: plan of {task.name} [{task.key}] chosen by the cost model "
                      f"({gpu}): {us:.1f} us, the heuristic's {default_us:.1f} us",
                      file=sys.stderr)
    if not chosen:
        return None
    plans = {key: Pin(name, *split_plan(plan)) for key, (name, plan) in chosen.items()}
    return json.dumps(pins_json(plans | pinned, where))
