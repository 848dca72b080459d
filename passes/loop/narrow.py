"""loop-narrow-buffers: an intermediate that is only ever written widened is kept narrow.

Fusion can leave a kernel whose last op widens its result just before the store — the cast a
consumer applies to its operand (`F.linear(silu(gate) * up, w)` in bf16 casts the product to
fp32 for the matmul), pulled into the producer because casts fuse forward. The intermediate
then costs twice the bytes, and the consumer's product is no longer a plain product of 16-bit
loads (no tensor cores). Widening is exact, so the buffer can hold the narrow value and every
reader widen what it loads:

    loop.kernel @p(%x, %t: memref<32x512xf32>) { ... %w = arith.extf %v : bf16 to f32
                                                 loop.store %w, %t[..] }
    loop.kernel @c(%t: memref<32x512xf32>, ...) { %a = loop.load %t[..] ... }
  ->
    loop.kernel @p(%x, %t: memref<32x512xbf16>) { ... loop.store %v, %t[..] }
    loop.kernel @c(%t: memref<32x512xbf16>, ...) { %n = loop.load %t[..]
                                                   %a = arith.extf %n : bf16 to f32 ... }

Only buffers `memref.alloc`ed in the host function and passed to nothing but `loop.launch`
qualify, and only when every store to them (in every kernel) stores an `arith.extf` of one
narrow type: the program's inputs and results keep their types.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Attribute, BlockArgument
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo.dialects import loop
from deplo.passes.loop.intermediates import intermediates, retype


def _narrow_type(args: list[BlockArgument]) -> Attribute | None:
    """The one narrow type every store to these arguments widens from, if there is one."""
    narrow = None
    for arg in args:
        for use in arg.uses:
            op = use.operation
            if isinstance(op, loop.LoadOp):
                continue
            if not isinstance(op, loop.StoreOp) or op.value is arg:
                return None
            widen = op.value.owner
            if not isinstance(widen, arith.ExtFOp):
                return None
            if narrow not in (None, widen.input.type):
                return None
            narrow = widen.input.type
    return narrow


def _widen_loads(new: BlockArgument) -> None:
    """Stores drop their widening; loads widen what they read."""
    for use in list(new.uses):
        op = use.operation
        if isinstance(op, loop.StoreOp):
            widen = op.value.owner
            assert isinstance(widen, arith.ExtFOp)
            op.operands[0] = widen.input
            if not widen.result.uses:
                Rewriter.erase_op(widen)
            continue
        assert isinstance(op, loop.LoadOp)
        old = op.result
        load = loop.LoadOp(new, list(op.indices), op.properties.get("map"))
        widen = arith.ExtFOp(load.result, old.type)
        Rewriter.replace_op(op, [load, widen], [widen.result])
        load.result.name_hint, widen.result.name_hint = old.name_hint, old.name_hint


@dataclass(frozen=True)
class LoopNarrowBuffersPass(ModulePass):
    """Intermediates written only as `extf` of a narrow type hold the narrow type; readers widen."""

    name = "loop-narrow-buffers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for alloc, args in list(intermediates(op)):
            narrow = _narrow_type(args)
            if narrow is not None:
                old = alloc.memref.type
                assert isinstance(old, MemRefType)
                retype(alloc, args, MemRefType(narrow, old.get_shape()), _widen_loads)
