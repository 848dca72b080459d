"""Names of the kernels passes add: one that no symbol of the module has yet. The pipeline's
own names end in numbers (@sum_1), so a suffix alone can collide."""

from __future__ import annotations

from xdsl.ir import Block


def symbol_names(block: Block) -> set[str]:
    """The symbol names defined at the top of `block` (a module's body)."""
    names = set()
    for op in block.ops:
        attr = getattr(op, "sym_name", None)
        if attr is not None:
            names.add(attr.data)
    return names


def fresh_symbol(taken: set[str], name: str) -> str:
    """`name`, or `name` with a number after it, not in `taken` (which it joins)."""
    new, n = name, 1
    while new in taken:
        new, n = f"{name}_{n}", n + 1
    taken.add(new)
    return new
