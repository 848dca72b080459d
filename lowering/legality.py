"""A conversion leaves nothing behind: ops of the source dialect left over are an error that
names the op and where it is, instead of a crash three passes later."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException


class ConversionError(DiagnosticException):
    """A lowering met an op it cannot convert."""


def check_converted(module: ModuleOp, dialect: str, pass_name: str) -> None:
    for op in module.walk():
        if op.name.startswith(dialect + "."):
            loc = ""
            if op.results and op.results[0].name_hint:
                loc = f" (result %{op.results[0].name_hint})"
            raise ConversionError(f"{pass_name}: cannot convert '{op.name}'{loc}: no lowering for it")
