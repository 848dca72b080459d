"""CUDA IR: a C++ syntax tree, printed by `lowering/emit_cuda.py` (`-t cuda`), one op per construct.

Values are typed with C types: builtin scalars (`f32` is `float`, `i32` is `int`, `i1` is `bool`,
`f16` is `__half`, see `C_SCALARS`), `!cuda.ptr<f32, const, restrict>` for kernel parameters and
addresses, `!cuda.array<256xf32>` for `__shared__` arrays. Every value-producing op is an
expression: the printer declares it `const T name = expr;` or inlines it into its one use.
Loop-carried values and `cuda.if` results are printed as mutable variables assigned at
`cuda.yield`. Buffers are flat: indices are linear `int`s.

    cuda.kernel @k(%x: !cuda.ptr<f32, const, restrict>, %y: !cuda.ptr<f32, restrict>) launch_bounds(256) {
      %t = cuda.special threadIdx.x
      %v = cuda.load %x[%t] : !cuda.ptr<f32, const, restrict>
      %e = cuda.call "expf"(%v) : (f32) -> f32
      cuda.store %e, %y[%t] : !cuda.ptr<f32, restrict>
    }
    // in the host func.func @main:
    cuda.launch @k(%a, %b) grid(1, 1, 1) block(256, 1, 1) smem(0) : memref<256xf32>, memref<256xf32>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from deplo.hardware import MAX_BLOCK_THREADS, WARP

C_SCALARS: dict[Attribute, str] = {
    Float16Type(): "__half", BFloat16Type(): "__nv_bfloat16", Float32Type(): "float",
    Float64Type(): "double", i1: "bool", IntegerType(8): "signed char", IntegerType(16): "short",
    i32: "int", i64: "long long", IntegerType(8, Signedness.UNSIGNED): "unsigned char",
    IntegerType(16, Signedness.UNSIGNED): "unsigned short",
    IntegerType(32, Signedness.UNSIGNED): "unsigned int",
    IntegerType(64, Signedness.UNSIGNED): "unsigned long long",
}
HALF_TYPES = (Float16Type(), BFloat16Type())  # computed through float, never with C operators
INDEX_TYPES = (i32, i64)
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """A C pointer: `!cuda.ptr<f32>`, `!cuda.ptr<f32, const, restrict>` (`const float* __restrict__`)."""

    name = "cuda.ptr"
    element: Attribute
    is_const: IntAttr
    is_restrict: IntAttr

    def __init__(self, element: Attribute, const: bool = False, restrict: bool = False):
        super().__init__(element, IntAttr(int(const)), IntAttr(int(restrict)))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element)
            printer.print_string(", const" * self.is_const.data
                                 + ", restrict" * self.is_restrict.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            element = parser.parse_type()
            const = restrict = False
            while parser.parse_optional_punctuation(","):
                if parser.parse_optional_keyword("const"):
                    const = True
                else:
                    parser.parse_keyword("restrict")
                    restrict = True
        return (element, IntAttr(int(const)), IntAttr(int(restrict)))

    def verify(self) -> None:
        if self.element not in C_SCALARS:
            raise VerifyException(f"!cuda.ptr: expected a C scalar element type, got {self.element}")


@irdl_attr_definition
class ArrayType(ParametrizedAttribute, TypeAttribute):
    """A fixed-size C array (a `__shared__` buffer): `!cuda.array<256xf32>`."""

    name = "cuda.array"
    size: IntAttr
    element: Attribute

    def __init__(self, size: int, element: Attribute):
        super().__init__(IntAttr(size), element)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.size.data}x")
            printer.print_attribute(self.element)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            shape, element = parser.parse_ranked_shape()
        if len(shape) != 1:
            parser.raise_error(f"expected a 1-D array, got {len(shape)} dimensions")
        return (IntAttr(shape[0]), element)

    def verify(self) -> None:
        if self.element not in C_SCALARS or self.size.data < 1:
            raise VerifyException(
                f"!cuda.array: expected a positive size and a C scalar, got {self.size.data}x{self.element}")


def c_type(t: Attribute) -> str:
    """The C spelling of a value or parameter type (`const float* __restrict__`)."""
    if isinstance(t, PtrType):
        return ("const " * t.is_const.data + C_SCALARS[t.element] + "*"
                + " __restrict__" * t.is_restrict.data)
    if isinstance(t, ArrayType):
        return C_SCALARS[t.element]
    return C_SCALARS[t]


def _verify_scalar(op: Operation, t: Attribute, allow_half: bool = True) -> None:
    if t not in C_SCALARS:
        raise VerifyException(f"'{op.name}': expected a C scalar type, got {t}")
    if not allow_half and t in HALF_TYPES:
        raise VerifyException(f"'{op.name}': expected a non-half type (compute in float), got {t}")


def _verify_in_kernel(op: Operation) -> None:
    p = op.parent_op()
    while p is not None and not isinstance(p, KernelOp):
        p = p.parent_op()
    if p is None:
        raise VerifyException(f"'{op.name}' expected inside a cuda.kernel, got none around it")


class BinaryKind(StrEnum):
    ADD = "add"; SUB = "sub"; MUL = "mul"; DIV = "div"; REM = "rem"
    AND = "and"; OR = "or"; XOR = "xor"; SHL = "shl"; SHR = "shr"


class CompareKind(StrEnum):
    EQ = "eq"; NE = "ne"; LT = "lt"; LE = "le"; GT = "gt"; GE = "ge"


class UnaryKind(StrEnum):
    NEG = "neg"; NOT = "not"; BNOT = "bnot"


class ShflMode(StrEnum):
    XOR = "xor"; DOWN = "down"; UP = "up"; IDX = "idx"


class Special(StrEnum):
    """CUDA's built-in index variables."""

    TX = "threadIdx.x"; TY = "threadIdx.y"; TZ = "threadIdx.z"
    BX = "blockIdx.x"; BY = "blockIdx.y"; BZ = "blockIdx.z"
    DX = "blockDim.x"; DY = "blockDim.y"; DZ = "blockDim.z"
    GX = "gridDim.x"; GY = "gridDim.y"; GZ = "gridDim.z"


# The C spelling of each kind: the printer reads these tables.
C_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "and": "&", "or": "|",
            "xor": "^", "shl": "<<", "shr": ">>"}
C_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
C_UNARY = {"neg": "-", "not": "!", "bnot": "~"}
C_SHFL = {"xor": "__shfl_xor_sync", "down": "__shfl_down_sync", "up": "__shfl_up_sync",
          "idx": "__shfl_sync"}
_INT_ONLY = {"rem", "and", "or", "xor", "shl", "shr"}


@irdl_attr_definition
class BinaryKindAttr(EnumAttribute[BinaryKind], SpacedOpaqueSyntaxAttribute):
    name = "cuda.binary_kind"


@irdl_attr_definition
class CompareKindAttr(EnumAttribute[CompareKind], SpacedOpaqueSyntaxAttribute):
    name = "cuda.compare_kind"


@irdl_attr_definition
class UnaryKindAttr(EnumAttribute[UnaryKind], SpacedOpaqueSyntaxAttribute):
    name = "cuda.unary_kind"


@irdl_attr_definition
class ShflModeAttr(EnumAttribute[ShflMode], SpacedOpaqueSyntaxAttribute):
    name = "cuda.shfl_mode"


@irdl_attr_definition
class SpecialAttr(EnumAttribute[Special], SpacedOpaqueSyntaxAttribute):
    name = "cuda.special_reg"


def _dims3(a: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in a.get_values())


@irdl_op_definition
class KernelOp(IRDLOperation):
    """`extern "C" __global__ void __launch_bounds__(N) name(params) { body }`.

        cuda.kernel @k(%x: !cuda.ptr<f32, const, restrict>, %n: i32) launch_bounds(256) { ... }
    """

    name = "cuda.kernel"
    sym_name = prop_def(StringAttr)
    launch_bounds = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), NoTerminator())

    def __init__(self, name: str, params: Sequence[Attribute], launch_bounds: int,
                 body: Region | None = None):
        super().__init__(
            properties={"sym_name": StringAttr(name),
                        "launch_bounds": IntegerAttr(launch_bounds, i64)},
            regions=[body if body is not None else Region(Block(arg_types=params))])

    @property
    def params(self):
        return self.body.block.args

    def verify_(self) -> None:
        if not 1 <= self.launch_bounds.value.data <= MAX_BLOCK_THREADS:
            raise VerifyException(
                f"expected launch bounds in [1, {MAX_BLOCK_THREADS}], got {self.launch_bounds.value.data}")
        for a in self.params:
            if not isinstance(a.type, PtrType) and a.type not in C_SCALARS:
                raise VerifyException(
                    f"parameter #{a.index}: expected a !cuda.ptr or a C scalar, got {a.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.params, printer.print_block_argument)
        printer.print_string(f") launch_bounds({self.launch_bounds.value.data})")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        parser.parse_keyword("launch_bounds")
        parser.parse_punctuation("(")
        bounds = parser.parse_integer()
        parser.parse_punctuation(")")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, [], bounds, parser.parse_region(args))
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal (always inlined): `%c = cuda.constant 256 : i32`, `cuda.constant 1.0 : f32`."""

    name = "cuda.constant"
    value = prop_def(base(IntegerAttr) | base(FloatAttr))
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: IntegerAttr | FloatAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        if self.result.type != self.value.type:
            raise VerifyException(f"expected result type {self.value.type}, got {self.result.type}")
        _verify_scalar(self, self.result.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        if not isinstance(value, IntegerAttr | FloatAttr):
            parser.raise_error(f"expected an integer or float literal, got {value}")
        op = cls(value)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class SpecialOp(IRDLOperation):
    """A CUDA built-in index variable as an `int`: `%t = cuda.special threadIdx.x`"""

    name = "cuda.special"
    reg = prop_def(SpecialAttr)
    result = result_def(i32)
    assembly_format = "$reg attr-dict"
    traits = traits_def(Pure())

    def __init__(self, reg: Special | str):
        super().__init__(properties={"reg": SpecialAttr(Special(reg))}, result_types=[i32])

    def verify_(self) -> None:
        _verify_in_kernel(self)


@irdl_op_definition
class BinaryOp(IRDLOperation):
    """`lhs OP rhs` on one C type: `%s = cuda.binary add %a, %b : f32` (`a + b`)."""

    name = "cuda.binary"
    T: ClassVar = VarConstraint("T", base(IntegerType) | base(Float16Type) | base(BFloat16Type)
                                | base(Float32Type) | base(Float64Type))
    kind = prop_def(BinaryKindAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    assembly_format = "$kind $lhs `,` $rhs attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, kind: BinaryKind | str, lhs, rhs):
        super().__init__(operands=[lhs, rhs], properties={"kind": BinaryKindAttr(BinaryKind(kind))},
                         result_types=[SSAValue.get(lhs).type])

    def verify_(self) -> None:
        _verify_scalar(self, self.result.type, allow_half=False)
        if self.kind.data in _INT_ONLY and not isinstance(self.result.type, IntegerType):
            raise VerifyException(f"'{self.kind.data}': expected an integer type, got {self.result.type}")


@irdl_op_definition
class CompareOp(IRDLOperation):
    """A comparison yielding `bool`: `%c = cuda.compare lt %i, %n : i32` (`i < n`)."""

    name = "cuda.compare"
    T: ClassVar = VarConstraint("T", base(IntegerType) | base(Float32Type) | base(Float64Type))
    kind = prop_def(CompareKindAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(i1)
    assembly_format = "$kind $lhs `,` $rhs attr-dict `:` type($lhs)"
    traits = traits_def(Pure())

    def __init__(self, kind: CompareKind | str, lhs, rhs):
        super().__init__(operands=[lhs, rhs],
                         properties={"kind": CompareKindAttr(CompareKind(kind))}, result_types=[i1])

    def verify_(self) -> None:
        _verify_scalar(self, self.lhs.type)


@irdl_op_definition
class UnaryOp(IRDLOperation):
    """`OP x`: `%n = cuda.unary neg %x : f32` (`-x`); `not` is `!`, `bnot` is `~`."""

    name = "cuda.unary"
    T: ClassVar = VarConstraint("T", base(IntegerType) | base(Float32Type) | base(Float64Type))
    kind = prop_def(UnaryKindAttr)
    operand = operand_def(T)
    result = result_def(T)
    assembly_format = "$kind $operand attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, kind: UnaryKind | str, operand):
        super().__init__(operands=[operand], properties={"kind": UnaryKindAttr(UnaryKind(kind))},
                         result_types=[SSAValue.get(operand).type])

    def verify_(self) -> None:
        _verify_scalar(self, self.result.type)
        if self.kind.data != "neg" and not isinstance(self.result.type, IntegerType):
            raise VerifyException(f"'{self.kind.data}': expected an integer type, got {self.result.type}")


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`c ? a : b`: `%m = cuda.select %c, %a, %b : f32`"""

    name = "cuda.select"
    T: ClassVar = VarConstraint("T", base(Attribute))
    cond = operand_def(i1)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, cond, lhs, rhs):
        super().__init__(operands=[cond, lhs, rhs], result_types=[SSAValue.get(lhs).type])

    def verify_(self) -> None:
        _verify_scalar(self, self.result.type)


@irdl_op_definition
class CastOp(IRDLOperation):
    """A conversion: `(float)i`; `__half` and `__nv_bfloat16` convert only to and from `float`
    (`__half2float`, `__float2half` ...). `%f = cuda.cast %i : i32 to f32`"""

    name = "cuda.cast"
    value = operand_def()
    result = result_def()
    assembly_format = "$value attr-dict `:` type($value) `to` type($result)"
    traits = traits_def(Pure())

    def __init__(self, value, to: Attribute):
        super().__init__(operands=[value], result_types=[to])

    def verify_(self) -> None:
        src, dst = self.value.type, self.result.type
        _verify_scalar(self, src)
        _verify_scalar(self, dst)
        if (src in HALF_TYPES or dst in HALF_TYPES) and Float32Type() not in (src, dst):
            raise VerifyException(f"expected a half type to convert from or to f32, got {src} to {dst}")


@irdl_op_definition
class CallOp(IRDLOperation):
    """A call of a C function (math, intrinsics, prelude): `%e = cuda.call "expf"(%x) : (f32) -> f32`.
    A call with a result must be free of side effects (the printer may inline it into its one
    use); a call without result is a statement: `cuda.call "kc_cp_async_commit"() : () -> ()`."""

    name = "cuda.call"
    callee = prop_def(StringAttr)
    args = var_operand_def()
    res = opt_result_def()
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str, args, result_type: Attribute | None = None):
        super().__init__(operands=[args], properties={"callee": StringAttr(callee)},
                         result_types=[[] if result_type is None else [result_type]])

    def verify_(self) -> None:
        if not _C_IDENT.fullmatch(self.callee.data):
            raise VerifyException(f"expected a C function name, got '{self.callee.data}'")
        for v in (*self.args, *self.results):
            if not isinstance(v.type, PtrType):
                _verify_scalar(self, v.type)


class _AccessOp(IRDLOperation):
    """`buf[index]` on a pointer or an array: custom syntax `%buf[%i] : TYPE`."""

    buffer = operand_def(base(PtrType) | base(ArrayType))
    index = operand_def(base(IntegerType))

    def verify_(self) -> None:
        if self.index.type not in INDEX_TYPES:
            raise VerifyException(f"expected an i32 or i64 index, got {self.index.type}")

    def print(self, printer: Printer) -> None:
        """` %x[%i] : T` — what load and address print; store adds its value first."""
        printer.print_string(" ")
        self._print_access(printer)

    @classmethod
    def parse(cls, parser: Parser):
        buf, idx, attrs = cls._parse_access(parser)
        op = cls(buf, idx)
        op.attributes |= attrs
        return op

    def _print_access(self, printer: Printer) -> None:
        printer.print_operand(self.buffer)
        printer.print_string("[")
        printer.print_operand(self.index)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)
        if self.index.type != i32:
            printer.print_string(", ")
            printer.print_attribute(self.index.type)

    @staticmethod
    def _parse_access(parser: Parser) -> tuple[SSAValue, SSAValue, dict]:
        buf = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        it = parser.parse_type() if parser.parse_optional_punctuation(",") else i32
        return parser.resolve_operand(buf, t), parser.resolve_operand(idx, it), attrs


@irdl_op_definition
class LoadOp(_AccessOp):
    """`x[i]` read: `%v = cuda.load %x[%i] : !cuda.ptr<f32, const, restrict>`"""

    name = "cuda.load"
    result = result_def()

    def __init__(self, buffer, index):
        super().__init__(operands=[buffer, index], result_types=[SSAValue.get(buffer).type.element])

    def verify_(self) -> None:
        super().verify_()
        if self.result.type != self.buffer.type.element:
            raise VerifyException(f"expected result type {self.buffer.type.element}, got {self.result.type}")


@irdl_op_definition
class StoreOp(_AccessOp):
    """`x[i] = v;`: `cuda.store %v, %x[%i] : !cuda.ptr<f32, restrict>`"""

    name = "cuda.store"
    value = operand_def()

    def __init__(self, value, buffer, index):
        super().__init__(operands=[value, buffer, index])

    def verify_(self) -> None:
        super().verify_()
        t = self.buffer.type
        if isinstance(t, PtrType) and t.is_const.data:
            raise VerifyException(f"expected a non-const pointer to store to, got {t}")
        if self.value.type != t.element:
            raise VerifyException(f"expected a value of type {t.element}, got {self.value.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        self._print_access(printer)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buf, idx, attrs = cls._parse_access(parser)
        op = cls(parser.resolve_operand(value, buf.type.element), buf, idx)
        op.attributes |= attrs
        return op


@irdl_op_definition
class AddressOp(_AccessOp):
    """`&x[i]`: `%p = cuda.address %xs[%i] : !cuda.array<256xf32>` (a `!cuda.ptr<f32>`)."""

    name = "cuda.address"
    result = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, buffer, index):
        t = SSAValue.get(buffer).type
        const = isinstance(t, PtrType) and bool(t.is_const.data)
        super().__init__(operands=[buffer, index], result_types=[PtrType(t.element, const)])


@irdl_op_definition
class SharedOp(IRDLOperation):
    """`__shared__ __align__(16) float buf[256];`: `%buf = cuda.shared : !cuda.array<256xf32>`.
    With a byte offset the array is a part of the kernel's dynamic shared memory (the launch's
    `smem` bytes; past the 48 KB a kernel may declare statically): `%buf = cuda.shared
    dynamic(1024) : ...` is `float* const buf = reinterpret_cast<float*>(kc_dyn_smem + 1024);`."""

    name = "cuda.shared"
    result = result_def(ArrayType)
    offset = opt_prop_def(IntegerAttr[I64])
    assembly_format = "(`dynamic` `(` $offset^ `)`)? attr-dict `:` type($result)"

    def __init__(self, t: ArrayType, offset: int | None = None):
        props = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        super().__init__(result_types=[t], properties=props)

    def verify_(self) -> None:
        _verify_in_kernel(self)
        if self.offset is not None and self.offset.value.data % 16:
            raise VerifyException(f"expected a dynamic offset aligned to 16 bytes, got "
                                  f"{self.offset.value.data}")


@irdl_op_definition
class LocalOp(IRDLOperation):
    """A thread's own small array, the register side of a 128-bit access (constant indices keep
    it in registers): `__align__(16) float v[4];`: `%v = cuda.local : !cuda.array<4xf32>`"""

    name = "cuda.local"
    result = result_def(ArrayType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, t: ArrayType):
        super().__init__(result_types=[t])

    def verify_(self) -> None:
        _verify_in_kernel(self)


@irdl_op_definition
class SyncThreadsOp(IRDLOperation):
    """`__syncthreads();`: `cuda.syncthreads`"""

    name = "cuda.syncthreads"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def verify_(self) -> None:
        _verify_in_kernel(self)


@irdl_op_definition
class ShflOp(IRDLOperation):
    """`__shfl_xor_sync(mask, v, offset, width)` (`down`, `up`, `idx` = `__shfl_sync`):
    `%y = cuda.shfl xor %v, %off width 32 : f32`, optional `mask 65535` (default all lanes)."""

    name = "cuda.shfl"
    T: ClassVar = VarConstraint("T", base(Attribute))
    mode = prop_def(ShflModeAttr)
    value = operand_def(T)
    offset = operand_def(i32)
    width = prop_def(IntegerAttr[I64])
    mask = opt_prop_def(IntegerAttr[I64])
    result = result_def(T)
    assembly_format = ("$mode $value `,` $offset `width` $width (`mask` $mask^)? attr-dict "
                       "`:` type($result)")

    def __init__(self, mode: ShflMode | str, value, offset, width: int = WARP, mask: int | None = None):
        props = {"mode": ShflModeAttr(ShflMode(mode)), "width": IntegerAttr(width, i64)}
        if mask is not None:
            props["mask"] = IntegerAttr(mask, i64)
        super().__init__(operands=[value, offset], properties=props,
                         result_types=[SSAValue.get(value).type])

    def verify_(self) -> None:
        w = self.width.value.data
        if not (1 <= w <= WARP and w & (w - 1) == 0):
            raise VerifyException(f"expected width a power of two <= {WARP}, got {w}")
        if self.mask is not None and not 0 < self.mask.value.data < 2**32:
            raise VerifyException(f"expected a non-zero 32-bit lane mask, got {self.mask.value.data}")
        _verify_scalar(self, self.value.type)
        _verify_in_kernel(self)


def _parse_body(parser: Parser, args=()) -> Region:
    """A region whose missing `cuda.yield` is implicit (as in scf)."""
    region = parser.parse_region(args)
    block = region.block
    if block.last_op is None or not block.last_op.has_trait(IsTerminator):
        block.add_op(YieldOp())
    return region


def _print_body(printer: Printer, region: Region, results: bool) -> None:
    printer.print_region(region, print_entry_block_args=False, print_block_terminators=results)


@irdl_op_definition
class ForOp(IRDLOperation):
    """`for (int i = lb; i < ub; i += step) { ... }`; loop-carried values are variables declared
    before the loop and assigned at `cuda.yield`.

        %s = cuda.for %i = %lb to %ub step %c256 iter(%acc = %zero) -> (f32) : i32 {
          ...
          cuda.yield %next : f32
        }
    """

    name = "cuda.for"
    T: ClassVar = VarConstraint("T", base(IntegerType))
    lb = operand_def(T)
    ub = operand_def(T)
    step = operand_def(T)
    inits = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect()))

    def __init__(self, lb, ub, step, inits, body: Region):
        super().__init__(operands=[lb, ub, step, inits], regions=[body],
                         result_types=[[SSAValue.get(v).type for v in inits]])

    def verify_(self) -> None:
        iv, *iters = self.body.block.args
        if iv.type != self.lb.type or iv.type not in INDEX_TYPES:
            raise VerifyException(f"expected an i32 or i64 induction variable of the bounds' type "
                                  f"{self.lb.type}, got {iv.type}")
        want = [v.type for v in self.inits]
        if [a.type for a in iters] != want or list(self.res.types) != want:
            raise VerifyException(f"expected loop-carried types ({', '.join(map(str, want))}) on "
                                  "block arguments and results")
        _verify_yield(self, self.body, want)

    def print(self, printer: Printer) -> None:
        iv, *iters = self.body.block.args
        printer.print_string(" ")
        printer.print_ssa_value(iv)
        printer.print_string(" = ")
        printer.print_operand(self.lb)
        printer.print_string(" to ")
        printer.print_operand(self.ub)
        printer.print_string(" step ")
        printer.print_operand(self.step)
        if iters:
            printer.print_string(" iter(")
            printer.print_list(zip(iters, self.inits), lambda p: (
                printer.print_ssa_value(p[0]), printer.print_string(" = "),
                printer.print_operand(p[1])))
            printer.print_string(") -> (")
            printer.print_list(self.res.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" : ")
        printer.print_attribute(iv.type)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        _print_body(printer, self.body, bool(iters))

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        bounds = [parser.parse_unresolved_operand()]
        for kw in ("to", "step"):
            parser.parse_keyword(kw)
            bounds.append(parser.parse_unresolved_operand())
        names, inits, types = [], [], []
        if parser.parse_optional_keyword("iter"):
            def one():
                names.append(parser.parse_argument(expect_type=False))
                parser.parse_punctuation("=")
                inits.append(parser.parse_unresolved_operand())
            parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
            parser.parse_punctuation("->")
            types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        lb, ub, step = (parser.resolve_operand(b, t) for b in bounds)
        init_vals = [parser.resolve_operand(v, ty) for v, ty in zip(inits, types)]
        body = _parse_body(parser, [iv.resolve(t)] + [n.resolve(ty) for n, ty in zip(names, types)])
        op = cls(lb, ub, step, init_vals, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class IfOp(IRDLOperation):
    """`if (c) { ... } else { ... }`; results are variables assigned at `cuda.yield`.

        %m = cuda.if %c -> (f32) { cuda.yield %a : f32 } else { cuda.yield %b : f32 }
    """

    name = "cuda.if"
    cond = operand_def(i1)
    res = var_result_def()
    then_region = region_def("single_block")
    else_region = region_def()
    traits = lazy_traits_def(lambda: (SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect()))

    def __init__(self, cond, result_types, then_region: Region, else_region: Region | None = None):
        super().__init__(operands=[cond], result_types=[list(result_types)],
                         regions=[then_region, else_region or Region()])

    def verify_(self) -> None:
        want = list(self.res.types)
        if want and not self.else_region.blocks:
            raise VerifyException(f"expected an else region for {len(want)} result(s), got none")
        _verify_yield(self, self.then_region, want)
        if self.else_region.blocks:
            _verify_yield(self, self.else_region, want)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.cond)
        if self.res:
            printer.print_string(" -> (")
            printer.print_list(self.res.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        _print_body(printer, self.then_region, bool(self.res))
        if self.else_region.blocks:
            printer.print_string(" else ")
            _print_body(printer, self.else_region, bool(self.res))

    @classmethod
    def parse(cls, parser: Parser) -> IfOp:
        cond = parser.parse_operand(i1)
        types = []
        if parser.parse_optional_punctuation("->"):
            types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        then_r = _parse_body(parser)
        else_r = _parse_body(parser) if parser.parse_optional_keyword("else") else None
        op = cls(cond, types, then_r, else_r)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def _verify_yield(op: Operation, region: Region, want: list[Attribute]) -> None:
    got = [v.type for v in region.block.last_op.values]  # the trait checked it is a cuda.yield
    if got != want:
        raise VerifyException(f"'{op.name}': expected cuda.yield of ({', '.join(map(str, want))}), "
                              f"got ({', '.join(map(str, got))})")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Assign the loop-carried / `if` result variables: `cuda.yield %next : f32`"""

    name = "cuda.yield"
    values = var_operand_def()
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))

    def __init__(self, *values):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """In the host function: launch a `cuda.kernel` on buffers; `smem` is dynamic shared bytes.

        cuda.launch @k(%a, %b) grid(32, 1, 1) block(256, 1, 1) smem(0) : memref<32x256xf32>, memref<32xf32>
    """

    name = "cuda.launch"
    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    grid = prop_def(DenseArrayBase.constr(I64))
    block = prop_def(DenseArrayBase.constr(I64))
    smem = prop_def(IntegerAttr[I64])

    def __init__(self, callee: str, args, grid, block, smem: int = 0):
        super().__init__(operands=[args], properties={
            "callee": SymbolRefAttr(callee), "grid": DenseArrayBase.from_list(i64, list(grid)),
            "block": DenseArrayBase.from_list(i64, list(block)), "smem": IntegerAttr(smem, i64)})

    @property
    def grid_dims(self) -> tuple[int, ...]:
        return _dims3(self.grid)

    @property
    def block_dims(self) -> tuple[int, ...]:
        return _dims3(self.block)

    def verify_(self) -> None:
        name = self.callee.string_value()
        k = SymbolTable.lookup_symbol(self, self.callee)
        if not isinstance(k, KernelOp):
            raise VerifyException(f"expected @{name} to be a cuda.kernel, got "
                                  f"{'nothing' if k is None else k.name}")
        if len(self.grid_dims) != 3 or len(self.block_dims) != 3 or min(
                self.grid_dims + self.block_dims) < 1:
            raise VerifyException(f"expected 3 positive grid and block sizes, got "
                                  f"{self.grid_dims} and {self.block_dims}")
        threads = self.block_dims[0] * self.block_dims[1] * self.block_dims[2]
        if threads > k.launch_bounds.value.data:
            raise VerifyException(f"@{name}: expected at most {k.launch_bounds.value.data} threads "
                                  f"(launch bounds), got {threads}")
        if self.smem.value.data < 0:
            raise VerifyException(f"expected smem >= 0, got {self.smem.value.data}")
        if len(self.args) != len(k.params):
            raise VerifyException(f"@{name}: expected {len(k.params)} arguments, got {len(self.args)}")
        for a, p in zip(self.args, k.params):
            want = p.type.element if isinstance(p.type, PtrType) else p.type
            got = a.type.element_type if isinstance(a.type, MemRefType) else a.type
            got = i32 if isinstance(got, IndexType) else got
            if isinstance(p.type, PtrType) != isinstance(a.type, MemRefType) or want != got:
                raise VerifyException(
                    f"@{name}: expected argument #{p.index} to match {p.type}, got {a.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.callee)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(f") grid({', '.join(map(str, self.grid_dims))}) block("
                             f"{', '.join(map(str, self.block_dims))}) smem({self.smem.value.data})")
        printer.print_op_attributes(self.attributes)
        if self.args:
            printer.print_string(" : ")
            printer.print_list(self.args.types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        callee = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                 parser.parse_unresolved_operand)
        sizes = []
        for kw in ("grid", "block", "smem"):
            parser.parse_keyword(kw)
            sizes.append(parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                           parser.parse_integer))
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type) \
            if parser.parse_optional_punctuation(":") else []
        op = cls(callee, parser.resolve_operands(args, types, pos), sizes[0], sizes[1], sizes[2][0])
        op.attributes |= attrs
        return op


Cuda = Dialect(
    "cuda",
    [KernelOp, ConstantOp, SpecialOp, BinaryOp, CompareOp, UnaryOp, SelectOp, CastOp, CallOp,
     LoadOp, StoreOp, AddressOp, SharedOp, LocalOp, SyncThreadsOp, ShflOp, ForOp, IfOp, YieldOp,
     LaunchOp],
    [PtrType, ArrayType, BinaryKindAttr, CompareKindAttr, UnaryKindAttr, ShflModeAttr, SpecialAttr],
)
