"""The cost model against the GPU over many plans: for each distinct kernel of a program, the
heuristic's plan and random complete plans, each predicted by the sm_90 model and, where a GPU
is present, measured (the program with the plan pinned, the kernel's launches timed, as the
tuner's GPU evaluator does). Per kernel: the rank correlation of predicted and measured times,
the geomean measured/predicted, and what the model's pick and the heuristic's plan cost against
the fastest plan measured — the model's job is to rank plans, and this says how well it does.

    deplo tune -c EXPR --calibrate 24 [--workers 8] [-o cal.json]

Plans compile in `workers` processes side by side; the timing itself holds a file lock, so
only one process runs on the GPU at a time. Without a GPU the rows hold predictions alone. The
report is whole after every plan (`on_row`), and `seconds` stops the run early: a run cut short
by a lease still leaves its rows.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from deplo.tuning.search import plan_id
from deplo.tuning.tune import Task, plan_tree, predict_us, tasks

_worker: dict = {}  # a process's program and evaluator (_init)
SAME_KIND = 0.75  # the share of random plans drawn in the heuristic's class


def random_plans(task: Task, n: int, seed: int = 0) -> list[dict]:
    """The heuristic's plan, then up to n - 1 distinct plans, each knob drawn uniformly from its
    domain given the earlier ones (completed by the planner where the draw stops early). Three
    in four keep the heuristic's class (`kind`): the plans that compete with it; other classes
    are often orders of magnitude slower and would only show that they are."""
    tree, rng = plan_tree(task), random.Random(seed)
    plans = {plan_id(task.default): task.default}
    for _ in range(20 * n):
        if len(plans) >= n:
            break
        knobs: dict = {"kind": task.default["kind"]} if rng.random() < SAME_KIND else {}
        while (name := tree.next_knob(knobs)) is not None:
            values = tree.domain(name, knobs)
            if not values:
                break
            knobs[name] = rng.choice(values)
        plan = tree.rollout(knobs)
        if plan is not None:
            plans.setdefault(plan_id(plan), plan)
    return list(plans.values())


class FileLock:
    """A reusable exclusive lock across processes (flock on `path`)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        self.file = open(self.path, "a")  # held until __exit__
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def _init(make, gpu: str, lock_path: str | None, program=None) -> None:
    """A process's state: the program (built again from `make` in a worker: compiled programs
    hold IR that does not pickle) and the GPU evaluator around it."""
    from deplo.tools.tune_cmd import gpu_measure

    _worker["gpu"] = gpu
    _worker["measure"] = gpu_measure(program or make(), FileLock(lock_path)) if lock_path else None


def _evaluate(index: int, task: Task, plan: dict) -> dict:
    measure = _worker["measure"]
    return {"index": index, "kernel": task.name, "key": task.key, "plan": plan,
            "heuristic": plan == task.default,
            "predicted_us": predict_us(task, plan, _worker["gpu"]),
            "measured_us": measure(task, plan) if measure else None}


def _ranks(xs: list[float]) -> list[float]:
    """Ranks from 0, equal values sharing their average rank (the model predicts equal times
    for plans it cannot tell apart)."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Rank correlation (Spearman's rho, average ranks for ties)."""
    if len(xs) < 3:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else None


def summarize(rows: list[dict], task: Task) -> dict:
    """The kernel's figures from its rows (in plan order, whatever order they finished in)."""
    rows = sorted(rows, key=lambda r: r["index"])
    both = [r for r in rows if r["predicted_us"] and r["measured_us"]]
    mine = next((r for r in rows if r["heuristic"]), {})  # the heuristic's plan
    out = {"kernel": task.name, "key": task.key, "plans": len(rows), "timed": len(both),
           "heuristic_predicted_us": mine.get("predicted_us")}
    if not both:
        return out
    pred, meas = [r["predicted_us"] for r in both], [r["measured_us"] for r in both]
    same = [r for r in both if r["plan"].get("kind") == task.default["kind"]]
    best = min(meas)
    out.update(
        spearman=spearman(pred, meas),
        spearman_same_kind=spearman([r["predicted_us"] for r in same],
                                    [r["measured_us"] for r in same]),
        measured_over_predicted=math.exp(sum(math.log(m / p) for p, m in zip(pred, meas)) / len(both)),
        best_measured_us=best, best_plan=both[meas.index(best)]["plan"],
        model_pick_over_best=both[pred.index(min(pred))]["measured_us"] / best,
        heuristic_over_best=mine["measured_us"] / best if mine.get("measured_us") else None)
    return out


def calibrate(make, samples: int, gpu: str, on_gpu: bool, workers: int = 1, seed: int = 0,
              on_row=None, seconds: float | None = None) -> dict:
    """Rows (one a plan) and a summary a kernel of the program `make()` builds; `on_row(report,
    total)` after each row; no new plan starts after `seconds`."""
    program = make()
    kernels = tasks(program)
    work = [(t, p) for t in kernels for p in random_plans(t, samples, seed)]
    lock = os.path.join(tempfile.gettempdir(), f"deplo-gpu-{os.getuid()}.lock") if on_gpu else None
    deadline = time.monotonic() + seconds if seconds else math.inf
    rows: list[dict] = []

    def report() -> dict:
        return {"schema": "deplo-calibrate/1", "gpu_model": gpu, "measured": on_gpu,
                "kernels": [summarize([r for r in rows if r["key"] == t.key], t) for t in kernels],
                "rows": sorted(rows, key=lambda r: r["index"])}

    def add(row: dict) -> None:
        rows.append(row)
        if on_row:
            on_row(report(), len(work))

    if workers > 1 and work:
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_init, initargs=(make, gpu, lock)) as pool:
            futures = [pool.submit(_evaluate, i, t, p) for i, (t, p) in enumerate(work)]
            for f in as_completed(futures):
                if f.cancelled():
                    continue
                add(f.result())
                if time.monotonic() > deadline:  # no new plan; those under way are kept
                    for other in futures:
                        other.cancel()
    else:
        _init(make, gpu, lock, program)
        for i, (t, p) in enumerate(work):
            if time.monotonic() > deadline:
                break
            add(_evaluate(i, t, p))
    return report()


def format_calibration(report: dict) -> str:
    """A few lines a kernel."""
    lines = []
    for k in report["kernels"]:
        head = f"{k['kernel']} [{k['key'][:8]}]: {k['plans']} plans"
        if "best_measured_us" not in k:
            preds = sorted(r["predicted_us"] for r in report["rows"]
                           if r["key"] == k["key"] and r["predicted_us"])
            spread = f"; predicted {preds[0]:.2f}-{preds[-1]:.2f} us" if preds else ""
            mine = k["heuristic_predicted_us"]
            heuristic = f", the heuristic's {mine:.2f}" if mine else ""
            why = "no plan could be timed" if report["measured"] else "no GPU: predictions only"
            lines.append(f"{head}{spread}{heuristic} ({why})")
            continue

        def rho(x):
            return f"{x:.2f}" if x is not None else "-"

        lines.append(f"{head}, {k['timed']} timed; rank correlation {rho(k['spearman'])} "
                     f"({rho(k['spearman_same_kind'])} within the heuristic's class)")
        heuristic = (f"x{k['heuristic_over_best']:.2f}" if k["heuristic_over_best"]
                     else "not timed")
        lines.append(f"  measured/predicted x{k['measured_over_predicted']:.2f}; best "
                     f"{k['best_measured_us']:.2f} us; the model's pick x"
                     f"{k['model_pick_over_best']:.2f} of it; the heuristic's {heuristic}")
        lines.append(f"  best plan: {k['best_plan']}")
    return "\n".join(lines)
