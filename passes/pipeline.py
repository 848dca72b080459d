"""The pass registry and the named pipelines: the only index of what deplo can run.

Why explicit and lazy: `deplo-opt`, `deplo compile`, the tuner and the stock `xdsl-opt` (through
the `xdsl.universe` entry point) all read these tables, and importing a pass module costs time
that a command which never runs it should not pay.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import typing
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException
from xdsl.utils.target import Target

from deplo import origin
from deplo.lowering.legality import IR_LEVELS, ir_level  # noqa: F401 (the tools' one entry)


def _lazy(module: str, attr: str) -> Callable[[], object]:
    def get():
        return getattr(importlib.import_module(f"deplo.{module}"), attr)

    get.__qualname__ = f"get_{attr}"
    return get


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "torch": _lazy("dialects.torch", "Torch"),
    "tir": _lazy("dialects.tir", "Tir"),
    "loop": _lazy("dialects.loop", "Loop"),
    "tile": _lazy("dialects.tile", "Tile"),
    "kernel": _lazy("dialects.kernel", "Kernel"),
    "cuda": _lazy("dialects.cuda", "Cuda"),
}

# pass name -> (module, class). The name is also the class's `name` (a test checks it).
_PASS_TABLE: dict[str, tuple[str, str]] = {
    "torch-to-tir": ("lowering.torch_to_tir", "TorchToTirPass"),
    "tir-to-loop": ("lowering.tir_to_loop", "TirToLoopPass"),
    "loop-fuse": ("passes.loop.fuse", "LoopFusePass"),
    "loop-simplify": ("passes.loop.simplify", "LoopSimplifyPass"),
    "loop-merge-reductions": ("passes.loop.merge_reductions", "LoopMergeReductionsPass"),
    "loop-online-softmax": ("passes.loop.online_softmax", "LoopOnlineSoftmaxPass"),
    "loop-narrow-buffers": ("passes.loop.narrow", "LoopNarrowBuffersPass"),
    "loop-collapse-dims": ("passes.loop.collapse", "LoopCollapseDimsPass"),
    "loop-flatten-reductions": ("passes.loop.flatten_reductions", "LoopFlattenReductionsPass"),
    "loop-split-nests": ("passes.loop.split_nests", "LoopSplitNestsPass"),
    "loop-split-reductions": ("passes.loop.split_reductions", "LoopSplitReductionsPass"),
    "loop-chunk-scans": ("passes.loop.chunk_scans", "LoopChunkScansPass"),
    "loop-order-contractions": ("passes.loop.order_contractions", "LoopOrderContractionsPass"),
    "loop-to-tile": ("lowering.loop_to_tile", "LoopToTilePass"),
    "tile-plan": ("passes.tile.plan", "TilePlanPass"),
    "tile-map-grid": ("passes.tile.map_grid", "TileMapGridPass"),
    "tile-attention-mma": ("passes.tile.attention_mma", "TileAttentionMmaPass"),
    "tile-attention-rows": ("passes.tile.attention_rows", "TileAttentionRowsPass"),
    "tile-cooperative-reduce": ("passes.tile.cooperative_reduce", "TileCooperativeReducePass"),
    "tile-map-threads": ("passes.tile.map_threads", "TileMapThreadsPass"),
    "tile-stage-inputs": ("passes.tile.stage_inputs", "TileStageInputsPass"),
    "tile-split-k": ("passes.tile.split_k", "TileSplitKPass"),
    "tile-tensor-core": ("passes.tile.tensor_core", "TileTensorCorePass"),
    "tile-register-tile": ("passes.tile.register_tile", "TileRegisterTilePass"),
    "tile-map-2d": ("passes.tile.map_2d", "TileMap2dPass"),
    "tile-chunk-reduce": ("passes.tile.chunk_reduce", "TileChunkReducePass"),
    "tile-stage-chunks": ("passes.tile.stage_chunks", "TileStageChunksPass"),
    "tile-pad-shared": ("passes.tile.pad_shared", "TilePadSharedPass"),
    "tile-double-buffer": ("passes.tile.double_buffer", "TileDoubleBufferPass"),
    "tile-cp-async": ("passes.tile.cp_async", "TileCpAsyncPass"),
    "tile-unroll": ("passes.tile.unroll", "TileUnrollPass"),
    "kernel-vectorize": ("passes.kernel.vectorize", "KernelVectorizePass"),
    "kernel-remove-barriers": ("passes.kernel.remove_barriers", "KernelRemoveBarriersPass"),
    "kernel-horizontal-fuse": ("passes.kernel.horizontal_fuse", "KernelHorizontalFusePass"),
    "tile-to-kernel": ("lowering.tile_to_kernel", "TileToKernelPass"),
    "kernel-to-cuda": ("lowering.kernel_to_cuda", "KernelToCudaPass"),
}

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    name: _lazy(module, cls) for name, (module, cls) in _PASS_TABLE.items()
}

TARGETS: dict[str, Callable[[], type[Target]]] = {
    "cuda": _lazy("lowering.emit_cuda", "CudaTarget"),
}

# The named pipelines. Each level is the previous one plus its own steps.
_TO_TIR = [
    "torch-to-tir",  # decompose torch ops into elementwise / reduce / index_map
]
_TO_LOOP = _TO_TIR + [
    "tir-to-loop",  # one loop nest (loop.kernel) per tir op
    "loop-fuse",  # epilogues, inline elementwise producers, hoist reductions: few kernels
    "loop-merge-reductions",  # sibling reduce loops over one range: one pass over the data
    "loop-online-softmax",  # softmax max+sum in one pass; attention's PV carried (flash)
    "loop-fuse",  # again: attention scores now fuse into the flash loop (read once per s)
    "loop-narrow-buffers",  # intermediates written as extf(narrow) hold the narrow type
    "loop-order-contractions",  # a contraction's innermost free pair made a matmul's (conv)
    "loop-collapse-dims",  # buffers read through a reshape take its shape
    "loop-flatten-reductions",  # a reduction over several dims: one loop over their product
    "loop-split-nests",  # big sibling nests (cat, pad): a kernel each, each its own grid
    "loop-split-reductions",  # a long reduction over few outputs: partials on many blocks
    "loop-chunk-scans",  # a long cumsum: chunk partials, their prefix, then per output
    "loop-simplify",  # one copy of each constant/load, loop invariants hoisted
]
_TO_TILE = _TO_LOOP + [
    "loop-to-tile",  # trivial schedule: one block of one thread, all loops serial
    "tile-plan",  # every kernel's plan: class + knobs (heuristic, or pinned by a plan file)
    # each pass below carries out its step of the plans whose class has it
    "tile-split-k",  # matmul: K in slices on block.z + a kernel adding them up
    "tile-tensor-core",  # matmul (mma): warps of mma.sync m16n8k16 on fragments
    "tile-register-tile",  # matmul: a reg_m x reg_n tile of outputs per thread
    "tile-map-2d",  # matmul: a 2-D grid of 2-D blocks over the output
    "tile-chunk-reduce",  # matmul: K in chunks, the unit of staging
    "tile-stage-chunks",  # matmul: each chunk's A and B tiles in shared memory
    "tile-map-grid",  # pointwise, row_reduce, attention: outer free axes -> blocks
    "tile-attention-mma",  # attention in f16/bf16: warps of mma.sync, 16-row tiles each
    "tile-attention-rows",  # attention: threads over the head dim, q.k combined per key
    "tile-cooperative-reduce",  # row_reduce: strided thread loop + tile.combine
    "tile-map-threads",  # pointwise: innermost free axis -> threads (strided if long)
    "tile-stage-inputs",  # pointwise, row_reduce, attention: slabs -> shared memory
    "tile-pad-shared",  # matmul: rows of 2-D stages padded off the bank alignment
    "tile-double-buffer",  # matmul, attention (mma): stages in loops take 1-4 buffers in turn
    "tile-cp-async",  # stages copy with cp.async (a pipeline with several buffers)
    "tile-unroll",  # short innermost loops unrolled
]
_TO_KERNEL = _TO_TILE + [
    "tile-to-kernel",  # thread ids, shared buffers, barriers, shuffles
    "kernel-vectorize",  # aligned runs of 16 (8, 4) bytes of accesses -> one load / store
    "kernel-remove-barriers",  # barriers that order no conflicting accesses
    "kernel-horizontal-fuse",  # independent launches of one block size -> one (model's call)
]
_TO_CUDA = _TO_KERNEL + [
    "kernel-to-cuda",  # C++ syntax tree; print it with -t cuda
]

PIPELINES: dict[str, list[str]] = {
    "to-tir": _TO_TIR,
    "to-loop": _TO_LOOP,
    "to-tile": _TO_TILE,
    "to-kernel": _TO_KERNEL,
    "to-cuda": _TO_CUDA,
}

# The level each pipeline ends at, as `deplo compile --ir` names it.
LEVEL_PIPELINE: dict[str, str | None] = {
    "torch": None,
    "tensor": "to-tir",
    "tir": "to-tir",
    "loop": "to-loop",
    "tile": "to-tile",
    "kernel": "to-kernel",
    "cuda": "to-cuda",
}


def split_spec(spec: str) -> list[str]:
    """The comma-separated parts of a pass spec (commas inside `{...}` separate list values)."""
    return [p.strip() for p in _top_level_parts(spec) if p.strip()]


def _top_level_parts(spec: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    return [*parts, spec[start:]]


def expand_pipeline(spec: str, level: str | None = None) -> str:
    """Replace named pipelines in a comma-separated pass spec by their passes.

    `to-loop,tile-map-grid{x=1}` -> `torch-to-tir,tir-to-loop,loop-fuse,...,tile-map-grid{x=1}`.
    A `builtin.module(...)` wrapper (MLIR's spelling) is accepted and dropped. With `level`, the
    level the input IR is at (`ir_level`), a named pipeline starts where that IR is: the passes
    of `to-<level>` are done already, so `to-cuda` on loop IR starts at loop-to-tile.
    """
    return ",".join(p for p, _ in _expanded(spec, level))


TILE_STEPS = _TO_TILE[_TO_TILE.index("tile-plan"):]
"""tile-plan and the passes that carry plans out: a named pipeline on tile IR runs them all
again, since tile IR may be part-scheduled (`-p loop-to-tile,tile-plan`, steps by hand) and
each tile pass carries out only what a kernel's plan has not done."""


def _unwrapped(spec: str) -> str:
    """`spec` without MLIR's `builtin.module(...)` wrapper."""
    spec = spec.strip()
    if not spec.startswith("builtin.module("):
        return spec
    if not spec.endswith(")"):
        raise PipelineError(f"bad pass spec {spec!r}: 'builtin.module(' without its ')'")
    return spec[len("builtin.module(") : -1]


def _expanded(spec: str, level: str | None) -> list[tuple[str, bool]]:
    """Each pass of `spec`, and whether a named pipeline brought it in."""
    spec = _unwrapped(spec)
    done = len(PIPELINES.get(f"to-{level}", []))
    if level == "tile":
        done = _TO_TILE.index("tile-plan")
    out: list[tuple[str, bool]] = []
    for part in split_spec(spec):
        if part in PIPELINES:
            out.extend((p, True) for p in PIPELINES[part][done:])
            continue
        out.append((part, False))
        name = part.split("{")[0].strip()
        if name in _TO_CUDA and name not in TILE_STEPS:  # a named pipeline after it goes on
            done = max(done, _TO_CUDA.index(name) + 1)  # from there (tile steps: see above)
    return out


# The IR levels in pipeline order, named like their dialects, and the conversion between each two.

CONVERSIONS = {f"{a}-to-{b}": a for a, b in itertools.pairwise(IR_LEVELS)}


class PipelineError(DiagnosticException):
    """A pass spec that cannot run: unknown pass or option, an option value of the wrong type,
    a conversion of IR that is not at its level."""


def verified(module, after: ModulePass | None) -> None:
    """Verify `module`, the IR after the pass `after`; a failure names the pass and the one op
    xDSL's note marks (its line, with the deplo.origin it came from), not the whole module."""
    try:
        module.verify()
    except VerifyException as e:
        spec = f" after {after.pipeline_pass_spec()}" if after is not None else ""
        raise PipelineError(f"the IR{spec} does not verify: {e}{origin.marked_op(e)}") from None


def parse_passes(spec: str) -> tuple[ModulePass, ...]:
    """The passes of `spec` (named pipelines expanded), options checked: every error names the
    pass and, for a bad option, the option and the type it takes."""
    from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    body = _unwrapped(spec)
    if body and any(not p.strip() for p in _top_level_parts(body)):
        raise PipelineError(f"bad pass spec {spec!r}: an empty pass name (two commas in a row, "
                            f"or one at an end)")
    try:
        specs = list(parse_pipeline(expand_pipeline(spec)))
    except ArgSpecParseError as e:  # a BaseException in xDSL 0.74
        raise PipelineError(f"bad pass spec {spec!r}: {e}") from None
    passes = []
    for s in specs:
        if s.name in PIPELINES:
            raise PipelineError(f"the named pipeline '{s.name}' takes no options")
        if s.name not in PASSES:
            raise PipelineError(f"unknown pass '{s.name}'; passes: {', '.join(PASSES)}; "
                                f"pipelines: {', '.join(PIPELINES)}")
        cls = PASSES[s.name]()
        fields = {f.name: f for f in dataclasses.fields(cls)}
        hints = typing.get_type_hints(cls)
        for key, value in s.parameters.items():
            field = key.replace("-", "_")
            if field not in fields:
                options = ", ".join(f.replace("_", "-") for f in fields) or "none"
                raise PipelineError(f"{s.name}: unknown option '{key}'; its options: {options}")
            kind = getattr(hints[field], "__name__", str(hints[field]))
            kind = kind.removesuffix(" | None")  # (the tile passes' knobs are optional)
            given = ",".join(map(str, value)) or "nothing"
            try:
                cls.from_pass_spec(ArgSpec(s.name, {key: value}))
                if not value:  # `{threads-m}`: an optional knob read it as unset
                    raise ValueError
            except ValueError:
                raise PipelineError(
                    f"{s.name}: option '{key}' expects type {kind}, got {given}") from None
            if any(type(v) is int and not -(2**31) < v < 2**31 for v in value):
                raise PipelineError(f"{s.name}: option '{key}' expects an integer within "
                                    f"+-2^31 (CUDA C's int), got {','.join(map(str, value))}")
        passes.append(cls.from_pass_spec(s))
    return tuple(passes)


def plan(spec: str, level: str | None) -> tuple[ModulePass, ...]:
    """The passes of `spec` to run on IR at `level` (`ir_level`): a named pipeline starts there,
    a conversion the IR is already past is dropped (nothing to convert), one it has not reached
    yet is an error naming both levels — never a crash inside the pass. A tile pass a named
    pipeline brings in `resumes`: it passes over a step a kernel's plan has left behind (a
    later step of it done by hand) instead of refusing to run out of order."""
    out = []
    expanded = _expanded(spec, level)
    for p, (_, named) in zip(parse_passes(",".join(s for s, _ in expanded)), expanded,
                             strict=True):
        if named and hasattr(p, "resumes"):
            object.__setattr__(p, "resumes", True)
        source = CONVERSIONS.get(p.name)
        if source is not None and level is not None:
            if IR_LEVELS.index(level) > IR_LEVELS.index(source):
                continue
            if level != source:
                raise PipelineError(f"{p.name} converts {source} IR, but the IR is at the {level} "
                                    f"level there (a named pipeline such as to-cuda starts "
                                    f"where the IR is)")
            level = IR_LEVELS[IR_LEVELS.index(level) + 1]
        out.append(p)
    return tuple(out)


def _universe():
    from xdsl.universe import Universe

    return Universe(all_dialects=dict(DIALECTS), all_passes=dict(PASSES), all_targets=dict(TARGETS))


UNIVERSE = _universe()
"""The `xdsl.universe` entry point: our dialects, passes and targets in the stock xdsl-opt."""
