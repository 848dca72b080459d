"""Where IR came from: the torch ops (with module path and source line) behind each kernel.

The importer tags every torch op with one line, `linear_3: aten.linear in
model.layers.0.self_attn.q_proj at modeling_llama.py:257`, as the discardable attribute
`deplo.origin`. torch-to-tir hands it to every tir op of the decomposition, tir-to-loop turns it
into the kernel's list (`origin = [...]`), fusion joins the lists of the kernels it merges and
every later lowering keeps the attribute on the kernel it builds, so the `.cu`, `-v` listings,
profiles and the explorer can say which torch ops a kernel implements. Like an MLIR location it
is optional: IR written by hand has none, and nothing may depend on it for correctness. Like
MLIR's locations, the per-op lines are left out of printed IR unless asked for (`text(...,
debug_info=True)`, `deplo compile --debug-info`); a kernel's list is always printed.
"""

from __future__ import annotations

import math
import os
import re
from io import StringIO

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Operation
from xdsl.printer import Printer

ORIGIN = "deplo.origin"  # one torch op's line (torch, tir ops)
KERNEL_ORIGIN = "origin"  # a kernel's lines (in the order fusion merged them)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def describe(node, expression_file: str | None = None) -> str:
    """The origin line of an FX node: its name, aten op, module path and the source line of the
    model's (or user's) code that called it — the innermost frame outside torch and deplo, so
    `q_proj(x)` in modeling_llama.py rather than F.linear in torch/nn/modules/linear.py."""

    op = str(node.target).removesuffix(".default")
    line = f"{node.name}: {op}"
    whole = node.meta.get("original_aten")  # (the op a PyTorch decomposition took apart)
    if whole is not None and whole != node.target and not str(whole).startswith(op):
        line += f" of {str(whole).removesuffix('.default')}"
    stack = node.meta.get("nn_module_stack")
    if stack and (path := list(stack.values())[-1][0]):
        line += f" in {path}"
    if frame := user_frame(node, expression_file):
        file, lineno, _ = frame
        where = "the expression" if file == expression_file else \
            f"{os.path.basename(file)}:{lineno}"
        line += f" at {where}"
    return line


def user_frame(node, expression_file: str | None = None, any_frame: bool = False
               ) -> tuple[str, str, str] | None:
    """(file, line, code) of the innermost frame of an FX node's stack trace outside torch and
    deplo (the expression file counts as the user's); `any_frame`: the innermost one."""
    import torch

    torch_dir, ours = os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep

    def skipped(f: str) -> bool:  # torch's frames, deplo's own package files (not a venv, test
        # or example inside a checkout: the package is the checkout's root)
        if f.startswith(torch_dir):
            return True
        top = f[len(ours):].split(os.sep)[0] if f.startswith(ours) else ""
        return bool(top) and \
            (top.endswith(".py") or os.path.isfile(os.path.join(ours, top, "__init__.py")))

    lines = (node.meta.get("stack_trace") or "").splitlines()
    found = None
    for i, text in enumerate(lines):
        m = _FRAME.search(text)
        if m and (any_frame or m[1] == expression_file or not skipped(m[1])):
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.search(lines[i + 1]) \
                else ""
            found = (m[1], m[2], code)
    return found


def of_op(op: Operation) -> list[str]:
    """The origin lines an op carries (a torch/tir op: one; a kernel: its list)."""
    attr = op.attributes.get(ORIGIN) or op.attributes.get(KERNEL_ORIGIN)
    if isinstance(attr, StringAttr):
        return [attr.data]
    if isinstance(attr, ArrayAttr):
        return [a.data for a in attr.data if isinstance(a, StringAttr)]
    return []


def tag(ops, line: str | None) -> None:
    """Give each op the torch op's line (ops built for it: its decomposition, its casts)."""
    if line:
        for op in ops:
            op.attributes.setdefault(ORIGIN, StringAttr(line))


def set_kernel(kernel: Operation, lines: list[str]) -> None:
    """Set a kernel's origin list (deduplicated, first occurrence first); none: no attribute."""
    unique = list(dict.fromkeys(lines))
    if unique:
        kernel.attributes[KERNEL_ORIGIN] = ArrayAttr([StringAttr(s) for s in unique])


def join(into: Operation, other: Operation) -> None:
    """A kernel that absorbed `other` (fusion) implements both: the producer's ops first."""
    set_kernel(into, of_op(other) + of_op(into))


def strip_scope(op: Operation, scope: str) -> None:
    """Inside an outlined layer function the layer index means nothing: `in self_attn.q_proj`."""
    attr = op.attributes.get(ORIGIN)
    if isinstance(attr, StringAttr):
        op.attributes[ORIGIN] = StringAttr(attr.data.replace(f" in {scope}.", " in ")
                                           .replace(f" in {scope}", " in (layer)"))


_LINE = re.compile(r"^(?P<name>[^:]+): (?P<op>\S+)(?: in (?P<module>\S+))?(?: at (?P<at>.+))?$")


def parse(line: str) -> dict[str, str | None]:
    """`linear_3: aten.linear in m.q_proj at f.py:12` -> name, op, module and `at` fields."""
    m = _LINE.match(line)
    return m.groupdict() if m else {"name": line, "op": line, "module": None, "at": None}


def _line_number(at: str | None) -> float:
    tail = (at or "").rpartition(":")[2]
    return int(tail) if tail.isdigit() else math.inf


def summary(lines: list[str]) -> list[str]:
    """A kernel's origin, one line a module: `self_attn: view, transpose, scaled_dot_product_attention
    (modeling_llama.py:244-258)` — readable where the full list (in the IR) is long. Ops and
    modules in source-line order (fusion joins lists in the order it merges kernels)."""
    parsed = sorted((parse(line) for line in lines), key=lambda f: _line_number(f["at"]))
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for f in parsed:
        ops, where = groups.setdefault(f["module"] or "", ([], []))
        op = (f["op"] or "").removeprefix("aten.").split(".")[0]
        if op not in ops:
            ops.append(op)
        if f["at"]:
            where.append(f["at"])
    out = []
    for module, (ops, where) in groups.items():
        text = f"{module + ': ' if module else ''}{', '.join(ops)}"
        if where:
            text += f" ({_span(where)})"
        out.append(text)
    return out


def _span(where: list[str]) -> str:
    """`f.py:3`, `f.py:3` and `f.py:9` -> `f.py:3-9`; other files listed after."""
    by_file: dict[str, list[int]] = {}
    for w in where:
        file, _, line = w.rpartition(":")
        if file and line.isdigit():
            by_file.setdefault(file, []).append(int(line))
        else:
            by_file.setdefault(w, [])
    parts = []
    for file, nums in by_file.items():
        lo, hi = (min(nums), max(nums)) if nums else (None, None)
        parts.append(file if lo is None else f"{file}:{lo}" if lo == hi else f"{file}:{lo}-{hi}")
    return ", ".join(parts)


class _WithoutOpOrigins(Printer):
    def print_op_attributes(self, attributes, *, reserved_attr_names=(), print_keyword=False):
        reserved = (reserved_attr_names,) if isinstance(reserved_attr_names, str) \
            else tuple(reserved_attr_names)  # some xDSL ops pass one name as a string
        return super().print_op_attributes(attributes, reserved_attr_names=(*reserved, ORIGIN),
                                           print_keyword=print_keyword)


def text(module: Operation, debug_info: bool = False) -> str:
    """The IR as text; without each torch/tir op's origin line unless `debug_info`."""
    if debug_info:
        return str(module)
    out = StringIO()
    _WithoutOpOrigins(stream=out).print_op(module)
    return out.getvalue()


def is_module_dump(note: str) -> bool:
    """Whether an exception's note is the module xDSL prints with the failing op marked."""
    return re.search(r"^\s*\^+-*\s*$", note, re.MULTILINE) is not None


def marked_op(e: Exception) -> str:
    """The line of the op xDSL's verifier note marks (`^^^`), as `\n  at: ...`; "" if none.
    The note itself is the whole module in generic form."""
    lines = next((n for n in getattr(e, "__notes__", []) if is_module_dump(n)), "").splitlines()
    marked = [lines[i - 1].strip() for i in range(1, len(lines))
              if re.fullmatch(r"\s*\^+-*\s*", lines[i])]
    return f"\n  at: {marked[0]}" if marked else ""
