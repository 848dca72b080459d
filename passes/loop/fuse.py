"""loop-fuse: merge producer nests into their consumers so intermediates are never written.

The rule — fusion is not blind: a kernel never ends up reading more global data, or recomputing a
reduction more often, than the unfused pair did. A producer kernel P writes buffer T, a later
kernel C reads it:

1. Pointwise P (its free nest has no inner loop) is inlined: every `loop.load` of T in C becomes
   P's scalar body at that index (affine maps composed) — the broadcast product of a matmul is
   never materialized, and a bias add or RMSNorm scaling rides in the K loop. Inlining where C
   would evaluate P more than once per element of T (the *recompute factor*: the extents of the
   loops around the access that it does not index and cannot be hoisted out of, e.g. the output
   columns of a matmul reading P inside its K loop) is refused when P reads two or more buffers
   comparable in size to T that stay in memory (it would multiply global reads: silu(gate) · up
   inside the down projection reads gate and up per MAC instead of one product). Small broadcast
   inputs (a bias, a norm weight) and pointwise producers (inlined in turn) do not count.
   Recomputed arithmetic alone is accepted (a softmax numerator's exp per head-dim column is
   restructured by loop-online-softmax), except where exponentials would be recomputed in a K
   loop with no q·k in the chain to make a flash loop of (`softmax(x) @ v` of an input x: the
   probabilities are written once; the model, [8, 4096] by [4096, 64]: 182 -> 16 us), and in
   the K loop of a matmul (>= 32 x 32 outputs, K >= 32) and in the q·k loop of a flash loop:
   there only casts are inlined (not a 16-bit copy through a window or a stride, an f16
   conv's im2col: `fusion_rules.window_read`, unless the whole producer is that im2col,
   `fusion_rules.im2col`: then the product's B is the gathered window, an implicit GEMM
   tensor cores stage chunk by chunk), so the product stays a plain product (tensor
   cores, one FMA per MAC) and the producer — RMSNorm's scaling before q/k/v, the rotary embedding of q and k
   — writes its small output once (rotary embeddings inlined into q·k were computed again for
   every query row).
2. P with a reduction moves into C only where each element of T is needed once: every load of
   T indexes it by distinct loop variables of C (or 0 along a size-1 dim), and every loop around
   the insertion point — the start of the innermost of those loops — is one of them. RMSNorm's
   sum of squares lands at the start of the row loop; a matmul's K loop in front of its
   epilogue. A perfect nest of C's free loops may be interchanged first so the loops indexing T
   come outermost (softmax over a leading dim). Otherwise the pair stays two kernels. It
   stays two kernels too where the reduce loops of C around the insertion point run more
   iterations than the free loops around it (a loss: the mean over rows of each row's
   log-sum-exp): P's rows would run one after another on few threads; a flash loop (its
   `loop.private` output row) takes the scores' q·k all the same. A matmul
   never moves into a kernel that already holds one: silu(x @ wg) * (x @ wu) is the gate
   matmul with a silu-mul epilogue reading `up`, and the up matmul — two plain products that
   tensor cores run, not one loop of two products with twice the accumulators. (Attention's
   scores do move into P.V, where the softmax between them makes a flash loop.)
3. Epilogues first: a reduction whose only reader reads each element once, in place, is moved
   into that reader before anything else (the bias or residual add of a projection, silu(gate)
   · up, attention's scale and mask): a later consumer cannot pull the epilogue into its own K
   loop and strand the reduction as a kernel of its own.
4. A reduction that other kernels read too is written out for them; a consumer computes it
   again only when it reads no global data the consumer does not read anyway (its inputs,
   looking through pointwise producers, are a subset of the consumer's): the RMSNorm statistic
   in each of q, k, v — cheap, cache-resident, and one kernel less. `recompute-reductions=false`
   writes it once instead (one more kernel). A matmul read by two kernels is never recomputed,
   nor moved into a consumer that reads its output in two or more passes (a softmax of x @ w
   without P.V: its K loop would run once a pass, 3x the FLOPs on a row plan; the model,
   bf16 [512, 512]: 129 -> 9.6 us as a matmul and a softmax).
5. A concat (one nest per input) read at a plain loop index along its dim is inlined as
   `select(i < off1, part0, select(i < off2, part1, ...))`, each part read at a wrapped, always
   in-bounds index (`inline-concat`): rotate_half's cat costs a second load of the same row
   instead of a round trip through memory. Read any other way, it is materialized.
6. Consumers are visited last to first and each absorbs its whole producer chain first, so a
   reduction lands in its final consumer rather than in an intermediate broadcast.
7. A producer that uses a loop index as a value (an iota's `index_cast`) fuses where C's loads
   give that coordinate as a value: a plain loop index, or index arithmetic computed before
   the load (`(k floordiv 3) mod 3`); a hoisted reduction takes plain indices only.

    loop.launch @matmul(%p, %mm) ; loop.launch @relu(%mm, %out)
  ->
    loop.launch @relu_matmul(%x, %w, %out)  // K loop at the top of the (i, j) body, then max

Fusion repeats to a fixpoint; producers and buffers left without readers are erased; buffers
the function returns are always written. The pipeline runs this pass twice: after
`loop-online-softmax` attention scores are read once per key, and rule 2 moves their q·k loop
into the flash loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod as math_prod

from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import FlatSymbolRefAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplo import origin
from deplo.analysis.index import MATMUL_MIN_K, MATMUL_MIN_OUTPUTS, index_value
from deplo.dialects import loop
from deplo.passes.loop.fusion_rules import (
    ConcatNests,
    ProducerNest,
    concat_parts,
    forget,
    free_nest_order_for,
    hoist_point,
    im2col,
    index_constant,
    kernel_of,
    memoized,
    outer_free_nest,
    permute_free_nest,
    producer_nest,
    readers,
    reads_each_element_once_in_place,
    sources,
    window_read,
    wrapped_coordinate,
    writer,
    written_args,
)
from deplo.passes.loop.simplify import is_pure

# ---------------------------------------------------------------------------------------------
# kernel shape queries


def direct_iv_uses(nest: ProducerNest) -> set[SSAValue]:
    """The producer's free IVs that its body uses other than as `loop.load` indices."""
    return {
        v
        for op in nest.body
        for o in op.walk()
        if not isinstance(o, loop.LoadOp)
        for v in o.operands
        if v in nest.ivs
    }


# ---------------------------------------------------------------------------------------------
# affine access substitution


def substitute_access(
    indices: list[SSAValue],
    amap: AffineMap,
    subst: dict[SSAValue, tuple[list[SSAValue], AffineExpr]],
    mapper: dict[SSAValue, SSAValue],
) -> tuple[list[SSAValue], AffineMap]:
    """Rewrite an access (indices, map) where some indices are replaced by affine expressions
    over other values: returns new index operands and the composed map."""
    new_indices: list[SSAValue] = []

    def dim_of(v: SSAValue) -> AffineExpr:
        if v not in new_indices:
            new_indices.append(v)
        return AffineExpr.dimension(new_indices.index(v))

    exprs = []
    for v in indices:
        if v in subst:
            operands, e = subst[v]
            used = e.used_dims()
            dims = [dim_of(o) if k in used else AffineExpr.constant(0) for k, o in enumerate(operands)]
            exprs.append(e.replace_dims_and_symbols(dims, []))
        else:
            exprs.append(dim_of(mapper.get(v, v)))
    inner = AffineMap(len(new_indices), 0, tuple(exprs))
    return new_indices, amap.compose(inner)


def clone_producer_body(
    nest: ProducerNest,
    at: InsertPoint,
    subst: dict[SSAValue, tuple[list[SSAValue], AffineExpr]],
    mapper: dict[SSAValue, SSAValue],
    rewriter: PatternRewriter,
) -> SSAValue:
    """Clone P's body at `at`, P's free IVs replaced by affine expressions; returns the value
    P would have stored."""
    clones = [op.clone(value_mapper=mapper) for op in nest.body]
    rewriter.insert(clones, at)
    for clone in clones:  # accesses that still refer to P's induction variables
        for op in list(clone.walk()):
            if isinstance(op, loop.LoadOp) and any(v in subst for v in op.indices):
                idx, m = substitute_access(list(op.indices), op.access_map(), subst, mapper)
                new = loop.LoadOp(op.buffer, idx, m)
                new.result.name_hint = op.result.name_hint
                rewriter.replace(op, new)
                if op.result in mapper.values():
                    for k, v in list(mapper.items()):
                        if v is op.result:
                            mapper[k] = new.result
    return mapper.get(nest.stored, nest.stored)


# ---------------------------------------------------------------------------------------------
# the pattern


def _recompute_factor(load: loop.LoadOp) -> int:
    """How many times C would evaluate an inlined producer per element of T at this load: the
    extents of the enclosing loops the access does not index that enclose the innermost loop it
    does index (loop-simplify hoists it out of the unused loops inside that one)."""
    m = load.access_map()
    used = {load.indices[d] for d in m.used_dims()}
    loops = list(loop.enclosing_ops(load, loop.ForOp))  # innermost first
    if any(not any(v is f.iv for f in loops) for v in used):
        return 1  # indexed by a loaded value: no hoisting analysis, assume no recompute
    inner = next((n for n, f in enumerate(loops) if f.iv in used), None)
    if inner is None:
        return 1
    factor = 1
    for f in loops[inner + 1 :]:
        if f.iv not in used:
            factor *= f.extent
    return factor


def _is_matmul(kernel: loop.KernelOp) -> bool:
    """A nest that will run on 2-D tiles: a chain of free loops (each its parent's only loop)
    of at least 32 x 32 outputs around a reduce loop of at least 32 iterations (by shape: its
    product may not be inlined yet)."""
    return _matmul_reduces(kernel) is not None


def _free_ivs(v: SSAValue, seen: set | None = None) -> set[SSAValue]:
    """The free loops' ivs the loads `v` is computed from read by (through any ops)."""
    seen = set() if seen is None else seen
    if isinstance(v, BlockArgument) or v in seen:
        if isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), loop.ForOp) \
                and v.owner.parent_op().kind.data == loop.LoopKind.FREE:
            return {v}
        return set()
    seen.add(v)
    out: set[SSAValue] = set()
    for o in v.owner.operands:
        out |= _free_ivs(o, seen)
    return out


def _the_wider_operand(loads: list[loop.LoadOp]) -> bool:
    """Whether the producer read by `loads` is the product's operand that varies with at least
    as many output loops as the other (an im2col [n, K, h, w] against a weight [o, K]): the
    implicit GEMM gathers B, the activations' window; a 16-bit weight's flip or slice of the
    same shape of copy stays a kernel, the plain [o, K] A that tensor cores read (a
    conv_transpose's phase kernels: 52 us with it apart, 660 with both inlined on FMAs)."""
    for ld in loads:
        for u in ld.result.uses:
            ext = u.operation
            mul = next((x.operation for x in ext.results[0].uses), None) \
                if isinstance(ext, arith.ExtFOp) and ext.results else None
            if not isinstance(mul, arith.MulfOp):
                continue
            other = mul.rhs if mul.lhs is ext.results[0] else mul.lhs
            if len(_free_ivs(ld.result)) < len(_free_ivs(other)):
                return False
    return True


def _is_contraction(kernel: loop.KernelOp, launch: loop.LaunchOp) -> bool:
    """A matmul whose K loop sums a product of two operands each reading an output index the
    other does not (A[i, k] * B[k, j]; not RMSNorm's x * x, not a softmax's sum of exps),
    looking through the pointwise kernels that write what it loads (before fusion the product
    and the broadcasts of A and B are kernels of their own)."""
    found = _matmul_reduces(kernel)
    return found is not None and _sums_a_product(launch, *found)


def _sums_a_product(launch: loop.LaunchOp, reduces: list[loop.ForOp], outputs: set) -> bool:
    """One of the reduce loops adds up A[i, k] * B[k, j] over the output indices `outputs`."""
    rename = {iv: {iv} for iv in outputs}
    for f in reduces:
        y = f.body.block.last_op
        for acc, v in zip(f.body.block.args[1:], y.operands):
            add = v.owner
            if isinstance(add, arith.AddfOp) and acc in add.operands:
                term = add.rhs if add.lhs is acc else add.lhs
                if _term_is_product(term, launch, rename, 3):
                    return True
    return False


def _term_is_product(v: SSAValue, launch, rename: dict, depth: int) -> bool:
    op = v.owner
    if isinstance(op, arith.ExtFOp | arith.TruncFOp):
        return _term_is_product(op.input, launch, rename, depth)
    if isinstance(op, arith.MulfOp):
        a, b = (_reads(x, launch, rename, depth) for x in (op.lhs, op.rhs))
        return bool(a - b) and bool(b - a)
    if isinstance(op, loop.LoadOp) and depth:
        inner = _through_writer(op, launch, rename)
        return inner is not None and _term_is_product(inner[0], inner[1], inner[2], depth - 1)
    return False


def _reads(v: SSAValue, launch, rename: dict, depth: int, seen=None) -> set[SSAValue]:
    """The consumer's output indices `v` depends on (`rename`: what each index of this kernel
    stands for), through arithmetic and the pointwise kernels that write what it loads."""
    seen = set() if seen is None else seen
    op = v.owner
    if not isinstance(op, Operation) or op in seen:
        return set()
    seen.add(op)
    if isinstance(op, loop.LoadOp):
        if depth and (inner := _through_writer(op, launch, rename)) is not None:
            return _reads(inner[0], inner[1], inner[2], depth - 1)
        used = [x for x, e in zip(op.indices, _used_dims(op)) if e]
        return set().union(*(rename.get(x, set()) for x in used))
    if op.dialect_name() not in ("arith", "math"):
        return set()
    return set().union(*(_reads(o, launch, rename, depth, seen) for o in op.operands))


def _through_writer(ld: loop.LoadOp, launch, rename: dict):
    """(the value the pointwise writer of what `ld` reads stores, its launch, its indices'
    meaning), or None."""
    arg = ld.buffer
    kernel = ld.parent_op()
    while kernel is not None and not isinstance(kernel, loop.KernelOp):
        kernel = kernel.parent_op()
    if not isinstance(arg, BlockArgument) or kernel is None or arg.owner is not kernel.body.block:
        return None
    w = writer(launch.args[arg.index])
    nest = producer_nest(kernel_of(w)) if w is not None else None
    if nest is None or nest.has_reduction:
        return None
    results = ld.access_map().results
    inner = {iv: set().union(*(rename.get(ld.indices[d], set()) for d in e.used_dims()))
             for iv, e in zip(nest.ivs, results)}
    return nest.stored, w, inner


def _matmul_reduces(kernel: loop.KernelOp) -> tuple[list[loop.ForOp], set[SSAValue]] | None:
    outputs, block, ivs = 1, kernel.body.block, set()
    while True:
        loops = [o for o in block.ops if isinstance(o, loop.ForOp)]
        if len(loops) != 1 or loops[0].kind.data != loop.LoopKind.FREE:
            break
        outputs *= loops[0].extent
        ivs.add(loops[0].iv)
        block = loops[0].body.block
    reduces = [f for f in loops
               if f.kind.data == loop.LoopKind.REDUCE and f.extent >= MATMUL_MIN_K]
    if outputs < MATMUL_MIN_OUTPUTS or not reduces or block is kernel.body.block:
        return None
    return reduces, ivs


def _used_dims(ld: loop.LoadOp) -> list[bool]:
    """Per index of a load, whether its map reads it."""
    dims = ld.access_map().used_dims()
    return [k in dims for k in range(len(ld.indices))]


def _only_casts(nest: ProducerNest) -> bool:
    """A producer that only loads and converts (a dtype cast of an input)."""
    return all(isinstance(o, loop.LoadOp | arith.ExtFOp | arith.TruncFOp | arith.ConstantOp)
               for o in nest.body)


def _exp_in_k_loop(kernel: loop.KernelOp) -> bool:
    """Exponentials inside a reduce loop: attention's P·V after loop-online-softmax."""
    return any(isinstance(o, math.ExpOp) and any(
        f.kind.data == loop.LoopKind.REDUCE for f in loop.enclosing_ops(o, loop.ForOp))
        for o in kernel.walk())


def _softmax(consumer: loop.KernelOp, p_launch: loop.LaunchOp) -> bool:
    """Whether the consumer or the producer chain computes exponentials: attention's P·V,
    which loop-online-softmax turns into a flash loop (its probabilities must be inlined)."""
    return _exp_in_k_loop(consumer) or _exp_chain(p_launch)


def _exp_chain(p_launch: loop.LaunchOp, depth: int = 8) -> bool:
    if any(isinstance(o, math.ExpOp) for o in kernel_of(p_launch).walk()):
        return True
    writers = [w for v in p_launch.args if (w := writer(v)) is not None and w is not p_launch]
    return depth > 0 and any(_exp_chain(w, depth - 1) for w in writers)


def _scores_product(p_launch: loop.LaunchOp, depth: int = 8) -> bool:
    """A kernel of the producer chain sums a product (attention's q·k, through the pointwise
    kernels that write its operands), which loop-online-softmax makes a flash loop with P·V.
    Without one (`softmax(x) @ v` of an input x) no flash loop comes: probabilities inlined
    into P·V's K loop were computed again for each of its output columns (the model, [8, 4096]
    by [4096, 64]: 64x the roofline)."""
    for f in kernel_of(p_launch).walk():
        if isinstance(f, loop.ForOp) and f.kind.data == loop.LoopKind.REDUCE:
            outputs = {g.iv for g in loop.enclosing_ops(f, loop.ForOp)
                       if g.kind.data == loop.LoopKind.FREE}
            if _sums_a_product(p_launch, [f], outputs):
                return True
    writers = [w for v in p_launch.args if (w := writer(v)) is not None and w is not p_launch]
    return depth > 0 and any(_scores_product(w, depth - 1) for w in writers)


def _in_flash_scores(ld: loop.LoadOp) -> bool:
    """`ld` is in the q·k loop of a flash loop (a reduce loop inside a reduce loop that computes
    exponentials): arithmetic inlined there (rotary embeddings) is computed again for every
    query row, and q·k stops being a plain product tensor cores run."""
    loops = list(loop.enclosing_ops(ld, loop.ForOp))
    inner = next((f for f in loops if f.kind.data == loop.LoopKind.REDUCE), None)
    return inner is not None and any(
        f.kind.data == loop.LoopKind.REDUCE and any(
            isinstance(o, math.ExpOp) and inner not in loop.enclosing_ops(o, loop.ForOp)
            for o in f.walk())
        for f in loops if f is not inner)


def _multiplies_reads(nest: ProducerNest, p_launch: loop.LaunchOp) -> bool:
    """Inlining P would read two or more buffers about as large as T where T was read once.

    The buffers counted are those that stay in memory, found through pointwise producers (which
    are inlined in turn): function arguments and results of kernels with a reduction. Small
    broadcast inputs (a bias, a norm weight, a per-row statistic) do not count."""
    size = _elements(nest.kernel.args[nest.out_index].type)
    return len(_memory_sources(p_launch, nest.out_index, size, depth=8)) >= 2


def _memory_sources(launch: loop.LaunchOp, out_index: int, size: int, depth: int) -> set:
    found: set = set()
    for j, value in enumerate(launch.args):
        if j == out_index or 2 * _elements(value.type) < size:
            continue
        writer = _pointwise_writer(value, launch)
        if writer is not None and depth > 0:
            found |= _memory_sources(writer[0], writer[1], size, depth - 1)
        else:
            found.add(value)
    return found


def _pointwise_writer(value: SSAValue, reader: loop.LaunchOp):
    """(launch, output index) of the pointwise kernel that writes `value`, if one does."""
    for use in value.uses:
        op = use.operation
        if isinstance(op, loop.LaunchOp) and op is not reader:
            kernel = kernel_of(op)
            if isinstance(kernel, loop.KernelOp) and use.index in written_args(kernel):
                nest = producer_nest(kernel)
                if nest is not None and not nest.has_reduction:
                    return op, use.index
                return None
    return None


def _elements(t) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _hoist_point(load: loop.LoadOp, kernel: loop.KernelOp) -> InsertPoint | None:
    """Where a reduction producer can be computed exactly once per element of T, or None."""
    shape = load.buffer.type.get_shape()
    return hoist_point(list(load.indices), load.access_map(), load, shape)


def _base(name: str) -> str:
    return re.sub(r"_\d+$", "", name)


@dataclass
class FuseProducer(RewritePattern):
    """Fuse one producer launch into the consumer launch being visited (see the module doc)."""

    recompute_reductions: bool = True
    inline_concat: bool = True
    # `sources` of launches as the IR stands, cleared by each fusion: the checks between two
    # fusions ask it again and again (an RNN's recurrent chain: 10^4 walks of ~40 kernels)
    _sources: dict = field(default_factory=dict, repr=False)
    # (consumer, buffer, load key) -> the value an inlined pointwise producer computed there
    _inlined: dict = field(default_factory=dict, repr=False)

    # the host's launch order, taken once a consumer's fusions (each erases its producer)
    _order: _HostOrder | None = field(default=None, repr=False)

    def sources(self, launch: loop.LaunchOp) -> set[SSAValue]:
        if launch not in self._sources:
            self._sources[launch] = sources(launch)
        return self._sources[launch]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        # A consumer absorbs its whole producer chain before earlier launches are visited
        # (the walk goes last to first), so a reduction is hoisted into its final consumer
        # rather than into an intermediate broadcast that would then be materialized.
        self._order = None
        while self._fuse_one(launch, rewriter):
            self._sources.clear()

    def _fuse_one(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> bool:
        host = launch.parent_block()
        fn = launch.parent_op()
        if host is None or not isinstance(fn, func.FuncOp):
            return False
        module = fn.parent_op()
        consumer = kernel_of(launch)
        if not isinstance(consumer, loop.KernelOp):
            return False
        forget(consumer)  # (the one kernel this changes)
        returned = {v for o in host.ops if isinstance(o, func.ReturnOp) for v in o.arguments}
        for i, t in enumerate(launch.args):
            if i in written_args(consumer) or t in returned:
                continue
            if not isinstance(t.owner, memref.AllocOp):
                continue
            writers = [
                u.operation
                for u in t.uses
                if isinstance(u.operation, loop.LaunchOp) and u.operation is not launch
                and u.index in written_args(kernel_of(u.operation))
            ]
            if len(writers) != 1:
                continue
            p_launch = writers[0]
            near = _near_and_safe(p_launch, launch)
            if near is None and self._order is None:
                self._order = _HostOrder(host)
            if not (near if near is not None else self._order.safe_to_move(p_launch, launch)):
                continue
            pkernel = kernel_of(p_launch)
            nest = producer_nest(pkernel) if isinstance(pkernel, loop.KernelOp) else None
            if nest is None and self.inline_concat and isinstance(pkernel, loop.KernelOp):
                cat = concat_parts(pkernel)
                if (cat is not None and p_launch.args[cat.out_index] is t
                        and _fuse_concat(launch, consumer, i, p_launch, cat, rewriter)):
                    _cleanup(module, host, t, p_launch, pkernel, rewriter)
                    self._erased(p_launch)
                    return True
                continue
            if nest is None or p_launch.args[nest.out_index] is not t:
                continue
            if self._fuse(launch, consumer, i, p_launch, nest, rewriter):
                _cleanup(module, host, t, p_launch, pkernel, rewriter)
                self._erased(p_launch)
                return True
        return False

    def _erased(self, p_launch: loop.LaunchOp) -> None:
        """The order without a producer launch its consumer absorbed (its writes are gone)."""
        if self._order is not None and p_launch.parent is None:
            self._order.drop(p_launch)

    def _fuse(self, launch, consumer, i, p_launch, nest: ProducerNest, rewriter) -> bool:
        arg = consumer.args[i]
        loads = [u.operation for u in arg.uses if isinstance(u.operation, loop.LoadOp)]
        if len(loads) != len(list(arg.uses)):
            return False
        points = {}
        in_k_loop = any(f.kind.data == loop.LoopKind.REDUCE
                        for ld in loads for f in loop.enclosing_ops(ld, loop.ForOp))
        # an f16 conv's im2col inlined into its product: an implicit GEMM (tensor cores
        # stage the gathered window's chunks), not a copy through a window
        gemm_window = in_k_loop and im2col(nest) and _is_matmul(consumer) \
            and _the_wider_operand(loads)
        arithmetic = in_k_loop and not gemm_window \
            and (not _only_casts(nest) or window_read(nest))
        if not nest.has_reduction and any(_recompute_factor(ld) > 1 for ld in loads) and (
                _multiplies_reads(nest, p_launch)
                or (arithmetic and _is_matmul(consumer) and not _softmax(consumer, p_launch))
                or (arithmetic and _exp_chain(p_launch) and not _exp_in_k_loop(consumer)
                    and not _scores_product(p_launch))
                or (arithmetic and any(_in_flash_scores(ld) for ld in loads)
                    and not _exp_chain(p_launch))):
            return False
        if nest.has_reduction:
            if _is_contraction(nest.kernel, p_launch) and _is_contraction(consumer, launch) \
                    and not _exp_in_k_loop(consumer):
                return False  # one matmul a kernel (attention's q.k into P.V aside: flash)
            if _is_contraction(nest.kernel, p_launch) \
                    and len({(tuple(ld.indices), ld.access_map()) for ld in loads}) > 1:
                return False  # a matmul computed again for each pass over its output (a
                # two-pass softmax of q·k without P.V: 3x its FLOPs, on a row plan)
            # read by other kernels too, it is computed again here (and written out for them)
            # only when that reads no global data the consumer does not read anyway
            others = [r for r in readers(p_launch.args[nest.out_index], p_launch)
                      if r is not launch]
            if others and not (self.recompute_reductions
                               and self.sources(p_launch) <= self.sources(launch)):
                return False
            if any(_hoist_point(ld, consumer) is None for ld in loads):
                _reorder_for_hoist(consumer, loads)
                forget(consumer)
            for ld in loads:
                p = _hoist_point(ld, consumer)
                if p is None or _serial_rows(p, consumer):
                    return False
                points[ld] = p
        # P's IVs used as values (an iota's index_cast) need a consumer value to stand for
        # them: a plain loop index, or its expression computed (index_value) where P is
        # inlined at the load (a conv's im2col mask reads its kernel row at `(k floordiv 3)
        # mod 3`); a hoisted reduction takes plain indices only
        direct = direct_iv_uses(nest)
        for ld in loads:
            exprs = dict(zip(nest.ivs, ld.access_map().results))
            if nest.has_reduction and any(not isinstance(exprs[iv], AffineDimExpr)
                                          for iv in direct):
                return False
        block = consumer.body.block
        t = launch.args[i]
        if not nest.has_reduction:
            # an element of P inlined here before (P has other readers, and a later fusion
            # brought T back with a kernel that reads it) serves again: a chain of such
            # producers would otherwise be inlined anew for every kernel after it
            for ld in list(loads):
                earlier = self._inlined.get((consumer, t, (tuple(ld.indices), ld.access_map())))
                if earlier is not None and _available(earlier, ld, consumer, rewriter):
                    rewriter.replace(ld, [], [earlier])
                    loads.remove(ld)
        if not loads:  # T just leaves the consumer; P's inputs do not come in
            launch.operands = [v for k, v in enumerate(launch.operands) if k != arg.index]
            block.erase_arg(arg)
            return True
        mapper, operands = _adopt_inputs(launch, consumer, i, p_launch, nest.kernel,
                                         nest.out_index, rewriter)
        done: dict[tuple, SSAValue] = {}
        for ld in loads:
            key = (tuple(ld.indices), ld.access_map())
            if key in done and (nest.has_reduction
                                or _available(done[key], ld, consumer, rewriter)):
                rewriter.replace(ld, [], [done[key]])
                continue
            m = ld.access_map()
            subst = {iv: (list(ld.indices), e) for iv, e in zip(nest.ivs, m.results)}
            at = points.get(ld, InsertPoint.before(ld))
            local = dict(mapper)
            for iv, e in zip(nest.ivs, m.results):
                if iv in direct:
                    local[iv] = _coordinate_value(e, ld, rewriter)
            value = clone_producer_body(nest, at, subst, local, rewriter)
            done[key] = value
            if not nest.has_reduction:
                self._inlined[(consumer, t, key)] = value
            rewriter.replace(ld, [], [value])
        # drop T from the consumer
        launch.operands = [v for k, v in enumerate(operands) if k != arg.index]
        block.erase_arg(arg)
        if nest.has_reduction:
            a, b = _base(consumer.sym_name.data), _base(nest.kernel.sym_name.data)
            if b not in a:
                _rename(consumer, launch, f"{a}_{b}")
        return True


def _coordinate_value(e: AffineExpr, ld: loop.LoadOp, rewriter) -> SSAValue:
    """The value of coordinate `e` of load `ld`: its index, or index arithmetic before it."""
    if isinstance(e, AffineDimExpr):
        return ld.indices[e.position]
    ops: list[Operation] = []
    value = index_value(e, list(ld.indices), ops)
    rewriter.insert(ops, InsertPoint.before(ld))
    return value


def _available(value: SSAValue, op: Operation, kernel: loop.KernelOp, rewriter) -> bool:
    """Whether `value`, a live op's result in `kernel`, can serve `op`: it is defined before op
    in a block enclosing it, or the pure ops it is computed from that follow op there move
    up in front of op (a later fusion put op's clone before the earlier one)."""
    if not isinstance(value, OpResult) or value.op.parent_block() is None:
        return False
    block = value.op.parent_block()
    anchor = next((o for o in (op, *loop.enclosing_ops(op, Operation))
                   if o.parent_block() is block), None)
    if anchor is None:
        return False
    if value.op.is_before_in_block(anchor):
        return True
    read_only = {a for i, a in enumerate(kernel.args) if i not in written_args(kernel)}
    needed, moved = {value}, []
    o = value.op
    while o is not anchor:
        if needed & set(o.results):
            if not is_pure(o, read_only):
                return False
            moved.append(o)
            needed |= set(o.operands)
        o = o.prev_op
    if needed & set(anchor.results):
        return False
    for o in reversed(moved):
        o.detach()
        rewriter.insert(o, InsertPoint.before(anchor))
    return True


def _serial_rows(point: InsertPoint, consumer: loop.KernelOp) -> bool:
    """The point is inside reduce loops of the consumer that run more iterations than the free
    loops around them: P's free loops (a loss's rows) would run one after another there, the
    reduction on few threads (cross_entropy over [256, 32000], the model: 1868 us on one
    thread). Left two kernels, P keeps its rows parallel and the consumer reduces what it
    wrote. A flash loop (loop-online-softmax's output row, a `loop.private`) is the exception:
    attention's scores move into its key loop whatever the heads and queries around it (one
    query of one head, decoding)."""
    owner = point.block.parent_op()
    loops = [owner, *loop.enclosing_ops(owner, loop.ForOp)] if isinstance(owner, loop.ForOp) \
        else []
    serial = math_prod(f.extent for f in loops if f.kind.data == loop.LoopKind.REDUCE)
    parallel = math_prod(f.extent for f in loops if f.kind.data == loop.LoopKind.FREE)
    return serial > max(1, parallel) and not any(
        isinstance(o, loop.PrivateOp) for o in consumer.walk())


def _reorder_for_hoist(consumer: loop.KernelOp, loads: list[loop.LoadOp]) -> None:
    """Interchange the consumer's outer perfect free nest so the loops that index the reduction
    come first (softmax over a leading dim: the column loop outside the row loop), when that
    makes every load hoistable; otherwise leave it as it was."""
    nest = outer_free_nest(consumer)
    order = free_nest_order_for(nest, loads)
    if order is None:
        return
    permute_free_nest(nest, order)
    if any(_hoist_point(ld, consumer) is None for ld in loads):
        permute_free_nest(nest, [order.index(k) for k in range(len(order))])


def _adopt_inputs(launch, consumer, i, p_launch, pkernel, out_index, rewriter):
    """P's inputs become consumer arguments (reusing ones the consumer already has), inserted
    where T was so the consumer's inputs stay ahead of its outputs; P's constants are copied to
    the consumer's top. Returns the map P value -> consumer value and the new launch operands
    (T still among them)."""
    mapper: dict[SSAValue, SSAValue] = {}
    block = consumer.body.block
    operands = list(launch.operands)
    pos = i
    origin.join(consumer, pkernel)
    for j, (parg, hval) in enumerate(zip(pkernel.args, p_launch.args)):
        if j == out_index:
            continue
        existing = next((k for k, v in enumerate(operands) if v is hval), None)
        if existing is not None:
            mapper[parg] = block.args[existing]
            continue
        new = block.insert_arg(parg.type, pos)
        new.name_hint = parg.name_hint
        operands.insert(pos, hval)
        mapper[parg] = new
        pos += 1
    top = InsertPoint.at_start(block)
    for c in pkernel.body.block.ops:
        if isinstance(c, arith.ConstantOp):
            rewriter.insert(clone := c.clone(), top)
            mapper[c.result] = clone.result
    return mapper, operands


def _fuse_concat(launch, consumer, i, p_launch, cat: ConcatNests, rewriter) -> bool:
    """Inline a concat read along its dim (at any coordinate, a pool's window; a matmul's K
    loop only at a plain loop index): each load of T becomes
    `select(i < off1, part0, select(i < off2, part1, ...))`, part k computed at the wrapped
    coordinate `(i - offk) mod nk` (always in bounds; its value is used only where it is
    exact)."""
    arg = consumer.args[i]
    loads = [u.operation for u in arg.uses if isinstance(u.operation, loop.LoadOp)]
    if len(loads) != len(list(arg.uses)):
        return False
    if _is_matmul(consumer) and any(not isinstance(ld.access_map().results[cat.dim],
                                                    AffineDimExpr) for ld in loads):
        return False  # (a conv's window in its K loop: the product stays plain, its pad a kernel)
    mapper, operands = _adopt_inputs(launch, consumer, i, p_launch, cat.kernel, cat.out_index,
                                     rewriter)
    bounds = {p.offset: index_constant(consumer, p.offset) for p in cat.parts[1:]}
    for ld in loads:
        m = ld.access_map()
        e = m.results[cat.dim]
        ops: list[Operation] = []
        coord = index_value(e, list(ld.indices), ops)
        rewriter.insert(ops, InsertPoint.before(ld))
        values = []
        for part in cat.parts:
            exprs = list(m.results)
            exprs[cat.dim] = wrapped_coordinate(e, part.offset, part.extents[cat.dim])
            subst = {iv: (list(ld.indices), x) for iv, x in zip(part.ivs, exprs)}
            nest = ProducerNest(cat.kernel, cat.out_index, part.ivs, part.body, part.stored, False)
            values.append(clone_producer_body(nest, InsertPoint.before(ld), subst, dict(mapper),
                                              rewriter))
        value = values[-1]
        for part, v in zip(reversed(cat.parts[1:]), reversed(values[:-1])):
            below = arith.CmpiOp(coord, bounds[part.offset], "ult")
            sel = arith.SelectOp(below, v, value)
            rewriter.insert([below, sel], InsertPoint.before(ld))
            value = sel.result
        rewriter.replace(ld, [], [value])
    launch.operands = [v for k, v in enumerate(operands) if k != arg.index]
    consumer.body.block.erase_arg(arg)
    return True


class _HostOrder:
    """The host block's order and which launch writes what: whether a producer runs before a
    consumer with its inputs untouched in between (fusing would read them late). Taken once
    and asked of many producers, without a walk of the launches between each time: an RNN's
    producers are hundreds of launches before their consumer."""

    def __init__(self, host: Block):
        self.pos = {op: k for k, op in enumerate(host.ops)}
        self.writes: dict[SSAValue, list[int]] = {}
        self.wrote: dict[Operation, list[SSAValue]] = {}
        for op, k in self.pos.items():
            if isinstance(op, loop.LaunchOp) and isinstance(kern := kernel_of(op), loop.KernelOp):
                self.wrote[op] = [op.args[w] for w in written_args(kern)]
                for v in self.wrote[op]:
                    self.writes.setdefault(v, []).append(k)

    def drop(self, launch: loop.LaunchOp) -> None:
        """`launch` was erased: it neither stands between nor writes."""
        k = self.pos.pop(launch, None)
        for v in self.wrote.pop(launch, ()):
            self.writes[v] = [w for w in self.writes[v] if w != k]

    def safe_to_move(self, p_launch: loop.LaunchOp, c_launch: loop.LaunchOp) -> bool:
        a, b = self.pos.get(p_launch), self.pos.get(c_launch)
        if a is None or b is None or a >= b:
            return False
        return not any(a < k < b for v in set(p_launch.args) for k in self.writes.get(v, ()))


def _near_and_safe(p_launch: loop.LaunchOp, c_launch: loop.LaunchOp, within: int = 64
                   ) -> bool | None:
    """_HostOrder's answer from a walk of the few ops from the producer to its consumer, the
    common case (None when the consumer is further: the order is taken once then). Taking it
    for every fusion was most of fusion's time on a thousand-kernel program (a bicubic
    grid_sample: 1655 fusions, 37 s)."""
    args = set(p_launch.args)
    op = p_launch.next_op
    for _ in range(within):
        if op is None:
            return False  # (the consumer is not after the producer)
        if op is c_launch:
            return True
        if isinstance(op, loop.LaunchOp) and isinstance(kern := kernel_of(op), loop.KernelOp) \
                and any(op.args[w] in args for w in written_args(kern)):
            return False
        op = op.next_op
    return None


def _rename(kernel: loop.KernelOp, launch: loop.LaunchOp, name: str) -> None:
    module = kernel.parent_op()
    taken = {o.sym_name.data for o in module.ops if isinstance(o, loop.KernelOp)}
    new, n = name, 1
    while new in taken:
        new, n = f"{name}_{n}", n + 1
    old = kernel.sym_name.data
    kernel.sym_name = type(kernel.sym_name)(new)
    for op in _launches(module, old):
        op.callee = FlatSymbolRefAttr(new)


def _launches(module: Operation, name: str) -> list[loop.LaunchOp]:
    """The launches of kernel @name (host functions only: a walk into every kernel body was
    most of fusion's time)."""
    return [o for f in module.regions[0].block.ops if not isinstance(f, loop.KernelOp)
            for o in f.walk() if isinstance(o, loop.LaunchOp)
            and o.callee.root_reference.data == name]


def _cleanup(module, host: Block, t: SSAValue, p_launch, pkernel, rewriter: PatternRewriter):
    """Erase the producer launch, T and the producer kernel once nothing reads them."""
    if all(u.operation is p_launch for u in t.uses):
        rewriter.erase(p_launch)
        rewriter.erase(t.owner)
    if not _launches(module, pkernel.sym_name.data):
        rewriter.erase(pkernel)


class FuseIntoEpilogue(RewritePattern):
    """A reduction whose one reader reads each of its elements once, in place, moves into that
    reader, which becomes its epilogue (the projection's bias or residual add, silu(gate)·up,
    attention's scale and mask):

        loop.launch @linear(%x, %w, %y) ; loop.launch @add(%y, %r, %out)
      ->
        loop.launch @add_linear(%x, %w, %r, %out)   // K loop, then + r, stored once

    Run before the consumer-driven walk, so a later consumer cannot pull the epilogue away from
    its reduction and strand the reduction as a kernel of its own."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, r_launch: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        host, fn = r_launch.parent_block(), r_launch.parent_op()
        if host is None or not isinstance(fn, func.FuncOp):
            return
        rkernel = kernel_of(r_launch)
        nest = producer_nest(rkernel) if isinstance(rkernel, loop.KernelOp) else None
        if nest is None or not nest.has_reduction:
            return
        t = r_launch.args[nest.out_index]
        users = readers(t, r_launch)
        if not isinstance(t.owner, memref.AllocOp) or len(users) != 1:
            return
        p_launch = users[0]
        if not isinstance(p_launch, loop.LaunchOp):
            return
        pkernel = kernel_of(p_launch)
        pn = producer_nest(pkernel) if isinstance(pkernel, loop.KernelOp) else None
        at = [k for k, v in enumerate(p_launch.args) if v is t]
        if pn is None or len(at) != 1 or at[0] in written_args(pkernel):
            return
        uses = list(pkernel.args[at[0]].uses)
        if not all(isinstance(u.operation, loop.LoadOp)
                   and reads_each_element_once_in_place(u.operation, pn.ivs) for u in uses):
            return
        if not _HostOrder(host).safe_to_move(r_launch, p_launch):  # (last: it reads the host)
            return
        if FuseProducer()._fuse(p_launch, pkernel, at[0], r_launch, nest, rewriter):
            _cleanup(fn.parent_op(), host, t, r_launch, rkernel, rewriter)


class EraseDeadLaunch(RewritePattern):
    """A launch whose every output is a fresh buffer that nothing reads or returns does nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        kernel = kernel_of(launch)
        if not isinstance(kernel, loop.KernelOp):
            return
        outs = [launch.args[w] for w in written_args(kernel)]
        if not outs or not all(
            isinstance(t.owner, memref.AllocOp) and all(u.operation is launch for u in t.uses)
            for t in outs
        ):
            return
        module = kernel.parent_op()
        rewriter.erase(launch)
        for t in outs:
            rewriter.erase(t.owner)
        if not _launches(module, kernel.sym_name.data):
            rewriter.erase(kernel)


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Fuse producer loop nests into consumers by the rule in the module docstring: epilogues
    first, then pointwise producers inlined and reductions hoisted where each element is needed
    once. Options: `recompute-reductions` (rule 4), `inline-concat` (rule 5), `epilogues`
    (rule 3)."""

    name = "loop-fuse"

    recompute_reductions: bool = True
    inline_concat: bool = True
    epilogues: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.epilogues:
            PatternRewriteWalker(
                GreedyRewritePatternApplier([FuseIntoEpilogue()], dce_enabled=False),
                apply_recursively=True,
            ).rewrite_module(op)
        fuse = FuseProducer(self.recompute_reductions, self.inline_concat)
        with memoized():
            PatternRewriteWalker(
                GreedyRewritePatternApplier([EraseDeadLaunch(), fuse], dce_enabled=False),
                apply_recursively=True,
                walk_reverse=True,
            ).rewrite_module(op)
        # drop the uniquing suffix of kernel names that fusion left unique
        kernels = [k for k in op.ops if isinstance(k, loop.KernelOp)]
        bases = [_base(k.sym_name.data) for k in kernels]
        for k, base in zip(kernels, bases):
            if bases.count(base) == 1 and base != k.sym_name.data:
                launch = _launches(op, k.sym_name.data)[0]
                _rename(k, launch, base)
