"""The ATen op -> Torch IR table: one converter per captured op, and the context they share.

A converter gets the `Importer` (operand values, the builder), the FX node and the result type
from the node's metadata, and returns the SSA value of the op it built. A node whose target is
not a key here is an error naming the op and where it came from (see importer.py, which walks
the graph and imports this module; this module never imports it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from xdsl.builder import Builder
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from deplo.dialects import torch as T
from deplo.frontend import expr as expr_module
from deplo.frontend.dtypes import mlir_element_type, to_numpy
from deplo.frontend.errors import FrontendError
from deplo.frontend.fold import StaticEvaluator


def tensor_type(value) -> TensorType:
    """The MLIR type of a FakeTensor/Tensor from the exported graph's metadata."""
    return TensorType(mlir_element_type(value.dtype), list(value.shape))


def where_from(node: torch.fx.Node) -> str:
    """`in <module path> at file:line: code` from an FX node's metadata, for error messages."""
    parts = []
    stack = node.meta.get("nn_module_stack")
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            parts.append(f"in module '{path}'")
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    if trace and expr_module.__file__ in "".join(trace[-2:]):
        parts.append("in the expression")
    elif len(trace) >= 2:
        parts.append(f"at {trace[-2].strip()}: {trace[-1].strip()}")
    return " ".join(parts) or "(no source location recorded)"


class Importer:
    def __init__(self, block: Block, static: StaticEvaluator | None = None):
        self.block = block
        self.builder = Builder(InsertPoint.at_end(block))
        self.values: dict[torch.fx.Node, SSAValue] = {}
        self.static = static or StaticEvaluator({})
        self.constants: dict[str, np.ndarray] = {}

    def value(self, arg, like: TensorType | None = None) -> SSAValue:
        """An SSA value for an FX argument; a Python number becomes a 0-d torch.constant, and a
        folded tensor a constant argument of @main (`%const.NAME`)."""
        if isinstance(arg, torch.fx.Node):
            if arg not in self.values and self.static.is_static(arg):
                self.values[arg] = self._constant_arg(arg)
            return self.values[arg]
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            elt = like.element_type if like is not None else mlir_element_type(torch.float32)
            return self.insert(T.ConstantOp(float(arg), TensorType(elt, [])), "cst")
        raise FrontendError(f"unsupported argument {arg!r}")

    def static_value(self, arg):
        """The folded value of a static FX node (a tensor or Python value), else None."""
        return self.static.values.get(arg) if isinstance(arg, torch.fx.Node) else None

    def _constant_arg(self, node: torch.fx.Node) -> SSAValue:
        tensor = self.static.values[node]
        if not isinstance(tensor, torch.Tensor):
            raise FrontendError(f"folded value {node.name} is not a tensor: {tensor!r}")
        name = f"const.{node.name}"
        arg = self.block.insert_arg(tensor_type(tensor), len(self.block.args))
        arg.name_hint = name
        self.constants[name] = to_numpy(tensor)
        return arg

    def insert(self, op, hint: str | None = None) -> SSAValue:
        self.builder.insert(op)
        if hint:
            op.results[0].name_hint = hint
        return op.results[0]


Converter = Callable[[Importer, torch.fx.Node, TensorType], SSAValue]


def _unary(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        return im.insert(T.UNARY_CLASSES[name](im.value(node.args[0]), rt), name)

    return convert


def _binary(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        a, b = node.args[0], node.args[1]
        va = _as_dtype(im, im.value(a, rt), rt.element_type)
        vb = _as_dtype(im, im.value(b, rt), rt.element_type)
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


# --- views, data movement, creation, attention ------------------------------------------------


def _arg(node: torch.fx.Node, i: int, name: str, default=None):
    """Argument `name` of an ATen call, positional (index i) or keyword."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _rank(v: SSAValue) -> int:
    return v.type.get_num_dims()


def _norm(d: int, rank: int) -> int:
    return d % rank if rank else 0


def _identity(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """alias, contiguous, clone, detach, lift_fresh_copy: values are immutable here."""
    return im.value(node.args[0])


def _to(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """aten.to.device / to.dtype_layout: only the device (CPU/GPU is decided later) — identity."""
    x = im.value(node.args[0])
    if x.type != rt:
        raise FrontendError(f"unsupported dtype change in '{node.target}': {x.type} -> {rt}")
    return x


def _view(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        return x if x.type == rt else im.insert(T.ReshapeOp(x, rt), name)

    return convert


def _permute(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    dims = [_norm(d, _rank(x)) for d in node.args[1]]
    return im.insert(T.PermuteOp(x, dims, rt), "permute")


def _transpose(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    a, b = (_norm(d, _rank(x)) for d in node.args[1:3])
    return x if a == b else im.insert(T.TransposeOp(x, a, b, rt), "transpose")


def _t(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    return x if _rank(x) < 2 else im.insert(T.TransposeOp(x, 0, 1, rt), "t")


def _expand(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    return x if x.type == rt else im.insert(T.ExpandOp(x, rt), "expand")


def _unsqueeze(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    return im.insert(T.UnsqueezeOp(x, node.args[1] % (_rank(x) + 1), rt), "unsqueeze")


def _squeeze(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """squeeze.default (every size-1 dim), squeeze.dim, squeeze.dims."""
    x = im.value(node.args[0])
    shape = x.type.get_shape()
    if len(node.args) > 1:
        given = node.args[1] if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
        dims = sorted({_norm(d, len(shape)) for d in given})
    else:
        dims = list(range(len(shape)))
    dims = [d for d in dims if d < len(shape) and shape[d] == 1]
    return im.insert(T.SqueezeOp(x, dims, rt), "squeeze") if dims else x


INT64_MAX = 2**63 - 1


def _slice(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    dim = _norm(_arg(node, 1, "dim", 0), _rank(x))
    start = _arg(node, 2, "start")
    end = _arg(node, 3, "end")
    step = _arg(node, 4, "step", 1)
    start = 0 if start is None else start
    end = INT64_MAX if end is None else min(end, INT64_MAX)
    if x.type == rt and step == 1:  # x[:] and the like
        return x
    return im.insert(T.SliceOp(x, dim, start, end, step, rt), "slice")


def _select(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    return im.insert(T.SelectOp(x, _norm(node.args[1], _rank(x)), node.args[2], rt), "select")


def _cat(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    xs = [im.value(t) for t in node.args[0]]
    # torch skips legacy empty 1-D inputs (a KV cache's first `torch.tensor([])`)
    xs = [x for x in xs if list(x.type.get_shape()) != [0] or rt.get_num_dims() == 1] or xs[:1]
    if len(xs) == 1:
        return xs[0]
    dim = _norm(_arg(node, 1, "dim", 0), rt.get_num_dims())
    return im.insert(T.CatOp(xs, dim, rt), "cat")


def _embedding(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    w, ids = im.value(node.args[0]), im.value(node.args[1])
    return im.insert(T.EmbeddingOp(w, ids, rt), "embedding")


def _index(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    dims = [i for i, t in enumerate(node.args[1]) if t is not None]
    idx = [im.value(t) for t in node.args[1] if t is not None]
    for v in idx:
        if str(v.type.element_type) == "i1":
            raise FrontendError(f"unsupported boolean mask index in '{node.target}' {where_from(node)}")
    return im.insert(T.IndexOp(x, idx, dims, rt), "index")


def _arange(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """arange.default (end), arange.start (start, end), arange.start_step (start, end, step)."""
    args = list(node.args)
    if node.target == aten.arange.default:
        start, end, step = 0, args[0], 1
    else:
        start, end = args[0], args[1]
        step = args[2] if len(args) > 2 else node.kwargs.get("step", 1)
    return im.insert(T.ArangeOp(start, end, step, rt), "arange")


def _full(value_at: int | None, value: float = 0.0) -> Converter:
    """full / new_full / full_like (the fill value is argument `value_at`), ones / zeros /
    new_ones / new_zeros / ones_like / zeros_like (a fixed value)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        v = node.args[value_at] if value_at is not None else value
        return im.insert(T.FullOp(float(v), rt), "full")

    return convert


def _sdpa(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    q, k, v = (im.value(a) for a in node.args[:3])
    mask = _arg(node, 3, "attn_mask")
    if _arg(node, 4, "dropout_p", 0.0) != 0.0:
        raise FrontendError(f"unsupported dropout in scaled_dot_product_attention {where_from(node)}")
    return im.insert(
        T.SdpaOp(
            q, k, v, im.value(mask) if mask is not None else None, rt,
            is_causal=bool(_arg(node, 5, "is_causal", False)),
            scale=node.kwargs.get("scale"),
            enable_gqa=bool(node.kwargs.get("enable_gqa", False)),
        ),
        "sdpa",
    )


SHAPE_CONVERTERS: dict[object, Converter] = {
    torch.ops.aten.view.default: _view("view"),
    torch.ops.aten.reshape.default: _view("reshape"),
    torch.ops.aten._unsafe_view.default: _view("view"),
    torch.ops.aten.permute.default: _permute,
    torch.ops.aten.transpose.int: _transpose,
    torch.ops.aten.t.default: _t,
    torch.ops.aten.expand.default: _expand,
    torch.ops.aten.unsqueeze.default: _unsqueeze,
    torch.ops.aten.squeeze.default: _squeeze,
    torch.ops.aten.squeeze.dim: _squeeze,
    torch.ops.aten.squeeze.dims: _squeeze,
    torch.ops.aten.slice.Tensor: _slice,
    torch.ops.aten.select.int: _select,
    torch.ops.aten.cat.default: _cat,
    torch.ops.aten.embedding.default: _embedding,
    torch.ops.aten.index.Tensor: _index,
    torch.ops.aten.arange.default: _arange,
    torch.ops.aten.arange.start: _arange,
    torch.ops.aten.arange.start_step: _arange,
    torch.ops.aten.full.default: _full(1),
    torch.ops.aten.new_full.default: _full(2),
    torch.ops.aten.full_like.default: _full(1),
    torch.ops.aten.ones.default: _full(None, 1.0),
    torch.ops.aten.zeros.default: _full(None, 0.0),
    torch.ops.aten.new_ones.default: _full(None, 1.0),
    torch.ops.aten.new_zeros.default: _full(None, 0.0),
    torch.ops.aten.ones_like.default: _full(None, 1.0),
    torch.ops.aten.zeros_like.default: _full(None, 0.0),
    torch.ops.aten.alias.default: _identity,
    torch.ops.aten.contiguous.default: _identity,
    torch.ops.aten.clone.default: _identity,
    torch.ops.aten.detach.default: _identity,
    torch.ops.aten.detach_.default: _identity,
    torch.ops.aten.lift_fresh_copy.default: _identity,
    torch.ops.aten.to.device: _to,
    torch.ops.aten.to.dtype_layout: _to,
    torch.ops.aten.scaled_dot_product_attention.default: _sdpa,
}


# --- math: arithmetic overloads, comparisons, reductions, norms, dtype conversion ---------------


def _as_dtype(im: Importer, v: SSAValue, elt) -> SSAValue:
    """v converted to element type `elt` (a torch.to) where it differs: torch computes a binary
    op in the common dtype of its operands."""
    if v.type.element_type == elt:
        return v
    return im.insert(T.ToOp(v, TensorType(elt, v.type.get_shape())), "to")


def _common_dtype(a, b) -> torch.dtype:
    """torch.result_type of two FX arguments (tensors by their metadata, or Python numbers)."""

    def probe(x):
        if isinstance(x, torch.fx.Node):
            v = x.meta["val"]
            return torch.empty([0] * v.dim(), dtype=v.dtype)
        return x

    return torch.result_type(probe(a), probe(b))


def _compare(name: str) -> Converter:
    """eq/ne/lt/le/gt/ge .Tensor and .Scalar: operands in their common dtype, an i1 result."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        a, b = node.args[0], node.args[1]
        like = TensorType(mlir_element_type(_common_dtype(a, b)), [])
        va, vb = (_as_dtype(im, im.value(x, like), like.element_type) for x in (a, b))
        return im.insert(T.COMPARE_CLASSES[name](va, vb, rt), name)

    return convert


_BITWISE = {torch.ops.aten.__and__.Tensor, torch.ops.aten.__or__.Tensor,
            torch.ops.aten.bitwise_and.Tensor, torch.ops.aten.bitwise_or.Tensor}


def _logical(name: str) -> Converter:
    """logical_and/or (a number operand is true when nonzero), and `&`/`|` on bool tensors."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        vs = []
        for arg in node.args[:2]:
            v = im.value(arg)
            if str(v.type.element_type) != "i1":
                if node.target in _BITWISE:
                    raise FrontendError(
                        f"unsupported bitwise '{node.target}' on {v.type} {where_from(node)}"
                    )
                i1 = TensorType(rt.element_type, v.type.get_shape())
                v = im.insert(T.NeOp(v, im.value(0.0, v.type), i1), "ne")
            vs.append(v)
        return im.insert(T.LOGICAL_CLASSES[name](*vs, rt), name)

    return convert


def _rsub(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """rsub.Tensor / rsub.Scalar: other - alpha * self."""
    x, other = (_as_dtype(im, im.value(a, rt), rt.element_type) for a in node.args[:2])
    alpha = _arg(node, 2, "alpha", 1)
    if alpha != 1:
        x = im.insert(T.MulOp(x, im.value(float(alpha), rt), x.type), "alpha")
    return im.insert(T.SubOp(other, x, rt), "rsub")


def _where(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """where.self / ScalarSelf / ScalarOther / Scalar: Python numbers become 0-d constants."""
    c = im.value(node.args[0])
    a, b = (_as_dtype(im, im.value(x, rt), rt.element_type) for x in node.args[1:3])
    return im.insert(T.WhereOp(c, a, b, rt), "where")


def _gelu(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    approximate = _arg(node, 1, "approximate", "none")
    return im.insert(T.GeluOp(im.value(node.args[0]), approximate, rt), "gelu")


_ALL_DIMS = {torch.ops.aten.sum.default, torch.ops.aten.mean.default}


def _reduction(name: str) -> Converter:
    """sum / mean (.default: every dim; .dim_IntList / .dim) and amax: dims normalized and
    sorted, an empty list meaning every dim; a dtype argument converts the input first."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        rank = _rank(x)
        dims = None if node.target in _ALL_DIMS else _arg(node, 1, "dim")
        keepdim = False if node.target in _ALL_DIMS else bool(_arg(node, 2, "keepdim", False))
        if isinstance(dims, int):
            dims = [dims]
        dims = sorted({_norm(d, rank) for d in dims}) if dims else list(range(rank))
        x = _as_dtype(im, x, rt.element_type)
        return im.insert(T.REDUCTION_CLASSES[name](x, dims, keepdim, rt), name)

    return convert


def _softmax(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """aten._softmax (half_to_float) and aten.softmax.int (dtype): the input is converted to the
    result's dtype first."""
    x = _as_dtype(im, im.value(node.args[0]), rt.element_type)
    return im.insert(T.SoftmaxOp(x, _norm(node.args[1], _rank(x)), rt), "softmax")


def _layer_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """aten.layer_norm (native_layer_norm's first result): a bias without a weight is an add."""
    x = im.value(node.args[0])
    shape = list(_arg(node, 1, "normalized_shape"))
    weight, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
    eps = float(_arg(node, 4, "eps", 1e-5))
    w = im.value(weight) if weight is not None else None
    b = im.value(bias) if bias is not None else None
    y = im.insert(T.LayerNormOp(x, w, b if w is not None else None, shape, eps, rt), "layer_norm")
    if b is not None and w is None:
        y = im.insert(T.AddOp(y, b, rt), "layer_norm")
    return y


def _linear(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    bias = _arg(node, 2, "bias")
    x, w = im.value(node.args[0]), im.value(node.args[1])
    b = im.value(bias) if bias is not None else None
    return im.insert(T.LinearOp(x, w, b, rt), "linear")


def _addmm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """beta * self + alpha * (mat1 @ mat2), as torch.matmul, torch.mul and torch.add."""
    bias, a, b = (im.value(x) for x in node.args[:3])
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    y = im.insert(T.MatmulOp(a, b, rt), "addmm")
    if alpha != 1:
        y = im.insert(T.MulOp(y, im.value(float(alpha), rt), rt), "alpha")
    if beta == 0:  # torch ignores self then (even NaN)
        return y
    if beta != 1:
        bias = im.insert(T.MulOp(bias, im.value(float(beta), rt), bias.type), "beta")
    return im.insert(T.AddOp(y, bias, rt), "addmm")


def _to_dtype(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """to.dtype, _to_copy, to.dtype_layout, to.device: a dtype conversion, or nothing (the device
    is decided later; a copy of an immutable value is the value)."""
    x = im.value(node.args[0])
    return x if x.type == rt else im.insert(T.ToOp(x, rt), "to")


MATH_CONVERTERS: dict[object, Converter] = {
    **{
        getattr(torch.ops.aten, name).Scalar: _binary(name)
        for name in ("add", "sub", "mul", "div")
    },
    torch.ops.aten.rsub.Scalar: _rsub,
    torch.ops.aten.rsub.Tensor: _rsub,
    torch.ops.aten.pow.Tensor_Scalar: _binary("pow"),
    torch.ops.aten.pow.Tensor_Tensor: _binary("pow"),
    torch.ops.aten.pow.Scalar: _binary("pow"),
    torch.ops.aten.cos.default: _unary("cos"),
    torch.ops.aten.sin.default: _unary("sin"),
    torch.ops.aten.reciprocal.default: _unary("reciprocal"),
    torch.ops.aten.gelu.default: _gelu,
    **{getattr(torch.ops.aten, name).Tensor: _compare(name) for name in T.COMPARE_OPS},
    **{getattr(torch.ops.aten, name).Scalar: _compare(name) for name in T.COMPARE_OPS},
    torch.ops.aten.logical_and.default: _logical("logical_and"),
    torch.ops.aten.logical_or.default: _logical("logical_or"),
    torch.ops.aten.__and__.Tensor: _logical("logical_and"),
    torch.ops.aten.__or__.Tensor: _logical("logical_or"),
    torch.ops.aten.bitwise_and.Tensor: _logical("logical_and"),
    torch.ops.aten.bitwise_or.Tensor: _logical("logical_or"),
    torch.ops.aten.where.self: _where,
    torch.ops.aten.where.ScalarSelf: _where,
    torch.ops.aten.where.ScalarOther: _where,
    torch.ops.aten.where.Scalar: _where,
    torch.ops.aten.sum.default: _reduction("sum"),
    torch.ops.aten.sum.dim_IntList: _reduction("sum"),
    torch.ops.aten.mean.default: _reduction("mean"),
    torch.ops.aten.mean.dim: _reduction("mean"),
    torch.ops.aten.amax.default: _reduction("amax"),
    torch.ops.aten._softmax.default: _softmax,
    torch.ops.aten.softmax.int: _softmax,
    torch.ops.aten.layer_norm.default: _layer_norm,
    torch.ops.aten.linear.default: _linear,
    torch.ops.aten.bmm.default: _matmul,
    torch.ops.aten.addmm.default: _addmm,
    torch.ops.aten.to.dtype: _to_dtype,
    torch.ops.aten._to_copy.default: _to_dtype,
    torch.ops.aten.to.dtype_layout: _to_dtype,
    torch.ops.aten.to.device: _to_dtype,
}


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
    **SHAPE_CONVERTERS,
    **MATH_CONVERTERS,  # after SHAPE_CONVERTERS: its to.device/to.dtype_layout also convert dtypes
}


