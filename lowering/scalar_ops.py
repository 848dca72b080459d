"""The one table from tir kinds to scalar `arith`/`math` code, used by tir-to-loop.

Why a table: a new elementwise kind is one row here plus one in the tir dialect's kind enum; the
interpreter and the C printer each have their own table keyed by the same kinds or scalar ops.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Attribute, SSAValue

from deplo.dialects.tir import ElementwiseKind as EK
from deplo.dialects.tir import ReduceKind as RK


def const(b: Builder, value: float, t: Attribute) -> SSAValue:
    return b.insert(arith.ConstantOp(FloatAttr(value, t))).result


def _sigmoid(b: Builder, x: SSAValue) -> SSAValue:
    one = const(b, 1.0, x.type)
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    return b.insert(arith.DivfOp(one, b.insert(arith.AddfOp(one, e)).result)).result


ELEMENTWISE: dict[EK, Callable[..., SSAValue]] = {
    EK.ADD: lambda b, x, y: b.insert(arith.AddfOp(x, y)).result,
    EK.SUB: lambda b, x, y: b.insert(arith.SubfOp(x, y)).result,
    EK.MUL: lambda b, x, y: b.insert(arith.MulfOp(x, y)).result,
    EK.DIV: lambda b, x, y: b.insert(arith.DivfOp(x, y)).result,
    EK.MAX: lambda b, x, y: b.insert(arith.MaximumfOp(x, y)).result,
    EK.MIN: lambda b, x, y: b.insert(arith.MinimumfOp(x, y)).result,
    EK.NEG: lambda b, x: b.insert(arith.NegfOp(x)).result,
    EK.EXP: lambda b, x: b.insert(math.ExpOp(x)).result,
    EK.RSQRT: lambda b, x: b.insert(math.RsqrtOp(x)).result,
    EK.SQRT: lambda b, x: b.insert(math.SqrtOp(x)).result,
    EK.TANH: lambda b, x: b.insert(math.TanhOp(x)).result,
    EK.SIGMOID: _sigmoid,
    EK.SILU: lambda b, x: b.insert(arith.MulfOp(x, _sigmoid(b, x))).result,
}

REDUCE_COMBINE: dict[RK, Callable[[Builder, SSAValue, SSAValue], SSAValue]] = {
    RK.ADD: lambda b, x, y: b.insert(arith.AddfOp(x, y)).result,
    RK.MUL: lambda b, x, y: b.insert(arith.MulfOp(x, y)).result,
    RK.MAX: lambda b, x, y: b.insert(arith.MaximumfOp(x, y)).result,
    RK.MIN: lambda b, x, y: b.insert(arith.MinimumfOp(x, y)).result,
}

REDUCE_INIT: dict[RK, float] = {
    RK.ADD: 0.0,
    RK.MUL: 1.0,
    RK.MAX: float("-inf"),
    RK.MIN: float("inf"),
}
