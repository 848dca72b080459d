"""The LLM kernel benchmark suite: the cases, their static figures and their GPU timing.

Each case is a small torch callable plus the shapes of its inputs (`Case`). The suite is defined
here, in code; `tools/bench.py` (`deplo bench`) compiles every case through the pipeline and
fills in the figures. Two kinds of figure:

- static (no GPU): kernel count, the ptxas report of each kernel (NVRTC, sm_90), and three
  predictions — `min_bytes` (analytic: every output written once and every input read once,
  or the box of it the loop nests can read where that is less), `loop_bytes` and `flops`
  (counted in the fused Loop IR: each `loop.load`/`loop.store` and each floating-point
  `arith`/`math` op times the trip counts of the loops around it — what the kernels ask of
  memory before any cache or shared-memory reuse, and the arithmetic they do, masked-out
  attention scores included);
- measured (GPU): median milliseconds of deplo's program, PyTorch eager and `torch.compile`
  (inductor) on the same inputs, each run from an L2 flushed before it (runtime/gpu/timing.py),
  and the speedups over both.

    cases = llm_suite(dtypes=["bf16"], seqs=[128])
    inputs = cases[0].example_inputs()             # meta tensors: enough to compile
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation

from deplo.analysis.index import linear_expr
from deplo.dialects import loop
from deplo.dialects.tile import element_bytes

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of one decoder layer that the kernels of the suite depend on."""

    name: str
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    eps: float = 1e-6
    qkv_bias: bool = False


TINYLLAMA = ModelShape("tinyllama-1.1b", 2048, 5632, 32, 4, 64, eps=1e-5)
QWEN25_7B = ModelShape("qwen2.5-7b", 3584, 18944, 28, 4, 128, eps=1e-6, qkv_bias=True)
TINY = ModelShape("tiny", 64, 96, 4, 2, 16, eps=1e-6, qkv_bias=True)  # tests and smoke runs
MODELS = {m.name: m for m in (TINYLLAMA, QWEN25_7B, TINY)}
SUITES = {"llm": ((TINYLLAMA, QWEN25_7B), (32, 128, 512)), "tiny": ((TINY,), (8,)),
          "decode": ((TINYLLAMA, QWEN25_7B), (512, 2048))}
"""(models, sequence lengths). `decode`: one token a step, its attention over a cache of `seq`
keys (the lengths are the cache's)."""


@dataclass(frozen=True)
class Arg:
    """One input of a case: its shape and how to fill it (`randn`, or `causal_mask`: 0 on and
    below the diagonal, the dtype's lowest value above it, as transformers builds it)."""

    name: str
    shape: tuple[int, ...]
    fill: str = "randn"


@dataclass(frozen=True)
class Case:
    """One benchmark case: `fn(*inputs)` at one model's shapes, one sequence length, one dtype."""

    suite: str
    model: str
    kernel: str
    seq: int
    dtype: str
    fn: Callable = field(compare=False, repr=False)
    args: tuple[Arg, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.model}/{self.kernel}/s{self.seq}/{self.dtype}"

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def example_inputs(self) -> list[torch.Tensor]:
        """Meta tensors: shapes and dtypes only, free at any size (torch.export needs no data)."""
        return [torch.empty(a.shape, dtype=self.torch_dtype, device="meta") for a in self.args]

    def random_inputs(self, device: str = "cpu", seed: int = 0) -> list[torch.Tensor]:
        """Real inputs (never zeros), drawn on the CPU from `seed` and moved to `device`."""
        gen = torch.Generator().manual_seed(seed)
        out = []
        for a in self.args:
            if a.fill == "causal_mask":
                low = torch.finfo(self.torch_dtype).min
                x = torch.full(a.shape, low).triu(1).to(self.torch_dtype)
            else:
                x = torch.randn(a.shape, generator=gen).to(self.torch_dtype)
            out.append(x.to(device))
        return out


# ---- the kernels of one decoder layer, as torch callables -------------------------------------

def linear(x, w):
    return F.linear(x, w)


def linear_bias(x, w, b):
    return F.linear(x, w, b)


def linear_residual(x, w, residual):
    return residual + F.linear(x, w)


def silu_mul(gate, up):
    return F.silu(gate) * up


def silu_mul_down(gate, up, w):
    return F.linear(F.silu(gate) * up, w)


def softmax(x):
    return torch.softmax(x, dim=-1)


def sdpa_causal_gqa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def sdpa_gqa(q, k, v):
    """A decoded token's attention: its one query row sees the whole cache (no causal mask)."""
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def attention_naive(q, k, v, mask):
    """transformers' eager attention: repeat_kv, QKᵀ·scale + mask, softmax in fp32, ·V."""
    b, kv_heads, s, d = k.shape
    rep = q.shape[1] // kv_heads
    k = k[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, kv_heads * rep, s, d)
    v = v[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, kv_heads * rep, s, d)
    scores = torch.matmul(q, k.transpose(2, 3)) * d**-0.5 + mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(probs, v)


class _RmsNorm:
    def __init__(self, eps: float):
        self.eps = eps

    def __call__(self, x, w):
        return F.rms_norm(x, (x.shape[-1],), w, self.eps)


class _DecoderLayer:
    """A whole Llama / Qwen2 decoder layer, its weights and rotary tables as inputs: where the
    fused RMSNorm + projection kernels live (as in transformers' LlamaDecoderLayer)."""

    def __init__(self, m: ModelShape):
        self.m = m

    def __call__(self, x, ln1, wq, wk, wv, wo, ln2, wg, wu, wd, cos, sin, *bias):
        m = self.m
        b, s, h = x.shape

        def heads(t, n):
            return t.view(b, s, n, m.head_dim).transpose(1, 2)

        def rope(t):
            half = t.shape[-1] // 2
            rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
            return t * cos + rotated * sin

        y = F.rms_norm(x, (h,), ln1, m.eps)
        bq, bk, bv = bias or (None, None, None)
        q = rope(heads(F.linear(y, wq, bq), m.heads))
        k = rope(heads(F.linear(y, wk, bk), m.kv_heads))
        v = heads(F.linear(y, wv, bv), m.kv_heads)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + F.linear(a.transpose(1, 2).reshape(b, s, -1), wo)
        y = F.rms_norm(x, (h,), ln2, m.eps)
        return x + F.linear(F.silu(F.linear(y, wg)) * F.linear(y, wu), wd)


KERNELS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
           "o_proj_residual", "rmsnorm", "softmax", "silu_mul", "silu_mul_down",
           "sdpa_causal_gqa", "attention_naive", "decoder_layer")
DECODE_KERNELS = (*KERNELS[:12], "sdpa_gqa", "attention_naive")
"""The decode suite's: the layer's kernels at one token, attention without a causal mask (a
whole decoder layer needs its cache written: `deplo generate` runs that)."""


def model_cases(m: ModelShape, seq: int, dtype: str, suite: str = "llm") -> list[Case]:
    """The 14 kernels of one decoder layer of `m`, and the whole layer, at batch 1 and
    sequence `seq`; `decode`: DECODE_KERNELS at one token over `seq` cached keys."""
    decode = suite == "decode"
    h, i, s, keys = m.hidden, m.intermediate, 1 if decode else seq, seq
    q_dim, kv_dim = m.heads * m.head_dim, m.kv_heads * m.head_dim
    x = Arg("x", (1, s, h))

    def proj(out_dim: int, bias: bool):
        args = (x, Arg("w", (out_dim, h)))
        return (linear_bias, (*args, Arg("b", (out_dim,)))) if bias else (linear, args)

    q = Arg("q", (1, m.heads, s, m.head_dim))
    k = Arg("k", (1, m.kv_heads, keys, m.head_dim))
    v = Arg("v", (1, m.kv_heads, keys, m.head_dim))
    gate, up = Arg("gate", (1, s, i)), Arg("up", (1, s, i))
    table: dict[str, tuple[Callable, tuple[Arg, ...]]] = {
        "q_proj": proj(q_dim, m.qkv_bias),
        "k_proj": proj(kv_dim, m.qkv_bias),
        "v_proj": proj(kv_dim, m.qkv_bias),
        "o_proj": (linear, (Arg("attn", (1, s, q_dim)), Arg("w", (h, q_dim)))),
        "gate_proj": (linear, (x, Arg("w", (i, h)))),
        "up_proj": (linear, (x, Arg("w", (i, h)))),
        "down_proj": (linear, (Arg("act", (1, s, i)), Arg("w", (h, i)))),
        "o_proj_residual": (linear_residual, (Arg("attn", (1, s, q_dim)), Arg("w", (h, q_dim)),
                                              Arg("residual", (1, s, h)))),
        "rmsnorm": (_RmsNorm(m.eps), (x, Arg("w", (h,)))),
        "softmax": (softmax, (Arg("scores", (1, m.heads, s, keys)),)),
        "silu_mul": (silu_mul, (gate, up)),
        "silu_mul_down": (silu_mul_down, (gate, up, Arg("w", (h, i)))),
        "sdpa_causal_gqa": (sdpa_causal_gqa, (q, k, v)),
        "attention_naive": (attention_naive, (q, k, v, Arg("mask", (1, 1, s, keys),
                                                           "randn" if decode else "causal_mask"))),
        "decoder_layer": (_DecoderLayer(m), (
            x, Arg("ln1", (h,)), Arg("wq", (q_dim, h)), Arg("wk", (kv_dim, h)),
            Arg("wv", (kv_dim, h)), Arg("wo", (h, q_dim)), Arg("ln2", (h,)), Arg("wg", (i, h)),
            Arg("wu", (i, h)), Arg("wd", (h, i)), Arg("cos", (s, m.head_dim)),
            Arg("sin", (s, m.head_dim)),
            *((Arg("bq", (q_dim,)), Arg("bk", (kv_dim,)), Arg("bv", (kv_dim,)))
              if m.qkv_bias else ()))),
    }
    assert tuple(table) == KERNELS
    if decode:
        table["sdpa_gqa"] = (sdpa_gqa, (q, k, v))
        table = {name: table[name] for name in DECODE_KERNELS}
    return [Case(suite, m.name, name, seq, dtype, fn, args) for name, (fn, args) in table.items()]


def llm_suite(dtypes: Sequence[str] = ("fp32", "bf16"), seqs: Sequence[int] | None = None,
              models: Sequence[ModelShape] | None = None, suite: str = "llm") -> list[Case]:
    """Every case of a suite: models × seqs × dtypes × KERNELS (`llm`: 2 × 3 × 2 × 15 = 180;
    `decode`: 2 × 2 × 2 × 14 = 112)."""
    default_models, default_seqs = SUITES[suite]
    for d in dtypes:
        if d not in DTYPES:
            raise ValueError(f"unknown dtype {d!r}; choose from {', '.join(DTYPES)}")
    return [c for m in (models or default_models) for s in (seqs or default_seqs)
            for d in dtypes for c in model_cases(m, s, d, suite)]


# ---- static figures ---------------------------------------------------------------------------

# floating-point ops counted as FLOPs (fma as 2; every math.* op as 1; casts, selects not counted)
FLOP_OPS = {"arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.divf": 1, "arith.negf": 1,
            "arith.maximumf": 1, "arith.minimumf": 1, "arith.maxnumf": 1, "arith.minnumf": 1,
            "arith.cmpf": 1, "math.fma": 2}


def _element_bytes(t: MemRefType) -> int:
    return element_bytes(t.element_type)


def _buffer_bytes(t) -> int:
    return math.prod(t.get_shape()) * _element_bytes(t) if isinstance(t, MemRefType) else 0


@dataclass
class LoopCounts:
    """What one loop.kernel's launches do: the bytes they load and store, and FLOPs (FLOP_OPS)."""

    bytes: int = 0
    flops: int = 0


def _count(op: Operation, trips: int, acc: LoopCounts) -> None:
    if isinstance(op, loop.ForOp):
        trips *= op.extent
    elif isinstance(op, loop.LoadOp | loop.StoreOp):
        acc.bytes += trips * _element_bytes(op.buffer.type)
    elif op.name in FLOP_OPS:
        acc.flops += trips * FLOP_OPS[op.name]
    elif op.name.startswith("math."):
        acc.flops += trips
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _count(inner, trips, acc)


def loop_counts(module: ModuleOp) -> dict[str, LoopCounts]:
    """Kernel name -> LoopCounts, for every loop.kernel of a Loop-IR module, times the number of
    launches of it in the host function(s)."""
    launches: dict[str, int] = {}
    for f in module.ops:
        if isinstance(f, func.FuncOp):
            for op in f.walk():
                if isinstance(op, loop.LaunchOp):
                    name = op.callee.root_reference.data
                    launches[name] = launches.get(name, 0) + 1
    out = {}
    for k in module.ops:
        if isinstance(k, loop.KernelOp):
            out[k.sym_name.data] = counts = LoopCounts()
            _count(k, launches.get(k.sym_name.data, 1), counts)
    return out


def min_bytes(module: ModuleOp, entry: str = "main") -> int:
    """The fewest bytes a program can move: each result written once and each argument of
    @main read once — only the part its kernels can read where that is less (an embedding's
    rows of its table, a slice's box; `_elements_read`), for arguments only Loop IR launches
    read (at other levels, and for arguments passed on to calls, the whole buffer)."""
    for f in module.ops:
        if isinstance(f, func.FuncOp) and f.sym_name.data == entry:
            kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, loop.KernelOp)}
            ins = sum(_input_bytes(arg, kernels) for arg in f.body.block.args)
            outs = sum(_buffer_bytes(t) for t in f.function_type.outputs.data)
            return ins + outs
    raise ValueError(f"no host function @{entry}")


def _input_bytes(arg, kernels: dict) -> int:
    """The bytes of @main's argument `arg` its launches can read, at most its whole buffer."""
    full = _buffer_bytes(arg.type)
    read = 0
    for use in arg.uses:
        op = use.operation
        k = kernels.get(op.callee.root_reference.data) if isinstance(op, loop.LaunchOp) else None
        if not full or k is None:
            return full
        read += _elements_read(k.args[use.index]) * _element_bytes(arg.type)
        if read >= full:
            return full
    return read


def _elements_read(buf) -> int:
    """At most how many distinct elements a kernel reads of its argument: each load's box (a
    coordinate linear in loop ivs spans its coefficients times their extents; one computed
    otherwise, a gather's, the whole dim), never more than the iterations around the load."""
    total = 0
    for use in buf.uses:
        ld = use.operation
        if not isinstance(ld, loop.LoadOp):
            return math.prod(buf.type.get_shape())  # stored or passed on: the whole buffer
        extents = {f.iv: f.extent or 1 for f in loop.enclosing_ops(ld, loop.ForOp)}
        box = 1
        for e, size in zip(ld.access_map().results, buf.type.get_shape()):
            lin = linear_expr(e)
            ivs = [ld.indices[d] for d in (lin[0] if lin else ())]
            if lin is None or any(v not in extents for v in ivs):
                box *= size
                continue
            box *= min(size, 1 + sum(abs(c) * (extents[ld.indices[d]] - 1)
                                     for d, c in lin[0].items()))
        total += min(box, math.prod(extents.values()))
    return total


# ---- GPU timing -------------------------------------------------------------------------------

def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor as the numpy buffer the runtimes take (bf16 as uint16 bit patterns)."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def from_numpy(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """bf16 arrive as uint16 bit patterns or as float32 holding bf16 values (exact either way)."""
    if dtype == torch.bfloat16 and a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a).to(dtype)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64 (NaN stays NaN: a NaN never passes)."""
    out, ref = out.double().flatten(), ref.double().flatten().to(out.device)
    den = torch.linalg.vector_norm(ref).item()
    return torch.linalg.vector_norm(out - ref).item() / (den or 1.0)


def time_torch(fn: Callable, inputs: Sequence[torch.Tensor], warmup: int, iters: int) -> float:
    """Median milliseconds of one `fn(*inputs)` on the current CUDA device, measured as deplo's
    launches are (runtime/gpu/timing.py: each call after an L2 flush, enqueued behind a spinning
    kernel): the call captured as a CUDA graph, so that neither side pays host dispatch, the
    call itself where capture fails."""
    from deplo.runtime.gpu.driver import _context, _driver
    from deplo.runtime.gpu.timing import cold_timer

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # capture wants its warm-up off the default stream
            for _ in range(max(1, warmup)):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        call = functools.partial(fn, *inputs)
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn(*inputs)
            call = graph.replay
        except Exception:  # noqa: BLE001 - an uncapturable callable is timed uncaptured
            torch.cuda.synchronize()
        _context()  # torch and the driver API share device 0's primary context
        stream = _driver().CUstream(torch.cuda.current_stream().cuda_stream)
        ms, _ = cold_timer().time([call], stream, warmup, iters)
    return ms


def time_cuda_program(exe, inputs: Sequence[np.ndarray], warmup: int, iters: int
                      ) -> tuple[float, list[dict], list[np.ndarray]]:
    """Run `@main` of a CudaExecutable (target gpu) once on the device, then time the program
    (ResidentProgram.time: an L2 flushed before every run, each launch between two events).
    Returns (the program's median ms, [{kernel, ms}] per launch, @main's results); the device
    copy is freed after."""
    try:
        outputs = exe.run(inputs)
        resident = exe.resident(0)
        total, per_step = resident.time(warmup, iters)
        per_launch = [{"kernel": step[0], "ms": ms} for step, ms in zip(resident.steps, per_step)]
    finally:
        exe.release()
    return total, per_launch, outputs


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
