"""The ATen op -> Torch IR table: one converter per captured op, and the context they share.

A converter gets the `Importer` (operand values, the builder), the FX node and the result type
from the node's metadata, and returns the SSA value of the op it built. A node whose target is
not a key here is an error naming the op and where it came from (see importer.py, which walks
the graph and imports this module; this module never imports it).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import numpy as np
import torch
from xdsl.builder import Builder
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from deplo import origin
from deplo.analysis.index import MATMUL_MIN_K
from deplo.dialects import torch as T
from deplo.dialects.tir import ReduceKind, reduce_identity
from deplo.frontend import expr as expr_module
from deplo.frontend.dtypes import mlir_element_type, rounded, to_numpy
from deplo.frontend.errors import FrontendError, UnsupportedOpError
from deplo.frontend.fold import StaticEvaluator, draws_random


def tensor_type(value) -> TensorType:
    """The MLIR type of a FakeTensor/Tensor from the exported graph's metadata."""
    return TensorType(mlir_element_type(value.dtype), list(value.shape))


def result_type(val) -> TensorType | tuple[TensorType, ...] | None:
    """The type of a node's result, or a tuple of them (split, chunk, unbind); None for a
    number (item's)."""
    if isinstance(val, (tuple, list)):
        return tuple(tensor_type(v) for v in val)
    return tensor_type(val) if hasattr(val, "shape") else None


def where_from(node: torch.fx.Node) -> str:
    """`in <module path> at file:line: code` from an FX node's metadata, for error messages."""
    parts = []
    stack = node.meta.get("nn_module_stack")
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            parts.append(f"in module '{path}'")
    # (a callable's own frames are not recorded: its ops are at our wrapper's call of it)
    frame = origin.user_frame(node, expr_module.__file__) or \
        origin.user_frame(node, expr_module.__file__, any_frame=True)
    if frame and frame[0] == expr_module.__file__:
        parts.append("in the expression")
    elif frame:
        code = frame[2] if not frame[2] or len(frame[2]) <= 120 else frame[2][:117] + "..."
        parts.append(f"at {frame[0]}:{frame[1]}" + (f": {code}" if code else ""))
    return " ".join(parts) or "(no source location recorded)"


class Importer:
    def __init__(self, block: Block, static: StaticEvaluator | None = None):
        self.block = block
        self.builder = Builder(InsertPoint.at_end(block))
        self.values: dict[torch.fx.Node, SSAValue] = {}
        self.static = static or StaticEvaluator({})
        self.constants: dict[str, np.ndarray] = {}
        self.node: torch.fx.Node | None = None  # the node being converted

    def value(self, arg, like: TensorType | None = None) -> SSAValue:
        """An SSA value for an FX argument; a Python number becomes a 0-d torch.constant, and a
        folded tensor a constant argument of @main (`%const.NAME`)."""
        if isinstance(arg, torch.fx.Node):
            if arg not in self.values and self.static.is_static(arg):
                self.values[arg] = self._constant_arg(arg)
            return self.values[arg]
        if isinstance(arg, (int, float)) and (like is not None or not isinstance(arg, bool)):
            elt = like.element_type if like is not None else mlir_element_type(torch.float32)
            if isinstance(elt, IntegerType) and elt.width.data == 1:
                arg = int(bool(arg))  # (a bool's fill: any nonzero number is True)
            elif isinstance(elt, IntegerType):  # a number in an integer tensor's type (a fill,
                arg = self._wrapped(int(arg), elt.width.data)  # a scatter, `x > -1`): as aten
            t = TensorType(elt, [])
            op = T.FullOp(arg, t) if isinstance(elt, IntegerType) \
                else T.ConstantOp(rounded(arg, elt), t)
            return self.insert(op, "cst")
        op = f" of '{self.node.target}' {where_from(self.node)}" if self.node is not None else ""
        raise FrontendError(f"unsupported argument {arg!r}{op}")

    def _wrapped(self, number: int, bits: int) -> int:
        """An integer as the op's integer type holds it, as aten casts a scalar: modulo 2^bits
        into the signed range, or into 0..255 where the op's tensors are uint8 (carried in i16:
        `u8 > -1` compares with 255)."""
        args = (self.node.args, self.node.kwargs) if self.node is not None else ()
        dtypes = {v.dtype for a in torch.utils._pytree.tree_leaves(args) if isinstance(
            a, torch.fx.Node) and isinstance(v := a.meta.get("val"), torch.Tensor)}
        if torch.uint8 in dtypes and dtypes <= {torch.uint8, torch.bool}:
            return number % 256
        return (number + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1) if bits > 1 else number

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
    """A unary torch op; an integer input of a float-valued op (log2 of an int tensor) is
    converted to the result's type first, as torch promotes it."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        return im.insert(T.UNARY_CLASSES[name](_as_dtype(im, im.value(node.args[0]),
                                                         rt.element_type), rt), name)

    return convert


def _pow_scalar(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """x ** number. aten takes sqrt and rsqrt for 0.5 and -0.5 on float32, float64 and bf16
    (sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where pow gives 0.0 and inf); float16 takes pow."""
    e = node.args[1]
    if not isinstance(e, bool) and e in (0.5, -0.5) and str(rt.element_type) in ("f32", "f64",
                                                                                  "bf16"):
        return _unary("sqrt" if e > 0 else "rsqrt")(im, node, rt)
    return _binary("pow")(im, node, rt)


def _rounding(name: str) -> Converter:
    """floor / ceil / trunc / round: an integer tensor is already whole."""
    unary = _unary(name)

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        whole = isinstance(x.type.element_type, IntegerType)
        return x if whole else unary(im, node, rt)

    return convert


def _binary(name: str) -> Converter:
    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        if str(rt.element_type) == "i1" and name in ("add", "mul"):  # bool + bool: or; *: and
            return _logical("logical_or" if name == "add" else "logical_and")(im, node, rt)
        a, b = node.args[0], node.args[1]
        # a 0-d float tensor (a buffer's scale) as aten's CPU mul and div read their second
        # operand: in float32, not rounded to the half type first (a first one is rounded)
        scalar_tensor = name in ("mul", "div") and _cpu_scalar(b)
        if (any(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
                or scalar_tensor) \
                and str(rt.element_type) in ("f16", "bf16") and node.kwargs.get("alpha", 1) == 1:
            # a Python number with an f16/bf16 tensor: aten computes in float32 with the number
            # as a float32, and rounds the result once (x * 70000 on fp16 stays finite where
            # |x * 70000| < 65504, not x * inf; x * 1e-6 keeps 1e-6's digits; 0 stays 0)
            f32 = TensorType(mlir_element_type(torch.float32), rt.get_shape())
            x, y = _opmath_operands(im, node, rt, scalar_tensors=scalar_tensor)
            y = im.insert(T.BINARY_CLASSES[name](x, y, f32), name)
            return _as_dtype(im, y, rt.element_type)
        dtype = getattr(node.meta.get("val"), "dtype", None)
        va, vb = (_in_dtype(im, x, dtype, rt) for x in (a, b))
        alpha = node.kwargs.get("alpha", 1)
        if name in ("add", "sub") and alpha != 1:
            vb = im.insert(
                T.MulOp(vb, im.value(float(alpha), rt), vb.type), "alpha"
            )
        return im.insert(T.BINARY_CLASSES[name](va, vb, rt), name)

    return convert


def _pow_of_tensor(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """pow with a tensor exponent. On integers aten multiplies (no float pow rounds it): the
    base squared once per bit of the type, times where the exponent's bit is set, wrapping as
    aten's; a negative exponent gives 1 for a base of 1, +-1 by parity for -1, else 0. The
    chain (6 ops a bit, 63 bits for int64) fuses into one elementwise kernel."""
    if not isinstance(rt.element_type, IntegerType):
        return _binary("pow")(im, node, rt)
    x, e = (_as_dtype(im, im.value(a, rt), rt.element_type) for a in node.args[:2])
    one, zero, two, minus_one = (_scalar(im, v, x) for v in (1, 0, 2, -1))

    def odd(v):
        return _cmp(im, "ne", _ew(im, "fmod", v, two), zero)

    negative = _cmp(im, "lt", e, zero)
    rest, result, base, width = _pick(im, negative, zero, e), one, x, rt.element_type.width.data
    for bit in range(width - 1):
        result = _pick(im, odd(rest), _ew(im, "mul", result, base), result)
        if bit < width - 2:
            rest, base = _ew(im, "div", rest, two), _ew(im, "mul", base, base)
    inverse = _pick(im, _cmp(im, "eq", x, one), one, _pick(
        im, _cmp(im, "eq", x, minus_one), _pick(im, odd(e), minus_one, one), zero))
    return _pick(im, negative, inverse, result)


def _pick(im: Importer, c: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    """where(c, x, y), the three broadcast together."""
    shape = T.broadcast_shapes(c.type.get_shape(), T.broadcast_shapes(x.type.get_shape(),
                                                                      y.type.get_shape()))
    return im.insert(T.WhereOp(c, x, y, _t(x, shape)), "where")


def _matmul(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    return im.insert(T.MatmulOp(im.value(node.args[0]), im.value(node.args[1]), rt), "matmul")


def _rms_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    args = list(node.args) + [None] * (4 - len(node.args))
    x, shape, weight, eps = args[:4]
    weight = node.kwargs.get("weight", weight)
    eps = node.kwargs.get("eps", eps)
    w = im.value(weight) if weight is not None else None
    xv, (w,), nt = _norm_types(im, im.value(x), [w], rt)
    return _as_dtype(im, im.insert(T.RmsNormOp(xv, w, list(shape), eps, nt), "rms_norm"),
                     rt.element_type)


def _norm_types(im: Importer, x: SSAValue, params: list, rt: TensorType):
    """(x, params, the result type) a norm computes in: float32 where its weights' type is not
    x's (a bf16 activation with float32 weights: aten normalizes in float32 and returns x's
    type), else as given."""
    kinds = {p.type.element_type for p in params if p is not None}
    if kinds <= {x.type.element_type}:
        return x, params, rt
    f32 = mlir_element_type(torch.float32)
    return (_as_dtype(im, x, f32), [p if p is None else _as_dtype(im, p, f32) for p in params],
            _t(x, rt.get_shape(), f32))


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


def _transpose_2d(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
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
    dim = _norm(node.args[1], _rank(x))
    if isinstance(node.args[2], torch.fx.Node):  # x[:, i] of a 0-d tensor i: a gather (_item)
        return im.insert(T.IndexOp(x, [im.value(node.args[2])], [dim], rt), "select")
    return im.insert(T.SelectOp(x, dim, node.args[2], rt), "select")


def _item(im: Importer, node: torch.fx.Node, rt) -> SSAValue:
    """A 0-d integer tensor's value as select's index (`x[:, i]` with `i` a tensor input: export
    reads it with item): the tensor itself, which select gathers by. A value read out of a
    tensor for anything else (a size, a loop count, a Python branch) is data a static program
    cannot depend on."""
    i = node.args[0]
    if node.users and all(u.target is aten.select.int and u.args[2] is node
                          and len(u.args[0].meta["val"].shape) for u in node.users) \
            and not i.meta["val"].is_floating_point():
        return im.value(i)
    raise UnsupportedOpError(
        f"unsupported '{node.target}': a value read out of a tensor, used as a number (a size, a "
        f"count, a branch) makes the program depend on the data {where_from(node)}", node.target)


def _cat(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    xs = [im.value(t) for t in node.args[0]]
    # torch skips legacy empty 1-D inputs (a KV cache's first `torch.tensor([])`)
    xs = [x for x in xs if list(x.type.get_shape()) != [0] or rt.get_num_dims() == 1] or xs[:1]
    # mixed dtypes promote to the result's (torch.cat of f16 and f32 is f32)
    xs = [x if x.type.element_type == rt.element_type else im.insert(
        T.ToOp(x, TensorType(rt.element_type, x.type.get_shape())), "to") for x in xs]
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


def _fill_value(node: torch.fx.Node, v, floats: bool = True):
    """A number an op puts into its result (full, fill, masked_fill, a clamp bound, where's
    scalar) checked as aten's conversion checks it: eager raises where it does not fit the
    result's dtype (int8 and 1000, float16 and 1e6; where checks integers only), where
    arithmetic (`x + 1000`) wraps."""
    dtype = getattr(node.meta.get("val"), "dtype", None)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or dtype in (None, torch.bool):
        return v
    if dtype.is_floating_point:
        over = floats and math.isfinite(v) and abs(v) > torch.finfo(dtype).max
    else:  # (an unsigned type takes a negative int as its wrap, not a negative float; NaN none)
        info = torch.iinfo(dtype)
        least = info.min if info.min < 0 else 0 if isinstance(v, float) else -info.max
        over = not v <= info.max or v < least
    if over:
        raise FrontendError(f"value {v} cannot be converted to type {dtype} without overflow "
                            f"(in '{node.target}' {where_from(node)}), as eager raises")
    return v


def _full(value_at: int | None, value: float = 0.0) -> Converter:
    """full / new_full / full_like (the fill value is argument `value_at`), ones / zeros /
    new_ones / new_zeros / ones_like / zeros_like (a fixed value)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        v = _fill_value(node, node.args[value_at]) if value_at is not None else value
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
    torch.ops.aten.t.default: _transpose_2d,
    torch.ops.aten.expand.default: _expand,
    torch.ops.aten.unsqueeze.default: _unsqueeze,
    torch.ops.aten.squeeze.default: _squeeze,
    torch.ops.aten.squeeze.dim: _squeeze,
    torch.ops.aten.squeeze.dims: _squeeze,
    torch.ops.aten.slice.Tensor: _slice,
    torch.ops.aten.select.int: _select,
    torch.ops.aten.item.default: _item,
    torch.ops.aten.cat.default: _cat,
    torch.ops.aten.embedding.default: _embedding,
    torch.ops.aten.index.Tensor: _index,
    torch.ops.aten._unsafe_index.Tensor: _index,  # (index without bounds checks: decompositions)
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
    torch.ops.aten.scaled_dot_product_attention.default: _sdpa,
}


# --- math: arithmetic overloads, comparisons, reductions, norms, dtype conversion ---------------


def _as_dtype(im: Importer, v: SSAValue, elt) -> SSAValue:
    """v converted to element type `elt` (a torch.to) where it differs: torch computes a binary
    op in the common dtype of its operands."""
    if v.type.element_type == elt:
        return v
    return im.insert(T.ToOp(v, TensorType(elt, v.type.get_shape())), "to")


def _in_dtype(im: Importer, x, dtype: torch.dtype | None, like: TensorType) -> SSAValue:
    """An operand (node or number) converted to `dtype` (its MLIR type `like`): a wider integer
    tensor taken to uint8 keeps its low 8 bits, as aten's cast (-1 is 255; uint8 is carried in
    i16, where a plain cast would keep -1)."""
    v = _as_dtype(im, im.value(x, like), like.element_type)
    src = getattr(x.meta.get("val"), "dtype", None) if isinstance(x, torch.fx.Node) else None
    if dtype == torch.uint8 and src not in (None, torch.uint8, torch.bool):
        v = wrap_uint8(im, v)
    return v


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
        dtype = _common_dtype(a, b)
        like = TensorType(mlir_element_type(dtype), [])
        va, vb = (_in_dtype(im, x, dtype, like) for x in (a, b))
        return im.insert(T.COMPARE_CLASSES[name](va, vb, rt), name)

    return convert


def _bitwise(name: str) -> Converter:
    """`&` `|` `^` `<<` `>>` and aten.bitwise_*: on bool tensors the logical ops, on integers
    the torch bitwise ops (a Python number operand in the tensor's type)."""
    logical = {"bitwise_and": "logical_and", "bitwise_or": "logical_or",
               "bitwise_xor": "logical_xor"}

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        if str(rt.element_type) == "i1" and name in logical:
            return _logical(logical[name])(im, node, rt)
        if not isinstance(rt.element_type, IntegerType) or str(rt.element_type) == "i1":
            raise FrontendError(f"unsupported '{node.target}' on {rt.element_type} tensors "
                                f"{where_from(node)}")
        a, b = (_as_dtype(im, im.value(x, rt), rt.element_type) for x in node.args[:2])
        return im.insert(T.BITWISE_CLASSES[name](a, b, rt), name)

    return convert


def _logical(name: str) -> Converter:
    """logical_and/or/xor (a number operand is true when nonzero), and `&`/`|`/`^` on bool
    tensors (xor: the two truths differ)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        vs = []
        for arg in node.args[:2]:
            v = im.value(arg, None if isinstance(arg, torch.fx.Node) else rt)  # (`m & True`)
            if str(v.type.element_type) != "i1":
                i1 = TensorType(rt.element_type, v.type.get_shape())
                v = im.insert(T.NeOp(v, im.value(0.0, v.type), i1), "ne")
            vs.append(v)
        if name == "logical_xor":
            return im.insert(T.NeOp(*vs, rt), name)
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
    a, b = (_as_dtype(im, im.value(_fill_value(node, x, floats=False), rt), rt.element_type)
            for x in node.args[1:3])
    return im.insert(T.WhereOp(c, a, b, rt), "where")


def _gelu(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    approximate = _arg(node, 1, "approximate", "none")
    return im.insert(T.GeluOp(im.value(node.args[0]), approximate, rt), "gelu")


_ALL_DIMS = {torch.ops.aten.sum.default, torch.ops.aten.mean.default, torch.ops.aten.prod.default,
             torch.ops.aten.max.default, torch.ops.aten.min.default}  # x.max(): every dim


def _reduction(name: str) -> Converter:
    """sum / mean / prod (.default: every dim; .dim_IntList / .dim / .dim_int), amax, amin: an
    empty dim list
    means every dim; a dtype argument converts the input first."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = _as_dtype(im, im.value(node.args[0]), rt.element_type)
        if node.target in _ALL_DIMS:
            return _reduce(im, name, x, range(_rank(x)), False)
        return _reduce(im, name, x, _dims(node, 1, "dim", _rank(x)),
                       bool(_arg(node, 2, "keepdim", False)))

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
    x, (w, b), nt = _norm_types(im, x, [w, b], rt)
    y = im.insert(T.LayerNormOp(x, w, b if w is not None else None, shape, eps, nt), "layer_norm")
    if b is not None and w is None:
        y = im.insert(T.AddOp(y, b, nt), "layer_norm")
    return _as_dtype(im, y, rt.element_type)


def _linear(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    bias = _arg(node, 2, "bias")
    x, w = im.value(node.args[0]), im.value(node.args[1])
    b = im.value(bias) if bias is not None else None
    return im.insert(T.LinearOp(x, w, b, rt), "linear")


def _addmm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """addmm / baddbmm: beta * self + alpha * (mat1 @ mat2), as torch.matmul, torch.mul and
    torch.add; f16/bf16 in float32, rounded once, as aten does (GPT-2's Conv1D is an addmm)."""
    a, b = (_f32(im, im.value(x)) for x in node.args[1:3])
    y = im.insert(T.MatmulOp(a, b, _t(a, rt.get_shape())), "addmm")
    return _scaled_plus_self(im, node, y, rt, "addmm")


def _addbmm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """addbmm: beta * self + alpha * sum_b(b1[b] @ b2[b]), the sum over the batch as one
    matmul of [n, B*m] by [B*m, p]."""
    b1, b2 = (_f32(im, im.value(x)) for x in node.args[1:3])
    nb, n, m = b1.type.get_shape()
    p = b2.type.get_shape()[2]
    a = _reshape(im, im.insert(T.PermuteOp(b1, [1, 0, 2], _t(b1, [n, nb, m])), "addbmm"),
                 [n, nb * m], "addbmm")
    b = _reshape(im, b2, [nb * m, p], "addbmm")
    y = im.insert(T.MatmulOp(a, b, _t(a, [n, p])), "addbmm")
    return _scaled_plus_self(im, node, y, rt, "addbmm")


def _scaled_plus_self(im: Importer, node: torch.fx.Node, y: SSAValue, rt: TensorType,
                      hint: str) -> SSAValue:
    """alpha * y + beta * self (node.args[0]) in y's element type, then rounded to rt's once;
    beta 0 ignores self (even NaN), as torch does."""
    scalar = _t(y, [])
    if (alpha := node.kwargs.get("alpha", 1)) != 1:
        y = im.insert(T.MulOp(y, im.value(float(alpha), scalar), y.type), "alpha")
    if (beta := node.kwargs.get("beta", 1)) != 0:
        bias = _as_dtype(im, im.value(node.args[0]), y.type.element_type)
        if beta != 1:
            bias = im.insert(T.MulOp(bias, im.value(float(beta), scalar), bias.type), "beta")
        y = im.insert(T.AddOp(y, bias, y.type), hint)
    return _as_dtype(im, y, rt.element_type)


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
    torch.ops.aten.pow.Tensor_Scalar: _pow_scalar,
    torch.ops.aten.pow.Tensor_Tensor: _pow_of_tensor,
    torch.ops.aten.pow.Scalar: _pow_of_tensor,
    torch.ops.aten.cos.default: _unary("cos"),
    torch.ops.aten.sin.default: _unary("sin"),
    torch.ops.aten.reciprocal.default: _unary("reciprocal"),
    torch.ops.aten.gelu.default: _gelu,
    **{getattr(torch.ops.aten, name).Tensor: _compare(name) for name in T.COMPARE_OPS},
    **{getattr(torch.ops.aten, name).Scalar: _compare(name) for name in T.COMPARE_OPS},
    torch.ops.aten.logical_and.default: _logical("logical_and"),
    torch.ops.aten.logical_or.default: _logical("logical_or"),
    torch.ops.aten.logical_xor.default: _logical("logical_xor"),
    **{getattr(getattr(torch.ops.aten, op), overload): _bitwise(name)
       for name, ops in (("bitwise_and", ("__and__", "bitwise_and")),
                         ("bitwise_or", ("__or__", "bitwise_or")),
                         ("bitwise_xor", ("__xor__", "bitwise_xor")),
                         ("bitwise_left_shift", ("__lshift__", "bitwise_left_shift")),
                         ("bitwise_right_shift", ("__rshift__", "bitwise_right_shift")))
       for op in ops for overload in ("Tensor", "Scalar", "Tensor_Scalar", "Scalar_Tensor")
       if hasattr(getattr(torch.ops.aten, op), overload)},
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


# --- composites: decompositions at import into the torch ops above ---------------------------
#
# Each is one coverage row (docs/ops.md). f16/bf16 inputs of a composite that reduces are
# converted to float32 first and its result rounded once, as aten computes them.


def _t(v: SSAValue, shape=None, elt=None) -> TensorType:
    """v's tensor type with another shape and/or element type."""
    return TensorType(elt or v.type.element_type, list(v.type.get_shape() if shape is None else shape))


def _opmath_operands(im: Importer, node: torch.fx.Node, rt: TensorType,
                     scalar_in_opmath: bool = True, scalar_tensors: bool = False
                     ) -> list[SSAValue]:
    """The two operands in rt's type, in float32 for f16/bf16; with `scalar_in_opmath`, a
    Python number straight to float32, not through the half type (aten's division kernels keep
    a scalar in their opmath type: a bf16 x // 0.7 divides by 0.7f, not by 0.69921875; its
    fmod and remainder round it to bf16 first); with `scalar_tensors`, a 0-d tensor as the
    second operand too."""
    half = str(rt.element_type) in ("f16", "bf16") and scalar_in_opmath
    f32 = TensorType(mlir_element_type(torch.float32), [])
    return [im.value(x, f32) if half and isinstance(x, (int, float))
            else _as_dtype(im, im.value(x), f32.element_type)
            if half and scalar_tensors and k == 1 and _cpu_scalar(x)
            else _f32(im, _as_dtype(im, im.value(x, rt), rt.element_type))
            for k, x in enumerate(node.args[:2])]


def _cpu_scalar(x) -> bool:
    """A 0-d tensor operand (not a bool): aten reads its value in the op's opmath type, as it
    reads a Python number (a float32 scale or an int64 count is not rounded to the f16/bf16
    tensor's type)."""
    v = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    return isinstance(v, torch.Tensor) and v.dim() == 0 and v.dtype != torch.bool


def _f32(im: Importer, x: SSAValue) -> SSAValue:
    """x as float32 when it is f16/bf16 (aten's opmath), else x."""
    is_half = str(x.type.element_type) in ("f16", "bf16")
    return _as_dtype(im, x, mlir_element_type(torch.float32)) if is_half else x


def _reshape(im: Importer, x: SSAValue, shape, hint: str = "reshape") -> SSAValue:
    return x if list(x.type.get_shape()) == list(shape) else im.insert(T.ReshapeOp(x, _t(x, shape)), hint)


def _reduce(im: Importer, name: str, x: SSAValue, dims, keepdim: bool) -> SSAValue:
    rank = _rank(x)
    dims = sorted({_norm(d, rank) for d in dims})
    shape = T.reduced_shape(x.type.get_shape(), dims if rank else [], keepdim)
    return im.insert(T.REDUCTION_CLASSES[name](x, dims, keepdim, _t(x, shape)), name)


def _ew(im: Importer, name: str, *xs: SSAValue) -> SSAValue:
    """An elementwise torch op on values of one element type, the result broadcast."""
    shape = xs[0].type.get_shape()
    for v in xs[1:]:
        shape = T.broadcast_shapes(shape, v.type.get_shape())
    classes = T.BINARY_CLASSES if len(xs) == 2 else T.UNARY_CLASSES
    return im.insert(classes[name](*xs, _t(xs[0], shape)), name)


def _cmp(im: Importer, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """A comparison (eq, lt, ...) or logical_and / logical_or of a and b broadcast together:
    an i1 tensor."""
    shape = T.broadcast_shapes(a.type.get_shape(), b.type.get_shape())
    cls = T.COMPARE_CLASSES.get(name) or T.LOGICAL_CLASSES[name]
    return im.insert(cls(a, b, _t(a, shape, mlir_element_type(torch.bool))), name)


def _scalar(im: Importer, value: float, like: SSAValue) -> SSAValue:
    """A 0-d constant in `like`'s type; an integer type takes the number truncated, as aten
    converts a Scalar (hardtanh(int8, -0.5, 0.5) clamps to [0, 0])."""
    elt = like.type.element_type
    if isinstance(elt, IntegerType) and math.isfinite(value):
        value = int(bool(value)) if elt.width.data == 1 else int(value)
    return im.insert(T.FullOp(value, _t(like, [])), "cst")


def _positions(im: Importer, n: int, shape=None, hint: str = "arange") -> SSAValue:
    """0, 1, .., n - 1 (i64), reshaped to `shape` (n along one dim, 1 along the others)."""
    pos = im.insert(T.ArangeOp(0, n, 1, TensorType(mlir_element_type(torch.int64), [n])), hint)
    return pos if shape is None else _reshape(im, pos, shape, hint)


def _from_end(im: Importer, idx: SSAValue, n: int) -> SSAValue:
    """An index into a dim of n where a negative entry counts from the end."""
    return im.insert(T.WhereOp(_cmp(im, "lt", idx, _scalar(im, 0, idx)), _ew(
        im, "add", idx, _scalar(im, n, idx)), idx, idx.type), "from_end")


def _dims(node: torch.fx.Node, i: int, name: str, rank: int) -> list[int]:
    """A dim argument (int, list or None: every dim) as sorted non-negative dims."""
    d = _arg(node, i, name)
    d = [d] if isinstance(d, int) else d
    return sorted({_norm(x, rank) for x in d}) if d else list(range(rank))


def _square(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = _as_dtype(im, im.value(node.args[0]), rt.element_type)
    return im.insert(T.MulOp(x, x, rt), "square")


def _movedim(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """movedim.int / .intlist: the permutation putting each source dim at its destination."""
    x = im.value(node.args[0])
    rank = _rank(x)
    src, dst = ([_norm(d, rank) for d in (a if isinstance(a, (list, tuple)) else [a])]
                for a in node.args[1:3])
    perm: list[int | None] = [None] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    order = [p if p is not None else next(rest) for p in perm]
    return x if order == list(range(rank)) else im.insert(T.PermuteOp(x, order, rt), "movedim")


def _stack(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """stack: each input with a unit dim inserted, concatenated along it."""
    d = _norm(_arg(node, 1, "dim", 0), rt.get_num_dims())
    shape = list(rt.get_shape())
    shape[d] = 1
    xs = [_reshape(im, _as_dtype(im, im.value(t), rt.element_type), shape, "stack")
          for t in node.args[0]]
    return xs[0] if len(xs) == 1 else im.insert(T.CatOp(xs, d, rt), "stack")


def _split(im: Importer, node: torch.fx.Node, rts) -> tuple[SSAValue, ...]:
    """split / split_with_sizes / chunk: slices along the dim, sized like the results; unbind:
    selects."""
    x = im.value(node.args[0])
    if node.target == aten.unbind.int:
        d = _norm(_arg(node, 1, "dim", 0), _rank(x))
        return tuple(im.insert(T.SelectOp(x, d, i, t), "unbind") for i, t in enumerate(rts))
    d = _norm(_arg(node, 2, "dim", 0), _rank(x))
    outs, start = [], 0
    for t in rts:
        n = t.get_shape()[d]
        outs.append(x if t == x.type else im.insert(T.SliceOp(x, d, start, start + n, 1, t), "split"))
        start += n
    return tuple(outs)


def _narrow(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    x = im.value(node.args[0])
    d = _norm(node.args[1], _rank(x))
    start = node.args[2] % x.type.get_shape()[d] if node.args[2] < 0 else node.args[2]
    if x.type == rt:
        return x
    return im.insert(T.SliceOp(x, d, start, start + node.args[3], 1, rt), "narrow")


def _dropout(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """Eval-mode dropout (or p = 0) is the identity; training-mode dropout is random."""
    if _arg(node, 2, "train", False) and _arg(node, 1, "p", 0.5):
        raise FrontendError(f"unsupported dropout in training mode (random) in '{node.target}' "
                            f"{where_from(node)}")
    return im.value(node.args[0])


def _clamp(lo_at: int | None, hi_at: int | None) -> Converter:
    """clamp (.default, .Tensor), clamp_min, clamp_max: maximum with the lower bound, then
    minimum with the upper one (a NaN input stays NaN; lo > hi gives hi, as aten)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        y = _as_dtype(im, im.value(node.args[0]), rt.element_type)
        for at, name, kw in ((lo_at, "maximum", "min"), (hi_at, "minimum", "max")):
            bound = _fill_value(node, _arg(node, at, kw)) if at is not None else None
            if bound is not None:
                y = _ew(im, name, y, _as_dtype(im, im.value(bound, rt), rt.element_type))
        return y

    return convert


def _masked_fill(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """masked_fill.Scalar / .Tensor: where(mask, value, x)."""
    x = _as_dtype(im, im.value(node.args[0]), rt.element_type)
    v = _as_dtype(im, im.value(_fill_value(node, node.args[2]), rt), rt.element_type)
    return im.insert(T.WhereOp(im.value(node.args[1]), v, x, rt), "masked_fill")


def _triangle(upper: bool) -> Converter:
    """tril / triu: where(column - diagonal <= row (>= for triu), x, 0) over the last two dims;
    the row and column numbers are aranges."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        k = int(_arg(node, 1, "diagonal", 0))
        m, n = x.type.get_shape()[-2:]
        i64 = mlir_element_type(torch.int64)
        rows = _positions(im, m, [m, 1], "row")
        cols = im.insert(T.ArangeOp(-k, n - k, 1, TensorType(i64, [n])), "col")
        keep = im.insert((T.GeOp if upper else T.LeOp)(
            cols, rows, TensorType(mlir_element_type(torch.bool), [m, n])), "keep")
        return im.insert(T.WhereOp(keep, x, _scalar(im, 0, x), rt), "triu" if upper else "tril")

    return convert


def _log_softmax(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """log_softmax / _log_softmax: x - max - log(sum(exp(x - max))) along dim, in float32 for
    f16/bf16 (one rounding)."""
    x = _f32(im, _as_dtype(im, im.value(node.args[0]), rt.element_type))
    d = [node.args[1]]
    shifted = _ew(im, "sub", x, _reduce(im, "amax", x, d, True))
    lse = _ew(im, "log", _reduce(im, "sum", _ew(im, "exp", shifted), d, True))
    return _as_dtype(im, _ew(im, "sub", shifted, lse), rt.element_type)


def _logsumexp(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """log(sum(exp(x - m))) + m, m the max (taken as 0 where infinite, as aten), in float32."""
    x = _f32(im, _as_dtype(im, im.value(node.args[0]), rt.element_type))  # (ints: float)
    dims, keep = _dims(node, 1, "dim", _rank(x)), bool(_arg(node, 2, "keepdim", False))
    m = _reduce(im, "amax", x, dims, True)
    inf = im.insert(T.EqOp(_ew(im, "abs", m), _scalar(im, float("inf"), m),
                           _t(m, elt=mlir_element_type(torch.bool))), "inf")
    m = im.insert(T.WhereOp(inf, _scalar(im, 0, m), m, m.type), "max")
    y = _ew(im, "log", _reduce(im, "sum", _ew(im, "exp", _ew(im, "sub", x, m)), dims, keep))
    y = _ew(im, "add", y, _reshape(im, m, y.type.get_shape()))
    return _as_dtype(im, y, rt.element_type)


def _variance(std: bool) -> Converter:
    """var / std (.correction, .dim, .default): sum((x - mean)^2) / max(N - correction, 0),
    in float32 for f16/bf16; std is its sqrt."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = _f32(im, im.value(node.args[0]))
        _, _, y = _mean_var(im, x, *_variance_args(node, x))
        return _as_dtype(im, _ew(im, "sqrt", y) if std else y, rt.element_type)

    return convert


def _variance_args(node: torch.fx.Node, x: SSAValue) -> tuple[list[int], int, bool]:
    """(dims, correction, keepdim) of var / std / var_mean / std_mean (.correction, .dim,
    .default: unbiased at 1, every dim)."""
    overload = node.target._overloadname
    dims = _dims(node, 1, "dim", _rank(x)) if overload != "default" else list(range(_rank(x)))
    if overload == "correction":
        c = node.kwargs.get("correction")
        return dims, 1 if c is None else c, bool(node.kwargs.get("keepdim", False))
    correction = int(_arg(node, 1 if overload == "default" else 2, "unbiased", True))
    return dims, correction, overload == "dim" and bool(_arg(node, 3, "keepdim", False))


def _mean_var(im: Importer, x: SSAValue, dims, correction: int, keep: bool
              ) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(the mean over `dims`, kept as size-1 dims; x - mean; sum((x - mean)^2) / max(N -
    correction, 0), `keep` saying whether it keeps them): var/std, var_mean/std_mean and
    batch_norm's batch statistics, one way."""
    n = math.prod(x.type.get_shape()[d] for d in dims if d < _rank(x))
    mean = _ew(im, "div", _reduce(im, "sum", x, dims, True), _scalar(im, n, x))
    # the deviations from the first element's: a float32 sum rounds a large common offset
    # (1e4 + 1e-3 noise: the variance 12% off), what remains of it is exact (one more slice,
    # subtraction and sum per var or batch norm: accepted)
    shifted = x
    if n:  # (an empty dim has no first element, and nothing to round)
        first = x
        for d in (d for d in dims if d < _rank(x)):
            first = im.insert(T.SliceOp(first, d, 0, 1, 1, _t(first, [
                1 if k == d else size for k, size in enumerate(first.type.get_shape())])), "var")
        shifted = _ew(im, "sub", x, first)
    dev = _ew(im, "sub", shifted, _ew(im, "div", _reduce(im, "sum", shifted, dims, True),
                                      _scalar(im, n, x)))
    var = _ew(im, "div", _reduce(im, "sum", _ew(im, "mul", dev, dev), dims, keep),
              _scalar(im, max(n - correction, 0), x))
    return mean, dev, var


def _per_channel(im: Importer, y: SSAValue, weight, bias, shape: list[int]) -> SSAValue:
    """y * weight + bias, each given (an FX argument or None) of the `shape` that broadcasts
    one value a channel: group_norm's and batch_norm's affine step, in float32."""
    for v, name in ((weight, "mul"), (bias, "add")):
        if v is not None:
            y = _ew(im, name, y, _reshape(im, _f32(im, im.value(v)), shape))
    return y


def _vector_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """linalg_vector_norm, in float32 for f16/bf16 (`_p_norm`)."""
    x = _f32(im, _as_dtype(im, im.value(node.args[0]), rt.element_type))
    dims, keep = _dims(node, 2, "dim", _rank(x)), bool(_arg(node, 3, "keepdim", False))
    return _as_dtype(im, _p_norm(im, x, float(_arg(node, 1, "ord", 2)), dims, keep),
                     rt.element_type)


def _p_norm(im: Importer, x: SSAValue, p: float, dims: list[int], keep: bool) -> SSAValue:
    """max|x| (p inf), min|x| (-inf), the count of nonzeros (0), sum|x| (1), sqrt(sum x^2) (2),
    else sum(|x|^p)^(1/p)."""
    a = _ew(im, "abs", x)
    if math.isinf(p):
        return _reduce(im, "amax" if p > 0 else "amin", a, dims, keep)
    if p == 0:
        nz = _cmp(im, "ne", x, _scalar(im, 0, x))
        return _reduce(im, "sum", im.insert(T.ToOp(nz, x.type), "nonzero"), dims, keep)
    if p == 2:
        return _ew(im, "sqrt", _reduce(im, "sum", _ew(im, "mul", x, x), dims, keep))
    if p == 1:
        return _reduce(im, "sum", a, dims, keep)
    y = _reduce(im, "sum", _ew(im, "pow", a, _scalar(im, p, a)), dims, keep)
    return _ew(im, "pow", y, _scalar(im, 1 / p, y))


def _cdist(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """cdist / _cdist_forward: the p-norm of every row pair's difference ([.., P, 1, M] -
    [.., 1, R, M], a reduction over M fused with the broadcast: no P x R x M buffer), in float32
    for f16/bf16. Differences, not PyTorch's |x|^2 + |y|^2 - 2 x.y matmul for p = 2 (its
    default past 25 rows): exact where rows are close, within its rounding elsewhere."""
    if 0 in rt.get_shape():
        return im.insert(T.FullOp(0, rt), "cdist")
    x1, x2 = (_f32(im, im.value(a)) for a in node.args[:2])
    p = float(_arg(node, 2, "p", 2.0))
    a, b = (list(v.type.get_shape()) for v in (x1, x2))
    d = _ew(im, "sub", _reshape(im, x1, [*a[:-1], 1, a[-1]]),
            _reshape(im, x2, [*b[:-2], 1, *b[-2:]]))
    return _as_dtype(im, _p_norm(im, d, p, [_rank(d) - 1], False), rt.element_type)


def _group_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """group_norm: (N, G, C/G * rest) normalized over its last dim (layer_norm without affine),
    then weight and bias per channel; in float32 for f16/bf16, one rounding."""
    return _group_normalized(im, im.value(node.args[0]), node.args[1], _arg(node, 2, "weight"),
                             _arg(node, 3, "bias"), float(_arg(node, 4, "eps", 1e-5)), rt)


def _group_normalized(im: Importer, x: SSAValue, groups: int, w, b, eps: float,
                      rt: TensorType) -> SSAValue:
    """group_norm's computation (instance_norm's too: a group a channel)."""
    x = _f32(im, x)
    shape = list(x.type.get_shape())
    flat = [shape[0], groups, math.prod(shape[1:]) // groups]
    y = _reshape(im, x, flat, "group_norm")
    y = im.insert(T.LayerNormOp(y, None, None, flat[-1:], eps, y.type), "group_norm")
    y = _reshape(im, y, shape, "group_norm")
    y = _per_channel(im, y, w, b, [shape[1], *[1] * (len(shape) - 2)])
    return _as_dtype(im, y, rt.element_type)


def _batch_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """batch_norm: per channel (dim 1), the running statistics in eval mode; in training mode the
    batch's mean and biased variance over every other dim. The running statistics are not
    updated (a compiled program has no side effects). In float32 for f16/bf16, one rounding."""
    w, b, rmean, rvar = (_arg(node, i, n) for i, n in enumerate(
        ("weight", "bias", "running_mean", "running_var"), start=1))
    training, eps = bool(_arg(node, 5, "training")), float(_arg(node, 7, "eps", 1e-5))
    return _channel_normalized(im, im.value(node.args[0]), w, b, rmean, rvar, training, eps, rt)


def _instance_norm(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """instance_norm: each (sample, channel) normalized by its own statistics (group_norm with a
    group a channel); with use_input_stats false (eval mode, track_running_stats), by the
    running statistics, as batch_norm in eval mode. The running statistics PyTorch also updates
    when both are used are not updated here (as batch_norm: a program has no side effects)."""
    x = im.value(node.args[0])
    w, b, rmean, rvar = (_arg(node, i, n) for i, n in enumerate(
        ("weight", "bias", "running_mean", "running_var"), start=1))
    eps = float(_arg(node, 7, "eps", 1e-5))
    if _arg(node, 5, "use_input_stats", True):
        return _group_normalized(im, x, x.type.get_shape()[1], w, b, eps, rt)
    return _channel_normalized(im, x, w, b, rmean, rvar, False, eps, rt)


def _channel_normalized(im: Importer, x: SSAValue, w, b, rmean, rvar, training: bool, eps: float,
                        rt: TensorType) -> SSAValue:
    """batch_norm's computation (instance_norm's in eval mode)."""
    x = _f32(im, x)
    shape = list(x.type.get_shape())
    c = min(1, len(shape) - 1)  # (the channels: dim 1, or the only dim of a vector)
    per_channel = [shape[c], *[1] * (len(shape) - c - 1)]
    if training or rmean is None or rvar is None:
        _, dev, var = _mean_var(im, x, [d for d in range(len(shape)) if d != c], 0, True)
    else:
        mean, var = (_reshape(im, _f32(im, im.value(v)), per_channel) for v in (rmean, rvar))
        dev = _ew(im, "sub", x, mean)
    y = _ew(im, "mul", dev, _ew(im, "rsqrt", _ew(im, "add", var, _scalar(im, eps, var))))
    return _as_dtype(im, _per_channel(im, y, w, b, per_channel), rt.element_type)


def _extreme_with_index(name: str) -> Converter:
    """max.dim / min.dim: (amax, argmax) or (amin, argmin) along one dim."""
    arg = _arg_reduction(f"arg{name}")

    def convert(im: Importer, node: torch.fx.Node, rts) -> tuple[SSAValue, SSAValue]:
        x = im.value(node.args[0])
        d, keep = _norm(node.args[1], max(_rank(x), 1)), bool(_arg(node, 2, "keepdim", False))
        values = _reshape(im, _reduce(im, f"a{name}", x, [d] if _rank(x) else [], keep),
                          rts[0].get_shape())
        return values, arg(im, node, rts[1])

    return convert


RANK_LIMIT = 4096  # the longest dim ranked by counting (n^2 comparisons a row); merged past it
CHUNK = 256  # topk's chunk for k <= 128 (`_chunk_size`)
MERGE_FAN = 8  # a merge's pivots a search step (`_merged`; 8 x 32000 f32 by the model: 64 -> 1116 us, 16 -> 396, 8 -> 308, 4 -> 326)
MERGE_RUN = 256  # a long sort's runs sorted by counting before they are merged (`_merge_sorted`)


def _ranked(kind: str) -> Converter:
    """topk, sort, argsort, kthvalue, median and nanmedian by counting (`_places`): the i-th
    output is the element whose place is i (`_at_places`), its value gathered. Tensor IR has no
    sorting network; this needs none, at n^2 comparisons a row: enough for MoE routers (8-256
    experts) and small sorts; a longer dim by merges of counted runs (`_merge_sorted`), or,
    for a small topk (a vocabulary's logits), by chunks (`_chunked_top`)."""

    def convert(im: Importer, node: torch.fx.Node, rts):
        x = im.value(node.args[0])
        descending, k = False, None
        if kind == "topk":
            k, d = node.args[1], _arg(node, 2, "dim", -1)
            descending = bool(_arg(node, 3, "largest", True))
        elif kind == "kthvalue":
            d = _arg(node, 2, "dim", -1)
        elif kind in ("median", "nanmedian"):
            d = _arg(node, 1, "dim", None)
            if d is None:  # over every element: the value alone
                x, d = _reshape(im, x, [math.prod(x.type.get_shape())], "rank"), 0
        else:
            stable = kind.endswith("stable")  # (stable: keyword-only, before dim)
            d = node.kwargs.get("dim", -1) if stable else _arg(node, 1, "dim", -1)
            descending = bool(node.kwargs.get("descending", False) if stable
                              else _arg(node, 2, "descending", False))
            k = None
        if str(x.type.element_type) == "i1":
            raise FrontendError(f"unsupported '{node.target}' of a bool tensor {where_from(node)}")
        if not _rank(x):
            x = _reshape(im, x, [1])
        d = _norm(d, _rank(x))
        n, last = x.type.get_shape()[d], _rank(x) - 1
        if kind == "kthvalue" and not 1 <= node.args[1] <= n:
            raise FrontendError(f"'{node.target}': k = {node.args[1]} is out of range for a dim "
                                f"of {n} elements {where_from(node)}")
        k = n if k is None else k
        if d != last:
            x = im.insert(T.TransposeOp(x, d, last, _swapped(x, d, last)), "rank")
        if kind in ("kthvalue", "median", "nanmedian"):
            values, idx = _middle(im, node, x, kind)
        else:
            values, idx = _top(im, node, x, k, descending)
        outs = []
        for v in (values, idx):
            if d != last:
                v = im.insert(T.TransposeOp(v, d, last, _swapped(v, d, last)), "rank")
            outs.append(v)
        if kind.startswith("argsort"):
            return _reshape(im, outs[1], rts.get_shape())
        if not isinstance(rts, tuple):  # median / nanmedian of every element
            return _reshape(im, outs[0], rts.get_shape())
        return tuple(_reshape(im, v, rt.get_shape()) for v, rt in zip(outs, rts))

    return convert


def _places(im: Importer, x: SSAValue, descending: bool) -> SSAValue:
    """[.., n, 1]: each element's place along x's last dim, the number of elements that come
    before it (greater, for descending; NaN greatest, as PyTorch; ties by index, so the order
    is stable). n^2 comparisons a row, fused into the sum (no n x n buffer)."""
    rows, n = list(x.type.get_shape()[:-1]), x.type.get_shape()[-1]
    mine, other = _reshape(im, x, [*rows, n, 1], "rank"), _reshape(im, x, [*rows, 1, n], "rank")
    first, second = (other, mine) if descending else (mine, other)
    before = _cmp(im, "gt", first, second)  # [.., i, j]: j comes before i
    tie = _cmp(im, "eq", first, second)
    if not isinstance(x.type.element_type, IntegerType):  # NaN: above every number
        nan_a, nan_b = (_cmp(im, "ne", v, v) for v in (first, second))
        number_b = _cmp(im, "eq", second, second)
        before = _cmp(im, "logical_or", before, _cmp(im, "logical_and", nan_a, number_b))
        tie = _cmp(im, "logical_or", tie, _cmp(im, "logical_and", nan_a, nan_b))
    pos = _positions(im, n, hint="rank")
    earlier = _cmp(im, "lt", _reshape(im, pos, [1, n]), _reshape(im, pos, [n, 1]))
    before = _cmp(im, "logical_or", before, _cmp(im, "logical_and", tie, earlier))
    return _reduce(im, "sum", _as_dtype(im, before, mlir_element_type(torch.int64)), [-1], True)


def _at_places(im: Importer, place: SSAValue, wanted: SSAValue) -> SSAValue:
    """The index of the element at each wanted place ([.., n, 1] places against [.., 1, k]
    wanted: an index sum over a one-hot, [.., k])."""
    n = place.type.get_shape()[-2]
    hot = _as_dtype(im, _cmp(im, "eq", place, wanted), place.type.element_type)  # [.., n, k]
    pos = _positions(im, n, [n, 1], "rank")
    return _reduce(im, "sum", _ew(im, "mul", hot, pos), [-2], False)


def _gathered(im: Importer, x: SSAValue, idx: SSAValue) -> SSAValue:
    """x's entries along its last dim at idx (of x's rank)."""
    return im.insert(T.GatherOp(x, idx, _rank(x) - 1, _t(x, idx.type.get_shape())), "rank")


def _top(im: Importer, node: torch.fx.Node, x: SSAValue, k: int,
         descending: bool) -> tuple[SSAValue, SSAValue]:
    """The first k elements in order along x's last dim and their indices (topk, sort,
    argsort): by chunks where they pay (`_chunk_size`), else by counting, up to RANK_LIMIT,
    past it by merges (`_merge_sorted`)."""
    n = x.type.get_shape()[-1]
    if (size := _chunk_size(n, k)) is not None:
        return _chunked_top(im, node, x, k, size, descending)
    if n > RANK_LIMIT:
        values, idx = _merge_sorted(im, x, descending)
        rows = list(x.type.get_shape()[:-1])
        return _first(im, values, rows, k), _first(im, idx, rows, k)
    idx = _at_places(im, _places(im, x, descending), _positions(im, k, hint="rank"))
    return _gathered(im, x, idx), idx


def _merge_sorted(im: Importer, x: SSAValue, descending: bool) -> tuple[SSAValue, SSAValue]:
    """A row past RANK_LIMIT sorted (stable) by merges: chunks of at most MERGE_RUN sorted by
    counting (a power of two of them, the last padded with values that rank last), then pairs
    of sorted runs merged until one is left. Tensor IR has no indexed store, so a merge reads:
    output j of runs a and b (its co-rank) is a's i-th or b's (j - i)-th, i the least with
    b[j - i - 1] strictly before a[i], found by a search of gathers (`_merged`: MERGE_FAN
    pivots a step); ties go to a, the earlier run, so the sort stays stable."""
    rows, n = list(x.type.get_shape()[:-1]), x.type.get_shape()[-1]
    chunks = 1 << max(0, math.ceil(math.log2(n / MERGE_RUN)))
    m = -(-n // chunks)
    xs = _reshape(im, _padded(im, x, chunks * m - n, descending), [*rows, chunks, m], "sort")
    idx = _at_places(im, _places(im, xs, descending), _positions(im, m, hint="sort"))
    values = _gathered(im, xs, idx)  # [.., chunks, m]
    idx = _ew(im, "add", idx, _ew(im, "mul", _positions(im, chunks, [chunks, 1], "sort"),
                                  _scalar(im, m, idx)))
    while chunks > 1:
        chunks //= 2
        values, idx = (_reshape(im, v, [*rows, chunks, 2 * m], "sort") for v in (values, idx))
        values, idx = _merged(im, values, idx, m, descending)
        m *= 2
    return _first(im, values, rows, n), _first(im, idx, rows, n)


def _merged(im: Importer, values: SSAValue, idx: SSAValue, m: int,
            descending: bool) -> tuple[SSAValue, SSAValue]:
    """Each pair of sorted runs of m along the last dim (a = [:m], b = [m:]) merged by
    co-ranks (`_merge_sorted`): i in [max(0, j - m), min(j, m)], searched with up to MERGE_FAN
    pivots a step (the range cut fan + 1 ways: few steps, so few ops and launches; a binary
    search takes log2 m of them)."""
    shape = list(values.type.get_shape())
    steps = 1
    while (MERGE_FAN + 1) ** steps < m + 1:
        steps += 1
    fan = math.ceil((m + 1) ** (1 / steps)) - 1  # (the fewest pivots for those steps)
    while (fan + 1) ** steps < m + 1:
        fan += 1
    j = _positions(im, 2 * m, hint="merge")
    lo = _ew(im, "maximum", _ew(im, "sub", j, _scalar(im, m, j)), _scalar(im, 0, j))
    hi = _reshape(im, _ew(im, "minimum", j, _scalar(im, m, j)), [2 * m, 1], "merge")
    b_last = _reshape(im, _ew(im, "add", j, _scalar(im, m - 1, j)), [2 * m, 1], "merge")
    reach = m  # the answer is in [lo, lo + reach]

    def read(at: SSAValue) -> SSAValue:  # values at [.., 2m, k] places
        k = at.type.get_shape()[-1]
        flat = _reshape(im, at, [*at.type.get_shape()[:-2], 2 * m * k], "merge")
        got = _gathered(im, values, _spread(im, flat, [*shape[:-1], 2 * m * k]))
        return _reshape(im, got, [*shape[:-1], 2 * m, k], "merge")

    while reach:  # pivots lo - 1 + t * stride: the count of those before the answer moves lo
        stride = -(-(reach + 1) // (fan + 1))
        pivots = -(-(reach + 1) // stride) - 1
        p = _ew(im, "add", _reshape(im, lo, [*lo.type.get_shape(), 1], "merge"), _ew(
            im, "add", _ew(im, "mul", _positions(im, pivots, hint="merge"),
                           _scalar(im, stride, lo)), _scalar(im, stride - 1, lo)))
        a = read(_ew(im, "minimum", p, _scalar(im, m - 1, p)))
        b = read(_ew(im, "maximum", _ew(im, "sub", b_last, p), _scalar(im, m, p)))
        later = _cmp(im, "logical_and", _cmp(im, "lt", p, hi), _not(im, _before(im, b, a, descending)))
        count = _reduce(im, "sum", _as_dtype(im, later, lo.type.element_type), [-1], False)
        lo = _ew(im, "add", lo, _ew(im, "mul", count, _scalar(im, stride, count)))
        reach = stride - 1
    a_at = _ew(im, "minimum", lo, _scalar(im, m - 1, lo))
    b_at = _ew(im, "minimum", _ew(im, "sub", _ew(im, "add", j, _scalar(im, m, j)), lo),
               _scalar(im, 2 * m - 1, lo))
    a, b = (_gathered(im, values, _spread(im, i, shape)) for i in (a_at, b_at))
    take_a = _cmp(im, "logical_and", _cmp(im, "lt", lo, _scalar(im, m, lo)), _cmp(
        im, "logical_or", _cmp(im, "eq", _ew(im, "sub", j, lo), _scalar(im, m, lo)),
        _not(im, _before(im, b, a, descending))))
    src = im.insert(T.WhereOp(take_a, a_at, b_at, a_at.type), "merge")
    return (_kept(im, im.insert(T.WhereOp(take_a, a, b, a.type), "merge")),
            _kept(im, _gathered(im, idx, src)))


def _kept(im: Importer, v: SSAValue) -> SSAValue:
    """v written out: the max over a trailing dim of 1 (exact, NaN kept) is a reduction, which
    loop-fuse moves into no consumer that reads it by a gathered index. A merge's runs are read
    so, level after level; inlined, each level would compute the last one's twice over."""
    shape = list(v.type.get_shape())
    return _reduce(im, "amax", _reshape(im, v, [*shape, 1], "merge"), [-1], False)


def _not(im: Importer, c: SSAValue) -> SSAValue:
    return _cmp(im, "eq", c, _scalar(im, 0, c))


def _first(im: Importer, v: SSAValue, rows: list[int], k: int) -> SSAValue:
    """The first k entries of v's last dim, as [*rows, k] (v: [*rows, n] or [*rows, 1, n])."""
    n = v.type.get_shape()[-1]
    v = _reshape(im, v, [*rows, n], "sort")
    return v if n == k else im.insert(T.SliceOp(v, len(rows), 0, k, 1, _t(v, [*rows, k])), "sort")


def _spread(im: Importer, v: SSAValue, shape: list[int]) -> SSAValue:
    """v broadcast to `shape` (an index for gather: of the input's rank and shape)."""
    if list(v.type.get_shape()) == shape:
        return v
    v = _reshape(im, v, [1] * (len(shape) - _rank(v)) + list(v.type.get_shape()), "merge")
    return im.insert(T.ExpandOp(v, _t(v, shape)), "merge")


def _before(im: Importer, a: SSAValue, b: SSAValue, descending: bool) -> SSAValue:
    """a strictly before b in the order (greater, for descending); NaN greatest, as PyTorch."""
    first, second = (b, a) if descending else (a, b)
    lt = _cmp(im, "lt", first, second)
    if isinstance(a.type.element_type, IntegerType):
        return lt
    return _cmp(im, "logical_or", lt, _cmp(im, "logical_and", _cmp(im, "eq", first, first),
                                           _cmp(im, "ne", second, second)))


def _chunked_top(im: Importer, node: torch.fx.Node, x: SSAValue, k: int, size: int,
                 descending: bool) -> tuple[SSAValue, SSAValue]:
    """topk in two stages: the top k of each chunk of `size` (the last one padded with values
    that rank after every element), then the top k of those candidates (chunked again while
    that pays), its indices mapped back through the chunks' (chunk * size + index within it).
    Exact: every element of the top k is among its chunk's top k; pads lose every tie (they
    come last), so none is taken."""
    rows, n = list(x.type.get_shape()[:-1]), x.type.get_shape()[-1]
    chunks = -(-n // size)
    xs = _reshape(im, _padded(im, x, chunks * size - n, descending), [*rows, chunks, size], "topk")
    values, idx = _top(im, node, xs, k, descending)  # [.., chunks, k]
    idx = _ew(im, "add", idx, _ew(im, "mul", _positions(im, chunks, [chunks, 1], "topk"),
                                  _scalar(im, size, idx)))
    values, idx = (_reshape(im, v, [*rows, chunks * k], "topk") for v in (values, idx))
    values, picked = _top(im, node, values, k, descending)
    return values, _gathered(im, idx, picked)


def _chunk_size(n: int, k: int) -> int | None:
    """The chunk length for a top k over n: CHUNK, or 2k for a larger k (the candidates then
    at most about half of n, so chunking ends), evened out so the last chunk is nearly full.
    Small chunks: with the candidates chunked again, a row costs about n s^2 / (s - k)
    comparisons for chunks of s (n^2 counted at once), least near s = 2k; CHUNK keeps the
    levels (launches) few for a small k. None where chunks do not pay (a row within
    RANK_LIMIT of at most two chunks: a sort, a router) or cannot (k > RANK_LIMIT / 2)."""
    size = max(2 * k, CHUNK)
    if 2 * k > RANK_LIMIT or n <= min(2 * size, RANK_LIMIT):
        return None
    return -(-n // -(-n // size))


def _padded(im: Importer, x: SSAValue, pad: int, descending: bool) -> SSAValue:
    """x with `pad` elements after its last dim that rank no earlier than any of its elements
    (ties go by index, so they rank last): -inf (descending) or NaN (ascending: NaN is
    greatest) for floats, the row's least or greatest value for integers."""
    if not pad:
        return x
    shape = list(x.type.get_shape())
    fill = _t(x, [*shape[:-1], pad])
    if isinstance(x.type.element_type, IntegerType):
        tail = im.insert(T.ExpandOp(_reduce(im, "amin" if descending else "amax", x, [-1], True),
                                    fill), "topk")
    else:
        tail = im.insert(T.FullOp(-math.inf if descending else math.nan, fill), "topk")
    return im.insert(T.CatOp([x, tail], len(shape) - 1, _t(x, [*shape[:-1], shape[-1] + pad])),
                     "topk")


def _middle(im: Importer, node: torch.fx.Node, x: SSAValue,
            kind: str) -> tuple[SSAValue, SSAValue]:
    """kthvalue, median or nanmedian along x's last dim: the element at one place, [.., 1]."""
    rows, n = list(x.type.get_shape()[:-1]), x.type.get_shape()[-1]
    i64 = mlir_element_type(torch.int64)
    if kind == "kthvalue":
        wanted = im.insert(T.FullOp(node.args[1] - 1, TensorType(i64, [])), "rank")
    elif kind == "median":
        wanted = im.insert(T.FullOp((n - 1) // 2, TensorType(i64, [])), "rank")
    else:  # nanmedian: the middle of the numbers (NaN rank last)
        numbers = _reduce(im, "sum", _as_dtype(im, _cmp(im, "eq", x, x), i64), [-1], True)
        numbers = im.insert(T.WhereOp(_cmp(im, "eq", numbers, _scalar(im, 0, numbers)),
                                      _scalar(im, n, numbers), numbers, numbers.type),
                            "rank")  # (all NaN: the middle of them, as PyTorch)
        half = _ew(im, "div", _ew(im, "add", numbers, _scalar(im, 1, numbers)),
                   _scalar(im, 2, numbers))
        wanted = _reshape(im, _ew(im, "sub", half, _scalar(im, 1, half)), [*rows, 1, 1], "rank")
    if n <= RANK_LIMIT:
        idx = _at_places(im, _places(im, x, False), wanted)
    else:  # past it: the sorted order read at the wanted place
        idx = _gathered(im, _merge_sorted(im, x, False)[1], _spread(
            im, _reshape(im, wanted, [*rows, 1]) if _rank(wanted) else wanted, [*rows, 1]))
    if kind == "median":  # a row with a NaN: its first NaN
        nans = _as_dtype(im, _cmp(im, "ne", x, x), mlir_element_type(torch.float32))
        first_nan = im.insert(T.ARG_CLASSES["argmax"](nans, _rank(x) - 1, True, idx.type), "rank")
        some = _cmp(im, "gt", _reduce(im, "amax", nans, [-1], True), _scalar(im, 0, nans))
        idx = im.insert(T.WhereOp(some, first_nan, idx, idx.type), "rank")
    return _gathered(im, x, idx), idx


def _scattered(name: str) -> Converter:
    """scatter (a value, or src: the last write to a place wins, as PyTorch's CPU loop),
    scatter_add, scatter_reduce, and index_fill / index_copy / index_add / index_reduce (a 1-d
    index along dim: the same with the index broadcast over the other dims). By matching, as
    the ranking above: a place p along dim is hit by the index entries equal to p; P x J
    comparisons a row (places x entries), refused beyond RANK_LIMIT^2."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x, d, kind = im.value(node.args[0]), node.args[1], name
        idx = im.value(node.args[2])
        rank = max(_rank(x), 1)
        src = node.args[3] if len(node.args) > 3 else _arg(node, 3, "value")
        src = im.value(src, x.type)
        how, keep = None, True
        if kind in ("scatter_reduce", "index_reduce"):
            how, keep = node.args[4], node.kwargs.get("include_self", True)
        elif kind.startswith("scatter") and (how := node.kwargs.get("reduce")) is not None:
            # (reduce='multiply': the place's value times its hits, scatter_reduce's prod)
            kind, how = ("scatter_add", None) if how == "add" else ("scatter", "prod")
        fill = not isinstance(node.args[3] if len(node.args) > 3 else node.kwargs.get("value"),
                              torch.fx.Node)  # src: one number
        if not _rank(x):
            x = _reshape(im, x, [1])
        d = _norm(d, rank)
        if kind.startswith("index"):  # a 1-d index of dim's places: every slice alike
            shape = list(x.type.get_shape())
            shape[d] = idx.type.get_shape()[0] if _rank(idx) else 1
            idx = _reshape(im, idx, [shape[d] if i == d else 1 for i in range(rank)])
            idx = im.insert(T.ExpandOp(idx, _t(idx, shape)), "scatter")
            if kind == "index_add" and (alpha := _arg(node, 4, "alpha", 1)) != 1:
                src = _ew(im, "mul", src, im.value(alpha, src.type))
        elif not _rank(idx):
            idx = _reshape(im, idx, [1])
        if fill:
            src = im.insert(T.ExpandOp(src, _t(idx, elt=x.type.element_type)), "scatter")
        elif not _rank(src):
            src = _reshape(im, src, [1] * rank)
        y = _scatter(im, node, x, d, idx, src, "scatter_reduce" if how else kind, how, keep)
        return _reshape(im, y, rt.get_shape())

    return convert


def _scatter(im: Importer, node: torch.fx.Node, x: SSAValue, d: int, idx: SSAValue,
             src: SSAValue, kind: str, how: str | None = None, keep: bool = True) -> SSAValue:
    """x with src's entries put at the places along dim d that idx names (idx and src of x's
    rank; kind: scatter (the last write wins), scatter_add / index_add, scatter_reduce `how`)."""
    rank = _rank(x)
    xshape = list(x.type.get_shape())
    places, entries = xshape[d], idx.type.get_shape()[d]
    i64 = mlir_element_type(torch.int64)
    idx = _from_end(im, _as_dtype(im, idx, i64), places)  # (index_fill's may be negative)
    # the places an index shorter than x (off dim) does not reach: entries that match none
    # (src beyond the index is not read: what stands there is never taken)
    shape = [entries if k == d else n for k, n in enumerate(xshape)]
    idx, src = _resized(im, idx, shape, -1), _resized(im, src, shape, 0.0)
    if places * entries > RANK_LIMIT ** 2:
        raise FrontendError(
            f"unsupported '{node.target}' of {entries} entries into {places} places (deplo "
            f"matches each entry against each place, and takes at most {RANK_LIMIT}^2 "
            f"pairs a row) {where_from(node)}")
    last = rank - 1
    idx, x0 = (im.insert(T.TransposeOp(v, d, last, _swapped(v, d, last)), "scatter")
               if d != last else v for v in (idx, x))
    rows = list(idx.type.get_shape()[:-1])
    pos = [_positions(im, m, hint="scatter") for m in (places, entries)]
    hit = _cmp(im, "eq", _reshape(im, idx, [*rows, 1, entries]),
               _reshape(im, pos[0], [places, 1]))  # [.., p, j]
    src = im.insert(T.TransposeOp(src, d, last, _swapped(src, d, last)), "scatter") \
        if d != last else src
    if kind == "scatter_reduce":
        y = _reduce_hits(im, hit, _reshape(im, src, [*rows, 1, entries]), x0, how, keep)
    elif kind in ("scatter_add", "index_add"):
        part = _f32(im, _reshape(im, src, [*rows, 1, entries]))
        added = _reduce(im, "sum", im.insert(T.WhereOp(
            hit, part, _scalar(im, 0, part), _t(part, [*rows, places, entries])), kind),
            [-1], False)
        y = _as_dtype(im, _ew(im, "add", _f32(im, x0), added), x.type.element_type)
    else:  # the last entry that writes a place wins
        writer = _reduce(im, "amax", im.insert(T.WhereOp(
            hit, _reshape(im, pos[1], [1, entries]), _scalar(im, -1, pos[1]),
            TensorType(i64, [*rows, places, entries])), kind), [-1], False)
        written = _cmp(im, "ge", writer, _scalar(im, 0, writer))
        at = _ew(im, "maximum", writer, _scalar(im, 0, writer))
        taken = im.insert(T.GatherOp(src, at, last, _t(src, at.type.get_shape())), kind)
        y = im.insert(T.WhereOp(written, taken, x0, x0.type), kind)
    if d != last:
        y = im.insert(T.TransposeOp(y, d, last, _swapped(y, d, last)), kind)
    return y


def wrap_uint8(im: Importer, v: SSAValue) -> SSAValue:
    """A uint8 result as uint8 holds it: the low 8 bits of its i16 carrier (frontend/dtypes.py).
    Sums, products, negations and shifts wrap modulo 2^16 in i16, which keeps the low bits;
    every other op stays within 0..255."""
    return im.insert(T.BITWISE_CLASSES["bitwise_and"](v, _scalar(im, 255, v), v.type), "uint8")


def _index_put(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """index_put (`x[indices] = values`; accumulate: `+=`). Integer indices: each entry's place
    in the indexed dims, as one number (the dims brought first and flattened), an index_copy
    (the last write wins, as PyTorch's CPU loop) or index_add of the values (as `x[indices]`
    reads them: the broadcast index in place of adjacent indexed dims, else first) over the
    other dims. A boolean mask: a select where the values do not depend on how many elements
    it picks (one value, or one a trailing position)."""
    x, given = im.value(node.args[0]), list(node.args[1])
    values = im.value(node.args[2], x.type)
    values = _as_dtype(im, values, x.type.element_type)
    accumulate = bool(_arg(node, 3, "accumulate", False))
    shape = list(x.type.get_shape())
    dims = [k for k, t in enumerate(given) if t is not None]
    idxs = [im.value(given[k]) for k in dims]
    if not dims:  # x[...] = values: every element
        v = im.insert(T.ExpandOp(values, _t(values, shape)), "index_put")
        return _ew(im, "add", x, v) if accumulate else v
    if any(str(v.type.element_type) == "i1" for v in idxs):
        return _masked_put(im, node, x, dims, idxs, values, accumulate)
    i64 = mlir_element_type(torch.int64)
    idxs = [_as_dtype(im, v, i64) for v in idxs]
    b = []
    for v in idxs:
        b = T.broadcast_shapes(b, v.type.get_shape())
    rest = [k for k in range(len(shape)) if k not in dims]
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    front = dims[0] if adjacent else 0  # where x[indices] puts the index's dims
    kept = [shape[k] for k in rest]
    read = kept[:front] + list(b) + kept[front:]  # the shape of x[indices]
    while _rank(values) > len(read) and values.type.get_shape()[0] == 1:  # (as aten: leading
        values = _reshape(im, values, values.type.get_shape()[1:])  # 1s dropped)
    values = im.insert(T.ExpandOp(values, _t(values, read)), "index_put")
    order = [*range(front, front + len(b)), *range(front), *range(front + len(b), len(read))]
    if order != sorted(order):
        values = im.insert(T.PermuteOp(values, order, _t(values, [read[k] for k in order])),
                           "index_put")
    entries = math.prod(b)
    values = _reshape(im, values, [entries, *kept])
    flat = None  # each entry's place in the indexed dims, row-major
    for k, v in zip(dims, idxs):
        v = _from_end(im, v, shape[k])
        flat = v if flat is None else _ew(im, "add", _ew(
            im, "mul", flat, _scalar(im, shape[k], flat)), v)
    flat = im.insert(T.ExpandOp(flat, _t(flat, b)), "index_put")
    places = math.prod(shape[k] for k in dims)
    moved = [*dims, *rest]
    x0 = im.insert(T.PermuteOp(x, moved, _t(x, [shape[k] for k in moved])), "index_put") \
        if moved != sorted(moved) else x
    x0 = _reshape(im, x0, [places, *kept])
    flat = _reshape(im, flat, [entries] + [1] * len(kept))
    flat = im.insert(T.ExpandOp(flat, _t(flat, [entries, *kept])), "index_put")
    y = _scatter(im, node, x0, 0, flat, values, "index_add" if accumulate else "index_copy")
    y = _reshape(im, y, [shape[k] for k in moved])
    if moved != sorted(moved):
        back = [moved.index(k) for k in range(len(shape))]
        y = im.insert(T.PermuteOp(y, back, _t(y, shape)), "index_put")
    return y


def _masked_put(im: Importer, node: torch.fx.Node, x: SSAValue, dims: list[int],
                idxs: list[SSAValue], values: SSAValue, accumulate: bool) -> SSAValue:
    """index_put with a boolean mask over dims d.. d+m: the values broadcast to x[mask]'s
    shape [.., picked, trailing..] without depending on `picked` are a select."""
    shape = list(x.type.get_shape())
    mask, d = idxs[0], dims[0]
    m = _rank(mask)
    vshape = list(values.type.get_shape())
    read = len(shape) - m + 1  # the rank of x[mask]: its dims before, one picked, after
    if len(dims) > 1 or list(mask.type.get_shape()) != shape[d:d + m] or len(vshape) > read \
            or ([1] * read + vshape)[-read:][d] != 1:
        raise FrontendError(
            f"unsupported '{node.target}' with a boolean mask and values whose shape depends "
            f"on how many elements it picks (deplo takes one mask and values broadcast over "
            f"them) {where_from(node)}")
    vshape = ([1] * read + vshape)[-read:]
    values = _reshape(im, values, vshape[:d] + [1] * m + vshape[d + 1:])
    mask = _reshape(im, mask, [1] * d + list(mask.type.get_shape()) + [1] * (len(shape) - d - m))
    if accumulate:
        values = _ew(im, "add", x, values)
    return im.insert(T.WhereOp(mask, values, x, x.type), "index_put")


def _masked_scatter(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """masked_scatter: the k-th element the mask picks (row-major) takes source's k-th element,
    k the running count of the mask (a cumsum), the others keep x; a source shorter than the
    picks is read at its last element (PyTorch raises)."""
    x, mask, src = (im.value(a) for a in node.args[:3])
    shape, n = list(rt.get_shape()), math.prod(rt.get_shape())
    i64 = mlir_element_type(torch.int64)
    x = im.insert(T.ExpandOp(x, _t(x, shape)), "masked_scatter") if x.type != rt else x
    mask = im.insert(T.ExpandOp(mask, _t(mask, shape)), "masked_scatter") \
        if list(mask.type.get_shape()) != shape else mask
    flat = _as_dtype(im, _reshape(im, mask, [n]), i64)
    k = im.insert(T.ALONG_DIM_CLASSES["cumsum"](flat, 0, flat.type), "masked_scatter")
    m = max(1, math.prod(src.type.get_shape()))
    k = _ew(im, "minimum", _ew(im, "maximum", _ew(im, "sub", k, _scalar(im, 1, k)),
                               _scalar(im, 0, k)), _scalar(im, m - 1, k))
    taken = im.insert(T.IndexOp(_reshape(im, src, [m]), [k], [0], _t(src, [n])), "masked_scatter")
    return im.insert(T.WhereOp(mask, _reshape(im, taken, shape), x, rt), "masked_scatter")


_HIT_REDUCTIONS = {"sum": ("sum", "add", 0.0), "mean": ("sum", "add", 0.0),
                   "prod": ("prod", "mul", 1.0), "amax": ("amax", "maximum", -math.inf),
                   "amin": ("amin", "minimum", math.inf)}


def _reduce_hits(im: Importer, hit: SSAValue, part: SSAValue, x: SSAValue, how: str,
                 include_self: bool) -> SSAValue:
    """scatter_reduce: each place's hits ([.., p, j] of `part` [.., 1, j]) reduced by `how`
    (with x's own value when `include_self`), in f32 for f16/bf16 (f64 for an integer mean,
    floored as aten); a place no entry hits keeps x."""
    reduce_name, combine, identity = _HIT_REDUCTIONS[how]
    elt = x.type.element_type
    integer = isinstance(elt, IntegerType)
    wide = (lambda v: _as_dtype(im, v, mlir_element_type(torch.float64))) \
        if integer and how == "mean" else (lambda v: _f32(im, v))
    part, base = wide(part), wide(x)
    if integer and how in ("amax", "amin"):  # (no integer is past every int64: the row's
        none = _reduce(im, "amin" if how == "amax" else "amax", part, [-1], True)  # extreme)
    else:
        none = _scalar(im, identity, part)
    shape = list(hit.type.get_shape())
    got = _reduce(im, reduce_name, im.insert(T.WhereOp(hit, part, none, _t(part, shape)),
                                             "scatter_reduce"), [-1], False)
    if include_self:
        got = _ew(im, combine, base, got)
    i64 = mlir_element_type(torch.int64)
    hits = _reduce(im, "sum", _as_dtype(im, hit, i64), [-1], False)
    if how == "mean":
        count = _as_dtype(im, hits, part.type.element_type)
        if include_self:
            count = _ew(im, "add", count, _scalar(im, 1, count))
        got = _ew(im, "div", got, _ew(im, "maximum", count, _scalar(im, 1, count)))
        if integer:
            got = _ew(im, "floor", got)
    return im.insert(T.WhereOp(_cmp(im, "gt", hits, _scalar(im, 0, hits)),
                               _as_dtype(im, got, elt), x, x.type), "scatter_reduce")


def _swapped(x: SSAValue, a: int, b: int) -> TensorType:
    shape = list(x.type.get_shape())
    shape[a], shape[b] = shape[b], shape[a]
    return _t(x, shape)


def _round_decimals(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """round.decimals: round(x * 10^d) / 10^d (d < 0: round(x / 10^-d) * 10^-d), as aten."""
    x, d = im.value(node.args[0]), int(_arg(node, 1, "decimals", 0))
    if d == 0:
        return im.insert(T.UNARY_CLASSES["round"](x, rt), "round")
    scale = _scalar(im, 10.0 ** abs(d), x)
    up, down = ("mul", "div") if d > 0 else ("div", "mul")
    return _ew(im, down, im.insert(T.UNARY_CLASSES["round"](_ew(im, up, x, scale), rt), "round"),
               scale)


def _hardtanh(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """hardtanh (relu6 is hardtanh(0, 6)): clamp to [min_val, max_val]; NaN stays NaN."""
    y = im.value(node.args[0])
    lo, hi = float(_arg(node, 1, "min_val", -1.0)), float(_arg(node, 2, "max_val", 1.0))
    return _ew(im, "minimum", _ew(im, "maximum", y, _scalar(im, lo, y)), _scalar(im, hi, y))


def _leaky_relu(im: Importer, node: torch.fx.Node, rt: TensorType,
                slope: float | None = None) -> SSAValue:
    x = _f32(im, im.value(node.args[0]))
    slope = float(_arg(node, 1, "negative_slope", 0.01)) if slope is None else slope
    return _select_positive(im, x, x, _ew(im, "mul", x, _scalar(im, slope, x)), rt)


def _rrelu(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """rrelu in eval mode: a leaky relu whose slope is the mean of its range (aten's); in
    training mode the slope of each element is random."""
    if _arg(node, 3, "training", False):
        raise FrontendError(f"unsupported rrelu in training mode (random slopes) "
                            f"{where_from(node)}")
    lower, upper = float(_arg(node, 1, "lower", 1 / 8)), float(_arg(node, 2, "upper", 1 / 3))
    return _leaky_relu(im, node, rt, slope=(lower + upper) / 2)


def _elu(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """elu (selu and celu are elus with their constants): scale * x above 0, else
    alpha * scale * expm1(x * input_scale)."""
    x = _f32(im, im.value(node.args[0]))
    alpha, scale, in_scale = (float(_arg(node, i, k, 1.0)) for i, k in
                              ((1, "alpha"), (2, "scale"), (3, "input_scale")))
    neg = _ew(im, "expm1", _ew(im, "mul", x, _scalar(im, in_scale, x)))
    neg = _ew(im, "mul", neg, _scalar(im, alpha * scale, x))
    return _select_positive(im, x, _ew(im, "mul", x, _scalar(im, scale, x)), neg, rt)


def _select_positive(im: Importer, x: SSAValue, pos: SSAValue, neg: SSAValue,
                     rt: TensorType) -> SSAValue:
    """where(x > 0, pos, neg) (NaN takes `neg`, which carries it), rounded once to `rt`."""
    above = _cmp(im, "gt", x, _scalar(im, 0, x))
    y = im.insert(T.WhereOp(above, pos, neg, _t(pos, elt=pos.type.element_type)), "where")
    return _as_dtype(im, y, rt.element_type)


def _bitwise_not(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """~x: a bool's logical not; an integer's -x - 1 (two's complement: x ^ -1)."""
    x = im.value(node.args[0])
    if str(x.type.element_type) == "i1":
        return im.insert(T.EqOp(x, _scalar(im, 0, x), rt), "bitwise_not")
    if not isinstance(x.type.element_type, IntegerType):
        raise FrontendError(f"bitwise_not of a {x.type.element_type} tensor {where_from(node)}")
    return _ew(im, "sub", _ew(im, "neg", x), _scalar(im, 1, x))


def _is_value(kind: str) -> Converter:
    """isnan (x != x), isinf (|x| == inf), logical_not (x == 0)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        if kind == "nan":
            return im.insert(T.NeOp(x, x, rt), "isnan")
        if kind == "inf":
            if isinstance(x.type.element_type, IntegerType):
                return im.insert(T.FullOp(0.0, rt), "isinf")
            return im.insert(T.EqOp(_ew(im, "abs", x), _scalar(im, math.inf, x), rt), "isinf")
        return im.insert(T.EqOp(x, _scalar(im, 0, x), rt), "logical_not")

    return convert


def _any_all(name: str) -> Converter:
    """any / all (.default, .dim, .dims): the sum (any: 0 over nothing) / min (all: +inf over
    nothing) of `x != 0` as 0/1 floats, then != 0 (in uint8 for a uint8 x, as aten's)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        nz = _cmp(im, "ne", x, _scalar(im, 0, x))
        f = im.insert(T.ToOp(nz, _t(x, elt=mlir_element_type(torch.float32))), name)
        dims = _dims(node, 1, "dim", _rank(x)) if len(node.args) > 1 or "dim" in node.kwargs \
            else list(range(_rank(x)))
        y = _reduce(im, "sum" if name == "any" else "amin", f, dims,
                    bool(_arg(node, 2, "keepdim", False)))
        truth = im.insert(T.NeOp(y, _scalar(im, 0, y), _t(y, elt=mlir_element_type(torch.bool))),
                          name)
        return _as_dtype(im, truth, rt.element_type)  # (of a uint8 tensor, aten's is uint8)

    return convert


def _moments(std: bool) -> Converter:
    """var_mean / std_mean (.correction, .dim): (var or std, the mean the variance used)."""

    def convert(im: Importer, node: torch.fx.Node, rts) -> tuple[SSAValue, SSAValue]:
        x = _f32(im, im.value(node.args[0]))
        mean, _, var = _mean_var(im, x, *_variance_args(node, x))
        mean = _reshape(im, mean, var.type.get_shape())
        return (_as_dtype(im, _ew(im, "sqrt", var) if std else var, rts[0].element_type),
                _as_dtype(im, mean, rts[1].element_type))

    return convert


def _modulo(name: str) -> Converter:
    """fmod (C's: the sign of a), remainder (the sign of b: fmod, plus b where the signs
    differ) and floor_divide ((a - remainder) / b, rounded as aten's div_floor_floating); in
    float32 for f16/bf16, one rounding. On integers too: C's `%` and `/` (truncating), then the
    same correction (take_along_dim's decomposition wraps negative indices with remainder,
    `i // 2` floors); a zero divisor, which PyTorch raises on, is undefined here, as in CUDA."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        a, b = _opmath_operands(im, node, rt, scalar_in_opmath=name == "floor_divide",
                                scalar_tensors=name == "floor_divide")
        mod = _ew(im, "fmod", a, b)
        zero = _scalar(im, 0, mod)
        fix = _cmp(im, "logical_and", _cmp(im, "ne", mod, zero),
                   _cmp(im, "ne", _cmp(im, "lt", b, zero), _cmp(im, "lt", mod, zero)))
        if name == "remainder":
            mod = im.insert(T.WhereOp(fix, _ew(im, "add", mod, b), mod, mod.type))
        if name == "floor_divide" and isinstance(rt.element_type, IntegerType):
            q = _ew(im, "div", a, b)
            mod = im.insert(T.WhereOp(fix, _ew(im, "sub", q, _scalar(im, 1, q)), q, q.type))
        elif name == "floor_divide":
            div = _ew(im, "div", _ew(im, "sub", a, mod), b)
            div = im.insert(T.WhereOp(fix, _ew(im, "sub", div, _scalar(im, 1, div)), div, div.type))
            down = _ew(im, "floor", div)
            up = _cmp(im, "gt", _ew(im, "sub", div, down), _scalar(im, 0.5, div))
            q = im.insert(T.WhereOp(up, _ew(im, "add", down, _scalar(im, 1, down)), down, div.type))
            exact = _ew(im, "div", a, b)  # (b == 0: a / b; a zero quotient keeps its sign)
            q = im.insert(T.WhereOp(_cmp(im, "eq", div, zero), _ew(im, "mul", exact, zero), q,
                                    div.type))
            mod = im.insert(T.WhereOp(_cmp(im, "eq", b, zero), exact, q, div.type))
        return _as_dtype(im, mod, rt.element_type)

    return convert


def _logaddexp(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)), in float32 for f16/bf16;
    where a == b it is a + log 2 (two equal infinities give that infinity, not NaN)."""
    a, b = _opmath_operands(im, node, rt, scalar_in_opmath=False)
    gap = _ew(im, "neg", _ew(im, "abs", _ew(im, "sub", a, b)))
    y = _ew(im, "add", _ew(im, "maximum", a, b), _ew(im, "log1p", _ew(im, "exp", gap)))
    same = _ew(im, "add", a, _scalar(im, math.log(2), a))
    eq = _cmp(im, "eq", a, b)
    return _as_dtype(im, im.insert(T.WhereOp(eq, same, y, y.type), "logaddexp"), rt.element_type)


def _copy(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """copy (functional, from decompositions that write a slice): `src` broadcast to `self`'s
    shape in its dtype."""
    src = _as_dtype(im, im.value(node.args[1]), rt.element_type)
    return src if src.type == rt else im.insert(T.ExpandOp(src, rt), "copy")


def _hypot(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """sqrt(a^2 + b^2) without overflow: m sqrt(1 + (n/m)^2) for m, n the larger and smaller
    magnitude (0 where m is, inf where either is, as C's hypot); in float32 for f16/bf16."""
    a, b = (_ew(im, "abs", _f32(im, _as_dtype(im, im.value(x, rt), rt.element_type)))
            for x in node.args[:2])
    m, n = _ew(im, "maximum", a, b), _ew(im, "minimum", a, b)
    r = _ew(im, "div", n, m)
    y = _ew(im, "mul", m, _ew(im, "sqrt", _ew(im, "add", _scalar(im, 1, r), _ew(im, "mul", r, r))))
    y = im.insert(T.WhereOp(_cmp(im, "eq", m, _scalar(im, 0, m)), m, y, y.type))
    inf = _scalar(im, math.inf, y)
    either = _cmp(im, "logical_or", _cmp(im, "eq", a, inf), _cmp(im, "eq", b, inf))
    return _as_dtype(im, im.insert(T.WhereOp(either, inf, y, y.type)), rt.element_type)


def _copysign(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """|a| with the sign of b, -0 included (b < 0, or b == 0 and 1 / b < 0). Float compares
    cannot see a NaN's sign bit: a NaN b counts as positive (PyTorch reads the bit)."""
    a, b = (_as_dtype(im, im.value(x, rt), rt.element_type) for x in node.args[:2])
    mag = _ew(im, "abs", a)
    zero = _scalar(im, 0, b)
    negative_zero = _cmp(im, "logical_and", _cmp(im, "eq", b, zero),
                         _cmp(im, "lt", _ew(im, "reciprocal", b), zero))
    negative = _cmp(im, "logical_or", _cmp(im, "lt", b, zero), negative_zero)
    return im.insert(T.WhereOp(negative, _ew(im, "neg", mag), mag, rt), "copysign")


def _div_mode(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """div with rounding_mode: None is a / b; "floor" is floor_divide; "trunc" is C's integer
    division, or trunc(a / b) on floats: in float32 for f16/bf16, the quotient of two tensors
    rounded to their type before the trunc (as aten's CPU kernel: 2.99 is 3 in bf16)."""
    mode = node.kwargs.get("rounding_mode")
    if mode is None:
        return _binary("div")(im, node, rt)
    if mode == "floor":
        return _modulo("floor_divide")(im, node, rt)
    a, b = _opmath_operands(im, node, rt)
    q = _ew(im, "div", a, b)
    if isinstance(rt.element_type, IntegerType):
        return q
    if all(isinstance(x, torch.fx.Node) for x in node.args[:2]):
        q = _as_dtype(im, q, rt.element_type)
    return _as_dtype(im, _ew(im, "trunc", q), rt.element_type)


def _fmax_fmin(name: str) -> Converter:
    """fmax / fmin: maximum / minimum, but a NaN operand gives the other one (NaN only where
    both are), as C's fmax."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        a, b = (_as_dtype(im, im.value(x, rt), rt.element_type) for x in node.args[:2])
        shape = T.broadcast_shapes(a.type.get_shape(), b.type.get_shape())
        y = _ew(im, "maximum" if name == "fmax" else "minimum", a, b)
        y = im.insert(T.WhereOp(_cmp(im, "ne", a, a), b, y, _t(y, shape)), name)
        return im.insert(T.WhereOp(_cmp(im, "ne", b, b), a, y, _t(y, shape)), name)

    return convert


def _signbit(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """x < 0, or x is -0 (1 / x < 0). Float compares cannot see a NaN's sign bit: a NaN counts
    as positive (PyTorch reads the bit), as in copysign."""
    x = im.value(node.args[0])
    if isinstance(x.type.element_type, IntegerType):
        return _cmp(im, "lt", x, _scalar(im, 0, x))
    zero = _scalar(im, 0, x)
    negative_zero = _cmp(im, "logical_and", _cmp(im, "eq", x, zero),
                         _cmp(im, "lt", _ew(im, "reciprocal", x), zero))
    return _cmp(im, "logical_or", _cmp(im, "lt", x, zero), negative_zero)


def _diagonal_scatter(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """x with src on its diagonal (dims d1, d2, offset): what `y.diagonal().fill_(v)` is once
    functional (PyTorch's decomposition of it writes in place). Place (i, j) of d1 x d2 is on
    the diagonal where j - i is the offset, and takes src's entry i (offset >= 0) or j."""
    x, src = im.value(node.args[0]), im.value(node.args[1])
    src = _as_dtype(im, src, x.type.element_type)
    rank, shape = _rank(x), list(x.type.get_shape())
    offset = _arg(node, 2, "offset", 0)
    d1, d2 = _norm(_arg(node, 3, "dim1", 0), rank), _norm(_arg(node, 4, "dim2", 1), rank)
    n1, n2, length = shape[d1], shape[d2], src.type.get_shape()[-1]
    if not length:  # an empty diagonal: nothing written
        return x
    i, j = _positions(im, n1, [n1, 1], "diagonal_scatter"), \
        _positions(im, n2, [1, n2], "diagonal_scatter")
    on = _cmp(im, "eq", _ew(im, "sub", j, i), _scalar(im, offset, i))  # [n1, n2]
    at = im.insert(T.ExpandOp(i if offset >= 0 else j, _t(i, [n1, n2])), "diagonal_scatter")
    at = _ew(im, "minimum", at, _scalar(im, length - 1, at))  # (off the diagonal: unread)
    picked = im.insert(T.IndexOp(src, [at], [_rank(src) - 1], _t(
        src, [*src.type.get_shape()[:-1], n1, n2])), "diagonal_scatter")  # [rest.., n1, n2]
    rest = [k for k in range(rank) if k not in (d1, d2)]
    order = [*rest, d1, d2]  # picked's dims, as x's dims
    back = [order.index(k) for k in range(rank)]
    if back != sorted(back):
        picked = im.insert(T.PermuteOp(picked, back, _t(picked, shape)), "diagonal_scatter")
    if d1 > d2:  # the mask's dims in x's order
        on = im.insert(T.PermuteOp(on, [1, 0], _t(on, [n2, n1])), "diagonal_scatter")
    on = _reshape(im, on, [n if k in (d1, d2) else 1 for k, n in enumerate(shape)],
                  "diagonal_scatter")
    return im.insert(T.WhereOp(on, picked, x, rt), "diagonal_scatter")


def _as_strided(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """as_strided of a tensor laid out from its storage's start (what PyTorch's decompositions
    of diagonal, unfold and einsum's repeated index leave): the flat tensor gathered at
    storage_offset + sum_k i_k stride_k, an index the loop level computes from the loop
    variables. A view's storage (a transpose's, a slice's offset) is not what deplo's value
    holds: refused."""
    src = node.args[0]
    val = src.meta.get("val") if isinstance(src, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not val.is_contiguous() or val.storage_offset():
        raise FrontendError(f"unsupported as_strided of a non-contiguous tensor (a view, or a "
                            f"result laid out like one: its strides refer to a storage deplo's "
                            f"values do not have) {where_from(node)}")
    x = im.value(src)
    size, stride = [int(n) for n in node.args[1]], [int(s) for s in node.args[2]]
    offset = int(_arg(node, 3, "storage_offset", 0) or 0)
    numel = math.prod(x.type.get_shape())
    reach = [sum((n - 1) * f(st, 0) for n, st in zip(size, stride)) for f in (min, max)]
    if 0 not in size and (offset + reach[0] < 0 or offset + reach[1] >= numel):
        raise FrontendError(f"unsupported as_strided past its input's {numel} elements (into "
                            f"its base's storage) {where_from(node)}")
    i64 = mlir_element_type(torch.int64)
    idx = im.insert(T.FullOp(offset, TensorType(i64, [])), "as_strided")
    for k, (n, step) in enumerate(zip(size, stride)):
        if n > 1 and step:
            at = im.insert(T.ArangeOp(0, n * step, step, TensorType(i64, [n])), "as_strided")
            idx = _ew(im, "add", idx, _reshape(im, at, [1] * k + [n] + [1] * (len(size) - k - 1)))
    if list(idx.type.get_shape()) != size:
        idx = im.insert(T.ExpandOp(idx, TensorType(i64, size)), "as_strided")
    flat = _reshape(im, x, [numel], "as_strided")
    return im.insert(T.IndexOp(flat, [idx], [0], rt), "as_strided")


def _flip(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """flip: each dim read through a reversed arange (an index on that dim)."""
    x = im.value(node.args[0])
    i64 = mlir_element_type(torch.int64)
    for d in sorted({_norm(d, max(_rank(x), 1)) for d in node.args[1]}):
        n = x.type.get_shape()[d] if _rank(x) else 1
        if n <= 1:
            continue
        idx = im.insert(T.ArangeOp(n - 1, -1, -1, TensorType(i64, [n])), "flip")
        x = im.insert(T.IndexOp(x, [idx], [d], x.type), "flip")
    return x


def _constant_pad(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """constant_pad_nd: per padded dim (pairs from the last dim), `_pad_dim`."""
    x = im.value(node.args[0])
    pad, value = list(node.args[1]), float(_arg(node, 2, "value", 0.0) or 0.0)
    for i in range(0, len(pad), 2):
        x = _pad_dim(im, x, _rank(x) - 1 - i // 2, pad[i], pad[i + 1], value)
    return x


def _pad_dim(im: Importer, x: SSAValue, d: int, lo: int, hi: int, value: float) -> SSAValue:
    """x with `lo` and `hi` elements of `value` before and after it along dim d: a slice for a
    negative pad, a concatenation with `value`-filled blocks for a positive one."""
    n = x.type.get_shape()[d]
    if lo < 0 or hi < 0:
        start, stop = max(-lo, 0), n - max(-hi, 0)
        shape = [*x.type.get_shape()[:d], stop - start, *x.type.get_shape()[d + 1:]]
        x = im.insert(T.SliceOp(x, d, start, stop, 1, _t(x, shape)), "pad")
    parts = []
    for width in (max(lo, 0), None, max(hi, 0)):
        if width is None:
            parts.append(x)
        elif width:
            shape = [*x.type.get_shape()[:d], width, *x.type.get_shape()[d + 1:]]
            parts.append(im.insert(T.FullOp(value, _t(x, shape)), "pad"))
    if len(parts) > 1:
        shape = list(x.type.get_shape())
        shape[d] = sum(p.type.get_shape()[d] for p in parts)
        x = im.insert(T.CatOp(parts, d, _t(x, shape)), "pad")
    return x


def _resized(im: Importer, v: SSAValue, shape: list[int], value: float) -> SSAValue:
    """v's leading block of `shape`, extended with `value` where v is smaller."""
    for k, n in enumerate(shape):
        v = _pad_dim(im, v, k, 0, n - v.type.get_shape()[k], value)
    return v


def _repeat(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """repeat: x viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...], flattened."""
    x = im.value(node.args[0])
    reps = list(node.args[1])
    shape = [1] * (len(reps) - _rank(x)) + list(x.type.get_shape())
    x = _reshape(im, x, [v for s in shape for v in (1, s)], "repeat")
    x = im.insert(T.ExpandOp(x, _t(x, [v for r, s in zip(reps, shape) for v in (r, s)])),
                  "repeat")
    return _reshape(im, x, rt.get_shape(), "repeat")


def _index_select(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """index_select: torch.index on one dim (a 0-d input or index taken as 1-d)."""
    x, idx = im.value(node.args[0]), im.value(node.args[2])
    x1 = _reshape(im, x, [1]) if not _rank(x) else x
    idx = _reshape(im, idx, [1]) if not _rank(idx) else idx
    d = _norm(node.args[1], _rank(x1))
    shape, _ = T.index_shape(x1.type.get_shape(), [d], [idx.type.get_shape()])
    y = im.insert(T.IndexOp(x1, [idx], [d], _t(x1, shape)), "index_select")
    return _reshape(im, y, rt.get_shape())


def _gather(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """gather (a 0-d input or index taken as 1-d; an empty index, of any rank, gathers nothing)."""
    x, idx = (im.value(a) for a in (node.args[0], node.args[2]))
    if 0 in rt.get_shape():
        return im.insert(T.FullOp(0, rt), "gather")
    if not _rank(x):
        x, idx = _reshape(im, x, [1]), _reshape(im, idx, [1] * max(_rank(idx), 1))
    y = im.insert(T.GatherOp(x, idx, _norm(node.args[1], _rank(x)), _t(x, idx.type.get_shape())),
                  "gather")
    return _reshape(im, y, rt.get_shape())


def _along_dim(name: str) -> Converter:
    """cumsum / cumprod (a dtype argument converts first)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = _as_dtype(im, im.value(node.args[0]), rt.element_type)
        op = T.ALONG_DIM_CLASSES[name](x, _norm(node.args[1], max(_rank(x), 1)), rt)
        return im.insert(op, name)

    return convert


def _cumulative_extreme(name: str) -> Converter:
    """cummax / cummin: the values a scan (`torch.cummax`: values only); the index the latest
    position at or before each that set the running extreme (equal to it, or a NaN: PyTorch
    takes the last of ties, and a NaN stays), itself a max-scan of those positions."""

    def convert(im: Importer, node: torch.fx.Node, rts):
        x = im.value(node.args[0])
        i64 = mlir_element_type(torch.int64)
        if str(x.type.element_type) == "i1":
            x = _as_dtype(im, x, i64)
        if not _rank(x):
            return _as_dtype(im, x, rts[0].element_type), im.insert(
                T.FullOp(0, _t(x, [], i64)), name)
        d = _norm(node.args[1], _rank(x))
        v = im.insert(T.ALONG_DIM_CLASSES[name](x, d, x.type), name)
        set_here = _cmp(im, "eq", x, v)
        if not isinstance(x.type.element_type, IntegerType):
            set_here = _cmp(im, "logical_or", set_here, _cmp(im, "ne", x, x))
        n = x.type.get_shape()[d]
        pos = _positions(im, n, [n if k == d else 1 for k in range(_rank(x))], name)
        at = im.insert(T.WhereOp(set_here, pos, _scalar(im, 0, pos), _t(x, elt=i64)), name)
        idx = im.insert(T.ALONG_DIM_CLASSES["cummax"](at, d, at.type), name)
        return _as_dtype(im, v, rts[0].element_type), idx

    return convert


def _logcumsumexp(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """logcumsumexp: y_i = m_i + log(sum_{j <= i} exp(x_j - m_i)) with m_i the running max (0
    where it is infinite), in f32 for f16/bf16: exact where a shift by the row's max would
    underflow the early terms. A masked reduction over j, n^2 a row as the ranking's (limit
    RANK_LIMIT); no n x n buffer."""
    x = im.value(node.args[0])
    if not _rank(x):
        return x
    d, last = _norm(node.args[1], _rank(x)), _rank(x) - 1
    n = x.type.get_shape()[d]
    if n > RANK_LIMIT:
        raise FrontendError(f"unsupported '{node.target}' over {n} elements (deplo sums each "
                            f"prefix on its own, up to {RANK_LIMIT} a row) {where_from(node)}")
    xf = _f32(im, x)
    if d != last:
        xf = im.insert(T.TransposeOp(xf, d, last, _swapped(xf, d, last)), "logcumsumexp")
    rows = list(xf.type.get_shape()[:-1])
    m = im.insert(T.ALONG_DIM_CLASSES["cummax"](xf, last, xf.type), "logcumsumexp")
    infinite = _cmp(im, "eq", _ew(im, "abs", m), _scalar(im, math.inf, m))
    m = im.insert(T.WhereOp(infinite, _scalar(im, 0.0, m), m, m.type), "logcumsumexp")
    terms = _ew(im, "exp", _ew(im, "sub", _reshape(im, xf, [*rows, 1, n]),
                               _reshape(im, m, [*rows, n, 1])))  # [.., i, j]
    pos = _positions(im, n, hint="logcumsumexp")
    before = _cmp(im, "le", _reshape(im, pos, [1, n]), _reshape(im, pos, [n, 1]))
    total = _reduce(im, "sum", im.insert(T.WhereOp(before, terms, _scalar(im, 0.0, terms),
                                                   terms.type), "logcumsumexp"), [-1], False)
    y = _ew(im, "add", _ew(im, "log", total), m)
    if d != last:
        y = im.insert(T.TransposeOp(y, d, last, _swapped(y, d, last)), "logcumsumexp")
    return _as_dtype(im, y, rt.element_type)


def _adaptive_max_pool(im: Importer, node: torch.fx.Node, rts):
    """adaptive_max_pool1d/2d/3d: output cell i of a dim of n takes [floor(i n / o),
    ceil((i + 1) n / o)), i.e. i n < (h + 1) o and h o < (i + 1) n: the masks of the dims
    anded over [.., *out, *spatial], the values their max and the indices (into the flattened
    plane) the first of them, an argmax (the first NaN, where PyTorch keeps the last)."""
    x, out = im.value(node.args[0]), list(node.args[1])
    k, shape = len(out), list(x.type.get_shape())
    lead, spatial = shape[:-k], shape[-k:]
    i64 = mlir_element_type(torch.int64)
    hits = None
    for j, (o, n) in enumerate(zip(out, spatial)):
        i, h = _positions(im, o, [o, 1], "pool"), _positions(im, n, [1, n], "pool")
        c = (lambda v, m: _ew(im, "mul", v, _scalar(im, m, v)))
        one = _scalar(im, 1, i)
        m = _cmp(im, "logical_and", _cmp(im, "lt", c(i, n), c(_ew(im, "add", h, one), o)),
                 _cmp(im, "lt", c(h, o), c(_ew(im, "add", i, one), n)))
        m = _reshape(im, m, [o if d == j else n if d == k + j else 1 for d in range(2 * k)])
        hits = m if hits is None else _cmp(im, "logical_and", hits, m)
    xs = _reshape(im, x, [*lead, *[1] * k, *spatial])
    masked = im.insert(T.WhereOp(hits, xs, _scalar(im, -math.inf, x), _t(x, [
        *lead, *out, *spatial])), "adaptive_max_pool")
    flat = _reshape(im, masked, [*lead, *out, math.prod(spatial)])
    values = _reduce(im, "amax", flat, [-1], False)
    last = _rank(flat) - 1
    idx = im.insert(T.ARG_CLASSES["argmax"](flat, last, False, _t(flat, [*lead, *out], i64)),
                    "adaptive_max_pool")
    return values, idx


def _arg_reduction(name: str) -> Converter:
    """argmax / argmin; without a dim, of the flattened input (keepdim: every dim kept as 1)."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        dim, keep = _arg(node, 1, "dim"), bool(_arg(node, 2, "keepdim", False))
        if dim is None:
            x, dim, keep = _reshape(im, x, [math.prod(x.type.get_shape())]), 0, False
        r = _t(x, T.reduced_shape(x.type.get_shape(), [_norm(dim, _rank(x))] if _rank(x) else [],
                                  keep), mlir_element_type(torch.int64))
        y = im.insert(T.ARG_CLASSES[name](x, _norm(dim, max(_rank(x), 1)), keep, r), name)
        return _reshape(im, y, rt.get_shape())

    return convert


def _ints(v, n: int) -> list[int]:
    """An int or list argument of a window op, one entry per window dim."""
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def _conv_operands(im: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """A conv's input and weight, of one element type as aten requires (export's meta kernels
    do not check it)."""
    x, w = im.value(node.args[0]), im.value(node.args[1])
    if x.type.element_type != w.type.element_type:
        raise FrontendError(f"'{node.target}' with an input of {x.type.element_type} and a "
                            f"weight of {w.type.element_type} (PyTorch takes one type) "
                            f"{where_from(node)}")
    return x, w


def _conv(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """conv1d/2d/3d (.default and .padding 'same'/'valid'): torch.conv on a batch (an unbatched
    input gets a unit batch dim)."""
    x, w = _conv_operands(im, node)
    bias = _arg(node, 2, "bias")
    n = _rank(w) - 2
    stride, dil = _ints(_arg(node, 3, "stride", [1]), n), _ints(_arg(node, 5, "dilation", [1]), n)
    pad = _arg(node, 4, "padding", [0])
    k = w.type.get_shape()[2:]
    if pad == "same":
        total = [d * (kk - 1) for d, kk in zip(dil, k)]
        lo, hi = [t // 2 for t in total], [t - t // 2 for t in total]
    else:
        lo = hi = [0] * n if pad == "valid" else _ints(pad, n)
    batched = _reshape(im, x, [1, *x.type.get_shape()]) if _rank(x) == n + 1 else x
    out = [batched.type.get_shape()[0], *rt.get_shape()[-n - 1:]]
    y = im.insert(T.ConvOp(batched, w, im.value(bias) if bias is not None else None, stride,
                           lo, hi, dil, _arg(node, 6, "groups", 1), _t(x, out)), "conv")
    return _reshape(im, y, rt.get_shape())


def _conv_transpose(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """conv_transpose1d/2d/3d as torch.conv: by output phases where each phase's product is a
    matmul (`_phase_conv_transpose`; its K, the group's channels times the phase's taps, at
    least MATMUL_MIN_K: interleaving the phases is one more pass over the output, which a
    depthwise-like K of a few taps does not repay); else each input element spread `stride`
    apart (zeros between), padded by dilation * (K - 1) - padding (output_padding more on the
    right; a negative pad crops), then a stride-1 conv with the kernel flipped and its in/out
    channels swapped per group. The zeros cost stride^N the work of a direct scatter; what it
    buys is one kernel writing the output."""
    x, w = _conv_operands(im, node)
    bias = _arg(node, 2, "bias")
    n = _rank(w) - 2
    stride, pad = _ints(_arg(node, 3, "stride", [1]), n), _ints(_arg(node, 4, "padding", [0]), n)
    extra, groups = _ints(_arg(node, 5, "output_padding", [0]), n), _arg(node, 6, "groups", 1)
    dil = _ints(_arg(node, 7, "dilation", [1]), n)
    x = _reshape(im, x, [1, *x.type.get_shape()]) if _rank(x) == n + 1 else x
    k = w.type.get_shape()[2:]
    phase_k = w.type.get_shape()[0] // groups * math.prod(kk // s for kk, s in zip(k, stride))
    if any(s > 1 for s in stride) and all(d == 1 for d in dil) and phase_k >= MATMUL_MIN_K:
        out = [x.type.get_shape()[0], *rt.get_shape()[-n - 1:]]
        y = _phase_conv_transpose(im, x, w, bias, stride, pad, groups, out)
        return _reshape(im, y, rt.get_shape())
    lo = [d * (kk - 1) - p for d, kk, p in zip(dil, k, pad)]
    hi = [a + e for a, e in zip(lo, extra)]
    for i, s in enumerate(stride):  # [.., L, ..] -> [.., L, s, ..] (zeros after) -> (L-1)s+1
        d, shape = 2 + i, list(x.type.get_shape())
        if s > 1 and shape[d] > 1:
            x = _reshape(im, x, [*shape[:d + 1], 1, *shape[d + 1:]], "spread")
            x = _pad_dim(im, x, d + 1, 0, s - 1, 0.0)
            x = _reshape(im, x, [*shape[:d], shape[d] * s, *shape[d + 1:]], "spread")
            x = _pad_dim(im, x, d, 0, 1 - s, 0.0)  # (no zeros after the last element)
        # more padding than the kernel's reach: crop instead
        x = _pad_dim(im, x, d, min(lo[i], 0), min(hi[i], 0), 0.0)
    c_in, per_group = w.type.get_shape()[:2]
    w = _reshape(im, w, [groups, c_in // groups, per_group, *k], "flip")
    w = im.insert(T.TransposeOp(w, 1, 2, _t(w, [groups, per_group, c_in // groups, *k])), "flip")
    w = _reshape(im, w, [groups * per_group, c_in // groups, *k], "flip")
    i64 = mlir_element_type(torch.int64)
    for d, kk in enumerate(k, start=2):
        if kk > 1:
            idx = im.insert(T.ArangeOp(kk - 1, -1, -1, TensorType(i64, [kk])), "flip")
            w = im.insert(T.IndexOp(w, [idx], [d], w.type), "flip")
    out = [x.type.get_shape()[0], *rt.get_shape()[-n - 1:]]
    y = im.insert(T.ConvOp(x, w, im.value(bias) if bias is not None else None, [1] * n,
                           [max(a, 0) for a in lo], [max(b, 0) for b in hi], dil, groups,
                           _t(x, out)), "conv_transpose")
    return _reshape(im, y, rt.get_shape())


def _phase_conv_transpose(im: Importer, x: SSAValue, w: SSAValue, bias, stride: list[int],
                          pad: list[int], groups: int, out: list[int]) -> SSAValue:
    """A strided conv_transpose as one stride-1 conv per output phase, interleaved. Output u =
    t + padding = s q + r (r the phase) takes the taps k = r + s m at input q - m, so phase r
    is a conv of x with the taps r, r + s, ... reversed: stride^N convs of 1 / stride^N the
    kernel each, the real work, where the spread input's zeros cost stride^N times it (a
    UNet's 2 x 2 stride-2 upsampling: four 1 x 1 convs, plain products). Every phase computes
    the same q range (the ceil of the output over the stride), cropped after interleaving."""
    n = len(stride)
    k, lengths = w.type.get_shape()[2:], x.type.get_shape()[2:]
    c_in, per_group = w.type.get_shape()[:2]
    w = _reshape(im, w, [groups, c_in // groups, per_group, *k], "phase")
    w = im.insert(T.TransposeOp(w, 1, 2, _t(w, [groups, per_group, c_in // groups, *k])), "phase")
    w = _reshape(im, w, [groups * per_group, c_in // groups, *k], "phase")
    first = [p // s for p, s in zip(pad, stride)]  # q of each dim's first output
    qs = [-(-(p + t) // s) - q0 for p, t, s, q0 in zip(pad, out[2:], stride, first)]
    i64 = mlir_element_type(torch.int64)
    b = im.value(bias) if bias is not None else None

    def phase(rs: tuple[int, ...]) -> SSAValue:
        sub = w
        taps = [-(-(kk - r) // s) for kk, r, s in zip(k, rs, stride)]
        for d, (kk, r, s, m) in enumerate(zip(k, rs, stride, taps, strict=True), start=2):
            if m < kk:  # taps r, r + s, ...: a strided view, read in place
                shape = [*sub.type.get_shape()[:d], m, *sub.type.get_shape()[d + 1:]]
                sub = im.insert(T.SliceOp(sub, d, r, kk, s, _t(sub, shape)), "phase")
            if m > 1:  # ... reversed
                idx = im.insert(T.ArangeOp(m - 1, -1, -1, TensorType(i64, [m])), "phase")
                sub = im.insert(T.IndexOp(sub, [idx], [d], sub.type), "phase")
        lo = [m - 1 - q0 for m, q0 in zip(taps, first)]
        hi = [q - 1 + m - n_ - a for q, m, n_, a in zip(qs, taps, lengths, lo)]
        xi = x
        for d, (a, c) in enumerate(zip(lo, hi), start=2):
            xi = _pad_dim(im, xi, d, min(a, 0), min(c, 0), 0.0)
        shape = [out[0], out[1], *qs]
        return im.insert(T.ConvOp(xi, sub, b, [1] * n, [max(a, 0) for a in lo],
                                  [max(c, 0) for c in hi], [1] * n, groups, _t(x, shape)),
                         "conv_transpose")

    def interleave(rs: tuple[int, ...]) -> SSAValue:  # dims past len(rs) still apart
        d = 2 + len(rs)
        if d == 2 + n:
            return phase(rs)
        parts = [interleave((*rs, r)) for r in range(stride[d - 2])]
        if len(parts) == 1:
            return parts[0]
        shape = list(parts[0].type.get_shape())
        parts = [_reshape(im, p, [*shape[:d + 1], 1, *shape[d + 1:]], "phase") for p in parts]
        y = im.insert(T.CatOp(parts, d + 1, _t(parts[0], [*shape[:d + 1], len(parts),
                                                          *shape[d + 1:]])), "phase")
        return _reshape(im, y, [*shape[:d], shape[d] * len(parts), *shape[d + 1:]], "phase")

    y = interleave(())
    for d, (p, s, q0, t) in enumerate(zip(pad, stride, first, out[2:]), start=2):
        lo = p - s * q0
        y = _pad_dim(im, y, d, -lo, lo + t - y.type.get_shape()[d], 0.0)
    return y


def _pool(kind: str) -> Converter:
    """max_poolNd / avg_poolNd: the right padding grows to take ceil_mode's last window."""

    def convert(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
        x = im.value(node.args[0])
        kernel = list(node.args[1]) if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
        n = len(kernel)
        stride = _ints(_arg(node, 2, "stride", []) or kernel, n)
        lo = _ints(_arg(node, 3, "padding", [0]), n)
        dil = _ints(_arg(node, 4, "dilation", [1]), n) if kind == "max_pool" else [1] * n
        sizes, out = x.type.get_shape()[-n:], rt.get_shape()[-n:]
        hi = [max(p, (o - 1) * s + d * (kk - 1) + 1 - size - p)
              for p, o, s, d, kk, size in zip(lo, out, stride, dil, kernel, sizes)]
        extra = {}
        if kind == "avg_pool":
            extra = {"count_include_pad": _arg(node, 5, "count_include_pad", True),
                     "divisor": _arg(node, 6, "divisor_override")}
        op = T.POOL_CLASSES[kind](x, kernel, stride, lo, hi, dil, rt, **extra)
        return im.insert(op, kind)

    return convert


def _embedding_bag(im: Importer, node: torch.fx.Node, rts):
    """_embedding_bag (nn.EmbeddingBag, F.embedding_bag): bag b holds the indices at positions
    [offsets[b], offsets[b + 1]) (the last bag runs to the end unless include_last_offset),
    less those equal to padding_idx: a [bags, n] mask. sum (times per_sample_weights) / mean
    (0 for an empty bag) / max (0 for an empty bag) of the rows gathered, masked, over n — in
    float32 for f16/bf16. The bookkeeping outputs (offset2bag, bag_size, max_indices, for the
    backward) follow aten's CPU kernel for mean and max and are zeros for sum."""
    w, idx, offsets = (im.value(a) for a in node.args[:3])
    mode = _arg(node, 4, "mode", 0)
    psw = _arg(node, 6, "per_sample_weights")
    last_included = bool(_arg(node, 7, "include_last_offset", False))
    padding = _arg(node, 8, "padding_idx", -1)
    n, bags = idx.type.get_shape()[0], rts[0].get_shape()[0]
    i64 = mlir_element_type(torch.int64)
    idx, offsets = _as_dtype(im, idx, i64), _as_dtype(im, offsets, i64)
    starts = im.insert(T.SliceOp(offsets, 0, 0, bags, 1, _t(offsets, [bags])), "embedding_bag")
    if last_included:
        ends = im.insert(T.SliceOp(offsets, 0, 1, bags + 1, 1, _t(offsets, [bags])),
                         "embedding_bag")
    else:
        ends = _pad_dim(im, im.insert(T.SliceOp(offsets, 0, 1, bags, 1, _t(offsets, [bags - 1])),
                                      "embedding_bag"), 0, 0, 1, n)
    pos = _positions(im, n, [1, n], "embedding_bag")
    member = _cmp(im, "logical_and", _cmp(im, "le", _reshape(im, starts, [bags, 1]), pos),
                  _cmp(im, "lt", pos, _reshape(im, ends, [bags, 1])))
    if padding is not None and padding >= 0:
        member = _cmp(im, "logical_and", member, _reshape(im, _cmp(
            im, "ne", idx, _scalar(im, padding, idx)), [1, n]))
    rows = _f32(im, im.insert(T.EmbeddingOp(w, idx, _t(w, [n, w.type.get_shape()[1]])),
                              "embedding_bag"))
    if psw is not None:
        rows = _ew(im, "mul", rows, _reshape(im, _f32(im, im.value(psw)), [n, 1]))
    dim = w.type.get_shape()[1]
    picked = _reshape(im, member, [bags, n, 1])
    count = _reduce(im, "sum", _as_dtype(im, member, i64), [1], False)  # [bags]
    empty = _cmp(im, "eq", _reshape(im, count, [bags, 1]), _scalar(im, 0, count))
    spread = _reshape(im, rows, [1, n, dim])
    fill = -math.inf if mode == 2 else 0.0
    if mode == 2:  # aten keeps a value that is greater: a NaN wins only as a bag's first
        first = _cmp(im, "eq", pos, _reshape(im, starts, [bags, 1]))
        number = _cmp(im, "eq", spread, spread)
        picked = _cmp(im, "logical_and", picked, _cmp(
            im, "logical_or", number, _reshape(im, first, [bags, n, 1])))
    masked = im.insert(T.WhereOp(picked, spread, _scalar(im, fill, rows),
                                 _t(rows, [bags, n, dim])), "embedding_bag")
    out = _reduce(im, "amax" if mode == 2 else "sum", masked, [1], False)
    if mode == 1:
        out = _ew(im, "div", out, _as_dtype(im, _reshape(im, count, [bags, 1]),
                                            out.type.element_type))
    if mode in (1, 2):
        out = im.insert(T.WhereOp(empty, _scalar(im, 0.0, out), out, out.type), "embedding_bag")
    out = _as_dtype(im, out, rts[0].element_type)
    if mode == 0:
        return (out, *(im.insert(T.FullOp(0.0, rt), "embedding_bag") for rt in rts[1:]))
    starts_here = _cmp(im, "le", _reshape(im, starts, [bags, 1]), pos)
    bag_of = _reduce(im, "sum", _as_dtype(im, starts_here, i64), [0], False)
    offset2bag = _ew(im, "sub", bag_of, _scalar(im, 1, bag_of))
    if mode == 1:
        return out, offset2bag, count, count
    # the index (a row of w) of each bag's first maximum, per column
    at = im.insert(T.ARG_CLASSES["argmax"](masked, 1, False, _t(masked, [bags, dim], i64)),
                   "embedding_bag")
    rows_at = im.insert(T.IndexOp(idx, [at], [0], _t(idx, [bags, dim])), "embedding_bag")
    return out, offset2bag, count, im.insert(T.WhereOp(empty, _scalar(im, 0, at), rows_at,
                                                       at.type), "embedding_bag")


def _max_pool_with_indices(im: Importer, node: torch.fx.Node, rts):
    """max_poolNd(return_indices=True): max_pool's values, and the index (into the flattened
    plane) PyTorch's CPU loop keeps: the first in-bounds window element equal to the max, or
    the window's last NaN. The windows are gathered from the padded input as [.., *out, w]
    (window element w of dim e reads padded[o s + j dil]); within a window the flat index
    grows with w, so one integer amax over w picks it: plane + flat for a NaN (the last
    wins), plane - 1 - flat for an element equal to the max (the first wins), -1 otherwise."""
    x = im.value(node.args[0])
    values = _pool("max_pool")(im, node, rts[0])
    n = len(node.args[1]) if isinstance(node.args[1], (list, tuple)) else 1
    kernel = _ints(node.args[1], n)
    stride = _ints(_arg(node, 2, "stride", []) or kernel, n)
    lo = _ints(_arg(node, 3, "padding", [0]), n)
    dil = _ints(_arg(node, 4, "dilation", [1]), n)
    rank, sizes, out = _rank(x), x.type.get_shape()[-n:], rts[0].get_shape()[-n:]
    lead, window = x.type.get_shape()[:-n], math.prod(kernel)
    # (what pads is never picked: `valid` masks it off)
    fill = reduce_identity(ReduceKind.MAX, x.type.element_type)
    padded = x
    for e in range(n):
        reach = (out[e] - 1) * stride[e] + (kernel[e] - 1) * dil[e] + 1
        padded = _pad_dim(im, padded, rank - n + e, lo[e], max(reach - lo[e] - sizes[e], 0),
                          fill)
    at, flat, valid = [], None, None
    for e in range(n):  # over [*out, *kernel]
        o = _positions(im, out[e], [out[e] if k == e else 1 for k in range(2 * n)], "max_pool")
        j = _positions(im, kernel[e], [kernel[e] if k == n + e else 1 for k in range(2 * n)],
                       "max_pool")
        pos = _ew(im, "add", _ew(im, "mul", o, _scalar(im, stride[e], o)),
                  _ew(im, "mul", j, _scalar(im, dil[e], j)))
        at.append(pos)
        pos = _ew(im, "sub", pos, _scalar(im, lo[e], pos))
        inside = _cmp(im, "logical_and", _cmp(im, "ge", pos, _scalar(im, 0, pos)),
                      _cmp(im, "lt", pos, _scalar(im, sizes[e], pos)))
        plane = _ew(im, "mul", pos, _scalar(im, math.prod(sizes[e + 1:]), pos))
        flat = plane if flat is None else _ew(im, "add", flat, plane)
        valid = inside if valid is None else _cmp(im, "logical_and", valid, inside)
    windows = _reshape(im, im.insert(T.IndexOp(padded, at, list(range(rank - n, rank)), _t(
        x, [*lead, *out, *kernel])), "max_pool"), [*lead, *out, window], "max_pool")
    flat = _reshape(im, flat, [*out, window], "max_pool")
    valid = _reshape(im, valid, [*out, window], "max_pool")
    size, none = _scalar(im, math.prod(sizes), flat), _scalar(im, -1, flat)
    last = _ew(im, "sub", size, _scalar(im, 1, flat))  # plane - 1 - flat: the first max wins
    is_max = _cmp(im, "eq", windows, _reshape(im, values, [*lead, *out, 1]))
    key = _pick(im, _cmp(im, "ne", windows, windows), _ew(im, "add", size, flat),
                _pick(im, is_max, _ew(im, "sub", last, flat), none))
    best = _reduce(im, "amax", _pick(im, valid, key, none), [-1], False)
    idx = _pick(im, _cmp(im, "ge", best, size), _ew(im, "sub", best, size),
                _ew(im, "sub", last, best))
    return values, _as_dtype(im, idx, rts[1].element_type)


aten = torch.ops.aten
COMPOSITE_CONVERTERS: dict[object, Converter] = {
    aten.true_divide.Tensor: _binary("div"),
    aten.view_as.default: _view("view"),
    aten.reshape_as.default: _view("reshape"),
    aten.flatten.using_ints: _view("flatten"),
    aten.unflatten.int: _view("unflatten"),
    aten.expand_as.default: _expand,
    aten.type_as.default: _to_dtype,
    aten.mT.default: lambda im, node, rt: im.insert(
        T.TransposeOp(im.value(node.args[0]), rt.get_num_dims() - 2, rt.get_num_dims() - 1, rt),
        "mT"),
    aten.movedim.int: _movedim,
    aten.movedim.intlist: _movedim,
    aten.stack.default: _stack,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split,
    aten.chunk.default: _split,
    aten.unbind.int: _split,
    aten.narrow.default: _narrow,
    aten.square.default: _square,
    aten.dropout.default: _dropout,
    aten.clamp.default: _clamp(1, 2),
    aten.clamp.Tensor: _clamp(1, 2),
    aten.clamp_min.default: _clamp(1, None),
    aten.clamp_max.default: _clamp(None, 1),
    aten.clamp_min.Tensor: _clamp(1, None),
    aten.clamp_max.Tensor: _clamp(None, 1),
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.tril.default: _triangle(upper=False),
    aten.triu.default: _triangle(upper=True),
    aten.log_softmax.int: _log_softmax,
    aten._log_softmax.default: _log_softmax,
    aten.logsumexp.default: _logsumexp,
    aten.var.correction: _variance(std=False),
    aten.var.dim: _variance(std=False),
    aten.var.default: _variance(std=False),
    aten.std.correction: _variance(std=True),
    aten.std.dim: _variance(std=True),
    aten.std.default: _variance(std=True),
    aten.linalg_vector_norm.default: _vector_norm,
    aten.cdist.default: _cdist,
    **{getattr(aten, f"adaptive_max_pool{n}d").default: _adaptive_max_pool for n in (1, 2, 3)},
    aten._cdist_forward.default: _cdist,
    aten.group_norm.default: _group_norm,
    aten.batch_norm.default: _batch_norm,
    aten.hardtanh.default: _hardtanh,
    aten.round.decimals: _round_decimals,
    aten.leaky_relu.default: _leaky_relu,
    aten.rrelu.default: _rrelu,
    aten.elu.default: _elu,
    aten.isnan.default: _is_value("nan"),
    aten.isinf.default: _is_value("inf"),
    aten.logical_not.default: _is_value("zero"),
    aten.bitwise_not.default: _bitwise_not,
    torch.ops.prims.bitwise_not.default: _bitwise_not,  # (cross_entropy's label smoothing)
    torch.ops.prims.convert_element_type.default: _to_dtype,  # (decompositions: renorm's)
    **{op: _any_all(name) for name in ("any", "all")
       for op in (getattr(aten, name).default, getattr(aten, name).dim, getattr(aten, name).dims)},
    aten.prod.default: _reduction("prod"),
    aten.prod.dim_int: _reduction("prod"),
    aten.var_mean.correction: _moments(std=False),
    aten.var_mean.dim: _moments(std=False),
    aten.std_mean.correction: _moments(std=True),
    aten.std_mean.dim: _moments(std=True),
    aten.remainder.Scalar: _modulo("remainder"),
    aten.remainder.Tensor: _modulo("remainder"),
    aten.fmod.Scalar: _modulo("fmod"),
    aten.fmod.Tensor: _modulo("fmod"),
    aten.hypot.default: _hypot,
    aten.copy.default: _copy,
    aten.floor_divide.default: _modulo("floor_divide"),
    aten.logaddexp.default: _logaddexp,
    aten.addbmm.default: _addbmm,
    aten.flip.default: _flip,
    aten.as_strided.default: _as_strided,
    aten.diagonal_scatter.default: _diagonal_scatter,
    aten.copysign.Tensor: _copysign,
    aten.fmax.default: _fmax_fmin("fmax"),
    aten.fmin.default: _fmax_fmin("fmin"),
    aten.signbit.default: _signbit,
    aten.copysign.Scalar: _copysign,
    aten.constant_pad_nd.default: _constant_pad,
    aten.repeat.default: _repeat,
    aten.numpy_T.default: lambda im, node, rt: im.insert(
        T.PermuteOp(im.value(node.args[0]), list(range(rt.get_num_dims()))[::-1], rt), "T"),
    aten.max.dim: _extreme_with_index("max"),
    aten.min.dim: _extreme_with_index("min"),
    aten.baddbmm.default: _addmm,
    aten.index_select.default: _index_select,
    aten.gather.default: _gather,
    aten.cumsum.default: _along_dim("cumsum"),
    aten.cumprod.default: _along_dim("cumprod"),
    aten.cummax.default: _cumulative_extreme("cummax"),
    aten.logcumsumexp.default: _logcumsumexp,
    aten.cummin.default: _cumulative_extreme("cummin"),
    aten.argmax.default: _arg_reduction("argmax"),
    aten.argmin.default: _arg_reduction("argmin"),
    aten.amin.default: _reduction("amin"),
    aten.max.default: _reduction("amax"),
    aten.min.default: _reduction("amin"),
    aten.abs.default: _unary("abs"),
    aten.log.default: _unary("log"),
    aten.erf.default: _unary("erf"),
    **{getattr(aten, n).default: _rounding(n) if n in ("floor", "ceil", "trunc", "round")
       else _unary(n) for n in ("floor", "ceil", "trunc", "round", "sign", "expm1", "log1p",
                                "log2", "atan", "sinh", "cosh", "tan", "exp2", "log10",
                                "asin", "acos", "asinh", "acosh", "atanh")},
    **{getattr(aten, f"conv{n}d").default: _conv for n in (1, 2, 3)},
    **{getattr(aten, f"conv{n}d").padding: _conv for n in (1, 2, 3)},
    aten.instance_norm.default: _instance_norm,
    aten.topk.default: _ranked("topk"),
    aten.sort.default: _ranked("sort"),
    aten.sort.stable: _ranked("sort.stable"),
    aten.argsort.default: _ranked("argsort"),
    aten.argsort.stable: _ranked("argsort.stable"),
    aten.kthvalue.default: _ranked("kthvalue"),
    **{op: _ranked(name) for name in ("median", "nanmedian")
       for op in (getattr(aten, name).default, getattr(aten, name).dim)},
    aten.scatter.value: _scattered("scatter_value"),
    aten.scatter.src: _scattered("scatter_src"),
    aten.scatter.reduce: _scattered("scatter_src"),
    aten.scatter.value_reduce: _scattered("scatter_value"),
    aten.scatter_add.default: _scattered("scatter_add"),
    aten.scatter_reduce.two: _scattered("scatter_reduce"),
    aten.index_fill.int_Scalar: _scattered("index_fill"),
    aten.index_copy.default: _scattered("index_copy"),
    aten.index_put.default: _index_put,
    aten._embedding_bag.default: _embedding_bag,
    aten._embedding_bag_forward_only.default: _embedding_bag,
    aten.masked_scatter.default: _masked_scatter,
    aten.index_add.default: _scattered("index_add"),
    aten.index_reduce.default: _scattered("index_reduce"),
    aten.conv_transpose1d.default: _conv_transpose,
    aten.conv_transpose2d.input: _conv_transpose,
    aten.conv_transpose3d.input: _conv_transpose,
    **{getattr(aten, f"{k}{n}d").default: _pool(k) for k in ("max_pool", "avg_pool")
       for n in (1, 2, 3)},
    **{getattr(aten, f"max_pool{n}d_with_indices").default: _max_pool_with_indices
       for n in (1, 2, 3)},
    operator.getitem: lambda im, node, rt: im.values[node.args[0]][node.args[1]],
}

DATA_SHAPED = "its result's shape depends on the values; deplo compiles static shapes"
REFUSED: dict[object, str] = {
    aten.embedding_renorm_.default: "embedding's max_norm renormalizes the weight in place",
    **{op: DATA_SHAPED for op in (aten.nonzero.default, aten._unique2.default,
                                  aten.unique_consecutive.default, aten.unique_dim.default,
                                  aten.masked_select.default)},
}
RANDOM = "a random op; a compiled program is deterministic: pass the random values as an input"


def refusal(op) -> str | None:
    """Why deplo refuses `op` on purpose, or None: the ops above, and every op PyTorch tags as
    drawing from its random generator (randn, rand_like, bernoulli, normal, multinomial, ...),
    which folding at import would otherwise freeze into one draw."""
    if op in REFUSED:
        return REFUSED[op]
    if draws_random(op):
        return RANDOM
    return None
"""ATen ops refused on purpose, with the reason the error gives (docs/ops.md lists them)."""

ATEN_CONVERTERS: dict[object, Converter] = {
    aten.add.Tensor: _binary("add"),
    aten.sub.Tensor: _binary("sub"),
    aten.mul.Tensor: _binary("mul"),
    aten.div.Tensor: _binary("div"),
    aten.div.Tensor_mode: _div_mode,
    aten.div.Scalar_mode: _div_mode,
    aten.maximum.default: _binary("maximum"),
    aten.atan2.default: _binary("atan2"),
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
    **MATH_CONVERTERS,
    **COMPOSITE_CONVERTERS,
}
