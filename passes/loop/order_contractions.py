"""loop-order-contractions: a contraction's free loops in the order that makes it a matmul.

The tile planner reads a contraction as a matmul over its two innermost free loops (i, j): one
operand read along i and not j (A), one along j and not i (B), each staged a slab at a time.
conv2d lowers as im2col index maps in the output's order, out[n, o, h, w] = sum_k x[n, c, h +
kh, w + kw] * w[o, c, kh, kw]: over (h, w) the input depends on both, neither operand is a slab,
and every thread reads both from global memory for every MAC (the model, [8, 64, 56, 56] by
64 x 3 x 3: 975 us). With `o` moved next to `w`, (i, j) = (o, w) is a product: the weight
along o, the input along w (130 us). The innermost loop stays (the stores stay along it), the
loop moved in is the innermost one that makes the pair a product; the others keep their order.
Free iterations are independent, so any order computes the same stores
(fusion_rules.permute_free_nest).

Where j is narrower than a block tile (FOLD_BELOW: a stride-2 conv's 7 output columns) and the
outputs are many (FOLD_OUTPUTS), the loops that no load reads together with i (the image, the
output row) fold into it: one loop over their product, each old index its digit of the new one
in every access (the implicit GEMM's N = images x rows x columns; loop-collapse-dims, which
runs next, merges the dims that then read one index split). The tiles then span images and
rows instead of 7 of 64 columns (the model, H100, [8, 256, 14, 14] by 512 x 3 x 3 with stride
2: 86 -> 41 us). Every such loop folds: folding only until j is a tile wide lost in the model,
though a 1x1 conv's input is then no plain slab ([8, 256, 14, 14] by 256 x 1 x 1: 14.8 us with
both operands staged, 12.6 folding (h, w), 10.3 folding (n, h, w)).

An f16/bf16 product whose operand along j is a gather (an implicit GEMM: the conv's window
inlined into the K loop, `fusion_rules.im2col`; tile-tensor-core stages it by index math, no
plain slab needed) folds every loop not read with i, its padding masks' ivs included (their
digits computed), where a row is at most FOLD_GATHERED = 16 columns (fp16 [8, 256, 14, 14] by
256 x 3 x 3: 26.5 -> 18.9 us by the model; wider rows were faster as batches). Any other f16/bf16
product (tensor cores) folds only the loops its operand along j reads after K's
dims (`_after_k`: (h, w), which loop-collapse-dims merges into one plain dim), whatever the
output count: an image folded in too would split j across the input's batch and channel dims,
and fragment loads take only a plain [.., K, j] slab.

A grouped conv reads its input's channels by the output channel's group, `o floordiv (O /
groups)`: along o and w both, so no order makes a product. Its out-channel loop splits into
(group, channel in group) first (`_split_groups`): the group is then a batch and (channel, w) a
pair ([8, 64, 28, 28] by 128 x 32 x 3 x 3, groups 2: 356 -> 31 us). Depthwise convs (a group
a channel) are left as they are: no product to make.

Qualifies: a kernel that is a perfect nest of free loops around one reduce loop (with no loop
inside it) and its epilogue, whose innermost pair (i, j) is not a product already, or whose
j folds loops in (plain loops whose ivs only index loads and stores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.index import by_constant
from deplo.dialects import loop, tile
from deplo.passes.loop.cutting import index_only, index_use
from deplo.passes.loop.fuse import substitute_access
from deplo.passes.loop.fusion_rules import outer_free_nest, permute_free_nest


def _reads(red: loop.ForOp, ivs: list[SSAValue]) -> list[set[SSAValue]]:
    """Per load in the reduce loop, the free loops' ivs its coordinates use."""
    out = []
    for ld in red.body.walk():
        if isinstance(ld, loop.LoadOp):
            used = {ld.indices[d] for d in ld.access_map().used_dims()}
            out.append({v for v in ivs if v in used})
    return out


def _product(reads: list[set[SSAValue]], i: SSAValue, j: SSAValue) -> bool:
    """(i, j) is a matmul's pair: no load along both, one along i only, one along j only."""
    return not any(i in r and j in r for r in reads) and any(i in r for r in reads) \
        and any(j in r for r in reads)


FOLD_BELOW = 64  # a j narrower than a block tile takes in the loops it can fold, where i and
# the folded j give FOLD_OUTPUTS or more: fewer, and the tiles over them left SMs idle that the
# batches on block.z kept busy (the model, H100: [2, 16, 14, 14] by 32 x 16 x 3 x 3 with
# stride 2, 11 us as batches, 20 folded; [8, 256, 14, 14] by 512 x 256 x 3 x 3, 200704
# outputs, 86 -> 41 us folded)
FOLD_OUTPUTS = 132 * 1024


FOLD_GATHERED = 16  # an implicit GEMM folds (images, rows) into j where a row is at most
# this many columns: each block's weight chunk otherwise serves a tile of 16 columns or fewer,
# staged again for every one (the model, H100, fp16 by 3 x 3: [8, 512, 7, 7] 92.9 -> 28.8 us,
# [8, 256, 14, 14] 26.5 -> 18.9, ViT's [8, 3, 224, 224] by 16 x 16 patches 26.9 -> 15.6).
# Wider rows stay, the image and row batch loops on block.z: folded, the ranked tiles came out
# slower ([8, 128, 28, 28] 19.3 -> 25.7 us, stride 2 of [8, 64, 56, 56] 11.3 -> 14.5, a stem's
# 7 x 7 of [8, 3, 224, 224] 15.0 -> 17.6), though [8, 64, 56, 56] by 64 x 3 x 3 would gain
# (14.9 -> 12.4)


def _contraction(kernel: loop.KernelOp) -> tuple[list[loop.ForOp], loop.ForOp] | None:
    """(the perfect free nest, the one reduce loop in it, with no loop inside), or None."""
    nest = outer_free_nest(kernel)
    if len(nest) < 2:
        return None
    inner = [o for o in nest[-1].body.block.ops if isinstance(o, loop.ForOp)]
    if len(inner) != 1 or inner[0].kind.data != loop.LoopKind.REDUCE \
            or any(isinstance(o, loop.ForOp) for o in inner[0].body.walk() if o is not inner[0]):
        return None
    return nest, inner[0]


def _order(kernel: loop.KernelOp) -> tuple[list[int], int] | None:
    """(the nest's new order, how many of its innermost loops fold into one j), or None."""
    if (found := _contraction(kernel)) is None:
        return None
    nest, red = found
    ivs = [f.iv for f in nest]
    reads = _reads(red, ivs)
    j = len(nest) - 1
    i = next((k for k in range(j - 1, -1, -1) if _product(reads, ivs[k], ivs[j])), None)
    if i is None:
        return None
    rest = [k for k in range(j) if k != i]
    # an implicit GEMM (an f16 conv's window inlined into its K loop: tensor cores gather B's
    # chunks by index math, no plain slab needed): its ivs also feed the padding's masks
    gathered = _gathered(red, ivs[i], ivs[j])
    fold = [k for k in rest if _plain(nest[k]) and (gathered or index_only(ivs[k]))
            and not any(ivs[k] in r and ivs[i] in r for r in reads)] \
        if _plain(nest[j]) and (gathered or index_only(ivs[j])) else []
    if gathered:  # a row of 16 columns or fewer: every loop not read with i folds into j
        fold = fold if nest[j].extent <= FOLD_GATHERED else []
    elif _half_product(red) and _after_k(red, ivs[j], ivs[j]):  # tensor cores: what keeps the
        # operand along j plain, however wide j is (where it is plain along j at all: not a
        # window's gather; W = 64 left h a batch: fp16 [8, 64, 64, 64] 3x3 on FMAs, 88 us)
        fold = [k for k in fold if _after_k(red, ivs[k], ivs[j])]
    elif nest[j].extent >= FOLD_BELOW \
            or math.prod(nest[k].extent for k in [i, *fold, j]) < FOLD_OUTPUTS:
        fold = []
    order = [*(k for k in rest if k not in fold), i, *fold, j]
    if order == list(range(len(nest))) and not fold:
        return None
    return order, len(fold) + 1


def _half_product(red: loop.ForOp) -> bool:
    """A K loop whose loads are all f16/bf16: a product tensor cores may take."""
    loads = [o for o in red.body.walk() if isinstance(o, loop.LoadOp)]
    return bool(loads) and all(ld.buffer.type.element_type in tile.HALF_TYPES for ld in loads)


def _gathered(red: loop.ForOp, i: SSAValue, j: SSAValue) -> bool:
    """An implicit GEMM's K loop: a half product whose operand along j is no plain slab (a
    conv's window, `_after_k` fails) while the other reads each coordinate from i or K alone
    (the weight [O, C, kh, kw] at o and K's digits) — tile-tensor-core's gathered B. Not a
    grouped conv's weight at `g * c + o` (no tensor cores there: its loops stay as they were)."""
    if not _half_product(red) or _after_k(red, j, j):
        return False
    for ld in (o for o in red.body.walk() if isinstance(o, loop.LoadOp)):
        dims = [{ld.indices[d] for d in e.used_dims()} for e in ld.access_map().results]
        if any(i in u for u in dims) and all(len(u) <= 1 and u <= {i, red.iv} for u in dims):
            return True
    return False


def _after_k(red: loop.ForOp, iv: SSAValue, j: SSAValue) -> bool:
    """Whether every load along j reads `iv` only in dims after those K reads: folded into j
    there, loop-collapse-dims makes the pair one plain dim, and the operand stays a plain
    [.., K, j] slab for fragment loads (an image index folded in, `j floordiv (H * W)` before
    K's dim, would not: the model, H100, fp16 1x1 conv [8, 256, 56, 56] to 64 channels on
    FMAs, 29.6 us; with H, W alone folded, on tensor cores)."""
    for ld in (o for o in red.body.walk() if isinstance(o, loop.LoadOp)):
        dims = [{ld.indices[d] for d in e.used_dims()} for e in ld.access_map().results]
        if not any(j in used for used in dims):
            continue
        last_k = max((p for p, used in enumerate(dims) if red.iv in used), default=-1)
        if any(iv in used and p <= last_k for p, used in enumerate(dims)):
            return False
    return True


def _plain(f: loop.ForOp) -> bool:
    return f.lb.data == 0 and f.step.data == 1


def _fold(nest: list[loop.ForOp]) -> None:
    """One loop over the product of a perfect free nest's extents, in the outermost's place:
    each old index is the new one's digit in their mixed radix, (J floordiv stride) mod extent,
    in every access, and computed so (arith) where an iv is used as a value (an implicit
    GEMM's padding mask compares its row and column)."""
    extents = [f.ub.data for f in nest]
    outer = nest[0]
    subst = {}
    for k, f in enumerate(nest):
        stride = math.prod(extents[k + 1:])
        e = AffineExpr.dimension(0)
        e = e // stride if stride > 1 else e
        subst[f.iv] = ([outer.iv], e % extents[k] if k else e)
    accesses = {u.operation for f in nest for u in f.iv.uses if index_use(u)}
    values = {k: [u for u in f.iv.uses if not index_use(u)] for k, f in enumerate(nest)}
    outer.ub = IntAttr(math.prod(extents))
    outer.iv.name_hint = "_".join(f.iv.name_hint or "i" for f in nest)
    body = [o for f in nest[1:] for o in f.body.block.ops  # (scalar code between loops too)
            if not isinstance(o, loop.YieldOp) and o not in nest]
    for o in body:
        o.detach()
    nest[1].detach()
    Rewriter.insert_op(body, InsertPoint.at_start(outer.body.block))
    nest[1].erase(safe_erase=False)
    # an iv used as a value (an implicit GEMM's padding mask): its digit, computed
    digits = []
    for k, uses in values.items():
        if not uses:
            continue
        stride = math.prod(extents[k + 1:])
        v = outer.iv
        if stride > 1:
            c = arith.ConstantOp(IntegerAttr(stride, IndexType()))
            v = arith.FloorDivSIOp(v, c.result)
            digits += [c, v]
            v = v.result
        if k:
            c = arith.ConstantOp(IntegerAttr(extents[k], IndexType()))
            v = arith.RemSIOp(v, c.result)
            digits += [c, v]
            v = v.result
        for u in uses:
            u.operation.operands[u.index] = v
    if digits:
        Rewriter.insert_op(digits, InsertPoint.at_start(outer.body.block))
    for acc in accesses:
        indices, amap = substitute_access(list(acc.indices), acc.access_map(), subst, {})
        loop.reaccess(acc, indices, amap)


def _group_size(f: loop.ForOp) -> int | None:
    """C where some access reads `iv floordiv C` of this loop's iv, C dividing its extent (a
    grouped conv's input channel block, `o floordiv (O / groups)`)."""
    for u in f.iv.uses:
        acc = u.operation
        if not isinstance(acc, loop.LoadOp):
            continue
        pos = [k for k, v in enumerate(acc.indices) if v is f.iv]
        for x in (x for e in acc.access_map().results for x in e.dfs()):
            if by_constant(x, AffineBinaryOpKind.FloorDiv) and isinstance(x.lhs, AffineDimExpr) \
                    and x.lhs.position in pos \
                    and 1 < x.rhs.value < f.extent and f.extent % x.rhs.value == 0:
                return x.rhs.value
    return None


def _split_groups(f: loop.ForOp, c: int) -> None:
    """The loop over g * c + o as a loop over groups g (f itself) around one over o: in every
    access `iv floordiv c` reads g, `iv mod c` reads o, and iv elsewhere g * c + o."""
    inner = loop.ForOp(0, c, loop.LoopKind.FREE)
    inner.iv.name_hint = f"{f.iv.name_hint or 'i'}_in"
    accesses = {u.operation for u in f.iv.uses}
    body = [o for o in f.body.block.ops if not isinstance(o, loop.YieldOp)]
    for o in body:
        o.detach()
    inner.body.block.add_ops([*body, loop.YieldOp()])
    Rewriter.insert_op(inner, InsertPoint.at_start(f.body.block))
    f.ub = IntAttr(f.extent // c)
    f.iv.name_hint = f"{f.iv.name_hint or 'i'}_group"
    for acc in accesses:
        indices = list(acc.indices) + [inner.iv]
        g = [k for k, v in enumerate(indices) if v is f.iv]
        o = AffineExpr.dimension(len(indices) - 1)

        def sub(e: AffineExpr) -> AffineExpr:
            if isinstance(e, AffineDimExpr) and e.position in g:
                return e * c + o
            if isinstance(e, AffineBinaryOpExpr):
                if isinstance(e.lhs, AffineDimExpr) and e.lhs.position in g:
                    if by_constant(e, AffineBinaryOpKind.FloorDiv, c):
                        return e.lhs
                    if by_constant(e, AffineBinaryOpKind.Mod, c):
                        return o
                return AffineBinaryOpExpr(e.kind, sub(e.lhs), sub(e.rhs))
            return e

        m = acc.access_map()
        loop.reaccess(acc, indices, AffineMap(len(indices), 0, tuple(sub(e) for e in m.results)))


def _grouped(kernel: loop.KernelOp) -> bool:
    """Split a free loop read in groups (a grouped conv's output channels) of a contraction
    (two loads or more in its K loop) no order of the loops as they are makes a product; True
    if one was split."""
    found = _contraction(kernel)
    if found is None or sum(isinstance(o, loop.LoadOp) for o in found[1].body.walk()) < 2:
        return False
    for f in found[0]:
        if _plain(f) and index_only(f.iv) and (c := _group_size(f)) is not None:
            _split_groups(f, c)
            return True
    return False


def _flash_order(kernel: loop.KernelOp) -> list[int] | None:
    """A flash row (a `loop.private` output row beside the key loop) whose outer nest has a
    loop the keys' loads do not read (a query row) outside one they do (a head): the query
    loops innermost, where the attention planner takes the rows it blocks and shares K and V
    between (attention written through a transpose, ViT's `.transpose(1, 2).reshape`, came in
    (batch, query, head) order: the model, [4, 6, 197, 64], 143 -> 18 us)."""
    nest = outer_free_nest(kernel)
    body = list(nest[-1].body.block.ops) if nest else []
    keys = [o for o in body if isinstance(o, loop.ForOp) and o.kind.data == loop.LoopKind.REDUCE]
    if len(keys) != 1 or not any(isinstance(o, loop.PrivateOp) for o in body):
        return None
    ivs = [f.iv for f in nest]
    # K's and V's loads: by key, inside the loops over the head dim (q.k's, P.V's); a mask's
    # load in the key loop itself reads the query rows too
    reads = [r for ld, r in zip((o for o in keys[0].body.walk() if isinstance(o, loop.LoadOp)),
                                _reads(keys[0], ivs))
             if ld.parent_op() is not keys[0]
             and keys[0].iv in {ld.indices[d] for d in ld.access_map().used_dims()}]
    kv = set().union(*reads) if reads else set()
    order = [k for k in range(len(nest)) if ivs[k] in kv] \
        + [k for k in range(len(nest)) if ivs[k] not in kv]
    return None if not kv or order == list(range(len(nest))) else order


@dataclass(frozen=True)
class LoopOrderContractionsPass(ModulePass):
    """Move a contraction's free loops so its innermost pair is a matmul's (conv2d), and a
    flash row's query loops innermost."""

    name = "loop-order-contractions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if not isinstance(kernel, loop.KernelOp):
                continue
            if (flash := _flash_order(kernel)) is not None:
                permute_free_nest(outer_free_nest(kernel), flash)
                continue
            found = _order(kernel)
            if found is None and _grouped(kernel):
                found = _order(kernel)
            if found is not None:
                order, fold = found
                permute_free_nest(outer_free_nest(kernel), order)
                if fold > 1:
                    _fold(outer_free_nest(kernel)[-fold:])
