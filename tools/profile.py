"""`deplo run --bench [--profile] [-o prof.json]`: how fast a program is — per kernel the sm_90
model's prediction (always) and, on a GPU, the measured time; the program against its roofline
and, on a GPU, against PyTorch eager and `torch.compile` on the same inputs.

    report = profile(compiled, gpu="h100")     # {"predicted_us": ..., "kernels": [...], ...}
    print(format_profile(report, rows=True))

JSON: `predicted_us`, `roofline_us`, `min_bytes`, `flops` and `tensor_flops` (the algorithm's,
from the Torch IR: analysis/roofline.py), `measured` (null without a GPU) at the top level;
`kernels`: one entry per kernel with `name`, `launches`, `grid`, `block`, `registers`,
`smem_bytes`, `l2_bytes`, `dram_bytes`, `l2_inputs` (arguments an earlier launch left in L2,
read without DRAM), `flops` (what its loops execute), `min_bytes` and `algorithm_flops` (its
floor: its torch ops' share, without a split's partials), `predicted_us` (one launch),
`roofline_us`, `bound`, `measured_us` (GPU only).
"""

from __future__ import annotations

import contextlib
import json
import math
from io import StringIO

from deplo import origin
from deplo.analysis import cost_model as cm
from deplo.analysis import roofline as rl

SCHEMA = "deplo-profile/1"


def profile(compiled, gpu: str = "h100", measured: dict[str, float] | None = None) -> dict:
    """The profile of a compiled program (deplo.tools.api.Compiled); `measured`: microseconds
    per kernel launch from a GPU run, when there was one."""
    from deplo.dialects import kernel
    from deplo.lowering.emit_cuda import weights_read
    from deplo.lowering.kernel_to_cuda import c_names
    from deplo.runtime.bench import min_bytes

    hw = cm.GPUS[gpu]
    kmod = compiled.module("kernel")
    try:
        ptxas = compiled.ptxas("sm_90")
    except Exception:  # noqa: BLE001 - the model then assumes 32 registers a thread
        ptxas = {}
    counts = cm.launch_counts(kmod)
    works, in_l2 = cm.program_works(kmod, hw)
    in_c = c_names(kmod)  # (ptxas reports name kernels as the .cu does: exp -> exp_k)
    torch_mod = compiled.program.module
    floors = rl.kernel_floors(kmod, torch_mod, works)
    rows = []
    for f in kmod.ops:
        if not isinstance(f, kernel.FuncOp):
            continue
        name = f.sym_name.data
        rep = ptxas.get(in_c.get(name, name))
        w = works[name]
        p = cm.predict_func(f, rep, hw, w)
        roof = rl.roofline_us(*floors[name], hw)
        rows.append({
            "name": name, "modules": weights_read(f.body.block.args),
            "implements": origin.summary(origin.of_op(f)), "origin": origin.of_op(f),
            "launches": counts.get(name, 1), "grid": list(f.grid_dims),
            "block": list(f.block_dims), "registers": rep.registers if rep else None,
            "smem_bytes": cm.block_shared_bytes(f, rep) if rep else None,
            "l2_bytes": p.l2_bytes,
            "dram_bytes": p.dram_bytes, "l2_inputs": sorted(in_l2.get(name, ())),
            "flops": p.flops, "min_bytes": floors[name][0],
            "algorithm_flops": floors[name][1].total, "predicted_us": round(p.us, 3),
            "roofline_us": round(roof, 3), "roofline_pct": round(100 * roof / p.us, 1),
            "bound": p.bound, "blocks_per_sm": p.blocks_per_sm, "waves": p.waves,
            "units_us": {k: round(float(v), 3) for k, v in p.units.items()},
            "measured_us": (measured or {}).get(name),
        })
    flops = rl.algorithm_flops(torch_mod)
    nbytes = min_bytes(compiled.module("loop"))  # (what the loop nests read: runtime/bench.py)
    predicted = sum(r["predicted_us"] * r["launches"] for r in rows)
    # (a program that launches nothing, an empty tensor or a view, costs nothing: no ratio)
    roofline = rl.roofline_us(nbytes, flops, hw) if rows else 0.0
    return {
        "schema": SCHEMA, "gpu_model": hw.name, "predicted_us": round(predicted, 3),
        "roofline_us": round(roofline, 3),
        "predicted_over_roofline": round(predicted / roofline, 3) if rows else None,
        "min_bytes": nbytes, "flops": flops.total, "tensor_flops": flops.tensor,
        "launches": sum(r["launches"] for r in rows),
        "measured": None, "kernels": rows,
    }


def format_profile(report: dict, rows: bool = True) -> str:
    """The summary line(s) and, with `rows`, one row per kernel (rich table)."""
    from rich.console import Console
    from rich.table import Table

    m = report.get("measured")
    ratio = report["predicted_over_roofline"]
    lines = [(f"{report['gpu_model']}: predicted (sm_90 model{'' if m else ', no GPU run'}) "
              f"{report['predicted_us']:.2f} us over {report['launches']} launch(es); roofline "
              f"{report['roofline_us']:.2f} us "
              f"({'no kernel to run' if ratio is None else f'{ratio:.2f}x'})")]
    if m:  # the predicted line used to say "measured" here, beside the model's number
        base = "; ".join(f"{name} {m[key]:.2f} us" for name, key in (
            ("eager", "eager_us"), ("torch.compile", "inductor_us")) if m.get(key) is not None)
        lines.append(f"measured {m['deplo_us']:.2f} us" + (f"; {base}" if base else ""))
    if not rows:
        return "\n".join(lines) + "\n"
    table = Table(title=None, show_edge=False, pad_edge=False)
    for col in ("kernel", "implements", "launches", "grid", "block", "regs", "smem", "L2 MB",
                "GFLOP", "meas us", "pred us", "roof %", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "implements", "bound")
                         else "right", max_width=60 if col == "implements" else None)
    for r in report["kernels"]:
        table.add_row(r["name"], "; ".join(r.get("implements") or ()) or "-", str(r["launches"]),
                      "x".join(map(str, r["grid"])), "x".join(map(str, r["block"])), str(r["registers"] or "-"),
                      str(r["smem_bytes"] if r["smem_bytes"] is not None else "-"),
                      f"{r['l2_bytes'] / 1e6:.2f}", f"{r['flops'] / 1e9:.3f}",
                      f"{r['measured_us']:.2f}" if r.get("measured_us") else "-",
                      f"{r['predicted_us']:.2f}", f"{r['roofline_pct']:.0f}", r["bound"])
    out = StringIO()
    Console(file=out, width=200, color_system=None).print(table)
    return "\n".join(lines) + "\n" + out.getvalue()


def write_profile(report: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1, default=lambda x: None if isinstance(x, float)
                  and not math.isfinite(x) else x)
        f.write("\n")


def measure(compiled, seed: int = 0, warmup: int = 10, iters: int = 50,
            baselines: bool = True, gpu_lock=None) -> dict:
    """On the GPU: the program timed from a flushed L2, each launch between events
    (runtime/gpu/timing.py) on fresh random inputs, and (`baselines`) the program as PyTorch
    eager and torch.compile on the same inputs."""
    from deplo.runtime.bench import time_cuda_program, time_torch
    from deplo.runtime.gpu import device_arch
    from deplo.runtime.program import CudaExecutable
    from deplo.tools.api import random_inputs

    inputs = random_inputs(compiled.program, seed)
    exe = CudaExecutable(compiled.module("cuda"), target="gpu", arch=device_arch())
    with gpu_lock or contextlib.nullcontext():  # processes that compile side by side time alone
        total_ms, per_launch, _ = time_cuda_program(exe, inputs, warmup, iters)
    per_kernel: dict[str, list[float]] = {}
    for p in per_launch:
        per_kernel.setdefault(p["kernel"], []).append(p["ms"] * 1e3)
    out = {"deplo_us": total_ms * 1e3,
           "per_kernel_us": {k: sum(v) / len(v) for k, v in per_kernel.items()}}
    if not baselines:
        return out
    import torch

    from deplo.frontend.importer import evaluating

    module = compiled.program.torch_module.to("cuda")
    # in the program's dtypes: a bf16 program's inputs cross as float32 arrays, and its
    # baselines ran in fp32 until 2026-11-27
    n = len(compiled.program.example_inputs)
    args = [a.to("cuda") for a in compiled.program.torch_inputs(inputs[:n])]
    with evaluating(module):  # (what was compiled)
        for name, fn in (("eager", module), ("inductor", torch.compile(module, dynamic=False))):
            try:
                out[f"{name}_us"] = time_torch(fn, args, warmup, iters) * 1e3
            except Exception as e:  # noqa: BLE001 - a baseline that fails is reported, not fatal
                out[f"{name}_error"] = str(e).splitlines()[0][:200]
    return out
