"""A conversion leaves nothing behind: ops of the source dialect left over are an error that
names the op and where it is, instead of a crash three passes later."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

IR_LEVELS = ("torch", "tir", "loop", "tile", "kernel", "cuda")


def ir_level(module: Operation) -> str | None:
    """The deepest level whose dialect's ops `module` holds (tile IR still uses loop.load), or
    None when it holds none (builtin/func/arith only)."""
    found = {op.dialect_name() for op in module.walk()}
    return next((lv for lv in reversed(IR_LEVELS) if lv in found), None)


class ConversionError(DiagnosticException):
    """A lowering met an op it cannot convert."""


def check_converted(module: ModuleOp, dialect: str, pass_name: str) -> None:
    for op in module.walk():
        if op.name.startswith(dialect + "."):
            loc = ""
            if op.results and op.results[0].name_hint:
                loc = f" (result %{op.results[0].name_hint})"
            raise ConversionError(f"{pass_name}: cannot convert '{op.name}'{loc}: no lowering for it")
