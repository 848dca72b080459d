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
from xdsl.dialects.builtin import Float32Type, IntegerType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from deplo import origin
from deplo.analysis.index import MATMUL_MIN_K, MATMUL_MIN_OUTPUTS
from deplo.dialects import tir
from deplo.dialects import torch as T
from deplo.lowering.legality import check_converted

EK = tir.ElementwiseKind

BINARY_KIND = {"add": EK.ADD, "sub": EK.SUB, "mul": EK.MUL, "div": EK.DIV,
               "maximum": EK.MAX, "minimum": EK.MIN, "fmod": EK.FMOD,
               "atan2": EK.ATAN2}
# a unary torch op named as a tir kind is that kind (relu and reciprocal decompose below)
UNARY_KIND = {name: EK(name) for name in T.UNARY_OPS if name in {k.value for k in EK}}
COMPARE_KIND = {k.value: k for k in tir.CompareKind}  # torch.eq ... torch.ge
_BOOL_KIND = {EK.ADD: EK.OR, EK.MUL: EK.AND}


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
        # bools as aten computes them: a sum (scatter_add, index_put's accumulate) is an or, a
        # product an and, the sign the value itself
        if tir.is_i1(xs[0].type.element_type):
            if kind == EK.SIGN:
                return xs[0]
            kind = _BOOL_KIND.get(kind, kind)
        return self._add(tir.ElementwiseOp(kind, xs))

    def compare(self, kind: tir.CompareKind, x: SSAValue, y: SSAValue) -> SSAValue:
        return self._add(tir.CompareOp(kind, x, y))

    def select(self, c: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        return self._add(tir.SelectOp(c, x, y))

    def cast(self, x: SSAValue, elt: Attribute) -> SSAValue:
        return self._add(tir.CastOp(x, TensorType(elt, x.type.get_shape())))

    def full(self, value: float, like: TensorType, shape: Sequence[int] | None = None) -> SSAValue:
        shape = like.get_shape() if shape is None else shape
        return self._add(tir.FullOp(value, TensorType(like.element_type, list(shape))))

    def index_map(self, x: SSAValue, amap: AffineMap, shape: Sequence[int]) -> SSAValue:
        elt = x.type.element_type
        return self._add(tir.IndexMapOp(x, amap, TensorType(elt, list(shape))))

    def reduce(self, kind: tir.ReduceKind, x: SSAValue, dims: Sequence[int]) -> SSAValue:
        shape = [n for i, n in enumerate(x.type.get_shape()) if i not in dims]
        elt = IntegerType(64) if kind in tir.ARG_KINDS else x.type.element_type
        return self._add(tir.ReduceOp(kind, x, dims, TensorType(elt, shape)))

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
    """torch.matmul as a broadcast product over (batch..., M, N, K) and a sum over K; f16/bf16
    operands are multiplied and summed in float32, rounded once (as torch does)."""
    like = a.type
    a, w = _opmath(b, a), _opmath(b, w)
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
    r = _back(b, b.reduce(tir.ReduceKind.ADD, prod, [rank - 1]), like)
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
    """f16/bf16 as aten: normalized in float32, rounded, then times the weight."""
    eps = op.eps.value.data if op.eps is not None else None
    nd = len(op.normalized_shape.get_values())
    x = op.input
    xf = _opmath(b, x)
    if xf is x:
        return rms_norm(b, x, op.weight, nd, eps)
    y = _back(b, rms_norm(b, xf, None, nd, eps), x.type)
    return y if op.weight is None else b.ew(EK.MUL, y, b.broadcast(op.weight, rt.get_shape()))


def _opmath(b: TirBuilder, x: SSAValue) -> SSAValue:
    """x as float32 when it is f16/bf16 (what torch computes softmax and norms in), else x."""
    if str(x.type.element_type) in ("f16", "bf16"):
        return b.cast(x, Float32Type())
    return x


def _back(b: TirBuilder, y: SSAValue, like: TensorType) -> SSAValue:
    return b.cast(y, like.element_type) if y.type.element_type != like.element_type else y


def _keep_map(rank: int, dims: Sequence[int]) -> AffineMap:
    """(d0, ..., d{rank-1}) -> the dims not in `dims`: broadcasts a reduction back over them."""
    kept = [AffineExpr.dimension(i) for i in range(rank) if i not in dims]
    return AffineMap(rank, 0, tuple(kept))


def reduction(b: TirBuilder, kind: tir.ReduceKind, x: SSAValue, dims: Sequence[int],
              keepdim: bool, mean: bool = False) -> SSAValue:
    """sum / amax / amin / mean / argmax / argmin over `dims`; keepdim re-inserts them as
    size-1 dims (an index_map). f16/bf16 sums and means accumulate in float32, rounded once
    (as torch does)."""
    shape = list(x.type.get_shape())
    dims = [d for d in dims if d < len(shape)]  # dim 0 of a 0-d tensor is the tensor
    if not dims:
        return x
    like = x.type
    if kind in (tir.ReduceKind.ADD, tir.ReduceKind.MUL):
        x = _opmath(b, x)
    r = b.reduce(kind, x, dims)
    if mean:
        count = math.prod(shape[d] for d in dims)
        r = b.ew(EK.DIV, r, b.full(float(count), r.type))
    if kind not in tir.ARG_KINDS:
        r = _back(b, r, like)
    if not keepdim:
        return r
    kept = [1 if i in dims else n for i, n in enumerate(shape)]
    exprs = [AffineExpr.dimension(i) for i in range(len(shape)) if i not in dims]
    return b.index_map(r, AffineMap(len(shape), 0, tuple(exprs)), kept)


def linear(b: TirBuilder, x: SSAValue, w: SSAValue, bias: SSAValue | None,
           out_shape: Sequence[int]) -> SSAValue:
    """x @ wᵀ + bias as a product over (lead..., N, K) and a sum over K: w is read transposed
    by its index_map, never copied. f16/bf16: products, sum and bias add in float32, one
    rounding at the end (as torch does)."""
    like = x.type
    x, w = _opmath(b, x), _opmath(b, w)
    bias = None if bias is None else _opmath(b, bias)
    sx = list(x.type.get_shape())
    n, k = w.type.get_shape()
    space = [*sx[:-1], n, k]
    rank = len(space)
    d = AffineExpr.dimension
    xm = AffineMap(rank, 0, (*(d(i) for i in range(rank - 2)), d(rank - 1)))
    wm = AffineMap(rank, 0, (d(rank - 2), d(rank - 1)))
    prod = b.ew(EK.MUL, b.index_map(x, xm, space), b.index_map(w, wm, space))
    y = b.reduce(tir.ReduceKind.ADD, prod, [rank - 1])
    if bias is not None:
        y = b.ew(EK.ADD, y, b.broadcast(bias, out_shape))
    return _back(b, y, like)


def softmax(b: TirBuilder, x: SSAValue, dim: int, safe: bool = False) -> SSAValue:
    """exp(x - max) / sum(exp(x - max)) along `dim`, in float32 for f16/bf16 (one rounding).

    `safe` (attention's): a row of -inf only is 0, not NaN, as PyTorch's SDPA gives a row its
    mask hides whole. The max is clamped to the lowest finite float and the sum to at least 1;
    any other row's max element adds exp(0) = 1, so neither changes its values (and the clamped
    max is what loop-online-softmax's running max, started at the lowest float, computes)."""
    t: TensorType = x.type
    shape = list(t.get_shape())
    if not shape:
        return b.full(1.0, t)
    xf = _opmath(b, x)
    back = _keep_map(len(shape), [dim])
    m = b.reduce(tir.ReduceKind.MAX, xf, [dim])
    if safe:
        m = b.ew(EK.MAX, m, b.full(LOWEST[str(m.type.element_type)], m.type))
    e = b.ew(EK.EXP, b.ew(EK.SUB, xf, b.index_map(m, back, shape)))
    s = b.reduce(tir.ReduceKind.ADD, e, [dim])
    if safe:
        s = b.ew(EK.MAX, s, b.full(1.0, s.type))
    return _back(b, b.ew(EK.DIV, e, b.index_map(s, back, shape)), t)


def layer_norm(b: TirBuilder, x: SSAValue, w: SSAValue | None, bias: SSAValue | None, nd: int,
               eps: float) -> SSAValue:
    """(x - mean) * rsqrt(var + eps) * w + bias over the last nd dims (biased variance), in
    float32 for f16/bf16 (one rounding), as aten.layer_norm."""
    t: TensorType = x.type
    shape = list(t.get_shape())
    rank = len(shape)
    dims = list(range(rank - nd, rank))
    xf = _opmath(b, x)
    back = _keep_map(rank, dims)
    if math.prod(shape[rank - nd:]):
        # deviations from the row's first element: a float32 mean rounds a large common offset
        # (1e4 + noise: half an ulp of 1e4 is 5e-4 of every output), their mean is exact enough
        first = AffineMap(rank, 0, tuple(AffineExpr.constant(0) if i in dims
                                         else AffineExpr.dimension(i) for i in range(rank)))
        xf = b.ew(EK.SUB, xf, b.index_map(xf, first, shape))
    mean = reduction(b, tir.ReduceKind.ADD, xf, dims, keepdim=False, mean=True)
    xc = b.ew(EK.SUB, xf, b.index_map(mean, back, shape))
    var = reduction(b, tir.ReduceKind.ADD, b.ew(EK.MUL, xc, xc), dims, keepdim=False, mean=True)
    rstd = b.ew(EK.RSQRT, b.ew(EK.ADD, var, b.full(eps, var.type)))
    y = b.ew(EK.MUL, xc, b.index_map(rstd, back, shape))
    affine = AffineMap(rank, 0, tuple(AffineExpr.dimension(i) for i in dims))
    for kind, v in ((EK.MUL, w), (EK.ADD, bias)):
        if v is not None:
            y = b.ew(kind, y, b.index_map(_opmath(b, v), affine, shape))
    return _back(b, y, t)


def gelu(b: TirBuilder, x: SSAValue, approximate: str) -> SSAValue:
    """x * 0.5 * (1 + erf(x / sqrt(2))), or 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    for approximate="tanh" (aten's formulas)."""
    # f16/bf16 in float32, rounded once (1 + a half erf(x) cancels to 0 below -3.8)
    like, x = x.type, _opmath(b, x)
    t: TensorType = x.type
    one = b.full(1.0, t)
    half = b.full(0.5, t)
    if approximate == "tanh":
        cube = b.ew(EK.MUL, b.ew(EK.MUL, x, x), x)
        inner = b.ew(EK.ADD, x, b.ew(EK.MUL, b.full(0.044715, t), cube))
        th = b.ew(EK.TANH, b.ew(EK.MUL, b.full(math.sqrt(2 / math.pi), t), inner))
        return _back(b, b.ew(EK.MUL, b.ew(EK.MUL, half, x), b.ew(EK.ADD, one, th)), like)
    cdf = b.ew(EK.ADD, one, b.ew(EK.ERF, b.ew(EK.MUL, x, b.full(1 / math.sqrt(2), t))))
    return _back(b, b.ew(EK.MUL, b.ew(EK.MUL, x, half), cdf), like)


def constant_value(v: SSAValue) -> float | None:
    """The value of a 0-d constant operand (a torch.constant, or the tir.full it became)."""
    op = v.owner
    if isinstance(op, tir.FullOp) and not op.result.type.get_shape():
        return float(op.value.value.data)
    if isinstance(op, Operation) and op.name == "torch.constant":
        return float(op.value.value.data)  # type: ignore[attr-defined]
    return None


def _pow(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    """The exponents aten computes without pow, as it does: x ** 2 is x * x; a float x to 3,
    -1, -2 is x * x * x, 1 / x, 1 / (x * x) (0.5 and -0.5 are sqrt and rsqrt at import, where
    the dtype that decides it is known: frontend/aten.py `_pow_scalar`); an integer tensor to
    a constant whole power is square-and-multiply (wrapping as aten's); any other exponent is
    `pow`."""
    shape = rt.get_shape()
    x = b.broadcast(op.lhs, shape)
    n = constant_value(op.rhs)
    if n == 2.0:
        return b.ew(EK.MUL, x, x)
    if isinstance(rt.element_type, IntegerType):
        if n is not None and n >= 0 and n == int(n):
            return _whole_power(b, x, int(n), rt)
    elif n in (3.0, -1.0, -2.0):
        square = b.ew(EK.MUL, x, x) if n != -1.0 else None
        return {3.0: lambda: b.ew(EK.MUL, square, x),
                -1.0: lambda: b.ew(EK.DIV, b.full(1.0, rt), x),
                -2.0: lambda: b.ew(EK.DIV, b.full(1.0, rt), square)}[n]()
    return b.ew(EK.POW, x, b.broadcast(op.rhs, shape))


def _whole_power(b: TirBuilder, x: SSAValue, n: int, rt: TensorType) -> SSAValue:
    """x ** n by the bits of n: log2(n) squarings and one multiply per set bit."""
    result = None
    while n:
        if n & 1:
            result = x if result is None else b.ew(EK.MUL, result, x)
        n >>= 1
        if n:
            x = b.ew(EK.MUL, x, x)
    return b.full(1, rt) if result is None else result


def _compare(kind: tir.CompareKind) -> Decomposition:
    def go(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
        shape = rt.get_shape()
        return b.compare(kind, b.broadcast(op.lhs, shape), b.broadcast(op.rhs, shape))

    return go


def _reduction(kind: tir.ReduceKind, mean: bool = False) -> Decomposition:
    def go(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
        dims = list(op.dim.get_values())
        return reduction(b, kind, op.input, dims, op.keepdim is not None, mean)

    return go


def _arg_reduction(kind: tir.ReduceKind) -> Decomposition:
    def go(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
        if not op.input.type.get_shape():  # the index of a 0-d tensor's only element
            return b.full(0, rt)
        return reduction(b, kind, op.input, [op.dim.value.data % len(op.input.type.get_shape())],
                         op.keepdim is not None)

    return go


def _scan(kind: tir.ReduceKind) -> Decomposition:
    """cumsum / cumprod / cummax / cummin: f16/bf16 accumulate in float32, each prefix rounded
    once (as aten)."""

    def go(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
        if not rt.get_shape():
            return op.input
        x = _opmath(b, op.input)
        return _back(b, b._add(tir.ScanOp(kind, x, op.dim.value.data % rt.get_num_dims())), rt)

    return go


def _layer_norm(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    nd = len(op.normalized_shape.get_values())
    return layer_norm(b, op.input, op.weight, op.bias, nd, op.eps.value.data)


def _where(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    shape = rt.get_shape()
    c, x, y = (b.broadcast(v, shape) for v in (op.condition, op.lhs, op.rhs))
    return b.select(c, x, y)


def _to(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    x = op.input
    return x if x.type == rt else b.cast(x, rt.element_type)


MATH_DECOMPOSITIONS: dict[str, Decomposition] = {
    "pow": _pow,
    "reciprocal": lambda b, op, rt: b.ew(EK.DIV, b.full(1.0, rt), op.input),
    **{name: _compare(kind) for name, kind in COMPARE_KIND.items()},
    "logical_and": _binary(EK.AND),
    "logical_or": _binary(EK.OR),
    "bitwise_and": _binary(EK.AND),
    "bitwise_or": _binary(EK.OR),
    "bitwise_xor": _binary(EK.XOR),
    "bitwise_left_shift": _binary(EK.SHL),
    "bitwise_right_shift": _binary(EK.SHR),
    "sum": _reduction(tir.ReduceKind.ADD),
    "mean": _reduction(tir.ReduceKind.ADD, mean=True),
    "amax": _reduction(tir.ReduceKind.MAX),
    "amin": _reduction(tir.ReduceKind.MIN),
    "prod": _reduction(tir.ReduceKind.MUL),
    "argmax": _arg_reduction(tir.ReduceKind.ARGMAX),
    "argmin": _arg_reduction(tir.ReduceKind.ARGMIN),
    "cumsum": _scan(tir.ReduceKind.ADD),
    "cumprod": _scan(tir.ReduceKind.MUL),
    "cummax": _scan(tir.ReduceKind.MAX),
    "cummin": _scan(tir.ReduceKind.MIN),
    "linear": lambda b, op, rt: linear(b, op.input, op.weight, op.bias, rt.get_shape()),
    "gelu": lambda b, op, rt: gelu(b, op.input, op.approximation),
    "softmax": lambda b, op, rt: softmax(
        b, op.input, op.dim.value.data % max(len(rt.get_shape()), 1)
    ),
    "layer_norm": _layer_norm,
    "to": _to,
    "where": _where,
}
"""Decompositions of the math ops (linear, gelu, reductions, softmax, layer_norm, dtype
conversion, comparisons, where); `DECOMPOSITIONS` includes them."""


# --- views, data movement, creation, attention ------------------------------------------------


def reshape_map(src: Sequence[int], dst: Sequence[int]) -> AffineMap:
    """The index_map of a row-major reshape src -> dst: output coordinates -> input coordinates.

    The shapes are cut into the smallest groups of dims with equal products (size-1 dims on
    their own), so only a group that really splits or merges dims pays a floordiv/mod: (2, 7, 64)
    -> (2, 7, 4, 16) is (d0, d1, d2 * 16 + d3), not a decomposition of the whole linear index."""
    d = AffineExpr.dimension
    exprs: list[AffineExpr] = [AffineExpr.constant(0)] * len(src)
    ins = [i for i, n in enumerate(src) if n != 1]
    outs = [j for j, n in enumerate(dst) if n != 1]
    i = j = 0
    while i < len(ins) and j < len(outs):
        gi, gj = [ins[i]], [outs[j]]
        pi, pj = src[ins[i]], dst[outs[j]]
        while pi != pj:
            if pi < pj:
                i += 1
                gi.append(ins[i])
                pi *= src[ins[i]]
            else:
                j += 1
                gj.append(outs[j])
                pj *= dst[outs[j]]
        i, j = i + 1, j + 1
        linear: AffineExpr = AffineExpr.constant(0)
        stride = 1
        for o in reversed(gj):
            linear = d(o) * stride + linear if stride != 1 else d(o) + linear
            stride *= dst[o]
        stride = 1
        for k, a in enumerate(reversed(gi)):
            e = linear if stride == 1 else linear // stride
            if k != len(gi) - 1:  # the first dim of a group needs no mod
                e = e % src[a]
            exprs[a] = e
            stride *= src[a]
    return AffineMap(len(dst), 0, tuple(exprs))


def _reshape(b: TirBuilder, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    src = tuple(x.type.get_shape())
    if 0 in shape:  # nothing to move
        return b.full(0, TensorType(x.type.element_type, list(shape)))
    return x if src == tuple(shape) else b.index_map(x, reshape_map(src, shape), shape)


def _permute(b: TirBuilder, x: SSAValue, dims: Sequence[int], shape: Sequence[int]) -> SSAValue:
    """y[o] = x[p] with p[dims[i]] = o[i]."""
    rank = len(dims)
    exprs = [AffineExpr.dimension(0)] * rank
    for i, k in enumerate(dims):
        exprs[k % rank] = AffineExpr.dimension(i)
    return b.index_map(x, AffineMap(rank, 0, tuple(exprs)), shape)


def _transpose(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    rank = rt.get_num_dims()
    dims = list(range(rank))
    a, c = op.dim0.value.data % rank, op.dim1.value.data % rank
    dims[a], dims[c] = dims[c], dims[a]
    return _permute(b, op.input, dims, rt.get_shape())


def _slice(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    x = op.input
    rank = rt.get_num_dims()
    dim, step = op.dim.value.data % rank, op.step.value.data
    start, _ = T.slice_range(x.type.get_shape()[dim], op.start.value.data, op.end.value.data, step)
    exprs = [AffineExpr.dimension(i) for i in range(rank)]
    exprs[dim] = exprs[dim] * step + start
    return b.index_map(x, AffineMap(rank, 0, tuple(exprs)), rt.get_shape())


def _select(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    x = op.input
    shape = x.type.get_shape()
    dim = op.dim.value.data % len(shape)
    index = op.index.value.data % shape[dim]
    exprs = [AffineExpr.dimension(i) for i in range(rt.get_num_dims())]
    exprs.insert(dim, AffineExpr.constant(index))
    return b.index_map(x, AffineMap(rt.get_num_dims(), 0, tuple(exprs)), rt.get_shape())


def gather(b: TirBuilder, x: SSAValue, dims: Sequence[int], indices: Sequence[SSAValue],
           rt: TensorType) -> SSAValue:
    """aten.index semantics as one tir.gather: index tensor k picks the coordinate of x's dim
    dims[k]; the broadcast index shape sits where `T.index_shape` puts it."""
    d = AffineExpr.dimension
    shape = x.type.get_shape()
    idx_shapes = [tuple(v.type.get_shape()) for v in indices]
    out, at = T.index_shape(shape, dims, idx_shapes)
    nb = len(out) - (len(shape) - len(dims))
    bshape = out[at : at + nb]
    exprs: list[AffineExpr] = []
    rest = 0
    for i in range(len(shape)):
        if i in dims:
            exprs.append(AffineExpr.symbol(list(dims).index(i)))
        else:
            exprs.append(d(rest if rest < at else rest + nb))
            rest += 1
    index_maps = []
    for s in idx_shapes:
        lead = nb - len(s)
        index_maps.append(AffineMap(len(out), 0, tuple(
            AffineExpr.constant(0) if n == 1 and bshape[lead + t] != 1 else d(at + lead + t)
            for t, n in enumerate(s)
        )))
    table_map = AffineMap(len(out), len(indices), tuple(exprs))
    return b._add(tir.GatherOp(x, table_map, indices, index_maps, rt))


def _from_the_end(b: TirBuilder, idx: SSAValue, n: int) -> SSAValue:
    """aten.index's index values as coordinates: a negative one counts from the end of its dim
    of `n` (x[-1] is x[n - 1]), which tir.gather does not (an embedding's ids never are)."""
    t = idx.type
    return b.select(b.compare(tir.CompareKind.LT, idx, b.full(0, t)), b.ew(EK.ADD, idx, b.full(n, t)),
                    idx)


def _iota(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    return b._add(tir.IotaOp(0, op.start.value.data, op.step.value.data, rt))


def _concat(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    return b._add(tir.ConcatOp(list(op.inputs), op.dim.value.data % rt.get_num_dims(), rt))


LOWEST = {"f32": float(np.finfo(np.float32).min), "f64": float(np.finfo(np.float64).min),
          "f16": float(np.finfo(np.float16).min), "bf16": -3.3895313892515355e38}
"""The most negative finite value of each float type: what a masked attention score becomes."""


def sdpa(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    """softmax(q kᵀ * scale, masked) v: two broadcast products reduced over their last axis, a
    max-subtracted softmax over S between them. Batch dims broadcast; GQA is a floordiv on the
    kv head coordinate. f16/bf16 operands are extended to float32: both contractions and the
    softmax accumulate in float32, rounded once at the end.

    A causally masked score is the lowest finite value of the dtype (as HF's masks do): after
    the max subtraction its exp is exactly 0, and a causal row always keeps its first key. A
    boolean mask's False is -inf, as PyTorch's, so that a row it hides whole is 0 (`softmax`'s
    `safe`) where an additive mask of finite lowest values gives the mean of V, as PyTorch
    does."""
    q, k, v = (_opmath(b, x) for x in (op.query, op.key, op.value))
    out = list(rt.get_shape())
    batch, n = out[:-2], len(out) - 2
    L, E, S, Ev = out[-2], q.type.get_shape()[-1], k.type.get_shape()[-2], out[-1]
    group = batch[-1] // k.type.get_shape()[-3] if op.enable_gqa is not None else 1
    d, zero = AffineExpr.dimension, AffineExpr.constant(0)

    def lead(x: SSAValue, kv: bool) -> list[AffineExpr]:
        """x's batch coordinates from the result's (broadcast from the right, GQA heads)."""
        s = x.type.get_shape()[:-2]
        exprs = [zero if m == 1 and batch[i + n - len(s)] != 1 else d(i + n - len(s))
                 for i, m in enumerate(s)]
        if kv and group > 1:
            exprs[-1] = d(n - 1) // group
        return exprs

    def read(x: SSAValue, kv: bool, coords, space) -> SSAValue:
        return b.index_map(x, AffineMap(n + 3, 0, (*lead(x, kv), *coords)), space)

    # scores[.., l, s] = sum_e q[.., l, e] * k[.., s, e]
    space = [*batch, L, S, E]
    qk = b.ew(EK.MUL, read(q, False, (d(n), d(n + 2)), space),
              read(k, True, (d(n + 1), d(n + 2)), space))
    scores = b.reduce(tir.ReduceKind.ADD, qk, [n + 2])
    sshape = [*batch, L, S]
    scale = op.scale.value.data if op.scale is not None else 1.0 / math.sqrt(E)
    scores = b.ew(EK.MUL, scores, b.full(scale, scores.type, sshape))

    def lowest() -> SSAValue:
        return b.full(LOWEST[str(scores.type.element_type)], scores.type, sshape)

    if op.is_causal is not None:  # keep key s <= query l
        pos = TensorType(IntegerType(64), [L, S])
        rows = b._add(tir.IotaOp(0, 0, 1, pos))
        cols = b._add(tir.IotaOp(1, 0, 1, pos))
        keep = b.broadcast(b.compare(tir.CompareKind.LE, cols, rows), sshape)
        scores = b.select(keep, scores, lowest())
    if op.attn_mask is not None:
        mask = b.broadcast(op.attn_mask, sshape)
        if str(mask.type.element_type) == "i1":  # PyTorch's: False is -inf
            scores = b.select(mask, scores, b.full(-math.inf, scores.type, sshape))
        else:
            scores = b.ew(EK.ADD, scores, _opmath(b, mask))
    p = softmax(b, scores, n + 1, safe=True)
    # out[.., l, ev] = sum_s p[.., l, s] * v[.., s, ev]
    space = [*batch, L, Ev, S]
    pv = b.ew(EK.MUL, read(p, False, (d(n), d(n + 2)), space),
              read(v, True, (d(n + 2), d(n + 1)), space))
    return _back(b, b.reduce(tir.ReduceKind.ADD, pv, [n + 2]), rt)


def _gather(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    """One tir.gather: the index, read at the result's coordinates, is coordinate `dim` of x."""
    rank = rt.get_num_dims()
    if rank == 0:  # a 0-d input at index 0
        return op.input
    d = op.dim.value.data % rank
    amap = AffineMap(rank, 1, tuple(AffineExpr.symbol(0) if i == d else AffineExpr.dimension(i)
                                    for i in range(rank)))
    return b._add(tir.GatherOp(op.input, amap, [op.index], [AffineMap.identity(rank)], rt))


def pad(b: TirBuilder, x: SSAValue, lo: Sequence[int], hi: Sequence[int], value: float):
    """x with its last len(lo) dims padded by `value` (concats with tir.full blocks)."""
    for i, (low, high) in enumerate(zip(lo, hi)):
        shape = list(x.type.get_shape())
        d = len(shape) - len(lo) + i
        parts = [b.full(value, x.type, [*shape[:d], n, *shape[d + 1:]]) if n else None
                 for n in (low, high)]
        if parts != [None, None]:
            shape[d] += low + high
            x = b._add(tir.ConcatOp([v for v in (parts[0], x, parts[1]) if v is not None], d,
                                    TensorType(x.type.element_type, shape)))
    return x


def window_coords(k: AffineExpr, sizes: Sequence[int]) -> list[AffineExpr]:
    """The coordinates (row-major) of flat offset k in a box of `sizes`; a size-1 dim's is the
    constant 0 (`k mod 1` would hide a 1x1 conv's plain [out, in] weight from the planner,
    which stages only plain coordinates)."""
    out = []
    for i, n in enumerate(sizes):
        inner = math.prod(sizes[i + 1:])
        e = k // inner if inner > 1 else k
        out.append(AffineExpr.constant(0) if i and n == 1 else e % n if i else e)
    return out


def conv(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    """im2col as index maps: the product over (N, O, *S', C/groups * prod(K)) of the padded
    input at (n, group(o) + c, s' * stride + k * dilation) and the weight at (o, c, k), summed
    over the one last axis — a matmul's shape, so it gets the matmul schedules. f16/bf16:
    products and sum in float32, one rounding; a window of more than one element (or a
    stride) reads a written im2col tensor (`_columns`), so the product is a plain one."""
    st, lo, hi, dil = op.window()
    out = list(rt.get_shape())
    O, cg, *kernel = op.weight.type.get_shape()
    groups, n = op.groups.value.data, len(kernel)
    space = [*out, cg * math.prod(kernel)]
    d = AffineExpr.dimension
    c, *ks = window_coords(d(len(out)), [cg, *kernel])
    w = _opmath(b, op.weight)
    if _tensor_core_window(op, out):
        cols = _columns(b, op.input, kernel, out[2:], st, lo, dil)
        xs = b.index_map(_opmath(b, cols), AffineMap(len(space), 0, (
            d(0), d(len(out)), *(d(2 + i) for i in range(n)))), space)
    else:  # padded in its own type (f16: half the bytes of a materialized pad), then widened
        x = _opmath(b, pad(b, op.input, lo, hi, 0.0))
        chan = c if groups == 1 else (d(1) // (O // groups)) * cg + c
        xm = (d(0), chan, *(d(2 + i) * st[i] + ks[i] * dil[i] for i in range(n)))
        xs = b.index_map(x, AffineMap(len(space), 0, xm), space)
    prod = b.ew(EK.MUL, xs, b.index_map(w, AffineMap(len(space), 0, (d(1), c, *ks)), space))
    y = b.reduce(tir.ReduceKind.ADD, prod, [len(out)])
    if op.bias is not None:
        bias = _opmath(b, op.bias)
        y = b.ew(EK.ADD, y, b.index_map(bias, AffineMap(len(out), 0, (d(1),)), out))
    return _back(b, y, rt)


def _tensor_core_window(op: Operation, out: Sequence[int]) -> bool:
    """An f16/bf16 conv of one group whose input the product would read through a window or a
    stride: a product over its im2col [K, columns], which tensor cores take (loop-fuse inlines
    the im2col, tile-tensor-core gathers B's chunks by index math: an implicit GEMM); read
    through the window as a conv, it ran on FMAs (the model, H100, [8, 64, 56, 56] by 64 x 3 x
    3: 65 us, 15x the roofline). A 1x1 conv of stride 1 reads its input plainly already."""
    st = op.window()[0]
    _, cg, *kernel = op.weight.type.get_shape()
    n, channels = op.input.type.get_shape()[:2]
    columns = n * channels * math.prod(kernel) * math.prod(out[2:]) * 2
    return str(op.input.type.element_type) in ("f16", "bf16") and op.groups.value.data == 1 \
        and (math.prod(kernel) > 1 or any(s != 1 for s in st)) \
        and cg * math.prod(kernel) >= MATMUL_MIN_K and math.prod(out) >= MATMUL_MIN_OUTPUTS \
        and columns <= COLUMNS_MAX_BYTES


COLUMNS_MAX_BYTES = 1 << 28  # an im2col past 256 MB (a 3x3 conv of [64, 256, 56, 56]: 925 MB)
# reads its input through the window instead: the cap from when the im2col was written out,
# kept where loop-fuse would leave it written (a second consumer, a plan that does not inline)


def _columns(b: TirBuilder, x: SSAValue, kernel: Sequence[int], spatial: Sequence[int],
             st, lo, dil) -> SSAValue:
    """The im2col tensor [N, C * prod(kernel), *spatial] of x [N, C, *in]: x at s * stride +
    k * dilation - pad, zero where that falls in the padding (a select on iota coordinates:
    read at a wrapped, always in-bounds index, as an inlined concat reads; no padded copy).
    Loop-fuse inlines it into the product's K loop, whose B tile-tensor-core then gathers by
    index math (`fusion_rules.im2col`: an implicit GEMM, no im2col tensor written)."""
    n, size = len(kernel), x.type.get_shape()[2:]
    shape = [x.type.get_shape()[0], x.type.get_shape()[1] * math.prod(kernel), *spatial]
    d = AffineExpr.dimension
    c, *ks = window_coords(d(1), [x.type.get_shape()[1], *kernel])
    padded = [lo[i] > 0 or (kernel[i] - 1) * dil[i] + (spatial[i] - 1) * st[i] - lo[i] >= size[i]
              for i in range(n)]
    at = [(ks[i] * dil[i] + d(2 + i) * st[i] + (-lo[i]) % size[i]) % size[i]
          if padded[i] else ks[i] * dil[i] + d(2 + i) * st[i] for i in range(n)]
    cols = b.index_map(x, AffineMap(len(shape), 0, (d(0), c, *at)), shape)
    inside = None
    for i in (i for i in range(n) if padded[i]):
        pos = TensorType(IntegerType(64), [kernel[i], spatial[i]])
        coord = b.ew(EK.ADD, b._add(tir.IotaOp(0, -lo[i], dil[i], pos)),
                     b._add(tir.IotaOp(1, 0, st[i], pos)))
        ok = b.ew(EK.MUL, b.compare(tir.CompareKind.GE, coord, b.full(0, pos)),
                  b.compare(tir.CompareKind.LT, coord, b.full(size[i], pos)))
        ok = b.index_map(ok, AffineMap(len(shape), 0, (ks[i], d(2 + i))), shape)
        inside = ok if inside is None else b.ew(EK.MUL, inside, ok)
    return cols if inside is None else b.select(inside, cols, b.full(0.0, cols.type))


def pool(b: TirBuilder, op: Operation, rt: TensorType) -> SSAValue:
    """Each window as the last axis of an index map of the padded input (-inf for max, zeros
    for avg), reduced; avg divides by aten's divisor (the window clipped to the padded input
    or, without count_include_pad, to the input), computed from iotas. avg sums f16/bf16 in
    float32."""
    is_max = op.name == "torch.max_pool"
    x = op.input if is_max else _opmath(b, op.input)
    st, lo, hi, dil = op.window()
    kernel = list(op.kernel.get_values())
    x = pad(b, x, lo, hi, tir.reduce_identity(tir.ReduceKind.MAX, x.type.element_type)
            if is_max else 0.0)  # (-inf, or an integer type's least)
    out = list(rt.get_shape())
    lead, n = len(out) - len(kernel), len(kernel)
    space = [*out, math.prod(kernel)]
    d = AffineExpr.dimension
    ks = window_coords(d(len(out)), kernel)
    xm = (*(d(i) for i in range(lead)), *(d(lead + i) * st[i] + ks[i] * dil[i] for i in range(n)))
    y = b.reduce(tir.ReduceKind.MAX if is_max else tir.ReduceKind.ADD,
                 b.index_map(x, AffineMap(len(space), 0, xm), space), [len(out)])
    if is_max:
        return y
    if op.divisor_override is not None:
        return _back(b, b.ew(EK.DIV, y, b.full(op.divisor_override.value.data, y.type)), rt)
    for i, size in enumerate(op.input.type.get_shape()[lead:]):
        k, p, t = kernel[i], lo[i], TensorType(y.type.element_type, [out[lead + i]])
        counts = {min(s + k, size + p) - s if op.count_include_pad else min(s + k, size) - max(s, 0)
                  for s in range(-p, out[lead + i] * st[i] - p, st[i])}
        if len(counts) <= 1:  # every window counts alike: a constant
            y = b.ew(EK.DIV, y, b.full(counts.pop(), y.type)) if counts else y
            continue
        start = b._add(tir.IotaOp(0, -p, st[i], t))
        end = b.ew(EK.MIN, b.ew(EK.ADD, start, b.full(k, t)), b.full(size + p, t))
        if op.count_include_pad is None:
            start = b.ew(EK.MAX, start, b.full(0, t))
            end = b.ew(EK.MIN, end, b.full(size, t))
        count = b.index_map(b.ew(EK.SUB, end, start), AffineMap(len(out), 0, (d(lead + i),)), out)
        y = b.ew(EK.DIV, y, count)
    return _back(b, y, rt)


SHAPE_DECOMPOSITIONS: dict[str, Decomposition] = {
    "reshape": lambda b, op, rt: _reshape(b, op.input, rt.get_shape()),
    "unsqueeze": lambda b, op, rt: _reshape(b, op.input, rt.get_shape()),
    "squeeze": lambda b, op, rt: _reshape(b, op.input, rt.get_shape()),
    "permute": lambda b, op, rt: _permute(b, op.input, op.dims.get_values(), rt.get_shape()),
    "transpose": _transpose,
    "expand": lambda b, op, rt: b.broadcast(op.input, rt.get_shape()),
    "slice": _slice,
    "select": _select,
    "cat": _concat,
    "embedding": lambda b, op, rt: gather(b, op.weight, [0], [op.indices], rt),
    "index": lambda b, op, rt: gather(b, op.input, op.dims.get_values(), [
        _from_the_end(b, v, op.input.type.get_shape()[d])
        for v, d in zip(op.indices, op.dims.get_values())], rt),
    "arange": _iota,
    "full": lambda b, op, rt: b.full(op.value.value.data, rt),
    "sdpa": sdpa,
    "gather": _gather,
    "conv": conv,
    "max_pool": pool,
    "avg_pool": pool,
}


# torch op name (without "torch.") -> its decomposition. One row per op.
DECOMPOSITIONS: dict[str, Decomposition] = {
    **{name: _binary(kind) for name, kind in BINARY_KIND.items()},
    **{name: _unary(kind) for name, kind in UNARY_KIND.items()},
    "relu": lambda b, op, rt: b.ew(EK.MAX, op.input, b.full(0.0, rt)),
    "constant": lambda b, op, rt: b.full(op.value.value.data, rt),
    "matmul": lambda b, op, rt: matmul(b, op.lhs, op.rhs, rt.get_shape()),
    "rms_norm": _rms_norm,
    **MATH_DECOMPOSITIONS,
    **SHAPE_DECOMPOSITIONS,
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
        origin.tag(b.ops, (origin.of_op(op) or [None])[0])
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
