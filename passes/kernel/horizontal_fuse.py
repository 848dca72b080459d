"""kernel-horizontal-fuse: independent launches of one block size become one launch.

Why: a kernel of few blocks leaves SMs idle. At 128 tokens TinyLlama's k_proj and v_proj are
128 blocks each on 132 SMs: one block an SM, too few warps to hide a load's latency. Launched
with q_proj's 256 blocks as one kernel, 512 blocks keep every SM busy, and two launches go.

Within a run of host ops that are launches and allocs (any other op, a func.call, ends the
run), launch B depends on an earlier launch A when B reads what A writes or writes what A reads
or writes (an alloc is its own buffer; where a launch writes an argument, the arguments count
as one buffer, since a caller may pass one buffer as two of them). Launches are
regrouped in program order: each joins the earliest group after every group holding a launch
it depends on, if that group's kernels have its block size and (with `model`, the default) the
cost model predicts the group and it faster as one launch than apart; else it starts a group of
its own after all others. A group of two or more kernels becomes one kernel.func whose body is
a kernel.part per kernel, in group order (dialects/kernel.py): its grid is theirs laid end to
end, its arguments the host values they take, each once. The launches are re-emitted group by
group, each alloc just before its first use (memory planning's liveness stays tight).

    %q = memref.alloc()                          %q = memref.alloc()
    kernel.launch @q(%x, %wq, %q)                %k = memref.alloc()
    %k = memref.alloc()                   ->     kernel.launch @q_k(%x, %wq, %q, %wk, %k)
    kernel.launch @k(%x, %wk, %k)

`model=false` fuses whatever may be fused (lit tests; experiments); `gpu=h100|h200` the
parameters it predicts with. There is no ptxas report in a pass: the decision predicts each
kernel's registers from its register tile (cost_model.estimate_registers), a fused kernel's as
its largest part's and FUSED_REGISTERS more (what ptxas gave TinyLlama's q/k/v at 512 tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo import origin
from deplo.dialects import kernel
from deplo.hardware import GPUS, MAX_GRID
from deplo.passes.kernel.remove_barriers import accesses
from deplo.passes.symbols import fresh_symbol, symbol_names

NAME_PARTS = 3  # a fused kernel is named after at most this many of its parts
# ptxas gives a fused kernel more registers than its largest part (NVRTC 13.0, TinyLlama's
# q/k/v at 512 tokens: 128/66/66 apart, 147 fused): the decision adds this many
FUSED_REGISTERS = 16


@dataclass
class _Launch:
    op: kernel.LaunchOp
    callee: kernel.FuncOp
    reads: set  # buffers: allocs, and arguments (all one where a launch writes one: a
    writes: set  # caller may pass one buffer as two of them)

    def conflicts(self, other: _Launch) -> bool:
        return bool(self.writes & (other.reads | other.writes) or other.writes & self.reads)


@dataclass
class _Group:
    launches: list[_Launch] = field(default_factory=list)
    predicted_us: float = 0.0


def _written_args(k: kernel.FuncOp) -> set[int]:
    """Indices of the arguments a kernel may write."""
    args = {a: a.index for a in k.args}
    return {args[v] for op in k.walk() for v, w in accesses(op, set()) if w and v in args}


class _Fuser:
    def __init__(self, module: ModuleOp, model: bool, gpu: str):
        self.module = module
        self.kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, kernel.FuncOp)}
        self.model = model
        self.gpu = GPUS[gpu]
        self.works: dict[str, object] = {}
        self.written = {n: _written_args(k) for n, k in self.kernels.items()}
        self.taken = symbol_names(module.body.block)
        self.fused_from: set[str] = set()  # kernels now parts of a fused one

    # --- the cost model's view of a group ---------------------------------------------
    def predict(self, launches: list[_Launch]) -> float:
        from deplo.analysis import cost_model as cm

        for la in launches:
            name = la.callee.sym_name.data
            if name not in self.works:
                self.works[name] = cm.work(la.callee)
        block = launches[0].callee.block_dims
        registers = max(cm.estimate_registers(la.callee) for la in launches)  # the largest's
        if len(launches) == 1:
            k = launches[0].callee
            return cm.predict(self.works[k.sym_name.data], k.grid_dims, block, registers,
                              cm.block_shared_bytes(k), self.gpu).us
        fused = cm.fused_work([(self.works[la.callee.sym_name.data], la.callee.grid_dims)
                               for la in launches])
        smem = max(kernel.dynamic_bytes(la.callee) for la in launches)  # overlaid
        return cm.predict(fused, (_blocks(launches), 1, 1), block, registers + FUSED_REGISTERS,
                          smem, self.gpu).us

    def joins(self, group: _Group, la: _Launch) -> bool:
        first = group.launches[0].callee
        if first.block_dims != la.callee.block_dims or la.callee.parts() or first.parts():
            return False
        if any(g.callee is la.callee for g in group.launches):  # twice one kernel: its split-K
            return False  # arrival counters (kernel.arrive_last slots) would be shared
        if _blocks([*group.launches, la]) > MAX_GRID[0]:
            return False
        if not self.model:
            return True
        alone = self.predict([la])
        together = self.predict([*group.launches, la])
        if together < group.predicted_us + alone:
            group.predicted_us = together
            return True
        return False

    # --- one run of host ops -------------------------------------------------------------
    def writes(self, op: kernel.LaunchOp) -> list[SSAValue]:
        written = self.written[op.callee.string_value()]
        return [v for i, v in enumerate(op.args) if i in written]

    def run(self, ops: list[Operation]) -> None:
        """Regroup the launches of `ops` (launches and allocs) and re-emit them."""
        args_written = any(isinstance(v, BlockArgument) for op in ops
                           if isinstance(op, kernel.LaunchOp) for v in self.writes(op))
        called = {v for op in ops[0].parent_block().ops if isinstance(op, func.CallOp)
                  for v in op.arguments}

        def buffers(v: SSAValue) -> set:
            """What `v` may be: an argument may alias the others, a call's result anything
            passed to a call (a callee may return its argument)."""
            out = {"arguments" if args_written and isinstance(v, BlockArgument) else v}
            if isinstance(v.owner, func.CallOp) or v in called:
                out.add("calls")
            return out

        launches = [_Launch(op, self.kernels[op.callee.string_value()],
                            set().union(*(buffers(v) for v in op.args
                                          if isinstance(v.type, MemRefType))),
                            set().union(*(buffers(v) for v in self.writes(op))))
                    for op in ops if isinstance(op, kernel.LaunchOp)]
        groups: list[_Group] = []
        where: dict[int, int] = {}  # launch index -> group index
        for i, la in enumerate(launches):
            after = max((where[j] for j in range(i) if launches[j].conflicts(la)), default=-1)
            for g in range(after + 1, len(groups)):
                if self.joins(groups[g], la):
                    groups[g].launches.append(la)
                    where[i] = g
                    break
            else:
                groups.append(_Group([la], self.predict([la]) if self.model else 0.0))
                where[i] = len(groups) - 1
        if all(len(g.launches) == 1 for g in groups):
            return
        anchor = ops[-1].next_op  # re-emit before whatever ended the run
        block = ops[0].parent_block()
        others = [op for op in ops if not isinstance(op, kernel.LaunchOp)]
        for op in ops:
            op.detach()
        placed: set[Operation] = set()

        def place(op: Operation) -> None:
            placed.add(op)
            block.insert_op_before(op, anchor) if anchor else block.add_op(op)

        for g in groups:
            for la in g.launches:
                for v in la.op.args:
                    if v.owner in others and v.owner not in placed:
                        place(v.owner)
            if len(g.launches) == 1:
                place(g.launches[0].op)
                continue
            place(self.fuse(g.launches))
            for la in g.launches:
                la.op.erase()
        for op in others:
            if op not in placed:
                place(op)

    # --- one fused kernel --------------------------------------------------------------
    def fuse(self, launches: list[_Launch]) -> kernel.LaunchOp:
        # a buffer, and the type a kernel reads it as (loop.same_elements: one buffer may be
        # two arguments of two shapes)
        keys: list[tuple[SSAValue, Attribute]] = []
        for la in launches:
            for v, a in zip(la.op.args, la.callee.args, strict=True):
                if (v, a.type) not in keys:
                    keys.append((v, a.type))
        values = [v for v, _ in keys]
        names = [la.callee.sym_name.data for la in launches]
        self.fused_from.update(names)
        name = "_".join(names[:NAME_PARTS]) + (f"_and{len(names) - NAME_PARTS}"
                                                if len(names) > NAME_PARTS else "")
        name = fresh_symbol(self.taken, name)
        fused = kernel.FuncOp(name, [t for _, t in keys], (_blocks(launches), 1, 1),
                              launches[0].callee.block_dims)
        lines: list[str] = []
        for la in launches:
            body = la.callee.body.clone()
            for old, v in zip(body.block.args, la.op.args):
                old.replace_all_uses_with(fused.args[keys.index((v, old.type))])
            part_block = Block()
            for op in list(body.block.ops):
                op.detach()
                part_block.add_op(op)
            fused.body.block.add_op(kernel.PartOp(la.callee.sym_name.data, la.callee.grid_dims,
                                                  Region(part_block)))
            lines += origin.of_op(la.callee)
        origin.set_kernel(fused, lines)
        for a, v in zip(fused.args, values):
            if v.name_hint:
                a.name_hint = v.name_hint
        self.module.body.block.insert_op_after(fused, launches[-1].callee)
        self.kernels[name] = fused
        return kernel.LaunchOp(name, values)


def _blocks(launches: list[_Launch]) -> int:
    """The blocks of their kernels laid end to end (a fused grid)."""
    return sum(math.prod(la.callee.grid_dims) for la in launches)


def _runs(fn: func.FuncOp) -> list[list[Operation]]:
    """Maximal runs of launches and allocs in `fn`'s body (host code at this level is
    allocs, launches, calls and a return)."""
    runs, cur = [], []
    for op in fn.body.block.ops:
        if isinstance(op, kernel.LaunchOp | memref.AllocOp):
            cur.append(op)
            continue
        if cur:
            runs.append(cur)
        cur = []
    if cur:
        runs.append(cur)
    return runs


def _drop_unlaunched(module: ModuleOp, fused_from: set[str]) -> None:
    """Kernels fused into others that no launch calls any more."""
    launched = {op.callee.string_value() for op in module.walk()
                if isinstance(op, kernel.LaunchOp)}
    for k in list(module.ops):
        if isinstance(k, kernel.FuncOp) and k.sym_name.data in fused_from \
                and k.sym_name.data not in launched:
            Rewriter.erase_op(k)


@dataclass(frozen=True)
class KernelHorizontalFusePass(ModulePass):
    """Fuse independent launches of one block size into one kernel of kernel.parts."""

    name = "kernel-horizontal-fuse"

    model: bool = True
    gpu: str = "h100"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from deplo.passes.pipeline import PipelineError

        if self.gpu not in GPUS:
            raise PipelineError(f"{self.name}: option gpu={self.gpu}: expected one of "
                                f"{', '.join(GPUS)}")
        fuser = _Fuser(op, self.model, self.gpu)
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for run in _runs(fn):
                if sum(isinstance(o, kernel.LaunchOp) for o in run) > 1:
                    fuser.run(run)
        _drop_unlaunched(op, fuser.fused_from)
