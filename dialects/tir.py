"""Tensor IR: every torch op decomposed into four kinds of whole-tensor op.

    %b = tir.index_map %bias (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
    %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
    %r = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
    %z = tir.full 0.000000e+00 : tensor<16x16xf32>

`elementwise` applies one scalar kind to operands of one type; `reduce` folds dims with a
combiner (`argmax`/`argmin` fold one dim to the i64 index of its best element); `scan` keeps
every prefix along one dim (`tir.scan add %x [1] : tensor<4x8xf32>` is cumsum); `index_map`
moves data by an affine map from output coordinates to input coordinates (broadcast,
transpose, reshape, slice; floordiv/mod allowed); `full` is a splat constant. Matmul
is index_maps + `mul` + `reduce add`: the broadcast product is never materialized, because
`loop-fuse` inlines it into the reduction.

Data movement that one affine map cannot express has its own ops: `gather` (coordinates read
from integer index tensors: embedding, `x[idx]`), `concat` (inputs laid along a dim) and `iota`
(coordinate values: arange, mask rows/columns).

    %g = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1))
           : tensor<100x64xf32>, tensor<2x7xi64> -> tensor<2x7x64xf32>
    %c = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x7xf32>
    %i = tir.iota dim 0 start 0 step 1 : tensor<7xi64>

Ops whose result element type differs from their operands': `compare` (a kind from its table,
i1 result), `select` (an i1 condition picks between two operands) and `cast` (another element
type: floats, integers, i1 as 0/1).

    %m = tir.compare lt(%x, %y) : tensor<4x8xf32> -> tensor<4x8xi1>
    %s = tir.select %m, %x, %y : tensor<4x8xf32>
    %h = tir.cast %s : tensor<4x8xf32> -> tensor<4x8xf16>

The kind tables (`ELEMENTWISE_ARITY`, `REDUCE_KINDS`, `CompareKind`) are the one list of kinds:
the verifier checks arity from them, and the interpreter and `tir-to-loop` each map every kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
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
    POW = "pow"
    FMOD = "fmod"
    COS = "cos"
    SIN = "sin"
    ERF = "erf"
    ABS = "abs"
    LOG = "log"
    FLOOR = "floor"
    CEIL = "ceil"
    TRUNC = "trunc"
    ROUND = "round"
    SIGN = "sign"
    EXPM1 = "expm1"
    LOG1P = "log1p"
    LOG2 = "log2"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    TAN = "tan"
    EXP2 = "exp2"
    LOG10 = "log10"
    ASIN = "asin"
    ACOS = "acos"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    ATAN2 = "atan2"  # atan2(lhs, rhs): the angle of the point (rhs, lhs)
    AND = "and"  # i1 or integer operands (bitwise)
    OR = "or"  # i1 or integer operands (bitwise)
    XOR = "xor"  # integers
    SHL = "shl"  # integers: lhs << rhs, 0 where rhs is negative or the width or more
    SHR = "shr"  # integers: lhs >> rhs (arithmetic), the sign where rhs is out of range


ELEMENTWISE_ARITY: dict[ElementwiseKind, int] = {
    k: 2 if k in ("add", "sub", "mul", "div", "max", "min", "pow", "fmod", "atan2", "and",
                 "or", "xor", "shl", "shr") else 1
    for k in ElementwiseKind
}

LOGICAL_KINDS = (ElementwiseKind.AND, ElementwiseKind.OR)
"""The kinds on i1 tensors (and integers, bitwise). max and min take i1 too (False < True:
or, and); every other kind computes on numbers."""

BIT_KINDS = (*LOGICAL_KINDS, ElementwiseKind.XOR, ElementwiseKind.SHL, ElementwiseKind.SHR)
"""The kinds on integers only (bitwise; and/or on i1 too)."""

INTEGER_KINDS = tuple(ElementwiseKind(k) for k in ("add", "sub", "mul", "max", "min", "neg", "abs",
                                                   "sign", "fmod", "div", "and", "or", "xor", "shl",
                                                   "shr"))
"""The kinds that also compute on integers (index arithmetic; torch computes the rest in a
float type). On integers div and fmod are C's: the quotient truncated, the remainder with the
dividend's sign."""


class ReduceKind(StrEnum):
    ADD = "add"
    MAX = "max"
    MIN = "min"
    MUL = "mul"
    ARGMAX = "argmax"  # the index (i64) of the first largest element; NaN is the largest
    ARGMIN = "argmin"


REDUCE_KINDS = tuple(ReduceKind)
ARG_KINDS = (ReduceKind.ARGMAX, ReduceKind.ARGMIN)
"""Reductions to an index: one dim, an i64 result; `tir.scan` takes the others."""

REDUCE_IDENTITY: dict[ReduceKind, float] = {
    ReduceKind.ADD: 0.0, ReduceKind.MUL: 1.0, ReduceKind.MAX: float("-inf"),
    ReduceKind.MIN: float("inf"), ReduceKind.ARGMAX: float("-inf"),
    ReduceKind.ARGMIN: float("inf"),
}


def reduce_identity(kind: ReduceKind, elt: Attribute) -> float:
    """The combiner's identity in element type `elt`: a reduction's initial value (an arg
    kind's best value so far) and its result over nothing; +-inf is an integer's extreme."""
    v = REDUCE_IDENTITY[kind]
    if is_i1(elt) and v in (float("inf"), float("-inf")):
        return 1 if v > 0 else 0  # a bool: False < True
    if isinstance(elt, IntegerType) and v in (float("inf"), float("-inf")):
        half = 2 ** (elt.width.data - 1)
        return half - 1 if v > 0 else -half
    return v


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


def print_signature(printer: Printer, attributes, in_types, out_type) -> None:
    """` {attrs} : tensor<...>, tensor<...> -> tensor<...>`: the tail of every tir op whose
    result type is not its operands' type."""
    printer.print_op_attributes(attributes)
    printer.print_string(" : ")
    printer.print_list(in_types, printer.print_attribute)
    printer.print_string(" -> ")
    printer.print_attribute(out_type)


def parse_signature(parser: Parser, count: int | None = None, attrs=None):
    """Parse ` {attrs} : T1, T2 -> R` -> (attributes, input types, result type). With `count`,
    exactly that many input types; `attrs` when the op head already read the dict."""
    if attrs is None:
        attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    if count is not None and len(types) != count:
        parser.raise_error(f"expected {count} operand type(s), got {len(types)}", pos)
    parser.parse_punctuation("->")
    return attrs, types, parser.parse_type()


def print_kind_call(printer: Printer, kind: str, operands, attributes) -> None:
    """` add(%a, %b) {attrs}`: the head shared by the kind-table ops."""
    printer.print_string(f" {kind}(")
    printer.print_list(operands, printer.print_ssa_value)
    printer.print_string(")")
    printer.print_op_attributes(attributes)


def parse_kind_call(parser: Parser, kinds: type[StrEnum]):
    """Parse ` add(%a, %b) {attrs}` -> (kind, unresolved operands, attributes)."""
    kind = parser.parse_str_enum(kinds)
    ops = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
    return kind, ops, parser.parse_optional_attr_dict()


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
        elt = self.result.type.element_type
        boolean = is_i1(elt)
        if kind in BIT_KINDS:
            if not isinstance(elt, IntegerType) or boolean and kind not in LOGICAL_KINDS:
                want = "i1 or integers" if kind in LOGICAL_KINDS else "integers"
                raise VerifyException(
                    f"{self.name} {kind}: expected {want}, got {self.result.type}"
                )
        elif boolean and kind not in (ElementwiseKind.MAX, ElementwiseKind.MIN):  # (or, and)
            raise VerifyException(f"{self.name} {kind}: expected numbers, got {self.result.type}")
        if isinstance(elt, IntegerType) and not boolean and kind not in INTEGER_KINDS:
            raise VerifyException(f"{self.name} {kind}: expected floats, got {self.result.type}")

    def print(self, printer: Printer) -> None:
        print_kind_call(printer, self.kind.data, self.inputs, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseOp:
        pos = parser.pos
        kind, ops, attrs = parse_kind_call(parser, ElementwiseKind)
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
        arg = self.kind.data in ARG_KINDS
        elt = IntegerType(64) if arg else x.element_type
        if kept != tuple(r.get_shape()) or r.element_type != elt:
            raise VerifyException(
                f"{self.name}: reducing {x} over {list(dims)} gives shape {list(kept)} of "
                f"{elt}, got {r}"
            )
        if arg and len(dims) != 1:
            raise VerifyException(f"{self.name} {self.kind.data}: expected one dim, got {list(dims)}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_ssa_value(self.input)
        printer.print_string(" [" + ", ".join(str(d) for d in self.reduced_dims) + "]")
        print_signature(printer, self.attributes, [self.input.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        pos = parser.pos
        kind = parser.parse_str_enum(ReduceKind)
        x = parser.parse_unresolved_operand()
        dims = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        attrs, (in_t,), out_t = parse_signature(parser, 1)
        (xv,) = parser.resolve_operands([x], [in_t], pos)
        op = cls(kind, xv, dims, out_t)
        op.attributes |= attrs
        return op


@irdl_op_definition
class ScanOp(IRDLOperation):
    """`%y = tir.scan add %x [1] : tensor<4x8xf32>` — inclusive prefix combination along one
    dim: y[.., i, ..] = x[.., 0, ..] ⊕ ... ⊕ x[.., i, ..] in that order (cumsum, cumprod; the
    value kinds of the combiner table)."""

    name = "tir.scan"
    kind = prop_def(ReduceKindAttr)
    dim = prop_def(IntegerAttr[I64])
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: ReduceKind, x: SSAValue, dim: int):
        super().__init__(operands=[x], result_types=[SSAValue.get(x).type],
                         properties={"kind": ReduceKindAttr(kind), "dim": IntegerAttr(dim, 64)})

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        d, rank = self.dim.value.data, x.get_num_dims()
        if self.kind.data in ARG_KINDS:
            raise VerifyException(f"{self.name}: expected a value combiner, got {self.kind.data}")
        if not 0 <= d < rank:
            raise VerifyException(f"{self.name}: expected a dim in [0, {rank - 1}], got {d}")
        if self.result.type != x:
            raise VerifyException(f"{self.name}: expected a result of type {x}, got {self.result.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_ssa_value(self.input)
        printer.print_string(f" [{self.dim.value.data}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ScanOp:
        pos = parser.pos
        kind = parser.parse_str_enum(ReduceKind)
        x = parser.parse_unresolved_operand()
        (dim,) = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        (xv,) = parser.resolve_operands([x], [parser.parse_type()], pos)
        op = cls(kind, xv, dim)
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
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        # a sum: each dim's coefficients added up first, so `d0 + d1 - d1` is d0's range
        coeffs: dict[int, int] = {}
        lo = hi = 0
        for scale, term in _summands(expr, 1):
            if isinstance(term, AffineDimExpr):
                coeffs[term.position] = coeffs.get(term.position, 0) + scale
                continue
            a, b = expr_range(term, dim_ranges)
            lo, hi = lo + min(scale * a, scale * b), hi + max(scale * a, scale * b)
        for d, c in coeffs.items():
            a, b = dim_ranges[d]
            lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
        return lo, hi
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


def _summands(expr: AffineExpr, scale: int) -> list[tuple[int, AffineExpr]]:
    """`expr` as a sum of (constant factor, term): sums and products by constants opened."""
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        return _summands(expr.lhs, scale) + _summands(expr.rhs, scale)
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mul \
            and isinstance(expr.rhs, AffineConstantExpr):
        return _summands(expr.lhs, scale * expr.rhs.value)
    return [(scale, expr)]


def check_map_in_bounds(op_name: str, m: AffineMap, out_shape, in_shape) -> None:
    if 0 in out_shape:  # no element is read
        return
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
        print_signature(printer, self.attributes, [self.input.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IndexMapOp:
        pos = parser.pos
        x = parser.parse_unresolved_operand()
        m = parser.parse_affine_map()
        attrs, (in_t,), out_t = parse_signature(parser, 1)
        (xv,) = parser.resolve_operands([x], [in_t], pos)
        op = cls(xv, m, out_t)
        op.attributes |= attrs
        return op


@irdl_op_definition
class FullOp(IRDLOperation):
    """`%z = tir.full 0.000000e+00 : tensor<16x16xf32>` — every element is the value (an
    integer for integer element types: `tir.full 1 : tensor<4xi64>`)."""

    name = "tir.full"
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(
            properties={"value": scalar_attr(value, result_type.element_type)},
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
        _print_scalar(printer, self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FullOp:
        neg = parser.parse_optional_punctuation("-") is not None
        hex_bits = parser._current_token.text.lower().startswith("0x")  # inf/nan print as bits
        literal_at = parser.pos
        v = parser.parse_number(allow_boolean=True)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if hex_bits and isinstance(t, TensorType) and not isinstance(t.element_type, IntegerType):
            elt = str(t.element_type)
            width = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}.get(elt, 0)
            if not 0 <= int(v) < 2**width:
                parser.raise_error(f"hex literal {int(v):#x} does not fit the bits of {elt}",
                                   literal_at, literal_at + len(hex(int(v))))
            v = float_from_bits(int(v), elt)
        if isinstance(t, TensorType) and isinstance(t.element_type, IntegerType) \
                and float(v) != int(v):  # not truncated to 0 in silence
            parser.raise_error(f"expected an integer value for {t.element_type}, got {v}",
                               literal_at, literal_at + len(str(v)))
        op = cls(-float(v) if neg else float(v), t)
        op.attributes |= attrs
        return op


def _check_static_coord(op_name: str, i: int, e: AffineExpr, ranges, n: int) -> None:
    if any(hi < lo for lo, hi in ranges):  # an empty result reads nothing
        return
    lo, hi = expr_range(e, ranges)
    if lo < 0 or hi >= n:
        raise VerifyException(
            f"{op_name}: coordinate {i} ({e}) ranges over [{lo}, {hi}], outside [0, {n - 1}]"
        )


def _has_symbol(e: AffineExpr) -> bool:
    if isinstance(e, AffineSymExpr):
        return True
    if isinstance(e, AffineBinaryOpExpr):
        return _has_symbol(e.lhs) or _has_symbol(e.rhs)
    return False


def gather_access_map(m: AffineMap) -> AffineMap:
    """A gather's table map with index value k as dim (num_dims + k) instead of symbol k: the
    map from (output coordinates, index values) to table coordinates that `loop.load` takes."""
    n = m.num_dims
    dims = [AffineExpr.dimension(i) for i in range(n)]
    syms = [AffineExpr.dimension(n + k) for k in range(m.num_symbols)]
    return AffineMap(
        n + m.num_symbols, 0, tuple(e.replace_dims_and_symbols(dims, syms) for e in m.results)
    )


@irdl_op_definition
class GatherOp(IRDLOperation):
    """`%y = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1))
    : tensor<100x64xf32>, tensor<2x7xi64> -> tensor<2x7x64xf32>` —
    y[d] = w[map(d)[ids_k[index_map_k(d)]]]: like `index_map`, but symbol k of the table map is
    the value of integer index tensor k, read at its own affine map of the output coordinates
    (embedding, `x[idx]`). A coordinate that uses a symbol is exactly that symbol; index values
    must lie in the table's dim (the interpreters check it)."""

    name = "tir.gather"
    map = prop_def(AffineMapAttr)
    index_maps = prop_def(ArrayAttr[AffineMapAttr])
    table = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, table: SSAValue, amap: AffineMap, indices: Sequence[SSAValue],
                 index_maps: Sequence[AffineMap], result_type: TensorType):
        super().__init__(
            operands=[table, indices],
            result_types=[result_type],
            properties={
                "map": AffineMapAttr(amap),
                "index_maps": ArrayAttr(AffineMapAttr(m) for m in index_maps),
            },
        )

    def verify_(self) -> None:
        x = _tensor(self, self.table, "the table")
        r = _tensor(self, self.result, "the result")
        m = self.map.data
        out_shape, rank = r.get_shape(), r.get_num_dims()
        if m.num_dims != rank or m.num_symbols != len(self.indices) or not self.indices:
            raise VerifyException(
                f"{self.name}: expected a map of the {rank} result coordinates and one symbol "
                f"per index tensor ({len(self.indices)}), got {m}"
            )
        if len(m.results) != x.get_num_dims():
            raise VerifyException(
                f"{self.name}: expected a map giving the {x.get_num_dims()} table coordinates, "
                f"got {m}"
            )
        if x.element_type != r.element_type:
            raise VerifyException(
                f"{self.name}: expected result element type {x.element_type}, got {r.element_type}"
            )
        if len(self.index_maps) != len(self.indices):
            raise VerifyException(
                f"{self.name}: expected one index map per index tensor ({len(self.indices)}), "
                f"got {len(self.index_maps)}"
            )
        ranges = [(0, n - 1) for n in out_shape]
        for k, (v, im) in enumerate(zip(self.indices, self.index_maps)):
            t = _tensor(self, v, f"index {k}")
            if not isinstance(t.element_type, IntegerType) or t.element_type.width.data == 1:
                raise VerifyException(f"{self.name}: expected index {k} of integers, got {t}")
            im = im.data
            if im.num_dims != rank or im.num_symbols or len(im.results) != t.get_num_dims():
                raise VerifyException(
                    f"{self.name}: expected index map {k} from the {rank} result coordinates to "
                    f"the {t.get_num_dims()} coordinates of {t}, got {im}"
                )
            for i, (e, n) in enumerate(zip(im.results, t.get_shape())):
                _check_static_coord(f"{self.name} index {k}", i, e, ranges, n)
        for i, (e, n) in enumerate(zip(m.results, x.get_shape())):
            if isinstance(e, AffineSymExpr):
                continue
            if _has_symbol(e):
                raise VerifyException(
                    f"{self.name}: expected coordinate {i} to be an index value or free of "
                    f"index values, got {e}"
                )
            _check_static_coord(self.name, i, e, ranges, n)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.table)
        printer.print_string(f" {self.map.data} indices(")
        for k, (v, im) in enumerate(zip(self.indices, self.index_maps)):
            if k:
                printer.print_string(", ")
            printer.print_ssa_value(v)
            printer.print_string(f" {im.data}")
        printer.print_string(")")
        print_signature(printer, self.attributes, [v.type for v in self.operands], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> GatherOp:
        pos = parser.pos
        table = parser.parse_unresolved_operand()
        m = parser.parse_affine_map()
        parser.parse_keyword("indices")

        def index():
            return parser.parse_unresolved_operand(), parser.parse_affine_map()

        pairs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, index)
        attrs, types, out_t = parse_signature(parser)
        vals = parser.resolve_operands([table, *(p[0] for p in pairs)], types, pos)
        op = cls(vals[0], m, vals[1:], [p[1] for p in pairs], out_t)
        op.attributes |= attrs
        return op


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """`%y = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x7xf32>` — the
    inputs laid one after the other along a dim (at least two inputs, equal elsewhere)."""

    name = "tir.concat"
    dim = prop_def(IntegerAttr[I64])
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: TensorType):
        super().__init__(
            operands=[inputs], result_types=[result_type], properties={"dim": IntegerAttr(dim, 64)}
        )

    def offsets(self) -> list[int]:
        """Where each input starts along the dim."""
        d, out = self.dim.value.data, [0]
        for v in self.inputs:
            out.append(out[-1] + v.type.get_shape()[d])
        return out[:-1]

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        if len(self.inputs) < 2:
            raise VerifyException(f"{self.name}: expected at least 2 inputs, got {len(self.inputs)}")
        d, rank = self.dim.value.data, r.get_num_dims()
        if not 0 <= d < rank:
            raise VerifyException(f"{self.name}: expected a dim in [0, {rank - 1}], got {d}")
        shape = list(r.get_shape())
        total = 0
        for i, v in enumerate(self.inputs):
            t = _tensor(self, v, f"input {i}")
            s = list(t.get_shape())
            if len(s) != rank or s[:d] + s[d + 1 :] != shape[:d] + shape[d + 1 :]:
                raise VerifyException(
                    f"{self.name}: expected input {i} to match {r} outside dim {d}, got {t}"
                )
            if t.element_type != r.element_type:
                raise VerifyException(
                    f"{self.name}: expected input {i} of element type {r.element_type}, got {t}"
                )
            total += s[d]
        if total != shape[d]:
            raise VerifyException(
                f"{self.name}: expected result dim {d} of size {total}, got {shape[d]}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(f" [{self.dim.value.data}]")
        print_signature(printer, self.attributes, [v.type for v in self.inputs], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatOp:
        pos = parser.pos
        ins = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        (dim,) = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        attrs, types, out_t = parse_signature(parser)
        op = cls(parser.resolve_operands(ins, types, pos), dim, out_t)
        op.attributes |= attrs
        return op


def scalar_attr(value: float, t: Attribute) -> FloatAttr | IntegerAttr:
    """A number as an attribute of element type t: IntegerAttr for integers, FloatAttr otherwise."""
    if isinstance(t, IntegerType):
        return IntegerAttr(int(value), t)
    return FloatAttr(float(value), t)


def float_from_bits(bits: int, elt: str) -> float:
    """The float a hex literal denotes (`0xff800000 : f32` is -inf), as MLIR prints them."""
    import numpy as np

    if elt == "bf16":
        return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])
    raw = {"f16": np.uint16, "f32": np.uint32, "f64": np.uint64}[elt]
    flt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[elt]
    return float(np.array([bits], dtype=raw).view(flt)[0])


def _print_scalar(printer: Printer, attr: FloatAttr | IntegerAttr) -> None:
    if isinstance(attr, IntegerAttr):
        bool_type = isinstance(attr.type, IntegerType) and attr.type.width.data == 1
        printer.print_string(str(bool(attr.value.data)).lower() if bool_type else str(attr.value.data))
    else:
        printer.print_float(attr.value.data, attr.type)


@irdl_op_definition
class IotaOp(IRDLOperation):
    """`%p = tir.iota dim 0 start 0 step 1 : tensor<7xi64>` — y[d] = start + step * d[dim], in the
    element type (integer or float): arange, and coordinate tensors for masks."""

    name = "tir.iota"
    dim = prop_def(IntegerAttr[I64])
    start = prop_def(FloatAttr | IntegerAttr)
    step = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, dim: int, start: float, step: float, result_type: TensorType):
        elt = result_type.element_type
        super().__init__(
            result_types=[result_type],
            properties={
                "dim": IntegerAttr(dim, 64),
                "start": scalar_attr(start, elt),
                "step": scalar_attr(step, elt),
            },
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        d, rank = self.dim.value.data, r.get_num_dims()
        if not 0 <= d < rank:
            raise VerifyException(f"{self.name}: expected a dim in [0, {rank - 1}], got {d}")
        elt = r.element_type
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            raise VerifyException(f"{self.name}: expected a number element type, got {elt}")
        for what, a in (("start", self.start), ("step", self.step)):
            if a.type != elt:
                raise VerifyException(
                    f"{self.name}: expected {what} of type {elt}, got {a.type}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dim {self.dim.value.data} start ")
        _print_scalar(printer, self.start)
        printer.print_string(" step ")
        _print_scalar(printer, self.step)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("dim")
        dim = parser.parse_integer()
        parser.parse_keyword("start")
        start = parser.parse_number()
        parser.parse_keyword("step")
        step = parser.parse_number()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(dim, start, step, t)
        op.attributes |= attrs
        return op


class CompareKind(StrEnum):
    """torch's comparisons. Floats compare ordered except `ne` (NaN != x is true, as in torch)."""

    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


@irdl_attr_definition
class CompareKindAttr(EnumAttribute[CompareKind], SpacedOpaqueSyntaxAttribute):
    name = "tir.cmp"


def is_i1(t: Attribute) -> bool:
    """A bool element type (ordered False < True, where a signed i1 has true = -1)."""
    return isinstance(t, IntegerType) and t.width.data == 1


@irdl_op_definition
class CompareOp(IRDLOperation):
    """`%c = tir.compare lt(%a, %b) : tensor<4x8xf32> -> tensor<4x8xi1>` — one comparison kind
    from the table on two operands of one type; the result is i1 of the same shape."""

    name = "tir.compare"
    kind = prop_def(CompareKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: CompareKind, a: SSAValue, b: SSAValue,
                 result_type: TensorType | None = None):
        t = SSAValue.get(a).type
        assert isinstance(t, TensorType)
        super().__init__(
            operands=[a, b],
            result_types=[result_type or TensorType(IntegerType(1), t.get_shape())],
            properties={"kind": CompareKindAttr(kind)},
        )

    def verify_(self) -> None:
        a = _tensor(self, self.lhs, "the lhs")
        r = _tensor(self, self.result, "the result")
        if self.rhs.type != a:
            raise VerifyException(
                f"{self.name} {self.kind.data}: expected the rhs of type {a}, got {self.rhs.type}"
            )
        want = TensorType(IntegerType(1), a.get_shape())
        if r != want:
            raise VerifyException(f"{self.name} {self.kind.data}: expected {want}, got {r}")

    def print(self, printer: Printer) -> None:
        print_kind_call(printer, self.kind.data, self.operands, {})
        print_signature(printer, self.attributes, [self.lhs.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        pos = parser.pos
        kind, ops, attrs = parse_kind_call(parser, CompareKind)
        attrs, (in_t,), out_t = parse_signature(parser, 1, attrs)
        if len(ops) != 2:
            parser.raise_error(f"tir.compare: expected 2 operands, got {len(ops)}", pos)
        a, b = parser.resolve_operands(ops, [in_t] * 2, pos)
        op = cls(kind, a, b, out_t)
        op.attributes |= attrs
        return op


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`%y = tir.select %c, %a, %b : tensor<4x8xf32>` — a where the i1 tensor c is true, else b;
    c has the result's shape, a and b its type."""

    name = "tir.select"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, c: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[c, a, b], result_types=[SSAValue.get(a).type])

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        c = _tensor(self, self.condition, "the condition")
        want = TensorType(IntegerType(1), r.get_shape())
        if c != want:
            raise VerifyException(f"{self.name}: expected a condition of type {want}, got {c}")
        for what, v in (("lhs", self.lhs), ("rhs", self.rhs)):
            if v.type != r:
                raise VerifyException(f"{self.name}: expected the {what} of type {r}, got {v.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        pos = parser.pos
        ops = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if len(ops) != 3:
            parser.raise_error(f"tir.select: expected 3 operands, got {len(ops)}", pos)
        assert isinstance(t, TensorType)
        c_t = TensorType(IntegerType(1), t.get_shape())
        op = cls(*parser.resolve_operands(ops, [c_t, t, t], pos))
        op.attributes |= attrs
        return op


ELEMENT_TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64")
"""The element types of deplo's tensors and buffers at every level (deplo-opt refuses others in
hand-written IR: xDSL cannot even print an f80 constant), and what `tir.cast` converts between:
floats and integers (floats to integers truncate; true is 1, nonzero is true)."""


@irdl_op_definition
class CastOp(IRDLOperation):
    """`%y = tir.cast %x : tensor<4x8xf32> -> tensor<4x8xf16>` — each element converted to
    another element type (floats round to nearest even); the shape does not change."""

    name = "tir.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        if x.get_shape() != r.get_shape():
            raise VerifyException(f"{self.name}: expected a result of shape {x.get_shape()}, got {r}")
        if x.element_type == r.element_type:
            raise VerifyException(f"{self.name}: expected another element type than {x}, got {r}")
        for t in (x, r):
            if str(t.element_type) not in ELEMENT_TYPES:
                raise VerifyException(
                    f"{self.name}: expected element types in {list(ELEMENT_TYPES)}, got {t}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.input)
        print_signature(printer, self.attributes, [self.input.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> CastOp:
        pos = parser.pos
        x = parser.parse_unresolved_operand()
        attrs, (in_t,), out_t = parse_signature(parser, 1)
        (xv,) = parser.resolve_operands([x], [in_t], pos)
        op = cls(xv, out_t)
        op.attributes |= attrs
        return op


Tir = Dialect(
    "tir",
    [ElementwiseOp, ReduceOp, ScanOp, IndexMapOp, FullOp, GatherOp, ConcatOp, IotaOp,
     CompareOp, SelectOp, CastOp],
    [ElementwiseKindAttr, ReduceKindAttr, CompareKindAttr],
)
