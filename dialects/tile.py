"""Tile IR: a Loop IR nest with a schedule — which loops run on blocks, which on threads, what is
staged in shared memory and which reductions are shared between threads.

A schedule is loops with bindings plus a few explicit ops. What it should become is the kernel's
plan (dialects/tile_plan.py): one typed attribute holding every decision, which the tile passes
carry out step by step (`done`):

    tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>)
        grid(32, 1, 1) block(256, 1, 1) plan row_reduce(rows = [32], extent = 2048) {threads = 256,
        stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid", ...] {
      tile.for %a1 = 0 to 32 bind(block.x) {
        %xs = tile.stage %x[0, %a1, 0] [1, 1, 2048] into shared copy(sync) buffers(1) pad(0)
            : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
        tile.for %t = 0 to 256 bind(thread.x) {
          %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 { ... }
          %ss = tile.combine add %p over thread.x : f32
          ...
        }
      }
    }

Execution model (what `tile-to-kernel` implements):
- the kernel body runs on every thread of every block of `grid` x `block`;
- a `bind(block.X)` / `bind(thread.X)` loop gives iteration `lb + id * step` to block / thread
  `id` of axis X; ids past the loop's extent skip its body;
- code outside every thread-bound loop runs redundantly on all threads of the block (pure
  scalar code), a `loop.store` there is done by thread 0 only;
- a `bind(serial)` / `bind(unroll)` loop is an ordinary loop. A serial loop without
  accumulators has independent iterations (it comes from a Loop IR `free` loop, or is one
  thread's share of one), which is what lets the schedule passes bind it;
- `tile.stage` is executed by the whole block (at block level, or inside thread loops that each
  cover their whole block axis, with static-bound loops in between: the matmul schedule stages
  each K chunk inside its per-thread loops) and `tile.combine` by every thread of its axis (its
  thread loop covers the whole block axis), so the barriers they lower to are reached by all
  threads;
- an `scf.if` guards stores of a schedule whose tiles pass the end of an axis (the indices are
  clamped, the stores guarded); it holds no stage or combine.

Memory accesses are Loop IR's `loop.load` / `loop.store` (ARCHITECTURE.md, Departures).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    FlatSymbolRefAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
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
    lazy_traits_def,
    operand_def,
    opt_operand_def,
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
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    RecursiveMemoryEffect,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from deplo.dialects.loop import (
    enclosing_ops,
    parse_iter_args,
    parse_kernel_header,
    print_iter_and_body,
    print_kernel_header,
    trip_count,
    verify_bounds,
    verify_launch,
    verify_loop_body,
)
from deplo.dialects.tile_plan import MAX_BUFFERS, Plan, PlanAttr, parse_plan
from deplo.hardware import MAX_BLOCK, MAX_BLOCK_THREADS, MAX_GRID, MAX_SHARED_MEMORY_BYTES, WARP

SHARED_SPACE = IntegerAttr(3, 64)
"""The memory space of shared memory buffers (`memref<...xf32, 3 : i64>`)."""

AXES = ("x", "y", "z")


class Bind(StrEnum):
    BLOCK_X = "block.x"
    BLOCK_Y = "block.y"
    BLOCK_Z = "block.z"
    THREAD_X = "thread.x"
    THREAD_Y = "thread.y"
    THREAD_Z = "thread.z"
    SERIAL = "serial"
    UNROLL = "unroll"

    @property
    def is_block(self) -> bool:
        return self.value.startswith("block.")

    @property
    def is_thread(self) -> bool:
        return self.value.startswith("thread.")

    @property
    def axis(self) -> int:
        """0, 1, 2 for x, y, z of a block/thread binding."""
        return AXES.index(self.value.split(".")[1])


@irdl_attr_definition
class BindAttr(EnumAttribute[Bind], SpacedOpaqueSyntaxAttribute):
    """What runs the iterations of a `tile.for`: block ids, thread ids, or one thread in order."""

    name = "tile.bind"


class CopyKind(StrEnum):
    SYNC = "sync"
    CP_ASYNC = "cp_async"


@irdl_attr_definition
class CopyKindAttr(EnumAttribute[CopyKind], SpacedOpaqueSyntaxAttribute):
    """How `tile.stage` copies: plain loads and stores, or `cp.async`."""

    name = "tile.copy"


class CombineKind(StrEnum):
    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class CombineKindAttr(EnumAttribute[CombineKind], SpacedOpaqueSyntaxAttribute):
    """The associative operator of a `tile.combine`."""

    name = "tile.combine_kind"


def enclosing_kernel(op: Operation) -> KernelOp | None:
    return next(enclosing_ops(op, KernelOp), None)


def enclosing_loops(op: Operation) -> list[ForOp]:
    """The `tile.for` ops around `op`, innermost first."""
    return list(enclosing_ops(op, ForOp))


# --------------------------------------------------------------------------------------------
# kernel


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One CUDA kernel with its launch shape, its plan, and the tile passes that have carried the
    plan out so far.

        tile.kernel @k(%x: memref<64xf32>, %out: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1)
            key "7c1f03a2b9e4d8a5" plan pointwise(chain = [64]) {grid_dims = 3, ...}
            done ["tile-map-grid", "tile-map-threads"] { ... }

    `grid`/`block` may be written with one to three sizes (missing ones are 1). The plan
    (dialects/tile_plan.py) is verified here, so an illegal one names the kernel and its knob;
    `key` is the structural key of the kernel's Loop IR (what a pinned plan file is keyed by).
    A kernel without a plan has the trivial schedule of `loop-to-tile`."""

    name = "tile.kernel"
    sym_name = prop_def(StringAttr)
    grid = prop_def(DenseArrayBase)
    block = prop_def(DenseArrayBase)
    key = opt_prop_def(StringAttr)
    plan = opt_prop_def(PlanAttr)
    done = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        arg_types: Sequence[Attribute],
        body: Region | None = None,
        grid: Sequence[int] = (1, 1, 1),
        block: Sequence[int] = (1, 1, 1),
        plan: Plan | None = None,
        done: Sequence[str] = (),
        key: str | None = None,
    ):
        body = body or Region(Block(arg_types=arg_types))
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "grid": DenseArrayBase.from_list(i64, _dims3(grid)),
            "block": DenseArrayBase.from_list(i64, _dims3(block)),
            "done": ArrayAttr(StringAttr(s) for s in done),
        }
        if plan is not None:
            props["plan"] = PlanAttr(plan)
        if key:
            props["key"] = StringAttr(key)
        super().__init__(properties=props, regions=[body])

    @property
    def args(self):
        return self.body.block.args

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        return tuple(self.grid.get_values())  # type: ignore[return-value]

    @property
    def block_dims(self) -> tuple[int, int, int]:
        return tuple(self.block.get_values())  # type: ignore[return-value]

    @property
    def the_plan(self) -> Plan | None:
        return self.plan.data if self.plan is not None else None

    @property
    def done_steps(self) -> list[str]:
        return [s.data for s in self.done.data]

    @property
    def structural_key(self) -> str | None:
        return self.key.data if self.key is not None else None

    def set_launch(self, grid: Sequence[int] | None = None, block: Sequence[int] | None = None):
        if grid is not None:
            self.grid = DenseArrayBase.from_list(i64, _dims3(grid))
        if block is not None:
            self.block = DenseArrayBase.from_list(i64, _dims3(block))

    def set_plan(self, plan: Plan, key: str | None = None) -> None:
        self.plan = PlanAttr(plan)
        if key:
            self.key = StringAttr(key)

    def reset_plan(self) -> None:
        """Back to the trivial schedule's state: no plan, no key, no steps done."""
        self.plan = self.key = None
        self.done = ArrayAttr([])

    def mark_done(self, step: str) -> None:
        """Record that tile pass `step` has carried out its part of the plan."""
        if step not in self.done_steps:
            self.done = ArrayAttr([*self.done.data, StringAttr(step)])

    def staged_bytes(self) -> int:
        return sum(op.smem_bytes for op in self.body.walk() if isinstance(op, StageOp))

    def verify_(self) -> None:
        where = f"{self.name} @{self.sym_name.data}"
        for i, arg in enumerate(self.body.block.args):
            if not isinstance(arg.type, MemRefType):
                raise VerifyException(
                    f"{where}: expected argument {i} to be a memref, got {arg.type}"
                )
        for what, dims in (("grid", self.grid), ("block", self.block)):
            vals = dims.get_values()
            if dims.elt_type != i64 or len(vals) != 3 or any(v < 1 for v in vals):
                raise VerifyException(
                    f"{where}: expected three positive {what} sizes, got {list(vals)}"
                )
        for g, limit, axis in zip(self.grid_dims, MAX_GRID, AXES):
            if g > limit:
                raise VerifyException(f"{where}: grid size {g} on {axis} exceeds the limit {limit}")
        for b, limit, axis in zip(self.block_dims, MAX_BLOCK, AXES):
            if b > limit:
                raise VerifyException(
                    f"{where}: block size {b} on {axis} exceeds the limit {limit}"
                )
        bx, by, bz = self.block_dims
        if bx * by * bz > MAX_BLOCK_THREADS:
            raise VerifyException(
                f"{where}: expected at most {MAX_BLOCK_THREADS} threads per block, "
                f"got {bx * by * bz}"
            )
        if (smem := self.staged_bytes()) > MAX_SHARED_MEMORY_BYTES:
            raise VerifyException(
                f"{where}: staged buffers take {smem} bytes of shared memory, more than "
                f"{MAX_SHARED_MEMORY_BYTES}"
            )
        plan = self.the_plan
        if plan is not None:
            if bad := plan.violations():
                knob, why = bad[0]
                raise VerifyException(f"{where}: plan knob {knob}: {why}")
            if unknown := [s for s in self.done_steps if s not in plan.steps()]:
                raise VerifyException(
                    f"{where}: done step '{unknown[0]}' is not a step of a {plan.kind} plan "
                    f"({', '.join(plan.steps())})"
                )
        elif self.done_steps:
            raise VerifyException(f"{where}: expected no done steps without a plan")

    def print(self, printer: Printer) -> None:
        print_kernel_header(printer, self.sym_name.data, self.body.block)
        printer.print_string(f" grid({', '.join(map(str, self.grid_dims))})")
        printer.print_string(f" block({', '.join(map(str, self.block_dims))})")
        if self.key is not None:
            printer.print_string(" key ")
            printer.print_attribute(self.key)
        if self.plan is not None:
            printer.print_string(f" plan {self.plan.data.text()}")
        if self.done.data:
            printer.print_string(" done [")
            printer.print_list(self.done.data, printer.print_attribute)
            printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, args = parse_kernel_header(parser)
        dims = {}
        for what in ("grid", "block"):
            parser.parse_keyword(what)
            pos = parser.pos
            vals = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_integer)
            if not 1 <= len(vals) <= 3:
                parser.raise_error(f"expected one to three {what} sizes", pos)
            dims[what] = vals
        key = parser.parse_str_literal() if parser.parse_optional_keyword("key") else None
        plan = parse_plan(parser) if parser.parse_optional_keyword("plan") else None
        done: list[str] = []
        if parser.parse_optional_keyword("done"):
            done = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, parser.parse_str_literal
            )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name.data, [a.type for a in args], body, dims["grid"], dims["block"], plan,
                 done, key)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def _dims3(dims: Sequence[int]) -> list[int]:
    dims = list(dims)
    return dims + [1] * (3 - len(dims))


# --------------------------------------------------------------------------------------------
# for / yield


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop with a binding.

        tile.for %a = 0 to 32 bind(block.x) { ... }
        tile.for %t = 0 to 256 bind(thread.x) { ... }
        %p = tile.for %k = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
          ... tile.yield %n : f32
        }

    The lower bound is an int or (serial/unroll loops only) an `index` value, e.g. a thread's
    first iteration of a strided loop; the upper bound and the step are ints. A serial loop may
    also stop early at an `index` value, `to min(%n, 128)`: the int stays its static bound (what
    analyses and shared-memory sizes see), `%n` is where it stops (attention's causal key bound,
    the same for every thread of a block)."""

    name = "tile.for"
    lb = opt_prop_def(IntAttr)
    ub = prop_def(IntAttr)
    step = prop_def(IntAttr)
    bind = prop_def(BindAttr)
    dyn_lb = opt_operand_def(IndexType)
    dyn_ub = opt_operand_def(IndexType)
    inits = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (RecursiveMemoryEffect(),))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        lb: int | SSAValue,
        ub: int,
        bind: Bind,
        inits: Sequence[SSAValue] = (),
        body: Region | None = None,
        step: int = 1,
        dyn_ub: SSAValue | None = None,
    ):
        init_types = [SSAValue.get(v).type for v in inits]
        body = body or Region(Block(arg_types=[IndexType(), *init_types]))
        props: dict[str, Attribute] = {
            "ub": IntAttr(ub),
            "step": IntAttr(step),
            "bind": BindAttr(bind),
        }
        if isinstance(lb, int):
            props["lb"] = IntAttr(lb)
        super().__init__(
            operands=[[] if isinstance(lb, int) else [lb], [] if dyn_ub is None else [dyn_ub],
                      inits],
            result_types=[init_types],
            regions=[body],
            properties=props,
        )

    @property
    def iv(self):
        return self.body.block.args[0]

    @property
    def accs(self):
        return self.body.block.args[1:]

    @property
    def binding(self) -> Bind:
        return self.bind.data

    @property
    def uniform_start(self) -> bool:
        """Its first iteration is the same on every thread: a static lower bound, or the
        induction variable of a serial loop around it (the keys of one staged step)."""
        if self.lb is not None:
            return True
        v = self.dyn_lb
        parent = v.owner.parent_op() if isinstance(v, BlockArgument) else None
        return isinstance(parent, ForOp) and parent.iv is v \
            and parent.binding == Bind.SERIAL and parent.is_ancestor(self)

    @property
    def static_lb(self) -> int | None:
        return self.lb.data if self.lb is not None else None

    @property
    def is_free(self) -> bool:
        """A serial loop without accumulators: its iterations are independent."""
        return self.binding == Bind.SERIAL and not self.inits

    @property
    def extent(self) -> int | None:
        """The trip count, when both bounds are static."""
        if self.lb is None or self.dyn_ub is not None:
            return None
        return trip_count(self.lb.data, self.ub.data, self.step.data)

    def verify_(self) -> None:
        ub, step, bind = self.ub.data, self.step.data, self.binding
        lb_text = str(self.lb.data) if self.lb is not None else "%lb"
        where = f"{self.name} {lb_text} to {ub} bind({bind})"
        if (self.lb is None) == (self.dyn_lb is None):
            raise VerifyException(f"{where}: expected exactly one lower bound, static or dynamic")
        verify_bounds(where, ub, step, self.lb.data if self.lb is not None else 0)
        if step <= 0:
            raise VerifyException(f"{where}: expected a positive step, got {step}")
        if self.lb is not None and ub <= self.lb.data:
            raise VerifyException(f"{where}: expected an upper bound above the lower bound")
        verify_loop_body(self, where, YieldOp)
        if self.dyn_ub is not None and bind != Bind.SERIAL:
            raise VerifyException(f"{where}: expected a dynamic upper bound only on a serial loop")
        if bind.is_block or bind.is_thread:
            self._verify_bound(where)

    def _verify_bound(self, where: str) -> None:
        bind = self.binding
        if self.lb is None:
            raise VerifyException(f"{where}: expected a static lower bound on a bound loop")
        if self.inits:
            raise VerifyException(
                f"{where}: expected no accumulators on a bound loop (use tile.combine)"
            )
        kernel = enclosing_kernel(self)
        if kernel is None:
            raise VerifyException(f"{where}: expected to be inside a tile.kernel")
        dims = kernel.grid_dims if bind.is_block else kernel.block_dims
        what = "grid" if bind.is_block else "block"
        extent = self.extent
        assert extent is not None
        if extent > dims[bind.axis]:
            raise VerifyException(
                f"{where}: extent {extent} exceeds the {what} size {dims[bind.axis]} on "
                f"{AXES[bind.axis]}"
            )
        for outer in enclosing_loops(self):
            if outer.binding == bind:
                raise VerifyException(f"{where}: nested in another loop bound to {bind}")
            if bind.is_block and outer.binding.is_thread:
                raise VerifyException(f"{where}: expected not to be nested in a thread-bound loop")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.iv)
        printer.print_string(" = ")
        if self.dyn_lb is not None:
            printer.print_ssa_value(self.dyn_lb)
        elif self.lb is not None:
            printer.print_string(str(self.lb.data))
        if self.dyn_ub is not None:
            printer.print_string(" to min(")
            printer.print_ssa_value(self.dyn_ub)
            printer.print_string(f", {self.ub.data})")
        else:
            printer.print_string(f" to {self.ub.data}")
        if self.step.data != 1:
            printer.print_string(f" step {self.step.data}")
        printer.print_string(f" bind({self.binding})")
        print_iter_and_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb: int | SSAValue | None = parser.parse_optional_integer(allow_boolean=False)
        if lb is None:
            lb = parser.parse_operand(IndexType())
        parser.parse_keyword("to")
        dyn_ub = None
        if parser.parse_optional_keyword("min"):
            parser.parse_punctuation("(")
            dyn_ub = parser.parse_operand(IndexType())
            parser.parse_punctuation(",")
            ub = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(")")
        else:
            ub = parser.parse_integer(allow_boolean=False)
        step = (
            parser.parse_integer(allow_boolean=False)
            if parser.parse_optional_keyword("step")
            else 1
        )
        parser.parse_keyword("bind")
        parser.parse_punctuation("(")
        bind = parser.parse_str_enum(Bind)
        parser.parse_punctuation(")")
        accs, inits, _ = parse_iter_args(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([iv.resolve(IndexType()), *accs])
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        op = cls(lb, ub, bind, inits, body, step, dyn_ub)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `tile.for` body, passing the next accumulator values: `tile.yield %n : f32`.
    An empty yield is implicit in the text."""

    name = "tile.yield"
    values = var_operand_def()
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp, GatherOp), Pure()))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


# --------------------------------------------------------------------------------------------
# stage


DYNAMIC = -(2**63)
"""Marks an offset given by an SSA operand in `static_offsets` (MLIR's `kDynamic`)."""


def staged_type(source: MemRefType, sizes: Sequence[int], pad: int,
                transposed: bool = False) -> MemRefType:
    """The shared buffer for a slab: unit dims dropped, the innermost two swapped when
    `transposed`, the innermost dim padded by `pad`."""
    shape = [s for s in sizes if s != 1] or [1]
    if transposed:
        shape[-2:] = shape[-1:-3:-1]
    shape[-1] += pad
    return MemRefType(source.element_type, shape, NoneAttr(), SHARED_SPACE)


def element_bytes(t: Attribute) -> int:
    """Size in bytes of a memref element (`index` is a 32-bit int in the emitted C)."""
    if isinstance(t, IndexType):
        return 4
    if isinstance(t, IntegerType | AnyFloat):
        return max(1, t.bitwidth // 8)
    raise VerifyException(f"expected an integer, float or index element type, got {t}")


@irdl_op_definition
class StageOp(IRDLOperation):
    """The block copies a slab of a global buffer into shared memory, cooperatively, then waits
    for it (a barrier); later loads read the result.

        %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(sync) buffers(1) pad(0)
            : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>

    Offsets are ints or `index` values (uniform over the block), sizes are ints. Elements of a
    slab with a dynamic offset that fall past the end of the source read as zero (the tile of
    the last block may overhang the buffer, or be larger than it). The result drops the unit dims of the slab and
    pads its innermost dim by `pad` elements. `buffers(n)`, n > 1, gives a stage inside a loop n
    buffers that its iterations take in turn (no barrier before the next copy; with
    `copy(cp_async)` the copies of the next n - 1 iterations are in flight: a pipeline);
    `copy(cp_async)` copies with `cp.async`. `wrapped`: every source coordinate is taken mod
    its dim, so the slab may start before 0 or end past the dim (a padded convolution's halo,
    whose loads read (i + k - p) mod n and mask the pad)."""

    name = "tile.stage"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    static_offsets = prop_def(DenseArrayBase)
    sizes = prop_def(DenseArrayBase)
    copy = prop_def(CopyKindAttr)
    buffers = prop_def(IntAttr)
    pad = prop_def(IntAttr)
    transposed = opt_prop_def(UnitAttr)
    wrapped = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)
    traits = traits_def(HasAncestor(KernelOp))

    def __init__(
        self,
        source: SSAValue,
        offsets: Sequence[int | SSAValue],
        sizes: Sequence[int],
        copy: CopyKind = CopyKind.SYNC,
        buffers: int = 1,
        pad: int = 0,
        result_type: MemRefType | None = None,
        transposed: bool = False,
        wrapped: bool = False,
    ):
        stype = SSAValue.get(source).type
        assert isinstance(stype, MemRefType)
        result_type = result_type or staged_type(stype, sizes, pad, transposed)
        super().__init__(
            operands=[source, [o for o in offsets if not isinstance(o, int)]],
            result_types=[result_type],
            properties={
                "static_offsets": DenseArrayBase.from_list(
                    i64, [o if isinstance(o, int) else DYNAMIC for o in offsets]
                ),
                "sizes": DenseArrayBase.from_list(i64, list(sizes)),
                "copy": CopyKindAttr(copy),
                "buffers": IntAttr(buffers),
                "pad": IntAttr(pad),
            } | ({"transposed": UnitAttr()} if transposed else {})
            | ({"wrapped": UnitAttr()} if wrapped else {}),
        )

    @property
    def size_list(self) -> list[int]:
        return list(self.sizes.get_values())

    def mixed_offsets(self) -> list[int | SSAValue]:
        dyn = iter(self.offsets)
        return [next(dyn) if o == DYNAMIC else o for o in self.static_offsets.get_values()]

    @property
    def is_transposed(self) -> bool:
        return self.transposed is not None

    @property
    def is_wrapped(self) -> bool:
        return self.wrapped is not None

    def smem_indices(self, coords: Sequence) -> list:
        """The shared-buffer indices of a slab element from its coordinates per kept dim."""
        out = list(coords)
        if self.is_transposed:
            out[-2:] = out[-1:-3:-1]
        return out

    @property
    def smem_bytes(self) -> int:
        t = self.result.type
        assert isinstance(t, MemRefType)
        n = 1
        for s in t.get_shape():
            n *= s
        return n * element_bytes(t.element_type) * self.buffers.data

    def verify_(self) -> None:
        src = self.source.type
        assert isinstance(src, MemRefType)
        where = f"{self.name} of {src}"
        shape = src.get_shape()
        static = list(self.static_offsets.get_values())
        sizes = self.size_list
        if len(static) != len(shape) or len(sizes) != len(shape):
            raise VerifyException(
                f"{where}: expected {len(shape)} offsets and sizes, "
                f"got {len(static)} and {len(sizes)}"
            )
        if sum(o == DYNAMIC for o in static) != len(self.offsets):
            raise VerifyException(f"{where}: expected one operand per dynamic offset")
        for d, (o, s, n) in enumerate(zip(static, sizes, shape)):
            if self.is_wrapped:  # (it passes an end by less than the dim)
                if s < 1 or o != DYNAMIC and not -n < o < o + s < 2 * n:
                    raise VerifyException(f"{where}: wrapped slab [{o}, {o + s}) of dim {d} "
                                          f"passes an end by {n} or more")
                continue
            if s < 1 or (s > n and o != DYNAMIC):  # a dynamic slab may overhang (zeros)
                raise VerifyException(f"{where}: size {s} of dim {d} is not in [1, {n}]")
            if o != DYNAMIC and not 0 <= o <= n - s:
                raise VerifyException(f"{where}: slab [{o}, {o + s}) of dim {d} is out of bounds")
        if not 1 <= self.buffers.data <= MAX_BUFFERS:
            raise VerifyException(
                f"{where}: expected buffers(1) to buffers({MAX_BUFFERS}), got {self.buffers.data}"
            )
        if self.pad.data < 0:
            raise VerifyException(f"{where}: expected a non-negative pad, got {self.pad.data}")
        if self.transposed and sum(s != 1 for s in sizes) < 2:
            raise VerifyException(f"{where}: a transposed slab needs two dims larger than 1")
        want = staged_type(src, sizes, self.pad.data, self.is_transposed)
        if self.result.type != want:
            raise VerifyException(f"{where}: expected result type {want}, got {self.result.type}")
        if self.smem_bytes > MAX_SHARED_MEMORY_BYTES:
            raise VerifyException(
                f"{where}: the staged slab takes {self.smem_bytes} bytes, more than the "
                f"{MAX_SHARED_MEMORY_BYTES} of shared memory"
            )
        _verify_collective(self, where)


    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        printer.print_string("[")
        printer.print_list(
            self.mixed_offsets(),
            lambda o: (
                printer.print_string(str(o)) if isinstance(o, int) else printer.print_ssa_value(o)
            ),
        )
        printer.print_string(f"] [{', '.join(map(str, self.size_list))}] into shared")
        printer.print_string(
            f" copy({self.copy.data}) buffers({self.buffers.data}) pad({self.pad.data})"
            + (" transposed" if self.is_transposed else "")
            + (" wrapped" if self.is_wrapped else "")
        )
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> StageOp:
        pos = parser.pos
        src = parser.parse_unresolved_operand()

        def offset():
            v = parser.parse_optional_integer(allow_boolean=False)
            return v if v is not None else parser.parse_operand(IndexType())

        offsets = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, offset)
        sizes = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )
        parser.parse_keyword("into")
        parser.parse_keyword("shared")
        opts = {"copy": CopyKind.SYNC, "buffers": 1, "pad": 0}
        for key in ("copy", "buffers", "pad"):
            if parser.parse_optional_keyword(key):
                parser.parse_punctuation("(")
                opts[key] = (
                    parser.parse_str_enum(CopyKind)
                    if key == "copy"
                    else parser.parse_integer(allow_boolean=False)
                )
                parser.parse_punctuation(")")
        transposed = parser.parse_optional_keyword("transposed") is not None
        wrapped = parser.parse_optional_keyword("wrapped") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        stype = parser.parse_type()
        parser.parse_punctuation("->")
        rtype = parser.parse_type()
        if not isinstance(stype, MemRefType) or not isinstance(rtype, MemRefType):
            parser.raise_error("expected memref types", pos)
        (source,) = parser.resolve_operands([src], [stype], pos)
        op = cls(source, offsets, sizes, opts["copy"], opts["buffers"], opts["pad"], rtype,
                 transposed, wrapped)
        op.attributes |= attrs
        return op


def _verify_collective(op: Operation, where: str) -> None:
    """Every thread of the block reaches a collective (a stage, a split's arrival) equally
    often: it is at block level, or each thread loop around it covers its whole block axis
    and every loop inside the outermost of them has a static lower bound (the same trip
    count on every thread)."""
    kernel = enclosing_kernel(op)
    loops = enclosing_loops(op)
    threads = [i for i, lp in enumerate(loops) if lp.binding.is_thread]
    if not threads or kernel is None:
        return
    for lp in loops[: threads[-1]]:
        if not lp.uniform_start:
            raise VerifyException(
                f"{where}: expected the loops inside its thread loops to have static lower "
                "bounds, so that every thread reaches it"
            )
    for i in threads:
        lp = loops[i]
        size = kernel.block_dims[lp.binding.axis]
        if (lp.static_lb, lp.step.data, lp.extent) != (0, 1, size):
            raise VerifyException(
                f"{where}: expected to be at block level or inside thread loops that cover "
                f"the whole block, got a {lp.binding} loop of {lp.extent} iterations for "
                f"{size} threads"
            )
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        if not isinstance(parent, ForOp):
            raise VerifyException(f"{where}: expected no '{parent.name}' around it")
        parent = parent.parent_op()


@irdl_op_definition
class SplitLastOp(IRDLOperation):
    """Whether this split of a split-K contraction is the last to have stored its partial sums
    (every split's are then in `partials`, and it may add them up and finish the outputs in
    the same kernel, instead of a second one):

        %last = tile.split_last %part[%split] of 4 : memref<4x64x64xf32>

    Splits a block walks itself (a serial loop) end with the last one. Splits on block.z
    arrive at a counter a block tile: every thread of the block reaches it once, after
    tile-map-2d or tile-tensor-core (a collective, like tile.stage), and the last block of
    each tile sees true. The result is uniform over the block."""

    name = "tile.split_last"
    partials = operand_def(MemRefType)
    split = operand_def(IndexType)
    splits = prop_def(IntAttr)
    result = result_def(IntegerType(1))
    traits = traits_def(HasAncestor(KernelOp))

    def __init__(self, partials: SSAValue, split: SSAValue, splits: int):
        super().__init__(operands=[partials, split], result_types=[IntegerType(1)],
                         properties={"splits": IntAttr(splits)})

    def verify_(self) -> None:
        t = self.partials.type
        assert isinstance(t, MemRefType)
        n = self.splits.data
        if n < 2 or not t.get_shape() or t.get_shape()[0] != n:
            raise VerifyException(f"{self.name}: expected {max(n, 2)} or more splits, the leading "
                                  f"dim of {t}")
        _verify_collective(self, self.name)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.partials)
        printer.print_string("[")
        printer.print_ssa_value(self.split)
        printer.print_string(f"] of {self.splits.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.partials.type)

    @classmethod
    def parse(cls, parser: Parser) -> SplitLastOp:
        pos = parser.pos
        part = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        split = parser.parse_operand(IndexType())
        parser.parse_punctuation("]")
        parser.parse_keyword("of")
        n = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, MemRefType):
            parser.raise_error("expected a memref type", pos)
        (partials,) = parser.resolve_operands([part], [t], pos)
        op = cls(partials, split, n)
        op.attributes |= attrs
        return op


# --------------------------------------------------------------------------------------------
# combine


@irdl_op_definition
class CombineOp(IRDLOperation):
    """A reduction across the threads of a thread-bound loop; every thread gets the result.

        %ss = tile.combine add %p over thread.x : f32
        %mx = tile.combine max %x over thread.x lanes 4 : f32

    It must be reached by every thread of the block: its loop bound to `thread.x` covers the
    whole block's x size, and the loops between them have static bounds. Lowered to a warp
    shuffle tree, then (more than one warp) a step through shared memory. With `lanes` N (a
    power of two up to a warp) it combines within each group of N consecutive lanes only: the
    four lanes that hold one row of an mma accumulator tile. With `stride` S it combines lanes S
    apart only (l, l + S, l + 2S, ... in the group): the lanes holding parts of one key's q . k
    where a row's lanes own keys and split the head dim (tile-attention-rows, `head_parts`)."""

    name = "tile.combine"
    T: ClassVar = VarConstraint("T", base(IntegerType) | base(AnyFloat))
    kind = prop_def(CombineKindAttr)
    axis = prop_def(BindAttr)
    lanes = opt_prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    value = operand_def(T)
    result = result_def(T)
    assembly_format = ("$kind $value `over` $axis (`lanes` $lanes^)? (`stride` $stride^)? "
                       "attr-dict `:` type($result)")
    traits = traits_def(HasAncestor(KernelOp))

    def __init__(self, kind: CombineKind, value: SSAValue, axis: Bind = Bind.THREAD_X,
                 lanes: int | None = None, stride: int | None = None):
        props: dict[str, Attribute] = {"kind": CombineKindAttr(kind), "axis": BindAttr(axis)}
        if lanes is not None:
            props["lanes"] = IntegerAttr(lanes, 64)
        if stride is not None:
            props["stride"] = IntegerAttr(stride, 64)
        super().__init__(
            operands=[value], result_types=[SSAValue.get(value).type], properties=props
        )

    def verify_(self) -> None:
        axis = self.axis.data
        where = f"{self.name} {self.kind.data} over {axis}"
        if self.lanes is not None:
            n = self.lanes.value.data
            if not 1 <= n <= WARP or n & (n - 1):
                raise VerifyException(f"{where}: expected lanes to be a power of two up to "
                                      f"{WARP}, got {n}")
        kernel = enclosing_kernel(self)
        assert kernel is not None
        if self.stride is not None:  # within a warp: its shuffles only
            bx = kernel.block_dims[0]
            n = self.stride.value.data
            top = self.lanes.value.data if self.lanes else bx
            if not 1 <= n < top <= WARP or n & (n - 1):
                raise VerifyException(f"{where}: expected stride to be a power of two under the "
                                      f"lanes combined ({top}, at most a warp), got {n}")
        if axis != Bind.THREAD_X:
            raise VerifyException(
                f"{where}: expected a combine over thread.x (the only one lowered)"
            )
        loops = enclosing_loops(self)
        owner = next((lp for lp in loops if lp.binding == axis), None)
        if owner is None:
            raise VerifyException(f"{where}: expected to be inside a loop bound to {axis}")
        for lp in loops:
            if lp is owner:
                break
            if not lp.uniform_start:
                raise VerifyException(
                    f"{where}: expected the loops inside its {axis} loop to have static bounds, "
                    "so that every thread reaches it"
                )
        for lp in loops:
            if lp.binding.is_thread and lp.extent != kernel.block_dims[lp.binding.axis]:
                raise VerifyException(
                    f"{where}: expected the enclosing {lp.binding} loop to cover the whole block "
                    f"({lp.extent} iterations for {kernel.block_dims[lp.binding.axis]} threads)"
                )
        bx = kernel.block_dims[0]
        if bx % WARP != 0 and (bx > WARP or bx & (bx - 1)):
            raise VerifyException(
                f"{where}: expected the block's x size to be a power of two up to 32 or a "
                f"multiple of 32, got {bx}"
            )


# --------------------------------------------------------------------------------------------
# launch (host side)


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run a kernel from the host function: `tile.launch @k(%x, %out) : memref<4xf32>, memref<4xf32>`
    (grid and block are read from the kernel)."""

    name = "tile.launch"
    callee = prop_def(FlatSymbolRefAttr)
    args = var_operand_def(MemRefType)
    assembly_format = "$callee `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, callee: str, args: Sequence[SSAValue]):
        super().__init__(operands=[args], properties={"callee": FlatSymbolRefAttr(callee)})

    def verify_(self) -> None:
        verify_launch(self, self.callee, self.args, KernelOp)


# --------------------------------------------------------------------------------------------
# tensor-core fragments (mma.sync m16n8k16, fp16 / bf16 in, fp32 accumulators)


class FragmentKind(StrEnum):
    """Which mma operand a tile of a buffer's last two dims is: `a` a 16 x 16 [m][k] tile, `a_km`
    the same operand stored [k][m] (`x.t() @ y`), `b_kn` a 16 x 8 [k][n] tile, `b_nk` the same
    operand stored [n][k] (8 rows of 16)."""

    A = "a"
    A_KM = "a_km"
    B_KN = "b_kn"
    B_NK = "b_nk"

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) of the tile in the buffer's last two dims."""
        return {"a": (16, 16), "a_km": (16, 16), "b_kn": (16, 8), "b_nk": (8, 16)}[self.value]

    @property
    def registers(self) -> int:
        return 4 if self in (FragmentKind.A, FragmentKind.A_KM) else 2

    @property
    def transposed(self) -> bool:
        """Stored with the fragment's rows along the buffer's columns: `ldmatrix .trans`."""
        return self in (FragmentKind.A_KM, FragmentKind.B_KN)


@irdl_attr_definition
class FragmentKindAttr(EnumAttribute[FragmentKind], SpacedOpaqueSyntaxAttribute):
    name = "tile.fragment_kind"


HALF_TYPES = (Float16Type(), BFloat16Type())


@irdl_op_definition
class FragmentLoadOp(IRDLOperation):
    """This lane's registers of an mma operand: the tile at `indices` (its first row and column
    in the last two dims) of a fp16 / bf16 buffer, in the PTX fragment layout of lane `lane`;
    elements outside the buffer read as zero. Executed by a whole warp (`lane` = 0..31).

        %a0, %a1, %a2, %a3 = tile.fragment_load a %xs[%r, %k] lane(%l)
            : memref<64x40xf16, 3 : i64> -> i32, i32, i32, i32

    From shared memory with 16-byte aligned rows it is an `ldmatrix`, else loads element by
    element."""

    name = "tile.fragment_load"
    kind = prop_def(FragmentKindAttr)
    source = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    lane = operand_def(IndexType)
    res = var_result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$kind $source `[` $indices `]` `lane` `(` $lane `)` attr-dict `:` type($source) "
        "`->` type($res)"
    )
    traits = traits_def(HasAncestor(KernelOp))

    def __init__(self, kind: FragmentKind, source: SSAValue, indices, lane: SSAValue):
        super().__init__(
            operands=[source, indices, lane],
            result_types=[[IntegerType(32)] * kind.registers],
            properties={"kind": FragmentKindAttr(kind)},
        )

    def verify_(self) -> None:
        t = self.source.type
        assert isinstance(t, MemRefType)
        kind = self.kind.data
        where = f"{self.name} {kind}"
        if t.element_type not in HALF_TYPES or t.get_num_dims() < 2:
            raise VerifyException(f"{where}: expected a 2-D+ memref of f16 or bf16, got {t}")
        if len(self.indices) != t.get_num_dims():
            raise VerifyException(
                f"{where}: expected {t.get_num_dims()} indices, got {len(self.indices)}"
            )
        if [r.type for r in self.res] != [IntegerType(32)] * kind.registers:
            raise VerifyException(f"{where}: expected {kind.registers} i32 results")


@irdl_op_definition
class MmaOp(IRDLOperation):
    """One warp's `mma.sync.m16n8k16` with fp32 accumulators: D = A * B + C, the operands as
    each lane's registers (4 of A, 2 of B, 4 of C; `tile.fragment_load`), `type` fp16 or bf16.

        %d0, %d1, %d2, %d3 = tile.mma f16 %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3
    """

    name = "tile.mma"
    type = prop_def(Attribute)
    args = var_operand_def()
    res = var_result_def()
    traits = traits_def(HasAncestor(KernelOp), Pure())

    def __init__(self, t: Attribute, a: Sequence[SSAValue], b: Sequence[SSAValue], c):
        super().__init__(
            operands=[[*a, *b, *c]], result_types=[[c[0].type] * 4], properties={"type": t}
        )

    def verify_(self) -> None:
        i32, f32 = IntegerType(32), Float32Type()
        want = [i32] * 6 + [f32] * 4
        if self.type not in HALF_TYPES:
            raise VerifyException(f"{self.name}: expected type f16 or bf16, got {self.type}")
        if [a.type for a in self.args] != want or [r.type for r in self.res] != [f32] * 4:
            raise VerifyException(
                f"{self.name}: expected operands 6 x i32 (A, B) and 4 x f32 (C), 4 f32 results"
            )

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
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(args) != 10:
            parser.raise_error("expected 10 operands: 4 of A, 2 of B, 4 of C", pos)
        i32, f32 = IntegerType(32), Float32Type()
        vals = parser.resolve_operands(args, [i32] * 6 + [f32] * 4, pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls(t, vals[:4], vals[4:6], vals[6:])
        op.attributes |= attrs
        return op


@irdl_op_definition
class GatherOp(IRDLOperation):
    """A tensor no buffer holds: its element at the block's arguments (one index a dim) is what
    the region yields — an implicit GEMM's B operand, a conv's im2col window of its input,
    gathered by index math (zero in the padding) where tile-tensor-core found the product's B
    an expression rather than a load:

        %g = tile.gather {
        ^bb0(%n: index, %k: index, %j: index):
          ...  %v = arith.select %inside, %x, %zero : f16
          tile.yield %v : f16
        } : memref<8x576x56xf16>

    Only tile.stage reads it (tile-stage-chunks stages its chunks; the copy evaluates the region
    at each element's coordinates, zero past its dims, plain loads and st.shared, no cp.async);
    tile-to-kernel refuses any other use."""

    name = "tile.gather"
    body = region_def("single_block")
    result = result_def(MemRefType)
    assembly_format = "$body attr-dict `:` type($result)"
    traits = traits_def(HasAncestor(KernelOp))

    def __init__(self, body: Region, result_type: MemRefType):
        super().__init__(regions=[body], result_types=[result_type])

    def verify_(self) -> None:
        assert isinstance(self.result.type, MemRefType)
        block = self.body.block
        if len(block.args) != len(self.result.type.get_shape()) or any(
                not isinstance(a.type, IndexType) for a in block.args):
            raise VerifyException("tile.gather: expected one index argument a dim")
        last = block.last_op
        if not isinstance(last, YieldOp) or len(last.values) != 1 \
                or last.values[0].type != self.result.type.element_type:
            raise VerifyException("tile.gather: expected the region to yield one element")


class PackHalves(IRDLOperation):
    """Two 16-bit floats in one 32-bit fragment register, `lo` in the low half (the fields of
    `tile.pack_halves` and `kernel.pack_halves`)."""

    T: ClassVar = VarConstraint("T", base(Float16Type) | base(BFloat16Type))
    lo = operand_def(T)
    hi = operand_def(T)
    result = result_def(IntegerType(32))
    assembly_format = "$lo `,` $hi attr-dict `:` type($lo)"
    traits = traits_def(Pure())

    def __init__(self, lo: SSAValue, hi: SSAValue):
        super().__init__(operands=[lo, hi], result_types=[IntegerType(32)])


@irdl_op_definition
class PackHalvesOp(PackHalves):
    """An mma operand built from registers (flash attention's probabilities as the A operand
    of P . V): `%r = tile.pack_halves %lo, %hi : bf16` (an i32)."""

    name = "tile.pack_halves"


Tile = Dialect(
    "tile",
    [KernelOp, ForOp, YieldOp, GatherOp, StageOp, SplitLastOp, CombineOp, FragmentLoadOp, MmaOp,
     PackHalvesOp, LaunchOp],
    [BindAttr, CopyKindAttr, CombineKindAttr, FragmentKindAttr, PlanAttr],
)
