"""The intermediates of a program at loop level — buffers the host function allocates and
passes to nothing but kernel launches — and retyping one everywhere it is used: its
allocation, and the argument of every kernel it is launched with (loop-narrow-buffers,
loop-collapse-dims). The program's inputs and results are never touched: their types are the
program's."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.rewriter import Rewriter

from deplo.dialects import loop


def intermediates(module: ModuleOp) -> Iterator[tuple[memref.AllocOp, list[BlockArgument]]]:
    """Each intermediate's allocation and the kernel arguments it is launched as (each once)."""
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, loop.KernelOp)}
    for fn in [f for f in module.ops if isinstance(f, func.FuncOp)]:
        for alloc in [a for a in fn.walk() if isinstance(a, memref.AllocOp)]:
            args = _kernel_args(alloc.memref, kernels)
            if args:
                yield alloc, args


def _kernel_args(buf: SSAValue, kernels: dict[str, loop.KernelOp]) -> list[BlockArgument]:
    args: list[BlockArgument] = []
    for use in buf.uses:
        launch = use.operation
        kernel = kernels.get(launch.callee.root_reference.data) \
            if isinstance(launch, loop.LaunchOp) else None
        if kernel is None:
            return []
        args.append(kernel.args[use.index])
    return list(dict.fromkeys(args))


def retype(alloc: memref.AllocOp, args: list[BlockArgument], t: MemRefType,
           rewrite: Callable[[BlockArgument], None]) -> None:
    """Give the buffer type `t`: a new allocation, and each kernel argument retyped, then
    `rewrite(new_arg)` to fix its loads and stores."""
    new_alloc = memref.AllocOp([], [], t)
    Rewriter.replace_op(alloc, new_alloc)
    new_alloc.memref.name_hint = alloc.memref.name_hint
    for arg in args:
        rewrite(Rewriter.replace_value_with_new_type(arg, t))
