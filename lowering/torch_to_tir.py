"""torch-to-tir: decompose every torch op into elementwise / reduce / index_map / full.

    torch.add %x, %b (16x64, 64)     ->  index_map %b (d0, d1) -> (d1) ; elementwise add
    torch.matmul %a, %w (16x64, 64x16) -> index_map %a (d0, d1, d2) -> (d0, d2)
                                          index_map %w (d0, d1, d2) -> (d2, d1)
                                          elementwise mul ; reduce add [2]
    torch.rms_norm %x, %w            ->  mul x x ; reduce add ; div n ; add eps ; rsqrt ;
                                          index_map (broadcast) ; mul ; mul by index_map'd w
    torch.relu %x                    ->  elementwise max(x, full 0)

The product of a matmul is written as a whole tensor here but never materialized later:
`loop-fuse` inlines it into the reduction. Every value keeps the torch op's name as its hint so
later levels name kernels after what they compute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from deplo.dialects import tir
from deplo.lowering.legality import check_converted

EK = tir.ElementwiseKind

BINARY_KIND = {"add": EK.ADD, "sub": EK.SUB, "mul": EK.MUL, "div": EK.DIV,
               "maximum": EK.MAX, "minimum": EK.MIN}
UNARY_KIND = {"neg": EK.NEG, "exp": EK.EXP, "rsqrt": EK.RSQRT, "sqrt": EK.SQRT,
              "tanh": EK.TANH, "sigmoid": EK.SIGMOID, "silu": EK.SILU}


class TirBuilder:
    """Collects the tir ops of one decomposition, all hinted with the torch op's name."""

    def __init__(self, hint: str | None):
        self.ops: list[Operation] = []
        self.hint = hint

    def _add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        if self.hint:
            op.results[0].name_hint = self.hint
        return op.results[0]

    def ew(self, kind: EK, *xs: SSAValue) -> SSAValue:
        return self._add(tir.ElementwiseOp(kind, xs))

    def full(self, value: float, like: TensorType, shape: Sequence[int] | None = None) -> SSAValue:
        shape = like.get_shape() if shape is None else shape
        return self._add(tir.FullOp(value, TensorType(like.element_type, list(shape))))

    def index_map(self, x: SSAValue, amap: AffineMap, shape: Sequence[int]) -> SSAValue:
        elt = x.type.element_type
        return self._add(tir.IndexMapOp(x, amap, TensorType(elt, list(shape))))

    def reduce(self, kind: tir.ReduceKind, x: SSAValue, dims: Sequence[int]) -> SSAValue:
        shape = [n for i, n in enumerate(x.type.get_shape()) if i not in dims]
        return self._add(tir.ReduceOp(kind, x, dims, TensorType(x.type.element_type, shape)))

    def broadcast(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """x broadcast to `shape` the way PyTorch aligns trailing dims; x itself if it fits."""
        src = tuple(x.type.get_shape())
        if src == tuple(shape):
            return x
        n, m = len(shape), len(src)
        exprs = [
            AffineExpr.constant(0) if size == 1 and shape[i + n - m] != 1 else AffineExpr.dimension(i + n - m)
            for i, size in enumerate(src)
        ]
        return self.index_map(x, AffineMap(n, 0, tuple(exprs)), shape)


def matmul(b: TirBuilder, a: SSAValue, w: SSAValue, out_shape: Sequence[int]) -> SSAValue:
    """torch.matmul as a broadcast product over (batch..., M, N, K) and a sum over K."""
    sa, sw = list(a.type.get_shape()), list(w.type.get_shape())
    a2 = [1, *sa] if len(sa) == 1 else sa
    w2 = [*sw, 1] if len(sw) == 1 else sw
    batch = list(np.broadcast_shapes(tuple(a2[:-2]), tuple(w2[:-2])))
    nb = len(batch)
    M, K, N = a2[-2], a2[-1], w2[-1]
    space = [*batch, M, N, K]
    rank = len(space)
    d = AffineExpr.dimension

    def operand_map(shape: list[int], rows: AffineExpr, cols: AffineExpr, original_rank: int):
        lead = len(shape) - 2
        exprs = [
            AffineExpr.constant(0) if shape[i] == 1 and batch[i + nb - lead] != 1 else d(i + nb - lead)
            for i in range(lead)
        ]
        exprs += [rows, cols]
        if original_rank == 1:  # the promoted unit dim is not a real coordinate
            exprs = exprs[1:] if rows == AffineExpr.constant(0) else exprs[:-1]
        return AffineMap(rank, 0, tuple(exprs))

    zero = AffineExpr.constant(0)
    am = operand_map(a2, zero if len(sa) == 1 else d(nb), d(nb + 2), len(sa))
    wm = operand_map(w2, d(nb + 2), zero if len(sw) == 1 else d(nb + 1), len(sw))
    pa = b.index_map(a, am, space)
    pw = b.index_map(w, wm, space)
    prod = b.ew(EK.MUL, pa, pw)
    r = b.reduce(tir.ReduceKind.ADD, prod, [rank - 1])
    if list(r.type.get_shape()) == list(out_shape):
        return r
    # squeeze the unit dims that 1-D operands introduced
    full = [*batch, M, N]
    keep = [i for i in range(len(full))]
    if len(sa) == 1:
        keep.remove(nb)
    if len(sw) == 1:
        keep.remove(nb + 1)
    exprs = []
    j = 0
    for i in range(len(full)):
        if i in keep:
            exprs.append(d(j))
            j += 1
        else:
            exprs.append(zero)
    return b.index_map(r, AffineMap(len(out_shape), 0, tuple(exprs)), out_shape)


def rms_norm(b: TirBuilder, x: SSAValue, w: SSAValue | None, nd: int, eps: float | None) -> SSAValue:
    """x * rsqrt(mean(x^2 over the last nd dims) + eps) * w, as torch.rms_norm computes it."""
    t: TensorType = x.type
    shape = list(t.get_shape())
    rank = len(shape)
    outer = shape[: rank - nd]
    if eps is None:  # torch uses float32's epsilon for f16/bf16 inputs too (computes in f32)
        eps = float(np.finfo(np.float64 if str(t.element_type) == "f64" else np.float32).eps)
    sq = b.ew(EK.MUL, x, x)
    s = b.reduce(tir.ReduceKind.ADD, sq, list(range(rank - nd, rank)))
    count = math.prod(shape[rank - nd :])
    mean = b.ew(EK.DIV, s, b.full(float(count), t, outer))
    inv = b.ew(EK.RSQRT, b.ew(EK.ADD, mean, b.full(eps, t, outer)))
    bmap = AffineMap(rank, 0, tuple(AffineExpr.dimension(i) for i in range(rank - nd)))
    y = b.ew(EK.MUL, x, b.index_map(inv, bmap, shape))
    if w is None:
        return y
    wmap = AffineMap(rank, 0, tuple(AffineExpr.dimension(i) for i in range(rank - nd, rank)))
    return b.ew(EK.MUL, y, b.index_map(w, wmap, shape))


# ---------------------------------------------------------------------------------------------


Decomposition = Callable[[TirBuilder, Operation, TensorType], SSAValue]


def _binary(kind: EK) -> Decomposition:
    def go(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
        shape = rt.get_shape()
        return b.ew(kind, b.broadcast(op.lhs, shape), b.broadcast(op.rhs, shape))

    return go


def _unary(kind: EK) -> Decomposition:
    return lambda b, op, rt: b.ew(kind, op.input)


def _rms_norm(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    eps = op.eps.value.data if op.eps is not None else None
    return rms_norm(b, op.input, op.weight, len(op.normalized_shape.get_values()), eps)


# torch op name (without "torch.") -> its decomposition. One row per op.
DECOMPOSITIONS: dict[str, Decomposition] = {
    **{name: _binary(kind) for name, kind in BINARY_KIND.items()},
    **{name: _unary(kind) for name, kind in UNARY_KIND.items()},
    "relu": lambda b, op, rt: b.ew(EK.MAX, op.input, b.full(0.0, rt)),
    "constant": lambda b, op, rt: b.full(op.value.value.data, rt),
    "matmul": lambda b, op, rt: matmul(b, op.lhs, op.rhs, rt.get_shape()),
    "rms_norm": _rms_norm,
}


class DecomposeTorchOp(RewritePattern):
    """Every torch op -> its tir decomposition (one pattern: the table picks the recipe)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not op.name.startswith("torch."):
            return
        decompose = DECOMPOSITIONS.get(op.name.removeprefix("torch."))
        if decompose is None:
            return  # left over: check_converted names it
        b = TirBuilder(op.results[0].name_hint if op.results else None)
        r = decompose(b, op, op.results[0].type)
        rewriter.replace(op, b.ops, [r])


@dataclass(frozen=True)
class TorchToTirPass(ModulePass):
    """Decompose Torch IR into Tensor IR (elementwise, reduce, index_map, full)."""

    name = "torch-to-tir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([DecomposeTorchOp()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        check_converted(op, "torch", self.name)
