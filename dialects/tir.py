"""Tensor IR: every torch op decomposed into four kinds of whole-tensor op.

    %b = tir.index_map %bias (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
    %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
    %r = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
    %z = tir.full 0.000000e+00 : tensor<16x16xf32>

`elementwise` applies one scalar kind to operands of one type; `reduce` folds dims with a
combiner; `index_map` moves data by an affine map from output coordinates to input coordinates
(broadcast, transpose, reshape, slice; floordiv/mod allowed); `full` is a splat constant. Matmul
is index_maps + `mul` + `reduce add`: the broadcast product is never materialized, because
`loop-fuse` inlines it into the reduction.

The kind tables (`ELEMENTWISE_ARITY`, `REDUCE_KINDS`) are the one list of kinds: the verifier
checks arity from them, and the interpreter and `tir-to-loop` each map every kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    FloatAttr,
    TensorType,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


class ElementwiseKind(StrEnum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MAX = "max"
    MIN = "min"
    NEG = "neg"
    EXP = "exp"
    RSQRT = "rsqrt"
    SQRT = "sqrt"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    SILU = "silu"


ELEMENTWISE_ARITY: dict[ElementwiseKind, int] = {
    k: 2 if k in ("add", "sub", "mul", "div", "max", "min") else 1 for k in ElementwiseKind
}


class ReduceKind(StrEnum):
    ADD = "add"
    MAX = "max"
    MIN = "min"
    MUL = "mul"


REDUCE_KINDS = tuple(ReduceKind)


@irdl_attr_definition
class ElementwiseKindAttr(EnumAttribute[ElementwiseKind], SpacedOpaqueSyntaxAttribute):
    name = "tir.ew"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "tir.combiner"


def _tensor(op: IRDLOperation, value: SSAValue, what: str) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise VerifyException(f"{op.name}: expected {what} to be a ranked tensor, got {value.type}")
    return value.type


@irdl_op_definition
class ElementwiseOp(IRDLOperation):
    """`%y = tir.elementwise add(%a, %b) : tensor<16x64xf32>` — one kind from the table, applied
    to operands of the result's type."""

    name = "tir.elementwise"
    kind = prop_def(ElementwiseKindAttr)
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: ElementwiseKind, inputs: Sequence[SSAValue]):
        super().__init__(
            operands=[inputs],
            result_types=[SSAValue.get(inputs[0]).type],
            properties={"kind": ElementwiseKindAttr(kind)},
        )

    def verify_(self) -> None:
        kind = self.kind.data
        if len(self.inputs) != ELEMENTWISE_ARITY[kind]:
            raise VerifyException(
                f"{self.name} {kind}: expected {ELEMENTWISE_ARITY[kind]} operand(s), "
                f"got {len(self.inputs)}"
            )
        for i, v in enumerate(self.inputs):
            if v.type != self.result.type:
                raise VerifyException(
                    f"{self.name} {kind}: expected operand {i} of type {self.result.type}, "
                    f"got {v.type}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data}(")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseOp:
        pos = parser.pos
        kind = parser.parse_str_enum(ElementwiseKind)
        ops = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(kind, parser.resolve_operands(ops, [t] * len(ops), pos))
        op.attributes |= attrs
        return op


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """`%r = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>` — folds the
    listed dims (which are dropped from the shape) with the combiner."""

    name = "tir.reduce"
    kind = prop_def(ReduceKindAttr)
    dims = prop_def(DenseArrayBase)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: ReduceKind, x: SSAValue, dims: Sequence[int], result_type: TensorType):
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={
                "kind": ReduceKindAttr(kind),
                "dims": DenseArrayBase.from_list(i64, sorted(dims)),
            },
        )

    @property
    def reduced_dims(self) -> tuple[int, ...]:
        return tuple(self.dims.get_values())

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        dims = self.reduced_dims
        shape = x.get_shape()
        if not dims or list(dims) != sorted(set(dims)) or dims[-1] >= len(shape) or dims[0] < 0:
            raise VerifyException(
                f"{self.name}: expected distinct sorted dims within rank {len(shape)}, got {list(dims)}"
            )
        kept = tuple(n for i, n in enumerate(shape) if i not in dims)
        if kept != tuple(r.get_shape()) or r.element_type != x.element_type:
            raise VerifyException(
                f"{self.name}: reducing {x} over {list(dims)} gives shape {list(kept)}, got {r}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_ssa_value(self.input)
        printer.print_string(" [" + ", ".join(str(d) for d in self.reduced_dims) + "]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        pos = parser.pos
        kind = parser.parse_str_enum(ReduceKind)
        x = parser.parse_unresolved_operand()
        dims = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_t = parser.parse_type()
        parser.parse_punctuation("->")
        out_t = parser.parse_type()
        (xv,) = parser.resolve_operands([x], [in_t], pos)
        op = cls(kind, xv, dims, out_t)
        op.attributes |= attrs
        return op


def expr_range(expr: AffineExpr, dim_ranges: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Closed interval [lo, hi] that an affine expression takes over boxed dims (sound, maybe loose).

    Why: `index_map` and `loop.load` verifiers prove that every coordinate stays in bounds without
    enumerating the iteration space."""
    if isinstance(expr, AffineConstantExpr):
        return expr.value, expr.value
    if isinstance(expr, AffineDimExpr):
        return dim_ranges[expr.position]
    if isinstance(expr, AffineBinaryOpExpr):
        a = expr_range(expr.lhs, dim_ranges)
        b = expr_range(expr.rhs, dim_ranges)
        k = expr.kind
        if k == AffineBinaryOpKind.Add:
            return a[0] + b[0], a[1] + b[1]
        if k == AffineBinaryOpKind.Mul:
            c = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
            return min(c), max(c)
        if b[0] == b[1] and b[0] > 0:  # division or modulo by a positive constant
            c = b[0]
            if k == AffineBinaryOpKind.FloorDiv:
                return a[0] // c, a[1] // c
            if k == AffineBinaryOpKind.CeilDiv:
                return -(-a[0] // c), -(-a[1] // c)
            if k == AffineBinaryOpKind.Mod:
                return (a[0], a[1]) if 0 <= a[0] and a[1] < c else (0, c - 1)
    raise VerifyException(f"cannot bound affine expression {expr}")


def check_map_in_bounds(op_name: str, m: AffineMap, out_shape, in_shape) -> None:
    ranges = [(0, n - 1) for n in out_shape]
    for i, (e, n) in enumerate(zip(m.results, in_shape, strict=True)):
        lo, hi = expr_range(e, ranges)
        if lo < 0 or hi >= n:
            raise VerifyException(
                f"{op_name}: coordinate {i} ({e}) ranges over [{lo}, {hi}], outside [0, {n - 1}]"
            )


@irdl_op_definition
class IndexMapOp(IRDLOperation):
    """`%y = tir.index_map %x (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>` —
    y[d0, d1] = x[map(d0, d1)]: the map takes output coordinates to input coordinates."""

    name = "tir.index_map"
    map = prop_def(AffineMapAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, amap: AffineMap, result_type: TensorType):
        super().__init__(
            operands=[x], result_types=[result_type], properties={"map": AffineMapAttr(amap)}
        )

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        m = self.map.data
        if m.num_dims != r.get_num_dims() or m.num_symbols:
            raise VerifyException(
                f"{self.name}: map {m} must take the {r.get_num_dims()} result coordinates"
            )
        if len(m.results) != x.get_num_dims():
            raise VerifyException(
                f"{self.name}: map {m} must give the {x.get_num_dims()} input coordinates"
            )
        if x.element_type != r.element_type:
            raise VerifyException(f"{self.name}: element types differ: {x} -> {r}")
        check_map_in_bounds(self.name, m, r.get_shape(), x.get_shape())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.input)
        printer.print_string(f" {self.map.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IndexMapOp:
        pos = parser.pos
        x = parser.parse_unresolved_operand()
        m = parser.parse_affine_map()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_t = parser.parse_type()
        parser.parse_punctuation("->")
        out_t = parser.parse_type()
        (xv,) = parser.resolve_operands([x], [in_t], pos)
        op = cls(xv, m, out_t)
        op.attributes |= attrs
        return op


@irdl_op_definition
class FullOp(IRDLOperation):
    """`%z = tir.full 0.000000e+00 : tensor<16x16xf32>` — every element is the value."""

    name = "tir.full"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(
            properties={"value": FloatAttr(value, result_type.element_type)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        if self.value.type != r.element_type:
            raise VerifyException(
                f"{self.name}: expected a value of type {r.element_type}, got {self.value.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_float(self.value.value.data, self.value.type)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FullOp:
        neg = parser.parse_optional_punctuation("-") is not None
        v = parser.parse_number()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(-float(v) if neg else float(v), t)
        op.attributes |= attrs
        return op


Tir = Dialect(
    "tir",
    [ElementwiseOp, ReduceOp, IndexMapOp, FullOp],
    [ElementwiseKindAttr, ReduceKindAttr],
)
