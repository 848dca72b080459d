"""The ATen op -> Torch IR table: one converter per captured op.

A converter gets the importer (for operand values), the FX node and the result type from the
node's metadata, and returns the SSA value of the op it built. A node whose target is not a key
here is an error naming the op and where it came from (see importer.py).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from deplo.dialects import torch as T
from deplo.frontend.importer import Importer

Converter = Callable[[Importer, torch.fx.Node, TensorType], SSAValue]


def _unary(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        return im.insert(T.UNARY_CLASSES[name](im.value(node.args[0]), rt), name)

    return convert


def _binary(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        a, b = node.args[0], node.args[1]
        va = im.value(a, rt)
        vb = im.value(b, rt)
        alpha = node.kwargs.get("alpha", 1)
        if name in ("add", "sub") and alpha != 1:
            vb = im.insert(
                T.MulOp(vb, im.value(float(alpha), rt), vb.type), "alpha"
            )
        return im.insert(T.BINARY_CLASSES[name](va, vb, rt), name)

    return convert


def _matmul(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    return im.insert(T.MatmulOp(im.value(node.args[0]), im.value(node.args[1]), rt), "matmul")


def _rms_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    args = list(node.args) + [None] * (4 - len(node.args))
    x, shape, weight, eps = args[:4]
    weight = node.kwargs.get("weight", weight)
    eps = node.kwargs.get("eps", eps)
    w = im.value(weight) if weight is not None else None
    return im.insert(T.RmsNormOp(im.value(x), w, list(shape), eps, rt), "rms_norm")


aten = torch.ops.aten
ATEN_CONVERTERS: dict[object, Converter] = {
    aten.add.Tensor: _binary("add"),
    aten.sub.Tensor: _binary("sub"),
    aten.mul.Tensor: _binary("mul"),
    aten.div.Tensor: _binary("div"),
    aten.maximum.default: _binary("maximum"),
    aten.minimum.default: _binary("minimum"),
    aten.relu.default: _unary("relu"),
    aten.neg.default: _unary("neg"),
    aten.exp.default: _unary("exp"),
    aten.rsqrt.default: _unary("rsqrt"),
    aten.sqrt.default: _unary("sqrt"),
    aten.tanh.default: _unary("tanh"),
    aten.sigmoid.default: _unary("sigmoid"),
    aten.silu.default: _unary("silu"),
    aten.matmul.default: _matmul,
    aten.mm.default: _matmul,
    aten.rms_norm.default: _rms_norm,
}


