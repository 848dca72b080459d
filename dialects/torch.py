"""Torch IR: a 1:1 mirror of the ATen ops that `torch.export` captured.

Ops keep torch's names and attributes, operands and results are ranked tensors, and the
verifiers check shapes and dtypes the way PyTorch would, so a wrong import is caught here rather
than three levels down. Weights are arguments of `@main` named after their module path.

    func.func @main(%x: tensor<16x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
      %y = torch.add %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
      %r = torch.relu %y : (tensor<16x64xf32>) -> tensor<16x64xf32>
      func.return %r : tensor<16x64xf32>
    }

A family of ops is one row of a table: `UNARY_OPS` and `BINARY_OPS` below generate the
elementwise ops, `COMPARE_OPS`/`LOGICAL_OPS` the i1-valued ones and `REDUCTION_OPS` sum / mean /
amax; the torch-to-tir decomposition and the interpreter read the same tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """PyTorch/numpy broadcasting of two shapes, or None where they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 not in (x, y) else x * y)
    return tuple(reversed(out))


def _tensor(op: IRDLOperation, value: SSAValue, what: str) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise VerifyException(f"{op.name}: expected {what} to be a ranked tensor, got {value.type}")
    return value.type


def _shape(t: TensorType) -> tuple[int, ...]:
    return tuple(t.get_shape())


def _same_element_type(op: IRDLOperation, *types: TensorType) -> None:
    elts = {str(t.element_type) for t in types}
    if len(elts) != 1:
        raise VerifyException(f"{op.name}: expected one element type, got {sorted(elts)}")


class _TorchOp(IRDLOperation):
    """Shared syntax: `torch.NAME %a, %b {attrs} : (types) -> type`."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"


# ---------------------------------------------------------------------------------------------
# elementwise families


UNARY_OPS: dict[str, str] = {
    # torch op name -> class name
    "relu": "ReluOp",
    "neg": "NegOp",
    "exp": "ExpOp",
    "rsqrt": "RsqrtOp",
    "sqrt": "SqrtOp",
    "tanh": "TanhOp",
    "sigmoid": "SigmoidOp",
    "silu": "SiluOp",
    "cos": "CosOp",
    "sin": "SinOp",
    "reciprocal": "ReciprocalOp",
    "abs": "AbsOp",
    "log": "LogOp",
    "erf": "ErfOp",
    "floor": "FloorOp",
    "ceil": "CeilOp",
    "trunc": "TruncOp",
    "round": "RoundOp",
    "sign": "SignOp",
    "expm1": "Expm1Op",
    "log1p": "Log1pOp",
    "log2": "Log2Op",
    "atan": "AtanOp",
    "sinh": "SinhOp",
    "cosh": "CoshOp",
    "tan": "TanOp",
    "exp2": "Exp2Op",
    "log10": "Log10Op",
    "asin": "AsinOp",
    "acos": "AcosOp",
    "asinh": "AsinhOp",
    "acosh": "AcoshOp",
    "atanh": "AtanhOp",
}

BINARY_OPS: dict[str, str] = {
    "add": "AddOp",
    "sub": "SubOp",
    "mul": "MulOp",
    "div": "DivOp",
    "maximum": "MaximumOp",
    "minimum": "MinimumOp",
    "pow": "PowOp",
    "fmod": "FmodOp",  # C's fmod: the sign of the dividend (torch.fmod)
    "atan2": "Atan2Op",  # the angle of (rhs, lhs): atan2(y, x), as torch.atan2
}

# comparisons: operands of one element type, broadcast together; the result is i1
COMPARE_OPS: dict[str, str] = {
    "eq": "EqOp",
    "ne": "NeOp",
    "lt": "LtOp",
    "le": "LeOp",
    "gt": "GtOp",
    "ge": "GeOp",
}

# and/or of i1 tensors (aten.logical_and/or, and `&`/`|` on bool tensors)
LOGICAL_OPS: dict[str, str] = {
    "logical_and": "LogicalAndOp",
    "logical_or": "LogicalOrOp",
}

# bitwise and/or/xor and shifts of integer tensors (aten.bitwise_*, `&` `|` `^` `<<` `>>` on
# integers; on bools they are the logical ops): a shift by the width or more, or by a negative
# amount, gives 0 (`<<`) or the sign (`>>`), as PyTorch
BITWISE_OPS: dict[str, str] = {
    "bitwise_and": "BitwiseAndOp",
    "bitwise_or": "BitwiseOrOp",
    "bitwise_xor": "BitwiseXorOp",
    "bitwise_left_shift": "BitwiseLeftShiftOp",
    "bitwise_right_shift": "BitwiseRightShiftOp",
}


def _unary_verify(self) -> None:
    a = _tensor(self, self.input, "the operand")
    r = _tensor(self, self.result, "the result")
    if _shape(a) != _shape(r):
        raise VerifyException(f"{self.name}: expected result shape {_shape(a)}, got {_shape(r)}")
    _same_element_type(self, a, r)


def _broadcast_operands(self) -> tuple[TensorType, TensorType, TensorType]:
    """lhs, rhs and result types of a binary op, checked to broadcast to the result's shape."""
    a = _tensor(self, self.lhs, "the lhs")
    b = _tensor(self, self.rhs, "the rhs")
    r = _tensor(self, self.result, "the result")
    want = broadcast_shapes(_shape(a), _shape(b))
    if want is None:
        raise VerifyException(f"{self.name}: shapes {_shape(a)} and {_shape(b)} do not broadcast")
    if want != _shape(r):
        raise VerifyException(f"{self.name}: expected result shape {want}, got {_shape(r)}")
    return a, b, r


def _binary_verify(self) -> None:
    a, b, r = _broadcast_operands(self)
    _same_element_type(self, a, b, r)


def _compare_verify(self) -> None:
    a, b, r = _broadcast_operands(self)
    _same_element_type(self, a, b)
    if str(r.element_type) != "i1":
        raise VerifyException(f"{self.name}: expected an i1 result, got {r.element_type}")


def _bitwise_verify(self) -> None:
    a, b, r = _broadcast_operands(self)
    _same_element_type(self, a, b, r)
    if not isinstance(r.element_type, IntegerType) or str(r.element_type) == "i1":
        raise VerifyException(f"{self.name}: expected integer tensors, got {r}")


def _logical_verify(self) -> None:
    for t in _broadcast_operands(self):
        if str(t.element_type) != "i1":
            raise VerifyException(f"{self.name}: expected i1 operands and result, got {t}")


def _props(**values) -> dict[str, Attribute]:
    """Properties from Python values: True is a unit, an int an i64, a list an array<i64>;
    None and False are left out."""
    out: dict[str, Attribute] = {}
    for k, v in values.items():
        if v is not None and v is not False:
            out[k] = (UnitAttr() if v is True else IntegerAttr(v, 64) if isinstance(v, int)
                      else DenseArrayBase.from_list(i64, list(v)))
    return out


def _operands_init(self, *args) -> None:
    """The default builder of a family: the operands, then the result type."""
    IRDLOperation.__init__(self, operands=list(args[:-1]), result_types=[args[-1]])


def _props_init(*names: str):
    """A builder taking the operand, then the properties `names` (see `_props`), then the
    result type."""

    def init(self, x: SSAValue, *args) -> None:
        *values, result_type = args
        IRDLOperation.__init__(self, operands=[x], result_types=[result_type],
                               properties=_props(**dict(zip(names, values))))

    return init


def _family(table: dict[str, str], doc: str, verify, fields, init=_operands_init,
            base: type = _TorchOp) -> dict[str, type[IRDLOperation]]:
    """One op class per row of `table` (torch op name -> class name), alike but for the name:
    `doc` is formatted with {op}, `fields()` gives the operand/property/result definitions."""

    def make(op: str, cls_name: str) -> type[IRDLOperation]:
        body = {"__doc__": doc.format(op=op), "name": f"torch.{op}", "traits": traits_def(Pure()),
                "verify_": verify, "__init__": init, **fields()}
        return irdl_op_definition(type(cls_name, (base,), body))

    classes = {op: make(op, c) for op, c in table.items()}
    globals().update({c.__name__: c for c in classes.values()})
    return classes


def _unary_fields() -> dict:
    return {"input": operand_def(TensorType), "result": result_def(TensorType)}


def _binary_fields() -> dict:
    return {"lhs": operand_def(TensorType), "rhs": operand_def(TensorType),
            "result": result_def(TensorType)}


BINARY_DOC = ("`torch.{op} %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>` "
              "(aten.{op}, with broadcasting).")
UNARY_CLASSES = _family(UNARY_OPS, "`torch.{op} %x : (tensor<4xf32>) -> tensor<4xf32>` "
                        "(aten.{op}).", _unary_verify, _unary_fields)
BINARY_CLASSES = _family(BINARY_OPS, BINARY_DOC, _binary_verify, _binary_fields)
COMPARE_CLASSES = _family(COMPARE_OPS, BINARY_DOC, _compare_verify, _binary_fields)
LOGICAL_CLASSES = _family(LOGICAL_OPS, BINARY_DOC, _logical_verify, _binary_fields)
BITWISE_CLASSES = _family(BITWISE_OPS, BINARY_DOC, _bitwise_verify, _binary_fields)


# ---------------------------------------------------------------------------------------------
# structured ops


@irdl_op_definition
class ConstantOp(_TorchOp):
    """A 0-d scalar tensor from a Python number in the program, e.g. the `2.0` in `x * 2.0`:
    `torch.constant {value = 2.0 : f32} : tensor<f32>`."""

    name = "torch.constant"
    assembly_format = "attr-dict `:` type($result)"
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TensorType):
        elt = result_type.element_type
        super().__init__(
            properties={"value": IntegerAttr(int(value), elt) if isinstance(elt, IntegerType)
                        else FloatAttr(value, elt)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        if _shape(r) != ():
            raise VerifyException(f"{self.name}: expected a 0-d tensor, got {r}")


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """torch.matmul's result shape (1-D operands promoted and squeezed), or None."""
    if not a or not b:
        return None
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@irdl_op_definition
class MatmulOp(_TorchOp):
    """`torch.matmul %a, %b : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>`,
    with torch's 1-D promotion and batch broadcasting."""

    name = "torch.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def verify_(self) -> None:
        a = _tensor(self, self.lhs, "the lhs")
        b = _tensor(self, self.rhs, "the rhs")
        r = _tensor(self, self.result, "the result")
        want = matmul_shape(_shape(a), _shape(b))
        if want is None:
            raise VerifyException(
                f"{self.name}: shapes {_shape(a)} and {_shape(b)} cannot be multiplied"
            )
        if want != _shape(r):
            raise VerifyException(f"{self.name}: expected result shape {want}, got {_shape(r)}")
        _same_element_type(self, a, b, r)


@irdl_op_definition
class RmsNormOp(_TorchOp):
    """`torch.rms_norm %x, %weight {normalized_shape = array<i64: 2048>, eps = 1.0e-06 : f64}`:
    x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight (aten.rms_norm).
    Without `eps`, torch uses the machine epsilon of the input dtype."""

    name = "torch.rms_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    result = result_def(TensorType)
    normalized_shape = prop_def(DenseArrayBase)
    eps = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())

    def __init__(self, x, weight, normalized_shape: Sequence[int], eps: float | None, result_type):
        props: dict[str, Attribute] = {
            "normalized_shape": DenseArrayBase.from_list(i64, list(normalized_shape))
        }
        if eps is not None:
            props["eps"] = FloatAttr(eps, 64)
        super().__init__(
            operands=[x, [weight] if weight is not None else []],
            result_types=[result_type],
            properties=props,
        )

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        norm = tuple(self.normalized_shape.get_values())
        if not norm or _shape(x)[-len(norm) :] != norm:
            raise VerifyException(
                f"{self.name}: normalized_shape {list(norm)} must be the trailing dims of "
                f"{list(_shape(x))}"
            )
        if self.weight is not None:
            w = _tensor(self, self.weight, "the weight")
            if _shape(w) != norm:
                raise VerifyException(
                    f"{self.name}: expected weight shape {list(norm)}, got {list(_shape(w))}"
                )
            _same_element_type(self, x, w)
        if _shape(r) != _shape(x):
            raise VerifyException(f"{self.name}: expected result shape {_shape(x)}, got {_shape(r)}")
        _same_element_type(self, x, r)


# ---------------------------------------------------------------------------------------------
# views, data movement, creation and attention
#
# aten.view / reshape / _unsafe_view all import as `torch.reshape` and aten.t as
# `torch.transpose`; no-op views and copies (alias, contiguous, clone, detach, ...) import as
# their operand and have no op. Dims in properties may be negative, as torch writes them.


def _int(attr) -> int:
    return attr.value.data


def _norm_dim(op: IRDLOperation, d: int, rank: int, what: str = "dim") -> int:
    """A torch dim (negative counts from the end) as an index in [0, rank)."""
    if not -rank <= d < rank:
        raise VerifyException(f"{op.name}: expected {what} in [{-rank}, {rank - 1}], got {d}")
    return d % rank


def _is_int(t: TensorType) -> bool:
    return isinstance(t.element_type, IntegerType)


def _check_result_shape(op: IRDLOperation, want: Sequence[int], r: TensorType) -> None:
    if tuple(want) != _shape(r):
        raise VerifyException(f"{op.name}: expected result shape {tuple(want)}, got {_shape(r)}")


def slice_range(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """(first index, length) of aten.slice on a dim of `size`: negative start/end count from the
    end, and both are clamped to [0, size] as torch does."""
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, (end - start + step - 1) // step


def index_shape(
    shape: Sequence[int], dims: Sequence[int], index_shapes: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], int] | None:
    """aten.index's result shape and where the broadcast index dims go in it, for index tensors
    on `dims` of a tensor of `shape` (None if the indices do not broadcast). Adjacent indexed
    dims are replaced in place by the broadcast index shape; otherwise it comes first."""
    b: tuple[int, ...] | None = ()
    for s in index_shapes:
        b = broadcast_shapes(b, s) if b is not None else None
    if b is None:
        return None
    rest = [n for i, n in enumerate(shape) if i not in dims]
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    at = dims[0] if adjacent else 0
    return (*rest[:at], *b, *rest[at:]), at


@irdl_op_definition
class ReshapeOp(_TorchOp):
    """`torch.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>` — the same elements in
    row-major order, in a new shape (aten.view, aten.reshape, aten._unsafe_view)."""

    name = "torch.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        if math.prod(_shape(x)) != math.prod(_shape(r)):
            raise VerifyException(
                f"{self.name}: expected a result of {math.prod(_shape(x))} elements, got "
                f"{math.prod(_shape(r))} ({_shape(r)})"
            )
        _same_element_type(self, x, r)


@irdl_op_definition
class PermuteOp(_TorchOp):
    """`torch.permute %x {dims = array<i64: 2, 0, 1>}`: result dim i is input dim dims[i]."""

    name = "torch.permute"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dims = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    __init__ = _props_init("dims")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        rank = len(_shape(x))
        dims = tuple(self.dims.get_values())
        norm = [d % rank if -rank <= d < rank else d for d in dims] if rank else list(dims)
        if sorted(norm) != list(range(rank)):
            raise VerifyException(
                f"{self.name}: expected a permutation of the {rank} dims, got {list(dims)}"
            )
        _check_result_shape(self, [_shape(x)[d] for d in norm], r)
        _same_element_type(self, x, r)


@irdl_op_definition
class TransposeOp(_TorchOp):
    """`torch.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64}`: two dims swapped (aten.transpose.int,
    and aten.t as dims 0 and 1)."""

    name = "torch.transpose"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim0 = prop_def(IntegerAttr)
    dim1 = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    __init__ = _props_init("dim0", "dim1")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        shape = list(_shape(x))
        a = _norm_dim(self, _int(self.dim0), len(shape), "dim0")
        b = _norm_dim(self, _int(self.dim1), len(shape), "dim1")
        shape[a], shape[b] = shape[b], shape[a]
        _check_result_shape(self, shape, r)
        _same_element_type(self, x, r)


@irdl_op_definition
class ExpandOp(_TorchOp):
    """`torch.expand %x : (tensor<3x1xf32>) -> tensor<2x3x5xf32>` — size-1 dims repeated and new
    leading dims added, as aten.expand (the result type carries the sizes)."""

    name = "torch.expand"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        src, dst = _shape(x), _shape(r)
        if len(dst) < len(src) or any(
            s not in (1, d) for s, d in zip(src, dst[len(dst) - len(src) :])
        ):
            raise VerifyException(f"{self.name}: expected a shape {src} expands to, got {dst}")
        _same_element_type(self, x, r)


@irdl_op_definition
class UnsqueezeOp(_TorchOp):
    """`torch.unsqueeze %x {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>`."""

    name = "torch.unsqueeze"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    __init__ = _props_init("dim")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        shape = list(_shape(x))
        d = _norm_dim(self, _int(self.dim), len(shape) + 1)
        _check_result_shape(self, [*shape[:d], 1, *shape[d:]], r)
        _same_element_type(self, x, r)


@irdl_op_definition
class SqueezeOp(_TorchOp):
    """`torch.squeeze %x {dims = array<i64: 0, 2>}`: the listed dims that have size 1 removed
    (aten.squeeze.dim / .dims; aten.squeeze.default lists every size-1 dim)."""

    name = "torch.squeeze"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dims = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    __init__ = _props_init("dims")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        shape = _shape(x)
        dims = {_norm_dim(self, d, max(len(shape), 1)) for d in self.dims.get_values()}
        _check_result_shape(
            self, [n for i, n in enumerate(shape) if not (i in dims and n == 1)], r
        )
        _same_element_type(self, x, r)


@irdl_op_definition
class SliceOp(_TorchOp):
    """`torch.slice %x {dim = 1 : i64, start = 1 : i64, end = -1 : i64, step = 2 : i64}` —
    aten.slice.Tensor: negative start/end count from the end and both are clamped to the dim
    (an omitted end is 2^63-1)."""

    name = "torch.slice"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr)
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    __init__ = _props_init("dim", "start", "end", "step")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        shape = list(_shape(x))
        d = _norm_dim(self, _int(self.dim), len(shape))
        if _int(self.step) <= 0:
            raise VerifyException(f"{self.name}: expected a positive step, got {_int(self.step)}")
        _, shape[d] = slice_range(shape[d], _int(self.start), _int(self.end), _int(self.step))
        _check_result_shape(self, shape, r)
        _same_element_type(self, x, r)


@irdl_op_definition
class SelectOp(_TorchOp):
    """`torch.select %x {dim = 1 : i64, index = -1 : i64}`: one index of a dim, the dim dropped
    (aten.select.int; a negative index counts from the end)."""

    name = "torch.select"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr)
    index = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    __init__ = _props_init("dim", "index")

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        shape = list(_shape(x))
        d = _norm_dim(self, _int(self.dim), len(shape))
        _norm_dim(self, _int(self.index), shape[d], "index")
        _check_result_shape(self, shape[:d] + shape[d + 1 :], r)
        _same_element_type(self, x, r)


@irdl_op_definition
class CatOp(_TorchOp):
    """`torch.cat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>`."""

    name = "torch.cat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    __init__ = _props_init("dim")

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        if not self.inputs:
            raise VerifyException(f"{self.name}: expected at least one input, got none")
        ts = [_tensor(self, v, f"input {i}") for i, v in enumerate(self.inputs)]
        shape = list(_shape(ts[0]))
        d = _norm_dim(self, _int(self.dim), len(shape))
        for i, t in enumerate(ts[1:], 1):
            s = list(_shape(t))
            if len(s) != len(shape) or s[:d] + s[d + 1 :] != shape[:d] + shape[d + 1 :]:
                raise VerifyException(
                    f"{self.name}: expected input {i} to match {tuple(shape)} outside dim {d}, "
                    f"got {tuple(s)}"
                )
        shape[d] = sum(_shape(t)[d] for t in ts)
        _check_result_shape(self, shape, r)
        _same_element_type(self, *ts, r)


def _check_indices(op: IRDLOperation, values) -> list[TensorType]:
    ts = []
    for i, v in enumerate(values):
        t = _tensor(op, v, f"index {i}")
        if not _is_int(t) or t.element_type.width.data == 1:
            raise VerifyException(f"{op.name}: expected integer indices, got {t}")
        ts.append(t)
    return ts


@irdl_op_definition
class EmbeddingOp(_TorchOp):
    """`torch.embedding %weight, %ids : (tensor<100x64xf32>, tensor<2x7xi64>) -> tensor<2x7x64xf32>`
    — rows of the table picked by integer ids (aten.embedding; padding_idx only matters to
    the gradient)."""

    name = "torch.embedding"
    weight = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def index_ranges(self) -> list[tuple[SSAValue, int, int]]:
        """(index operand, the dim's size, the lowest valid value): ids are rows."""
        return [(self.indices, self.weight.type.get_shape()[0], 0)]

    def verify_(self) -> None:
        w = _tensor(self, self.weight, "the weight")
        (ids,) = _check_indices(self, [self.indices])
        r = _tensor(self, self.result, "the result")
        if len(_shape(w)) != 2:
            raise VerifyException(f"{self.name}: expected a 2-d weight, got {w}")
        _check_result_shape(self, [*_shape(ids), _shape(w)[1]], r)
        _same_element_type(self, w, r)


@irdl_op_definition
class IndexOp(_TorchOp):
    """`torch.index %cos, %pos {dims = array<i64: 0>} : (tensor<16x8xf32>, tensor<2x7xi64>) ->
    tensor<2x7x8xf32>` — aten.index.Tensor: integer index tensors on the listed dims (the
    `None` entries of aten's list are the dims not listed), broadcast together; adjacent indexed
    dims are replaced in place by the broadcast index shape, otherwise it goes first."""

    name = "torch.index"
    input = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    dims = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, indices: Sequence[SSAValue], dims: Sequence[int], result_type):
        super().__init__(
            operands=[x, indices],
            result_types=[result_type],
            properties={"dims": DenseArrayBase.from_list(i64, list(dims))},
        )

    def index_ranges(self) -> list[tuple[SSAValue, int, int]]:
        """(index operand, the dim's size, the lowest valid value): a negative index counts
        from the end, as aten's."""
        shape = self.input.type.get_shape()
        return [(v, shape[d], -shape[d]) for v, d in zip(self.indices, self.dims.get_values())]

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        ts = _check_indices(self, self.indices)
        dims = list(self.dims.get_values())
        rank = len(_shape(x))
        if not dims or dims != sorted(set(dims)) or dims[0] < 0 or dims[-1] >= rank:
            raise VerifyException(
                f"{self.name}: expected distinct sorted dims within rank {rank}, got {dims}"
            )
        if len(dims) != len(ts):
            raise VerifyException(
                f"{self.name}: expected one index tensor per dim ({len(dims)}), got {len(ts)}"
            )
        want = index_shape(_shape(x), dims, [_shape(t) for t in ts])
        if want is None:
            raise VerifyException(
                f"{self.name}: index shapes {[_shape(t) for t in ts]} do not broadcast"
            )
        _check_result_shape(self, want[0], r)
        _same_element_type(self, x, r)


@irdl_op_definition
class ArangeOp(_TorchOp):
    """`torch.arange {start = 0.0 : f64, end = 7.0 : f64, step = 1.0 : f64} : tensor<7xi64>` —
    start, start + step, ... below end (aten.arange.default / .start / .start_step)."""

    name = "torch.arange"
    assembly_format = "attr-dict `:` type($result)"
    start = prop_def(FloatAttr)
    end = prop_def(FloatAttr)
    step = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, start: float, end: float, step: float, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={k: FloatAttr(float(v), 64) for k, v in
                        (("start", start), ("end", end), ("step", step))},
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        start, end, step = (a.value.data for a in (self.start, self.end, self.step))
        if step == 0:
            raise VerifyException(f"{self.name}: expected a nonzero step, got 0")
        n = max(math.ceil((end - start) / step), 0)
        _check_result_shape(self, [n], r)


@irdl_op_definition
class FullOp(_TorchOp):
    """`torch.full {value = 1.0 : f64} : tensor<2x3xf32>` — every element is the value
    (aten.full, ones, zeros, new_ones, new_zeros, new_full, full_like, ones_like, zeros_like)."""

    name = "torch.full"
    assembly_format = "attr-dict `:` type($result)"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(
            result_types=[result_type], properties={"value": FloatAttr(float(value), 64)}
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        v = self.value.value.data
        if _is_int(r) and v != int(v):
            raise VerifyException(
                f"{self.name}: expected an integer value for {r.element_type}, got {v}"
            )


@irdl_op_definition
class SdpaOp(_TorchOp):
    """`torch.sdpa %q, %k, %v {is_causal, scale = 0.25 : f64, enable_gqa} : (...) -> ...` —
    softmax(q kᵀ * scale + mask) v (aten.scaled_dot_product_attention, no dropout).

    q is (..., Hq, L, E), k (..., Hkv, S, E), v (..., Hkv, S, Ev), the result (..., Hq, L, Ev).
    `scale` defaults to 1/sqrt(E); `is_causal` keeps key j <= query i; an optional `attn_mask`
    (bool: keep, or additive float) broadcasts to (..., L, S). With `enable_gqa`, Hq is a
    multiple of Hkv and query head h reads kv head h // (Hq / Hkv)."""

    name = "torch.sdpa"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    attn_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    is_causal = opt_prop_def(UnitAttr)
    scale = opt_prop_def(FloatAttr)
    enable_gqa = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())

    def __init__(self, q, k, v, mask, result_type: TensorType, *, is_causal: bool = False,
                 scale: float | None = None, enable_gqa: bool = False):
        props: dict[str, Attribute] = {}
        if is_causal:
            props["is_causal"] = UnitAttr()
        if scale is not None:
            props["scale"] = FloatAttr(scale, 64)
        if enable_gqa:
            props["enable_gqa"] = UnitAttr()
        super().__init__(
            operands=[q, k, v, [mask] if mask is not None else []],
            result_types=[result_type],
            properties=props,
        )

    def verify_(self) -> None:
        q = _tensor(self, self.query, "the query")
        k = _tensor(self, self.key, "the key")
        v = _tensor(self, self.value, "the value")
        r = _tensor(self, self.result, "the result")
        sq, sk, sv = _shape(q), _shape(k), _shape(v)
        if min(len(sq), len(sk), len(sv)) < 2:
            raise VerifyException(f"{self.name}: expected q, k, v of rank >= 2, got {sq}, {sk}, {sv}")
        if sk[-1] != sq[-1] or sk[-2] != sv[-2]:
            raise VerifyException(
                f"{self.name}: expected k (..., S, {sq[-1]}) and v (..., S, Ev), got {sk} and {sv}"
            )
        want = sdpa_batch(sq, sk, sv, self.enable_gqa is not None)
        if want is None:
            raise VerifyException(
                f"{self.name}: batch dims of {sq}, {sk} and {sv} do not broadcast (with "
                f"enable_gqa, query heads (dim -3) must be a multiple of kv heads)"
            )
        _check_result_shape(self, [*want, sq[-2], sv[-1]], r)
        _same_element_type(self, q, k, v, r)
        if _is_int(q):  # as aten: a softmax of integer scores is not defined
            raise VerifyException(f"{self.name}: expected floating-point q, k, v, got {q}")
        if self.attn_mask is not None:
            m = _tensor(self, self.attn_mask, "the attn_mask")
            if self.is_causal is not None:
                raise VerifyException(f"{self.name}: expected is_causal or attn_mask, got both")
            want = (*want, sq[-2], sk[-2])
            if broadcast_shapes(_shape(m), want) != want:
                raise VerifyException(
                    f"{self.name}: expected an attn_mask broadcastable to {want}, got {_shape(m)}"
                )
            allowed = dict.fromkeys(("i1", "f32", str(q.element_type)))  # as aten
            if str(m.element_type) not in allowed:
                raise VerifyException(f"{self.name}: expected an attn_mask of "
                                      f"{' or '.join(allowed)}, got {m}")


def sdpa_batch(sq, sk, sv, gqa: bool) -> tuple[int, ...] | None:
    """The batch dims of sdpa's result: q's, k's and v's broadcast together (matmul's rule),
    kv heads (dim -3) first repeated to q's with enable_gqa; None if they do not fit."""
    bk, bv = list(sk[:-2]), list(sv[:-2])
    if gqa:
        if min(len(sq), len(sk), len(sv)) < 3 or sk[-3] != sv[-3] or sq[-3] % sk[-3]:
            return None
        bk[-1] = bv[-1] = sq[-3]
    b = broadcast_shapes(sq[:-2], bk)
    return None if b is None else broadcast_shapes(b, bv)


SHAPE_OPS: list[type[IRDLOperation]] = [
    ReshapeOp, PermuteOp, TransposeOp, ExpandOp, UnsqueezeOp, SqueezeOp, SliceOp, SelectOp,
    CatOp, EmbeddingOp, IndexOp, ArangeOp, FullOp, SdpaOp,
]


# ---------------------------------------------------------------------------------------------
# math: linear, gelu, reductions, softmax, layer_norm, dtype conversion, where
#
# aten.mm / bmm import as `torch.matmul`, and aten.addmm as matmul + add (alpha/beta as muls by
# constants); Python-number operands are 0-d `torch.constant`s of the other operand's dtype.


@irdl_op_definition
class LinearOp(_TorchOp):
    """`torch.linear %x, %w, %b : (tensor<4x5xf32>, tensor<3x5xf32>, tensor<3xf32>) ->
    tensor<4x3xf32>` — x @ wᵀ + b (aten.linear; the bias is optional)."""

    name = "torch.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType):
        super().__init__(
            operands=[x, w, [b] if b is not None else []], result_types=[result_type]
        )

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        w = _tensor(self, self.weight, "the weight")
        r = _tensor(self, self.result, "the result")
        sx, sw = _shape(x), _shape(w)
        if len(sw) != 2 or not sx or sx[-1] != sw[1]:
            raise VerifyException(
                f"{self.name}: expected a weight of shape (N, {sx[-1] if sx else 'K'}), got {sw}"
            )
        types = [x, w, r]
        if self.bias is not None:
            b = _tensor(self, self.bias, "the bias")
            if broadcast_shapes(_shape(b), (sw[0],)) != (sw[0],):
                raise VerifyException(
                    f"{self.name}: expected a bias broadcastable to ({sw[0]},), got {_shape(b)}"
                )
            types.append(b)
        _check_result_shape(self, [*sx[:-1], sw[0]], r)
        _same_element_type(self, *types)


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(_TorchOp):
    """`torch.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>` — aten.gelu:
    x * Φ(x) with the exact erf form (approximate "none", the default when absent) or the tanh
    approximation."""

    name = "torch.gelu"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    approximate = opt_prop_def(StringAttr)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, approximate: str, result_type: TensorType):
        props = {"approximate": StringAttr(approximate)} if approximate != "none" else {}
        super().__init__(operands=[x], result_types=[result_type], properties=props)

    @property
    def approximation(self) -> str:
        return self.approximate.data if self.approximate is not None else "none"

    def verify_(self) -> None:
        _unary_verify(self)
        if self.approximation not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f"{self.name}: expected approximate in {list(GELU_APPROXIMATIONS)}, "
                f"got {self.approximation!r}"
            )


def reduced_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    """The shape after reducing `dims` (non-negative): dropped, or kept as 1 with keepdim."""
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


# reductions over a dim list (aten.sum.dim_IntList, aten.mean.dim, aten.amax; their .default
# overloads list every dim). torch op name -> class name
REDUCTION_OPS: dict[str, str] = {
    "sum": "SumOp",
    "mean": "MeanOp",
    "amax": "AmaxOp",
    "amin": "AminOp",
    "prod": "ProdOp",
}


def _reduction_verify(self) -> None:
    x = _tensor(self, self.input, "the input")
    r = _tensor(self, self.result, "the result")
    rank = len(_shape(x))
    dims = list(self.dim.get_values())
    if dims != sorted(set(dims)) or (dims and (dims[0] < 0 or dims[-1] >= max(rank, 1))):
        raise VerifyException(
            f"{self.name}: expected distinct sorted dims within rank {rank}, got {dims}"
        )
    _check_result_shape(self, reduced_shape(_shape(x), dims, self.keepdim is not None), r)
    _same_element_type(self, x, r)


def _reduction_init(self, x: SSAValue, dims: Sequence[int], keepdim: bool, result_type) -> None:
    IRDLOperation.__init__(self, operands=[x], result_types=[result_type],
                           properties=_props(dim=sorted(dims), keepdim=keepdim))


REDUCTION_CLASSES = _family(
    REDUCTION_OPS, "`torch.{op} %x {{dim = array<i64: 1>, keepdim}} : (tensor<4x8xf32>) -> "
    "tensor<4x1xf32>` (aten.{op}; dims non-negative, sorted).", _reduction_verify,
    lambda: {**_unary_fields(), "dim": prop_def(DenseArrayBase), "keepdim": opt_prop_def(UnitAttr)},
    _reduction_init)


# ops along one dim that keep the shape: torch op name -> class name
ALONG_DIM_OPS: dict[str, str] = {
    "softmax": "SoftmaxOp",  # exp(x - max) / sum(exp(x - max)) (a dtype argument: torch.to first)
    "cumsum": "CumsumOp",  # inclusive prefix sums
    "cumprod": "CumprodOp",  # inclusive prefix products
    "cummax": "CummaxOp",  # running maxima (aten.cummax's values; NaN stays)
    "cummin": "CumminOp",  # running minima
}


def _along_dim_verify(self) -> None:
    _unary_verify(self)
    _norm_dim(self, _int(self.dim), max(len(_shape(self.input.type)), 1))


ALONG_DIM_CLASSES = _family(
    ALONG_DIM_OPS, "`torch.{op} %x {{dim = 1 : i64}} : (tensor<4x8xf32>) -> tensor<4x8xf32>` "
    "(aten.{op} along `dim`; 0-d: dim 0).", _along_dim_verify,
    lambda: {**_unary_fields(), "dim": prop_def(IntegerAttr)}, _props_init("dim"))
SoftmaxOp = ALONG_DIM_CLASSES["softmax"]

# the index of the largest / smallest element along a dim (the first one on ties; NaN is
# the largest): i64 results
ARG_OPS: dict[str, str] = {"argmax": "ArgmaxOp", "argmin": "ArgminOp"}


def _arg_verify(self) -> None:
    x = _tensor(self, self.input, "the input")
    r = _tensor(self, self.result, "the result")
    rank = len(_shape(x))
    d = _norm_dim(self, _int(self.dim), max(rank, 1))
    _check_result_shape(self, reduced_shape(_shape(x), [d] if rank else [],
                                            self.keepdim is not None), r)
    if str(r.element_type) != "i64":
        raise VerifyException(f"{self.name}: expected an i64 result, got {r}")


ARG_CLASSES = _family(
    ARG_OPS, "`torch.{op} %x {{dim = 1 : i64, keepdim}} : (tensor<4x8xf32>) -> tensor<4x1xi64>` "
    "(aten.{op}; without a dim it imports on the flattened input).", _arg_verify,
    lambda: {**_unary_fields(), "dim": prop_def(IntegerAttr), "keepdim": opt_prop_def(UnitAttr)},
    _props_init("dim", "keepdim"))


@irdl_op_definition
class GatherOp(_TorchOp):
    """`torch.gather %x, %idx {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x3xi64>) ->
    tensor<4x3xf32>` — y[i][j] = x[i][idx[i][j]] for dim 1 (aten.gather): one rank, the
    result shaped like the index, which is no larger than x off `dim`."""

    name = "torch.gather"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, index: SSAValue, dim: int, result_type: TensorType):
        super().__init__(operands=[x, index], result_types=[result_type], properties=_props(dim=dim))

    def index_ranges(self) -> list[tuple[SSAValue, int, int]]:
        """(index operand, the dim's size, the lowest valid value): no negative index."""
        shape = self.input.type.get_shape()
        return [(self.index, shape[self.dim.value.data % len(shape)] if shape else 1, 0)]

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        (idx,) = _check_indices(self, [self.index])
        r = _tensor(self, self.result, "the result")
        sx, si = _shape(x), _shape(idx)
        d = _norm_dim(self, _int(self.dim), max(len(sx), 1))
        if len(sx) != len(si) or any(i > n for k, (i, n) in enumerate(zip(si, sx)) if k != d):
            raise VerifyException(
                f"{self.name}: expected an index of rank {len(sx)} no larger than {sx} off "
                f"dim {d}, got {si}"
            )
        _check_result_shape(self, si, r)
        _same_element_type(self, x, r)


def window_shape(size: int, k: int, stride: int, lo: int, hi: int, dilation: int) -> int:
    """Outputs of a sliding window (convolution, pooling) over a dim padded by lo and hi."""
    return (size + lo + hi - dilation * (k - 1) - 1) // stride + 1


class _WindowOp(_TorchOp):
    """Shared by convolution and pooling: a window over the last `len(stride)` dims, padded by
    `padding` (lo per dim, then hi per dim: 'same' and ceil_mode pad asymmetrically)."""

    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)

    def window(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """(stride, pad lo, pad hi, dilation), one entry per window dim."""
        st, pad, dil = (list(a.get_values()) for a in (self.stride, self.padding, self.dilation))
        n = len(st)
        return st, pad[:n], pad[n:], dil

    def check_window(self, x: Sequence[int], kernel: Sequence[int], r: TensorType) -> None:
        st, lo, hi, dil = self.window()
        n = len(st)
        if not (len(kernel) == len(dil) == n and len(lo) == len(hi) == n) or len(x) < n:
            raise VerifyException(
                f"{self.name}: expected stride, dilation, kernel and padding (lo, hi) for each "
                f"of {n} window dims of {tuple(x)}"
            )
        if min(st + dil + list(kernel)) < 1 or min(lo + hi) < 0:
            raise VerifyException(f"{self.name}: expected positive stride, dilation and kernel, "
                                  "and non-negative padding")
        spatial = [window_shape(x[-n + i], kernel[i], st[i], lo[i], hi[i], dil[i])
                   for i in range(n)]
        if min(spatial, default=1) < 0:
            raise VerifyException(f"{self.name}: the window is larger than the padded input")
        _check_result_shape(self, [*_shape(r)[:-n], *spatial], r)


@irdl_op_definition
class ConvOp(_WindowOp):
    """`torch.conv %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>,
    dilation = array<i64: 1, 1>, groups = 1 : i64}` — aten.conv1d/2d/3d: x (N, C, *S), w
    (O, C / groups, *K), an optional bias (O): y (N, O, *S'). Unbatched inputs import with a
    unit batch dim."""

    name = "torch.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    groups = prop_def(IntegerAttr)
    traits = traits_def(Pure())

    def __init__(self, x, w, b, stride, pad_lo, pad_hi, dilation, groups: int, result_type):
        super().__init__(
            operands=[x, w, [b] if b is not None else []], result_types=[result_type],
            properties=_props(stride=stride, padding=[*pad_lo, *pad_hi], dilation=dilation,
                              groups=groups))

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        w = _tensor(self, self.weight, "the weight")
        r = _tensor(self, self.result, "the result")
        sx, sw, g = _shape(x), _shape(w), _int(self.groups)
        n = len(self.stride.get_values())
        if len(sx) != n + 2 or len(sw) != n + 2 or g < 1 or sw[0] % g or sx[1] != sw[1] * g:
            raise VerifyException(
                f"{self.name}: expected x (N, C, ...) and w (O, C / {g}, ...) of rank {n + 2} "
                f"with O a multiple of {g}, got {sx} and {sw}"
            )
        types = [x, w, r]
        if self.bias is not None:
            types.append(_tensor(self, self.bias, "the bias"))
            if _shape(types[-1]) != (sw[0],):
                raise VerifyException(f"{self.name}: expected a bias of shape ({sw[0]},)")
        self.check_window(sx, sw[2:], r)
        if _shape(r)[:2] != (sx[0], sw[0]):
            raise VerifyException(f"{self.name}: expected result dims ({sx[0]}, {sw[0]}, ...)")
        _same_element_type(self, *types)


# pooling: torch op name -> class name (avg: count_include_pad, divisor_override)
POOL_OPS: dict[str, str] = {"max_pool": "MaxPoolOp", "avg_pool": "AvgPoolOp"}


def _pool_verify(self) -> None:
    x = _tensor(self, self.input, "the input")
    r = _tensor(self, self.result, "the result")
    self.check_window(_shape(x), list(self.kernel.get_values()), r)
    if _shape(r)[:-len(self.kernel.get_values())] != _shape(x)[:-len(self.kernel.get_values())]:
        raise VerifyException(f"{self.name}: expected the leading dims of {_shape(x)}")
    _same_element_type(self, x, r)


def _pool_init(self, x, kernel, stride, pad_lo, pad_hi, dilation, result_type,
               count_include_pad: bool = False, divisor: int | None = None) -> None:
    props = _props(kernel=kernel, stride=stride, padding=[*pad_lo, *pad_hi], dilation=dilation,
                   count_include_pad=count_include_pad, divisor_override=divisor)
    IRDLOperation.__init__(self, operands=[x], result_types=[result_type], properties=props)


POOL_CLASSES = _family(
    POOL_OPS, "`torch.{op} %x {{kernel = array<i64: 2, 2>, stride, padding, dilation}}` "
    "(aten.{op}1d/2d/3d over the last len(kernel) dims; padding is the identity (max) or "
    "zeros (avg, counted with count_include_pad)).", _pool_verify,
    lambda: {**_unary_fields(), "kernel": prop_def(DenseArrayBase),
             "count_include_pad": opt_prop_def(UnitAttr),
             "divisor_override": opt_prop_def(IntegerAttr)}, _pool_init, _WindowOp)


@irdl_op_definition
class LayerNormOp(_TorchOp):
    """`torch.layer_norm %x, %w, %b {normalized_shape = array<i64: 64>, eps = 1.0e-05 : f64}` —
    (x - mean) * rsqrt(var + eps) * w + b over the normalized (trailing) dims, the variance
    biased (aten.layer_norm). The affine operands are optional: none, weight, or weight and bias
    (a bias alone imports as layer_norm + add)."""

    name = "torch.layer_norm"
    input = operand_def(TensorType)
    affine = var_operand_def(TensorType)
    result = result_def(TensorType)
    normalized_shape = prop_def(DenseArrayBase)
    eps = prop_def(FloatAttr)
    traits = traits_def(Pure())

    def __init__(self, x, weight, bias, normalized_shape: Sequence[int], eps: float, result_type):
        if bias is not None and weight is None:
            raise ValueError("torch.layer_norm: a bias needs a weight")
        super().__init__(
            operands=[x, [v for v in (weight, bias) if v is not None]],
            result_types=[result_type],
            properties={
                "normalized_shape": DenseArrayBase.from_list(i64, list(normalized_shape)),
                "eps": FloatAttr(eps, 64),
            },
        )

    @property
    def weight(self) -> SSAValue | None:
        return self.affine[0] if len(self.affine) > 0 else None

    @property
    def bias(self) -> SSAValue | None:
        return self.affine[1] if len(self.affine) > 1 else None

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        norm = tuple(self.normalized_shape.get_values())
        if not norm or _shape(x)[-len(norm) :] != norm:
            raise VerifyException(
                f"{self.name}: normalized_shape {list(norm)} must be the trailing dims of "
                f"{list(_shape(x))}"
            )
        if len(self.affine) > 2:
            raise VerifyException(
                f"{self.name}: expected at most weight and bias, got {len(self.affine)} operands"
            )
        for v in self.affine:
            t = _tensor(self, v, "weight and bias")
            if _shape(t) != norm:
                raise VerifyException(
                    f"{self.name}: expected weight and bias of shape {list(norm)}, "
                    f"got {list(_shape(t))}"
                )
            _same_element_type(self, x, t)
        _check_result_shape(self, _shape(x), r)
        _same_element_type(self, x, r)


@irdl_op_definition
class ToOp(_TorchOp):
    """`torch.to %x : (tensor<4xf32>) -> tensor<4xf16>` — a dtype conversion (aten.to.dtype,
    aten._to_copy, aten.to.dtype_layout, aten.to.device); a conversion to the same dtype
    imports as its operand."""

    name = "torch.to"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        _check_result_shape(self, _shape(x), r)


@irdl_op_definition
class WhereOp(_TorchOp):
    """`torch.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) ->
    tensor<4x8xf32>` — a where c is true, else b, all three broadcast (aten.where.self;
    .ScalarSelf/.ScalarOther/.Scalar with 0-d constants)."""

    name = "torch.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    __init__ = _operands_init

    def verify_(self) -> None:
        c = _tensor(self, self.condition, "the condition")
        a = _tensor(self, self.lhs, "the lhs")
        b = _tensor(self, self.rhs, "the rhs")
        r = _tensor(self, self.result, "the result")
        if str(c.element_type) != "i1":
            raise VerifyException(f"{self.name}: expected an i1 condition, got {c}")
        ab = broadcast_shapes(_shape(a), _shape(b))
        want = broadcast_shapes(_shape(c), ab) if ab is not None else None
        if want is None:
            raise VerifyException(
                f"{self.name}: shapes {_shape(c)}, {_shape(a)} and {_shape(b)} do not broadcast"
            )
        _check_result_shape(self, want, r)
        _same_element_type(self, a, b, r)


MATH_OPS: list[type[IRDLOperation]] = [
    *COMPARE_CLASSES.values(), *LOGICAL_CLASSES.values(), *BITWISE_CLASSES.values(),
    *REDUCTION_CLASSES.values(),
    *ALONG_DIM_CLASSES.values(), *ARG_CLASSES.values(), *POOL_CLASSES.values(),
    LinearOp, GeluOp, LayerNormOp, ToOp, WhereOp, GatherOp, ConvOp,
]


Torch = Dialect(
    "torch",
    [*UNARY_CLASSES.values(), *BINARY_CLASSES.values(), ConstantOp, MatmulOp, RmsNormOp,
     *SHAPE_OPS, *MATH_OPS],
    [],
)
