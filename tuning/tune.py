"""`deplo tune`: per distinct kernel of a program, an SP-MCTS over its plans (tuning/search.py),
each evaluation stored as it finishes (tuning/store.py), the best plan checked against PyTorch
before it is chosen.

The tree: the plan's class first (`kind`, the classes the kernel has the shape for), then its
knobs in the class's order (dialects/tile_plan.py: each knob's domain given the earlier ones);
the tree's rollout completes a partial plan with the planner's heuristic (passes/tile/planner.py
`complete`; search.py also descends at random). Kernels are keyed by their structural key, so equal kernels (the same projection in
every decoder layer) are tuned once.

The evaluator is the GPU where one is present (the program with the candidate pinned, timed per
kernel launch from a flushed L2: runtime/gpu/timing.py) and the sm_90 cost model otherwise (the
kernel alone lowered to Kernel IR, registers from ptxas where NVRTC is available). An evaluation is
stored at once as unverified; the fastest becomes the kernel's best only after the whole program
with it pinned matches PyTorch (the GPU, else the CPU runtime, at full size); a plan that does not
is stored as rejected and the next is tried.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp

from deplo.analysis import cost_model as cm
from deplo.analysis.nest import tile_kernels
from deplo.dialects.tile_plan import CLASSES, PlanError
from deplo.passes.pipeline import PIPELINES
from deplo.passes.tile import planner
from deplo.tuning.search import Result, Tree, plan_id, sp_mcts
from deplo.tuning.store import Evaluation, TuningStore

ARCH = "sm_90"  # the store's arch: the cost model's machine, or the GPU's compute capability
STEPS = PIPELINES["to-kernel"][PIPELINES["to-kernel"].index("tile-plan") + 1:]
CHECKED_CANDIDATES = 4  # plans tried per kernel before its default is kept


@dataclass
class Task:
    """One distinct kernel: what its search needs, picklable for worker processes."""

    key: str
    name: str
    text: str  # a module holding the planned tile.kernel alone
    classes: dict  # kind -> facts, the heuristic's class first
    default: dict  # {"kind": ..., **knobs}: the heuristic's plan
    count: int = 1  # kernels of the program with this key


@dataclass
class KernelReport:
    task: Task
    default_us: float | None = None
    best: Evaluation | None = None
    evaluated: int = 0  # new evaluations in this run
    stored: int = 0  # evaluations found in the store
    rejected: list = field(default_factory=list)


def plan_dict(plan) -> dict:
    return {"kind": plan.kind, **plan.knob_dict}


def split_plan(knobs: dict, default_kind: str | None = None) -> tuple[str, dict]:
    """{"kind": k, **knobs} (a search's plan) -> (k, knobs)."""
    return knobs.get("kind", default_kind), {k: v for k, v in knobs.items() if k != "kind"}


def tasks(compiled) -> list[Task]:
    """The program's distinct kernels, in program order."""
    return tasks_of(compiled.planned())


def tasks_of(planned: ModuleOp) -> list[Task]:
    """The distinct kernels of a program after tile-plan, in program order."""
    out: dict[str, Task] = {}
    for k in tile_kernels(planned):
        key = k.structural_key or planner.structural_key(k)
        if key in out:
            out[key].count += 1
            continue
        alone = k.clone()
        out[key] = Task(key, k.sym_name.data, str(ModuleOp([alone])),
                        dict(planner.legal_classes(k)), plan_dict(k.the_plan))
    return list(out.values())


def plan_tree(task: Task) -> Tree:
    """One decision per level: the class, then the knobs the class has given earlier ones."""

    def split(knobs: dict) -> tuple[str, dict]:
        return split_plan(knobs, task.default["kind"])

    def next_knob(knobs: dict) -> str | None:
        if "kind" not in knobs:
            return "kind"
        kind, rest = split(knobs)
        return next((n for n in CLASSES[kind].knob_names(rest) if n not in rest), None)

    def domain(name: str, knobs: dict) -> list:
        if name == "kind":
            return list(task.classes)
        kind, rest = split(knobs)
        return list(CLASSES[kind].domain(name, dict(task.classes[kind]), rest))

    def rollout(knobs: dict) -> dict | None:
        kind, rest = split(knobs)
        try:
            return plan_dict(planner.complete(task.name, kind, task.classes[kind], rest))
        except (PlanError, ValueError):
            return None

    return Tree(next_knob, domain, rollout)


def lower_with(task: Task, knobs: dict) -> ModuleOp:
    """The kernel alone, planned by `knobs`, lowered to Kernel IR (PlanError if illegal)."""
    from xdsl.parser import Parser

    from deplo.tools.driver import make_context, run_passes

    module = Parser(make_context(), task.text).parse_module()
    (kernel,) = tile_kernels(module)
    kind, rest = split_plan(knobs)
    kernel.set_plan(planner.complete(task.name, kind, task.classes[kind], rest), task.key)
    return run_passes(module, ",".join(STEPS), verify_each=False)


def predict_us(task: Task, knobs: dict, gpu: str = "h100",
               registers: bool = False) -> float | None:
    """The cost model's time of one launch of the kernel (and its split-K sum), or None when
    the plan is illegal, does not lower or (with `registers`) NVRTC gives no ptxas report or
    one that spills."""
    try:
        module = lower_with(task, knobs)
        ptxas = _ptxas(module)
        if registers and (not ptxas or any(r.spills for r in ptxas.values())):
            return None  # (a plan that spills does not build for the GPU: runtime/program.py)
        return sum(p.us for p in cm.predict_module(module, ptxas, cm.GPUS[gpu]).values())
    except Exception:  # noqa: BLE001 - a candidate that does not lower is a failed evaluation
        return None


def _ptxas(module: ModuleOp) -> dict:
    """Registers and shared memory per kernel from NVRTC (cached by source); {} without it."""
    try:
        from deplo.lowering.emit_cuda import emit_cuda
        from deplo.runtime.gpu import compile_cubin
        from deplo.tools.driver import run_passes

        cu = emit_cuda(run_passes(module.clone(), "kernel-to-cuda"))
        return compile_cubin(cu, arch=ARCH, spills_are_errors=False).kernels
    except Exception:  # noqa: BLE001 - the model then assumes 32 registers a thread
        return {}


def pins(plans: dict[str, tuple[str, dict]]) -> dict:
    """A plan file (passes/tile/plan.py) pinning key -> (name, {"kind": ..., **knobs})."""
    kernels = {}
    for key, (name, p) in plans.items():
        kind, knobs = split_plan(p)
        kernels[key] = {"name": name, "kind": kind, "knobs": knobs}
    return {"format": "deplo-plans/1", "kernels": kernels}


def stored_schedule(store: TuningStore, arch: str = ARCH) -> dict:
    """Every kernel's best verified plan in the store, as a plan file (tile-plan, strict off)."""
    best = {}
    for key in store.kernels(arch):
        if (e := store.best(key, arch)) is not None:
            best[key] = (e.name, e.plan)
    return pins(best)


class Evaluator:
    """Runs evaluations here, in a process pool or as Ray tasks; always answers in the
    driver's thread that asked, so the store stays with the driver."""

    def __init__(self, gpu: str, workers: int = 1, ray_address: str | None = None,
                 measure=None):
        self.gpu, self.measure = gpu, measure
        self.name = "gpu" if measure else "model"
        self.pool: Executor | None = None
        self.remote = None
        if ray_address:
            import ray

            ray.init(address=None if ray_address == "local" else ray_address,
                     ignore_reinit_error=True, log_to_driver=False)
            self.remote = ray.remote(predict_us)
        elif workers > 1:
            import multiprocessing

            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))

    def __call__(self, task: Task, knobs: dict) -> float | None:
        if self.measure is not None:
            return self.measure(task, knobs)
        if self.remote is not None:
            import ray

            return ray.get(self.remote.remote(task, knobs, self.gpu))
        if self.pool is not None:
            return self.pool.submit(predict_us, task, knobs, self.gpu).result()
        return predict_us(task, knobs, self.gpu)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def tune(compiled, store: TuningStore, budget: int, evaluator: Evaluator, check,
         workers: int = 1, seed: int = 0, progress=None,
         seconds: float | None = None, start_from_choice: bool = True) -> list[KernelReport]:
    """Search every distinct kernel (`workers` at a time; all searches stop after `seconds`),
    then check each kernel's fastest plans with `check(plan file) -> bool` until one passes.
    `progress(task, done, best_us)`; `start_from_choice`: the model's choice of the default
    compile (ranked.py) is evaluated first (`deplo tune --no-rank`: not)."""
    deadline = time.monotonic() + seconds if seconds else None
    lock = threading.Lock()
    reports = [KernelReport(t) for t in tasks(compiled)]

    def search(rep: KernelReport) -> None:
        t = rep.task
        with lock:
            known_rows = [e for e in store.evaluations(t.key, ARCH) if e.evaluator == evaluator.name]
            store.set_default(t.key, ARCH, t.name, plan_id(t.default))
        known = {plan_id(e.plan): e.time_us for e in known_rows}
        rep.stored = len(known)

        def evaluate(knobs: dict) -> float | None:
            return evaluator(t, knobs)

        def on_result(r: Result) -> None:
            with lock:
                store.record(t.key, ARCH, t.name, *split_plan(r.knobs), r.time_us,
                             evaluator.name)
                rep.evaluated += 1
            if progress:
                progress(t, rep.stored + rep.evaluated, r.time_us)

        starts = _start(t, evaluator.gpu) if start_from_choice else []
        for plan in starts:  # a search never ends worse than the default compile's choice
            if plan_id(plan) not in known:
                known[plan_id(plan)] = evaluate(plan)
                on_result(Result(plan, known[plan_id(plan)]))
        sp_mcts(plan_tree(t), evaluate, budget, known=known, seed=seed, on_result=on_result,
                deadline=deadline)
        if progress:
            progress(t, rep.stored + rep.evaluated, None)

    if workers > 1 and len(reports) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as threads:
            list(threads.map(search, reports))
    else:
        for rep in reports:
            search(rep)
    _choose(compiled, store, reports, check, evaluator.name)
    return reports


def _start(task: Task, gpu: str) -> list[dict]:
    """The plan the default compile chooses for a kernel the heuristic's is not (ranked.py)."""
    from deplo.tuning import ranked

    if not ranked.eligible(task) or not ranked.nvrtc_works():
        return []
    try:
        plan = ranked.cached_choice(task, gpu)[0]
    except Exception:  # noqa: BLE001 - the search starts from the heuristic's plan alone
        return []
    return [plan] if plan != task.default else []


def _choose(compiled, store, reports: list[KernelReport], check, evaluator: str) -> None:
    """Per kernel, the fastest unrejected plan that the check passes becomes its best. All
    kernels' first candidates are checked in one program first; one by one only on a failure."""
    def candidates(rep: KernelReport) -> list[Evaluation]:
        rows = [e for e in store.evaluations(rep.task.key, ARCH)
                if e.evaluator == evaluator and e.status in ("unverified", "verified")]
        return sorted(rows, key=lambda e: e.time_us)[:CHECKED_CANDIDATES]

    def plan_of(e: Evaluation) -> tuple[str, dict]:
        return e.name, e.plan

    for rep in reports:
        default = store.get(rep.task.key, ARCH, *split_plan(rep.task.default))
        rep.default_us = default.time_us if default else None
    todo = {rep.task.key: candidates(rep) for rep in reports}
    firsts = {k: c[0] for k, c in todo.items() if c and c[0].status != "verified"}
    if firsts and check(pins({k: plan_of(e) for k, e in firsts.items()})):
        for e in firsts.values():
            store.set_status(e.key, ARCH, e.kind, e.knobs, "verified")
    else:
        for rep in reports:
            for e in todo[rep.task.key]:
                if e.status == "verified":
                    break
                if check(pins({e.key: plan_of(e)})):
                    store.set_status(e.key, ARCH, e.kind, e.knobs, "verified")
                    break
                store.set_status(e.key, ARCH, e.kind, e.knobs, "rejected")
                rep.rejected.append(e)
    for rep in reports:
        rep.best = store.best(rep.task.key, ARCH)


def program_check(compiled, target: str):
    """check(plan file) -> bool: the program with those plans pinned matches PyTorch."""
    from deplo.tools.api import Compiled

    def check(plans: dict) -> bool:
        pinned = Compiled(compiled.program, 0, json.dumps(plans), strict=False, rank=False)
        try:
            return pinned.check(target=target, seed=0).ok
        except Exception:  # noqa: BLE001 - a plan that fails to build or run is rejected
            return False

    return check


def report_rows(store: TuningStore, arch: str = ARCH) -> list[dict]:
    """Per kernel in the store: its default and best times and the speedup."""
    rows = []
    for key in store.kernels(arch):
        rows_k = store.evaluations(key, arch)
        best = store.best(key, arch)
        info = store.default(key, arch)
        plan = json.loads(info[1]) if info else None
        default = plan and store.get(key, arch, plan.pop("kind"), plan,
                                     best.evaluator if best else None)
        rows.append({
            "key": key, "name": info[0] if info else (rows_k[0].name if rows_k else "?"),
            "evaluations": len(rows_k),
            "rejected": sum(e.status == "rejected" for e in rows_k),
            "evaluator": best.evaluator if best else None,
            "default_us": default.time_us if default else None,
            "best_us": best.time_us if best else None,
            "speedup": (default.time_us / best.time_us) if best and default else None,
            "best_plan": best.plan if best else None,
        })
    return rows
