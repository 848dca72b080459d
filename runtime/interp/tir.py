"""Interpreter for Tensor IR (tir) on numpy: one implementation per op, kinds from one table.

    %y = tir.elementwise add(%a, %b) : tensor<16x64xf32>       -> np.add(a, b)
    %r = tir.reduce add %p [2] : tensor<..> -> tensor<..>       -> np.add.reduce(p, axis=(2,))
    %b = tir.index_map %x (d0, d1) -> (d1) : ...               -> x[map(np.indices(out))]
    %z = tir.full 0.0 : tensor<16x16xf32>                      -> np.full

Each op computes in PyTorch's opmath type (float32 for f16/bf16, so `reduce add` accumulates in
float32 as `torch.sum` does) and rounds its result to the tensor's element type.

`ELEMENTWISE_IMPLS` has one numpy function per `tir.ElementwiseKind` (checked at import), and
`affine_evaluator` evaluates an `AffineMap` on numpy index arrays; the loop interpreter and the
torch interpreter reuse both.
"""

from __future__ import annotations

import functools
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
)

from deplo.dialects import tir
from deplo.runtime.interp.host import fit, opmath_dtype


def sigmoid(x: Any) -> Any:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def rsqrt(x: Any) -> Any:
    return np.reciprocal(np.sqrt(x))


ELEMENTWISE_IMPLS: dict[tir.ElementwiseKind, Callable[..., Any]] = {
    tir.ElementwiseKind.ADD: np.add,
    tir.ElementwiseKind.SUB: np.subtract,
    tir.ElementwiseKind.MUL: np.multiply,
    tir.ElementwiseKind.DIV: np.divide,
    tir.ElementwiseKind.MAX: np.maximum,  # NaN-propagating, as torch.maximum
    tir.ElementwiseKind.MIN: np.minimum,
    tir.ElementwiseKind.NEG: np.negative,
    tir.ElementwiseKind.EXP: np.exp,
    tir.ElementwiseKind.RSQRT: rsqrt,
    tir.ElementwiseKind.SQRT: np.sqrt,
    tir.ElementwiseKind.TANH: np.tanh,
    tir.ElementwiseKind.SIGMOID: sigmoid,
    tir.ElementwiseKind.SILU: lambda x: x * sigmoid(x),
}
assert set(ELEMENTWISE_IMPLS) == set(tir.ElementwiseKind), "a tir kind has no interpreter"

REDUCE_IMPLS: dict[tir.ReduceKind, np.ufunc] = {
    tir.ReduceKind.ADD: np.add,
    tir.ReduceKind.MUL: np.multiply,
    tir.ReduceKind.MAX: np.maximum,
    tir.ReduceKind.MIN: np.minimum,
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


@register_impls
class TirFunctions(InterpreterFunctions):
    @impl(tir.ElementwiseOp)
    def run_elementwise(self, interp: Interpreter, op: tir.ElementwiseOp, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        xs = [np.asarray(a, dtype=dt) for a in args]
        return (fit(ELEMENTWISE_IMPLS[op.kind.data](*xs), elt),)

    @impl(tir.ReduceOp)
    def run_reduce(self, interp: Interpreter, op: tir.ReduceOp, args: PythonValues):
        (x,) = args
        elt = op.result.type.element_type
        x = np.asarray(x, dtype=opmath_dtype(elt))
        r = REDUCE_IMPLS[op.kind.data].reduce(x, axis=op.reduced_dims)
        return (np.asarray(fit(r, elt)),)

    @impl(tir.IndexMapOp)
    def run_index_map(self, interp: Interpreter, op: tir.IndexMapOp, args: PythonValues):
        (x,) = args
        out_shape = tuple(op.result.type.get_shape())
        grids = np.indices(out_shape, sparse=True) if out_shape else ()
        coords = affine_evaluator(op.map.data)(grids)
        y = np.asarray(x)[tuple(coords)]
        return (np.array(np.broadcast_to(y, out_shape)),)

    @impl(tir.FullOp)
    def run_full(self, interp: Interpreter, op: tir.FullOp, args: PythonValues):
        t = op.result.type
        v = fit(op.value.value.data, t.element_type)
        return (np.full(tuple(t.get_shape()), v, dtype=np.asarray(v).dtype),)
