"""Interpreter for Loop IR on numpy, with `free` loops vectorized.

A `free` loop's iterations are independent (the dialect's definition), so it runs its body
ONCE with the induction variable bound to `lb + step * arange(n)` laid along its own numpy axis:
the free loop nested inside d other free loops of its kernel gets axis d, and every index array
of a kernel has the same rank (its deepest free nesting), so values from enclosing scopes
broadcast against inner ones. Scalar `arith`/`math` code then runs on broadcast arrays,
`loop.load` evaluates its affine map on the index arrays and gathers with fancy indexing, and
`loop.store` scatters with the broadcast index arrays. This is exact: running all iterations of
a free loop statement by statement gives the result of running them one after the other,
because no iteration reads what another writes.

`reduce` loops run serially, the index a scalar, carrying accumulator arrays (one lane per
enclosing free iteration).

    loop.for %a1 = 0 to 32 free {                  # a1 = arange(32) on axis 1 (shape 1x32x1)
      %s = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {   # 2048 serial steps
        %v = loop.load %x[%a0, %a1, %a2] : ...     # x[a0, a1, a2] -> shape 1x32x1
        ...

`ScalarFunctions` implements `arith` and `math` on numpy values of the IR's dtype (float32 stays
float32; bf16 is rounded after each op), which xDSL's own scalar implementations (Python floats)
do not. Index values are int64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as math_d
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ShapedType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import BlockArgument, SSAValue
from xdsl.utils.exceptions import InterpretationError, VerifyException

from deplo.dialects import loop
from deplo.dialects.tir import expr_range
from deplo.runtime.interp.host import fit, numpy_dtype
from deplo.runtime.interp.tir import affine_evaluator, c_pow, divide, erf, rsqrt

# ---------------------------------------------------------------------------------------------
# arith / math on numpy


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-a // b)


def _unsigned(a: Any) -> Any:
    a = np.asarray(a)
    return a.astype(np.dtype(f"uint{a.dtype.itemsize * 8}")) if a.dtype.kind == "i" else a


def _round_half_away(x: Any) -> Any:
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x)


def _fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c in one rounding, as C's fma: f32 and narrower through the f64 product (exact);
    f64 through Dekker's exact product (p + e = a * b), so x - t y keeps its low bits where the
    two cancel (fmod's remainder)."""
    a, b, c = (np.asarray(v) for v in (a, b, c))
    if np.result_type(a, b, c) != np.float64:
        return np.asarray(a, np.float64) * np.asarray(b, np.float64) + c
    p = a * b

    def split(x):
        hi = x * 134217729.0 - (x * 134217729.0 - x)  # 2^27 + 1: Veltkamp's halves
        return hi, x - hi

    with np.errstate(over="ignore", invalid="ignore"):
        (ah, al), (bh, bl) = split(a), split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        # (past ~1e300 the split overflows: the plain sum there, rounded twice)
        return np.where(np.isfinite(p) & np.isfinite(e), (p + c) + e, p + c)


# op class -> numpy function of the operands. The result is then cast to the op's result type.
ARITH_MATH_IMPLS: dict[type, Callable[..., Any]] = {
    # float arithmetic
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.NegfOp: np.negative,
    arith.MaximumfOp: np.maximum,  # NaN-propagating
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,  # NaN-ignoring
    arith.MinnumfOp: np.fmin,
    # integer / index arithmetic
    arith.AddiOp: np.add,
    arith.SubiOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.DivSIOp: divide,
    arith.RemSIOp: np.fmod,  # sign of the dividend, as C
    arith.FloorDivSIOp: np.floor_divide,
    arith.CeilDivSIOp: _ceil_div,
    arith.DivUIOp: lambda a, b: _unsigned(a) // _unsigned(b),
    arith.RemUIOp: lambda a, b: _unsigned(a) % _unsigned(b),
    arith.CeilDivUIOp: lambda a, b: _ceil_div(_unsigned(a), _unsigned(b)),
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
    arith.MaxUIOp: lambda a, b: np.maximum(_unsigned(a), _unsigned(b)),
    arith.MinUIOp: lambda a, b: np.minimum(_unsigned(a), _unsigned(b)),
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
    arith.ShRUIOp: lambda a, b: np.right_shift(_unsigned(a), _unsigned(b)),
    arith.SelectOp: np.where,
    # casts (the cast itself is `fit` to the result type)
    arith.IndexCastOp: lambda a: a,
    arith.SIToFPOp: lambda a: a,
    arith.UIToFPOp: _unsigned,
    arith.FPToSIOp: np.trunc,
    arith.FPToUIOp: np.trunc,
    arith.ExtFOp: lambda a: a,
    arith.TruncFOp: lambda a: a,
    arith.ExtSIOp: lambda a: a,
    arith.ExtUIOp: _unsigned,
    arith.TruncIOp: lambda a: a,
    # math
    math_d.ExpOp: np.exp,
    math_d.Exp2Op: np.exp2,
    math_d.ExpM1Op: np.expm1,
    math_d.LogOp: np.log,
    math_d.Log2Op: np.log2,
    math_d.Log10Op: np.log10,
    math_d.Log1pOp: np.log1p,
    math_d.SqrtOp: np.sqrt,
    math_d.RsqrtOp: rsqrt,
    math_d.CbrtOp: np.cbrt,
    math_d.TanhOp: np.tanh,
    math_d.SinhOp: np.sinh,
    math_d.CoshOp: np.cosh,
    math_d.SinOp: np.sin,
    math_d.CosOp: np.cos,
    math_d.TanOp: np.tan,
    math_d.AsinOp: np.arcsin,
    math_d.AcosOp: np.arccos,
    math_d.AtanOp: np.arctan,
    math_d.Atan2Op: np.arctan2,
    math_d.AsinhOp: np.arcsinh,
    math_d.AcoshOp: np.arccosh,
    math_d.AtanhOp: np.arctanh,
    math_d.AbsFOp: np.abs,
    math_d.AbsIOp: np.abs,
    math_d.CeilOp: np.ceil,
    math_d.FloorOp: np.floor,
    math_d.TruncOp: np.trunc,
    math_d.RoundOp: _round_half_away,
    math_d.RoundEvenOp: np.rint,
    math_d.CopySignOp: np.copysign,
    math_d.PowFOp: c_pow,
    math_d.FPowIOp: lambda a, b: np.power(a, b.astype(a.dtype) if hasattr(b, "astype") else b),
    math_d.IPowIOp: np.power,
    math_d.FmaOp: _fma,
    math_d.ErfOp: erf,
}

_CMPF: dict[int, Callable[[Any, Any], Any]] = {
    0: lambda x, y: np.zeros(np.broadcast(x, y).shape, bool),  # false
    1: np.equal,  # oeq (comparisons with NaN are False: ordered for free)
    2: np.greater,  # ogt
    3: np.greater_equal,  # oge
    4: np.less,  # olt
    5: np.less_equal,  # ole
    6: lambda x, y: (x != y) & ~np.isnan(x) & ~np.isnan(y),  # one
    7: lambda x, y: ~np.isnan(x) & ~np.isnan(y),  # ord
    8: lambda x, y: (x == y) | np.isnan(x) | np.isnan(y),  # ueq
    9: lambda x, y: ~(x <= y),  # ugt
    10: lambda x, y: ~(x < y),  # uge
    11: lambda x, y: ~(x >= y),  # ult
    12: lambda x, y: ~(x > y),  # ule
    13: np.not_equal,  # une (NaN != anything is True)
    14: lambda x, y: np.isnan(x) | np.isnan(y),  # uno
    15: lambda x, y: np.ones(np.broadcast(x, y).shape, bool),  # true
}

_CMPI: dict[int, Callable[[Any, Any], Any]] = {
    0: np.equal,
    1: np.not_equal,
    2: np.less,
    3: np.less_equal,
    4: np.greater,
    5: np.greater_equal,
    6: lambda a, b: np.less(_unsigned(a), _unsigned(b)),
    7: lambda a, b: np.less_equal(_unsigned(a), _unsigned(b)),
    8: lambda a, b: np.greater(_unsigned(a), _unsigned(b)),
    9: lambda a, b: np.greater_equal(_unsigned(a), _unsigned(b)),
}


def _table_impl(op_cls: type):
    fn = ARITH_MATH_IMPLS[op_cls]

    def run(self, interp: Interpreter, op, args: PythonValues):
        return (fit(fn(*args), op.result.type),)

    run.__name__ = f"run_{op_cls.__name__}"
    return run


def _with_table_impls(cls: type) -> type:
    """One `@impl` per op class of `ARITH_MATH_IMPLS`."""
    for op_cls in ARITH_MATH_IMPLS:
        setattr(cls, f"run_{op_cls.__name__}", impl(op_cls)(_table_impl(op_cls)))
    return cls


@register_impls
@_with_table_impls
class ScalarFunctions(InterpreterFunctions):
    """`arith` and `math` on numpy scalars and (broadcast) arrays, in the IR's dtypes."""

    @impl(arith.ConstantOp)
    def run_constant(self, interp: Interpreter, op: arith.ConstantOp, args: PythonValues):
        v = op.value
        t = op.result.type
        if isinstance(v, FloatAttr | IntegerAttr):
            data = v.value.data
            if isinstance(t, IntegerType) and t.width.data == 1:
                data = bool(data)
            return (fit(data, t),)
        if isinstance(v, DenseIntOrFPElementsAttr) and isinstance(t, ShapedType):
            vals = np.asarray(v.get_values(), dtype=numpy_dtype(t.element_type))
            return (np.asarray(fit(vals.reshape(tuple(t.get_shape())), t.element_type)),)
        raise NotImplementedError(f"interp: arith.constant {v}")

    @impl(arith.CmpfOp)
    def run_cmpf(self, interp: Interpreter, op: arith.CmpfOp, args: PythonValues):
        return (_CMPF[op.predicate.value.data](*args),)

    @impl(arith.CmpiOp)
    def run_cmpi(self, interp: Interpreter, op: arith.CmpiOp, args: PythonValues):
        return (_CMPI[op.predicate.value.data](*args),)


# ---------------------------------------------------------------------------------------------
# loop dialect


def _free_axes(kernel: loop.KernelOp) -> dict[loop.ForOp, tuple[int, int]]:
    """free loop -> (its axis = number of enclosing free loops in the kernel, the kernel's rank)."""
    depth: dict[loop.ForOp, int] = {}
    for op in kernel.walk():
        if isinstance(op, loop.ForOp) and op.kind.data == loop.LoopKind.FREE:
            depth[op] = sum(
                1 for p in loop.enclosing_ops(op, loop.ForOp) if p.kind.data == loop.LoopKind.FREE
            )
    rank = max(depth.values(), default=-1) + 1
    return {op: (d, rank) for op, d in depth.items()}


def _iv_range(v: SSAValue) -> tuple[int, int] | None:
    """[first, last] of a loop induction variable, or None for any other value."""
    if isinstance(v, BlockArgument) and v.index == 0:
        loop_op = v.block.parent_op()
        if isinstance(loop_op, loop.ForOp):
            lb, step = loop_op.lb.data, loop_op.step.data
            return lb, lb + step * (loop_op.extent - 1)
    return None


def _statically_in_bounds(op: loop.LoadOp | loop.StoreOp) -> bool:
    """Whether every coordinate provably stays inside the buffer (indices are loop IVs)."""
    ranges = [_iv_range(v) for v in op.indices]
    if any(r is None for r in ranges):
        return False
    shape = op.buffer.type.get_shape()
    try:
        bounds = [expr_range(e, ranges) for e in op.access_map().results]
    except VerifyException:
        return False
    return all(0 <= lo and hi < n for (lo, hi), n in zip(bounds, shape, strict=True))


def _check_in_bounds(op: loop.LoadOp | loop.StoreOp, coords: tuple, shape: tuple[int, ...]) -> None:
    for i, (c, n) in enumerate(zip(coords, shape, strict=True)):
        lo, hi = (int(c.min()), int(c.max())) if np.ndim(c) else (int(c), int(c))
        if lo < 0 or hi >= n:
            raise InterpretationError(
                f"{op.name} of {op.buffer.type}: coordinate {i} ranges over [{lo}, {hi}], "
                f"outside [0, {n - 1}]"
            )


def _coords(interp: Interpreter, op: loop.LoadOp | loop.StoreOp, idx: list[Any], shape) -> tuple:
    """The buffer coordinates of an access (broadcastable index arrays), bounds-checked unless
    the bounds were proven from the loop ranges once."""
    coords = affine_evaluator(op.map.data)(idx) if op.map is not None else tuple(idx)
    proven = interp.get_data(LoopFunctions, "in_bounds", dict)
    ok = proven.get(op)
    if ok is None:
        ok = proven[op] = _statically_in_bounds(op)
    if not ok:
        _check_in_bounds(op, coords, shape)
    return coords


class PrivateBuffer:
    """A `loop.private` buffer under vectorized free loops: one copy per lane of the free loops
    around it, stored as `data[lane..., coords...]`; accesses prepend the lane indices."""

    def __init__(self, data: np.ndarray, lanes: tuple):
        self.data, self.lanes = data, lanes

    def index(self, coords: tuple) -> tuple:
        return (*self.lanes, *coords)


def _new_private(interp: Interpreter, op: loop.PrivateOp) -> PrivateBuffer:
    axes = interp.get_data(LoopFunctions, "free_axes", dict)
    kernel = next(loop.enclosing_ops(op, loop.KernelOp))
    rank = next((axes[f][1] for f in kernel.walk() if isinstance(f, loop.ForOp) and f in axes), 0)
    sizes = [1] * rank
    for f in loop.enclosing_ops(op, loop.ForOp):
        if f.kind.data == loop.LoopKind.FREE:
            sizes[axes[f][0]] = f.extent
    lanes = tuple(np.arange(n).reshape([n if k == d else 1 for k in range(rank)])
                  for d, n in enumerate(sizes))
    t = op.result.type
    shape = (*sizes, *t.get_shape())
    return PrivateBuffer(np.full(shape, np.nan, dtype=numpy_dtype(t.element_type)), lanes)


@register_impls
class LoopFunctions(InterpreterFunctions):
    @impl(loop.ForOp)
    def run_for(self, interp: Interpreter, op: loop.ForOp, args: PythonValues):
        lb, ub, step = op.lb.data, op.ub.data, op.step.data
        if op.kind.data == loop.LoopKind.FREE:
            axis, rank = interp.get_data(LoopFunctions, "free_axes", dict)[op]
            shape = [1] * rank
            shape[axis] = len(range(lb, ub, step))
            iv = np.arange(lb, ub, step, dtype=np.int64).reshape(shape)
            interp.run_ssacfg_region(op.body, (iv,), "loop.for free")
            return ()
        accs = args
        for k in range(lb, ub, step):
            accs = interp.run_ssacfg_region(op.body, (np.int64(k), *accs), "loop.for reduce")
        return tuple(accs)

    @impl_terminator(loop.YieldOp)
    def run_yield(self, interp: Interpreter, op: loop.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(loop.PrivateOp)
    def run_private(self, interp: Interpreter, op: loop.PrivateOp, args: PythonValues):
        return (_new_private(interp, op),)

    @impl(loop.LoadOp)
    def run_load(self, interp: Interpreter, op: loop.LoadOp, args: PythonValues):
        buf, *idx = args
        if isinstance(buf, PrivateBuffer):
            coords = _coords(interp, op, idx, tuple(op.buffer.type.get_shape()))
            return (buf.data[buf.index(coords)],)
        return (buf[_coords(interp, op, idx, buf.shape)],)

    @impl(loop.StoreOp)
    def run_store(self, interp: Interpreter, op: loop.StoreOp, args: PythonValues):
        value, buf, *idx = args
        if isinstance(buf, PrivateBuffer):
            coords = _coords(interp, op, idx, tuple(op.buffer.type.get_shape()))
            *full, value = np.broadcast_arrays(*buf.index(coords), value)
            buf.data[tuple(full)] = value
            return ()
        coords = _coords(interp, op, idx, buf.shape)
        if np.ndim(value) or any(np.ndim(c) for c in coords):
            *coords, value = np.broadcast_arrays(*coords, value)
        buf[tuple(coords)] = value
        return ()

    @impl(loop.LaunchOp)
    def run_launch(self, interp: Interpreter, op: loop.LaunchOp, args: PythonValues):
        kernel = interp.get_op_for_symbol(op.callee)
        if not isinstance(kernel, loop.KernelOp):
            raise InterpretationError(
                f"{op.name}: @{op.callee.string_value()} is not a loop.kernel"
            )
        # each buffer in the shape the kernel reads it as (loop.same_elements): a view
        run_kernel(interp, kernel, tuple(
            b.reshape(a.type.get_shape()) if isinstance(b, np.ndarray) else b
            for a, b in zip(kernel.body.block.args, args)))
        return ()


def run_kernel(interp: Interpreter, kernel: loop.KernelOp, buffers: PythonValues) -> None:
    """Run a kernel's body on its buffers (loop.kernel is not a callable op: launches call this)."""
    axes = interp.get_data(LoopFunctions, "free_axes", dict)
    if kernel not in axes:
        axes.update(_free_axes(kernel))
        axes[kernel] = True
    interp.run_ssacfg_region(kernel.body, buffers, f"loop.kernel @{kernel.sym_name.data}")
