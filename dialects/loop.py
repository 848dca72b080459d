"""Loop IR: one `loop.kernel` per future CUDA kernel, a nest of loops over named axes.

Each loop is `free` (its iterations are independent: the scheduler may run them in parallel) or
`reduce` (it carries accumulators from one iteration to the next). Memory is accessed with affine
maps over the loop induction variables, so the schedule passes can see which axis walks which
dimension of which buffer. Scalar code is `arith`/`math`. Fusion (`loop-fuse`) merges producer
nests into their consumers, so intermediates are not written out.

    loop.kernel @relu_matmul(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
      %zero = arith.constant 0.000000e+00 : f32
      loop.for %a0 = 0 to 16 free {
        loop.for %a1 = 0 to 16 free {
          %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
            %xv = loop.load %x[%a0, %a2] : memref<16x64xf32>
            %wv = loop.load %w[%a2, %a1] : memref<64x16xf32>
            %p = arith.mulf %xv, %wv : f32
            %n = arith.addf %s, %p : f32
            loop.yield %n : f32
          }
          %r = arith.maximumf %acc, %zero : f32
          loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
        }
      }
    }

`loop.load`/`loop.store` are also the memory ops of Tile IR (see ARCHITECTURE.md, Departures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    FlatSymbolRefAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.dialects.utils import EnumAttribute, parse_assignment, print_assignment
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    OpResult,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    RecursiveMemoryEffect,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from deplo.dialects.tir import expr_range

INDEX_LIMIT = 2**31
"""Loop bounds and buffer sizes stay below this: the emitted CUDA C indexes with `int`."""


def trip_count(lb: int, ub: int, step: int) -> int:
    """len(range(lb, ub, step)) without its OverflowError past 2^63 (an enclosing loop's verifier
    has not run yet when a nested op's verifier asks for its extent), 0 for step 0."""
    return max(0, -((lb - ub) // step)) if step else 0


def verify_bounds(where: str, *values: int) -> None:
    if not all(-INDEX_LIMIT < v < INDEX_LIMIT for v in values):
        raise VerifyException(f"{where}: expected bounds within +-2^31 (CUDA C indexes with int)")


class LoopKind(StrEnum):
    FREE = "free"
    REDUCE = "reduce"


@irdl_attr_definition
class LoopKindAttr(EnumAttribute[LoopKind], SpacedOpaqueSyntaxAttribute):
    """`free` (parallel iterations) or `reduce` (carries accumulators)."""

    name = "loop.kind"


def enclosing_ops(op: Operation, kind: type[Operation]):
    """The ancestors of `op` of the given op class, innermost first."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, kind):
            yield parent
        parent = parent.parent_op()


# --------------------------------------------------------------------------------------------
# kernel


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One future CUDA kernel: `loop.kernel @k(%a: memref<4xf32>, %out: memref<4xf32>) { ... }`.

    Its arguments are the buffers it reads and writes; it is isolated from above, so everything
    it needs (constants too) is inside it."""

    name = "loop.kernel"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), SymbolOpInterface())

    def __init__(self, name: str, arg_types: Sequence[Attribute], body: Region | None = None):
        body = body or Region(Block(arg_types=arg_types))
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        for i, arg in enumerate(self.body.block.args):
            if not isinstance(arg.type, MemRefType):
                raise VerifyException(
                    f"{self.name} @{self.sym_name.data}: expected argument {i} to be a memref, "
                    f"got {arg.type}"
                )

    def print(self, printer: Printer) -> None:
        print_kernel_header(printer, self.sym_name.data, self.body.block)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, args = parse_kernel_header(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name.data, [a.type for a in args], body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def print_kernel_header(printer: Printer, name: str, block: Block) -> None:
    """` @name(%a: memref<...>, ...)` — shared by the kernel ops of every level."""
    printer.print_string(" ")
    printer.print_symbol_name(name)
    with printer.in_parens():
        printer.print_list(block.args, printer.print_block_argument)


def parse_kernel_header(parser: Parser) -> tuple[StringAttr, list[Parser.Argument]]:
    name = parser.parse_symbol_name()
    args = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
    )
    return name, args


# --------------------------------------------------------------------------------------------
# for / yield


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop over one axis with static bounds.

        loop.for %i = 0 to 16 free { ... }
        %r = loop.for %k = 0 to 64 reduce iter(%acc = %zero) -> f32 { ... loop.yield %n : f32 }

    A `free` loop has independent iterations and no accumulators; a `reduce` loop carries one
    or more accumulators (its results) and stores only to `loop.private` buffers."""

    name = "loop.for"
    lb = prop_def(IntAttr)
    ub = prop_def(IntAttr)
    step = prop_def(IntAttr)
    kind = prop_def(LoopKindAttr)
    inits = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (RecursiveMemoryEffect(),))

    def __init__(
        self,
        lb: int,
        ub: int,
        kind: LoopKind,
        inits: Sequence[SSAValue] = (),
        body: Region | None = None,
        step: int = 1,
    ):
        init_types = [SSAValue.get(v).type for v in inits]
        body = body or Region(Block(arg_types=[IndexType(), *init_types]))
        super().__init__(
            operands=[inits],
            result_types=[init_types],
            regions=[body],
            properties={
                "lb": IntAttr(lb),
                "ub": IntAttr(ub),
                "step": IntAttr(step),
                "kind": LoopKindAttr(kind),
            },
        )

    @property
    def iv(self):
        return self.body.block.args[0]

    @property
    def accs(self):
        return self.body.block.args[1:]

    @property
    def extent(self) -> int:
        return trip_count(self.lb.data, self.ub.data, self.step.data)

    def verify_(self) -> None:
        lb, ub, step = self.lb.data, self.ub.data, self.step.data
        where = f"{self.name} {lb} to {ub}"
        verify_bounds(where, lb, ub, step)
        if step <= 0:
            raise VerifyException(f"{where}: expected a positive step, got {step}")
        if ub <= lb:
            raise VerifyException(f"{where}: expected an upper bound above the lower bound")
        verify_loop_body(self, where, YieldOp)
        kind = self.kind.data
        if kind == LoopKind.FREE and self.inits:
            raise VerifyException(f"{where} free: expected no accumulators, got {len(self.inits)}")
        if kind == LoopKind.REDUCE:
            if not self.inits:
                raise VerifyException(f"{where} reduce: expected at least one accumulator")
            for op in self.body.walk():
                if isinstance(op, StoreOp) and not isinstance(op.buffer.owner, PrivateOp):
                    raise VerifyException(
                        f"{where} reduce: expected no loop.store inside (but to a loop.private)"
                    )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.iv)
        printer.print_string(f" = {self.lb.data} to {self.ub.data}")
        if self.step.data != 1:
            printer.print_string(f" step {self.step.data}")
        printer.print_string(f" {self.kind.data}")
        print_iter_and_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_integer()
        parser.parse_keyword("to")
        ub = parser.parse_integer()
        step = parser.parse_integer() if parser.parse_optional_keyword("step") else 1
        kind = parser.parse_str_enum(LoopKind)
        accs, inits, _ = parse_iter_args(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([iv.resolve(IndexType()), *accs])
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        op = cls(lb, ub, kind, inits, body, step)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def verify_loop_body(op: IRDLOperation, where: str, yield_type: type[IRDLOperation]) -> None:
    """The invariants every loop op of every level shares: block arguments (index, accumulators),
    one type per accumulator across init / block arg / result, and a yield of those types."""
    args = op.body.block.args
    if len(args) != 1 + len(op.inits) or not isinstance(args[0].type, IndexType):
        raise VerifyException(
            f"{where}: expected block arguments (index, accumulators...), "
            f"got {[str(a.type) for a in args]}"
        )
    for i, (init, arg, res) in enumerate(zip(op.inits, args[1:], op.res, strict=True)):
        if not (init.type == arg.type == res.type):
            raise VerifyException(
                f"{where}: accumulator {i} has init {init.type}, block arg {arg.type}, "
                f"result {res.type}; expected one type"
            )
    term = op.body.block.last_op
    if not isinstance(term, yield_type):
        raise VerifyException(f"{where}: expected the body to end with {yield_type.name}")
    yielded = [v.type for v in term.values]
    if yielded != [r.type for r in op.res]:
        raise VerifyException(
            f"{where}: {yield_type.name} types {[str(t) for t in yielded]} do not match the "
            f"accumulators {[str(r.type) for r in op.res]}"
        )


def print_iter_and_body(printer: Printer, op: IRDLOperation) -> None:
    """` iter(%acc = %init) -> f32 attributes {...} { body }`: the tail shared by the loop ops
    of every level (`loop.for`, `tile.for`); the empty yield of a loop without accumulators is
    implicit."""
    if op.inits:
        printer.print_string(" iter(")
        printer.print_list(zip(op.accs, op.inits), lambda p: print_assignment(printer, *p))
        printer.print_string(") -> ")
        print_type_list(printer, [r.type for r in op.res])
    printer.print_op_attributes(op.attributes, print_keyword=True)
    printer.print_string(" ")
    printer.print_region(
        op.body,
        print_entry_block_args=False,
        print_empty_block=False,
        print_block_terminators=bool(op.inits),
    )


def print_type_list(printer: Printer, types: Sequence[Attribute]) -> None:
    if len(types) == 1:
        printer.print_attribute(types[0])
    else:
        with printer.in_parens():
            printer.print_list(types, printer.print_attribute)


def parse_iter_args(parser: Parser):
    """`iter(%a = %x, %b = %y) -> (f32, f32)` (optional) -> block args, operands, types."""
    if not parser.parse_optional_keyword("iter"):
        return [], [], []
    pos = parser.pos
    pairs = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: parse_assignment(parser)
    )
    parser.parse_punctuation("->")
    if parser.parse_optional_punctuation("("):
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
    else:
        types = [parser.parse_type()]
    if len(types) != len(pairs):
        parser.raise_error(f"expected {len(pairs)} accumulator types, got {len(types)}", pos)
    inits = parser.resolve_operands([p[1] for p in pairs], types, pos)
    accs = [p[0].resolve(t) for p, t in zip(pairs, types)]
    return accs, inits, types


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a loop body; in a reduce loop it passes the next accumulator values:
    `loop.yield %n : f32`. An empty yield is implicit in the text."""

    name = "loop.yield"
    values = var_operand_def()
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp), Pure()))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


# --------------------------------------------------------------------------------------------
# load / store


def print_access(printer: Printer, buf: SSAValue, indices, amap: AffineMapAttr | None) -> None:
    printer.print_string(" ")
    printer.print_ssa_value(buf)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")
    if amap is not None:
        printer.print_string(" map ")
        printer.print_string(str(amap.data))


def parse_access(parser: Parser):
    buf = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(
        Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    amap = AffineMapAttr(parser.parse_affine_map()) if parser.parse_optional_keyword("map") else None
    return buf, idx, amap


def verify_access(op: IRDLOperation, buf: SSAValue, indices, amap: AffineMapAttr | None) -> None:
    mtype = buf.type
    if not isinstance(mtype, MemRefType):
        raise VerifyException(f"{op.name}: expected a memref, got {mtype}")
    for i, v in enumerate(indices):
        if not isinstance(v.type, IndexType):
            raise VerifyException(f"{op.name}: expected index {i} to be of type index, got {v.type}")
    rank = mtype.get_num_dims()
    if amap is None:
        if len(indices) != rank:
            raise VerifyException(
                f"{op.name}: expected {rank} indices for {mtype}, got {len(indices)}"
            )
        _verify_in_bounds(op, mtype, indices)
        return
    m = amap.data
    if m.num_dims != len(indices) or m.num_symbols != 0:
        raise VerifyException(
            f"{op.name}: map {m} expects {m.num_dims} dims and no symbols, got "
            f"{len(indices)} indices"
        )
    if len(m.results) != rank:
        raise VerifyException(f"{op.name}: map {m} gives {len(m.results)} coordinates for {mtype}")
    _verify_in_bounds(op, mtype, indices, m)


def _verify_in_bounds(op: IRDLOperation, mtype: MemRefType, indices,
                      m: AffineMap | None = None) -> None:
    """A coordinate made of constants and loops' induction variables (through the access's map,
    if any) stays within its dim: a hand-edited index (`%c9` into a dim of 4, `loop.for %a = 0
    to 65` over a dim of 64, a buffer shrunk under a matmul's map) would read and write past the
    buffer in the emitted C. Only unguarded accesses: one under a condition may be meant to run
    past; a coordinate that uses any other value (a gathered index) is the program's."""
    if _guarded(op):
        return
    ranges = [_index_range(v) for v in indices]
    if any(r is not None and r[1] < r[0] for r in ranges):
        return  # (inside an empty loop: never runs)
    exprs = m.results if m is not None else [AffineExpr.dimension(i) for i in range(len(ranges))]
    for d, (e, n) in enumerate(zip(exprs, mtype.get_shape())):
        used = e.used_dims()
        if n < 0 or any(ranges[i] is None for i in used):
            continue
        try:
            lo, hi = expr_range(e, [r or (0, 0) for r in ranges])
        except VerifyException:  # (a map it cannot bound: its own verifier's business)
            continue
        if 0 <= lo and hi < n:
            continue
        if m is not None:
            what = f"coordinate {d} ({e}) runs over {lo}..{hi}"
        elif isinstance(indices[d], OpResult):
            what = f"index {d} is the constant {lo}"
        else:
            what = f"index {d} runs over {lo}..{hi} (its loop)"
        raise VerifyException(f"{op.name}: {what}, past dim {d} of {mtype} (0..{n - 1})")


def _index_range(v: SSAValue) -> tuple[int, int] | None:
    """[first, last] of an index that is a constant or a loop's induction variable, else None."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) \
            and isinstance(c := v.op.value, IntegerAttr):
        return c.value.data, c.value.data
    f = v.owner.parent_op() if isinstance(v, BlockArgument) else None
    if not isinstance(f, ForOp) or v is not f.iv:
        return None
    lb, ub, step = f.lb.data, f.ub.data, f.step.data
    if step <= 0 or max(abs(lb), abs(ub)) > 2**31:
        return None  # (a bound the loop's own verifier refuses)
    return (lb, lb + (ub - lb - 1) // step * step) if ub > lb else (0, -1)


def _guarded(op: Operation) -> bool:
    """`op` is inside a condition (scf.if) within its kernel."""
    p = op.parent_op()
    while p is not None and not isinstance(p, KernelOp):
        if p.name == "scf.if":
            return True
        p = p.parent_op()
    return False


def _identity_or_none(amap: AffineMap | AffineMapAttr | None, n: int) -> AffineMapAttr | None:
    if amap is None:
        return None
    m = amap.data if isinstance(amap, AffineMapAttr) else amap
    if m == AffineMap.identity(n) and len(m.results) == n:
        return None
    return AffineMapAttr(m)


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Read one element: `%v = loop.load %x[%i, %k] : memref<16x64xf32>`, or through an affine
    map from the indices to the coordinates: `loop.load %b[%i, %j] map (d0, d1) -> (d1) : memref<64xf32>`."""

    name = "loop.load"
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = opt_prop_def(AffineMapAttr)
    result = result_def()
    traits = traits_def()

    def __init__(self, buffer: SSAValue, indices: Sequence[SSAValue], amap=None):
        mtype = SSAValue.get(buffer).type
        assert isinstance(mtype, MemRefType)
        super().__init__(
            operands=[buffer, indices],
            result_types=[mtype.element_type],
            properties={"map": m} if (m := _identity_or_none(amap, len(indices))) else {},
        )

    def access_map(self) -> AffineMap:
        """The map from the indices to the buffer coordinates (identity when not printed)."""
        return self.map.data if self.map else AffineMap.identity(len(self.indices))

    def verify_(self) -> None:
        verify_access(self, self.buffer, self.indices, self.map)
        elt = self.buffer.type.element_type
        if self.result.type != elt:
            raise VerifyException(f"{self.name}: expected result type {elt}, got {self.result.type}")

    def print(self, printer: Printer) -> None:
        print_access(printer, self.buffer, self.indices, self.map)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        pos = parser.pos
        buf, idx, amap = parse_access(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        mtype = parser.parse_type()
        (b,) = parser.resolve_operands([buf], [mtype], pos)
        ivs = parser.resolve_operands(idx, [IndexType()] * len(idx), pos)
        op = cls(b, ivs, amap)
        op.attributes |= attrs
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Write one element: `loop.store %v, %out[%i, %j] : memref<16x16xf32>` (map as loop.load)."""

    name = "loop.store"
    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = opt_prop_def(AffineMapAttr)

    def __init__(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue], amap=None):
        super().__init__(
            operands=[value, buffer, indices],
            properties={"map": m} if (m := _identity_or_none(amap, len(indices))) else {},
        )

    def access_map(self) -> AffineMap:
        return self.map.data if self.map else AffineMap.identity(len(self.indices))

    def verify_(self) -> None:
        verify_access(self, self.buffer, self.indices, self.map)
        elt = self.buffer.type.element_type
        if self.value.type != elt:
            raise VerifyException(f"{self.name}: expected a value of type {elt}, got {self.value.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(",")
        print_access(printer, self.buffer, self.indices, self.map)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        pos = parser.pos
        val = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buf, idx, amap = parse_access(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        mtype = parser.parse_type()
        if not isinstance(mtype, MemRefType):
            parser.raise_error(f"expected a memref type, got {mtype}", pos)
        (v,) = parser.resolve_operands([val], [mtype.element_type], pos)
        (b,) = parser.resolve_operands([buf], [mtype], pos)
        ivs = parser.resolve_operands(idx, [IndexType()] * len(idx), pos)
        op = cls(v, b, ivs, amap)
        op.attributes |= attrs
        return op


def reaccess(acc: LoadOp | StoreOp, indices: Sequence[SSAValue], amap: AffineMap,
             buffer: SSAValue | None = None) -> None:
    """Replace a load or store by one of `buffer` (default: its own) at `indices` through `amap`
    (a load keeps its result's name): the passes that reshape buffers or indices share this."""
    buf = acc.buffer if buffer is None else buffer
    if isinstance(acc, LoadOp):
        new: LoadOp | StoreOp = LoadOp(buf, indices, amap)
        new.result.name_hint = acc.result.name_hint
    else:
        new = StoreOp(acc.value, buf, indices, amap)
    Rewriter.replace_op(acc, new)


@irdl_op_definition
class PrivateOp(IRDLOperation):
    """A buffer private to one iteration of the enclosing free loops (registers or local memory
    once scheduled), for loop-carried state bigger than a scalar — online-softmax attention's
    rescaled output row: `%o = loop.private : memref<64xf32>`.

    Its contents start undefined. Only `loop.load`/`loop.store` use it, and stores to it are the
    only stores a `reduce` loop may contain (they update the carried state)."""

    name = "loop.private"
    result = result_def(MemRefType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, t: MemRefType):
        super().__init__(result_types=[t])

    def verify_(self) -> None:
        t = self.result.type
        if any(n < 1 for n in t.get_shape()):
            raise VerifyException(f"{self.name}: expected a static shape, got {t}")
        for use in self.result.uses:
            op = use.operation
            if not (isinstance(op, LoadOp | StoreOp) and op.buffer is self.result):
                raise VerifyException(
                    f"{self.name}: expected only loop.load/loop.store to use it, got {op.name}"
                )


# --------------------------------------------------------------------------------------------
# launch (host side)


def same_elements(a: Attribute, b: Attribute) -> bool:
    """Two buffer types a kernel may read one buffer as: equal, or row-major shapes of the same
    elements (a kernel reading a program input [512, 256, 3, 3] as the [512, 2304] its loads
    index: loop-collapse-dims). A buffer is its elements in row-major order at every level (a
    pointer in CUDA), so a launch passes the same bytes either way."""
    if a == b:
        return True
    return isinstance(a, MemRefType) and isinstance(b, MemRefType) \
        and a.element_type == b.element_type and a.memory_space == b.memory_space \
        and isinstance(a.layout, NoneAttr) and isinstance(b.layout, NoneAttr) \
        and a.has_static_shape() and b.has_static_shape() \
        and math.prod(a.get_shape()) == math.prod(b.get_shape())


def verify_launch(op: IRDLOperation, callee: SymbolRefAttr, args, kernel_type: type) -> Operation:
    """A launch names a kernel of this level that exists and takes these buffers, each as its
    own type or as another row-major shape of the same elements (`same_elements`)."""
    kernel = SymbolTable.lookup_symbol(op, callee)
    name = callee.root_reference.data
    if kernel is None:
        raise VerifyException(f"{op.name}: no kernel named @{name}")
    if not isinstance(kernel, kernel_type):
        raise VerifyException(f"{op.name}: @{name} is a {kernel.name}, expected a {kernel_type.name}")
    want = [a.type for a in kernel.regions[0].block.args]
    got = [a.type for a in args]
    if len(want) != len(got) or not all(map(same_elements, want, got)):
        raise VerifyException(
            f"{op.name} @{name}: expected arguments {[str(t) for t in want]}, "
            f"got {[str(t) for t in got]}"
        )
    params = kernel.regions[0].block.args
    for i, v in enumerate(args):
        if v in args[:i] and (written := _stored(kernel, [params[i], params[list(args).index(v)]])):
            raise VerifyException(
                f"{op.name} @{name}: passes one buffer as two arguments, and the kernel writes "
                f"%{written}: the .cu's parameters are __restrict__ (they may not alias)")
    return kernel


def _stored(kernel: Operation, params: list[SSAValue]) -> str | None:
    """The name of the first of `params` a store in `kernel` writes (its buffer operand)."""
    for op in kernel.walk():
        if op.name.endswith("store") and len(op.operands) > 1 and op.operands[1] in params:
            return op.operands[1].name_hint or "?"
    return None


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run a kernel from the host function: `loop.launch @k(%x, %out) : memref<4xf32>, memref<4xf32>`."""

    name = "loop.launch"
    callee = prop_def(FlatSymbolRefAttr)
    args = var_operand_def(MemRefType)
    assembly_format = "$callee `(` $args `)` attr-dict `:` type($args)"

    KERNEL_TYPE: ClassVar[type[IRDLOperation]] = KernelOp

    def __init__(self, callee: str, args: Sequence[SSAValue]):
        super().__init__(operands=[args], properties={"callee": FlatSymbolRefAttr(callee)})

    def verify_(self) -> None:
        verify_launch(self, self.callee, self.args, self.KERNEL_TYPE)


Loop = Dialect(
    "loop",
    [KernelOp, ForOp, YieldOp, LoadOp, StoreOp, PrivateOp, LaunchOp],
    [LoopKindAttr],
)
