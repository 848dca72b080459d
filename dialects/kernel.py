"""Kernel IR: the schedule materialized as hardware primitives.

A `kernel.func` is one CUDA kernel with a static grid and block. Inside it, control flow is
`scf.for` / `scf.if`, scalars are `arith` / `math`, memory is `memref.load` / `memref.store` with
`index` operands; this dialect adds only what CUDA has and those dialects do not: thread and block
ids, static shared buffers (memrefs in memory space `3 : i64`), barriers, warp shuffles and
cp.async, 128/64/32-bit vector loads and stores. The host function `func.func @main` launches kernels with `kernel.launch`.
A kernel made of independent kernels (kernel-horizontal-fuse) is a body of `kernel.part`s: each
runs a range of the blocks with its own grid.

    kernel.func @sum_sq(%x: memref<32x256xf32>, %out: memref<32xf32>) grid(32, 1, 1) block(256, 1, 1) {
      %t = kernel.thread_id x
      %b = kernel.block_id x
      %v = memref.load %x[%b, %t] : memref<32x256xf32>
      %sq = arith.mulf %v, %v : f32
      %s = kernel.shuffle xor %sq, 16 width 32 : f32
      %buf = kernel.shared : memref<8xf32, 3 : i64>
      kernel.barrier
    }
    func.func @main(%x: memref<32x256xf32>) -> memref<32xf32> {
      %out = memref.alloc() : memref<32xf32>
      kernel.launch @sum_sq(%x, %out) : memref<32x256xf32>, memref<32xf32>
      func.return %out : memref<32xf32>
    }
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
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
from xdsl.traits import IsolatedFromAbove, NoTerminator, Pure, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from deplo.dialects.loop import INDEX_LIMIT, enclosing_ops, same_elements
from deplo.dialects.tile import PackHalves, element_bytes
from deplo.hardware import (
    MAX_BLOCK,
    MAX_BLOCK_THREADS,
    MAX_GRID,
    MAX_SHARED_MEMORY_BYTES,
    SHARED_MEMORY_BYTES,
    WARP,
)

SHARED_SPACE = 3  # memref memory space of shared memory (`3 : i64`), as in NVVM
PRELUDE_SHARED_BYTES = 16  # static shared data of kc_prelude.cuh: kc_arrive_last's flag
CP_ASYNC_BYTES = (4, 16)  # kc_cp_async4 / kc_cp_async16 of the prelude


def is_shared(t: Attribute) -> bool:
    return isinstance(t, MemRefType) and t.memory_space == IntegerAttr(SHARED_SPACE, i64)


def _enclosing_kernel(op: Operation) -> FuncOp | None:
    return next(enclosing_ops(op, FuncOp), None)


def _verify_in_kernel(op: Operation) -> None:
    if _enclosing_kernel(op) is None:
        raise VerifyException(f"'{op.name}' expected inside a kernel.func, got none around it")


def _verify_static_memref(t: MemRefType, what: str) -> None:
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what}: expected a static shape, got {t}")
    if math.prod(t.get_shape()) >= INDEX_LIMIT:
        raise VerifyException(f"{what}: {t} has 2^31 elements or more (CUDA C indexes with int)")
    if not isinstance(t.layout, NoneAttr):
        raise VerifyException(f"{what}: expected the identity layout, got {t.layout}")
    element_bytes(t.element_type)


class Dim(StrEnum):
    X = "x"
    Y = "y"
    Z = "z"


@irdl_attr_definition
class DimAttr(EnumAttribute[Dim], SpacedOpaqueSyntaxAttribute):
    """A grid/block dimension: `x`, `y` or `z`."""

    name = "kernel.dim"


class ShuffleMode(StrEnum):
    XOR = "xor"
    DOWN = "down"
    UP = "up"
    IDX = "idx"


@irdl_attr_definition
class ShuffleModeAttr(EnumAttribute[ShuffleMode], SpacedOpaqueSyntaxAttribute):
    """Which `__shfl_*_sync`: `xor` (butterfly), `down`, `up`, `idx` (read lane `offset`)."""

    name = "kernel.shuffle_mode"


def _dims3(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _verify_dims(what: str, dims: tuple[int, ...], limits: tuple[int, ...]) -> None:
    if len(dims) != 3:
        raise VerifyException(f"{what}: expected 3 sizes, got {len(dims)}")
    for d, lim in zip(dims, limits):
        if not 1 <= d <= lim:
            raise VerifyException(f"{what}: expected sizes in [1, {lim}], got {d}")


@irdl_op_definition
class FuncOp(IRDLOperation):
    """One CUDA kernel: buffer (and scalar) arguments, static grid and block, a body without
    terminator. Launch bounds are the block size.

        kernel.func @k(%x: memref<16xf32>, %y: memref<16xf32>) grid(1, 1, 1) block(16, 1, 1) { ... }
    """

    name = "kernel.func"
    sym_name = prop_def(StringAttr)
    grid = prop_def(DenseArrayBase.constr(I64))
    block = prop_def(DenseArrayBase.constr(I64))
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), NoTerminator())

    def __init__(self, name: str, arg_types, grid, block, body: Region | None = None):
        body = body if body is not None else Region(Block(arg_types=arg_types))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "grid": DenseArrayBase.from_list(i64, list(grid)),
                "block": DenseArrayBase.from_list(i64, list(block)),
            },
            regions=[body],
        )

    @property
    def grid_dims(self) -> tuple[int, ...]:
        return _dims3(self.grid)

    @property
    def block_dims(self) -> tuple[int, ...]:
        return _dims3(self.block)

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        _verify_dims("grid", self.grid_dims, MAX_GRID)
        _verify_dims("block", self.block_dims, MAX_BLOCK)
        threads = self.block_dims[0] * self.block_dims[1] * self.block_dims[2]
        if threads > MAX_BLOCK_THREADS:
            raise VerifyException(f"expected at most {MAX_BLOCK_THREADS} threads per block, got {threads}")
        for a in self.args:
            if isinstance(a.type, MemRefType):
                _verify_static_memref(a.type, f"argument #{a.index}")
                if not isinstance(a.type.memory_space, NoneAttr):
                    raise VerifyException(f"argument #{a.index}: expected a global memref, "
                                          f"got memory space {a.type.memory_space}")
            elif not isinstance(a.type, IntegerType | IndexType | AnyFloat):
                raise VerifyException(
                    f"argument #{a.index}: expected a memref or a scalar, got {a.type}")
        if (parts := self.parts()) and len(parts) != len(list(self.body.block.ops)):
            raise VerifyException("expected a body of kernel.parts only, or none")
        if parts and self.grid_dims != (n := sum(p.blocks for p in parts), 1, 1):
            raise VerifyException(f"expected grid({n}, 1, 1): the blocks of its parts, "
                                  f"got grid{self.grid_dims}")
        if (smem := self.shared_bytes()) > MAX_SHARED_MEMORY_BYTES:
            raise VerifyException(
                f"expected at most {MAX_SHARED_MEMORY_BYTES} bytes of shared memory, got {smem}")

    def parts(self) -> list[PartOp]:
        """The kernel.parts of a horizontally fused kernel (none for a plain one)."""
        return [op for op in self.body.block.ops if isinstance(op, PartOp)]

    def shared_bytes(self) -> int:
        """The bytes of its shared buffers (see dynamic_shared_bytes); a fused kernel's parts
        share theirs (a block runs one part), so the largest part's."""
        return max((sum(shared_bytes(op) for op in scope.walk() if isinstance(op, SharedOp))
                    for scope in self.parts() or [self]), default=0)

    def dynamic_shared_bytes(self) -> int:
        """The launch's dynamic shared memory: 0 where the shared buffers and the prelude's own
        static shared data (kc_arrive_last's flag, PRELUDE_SHARED_BYTES) fit the 48 KB a
        kernel may declare statically; else every buffer, each at a 16-byte boundary
        (kernel-to-cuda gives them their offsets in this order). A fused kernel's buffers are
        always dynamic, each part's from offset 0: the parts overlay one another."""
        parts = self.parts()
        prelude = PRELUDE_SHARED_BYTES if any(isinstance(op, ArriveLastOp)
                                              for op in self.walk()) else 0
        if not parts and self.shared_bytes() + prelude <= SHARED_MEMORY_BYTES:
            return 0
        return max((dynamic_bytes(scope) for scope in parts or [self]), default=0)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_block_argument)
        printer.print_string(f") grid({', '.join(map(str, self.grid_dims))})")
        printer.print_string(f" block({', '.join(map(str, self.block_dims))})")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        dims = []
        for kw in ("grid", "block"):
            parser.parse_keyword(kw)
            dims.append(parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                          parser.parse_integer))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name, [], dims[0], dims[1], body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


class _IdOp(IRDLOperation):
    dimension = prop_def(DimAttr)
    result = result_def(IndexType)
    assembly_format = "$dimension attr-dict"
    traits = traits_def(Pure())

    def __init__(self, dim: Dim | str):
        super().__init__(properties={"dimension": DimAttr(Dim(dim))}, result_types=[IndexType()])

    def verify_(self) -> None:
        _verify_in_kernel(self)


@irdl_op_definition
class ThreadIdOp(_IdOp):
    """`threadIdx`: `%t = kernel.thread_id x`"""

    name = "kernel.thread_id"


@irdl_op_definition
class BlockIdOp(_IdOp):
    """`blockIdx`: `%b = kernel.block_id y`"""

    name = "kernel.block_id"


@irdl_op_definition
class BlockDimOp(_IdOp):
    """`blockDim`: `%n = kernel.block_dim x`"""

    name = "kernel.block_dim"


@irdl_op_definition
class GridDimOp(_IdOp):
    """`gridDim`: `%n = kernel.grid_dim x`"""

    name = "kernel.grid_dim"


def dynamic_bytes(scope: Operation) -> int:
    """The dynamic shared memory the buffers declared in `scope` take, one after another."""
    return sum(dynamic_part_bytes(op) for op in scope.walk() if isinstance(op, SharedOp))


def dynamic_part_bytes(op: SharedOp) -> int:
    """The bytes one shared buffer takes of dynamic shared memory: the next buffer starts at a
    16-byte boundary (16-byte vector and cp.async accesses)."""
    return -(-shared_bytes(op) // 16) * 16


def shared_bytes(op: SharedOp) -> int:
    """The bytes of one shared buffer."""
    t = op.result.type
    n = 1
    for d in t.get_shape():
        n *= max(d, 0)
    return n * element_bytes(t.element_type)


@irdl_op_definition
class SharedOp(IRDLOperation):
    """A static shared-memory buffer of the block (not CSE-able: each op is its own buffer).

        %buf = kernel.shared : memref<8x32xf32, 3 : i64>
    """

    name = "kernel.shared"
    result = result_def(MemRefType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, t: MemRefType):
        super().__init__(result_types=[t])

    def verify_(self) -> None:
        t = self.result.type
        _verify_static_memref(t, "kernel.shared")
        if not is_shared(t):
            raise VerifyException(
                f"kernel.shared: expected memory space {SHARED_SPACE} : i64, got {t.memory_space}")
        _verify_in_kernel(self)


def _thread_dependent(v: SSAValue) -> bool:
    """Whether `v` may differ between the threads of a block: it is computed from a thread id
    (through arithmetic, loads at a thread's index, the induction variable of a loop whose
    bounds are). arrive_last's flag is the block's."""
    seen, todo = set(), [v]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            loop = v.owner.parent_op()
            if loop is not None and loop.name == "scf.for" and v.index == 0:
                todo += loop.operands[:3]
        elif isinstance(v.owner, ThreadIdOp):
            return True
        elif not isinstance(v.owner, ArriveLastOp):
            todo += v.owner.operands
    return False


def _verify_block_uniform(op: Operation) -> None:
    """A block-wide barrier under a branch or loop that differs between the block's threads
    never completes (CUDA leaves it undefined; the CPU runtime reports the threads that wait)."""
    at = op.parent_op()
    while at is not None and not isinstance(at, FuncOp):
        conditions = at.operands[:1] if at.name == "scf.if" else \
            at.operands[:3] if at.name == "scf.for" else ()
        if any(_thread_dependent(c) for c in conditions):
            raise VerifyException(f"{op.name}: every thread of the block must reach it, but it is "
                                  f"under an {at.name} that depends on the thread id")
        at = at.parent_op()


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`__syncthreads()`: every thread of the block waits here. `kernel.barrier`"""

    name = "kernel.barrier"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def verify_(self) -> None:
        _verify_in_kernel(self)
        _verify_block_uniform(self)


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """A warp shuffle (`__shfl_xor_sync` ...): lanes exchange `value` within groups of `width`
    lanes; the mask is the full warp unless given.

        %y = kernel.shuffle xor %v, 16 width 32 : f32
        %z = kernel.shuffle idx %v, 0 width 16 mask 65535 : f32
    """

    name = "kernel.shuffle"
    T: ClassVar = VarConstraint("T", base(IntegerType) | base(IndexType) | base(AnyFloat))
    mode = prop_def(ShuffleModeAttr)
    value = operand_def(T)
    offset = prop_def(IntegerAttr[I64])
    width = prop_def(IntegerAttr[I64])
    mask = opt_prop_def(IntegerAttr[I64])
    result = result_def(T)
    assembly_format = ("$mode $value `,` $offset `width` $width (`mask` $mask^)? attr-dict "
                       "`:` type($result)")

    def __init__(self, mode: ShuffleMode | str, value, offset: int, width: int = WARP,
                 mask: int | None = None):
        props = {"mode": ShuffleModeAttr(ShuffleMode(mode)), "offset": IntegerAttr(offset, i64),
                 "width": IntegerAttr(width, i64)}
        if mask is not None:
            props["mask"] = IntegerAttr(mask, i64)
        super().__init__(operands=[value], properties=props,
                         result_types=[SSAValue.get(value).type])

    def verify_(self) -> None:
        w, off = self.width.value.data, self.offset.value.data
        if not (1 <= w <= WARP and w & (w - 1) == 0):
            raise VerifyException(f"expected width a power of two <= {WARP}, got {w}")
        if not 0 <= off < w:
            raise VerifyException(f"expected offset in [0, {w}), got {off}")
        if self.mask is not None and not 0 < self.mask.value.data < 2**32:
            raise VerifyException(f"expected a non-zero 32-bit lane mask, got {self.mask.value.data}")
        t = self.value.type
        if isinstance(t, IntegerType) and t.width.data not in (32, 64):
            raise VerifyException(f"expected a 32- or 64-bit integer, got {t}")
        _verify_in_kernel(self)


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """Asynchronous copy of 4 or 16 bytes from global to shared memory (`kc_cp_async16`): the
    data is there only after `kernel.cp_async_commit` and a `kernel.cp_async_wait` + barrier.

        kernel.cp_async %x[%r, %c] to %xs[%i] bytes 16 : memref<32x2048xf32> to memref<2048xf32, 3 : i64>
    """

    name = "kernel.cp_async"
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    bytes = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$src `[` $src_indices `]` `to` $dst `[` $dst_indices `]` `bytes` $bytes "
                       "attr-dict `:` type($src) `to` type($dst)")

    def __init__(self, src, src_indices, dst, dst_indices, nbytes: int = 16):
        super().__init__(operands=[src, src_indices, dst, dst_indices],
                         properties={"bytes": IntegerAttr(nbytes, i64)})

    def verify_(self) -> None:
        s, d, n = self.src.type, self.dst.type, self.bytes.value.data
        if not is_shared(d):
            raise VerifyException(f"expected the destination in shared memory, got {d}")
        if is_shared(s) or not isinstance(s.memory_space, NoneAttr):
            raise VerifyException(f"expected the source in global memory, got {s}")
        if s.element_type != d.element_type:
            raise VerifyException(
                f"expected equal element types, got {s.element_type} and {d.element_type}")
        if n not in CP_ASYNC_BYTES:
            raise VerifyException(f"expected bytes in {CP_ASYNC_BYTES}, got {n}")
        if n % element_bytes(s.element_type):
            raise VerifyException(f"expected bytes a multiple of the element size, got {n}")
        for what, t, idx in (("source", s, self.src_indices), ("destination", d, self.dst_indices)):
            if len(idx) != t.get_num_dims():
                raise VerifyException(
                    f"{what}: expected {t.get_num_dims()} indices, got {len(idx)}")
        _verify_in_kernel(self)


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """Close the current group of cp.async copies: `kernel.cp_async_commit`"""

    name = "kernel.cp_async_commit"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def verify_(self) -> None:
        _verify_in_kernel(self)


@irdl_op_definition
class CpAsyncWaitOp(IRDLOperation):
    """Wait until at most `pending` committed cp.async groups are in flight:
    `kernel.cp_async_wait 0`"""

    name = "kernel.cp_async_wait"
    pending = prop_def(IntegerAttr[I64])
    assembly_format = "$pending attr-dict"

    def __init__(self, pending: int = 0):
        super().__init__(properties={"pending": IntegerAttr(pending, i64)})

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(f"expected pending groups in [0, 7], got {self.pending.value.data}")
        _verify_in_kernel(self)


@irdl_op_definition
class ArriveLastOp(IRDLOperation):
    """The block arrives at counter `slot` (of the program's arrival counters, zero between
    launches) after its stores; true in the `count`-th block to arrive, which resets the
    counter: `%last = kernel.arrive_last %slot of 4`. Every thread of the block calls it (a
    barrier, one atomic add by thread 0 after a memory fence, a barrier); the result is
    uniform. tile.split_last lowers to it."""

    name = "kernel.arrive_last"
    slot = operand_def(IndexType)
    count = prop_def(IntegerAttr[I64])
    result = result_def(IntegerType(1))
    assembly_format = "$slot `of` $count attr-dict"

    def __init__(self, slot: SSAValue, count: int):
        super().__init__(operands=[slot], result_types=[IntegerType(1)],
                         properties={"count": IntegerAttr(count, i64)})

    def verify_(self) -> None:
        if self.count.value.data < 1:
            raise VerifyException(f"expected a positive count, got {self.count.value.data}")
        _verify_in_kernel(self)
        _verify_block_uniform(self)


@irdl_op_definition
class PartOp(IRDLOperation):
    """One kernel of a horizontally fused kernel (kernel-horizontal-fuse): the next
    `prod(grid)` blocks of the fused grid run its body, in which `kernel.block_id` and
    `kernel.grid_dim` are the part's own (x fastest, as the hardware hands out blocks).

        kernel.func @q_k(...) grid(12, 1, 1) block(64, 1, 1) {
          kernel.part "q" grid(4, 2, 1) { ... }    blocks 0..7, kernel @q before fusion
          kernel.part "k" grid(4, 1, 1) { ... }    blocks 8..11
        }
    """

    name = "kernel.part"
    kernel = prop_def(StringAttr)  # the kernel it was (its plan's, its profile's name)
    grid = prop_def(DenseArrayBase.constr(I64))
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, kernel: str, grid, body: Region):
        super().__init__(properties={"kernel": StringAttr(kernel),
                                     "grid": DenseArrayBase.from_list(i64, list(grid))},
                         regions=[body])

    @property
    def grid_dims(self) -> tuple[int, ...]:
        return _dims3(self.grid)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid_dims)

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), FuncOp):
            raise VerifyException("expected kernel.part directly in a kernel.func")
        _verify_dims("grid", self.grid_dims, MAX_GRID)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.kernel.data)
        printer.print_string(f" grid({', '.join(map(str, self.grid_dims))})")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> PartOp:
        name = parser.parse_str_literal()
        parser.parse_keyword("grid")
        grid = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_integer)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        if not body.blocks:  # `{ }`
            body.add_block(Block())
        op = cls(name, grid, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def fused_parts(module: Operation) -> dict[str, list[str]]:
    """Each fused kernel.func of `module` -> the kernels its parts were, in order."""
    return {k.sym_name.data: [p.kernel.data for p in k.parts()]
            for k in module.ops if isinstance(k, FuncOp) and k.parts()}


def enclosing_part(op: Operation) -> PartOp | None:
    """The kernel.part `op` is in, if any: its block ids and grid are the part's."""
    p = op.parent_op()
    while p is not None and not isinstance(p, PartOp | FuncOp):
        p = p.parent_op()
    return p if isinstance(p, PartOp) else None


ARRIVAL_SLOTS = 1 << 16  # kc_arrivals of the prelude: the counters of one program


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Launch a kernel from the host function; grid and block are the callee's.

        kernel.launch @k(%x, %y) : memref<16xf32>, memref<16xf32>
    """

    name = "kernel.launch"
    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    assembly_format = "$callee `(` $args `)` attr-dict (`:` type($args)^)?"

    def __init__(self, callee: str, args):
        super().__init__(operands=[args], properties={"callee": SymbolRefAttr(callee)})

    def verify_(self) -> None:
        if _enclosing_kernel(self) is not None:
            raise VerifyException("expected kernel.launch in host code, got it inside a kernel.func")
        name = self.callee.string_value()
        k = SymbolTable.lookup_symbol(self, self.callee)
        if not isinstance(k, FuncOp):
            raise VerifyException(f"expected @{name} to be a kernel.func, got "
                                  f"{'nothing' if k is None else k.name}")
        want = [a.type for a in k.args]
        got = [a.type for a in self.args]
        if len(want) != len(got) or not all(map(same_elements, want, got)):
            raise VerifyException(
                f"@{name}: expected argument types ({', '.join(map(str, want))}), "
                f"got ({', '.join(map(str, got))})")


VECTOR_BYTES = 16  # the widest access: kc_ld128 / kc_st128 of the prelude
VECTOR_WIDTHS = (16, 8, 4)  # bytes of one vector access (kc_ld128/64/32), of two elements or more


def _verify_vector(op: IRDLOperation, mem: SSAValue, indices, values) -> None:
    t = mem.type
    _verify_static_memref(t, op.name)
    elt = t.element_type
    if len(indices) != t.get_num_dims():
        raise VerifyException(f"{op.name}: expected {t.get_num_dims()} indices, got {len(indices)}")
    n = len(values)
    if n < 2 or n * element_bytes(elt) not in VECTOR_WIDTHS or any(v.type != elt for v in values):
        raise VerifyException(f"{op.name}: expected 2 or more values of type {elt} making "
                              f"{', '.join(map(str, VECTOR_WIDTHS))} bytes, got {n} of "
                              f"{[str(v.type) for v in values]}")
    if t.get_shape()[-1] % n:
        raise VerifyException(f"{op.name}: expected the innermost dim of {t} to be a multiple of "
                              f"{n} (aligned rows)")
    _verify_in_kernel(op)


@irdl_op_definition
class VectorLoadOp(IRDLOperation):
    """16, 8 or 4 consecutive bytes of the innermost dim in one access (LDG.128/64/32, LDS); the
    first element is at `indices`, which the producer proved aligned to the width.

        %a, %b, %c, %d = kernel.vector_load %x[%i, %j] : memref<64x96xf32> -> f32, f32, f32, f32
    """

    name = "kernel.vector_load"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    res = var_result_def()
    assembly_format = "$memref `[` $indices `]` attr-dict `:` type($memref) `->` type($res)"

    def __init__(self, mem: SSAValue, indices, count: int):
        elt = SSAValue.get(mem).type.element_type
        super().__init__(operands=[mem, indices], result_types=[[elt] * count])

    def verify_(self) -> None:
        _verify_vector(self, self.memref, self.indices, self.res)


@irdl_op_definition
class VectorStoreOp(IRDLOperation):
    """16, 8 or 4 consecutive bytes of the innermost dim written in one access (STG.128/64/32,
    STS).

        kernel.vector_store %a, %b, %c, %d to %out[%i, %j] : f32, f32, f32, f32 to memref<64x80xf32>
    """

    name = "kernel.vector_store"
    values = var_operand_def()
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$values `to` $memref `[` $indices `]` attr-dict `:` type($values) `to` "
                       "type($memref)")

    def __init__(self, values, mem: SSAValue, indices):
        super().__init__(operands=[values, mem, indices])

    def verify_(self) -> None:
        _verify_vector(self, self.memref, self.indices, self.values)


@irdl_op_definition
class LdmatrixOp(IRDLOperation):
    """`ldmatrix.sync.aligned.m8n8.x{2,4}[.trans].shared.b16` (kc_ldmatrix_*): each lane gives
    the address of one 16-byte row (`indices`, in shared memory) and gets one register of each
    8 x 8 matrix. Warp-collective.

        %r0, %r1 = kernel.ldmatrix %bs[%k, %n] trans : memref<32x72xf16, 3 : i64> -> i32, i32
    """

    name = "kernel.ldmatrix"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    trans = opt_prop_def(UnitAttr)
    res = var_result_def()
    assembly_format = ("$memref `[` $indices `]` (`trans` $trans^)? attr-dict `:` type($memref) "
                       "`->` type($res)")

    def __init__(self, mem: SSAValue, indices, count: int, trans: bool = False):
        super().__init__(operands=[mem, indices], result_types=[[IntegerType(32)] * count],
                         properties={"trans": UnitAttr()} if trans else {})

    def verify_(self) -> None:
        t = self.memref.type
        if not is_shared(t) or element_bytes(t.element_type) != 2:
            raise VerifyException(f"{self.name}: expected a shared memref of 16-bit elements, got {t}")
        if len(self.res) not in (2, 4) or any(r.type != IntegerType(32) for r in self.res):
            raise VerifyException(f"{self.name}: expected 2 or 4 i32 results")
        if len(self.indices) != t.get_num_dims():
            raise VerifyException(f"{self.name}: expected {t.get_num_dims()} indices")
        _verify_in_kernel(self)


@irdl_op_definition
class MmaOp(IRDLOperation):
    """`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` (kc_mma_16816_*): 4 registers of A, 2
    of B, 4 fp32 of C in, 4 fp32 of D out, per lane. Warp-collective.

        %d0, %d1, %d2, %d3 = kernel.mma f16 %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3
    """

    name = "kernel.mma"
    type = prop_def(Attribute)
    args = var_operand_def()
    res = var_result_def()

    def __init__(self, t: Attribute, args):
        super().__init__(operands=[args], result_types=[[Float32Type()] * 4],
                         properties={"type": t})

    def verify_(self) -> None:
        i32, f32 = IntegerType(32), Float32Type()
        if self.type not in (Float16Type(), BFloat16Type()):
            raise VerifyException(f"{self.name}: expected type f16 or bf16, got {self.type}")
        if [a.type for a in self.args] != [i32] * 6 + [f32] * 4:
            raise VerifyException(f"{self.name}: expected 6 x i32 and 4 x f32 operands")
        _verify_in_kernel(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.type)
        printer.print_string(" ")
        printer.print_list(self.args, printer.print_operand)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> MmaOp:
        pos = parser.pos
        t = parser.parse_type()
        args = parser.parse_comma_separated_list(parser.Delimiter.NONE,
                                                 parser.parse_unresolved_operand)
        vals = parser.resolve_operands(args, [IntegerType(32)] * 6 + [Float32Type()] * 4, pos)
        op = cls(t, vals)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class PackHalvesOp(PackHalves):
    """`%r = kernel.pack_halves %lo, %hi : f16` (an i32; kc_pack_halves)."""

    name = "kernel.pack_halves"


Kernel = Dialect(
    "kernel",
    [FuncOp, PartOp, ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp, SharedOp, BarrierOp, ShuffleOp,
     CpAsyncOp, CpAsyncCommitOp, CpAsyncWaitOp, ArriveLastOp, VectorLoadOp, VectorStoreOp,
     LdmatrixOp, MmaOp, PackHalvesOp, LaunchOp],
    [DimAttr, ShuffleModeAttr],
)
