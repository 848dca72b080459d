"""Interpreter for Torch IR on numpy, with PyTorch's semantics.

    torch.add / sub / mul / div / maximum / minimum / pow    broadcasting, as aten
    torch.relu / neg / exp / rsqrt / sqrt / tanh / sigmoid / silu (= x * sigmoid(x)) / cos / sin
        / abs / log / erf
    torch.eq / ne / lt / le / gt / ge, logical_and / or      bool results
    torch.sum / mean / amax / amin                     over `dim`, keepdim
    torch.cumsum / cumprod / cummax / cummin, argmax / argmin   along `dim` (0-d: dim 0)
    torch.gather                                       np.take_along_axis
    torch.conv / max_pool / avg_pool                   window offset by offset on the padded input
    torch.matmul                                       1-D promotion and batch broadcast (np.matmul)
    torch.linear                                       x @ w.T + b
    torch.gelu                                         erf form, or the tanh approximation
    torch.softmax / layer_norm                         in opmath, one rounding at the end
    torch.rms_norm                                     x * rsqrt(mean(x^2 over normalized dims) + eps) * weight
    torch.to / where / constant                        dtype conversion, select, a 0-d tensor

Like PyTorch on CPU, each op computes in its opmath type (float32 for f16/bf16) and rounds the
result to the tensor's dtype. rms_norm follows aten: (x * rsqrt(mean(x^2) + eps)) * weight all in
opmath, one rounding at the end; without `eps` it uses the machine epsilon of the opmath type
(float32's for f16/bf16 inputs, which is what torch does, not finfo(f16).eps).

The elementwise ops come from `torch.UNARY_OPS`/`BINARY_OPS`; `_TABLE` maps each to its numpy
function (checked at import), and one implementation per op is generated from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from deplo.dialects import torch as torch_d
from deplo.dialects.tir import CompareKind as CK
from deplo.dialects.tir import ElementwiseKind as K
from deplo.runtime.interp.host import fit, numpy_dtype, opmath_dtype
from deplo.runtime.interp.tir import COMPARE_IMPLS, ELEMENTWISE_IMPLS, erf


def relu(x: Any) -> Any:
    return np.maximum(x, x.dtype.type(0))


# a torch op named as a tir kind computes as that kind
_TABLE: dict[str, Callable[..., Any]] = {
    "relu": relu,
    "reciprocal": np.reciprocal,
    "maximum": ELEMENTWISE_IMPLS[K.MAX],
    "minimum": ELEMENTWISE_IMPLS[K.MIN],
    "bitwise_and": ELEMENTWISE_IMPLS[K.AND],
    "bitwise_or": ELEMENTWISE_IMPLS[K.OR],
    "bitwise_xor": ELEMENTWISE_IMPLS[K.XOR],
    "bitwise_left_shift": ELEMENTWISE_IMPLS[K.SHL],
    "bitwise_right_shift": ELEMENTWISE_IMPLS[K.SHR],
    **{name: ELEMENTWISE_IMPLS[K(name)] for name in (*torch_d.UNARY_OPS, *torch_d.BINARY_OPS)
       if name in {k.value for k in K}},
}
assert set(_TABLE) == set(torch_d.UNARY_OPS) | set(torch_d.BINARY_OPS) | set(torch_d.BITWISE_OPS), (
    "a torch op has no interpreter"
)


def _elementwise_impl(name: str):
    fn = _TABLE[name]

    def run(self, interp: Interpreter, op, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        return (np.asarray(fit(fn(*(np.asarray(a, dtype=dt) for a in args)), elt)),)

    run.__name__ = f"run_{name}"
    return run


# comparisons (in the operands' opmath type) and logical ops: numpy functions giving bool
_PREDICATES: dict[str, Callable[..., Any]] = {
    "eq": COMPARE_IMPLS[CK.EQ],
    "ne": COMPARE_IMPLS[CK.NE],
    "lt": COMPARE_IMPLS[CK.LT],
    "le": COMPARE_IMPLS[CK.LE],
    "gt": COMPARE_IMPLS[CK.GT],
    "ge": COMPARE_IMPLS[CK.GE],
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}
assert set(_PREDICATES) == set(torch_d.COMPARE_OPS) | set(torch_d.LOGICAL_OPS), (
    "a torch comparison has no interpreter"
)


def _predicate_impl(name: str):
    fn = _PREDICATES[name]

    def run(self, interp: Interpreter, op, args: PythonValues):
        dt = opmath_dtype(op.lhs.type.element_type)
        return (np.asarray(fn(*(np.asarray(a, dtype=dt) for a in args))),)

    run.__name__ = f"run_{name}"
    return run


def _extreme(fn: Callable[..., Any], identity: float) -> Callable[..., Any]:
    """amax / amin over `axis` (an empty one gives the identity: torch's empty softmax rows;
    an integer's extreme for integers)."""

    def run(x: Any, axis: tuple[int, ...], keepdims: bool) -> Any:
        if x.dtype.kind == "b":  # False < True
            init = identity > 0
        elif x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            init = info.min if identity < 0 else info.max
        else:
            init = identity
        return fn(x, axis=axis, keepdims=keepdims, initial=init) if axis else x

    return run


# reductions over `dim` (in opmath: f16/bf16 sums accumulate in float32, as torch does)
_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    "mean": lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims) if axis else x,
    "amax": _extreme(np.max, -np.inf),
    "amin": _extreme(np.min, np.inf),
    "prod": lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
}
assert set(_REDUCTIONS) == set(torch_d.REDUCTION_OPS), "a torch reduction has no interpreter"


def _reduction_impl(name: str):
    fn = _REDUCTIONS[name]

    def run(self, interp: Interpreter, op, args: PythonValues):
        elt = op.result.type.element_type
        x = np.asarray(args[0], dtype=opmath_dtype(elt))
        dims = tuple(d for d in op.dim.get_values() if d < x.ndim)  # 0-d: dim 0 is the tensor
        return (np.asarray(fit(fn(x, dims, op.keepdim is not None), elt)),)

    run.__name__ = f"run_{name}"
    return run


def _with_elementwise_impls(cls: type) -> type:
    """One `@impl` per generated op class: elementwise from `_TABLE`, comparisons and logical
    ops from `_PREDICATES`, reductions from `_REDUCTIONS`, scans, arg-reductions and pooling
    from `_TABLE_IMPLS`."""
    for name, op_cls in {**torch_d.UNARY_CLASSES, **torch_d.BINARY_CLASSES,
                         **torch_d.BITWISE_CLASSES}.items():
        setattr(cls, f"run_{name}", impl(op_cls)(_elementwise_impl(name)))
    for name, op_cls in {**torch_d.COMPARE_CLASSES, **torch_d.LOGICAL_CLASSES}.items():
        setattr(cls, f"run_{name}", impl(op_cls)(_predicate_impl(name)))
    for name, op_cls in torch_d.REDUCTION_CLASSES.items():
        setattr(cls, f"run_{name}", impl(op_cls)(_reduction_impl(name)))
    classes = {**torch_d.ALONG_DIM_CLASSES, **torch_d.ARG_CLASSES, **torch_d.POOL_CLASSES}
    for name, run in _TABLE_IMPLS.items():
        setattr(cls, f"run_{name}",
                impl(classes[name])(lambda self, interp, op, args, run=run: run(op, args[0])))
    return cls


def gelu(x: Any, approximate: str) -> Any:
    """aten.gelu in x's dtype: x * Φ(x) exactly (erf), or with the tanh approximation."""
    half, one = x.dtype.type(0.5), x.dtype.type(1)
    if approximate == "tanh":
        k = x.dtype.type(math.sqrt(2 / math.pi))
        return half * x * (one + np.tanh(k * (x + x.dtype.type(0.044715) * x * x * x)))
    return half * x * (one + erf(x * x.dtype.type(1 / math.sqrt(2))))


def _check_indices(op, args) -> None:
    """Index values must address their dim (torch raises too; the op's index_ranges: negative
    ones count from the end where torch allows them)."""
    for v, n, low in op.index_ranges():
        idx = np.asarray(args[op.operands.index(v)])
        if idx.size and (idx.max() >= n or idx.min() < low):
            raise InterpretationError(
                f"{op.name}: index values range over [{idx.min()}, {idx.max()}], outside a dim "
                f"of {n}")


def _along_dim(op, x: Any, fn: Callable[..., Any]) -> PythonValues:
    elt = op.result.type.element_type
    x = np.asarray(x, dtype=opmath_dtype(elt))
    y = fn(x.reshape(1), axis=0).reshape(()) if x.ndim == 0 else fn(x, axis=op.dim.value.data % x.ndim)
    return (np.asarray(fit(y, elt)),)


def _arg(op, x: Any, fn: Callable[..., Any]) -> PythonValues:
    x = np.asarray(x)
    if x.ndim == 0:
        return (np.asarray(0, dtype=np.int64),)
    return (np.asarray(fn(x, axis=op.dim.value.data % x.ndim, keepdims=op.keepdim is not None)),)


def _window(k, dil, st, out) -> tuple[slice, ...]:
    """The strided slices of a padded input that window offset k reads for every output."""
    return tuple(slice(i * d, i * d + (n - 1) * s + 1, s) for i, d, n, s in zip(k, dil, out, st))


def _pool(op, x: Any, pad: float, combine: Any) -> PythonValues:
    """Max or average over each window (avg: the divisor counts what count_include_pad says)."""
    elt = op.result.type.element_type
    x = np.asarray(x, dtype=np.float64)
    st, lo, hi, dil = op.window()
    kernel = list(op.kernel.get_values())
    n, out = len(kernel), tuple(op.result.type.get_shape())[-len(kernel):]
    lead = [(0, 0)] * (x.ndim - n)
    xp = np.pad(x, [*lead, *zip(lo, hi)], constant_values=pad)
    y = None
    for k in np.ndindex(*kernel):
        patch = xp[(..., *_window(k, dil, st, out))]
        y = patch if y is None else combine(y, patch)
    if combine is np.add:
        div = op.divisor_override
        y = y / (div.value.data if div is not None else _pool_divisor(op, x.shape[-n:], out, kernel))
    return (np.asarray(fit(y, elt)),)


def _pool_divisor(op, size, out, kernel) -> np.ndarray:
    """aten's avg_pool divisor per output position: the window clipped to the padded input
    (count_include_pad) or to the input."""
    st, lo, _, _ = op.window()
    div = np.ones(())
    for i, (n, o, k) in enumerate(zip(size, out, kernel)):
        start = np.arange(o) * st[i] - lo[i]
        end = np.minimum(start + k, n + lo[i])
        if op.count_include_pad is None:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        div = np.multiply.outer(div, end - start)
    return div


_TABLE_IMPLS: dict[str, Callable[..., PythonValues]] = {
    "cumsum": lambda op, x: _along_dim(op, x, np.cumsum),
    "cumprod": lambda op, x: _along_dim(op, x, np.cumprod),
    "cummax": lambda op, x: _along_dim(op, x, np.maximum.accumulate),
    "cummin": lambda op, x: _along_dim(op, x, np.minimum.accumulate),
    "argmax": lambda op, x: _arg(op, x, np.argmax),
    "argmin": lambda op, x: _arg(op, x, np.argmin),
    "max_pool": lambda op, x: _pool(op, x, -np.inf, np.maximum),
    "avg_pool": lambda op, x: _pool(op, x, 0.0, np.add),
}


@register_impls
@_with_elementwise_impls
class TorchFunctions(InterpreterFunctions):
    @impl(torch_d.ConstantOp)
    def run_constant(self, interp: Interpreter, op: torch_d.ConstantOp, args: PythonValues):
        return (np.asarray(fit(op.value.value.data, op.result.type.element_type)),)

    @impl(torch_d.MatmulOp)
    def run_matmul(self, interp: Interpreter, op: torch_d.MatmulOp, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        a, b = (np.asarray(x, dtype=dt) for x in args)
        return (np.asarray(fit(np.matmul(a, b), elt)),)

    @impl(torch_d.RmsNormOp)
    def run_rms_norm(self, interp: Interpreter, op: torch_d.RmsNormOp, args: PythonValues):
        x, *weight = args
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        xf = np.asarray(x, dtype=dt)
        nd = len(op.normalized_shape.get_values())
        eps = dt.type(op.eps.value.data if op.eps is not None else np.finfo(dt).eps)
        mean_sq = np.mean(xf * xf, axis=tuple(range(-nd, 0)), keepdims=True, dtype=dt)
        y = xf * np.reciprocal(np.sqrt(mean_sq + eps))
        if weight:
            y = y * np.asarray(weight[0], dtype=dt)
        return (np.asarray(fit(y, elt)),)

    # views, data movement, creation, attention

    @impl(torch_d.ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: torch_d.ReshapeOp, args: PythonValues):
        return (np.reshape(args[0], tuple(op.result.type.get_shape())).copy(),)

    @impl(torch_d.PermuteOp)
    def run_permute(self, interp: Interpreter, op: torch_d.PermuteOp, args: PythonValues):
        x = np.asarray(args[0])
        return (np.transpose(x, [d % x.ndim for d in op.dims.get_values()]).copy(),)

    @impl(torch_d.TransposeOp)
    def run_transpose(self, interp: Interpreter, op: torch_d.TransposeOp, args: PythonValues):
        x = np.asarray(args[0])
        return (np.swapaxes(x, op.dim0.value.data, op.dim1.value.data).copy(),)

    @impl(torch_d.ExpandOp)
    def run_expand(self, interp: Interpreter, op: torch_d.ExpandOp, args: PythonValues):
        return (np.broadcast_to(args[0], tuple(op.result.type.get_shape())).copy(),)

    @impl(torch_d.UnsqueezeOp)
    def run_unsqueeze(self, interp: Interpreter, op: torch_d.UnsqueezeOp, args: PythonValues):
        return (np.reshape(args[0], tuple(op.result.type.get_shape())).copy(),)

    @impl(torch_d.SqueezeOp)
    def run_squeeze(self, interp: Interpreter, op: torch_d.SqueezeOp, args: PythonValues):
        return (np.reshape(args[0], tuple(op.result.type.get_shape())).copy(),)

    @impl(torch_d.SliceOp)
    def run_slice(self, interp: Interpreter, op: torch_d.SliceOp, args: PythonValues):
        x = np.asarray(args[0])
        d = op.dim.value.data % x.ndim
        step = op.step.value.data
        start, n = torch_d.slice_range(x.shape[d], op.start.value.data, op.end.value.data, step)
        index = [slice(None)] * x.ndim
        index[d] = slice(start, start + step * n, step) if n else slice(0, 0)
        return (x[tuple(index)].copy(),)

    @impl(torch_d.SelectOp)
    def run_select(self, interp: Interpreter, op: torch_d.SelectOp, args: PythonValues):
        x = np.asarray(args[0])
        return (np.take(x, op.index.value.data, axis=op.dim.value.data % x.ndim).copy(),)

    @impl(torch_d.CatOp)
    def run_cat(self, interp: Interpreter, op: torch_d.CatOp, args: PythonValues):
        xs = [np.asarray(a) for a in args]
        return (np.concatenate(xs, axis=op.dim.value.data % xs[0].ndim),)

    @impl(torch_d.EmbeddingOp)
    def run_embedding(self, interp: Interpreter, op: torch_d.EmbeddingOp, args: PythonValues):
        w, ids = (np.asarray(a) for a in args)
        _check_indices(op, args)
        return (w[ids],)

    @impl(torch_d.IndexOp)
    def run_index(self, interp: Interpreter, op: torch_d.IndexOp, args: PythonValues):
        x, *idx = (np.asarray(a) for a in args)
        index: list[Any] = [slice(None)] * x.ndim
        _check_indices(op, args)
        for d, i in zip(op.dims.get_values(), idx):
            index[d] = i
        return (np.asarray(x[tuple(index)]),)

    @impl(torch_d.ArangeOp)
    def run_arange(self, interp: Interpreter, op: torch_d.ArangeOp, args: PythonValues):
        elt = op.result.type.element_type
        start, step = op.start.value.data, op.step.value.data
        (n,) = op.result.type.get_shape()
        if np.dtype(numpy_dtype(elt)).kind in "iu":  # integer arange counts in integers
            return (np.asarray(fit(int(start) + int(step) * np.arange(n, dtype=np.int64), elt)),)
        # torch computes start + i * step in double, then rounds to the dtype
        return (np.asarray(fit(start + step * np.arange(n, dtype=np.float64), elt)),)

    @impl(torch_d.FullOp)
    def run_full(self, interp: Interpreter, op: torch_d.FullOp, args: PythonValues):
        t = op.result.type
        v = fit(op.value.value.data, t.element_type)
        return (np.full(tuple(t.get_shape()), v, dtype=np.asarray(v).dtype),)

    @impl(torch_d.SdpaOp)
    def run_sdpa(self, interp: Interpreter, op: torch_d.SdpaOp, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        q, k, v = (np.asarray(a, dtype=dt) for a in args[:3])
        if op.enable_gqa is not None and q.shape[-3] != k.shape[-3]:
            g = q.shape[-3] // k.shape[-3]
            k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
        scale = op.scale.value.data if op.scale is not None else 1.0 / np.sqrt(q.shape[-1])
        s = np.matmul(q, np.swapaxes(k, -1, -2)) * dt.type(scale)
        if op.is_causal is not None:
            keep = np.tril(np.ones(s.shape[-2:], dtype=bool))
            s = np.where(keep, s, dt.type(-np.inf))
        if op.attn_mask is not None:
            m = np.asarray(args[3])
            s = np.where(m, s, dt.type(-np.inf)) if m.dtype == np.bool_ else s + m.astype(dt)
        top = np.max(s, axis=-1, keepdims=True)
        with np.errstate(invalid="ignore"):
            e = np.exp(s - top)
            p = e / np.sum(e, axis=-1, keepdims=True)
        p = np.where(top == -np.inf, dt.type(0), p)  # a row masked whole: 0 (safe softmax)
        return (np.asarray(fit(np.matmul(p, v), elt)),)

    @impl(torch_d.LinearOp)
    def run_linear(self, interp: Interpreter, op: torch_d.LinearOp, args: PythonValues):
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        x, w, *bias = (np.asarray(a, dtype=dt) for a in args)
        y = np.matmul(x, w.T)
        return (np.asarray(fit(y + bias[0] if bias else y, elt)),)

    @impl(torch_d.GeluOp)
    def run_gelu(self, interp: Interpreter, op: torch_d.GeluOp, args: PythonValues):
        elt = op.result.type.element_type
        x = np.asarray(args[0], dtype=opmath_dtype(elt))
        return (np.asarray(fit(gelu(x, op.approximation), elt)),)

    @impl(torch_d.SoftmaxOp)
    def run_softmax(self, interp: Interpreter, op, args: PythonValues):
        elt = op.result.type.element_type
        x = np.asarray(args[0], dtype=opmath_dtype(elt))
        if x.ndim == 0 or x.size == 0:
            return (np.asarray(fit(np.ones_like(x), elt)),)
        axis = op.dim.value.data % x.ndim
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return (np.asarray(fit(e / np.sum(e, axis=axis, keepdims=True), elt)),)

    @impl(torch_d.GatherOp)
    def run_gather(self, interp: Interpreter, op: torch_d.GatherOp, args: PythonValues):
        x, idx = (np.asarray(a) for a in args)
        d = op.dim.value.data % max(x.ndim, 1)
        _check_indices(op, args)
        if x.ndim == 0:
            return (np.asarray(x[()] if idx.ndim == 0 else np.full(idx.shape, x)),)
        return (np.take_along_axis(x, idx.astype(np.int64), axis=d),)

    @impl(torch_d.ConvOp)
    def run_conv(self, interp: Interpreter, op: torch_d.ConvOp, args: PythonValues):
        x, w, *bias = (np.asarray(a, dtype=np.float64) for a in args)
        st, lo, hi, dil = op.window()
        out_shape = tuple(op.result.type.get_shape())
        g = op.groups.value.data
        xp = np.pad(x, [(0, 0), (0, 0), *zip(lo, hi)])
        y = np.zeros(out_shape)
        og, cg = w.shape[0] // g, w.shape[1]
        for k in np.ndindex(*w.shape[2:]):
            patch = xp[(..., *_window(k, dil, st, out_shape[2:]))]
            for j in range(g):
                y[:, j * og:(j + 1) * og] += np.einsum(
                    "nc...,oc->no...", patch[:, j * cg:(j + 1) * cg], w[j * og:(j + 1) * og, :, *k])
        if bias:
            y += bias[0].reshape(-1, *[1] * len(st))
        return (np.asarray(fit(y, op.result.type.element_type)),)

    @impl(torch_d.LayerNormOp)
    def run_layer_norm(self, interp: Interpreter, op: torch_d.LayerNormOp, args: PythonValues):
        x, *affine = args
        elt = op.result.type.element_type
        dt = opmath_dtype(elt)
        xf = np.asarray(x, dtype=dt)
        axes = tuple(range(-len(op.normalized_shape.get_values()), 0))
        mean = np.mean(xf, axis=axes, keepdims=True)
        xc = xf - mean
        var = np.mean(xc * xc, axis=axes, keepdims=True)
        y = xc * np.reciprocal(np.sqrt(var + dt.type(op.eps.value.data)))
        if affine:
            y = y * np.asarray(affine[0], dtype=dt)
        if len(affine) > 1:
            y = y + np.asarray(affine[1], dtype=dt)
        return (np.asarray(fit(y, elt)),)

    @impl(torch_d.ToOp)
    def run_to(self, interp: Interpreter, op: torch_d.ToOp, args: PythonValues):
        return (np.asarray(fit(np.asarray(args[0]), op.result.type.element_type)),)

    @impl(torch_d.WhereOp)
    def run_where(self, interp: Interpreter, op: torch_d.WhereOp, args: PythonValues):
        c, a, b = (np.asarray(x) for x in args)
        return (np.asarray(fit(np.where(c, a, b), op.result.type.element_type)),)
