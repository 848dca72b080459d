"""Interpreter for Torch IR on numpy, with PyTorch's semantics.

    torch.add / sub / mul / div / maximum / minimum    broadcasting, as aten
    torch.relu / neg / exp / rsqrt / sqrt / tanh / sigmoid / silu (= x * sigmoid(x))
    torch.matmul                                       1-D promotion and batch broadcast (np.matmul)
    torch.rms_norm                                     x * rsqrt(mean(x^2 over normalized dims) + eps) * weight
    torch.constant                                     a 0-d tensor

Like PyTorch on CPU, each op computes in its opmath type (float32 for f16/bf16) and rounds the
result to the tensor's dtype. rms_norm follows aten: (x * rsqrt(mean(x^2) + eps)) * weight all in
opmath, one rounding at the end; without `eps` it uses the machine epsilon of the opmath type
(float32's for f16/bf16 inputs, which is what torch does, not finfo(f16).eps).

The elementwise ops come from `torch.UNARY_OPS`/`BINARY_OPS`; `_TABLE` maps each to its numpy
function (checked at import), and one implementation per op is generated from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from deplo.dialects import torch as torch_d
from deplo.dialects.tir import ElementwiseKind as K
from deplo.runtime.interp.host import fit, opmath_dtype
from deplo.runtime.interp.tir import ELEMENTWISE_IMPLS


def relu(x: Any) -> Any:
    return np.maximum(x, x.dtype.type(0))


_TABLE: dict[str, Callable[..., Any]] = {
    "relu": relu,
    "neg": ELEMENTWISE_IMPLS[K.NEG],
    "exp": ELEMENTWISE_IMPLS[K.EXP],
    "rsqrt": ELEMENTWISE_IMPLS[K.RSQRT],
    "sqrt": ELEMENTWISE_IMPLS[K.SQRT],
    "tanh": ELEMENTWISE_IMPLS[K.TANH],
    "sigmoid": ELEMENTWISE_IMPLS[K.SIGMOID],
    "silu": ELEMENTWISE_IMPLS[K.SILU],
    "add": ELEMENTWISE_IMPLS[K.ADD],
    "sub": ELEMENTWISE_IMPLS[K.SUB],
    "mul": ELEMENTWISE_IMPLS[K.MUL],
    "div": ELEMENTWISE_IMPLS[K.DIV],
    "maximum": ELEMENTWISE_IMPLS[K.MAX],
    "minimum": ELEMENTWISE_IMPLS[K.MIN],
}
assert set(_TABLE) == set(torch_d.UNARY_OPS) | set(torch_d.BINARY_OPS), (
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


def _with_elementwise_impls(cls: type) -> type:
    """One `@impl` per generated elementwise op class, from `_TABLE`."""
    for name, op_cls in {**torch_d.UNARY_CLASSES, **torch_d.BINARY_CLASSES}.items():
        setattr(cls, f"run_{name}", impl(op_cls)(_elementwise_impl(name)))
    return cls


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
