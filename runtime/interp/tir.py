"""Interpreter for Tensor IR (tir) on numpy: one implementation per op, kinds from one table.

    %y = tir.elementwise add(%a, %b) : tensor<16x64xf32>       -> np.add(a, b)
    %r = tir.reduce add %p [2] : tensor<..> -> tensor<..>       -> np.add.reduce(p, axis=(2,))
    %a = tir.reduce argmax %p [2] : ... -> tensor<..xi64>       -> np.argmax(p, axis=2)
    %s = tir.scan add %p [1] : tensor<..>                       -> np.add.accumulate(p, axis=1)
    %b = tir.index_map %x (d0, d1) -> (d1) : ...               -> x[map(np.indices(out))]
    %z = tir.full 0.0 : tensor<16x16xf32>                      -> np.full
    %g = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(...)    -> w[ids[...], d1]
    %c = tir.concat %a, %b [1] : ...                           -> np.concatenate
    %i = tir.iota dim 0 start 0 step 1 : tensor<7xi64>          -> start + step * d0

Each op computes in PyTorch's opmath type (float32 for f16/bf16, so `reduce add` accumulates in
float32 as `torch.sum` does) and rounds its result to the tensor's element type.

`ELEMENTWISE_IMPLS` has one numpy function per `tir.ElementwiseKind` (checked at import), and
`affine_evaluator` evaluates an `AffineMap` on numpy index arrays; the loop interpreter and the
torch interpreter reuse both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.utils.exceptions import InterpretationError

from deplo.dialects import tir
from deplo.runtime.interp.host import fit, opmath_dtype


def sigmoid(x: Any) -> Any:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def rsqrt(x: Any) -> Any:
    return np.reciprocal(np.sqrt(x))


def erf(x: Any) -> Any:
    """The error function in x's dtype (scipy's when installed, else math.erf per element)."""
    x = np.asarray(x)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover - scipy is optional
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return scipy_erf(x).astype(x.dtype)


def divide(a: Any, b: Any) -> Any:
    """a / b; integers rounded toward zero (C's, arith.divsi: the floor moved up where the
    quotient is negative and inexact)."""
    a, b = np.asarray(a), np.asarray(b)
    if not np.issubdtype(a.dtype, np.integer):
        return np.divide(a, b)
    q = np.floor_divide(a, b)
    return np.where((q < 0) & (q * b != a), q + 1, q).astype(a.dtype)


def c_pow(x: Any, y: Any) -> Any:
    """C's pow (the kernels'): numpy's power takes sqrt for an exponent of +-0.5, where
    sqrt(-0.0) is -0.0 and sqrt(-inf) NaN; pow gives 0.0 and inf (and their reciprocals)."""
    x, y = np.asarray(x), np.asarray(y)
    r = np.power(x, y)
    half = np.abs(y) == 0.5
    if x.dtype.kind == "f" and np.any(half):
        r = np.where(half & ((x == 0) | np.isneginf(x)), np.power(np.abs(x), y), r)
    return r


def _sign(x: Any) -> Any:
    """1, -1 or 0 (NaN gives 0, as torch.sign); a bool's is itself."""
    return x if x.dtype == np.bool_ else np.nan_to_num(np.sign(x), nan=0) + x.dtype.type(0)


def _out_of_width(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Shift amounts PyTorch answers with 0 or the sign (C leaves them undefined)."""
    return (y < 0) | (y >= 8 * x.dtype.itemsize)


def _in_width(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.clip(y, 0, 8 * x.dtype.itemsize - 1).astype(x.dtype)


ELEMENTWISE_IMPLS: dict[tir.ElementwiseKind, Callable[..., Any]] = {
    tir.ElementwiseKind.ADD: np.add,
    tir.ElementwiseKind.SUB: np.subtract,
    tir.ElementwiseKind.MUL: np.multiply,
    tir.ElementwiseKind.DIV: divide,
    tir.ElementwiseKind.MAX: np.maximum,  # NaN-propagating, as torch.maximum
    tir.ElementwiseKind.MIN: np.minimum,
    tir.ElementwiseKind.NEG: np.negative,
    tir.ElementwiseKind.EXP: np.exp,
    tir.ElementwiseKind.RSQRT: rsqrt,
    tir.ElementwiseKind.SQRT: np.sqrt,
    tir.ElementwiseKind.TANH: np.tanh,
    tir.ElementwiseKind.SIGMOID: sigmoid,
    tir.ElementwiseKind.SILU: lambda x: x * sigmoid(x),
    tir.ElementwiseKind.POW: c_pow,
    tir.ElementwiseKind.FMOD: np.fmod,
    tir.ElementwiseKind.COS: np.cos,
    tir.ElementwiseKind.SIN: np.sin,
    tir.ElementwiseKind.ERF: erf,
    tir.ElementwiseKind.ABS: np.abs,
    tir.ElementwiseKind.LOG: np.log,
    tir.ElementwiseKind.FLOOR: np.floor,
    tir.ElementwiseKind.CEIL: np.ceil,
    tir.ElementwiseKind.TRUNC: np.trunc,
    tir.ElementwiseKind.ROUND: np.rint,  # half to even
    tir.ElementwiseKind.SIGN: _sign,
    tir.ElementwiseKind.EXPM1: np.expm1,
    tir.ElementwiseKind.LOG1P: np.log1p,
    tir.ElementwiseKind.LOG2: np.log2,
    tir.ElementwiseKind.ATAN: np.arctan,
    tir.ElementwiseKind.SINH: np.sinh,
    tir.ElementwiseKind.COSH: np.cosh,
    tir.ElementwiseKind.TAN: np.tan,
    tir.ElementwiseKind.EXP2: np.exp2,
    tir.ElementwiseKind.LOG10: np.log10,
    tir.ElementwiseKind.ASIN: np.arcsin,
    tir.ElementwiseKind.ACOS: np.arccos,
    tir.ElementwiseKind.ASINH: np.arcsinh,
    tir.ElementwiseKind.ACOSH: np.arccosh,
    tir.ElementwiseKind.ATANH: np.arctanh,
    tir.ElementwiseKind.ATAN2: np.arctan2,
    tir.ElementwiseKind.AND: np.bitwise_and,  # (on bools: the logical and)
    tir.ElementwiseKind.OR: np.bitwise_or,
    tir.ElementwiseKind.XOR: np.bitwise_xor,
    tir.ElementwiseKind.SHL: lambda x, y: np.where(_out_of_width(x, y), x.dtype.type(0),
                                                   np.left_shift(x, _in_width(x, y))),
    tir.ElementwiseKind.SHR: lambda x, y: np.right_shift(
        x, np.where(_out_of_width(x, y), 8 * x.dtype.itemsize - 1, y).astype(x.dtype)),
}
assert set(ELEMENTWISE_IMPLS) == set(tir.ElementwiseKind), "a tir kind has no interpreter"

COMPARE_IMPLS: dict[tir.CompareKind, np.ufunc] = {
    tir.CompareKind.EQ: np.equal,
    tir.CompareKind.NE: np.not_equal,
    tir.CompareKind.LT: np.less,
    tir.CompareKind.LE: np.less_equal,
    tir.CompareKind.GT: np.greater,
    tir.CompareKind.GE: np.greater_equal,
}
assert set(COMPARE_IMPLS) == set(tir.CompareKind), "a tir compare kind has no interpreter"

REDUCE_IMPLS: dict[tir.ReduceKind, Callable[..., Any]] = {
    tir.ReduceKind.ADD: np.add,
    tir.ReduceKind.MUL: np.multiply,
    tir.ReduceKind.MAX: np.maximum,
    tir.ReduceKind.MIN: np.minimum,
    tir.ReduceKind.ARGMAX: np.argmax,  # the first largest; NaN is the largest (as torch)
    tir.ReduceKind.ARGMIN: np.argmin,
}
assert set(REDUCE_IMPLS) == set(tir.REDUCE_KINDS), "a tir reduce kind has no interpreter"


# ---------------------------------------------------------------------------------------------
# affine maps on numpy index arrays


def _expr_fn(e: AffineExpr) -> Callable[[Sequence[Any]], Any]:
    if isinstance(e, AffineDimExpr):
        p = e.position
        return lambda d: d[p]
    if isinstance(e, AffineConstantExpr):
        c = e.value
        return lambda d: c
    if isinstance(e, AffineBinaryOpExpr):
        lhs, rhs = _expr_fn(e.lhs), _expr_fn(e.rhs)
        match e.kind:
            case AffineBinaryOpKind.Add:
                return lambda d: lhs(d) + rhs(d)
            case AffineBinaryOpKind.Mul:
                return lambda d: lhs(d) * rhs(d)
            case AffineBinaryOpKind.FloorDiv:
                return lambda d: lhs(d) // rhs(d)
            case AffineBinaryOpKind.CeilDiv:
                return lambda d: -(-lhs(d) // rhs(d))
            case AffineBinaryOpKind.Mod:  # floor modulo: non-negative for a positive divisor
                return lambda d: lhs(d) % rhs(d)
    raise NotImplementedError(f"interp: cannot evaluate affine expression {e} (symbols?)")


@functools.cache
def affine_evaluator(m: AffineMap) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """`m` as a function from dim values (ints or broadcastable int arrays) to the coordinates."""
    fns = tuple(_expr_fn(e) for e in m.results)
    if m == AffineMap.identity(m.num_dims):
        return tuple
    return lambda dims: tuple(f(dims) for f in fns)


# ---------------------------------------------------------------------------------------------


def _symbol_coord(m: AffineMap, k: int) -> int:
    """The table coordinate that symbol k of a gather map addresses."""
    return next(i for i, e in enumerate(m.results) if isinstance(e, AffineSymExpr) and e.position == k)


@register_impls
class TirFunctions(InterpreterFunctions):
    @impl(tir.ElementwiseOp)
    def run_elementwise(self, interp: Interpreter, op: tir.ElementwiseOp, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        xs = [np.asarray(a, dtype=dt) for a in args]
        return (fit(ELEMENTWISE_IMPLS[op.kind.data](*xs), elt),)

    @impl(tir.CompareOp)
    def run_compare(self, interp: Interpreter, op: tir.CompareOp, args: PythonValues):
        dt = opmath_dtype(op.lhs.type.element_type)
        a, b = (np.asarray(x, dtype=dt) for x in args)
        return (np.asarray(COMPARE_IMPLS[op.kind.data](a, b)),)

    @impl(tir.SelectOp)
    def run_select(self, interp: Interpreter, op: tir.SelectOp, args: PythonValues):
        c, a, b = (np.asarray(x) for x in args)
        return (np.asarray(fit(np.where(c, a, b), op.result.type.element_type)),)

    @impl(tir.CastOp)
    def run_cast(self, interp: Interpreter, op: tir.CastOp, args: PythonValues):
        (x,) = args
        return (np.asarray(fit(np.asarray(x), op.result.type.element_type)),)

    @impl(tir.ReduceOp)
    def run_reduce(self, interp: Interpreter, op: tir.ReduceOp, args: PythonValues):
        (x,) = args
        elt = op.result.type.element_type
        x = np.asarray(x, dtype=opmath_dtype(op.input.type.element_type))
        kind = op.kind.data
        if kind in tir.ARG_KINDS:
            return (np.asarray(REDUCE_IMPLS[kind](x, axis=op.reduced_dims[0])),)
        r = REDUCE_IMPLS[kind].reduce(x, axis=op.reduced_dims, initial=tir.reduce_identity(kind, op.input.type.element_type))
        return (np.asarray(fit(r, elt)),)

    @impl(tir.ScanOp)
    def run_scan(self, interp: Interpreter, op: tir.ScanOp, args: PythonValues):
        elt = op.result.type.element_type
        x = np.asarray(args[0], dtype=opmath_dtype(elt))
        return (np.asarray(fit(REDUCE_IMPLS[op.kind.data].accumulate(x, axis=op.dim.value.data),
                               elt)),)

    @impl(tir.IndexMapOp)
    def run_index_map(self, interp: Interpreter, op: tir.IndexMapOp, args: PythonValues):
        (x,) = args
        out_shape = tuple(op.result.type.get_shape())
        grids = np.indices(out_shape, sparse=True) if out_shape else ()
        coords = affine_evaluator(op.map.data)(grids)
        y = np.asarray(x)[tuple(coords)]
        return (np.array(np.broadcast_to(y, out_shape)),)

    @impl(tir.GatherOp)
    def run_gather(self, interp: Interpreter, op: tir.GatherOp, args: PythonValues):
        table, *indices = (np.asarray(a) for a in args)
        out_shape = tuple(op.result.type.get_shape())
        grids = list(np.indices(out_shape, sparse=True)) if out_shape else []
        values = []
        for k, (idx, im) in enumerate(zip(indices, op.index_maps)):
            v = idx[tuple(affine_evaluator(im.data)(grids))].astype(np.int64)
            n = table.shape[_symbol_coord(op.map.data, k)]
            if v.size and (v.min() < 0 or v.max() >= n):
                raise InterpretationError(
                    f"{op.name}: index {k} values range over [{v.min()}, {v.max()}], "
                    f"outside [0, {n - 1}]"
                )
            values.append(v)
        coords = affine_evaluator(tir.gather_access_map(op.map.data))([*grids, *values])
        return (np.array(np.broadcast_to(table[tuple(coords)], out_shape)),)

    @impl(tir.ConcatOp)
    def run_concat(self, interp: Interpreter, op: tir.ConcatOp, args: PythonValues):
        return (np.concatenate([np.asarray(a) for a in args], axis=op.dim.value.data),)

    @impl(tir.IotaOp)
    def run_iota(self, interp: Interpreter, op: tir.IotaOp, args: PythonValues):
        t = op.result.type
        shape = tuple(t.get_shape())
        d = op.dim.value.data
        dt = opmath_dtype(t.element_type)
        coord = np.arange(shape[d], dtype=np.int64)
        coord = coord.reshape([-1 if i == d else 1 for i in range(len(shape))])
        start, step = dt.type(op.start.value.data), dt.type(op.step.value.data)
        y = start + step * coord.astype(dt) if dt.kind == "f" else start + step * coord
        return (np.array(np.broadcast_to(fit(y, t.element_type), shape)),)

    @impl(tir.FullOp)
    def run_full(self, interp: Interpreter, op: tir.FullOp, args: PythonValues):
        t = op.result.type
        v = fit(op.value.value.data, t.element_type)
        return (np.full(tuple(t.get_shape()), v, dtype=np.asarray(v).dtype),)
