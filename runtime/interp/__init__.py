"""numpy interpreters for the torch, tir and loop levels: the reference every lowering is checked
against.

    from deplo.runtime.interp import run_module, InterpExecutable
    (y,) = run_module(module, [x, w])            # calls func.func @main
    exe = InterpExecutable(module); exe.run([x, w])

One `InterpreterFunctions` class per dialect, beside it: `torch.py` (TorchFunctions), `tir.py`
(TirFunctions), `loop.py` (LoopFunctions, and ScalarFunctions for arith/math on numpy),
`host.py` (HostFunctions: memref buffers, and the dtype conventions). func.func/call/return are
xDSL's own `FuncFunctions`. All are registered together, so a module mixing levels runs too; the
level (`detect_level`) only names what cannot be interpreted.

Inputs are converted to the argument types of @main (copied, so the caller's arrays are never
written); results come back as numpy arrays. bf16 values travel as float32 holding bf16 values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions

from deplo.runtime.interp.host import HostFunctions, to_value
from deplo.runtime.interp.loop import LoopFunctions, ScalarFunctions
from deplo.runtime.interp.tir import TirFunctions
from deplo.runtime.interp.torch import TorchFunctions

__all__ = ["InterpExecutable", "detect_level", "make_interpreter", "run_module"]

LEVELS = ("torch", "tir", "loop")
"""The levels these interpreters run, highest first."""

_NOT_INTERPRETED = ("tile", "kernel", "cuda")


def detect_level(module: ModuleOp) -> str:
    """'torch', 'tir' or 'loop', from the ops present (the lowest level found wins; a module with
    no level-specific op is 'torch' when @main takes tensors). Raises NotImplementedError for
    tile/kernel/cuda IR, naming the op."""
    found: set[str] = set()
    for op in module.walk():
        dialect = op.name.split(".", 1)[0]
        if dialect in _NOT_INTERPRETED:
            raise NotImplementedError(
                f"interp: no interpreter for the {dialect} level (found {op.name})"
            )
        if dialect in LEVELS:
            found.add(dialect)
    for level in reversed(LEVELS):
        if level in found:
            return level
    return "torch"


def make_interpreter(module: ModuleOp) -> Interpreter:
    """An xDSL interpreter for `module` with every deplo interpreter registered."""
    interp = Interpreter(module)
    for functions in (
        FuncFunctions(),
        HostFunctions(),
        ScalarFunctions(),
        TorchFunctions(),
        TirFunctions(),
        LoopFunctions(),
    ):
        interp.register_implementations(functions)
    return interp


class InterpExecutable:
    """The Executable interface over the interpreters: `.run(inputs) -> list[np.ndarray]`.

    The module is checked once (level, entry function); the interpreter is reused across runs."""

    def __init__(self, module: ModuleOp, entry: str = "main"):
        self.module = module
        self.level = detect_level(module)
        self.entry = entry
        func = next(
            (op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == entry),
            None,
        )
        if func is None:
            raise ValueError(f"interp: the module has no func.func @{entry}")
        self.func = func
        self.interp = make_interpreter(module)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        arg_types = self.func.function_type.inputs.data
        if len(inputs) != len(arg_types):
            raise ValueError(
                f"interp: @{self.entry} takes {len(arg_types)} inputs, got {len(inputs)}"
            )
        args = tuple(to_value(x, t) for x, t in zip(inputs, arg_types, strict=True))
        with np.errstate(all="ignore"):
            results = self.interp.call_op(self.func, args)
        return [np.asarray(r) for r in results]


def run_module(
    module: ModuleOp, inputs: Sequence[np.ndarray], entry: str = "main"
) -> list[np.ndarray]:
    """Run `func.func @entry` of a torch-, tir- or loop-level module on numpy inputs."""
    return InterpExecutable(module, entry).run(inputs)
