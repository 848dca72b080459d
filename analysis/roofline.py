"""The physical floor of a program and of each of its kernels: the algorithm's bytes and FLOPs at
DRAM bandwidth and at the peak of the unit each op may use, plus one launch.

The FLOPs are the PyTorch program's (Torch IR), never counted from our loops, so recompute,
padded tiles, masked work or the partials a split stores cannot raise a floor (a roofline that
grows with our own work flatters it). A product of f16/bf16 operands may use the tensor cores
(the dense peak); everything else, an fp32 product whose result is cast to half included, the
FP32 cores. Integer and boolean ops are no floating-point work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from deplo import origin
from deplo.analysis.cost_model import Work, buffer_key
from deplo.hardware import H100_SXM, SECTOR, Gpu

PRODUCTS = {"matmul", "linear", "conv", "sdpa"}
_NO_FLOPS = {"constant", "reshape", "permute", "transpose", "expand", "unsqueeze", "squeeze",
             "slice", "select", "cat", "embedding", "index", "arange", "full", "to"}
_PER_ELEMENT = {"rms_norm": 4, "layer_norm": 8, "softmax": 5, "gelu": 8}
_FLOATS = ("f16", "bf16", "f32", "f64")


@dataclass(frozen=True)
class Flops:
    """Floating-point operations, and how many of them the tensor cores may run."""

    total: float = 0.0
    tensor: float = 0.0

    def __add__(self, other: Flops) -> Flops:
        return Flops(self.total + other.total, self.tensor + other.tensor)

    def scaled(self, k: float) -> Flops:
        return Flops(self.total * k, self.tensor * k)


def roofline_us(min_bytes: float, flops: Flops, gpu: Gpu = H100_SXM) -> float:
    """One launch plus the slowest of: the bytes over DRAM bandwidth, the tensor cores' FLOPs
    over their dense peak, the rest over the FP32 peak (the units run side by side)."""
    compute = max(flops.tensor / gpu.dense_tensor_flops,
                  (flops.total - flops.tensor) / gpu.fp32_flops)
    return gpu.launch_us + max(min_bytes / gpu.dram_bw, compute) * 1e6


def _shape(v: SSAValue) -> list[int]:
    return list(v.type.get_shape()) if hasattr(v.type, "get_shape") else []


def _element(v: SSAValue) -> str:
    return str(getattr(v.type, "element_type", v.type))


def op_flops(op: Operation) -> Flops:
    """The FLOPs of one Torch IR op as the algorithm needs them: 2MNK for products (a
    convolution's K: its weight's channels a group times the window), the unmasked part of
    attention (a causal mask halves it), a few per element for norms and softmax, one per
    element for the rest; none for views, data movement, empty tensors and integer ops."""
    kind = op.name.split(".", 1)[1] if "." in op.name else op.name
    if kind in _NO_FLOPS or not op.results or not any(
            _element(v) in _FLOATS for v in (*op.operands, *op.results)):
        return Flops()
    out = math.prod(_shape(op.results[0]))
    if out == 0 or any(_shape(o) and not math.prod(_shape(o)) for o in op.operands):
        return Flops()  # (nothing computed: an empty output, or a sum over an empty dim)
    if kind == "matmul":
        n = 2.0 * out * _shape(op.operands[0])[-1]
    elif kind == "linear":
        n = 2.0 * out * _shape(op.operands[0])[-1] + (out if len(op.operands) > 2 else 0)
    elif kind == "conv":  # each output: its group's channels x the window, multiplied and added
        n = 2.0 * out * math.prod(_shape(op.operands[1])[1:]) + (
            out if len(op.operands) > 2 else 0)
    elif kind == "sdpa":
        q, k, v = (_shape(o) for o in op.operands[:3])
        sq, sk = q[-2], k[-2]
        pairs = sq * sk
        if "is_causal" in op.properties or "is_causal" in op.attributes:
            pairs = sum(min(sk, max(0, i + 1 + sk - sq)) for i in range(sq))
        n = 2.0 * math.prod(q[:-2]) * pairs * (q[-1] + v[-1])
    else:
        reduced = max((math.prod(_shape(o)) for o in op.operands), default=out)
        return Flops(float(_PER_ELEMENT.get(kind, 1) * max(out, reduced)))
    half = kind in PRODUCTS and _element(op.operands[0]) in ("f16", "bf16")
    return Flops(n, n if half else 0.0)


def _funcs(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}


def algorithm_flops(torch_module: ModuleOp, entry: str = "main") -> Flops:
    """The FLOPs of a Torch IR program per call of `entry` (decoder layers once per call)."""
    funcs = _funcs(torch_module)

    def total(name: str) -> Flops:
        s = Flops()
        for op in funcs[name].body.walk():
            if isinstance(op, func.CallOp) and op.callee.root_reference.data in funcs:
                s += total(op.callee.root_reference.data)
            elif op.name.startswith("torch."):
                s += op_flops(op)
        return s

    return total(entry) if entry in funcs else Flops()


def kernel_floors(kernel_module: ModuleOp, torch_module: ModuleOp, works: dict[str, Work]
                  ) -> dict[str, tuple[float, Flops]]:
    """Per kernel (one launch): the bytes it must move and its share of the FLOPs of the torch
    ops it implements. The bytes are what it touches of each buffer (at most the buffer, at
    most its blocks' distinct sectors: a split row's tail reads 3 elements of x), but for the
    buffers internal to its torch ops: those only its function's kernels touch, each of them
    implementing one torch op in common (a split's partials, a fission's stored mean). An op
    several kernels implement (a split reduction's two) is shared by the FLOPs each counts in
    its loops (`works`), evenly where none counts any."""
    counted = {name: w.flops for name, w in works.items()}
    kernels = {f.sym_name.data: f for f in kernel_module.ops if f.name == "kernel.func"}
    lines = {name: set(origin.of_op(f)) for name, f in kernels.items()}
    per_line: dict[str, Flops] = {}
    for op in torch_module.walk():
        if op.name.startswith("torch."):
            for line in origin.of_op(op):
                per_line[line] = per_line.get(line, Flops()) + op_flops(op)
    flops = {name: Flops() for name in kernels}
    for line, f in per_line.items():
        sharers = [k for k in kernels if line in lines[k]]
        weight = sum(counted.get(k, 0.0) for k in sharers)
        for k in sharers:
            flops[k] += f.scaled(counted.get(k, 0.0) / weight if weight else 1 / len(sharers))
    internal = _internal_arguments(kernel_module, kernels, lines)
    return {name: (sum(b for key, b in _distinct_bytes(works[name], f.grid_dims).items()
                       if key not in internal.get(name, ())), flops[name])
            for name, f in kernels.items() if name in works}


def _distinct_bytes(w: Work, grid: Sequence[int]) -> dict[str, float]:
    """Per buffer a kernel touches, the bytes its blocks touch at least once: a block's
    distinct sectors times the blocks they vary over, at most the buffer."""
    out = {}
    for key, size in w.touched.items():
        sectors, dims = w.per_buffer.get(key, (math.inf, frozenset()))
        out[key] = float(min(size, sectors * SECTOR * math.prod(grid[d] for d in dims)))
    return out


def _internal_arguments(module: ModuleOp, kernels: dict, lines: dict[str, set[str]]
                        ) -> dict[str, set[str]]:
    """Per kernel, the argument keys whose buffer is internal at every launch of it (see
    kernel_floors); a function's arguments, results and what it passes to calls are not."""
    touchers: dict[SSAValue, set[str]] = {}
    launches: list[tuple[str, list[tuple[str, SSAValue]]]] = []
    outside: set[SSAValue] = set()
    for f in _funcs(module).values():
        outside.update(f.body.block.args)
        for op in f.body.walk():
            if op.name == "kernel.launch" and (k := op.callee.string_value()) in kernels:
                keys = [buffer_key(a) for a in kernels[k].body.block.args]
                launches.append((k, list(zip(keys, op.args))))
                for v in op.args:
                    touchers.setdefault(v, set()).add(k)
            elif isinstance(op, func.ReturnOp | func.CallOp):
                outside.update(op.operands)
    inside = {v for v, ks in touchers.items()
              if v not in outside and set.intersection(*(lines[k] for k in ks))}
    out: dict[str, set[str]] = {}
    for k, args in launches:
        here = {key for key, v in args if v in inside}
        out[k] = out[k] & here if k in out else here
    return out
