"""The one table from tir kinds to scalar `arith`/`math` code, used by tir-to-loop.

Why a table: a new elementwise kind is one row here plus one in the tir dialect's kind enum; the
interpreter and the C printer each have their own table keyed by the same kinds or scalar ops.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    f64,
)
from xdsl.ir import Attribute, SSAValue

from deplo.dialects.tir import CompareKind as CK
from deplo.dialects.tir import ElementwiseKind as EK
from deplo.dialects.tir import ReduceKind as RK
from deplo.dialects.tir import is_i1


def const(b: Builder, value: float, t: Attribute) -> SSAValue:
    """An `arith.constant` of scalar type t (integer, index or float)."""
    if isinstance(t, IntegerType | IndexType):
        return b.insert(arith.ConstantOp(IntegerAttr(int(value), t))).result
    return b.insert(arith.ConstantOp(FloatAttr(value, t))).result


def _shift(left: bool) -> Callable[..., SSAValue]:
    """x << y / x >> y as PyTorch: an amount out of [0, width) (unsigned compare: a negative
    one too) gives 0 / the sign, where C's shift is undefined: the amount is clamped first."""

    def go(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
        bits = x.type.width.data
        out = b.insert(arith.CmpiOp(y, const(b, bits, y.type), "uge")).result
        amount = b.insert(arith.SelectOp(out, const(b, 0 if left else bits - 1, y.type), y)).result
        if not left:
            return b.insert(arith.ShRSIOp(x, amount)).result
        shifted = b.insert(arith.ShLIOp(x, amount)).result
        return b.insert(arith.SelectOp(out, const(b, 0, x.type), shifted)).result

    return go


def _sigmoid(b: Builder, x: SSAValue) -> SSAValue:
    one = const(b, 1.0, x.type)
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    return b.insert(arith.DivfOp(one, b.insert(arith.AddfOp(one, e)).result)).result


def _in_f32(compose: Callable[..., SSAValue]) -> Callable[..., SSAValue]:
    """A composite of several ops (sigmoid's 1 / (1 + exp(-x))) computed on f16/bf16 operands in
    float32 and rounded once, as aten's opmath: rounding exp(-x) to half overflows past 11
    (sigmoid 0 where eager has 1.5e-5), and 1 + it rounds to 1 in bf16."""

    def go(b: Builder, *xs: SSAValue) -> SSAValue:
        t = xs[0].type
        if not isinstance(t, Float16Type | BFloat16Type):
            return compose(b, *xs)
        wide = [b.insert(arith.ExtFOp(x, Float32Type())).result for x in xs]
        return b.insert(arith.TruncFOp(compose(b, *wide), t)).result

    return go


def _typed(float_op: type, int_op: type) -> Callable[..., SSAValue]:
    """A binary op for floats or (signless, signed) integers, by the operands' type."""
    return lambda b, x, y: b.insert(
        (int_op if isinstance(x.type, IntegerType) else float_op)(x, y)).result


EXTREMES = {"max": (arith.MaximumfOp, arith.MaxSIOp, arith.OrIOp),
            "min": (arith.MinimumfOp, arith.MinSIOp, arith.AndIOp)}
"""max/min per element type: floats NaN-propagating, integers signed, bools or/and."""


def extreme_op(which: str, t: Attribute) -> type:
    """The op class of EXTREMES[which] for element type `t` (also tile-to-kernel's combine)."""
    float_op, int_op, bool_op = EXTREMES[which]
    if not isinstance(t, IntegerType):
        return float_op
    return bool_op if is_i1(t) else int_op


def _extreme(which: str) -> Callable[..., SSAValue]:
    return lambda b, x, y: b.insert(extreme_op(which, x.type)(x, y)).result


def _neg(b: Builder, x: SSAValue) -> SSAValue:
    if isinstance(x.type, IntegerType):
        return b.insert(arith.SubiOp(const(b, 0, x.type), x)).result
    return b.insert(arith.NegfOp(x)).result


def _abs(b: Builder, x: SSAValue) -> SSAValue:
    if isinstance(x.type, IntegerType):
        neg = b.insert(arith.CmpiOp(x, const(b, 0, x.type), "slt")).result
        return b.insert(arith.SelectOp(neg, _neg(b, x), x)).result
    return b.insert(math.AbsFOp(x)).result


def _sign(b: Builder, x: SSAValue) -> SSAValue:
    """1, -1 or 0 (NaN and -0 give 0, as torch.sign)."""
    zero, one, minus = (const(b, v, x.type) for v in (0.0, 1.0, -1.0))
    below, above = (compare(b, kind, x, zero) for kind in (CK.LT, CK.GT))
    neg = b.insert(arith.SelectOp(below, minus, zero))
    return b.insert(arith.SelectOp(above, one, neg.result)).result


def _fmod(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's fmod (xDSL's arith has no remf): x - trunc(x / y) y in one rounding (an fma), moved by
    |y| once where the rounded quotient was one off (1e8 fmod 3 is 1, not 0 or -2); exact while
    the quotient is below 2^53 (f32 and narrower are computed in f64). A zero keeps x's sign; a
    finite x over an infinite y is x. Integers: C's `%` (arith.remsi), the same sign rule."""
    def ins(op):
        return b.insert(op).result

    if isinstance(x.type, IntegerType):
        return ins(arith.RemSIOp(x, y))
    if x.type != f64:  # narrower floats in f64: exact while the quotient is below 2^53
        wide = _fmod(b, ins(arith.ExtFOp(x, f64)), ins(arith.ExtFOp(y, f64)))
        return ins(arith.TruncFOp(wide, x.type))

    t = ins(math.TruncOp(ins(arith.DivfOp(x, y))))
    r = ins(math.FmaOp(ins(arith.NegfOp(t)), y, x))
    zero = const(b, 0.0, x.type)
    step = ins(math.CopySignOp(ins(math.AbsFOp(y)), x))  # |y| toward x's sign
    over = ins(arith.CmpfOp(ins(arith.MulfOp(r, x)), zero, "olt"))  # r's sign is not x's
    r = ins(arith.SelectOp(over, ins(arith.AddfOp(r, step)), r))
    under = ins(arith.CmpfOp(ins(math.AbsFOp(r)), ins(math.AbsFOp(y)), "oge"))
    r = ins(arith.SelectOp(under, ins(arith.SubfOp(r, step)), r))
    r = ins(arith.SelectOp(ins(arith.CmpfOp(r, zero, "oeq")), ins(math.CopySignOp(zero, x)), r))
    inf = const(b, float("inf"), x.type)
    finite_x = ins(arith.CmpfOp(ins(math.AbsFOp(x)), inf, "olt"))
    inf_y = ins(arith.CmpfOp(ins(math.AbsFOp(y)), inf, "oeq"))
    return ins(arith.SelectOp(ins(arith.AndIOp(finite_x, inf_y)), x, r))


def _math(op: type) -> Callable[..., SSAValue]:
    return lambda b, x: b.insert(op(x)).result


ELEMENTWISE: dict[EK, Callable[..., SSAValue]] = {
    EK.ADD: _typed(arith.AddfOp, arith.AddiOp),
    EK.SUB: _typed(arith.SubfOp, arith.SubiOp),
    EK.MUL: _typed(arith.MulfOp, arith.MuliOp),
    EK.DIV: _typed(arith.DivfOp, arith.DivSIOp),  # integers: C's, toward zero
    EK.MAX: _extreme("max"),
    EK.MIN: _extreme("min"),
    EK.NEG: _neg,
    EK.EXP: lambda b, x: b.insert(math.ExpOp(x)).result,
    EK.RSQRT: lambda b, x: b.insert(math.RsqrtOp(x)).result,
    EK.SQRT: lambda b, x: b.insert(math.SqrtOp(x)).result,
    EK.TANH: lambda b, x: b.insert(math.TanhOp(x)).result,
    EK.SIGMOID: _in_f32(_sigmoid),
    EK.SILU: _in_f32(lambda b, x: b.insert(arith.MulfOp(x, _sigmoid(b, x))).result),
    EK.POW: lambda b, x, y: b.insert(math.PowFOp(x, y)).result,
    EK.FMOD: _fmod,
    EK.COS: lambda b, x: b.insert(math.CosOp(x)).result,
    EK.SIN: lambda b, x: b.insert(math.SinOp(x)).result,
    EK.ERF: lambda b, x: b.insert(math.ErfOp(x)).result,
    EK.ABS: _abs,
    EK.LOG: lambda b, x: b.insert(math.LogOp(x)).result,
    EK.FLOOR: _math(math.FloorOp),
    EK.CEIL: _math(math.CeilOp),
    EK.TRUNC: _math(math.TruncOp),
    EK.ROUND: _math(math.RoundEvenOp),  # half to even, as torch.round
    EK.SIGN: _sign,
    EK.EXPM1: _math(math.ExpM1Op),
    EK.LOG1P: _math(math.Log1pOp),
    EK.LOG2: _math(math.Log2Op),
    EK.ATAN: _math(math.AtanOp),
    EK.SINH: _math(math.SinhOp),
    EK.COSH: _math(math.CoshOp),
    EK.TAN: _math(math.TanOp),
    EK.EXP2: _math(math.Exp2Op),
    EK.LOG10: _math(math.Log10Op),
    EK.ASIN: _math(math.AsinOp),
    EK.ACOS: _math(math.AcosOp),
    EK.ASINH: _math(math.AsinhOp),
    EK.ACOSH: _math(math.AcoshOp),
    EK.ATANH: _math(math.AtanhOp),
    EK.ATAN2: lambda b, x, y: b.insert(math.Atan2Op(x, y)).result,
    EK.AND: lambda b, x, y: b.insert(arith.AndIOp(x, y)).result,
    EK.OR: lambda b, x, y: b.insert(arith.OrIOp(x, y)).result,
    EK.XOR: lambda b, x, y: b.insert(arith.XOrIOp(x, y)).result,
    EK.SHL: _shift(left=True),
    EK.SHR: _shift(left=False),
}
# tir compare kind -> (arith.cmpf predicate, arith.cmpi predicate). Floats compare ordered, but
# `ne` is unordered: NaN != x is true, as in torch.
COMPARE: dict[CK, tuple[str, str]] = {
    CK.EQ: ("oeq", "eq"),
    CK.NE: ("une", "ne"),
    CK.LT: ("olt", "slt"),
    CK.LE: ("ole", "sle"),
    CK.GT: ("ogt", "sgt"),
    CK.GE: ("oge", "sge"),
}


def compare(b: Builder, kind: CK, x: SSAValue, y: SSAValue) -> SSAValue:
    """`arith.cmpf`/`arith.cmpi` of two scalars of one type: an i1 (bools compared unsigned:
    True > False)."""
    fp, ip = COMPARE[kind]
    if is_i1(x.type) and ip[0] == "s":
        ip = "u" + ip[1:]
    if isinstance(x.type, IntegerType | IndexType):
        return b.insert(arith.CmpiOp(x, y, ip)).result
    return b.insert(arith.CmpfOp(x, y, fp)).result


def _width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else t.bitwidth  # type: ignore[attr-defined]


def cast(b: Builder, x: SSAValue, to: Attribute) -> SSAValue:
    """A scalar converted between element types: floats by `extf`/`truncf` (f16 <-> bf16
    through f32), integers to floats by `sitofp` (i1 `uitofp`: true is 1), floats to integers by
    `fptosi` (truncation; to i1: nonzero, NaN included, is true), integers by `extsi`/`trunci`
    (i1 `extui`; to i1: nonzero)."""
    frm = x.type
    if frm == to:
        return x
    wf, wt = _width(frm), _width(to)
    if isinstance(to, IntegerType) and wt == 1:
        if isinstance(frm, IntegerType):
            return b.insert(arith.CmpiOp(x, const(b, 0, frm), "ne")).result
        return b.insert(arith.CmpfOp(x, const(b, 0.0, frm), "une")).result
    if isinstance(frm, IntegerType) and isinstance(to, IntegerType):
        op = arith.ExtUIOp if wf == 1 else arith.ExtSIOp if wf < wt else arith.TruncIOp
        return b.insert(op(x, to)).result
    if isinstance(frm, IntegerType):
        return b.insert((arith.UIToFPOp if wf == 1 else arith.SIToFPOp)(x, to)).result
    if isinstance(to, IntegerType):
        return b.insert(arith.FPToSIOp(x, to)).result
    if wf == wt:  # f16 <-> bf16
        x = b.insert(arith.ExtFOp(x, Float32Type())).result
        return b.insert(arith.TruncFOp(x, to)).result
    if wf < wt:
        return b.insert(arith.ExtFOp(x, to)).result
    return b.insert(arith.TruncFOp(x, to)).result


REDUCE_COMBINE: dict[RK, Callable[[Builder, SSAValue, SSAValue], SSAValue]] = {
    RK.ADD: ELEMENTWISE[EK.ADD],
    RK.MUL: ELEMENTWISE[EK.MUL],
    RK.MAX: ELEMENTWISE[EK.MAX],
    RK.MIN: ELEMENTWISE[EK.MIN],
}


def arg_combine(b: Builder, kind: RK, best: SSAValue, index: SSAValue, v: SSAValue,
                iv: SSAValue) -> list[SSAValue]:
    """One step of argmax/argmin: (best, index) becomes (v, iv) where v is strictly better —
    the first of equal values stays — or v is the first NaN (torch's NaN is the extreme)."""
    take = compare(b, CK.GT if kind == RK.ARGMAX else CK.LT, v, best)
    if not isinstance(v.type, IntegerType):
        nan = b.insert(arith.CmpfOp(v, v, "une")).result
        best_is_number = b.insert(arith.CmpfOp(best, best, "oeq")).result
        first_nan = b.insert(arith.AndIOp(nan, best_is_number)).result
        take = b.insert(arith.OrIOp(take, first_nan)).result
    at = b.insert(arith.IndexCastOp(iv, index.type)).result
    return [b.insert(arith.SelectOp(take, v, best)).result,
            b.insert(arith.SelectOp(take, at, index)).result]
