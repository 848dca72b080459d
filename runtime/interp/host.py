"""Interpreter for the host side (memref buffers) and the value conventions every level shares.

Values are numpy arrays and numpy scalars of the IR's element type: f32 -> float32, f16 -> float16,
f64 -> float64, index -> int64, iN -> intN, i1 -> bool. bf16 has no numpy dtype: it is carried
as float32 holding values already rounded to bf16 (round-to-nearest-even after every op, `fit`).

`memref.alloc` buffers start as NaN (integer buffers as the type's minimum), so a kernel that
forgets to write an element shows up in the output instead of reading as a plausible zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ShapedType,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute

from deplo.runtime.ctypes_map import from_bf16_bits, to_bf16_bits

_DTYPES: dict[Attribute, np.dtype] = {}


def numpy_dtype(elt: Attribute) -> np.dtype:
    """The numpy dtype that carries values of an MLIR element type (bf16 -> float32)."""
    dt = _DTYPES.get(elt)
    if dt is None:
        if isinstance(elt, Float32Type | BFloat16Type):
            dt = np.dtype(np.float32)
        elif isinstance(elt, Float16Type):
            dt = np.dtype(np.float16)
        elif isinstance(elt, Float64Type):
            dt = np.dtype(np.float64)
        elif isinstance(elt, IndexType):
            dt = np.dtype(np.int64)
        elif isinstance(elt, IntegerType):
            width = elt.width.data
            if width == 1:
                dt = np.dtype(np.bool_)
            elif width in (8, 16, 32, 64):
                dt = np.dtype(f"int{width}")
            else:
                raise NotImplementedError(f"interp: no numpy dtype for {elt}")
        else:
            raise NotImplementedError(f"interp: no numpy dtype for {elt}")
        _DTYPES[elt] = dt
    return dt


def opmath_dtype(elt: Attribute) -> np.dtype:
    """The dtype PyTorch computes an op in (its "opmath" type): float32 for f16/bf16."""
    if isinstance(elt, Float16Type | BFloat16Type):
        return np.dtype(np.float32)
    return numpy_dtype(elt)


def round_bf16(x: Any) -> Any:
    """float32 values rounded to the nearest bf16 (ties to even), still as float32."""
    a = np.asarray(x, dtype=np.float32)
    out = np.where(np.isnan(a), a, from_bf16_bits(to_bf16_bits(a)))
    return out[()] if out.ndim == 0 else out


def fit(value: Any, elt: Attribute) -> Any:
    """`value` as the numpy carrier of `elt`: cast when the dtype differs, bf16 rounded."""
    dt = numpy_dtype(elt)
    if getattr(value, "dtype", None) != dt:
        value = np.asarray(value).astype(dt)
        if value.ndim == 0:
            value = value[()]
    if isinstance(elt, BFloat16Type):
        value = round_bf16(value)
    return value


def element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, ShapedType) else t


def to_value(x: Any, t: Attribute) -> Any:
    """An input array converted to the carrier of an argument type (a fresh copy for shaped
    types; a shape mismatch raises). bf16 inputs may be float arrays (rounded to bf16) or uint16
    bit patterns, the CPU/GPU runtimes' form."""
    if isinstance(t, ShapedType):
        shape = tuple(t.get_shape())
        if isinstance(t.element_type, BFloat16Type) and np.asarray(x).dtype == np.uint16:
            x = (np.asarray(x).astype(np.uint32) << np.uint32(16)).view(np.float32)
        a = np.array(x, dtype=numpy_dtype(t.element_type), copy=True)
        if a.shape != shape:
            raise ValueError(f"interp: expected an input of shape {shape} for {t}, got {a.shape}")
        if isinstance(t.element_type, BFloat16Type):
            a = np.asarray(round_bf16(a))
        return a
    return fit(x, t)


def new_buffer(t: MemRefType) -> np.ndarray:
    """A fresh buffer for a memref type: NaN for floats, the minimum for integers, False for i1."""
    dt = numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    if dt.kind == "f":
        return np.full(shape, np.nan, dtype=dt)
    if dt.kind == "b":
        return np.zeros(shape, dtype=dt)
    return np.full(shape, np.iinfo(dt).min, dtype=dt)


@register_impls
class HostFunctions(InterpreterFunctions):
    """memref ops on numpy buffers: what a host function (and a kernel-level body) uses."""

    @impl(memref.AllocOp)
    def run_alloc(self, interp: Interpreter, op: memref.AllocOp, args: PythonValues):
        if args:
            raise NotImplementedError("interp: memref.alloc with dynamic sizes")
        return (new_buffer(op.memref.type),)

    @impl(memref.AllocaOp)
    def run_alloca(self, interp: Interpreter, op: memref.AllocaOp, args: PythonValues):
        if args:
            raise NotImplementedError("interp: memref.alloca with dynamic sizes")
        return (new_buffer(op.memref.type),)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interp: Interpreter, op: memref.DeallocOp, args: PythonValues):
        return ()

    @impl(memref.CopyOp)
    def run_copy(self, interp: Interpreter, op: memref.CopyOp, args: PythonValues):
        src, dst = args
        dst[...] = src
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interp: Interpreter, op: memref.LoadOp, args: PythonValues):
        buf, *idx = args
        return (buf[tuple(idx)],)

    @impl(memref.StoreOp)
    def run_store(self, interp: Interpreter, op: memref.StoreOp, args: PythonValues):
        value, buf, *idx = args
        if any(np.ndim(i) for i in idx) or np.ndim(value):
            *idx, value = np.broadcast_arrays(*idx, value)
        buf[tuple(idx)] = value
        return ()
