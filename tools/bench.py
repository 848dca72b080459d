"""`deplo bench`: compile every case of a suite (runtime/bench.py), report its static figures
and, where a GPU is present, time it against PyTorch eager and `torch.compile`; write JSON.

    report = run_bench(llm_suite(seqs=[32]))       # {"schema": "deplo-bench/1", "cases": [...], ...}
    print(format_table(report))

A case the pipeline cannot compile yet is `{"status": "unsupported", "stage": ..., "reason": ...}`,
never an exception: the suite is a map of what works (a `--schedule` file that cannot be used
is the user's error, and stops the run). The JSON layout is `SCHEMA` below.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

import torch

from deplo.hardware import GPUS
from deplo.passes.tile.plan import PlanFileError
from deplo.runtime.bench import (
    Case,
    from_numpy,
    geomean,
    loop_counts,
    min_bytes,
    rel_err,
    time_cuda_program,
    time_torch,
    to_numpy,
)

SCHEMA = "deplo-bench/1"
NOTES = {
    "min_bytes": "analytic: every output written once, every input of @main read once (the box "
                 "its loop nests can read, where that is less: an embedding's rows)",
    "loop_bytes": "counted in the fused Loop IR: loads and stores x loop trip counts (no reuse)",
    "flops": "the algorithm's, from the Torch IR (2MNK for products, attention's unmasked part)",
    "loop_flops": "counted in the fused Loop IR: float arith/math ops x trip counts (fma = 2)",
    "predicted_us": "the sm_90 model (analysis/cost_model.py), sum over launches; the parameters "
                    "of --gpu-model, else of the GPU it is timed on, else the H100 SXM's",
    "roofline_us": "max(min_bytes / HBM bandwidth, flops / peak of the dtype's fastest unit) "
                   "+ one launch",
    "ptxas": "NVRTC -Xptxas=-v for the arch; smem_bytes is static shared memory per block",
    "deplo_ms": "the program's median over runs, each after an L2 flush, its launches enqueued "
                "behind a spinning kernel (no host gaps); per_launch: CUDA events between them",
    "eager_ms/inductor_ms": "the same, one call captured as a CUDA graph (uncaptured where "
                            "capture fails)",
    "timing": "cold: the L2 flushed (a read of twice its size) before every timed run, for all "
              "three; a program's intermediates stay where its launches leave them",
    "speedup_vs_*": "baseline ms / deplo ms: above 1 means deplo is faster",
    "rel_err": "|out - ref| / |ref| against the callable on float64 inputs (GPU)",
    "plans": "every kernel's plan by structural key (a plan file's kernels: --schedule)",
}


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".strip()


def _unsupported(entry: dict, stage: str, e: BaseException) -> dict:
    entry.update(status="unsupported", stage=stage, reason=_first_line(e))
    return entry


def static_figures(compiled, arch: str, gpu_model: str = "h100") -> dict:
    """Kernel count, per-kernel ptxas report and launch shape, bytes and FLOPs, and the sm_90
    model's prediction against the roofline (tools/profile.py), per kernel and for the case."""
    from deplo.dialects import kernel
    from deplo.lowering.emit_cuda import launch_plan
    from deplo.lowering.kernel_to_cuda import c_names
    from deplo.tools.profile import profile

    loop_mod = compiled.module("loop")
    counts = loop_counts(loop_mod)
    plan = launch_plan(compiled.module("cuda"))
    reports = compiled.ptxas(arch)
    order = {la.kernel: i for i, la in reversed(list(enumerate(plan)))}  # first launch first
    model = profile(compiled, gpu_model)
    ir_name = {c: k for k, c in c_names(compiled.module("kernel")).items()}  # exp_k -> exp
    predicted = {k["name"]: k for k in model["kernels"]}
    parts = kernel.fused_parts(compiled.module("kernel"))  # fused: its parts' counts
    kernels = []
    for name, rep in sorted(reports.items(), key=lambda kv: order.get(kv[0], len(plan))):
        launches = [la for la in plan if la.kernel == name]
        own = ir_name.get(name, name)
        cs = [counts[p] for p in parts.get(own) or [own] if p in counts]
        kernels.append({
            "name": name,
            "launches": len(launches),
            "grid": list(launches[0].grid) if launches else None,
            "block": list(launches[0].block) if launches else None,
            "dynamic_smem_bytes": launches[0].smem if launches else 0,
            "registers": rep.registers,
            "smem_bytes": rep.smem_bytes,
            "spill_stores": rep.spill_stores,
            "spill_loads": rep.spill_loads,
            "stack_bytes": rep.stack_bytes,
            "barriers": rep.barriers,
            "loop_bytes": sum(c.bytes for c in cs) if cs else None,
            "loop_flops": sum(c.flops for c in cs) if cs else None,
            **{k: predicted[own][k] for k in ("predicted_us", "roofline_us", "bound")
               if own in predicted},
        })
    return {
        "arch": arch,
        "kernels": len(reports),
        "launches": len(plan),
        "spills": any(k["spill_stores"] or k["spill_loads"] for k in kernels),
        "min_bytes": min_bytes(loop_mod),
        "loop_bytes": sum(c.bytes for c in counts.values()),
        "flops": model["flops"],
        "loop_flops": sum(c.flops for c in counts.values()),
        "predicted_us": model["predicted_us"],
        "roofline_us": model["roofline_us"],
        "per_kernel": kernels,
    }


def gpu_figures(case: Case, compiled, *, warmup: int, iters: int, seed: int) -> dict:
    """Run and time the case on the GPU: deplo, then PyTorch eager and torch.compile (inductor)
    on the same inputs where torch has CUDA (a baseline that fails is reported, not fatal)."""
    from deplo.runtime.gpu import device_arch
    from deplo.runtime.program import CudaExecutable

    params = compiled.program.params
    if any(p is None for p in params):
        raise ValueError("the program has meta-device weights; cases must take every tensor as input")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    inputs = case.random_inputs(device, seed)
    exe = CudaExecutable(compiled.module("cuda"), target="gpu", arch=device_arch())
    deplo_ms, per_launch, outs = time_cuda_program(
        exe, [to_numpy(t) for t in inputs] + list(params), warmup, iters)
    with torch.no_grad():
        ref = case.fn(*[t.double() for t in inputs])
    fig: dict = {"deplo_ms": deplo_ms, "per_launch": per_launch,
                 "rel_err": rel_err(from_numpy(outs[0], case.torch_dtype), ref)}
    baselines = {"eager": lambda: case.fn,
                 "inductor": lambda: torch.compile(case.fn, dynamic=False)}
    for base, make in baselines.items():
        fig[f"{base}_ms"] = fig[f"speedup_vs_{base}"] = None
        if device != "cuda":
            fig[f"{base}_error"] = f"torch {torch.__version__} has no CUDA"
            continue
        try:
            torch._dynamo.reset()  # a fresh, static-shape compile for each case
            fn = make()
            with torch.no_grad():
                fig[f"{base}_rel_err"] = rel_err(fn(*inputs), ref)
            ms = fig[f"{base}_ms"] = time_torch(fn, inputs, warmup, iters)
            fig[f"speedup_vs_{base}"] = ms / deplo_ms if deplo_ms > 0 else None
        except Exception as e:  # noqa: BLE001
            fig[f"{base}_error"] = _first_line(e)
    return fig


def bench_case(case: Case, *, arch: str = "sm_90", gpu: bool = False, warmup: int = 10,
               iters: int = 50, seed: int = 0, schedule: str | None = None,
               gpu_model: str = "h100", rank: bool = True, launch_fusion: bool = True) -> dict:
    """One case's JSON entry; every failure becomes `status: unsupported` with its stage.
    `schedule`: a plan file pinning the plans of the kernels it names (of any case); `rank`:
    big matmuls' plans chosen by the cost model (tuning/ranked.py); `launch_fusion`:
    kernel-horizontal-fuse runs."""
    import deplo

    entry: dict = {"name": case.name, "suite": case.suite, "model": case.model,
                   "kernel": case.kernel, "seq": case.seq, "dtype": case.dtype,
                   "inputs": {a.name: list(a.shape) for a in case.args}, "status": "ok"}
    t0 = time.perf_counter()
    try:
        compiled = deplo.compile(case.fn, case.example_inputs(), schedule=schedule, rank=rank,
                                 launch_fusion=launch_fusion)
        compiled.strict, compiled.gpu_model = False, gpu_model
    except Exception as e:  # noqa: BLE001 - the suite maps what works; it never stops
        return _unsupported(entry, "capture", e)
    try:
        compiled.module("loop")
        _ = compiled.cuda_source  # lowers to cuda and prints the .cu
    except PlanFileError as e:
        if schedule:
            raise  # (the user's --schedule file is wrong, not the pipeline: `deplo run`'s error)
        return _unsupported(entry, "lower", e)
    except Exception as e:  # noqa: BLE001
        return _unsupported(entry, "lower", e)
    try:
        entry["static"] = static_figures(compiled, arch, gpu_model)
    except Exception as e:  # noqa: BLE001
        return _unsupported(entry, "nvrtc", e)
    entry["plans"] = compiled.plans()["kernels"]
    entry["compile_s"] = round(time.perf_counter() - t0, 3)
    if gpu:
        try:
            entry["gpu"] = gpu_figures(case, compiled, warmup=warmup, iters=iters, seed=seed)
        except Exception as e:  # noqa: BLE001
            entry["gpu"] = {"error": _first_line(e)}
    return entry


def _model_geomeans(cases: list[dict]) -> dict:
    """Geomean of predicted / roofline per suite and dtype, and the worst case of each."""
    groups: dict[str, list[dict]] = {}
    for c in cases:
        if c["status"] == "ok" and c["static"].get("roofline_us"):
            groups.setdefault(f"{c['suite']}/{c['dtype']}", []).append(c)
    out = {}
    for key, cs in sorted(groups.items()):
        ratios = [c["static"]["predicted_us"] / c["static"]["roofline_us"] for c in cs]
        worst = max(range(len(cs)), key=lambda i: ratios[i])
        out[key] = {"cases": len(cs), "predicted_over_roofline": geomean(ratios),
                    "worst": cs[worst]["name"], "worst_ratio": ratios[worst]}
    return out


def _geomeans(cases: list[dict]) -> dict:
    groups: dict[str, list[dict]] = {}
    for c in cases:
        g = c.get("gpu") or {}
        if c["status"] != "ok" or "deplo_ms" not in g:
            continue
        for key in (f"{c['suite']}/{c['dtype']}", f"{c['suite']}/{c['model']}/{c['dtype']}"):
            groups.setdefault(key, []).append(g)
    return {key: {"cases": len(gs),
                  "speedup_vs_eager": geomean([g["speedup_vs_eager"] for g in gs]),
                  "speedup_vs_inductor": geomean([g.get("speedup_vs_inductor") for g in gs])}
            for key, gs in sorted(groups.items())}


def run_bench(cases: Sequence[Case], *, arch: str = "sm_90", gpu: bool | None = None,
              warmup: int = 10, iters: int = 50, seed: int = 0,
              progress: Callable[[str], None] | None = None,
              schedule: str | None = None, gpu_model: str | None = None,
              rank: bool = True, launch_fusion: bool = True) -> dict:
    """The report for `cases` (see SCHEMA). `gpu=None`: time where gpu_probe() finds a GPU;
    `gpu_model` the parameters predicted with (default: the timed card's, else the H100's)."""
    from deplo.hardware import model_for
    from deplo.runtime.gpu import gpu_probe, nvrtc_version

    ok, device = gpu_probe()
    use_gpu = ok if gpu is None else (gpu and ok)
    gpu_model = model_for(gpu_model, use_gpu, device)  # predicted for the card it times on
    t0 = time.perf_counter()
    entries = []
    interrupted = None
    try:
        for i, case in enumerate(cases):
            t = time.perf_counter()
            e = bench_case(case, arch=arch, gpu=use_gpu, warmup=warmup, iters=iters, seed=seed,
                           schedule=schedule, gpu_model=gpu_model, rank=rank,
                           launch_fusion=launch_fusion)
            entries.append(e)
            if progress:
                what = e["status"] if e["status"] == "ok" else f"{e['status']} ({e['stage']})"
                progress(f"[{i + 1}/{len(cases)}] {case.name}: {what}, "
                         f"{time.perf_counter() - t:.1f}s")
    except KeyboardInterrupt:  # Ctrl-C: the cases done so far are still the report
        done = len(entries)
        interrupted = f"interrupted at case {done + 1} of {len(cases)} ({cases[done].name})" \
            if done < len(cases) else "interrupted after the last case"
    n_ok = sum(e["status"] == "ok" for e in entries)
    return {
        "schema": SCHEMA,
        "suites": sorted({c.suite for c in cases}),
        "arch": arch,
        "gpu": device if use_gpu else None,
        "gpu_model": GPUS[gpu_model].name,
        "no_gpu_reason": None if ok else device,
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "nvrtc": _safe(nvrtc_version)},
        "seconds": round(time.perf_counter() - t0, 2),
        "notes": NOTES,
        "summary": {"cases": len(entries), "ok": n_ok, "unsupported": len(entries) - n_ok,
                    "geomean": _geomeans(entries), "model": _model_geomeans(entries)},
        "cases": entries,
        **({"interrupted": interrupted} if interrupted else {}),
    }


def _safe(fn) -> str | None:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        return _first_line(e)


def _mb(x) -> str:
    return "-" if x is None else f"{x / 1e6:.3g}"


def format_table(report: dict) -> str:
    """A plain-text table, one row per case, then the summary and geomeans."""
    gpu = report["gpu"] is not None
    head = ["case", "status", "kern", "regs", "smem", "spill", "minMB", "loopMB", "GFLOP",
            "pred us", "roof us", "x roof"]
    if gpu:
        head += ["deplo ms", "eager ms", "ind. ms", "x eager", "x ind."]
    rows = [head]
    for c in report["cases"]:
        if c["status"] != "ok":
            rows.append([c["name"], f"{c['status']} ({c['stage']}): {c['reason'][:60]}"])
            continue
        s = c["static"]
        ks = s["per_kernel"]
        row = [c["name"], "ok", str(s["kernels"]), "/".join(str(k["registers"]) for k in ks),
               str(max((k["smem_bytes"] + k["dynamic_smem_bytes"] for k in ks), default=0)),
               "yes" if s["spills"] else "no", _mb(s["min_bytes"]), _mb(s["loop_bytes"]),
               f"{s['flops'] / 1e9:.3g}", _fmt(s.get("predicted_us")), _fmt(s.get("roofline_us")),
               _fmt(s["predicted_us"] / s["roofline_us"], 3) if s.get("roofline_us") else "-"]
        if gpu:
            g = c.get("gpu", {})
            if "error" in g:
                row.append(f"gpu error: {g['error'][:60]}")
            else:
                row += [_fmt(g.get("deplo_ms")), _fmt(g.get("eager_ms")), _fmt(g.get("inductor_ms")),
                        _fmt(g.get("speedup_vs_eager"), 2), _fmt(g.get("speedup_vs_inductor"), 2)]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows if len(r) > i and len(r) == len(head))
              for i in range(len(head))]
    lines = []
    for r in rows:
        if len(r) == len(head):
            lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                                   for i, (v, w) in enumerate(zip(r, widths))).rstrip())
        else:
            lines.append(f"{r[0].ljust(widths[0])}  {'  '.join(r[1:])}")
    sm = report["summary"]
    lines.append(f"{sm['ok']}/{sm['cases']} cases compile ({sm['unsupported']} unsupported) "
                 f"in {report['seconds']:.1f}s; "
                 + (f"timed on {report['gpu']}" if gpu else f"no GPU ({report['no_gpu_reason']}): "
                    "static figures only"))
    for key, g in sm.get("model", {}).items():
        lines.append(f"model {key}: predicted / roofline geomean x{_fmt(g['predicted_over_roofline'], 3)}"
                     f" ({g['cases']} cases; worst {g['worst']} x{_fmt(g['worst_ratio'], 3)})")
    for key, g in sm["geomean"].items():
        lines.append(f"geomean {key}: x{_fmt(g['speedup_vs_eager'], 2)} vs eager, "
                     f"x{_fmt(g['speedup_vs_inductor'], 2)} vs torch.compile ({g['cases']} cases)")
    return "\n".join(lines)


def _fmt(x, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def write_json(report: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


def print_progress(line: str, out: TextIO | None = None) -> None:
    print(f"deplo bench: {line}", file=out or sys.stderr, flush=True)
