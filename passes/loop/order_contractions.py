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

Qualifies: a kernel that is a perfect nest of free loops around one reduce loop (with no loop
inside it) and its epilogue, whose innermost pair (i, j) is not a product already.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from deplo.analysis.index import dims_used
from deplo.dialects import loop
from deplo.passes.loop.fusion_rules import outer_free_nest, permute_free_nest


def _reads(red: loop.ForOp, ivs: list[SSAValue]) -> list[set[SSAValue]]:
    """Per load in the reduce loop, the free loops' ivs its coordinates use."""
    out = []
    for ld in red.body.walk():
        if isinstance(ld, loop.LoadOp):
            used = {ld.indices[d] for e in ld.access_map().results for d in dims_used(e)}
            out.append({v for v in ivs if v in used})
    return out


def _product(reads: list[set[SSAValue]], i: SSAValue, j: SSAValue) -> bool:
    """(i, j) is a matmul's pair: no load along both, one along i only, one along j only."""
    return not any(i in r and j in r for r in reads) and any(i in r for r in reads) \
        and any(j in r for r in reads)


def _order(kernel: loop.KernelOp) -> list[int] | None:
    nest = outer_free_nest(kernel)
    if len(nest) < 2:
        return None
    inner = [o for o in nest[-1].body.block.ops if isinstance(o, loop.ForOp)]
    if len(inner) != 1 or inner[0].kind.data != loop.LoopKind.REDUCE \
            or any(isinstance(o, loop.ForOp) for o in inner[0].body.walk() if o is not inner[0]):
        return None
    ivs = [f.iv for f in nest]
    reads = _reads(inner[0], ivs)
    j = len(nest) - 1
    if _product(reads, ivs[j - 1], ivs[j]):
        return None
    i = next((k for k in range(j - 2, -1, -1) if _product(reads, ivs[k], ivs[j])), None)
    if i is None:
        return None
    rest = [k for k in range(j) if k != i]
    return [*rest, i, j]


@dataclass(frozen=True)
class LoopOrderContractionsPass(ModulePass):
    """Move a contraction's free loops so its innermost pair is a matmul's (conv2d)."""

    name = "loop-order-contractions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, loop.KernelOp) and (order := _order(kernel)) is not None:
                permute_free_nest(outer_free_nest(kernel), order)
