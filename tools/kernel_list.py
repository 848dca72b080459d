"""The kernel list `deplo compile -v` prints once the program is at loop level: per kernel its
name, its loop nest, the buffers it reads and writes (host names, so the dataflow between
kernels shows) and the torch ops it implements.

    deplo: 3 loop kernel(s), 3 launches:
      @linear_mean        1x8 { r2048, 2048 { r2048 } }
          in  hidden 1x8x2048xf32, q_proj.weight 2048x2048xf32, ...
          out linear 1x8x2048xf32
          from self_attn.q_proj: linear (modeling_llama.py:244)

Nest notation: `AxB { ... }` is a perfect nest of free loops of extents A and B, `rN` a reduce
loop of N iterations, `{ x, y }` the loops in a body in order, `private` a `loop.private` buffer.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

from deplo import origin
from deplo.dialects import loop


def nest_shape(block: Block) -> str:
    """The loops of `block` (and below) in the nest notation."""
    parts = []
    for op in block.ops:
        if isinstance(op, loop.PrivateOp):
            parts.append("private")
        elif isinstance(op, loop.ForOp):
            parts.append(_loop_shape(op))
    return ", ".join(parts)


def _loop_shape(op: loop.ForOp) -> str:
    if op.kind.data == loop.LoopKind.REDUCE:
        inner = nest_shape(op.body.block)
        return f"r{op.extent}" + (f" {{ {inner} }}" if inner else "")
    extents = [op.extent]
    body = op.body.block
    while True:  # a perfect free nest (scalar code aside) prints as AxB
        loops = [o for o in body.ops if isinstance(o, loop.ForOp | loop.PrivateOp)]
        if len(loops) == 1 and isinstance(loops[0], loop.ForOp) \
                and loops[0].kind.data == loop.LoopKind.FREE:
            extents.append(loops[0].extent)
            body = loops[0].body.block
            continue
        break
    inner = nest_shape(body)
    return "x".join(map(str, extents)) + (f" {{ {inner} }}" if inner else "")


def _type(t) -> str:
    return "x".join([*map(str, t.get_shape()), str(t.element_type)])


def _host_names(module: ModuleOp) -> dict:
    """Host buffer -> the name the IR printer gives it (`linear`, `linear_1`, ...)."""
    names: dict = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        seen: dict[str, int] = {}
        values = [*fn.args, *(r for op in fn.walk() for r in op.results)]
        for v in values:
            hint = v.name_hint or "v"
            n = seen.get(hint, 0)
            seen[hint] = n + 1
            names[v] = hint if n == 0 else f"{hint}_{n}"
    return names


def kernel_list(module: ModuleOp) -> list[str]:
    """One header line, then per loop.kernel its nest, inputs, outputs and the torch ops it
    implements (`from`, where the IR carries them); empty without loop kernels."""
    from deplo.passes.loop.fusion_rules import written_args

    kernels = [op for op in module.ops if isinstance(op, loop.KernelOp)]
    if not kernels:
        return []
    launches: dict[str, list[Operation]] = {}
    for op in module.walk():
        if isinstance(op, loop.LaunchOp):
            launches.setdefault(op.callee.root_reference.data, []).append(op)
    total = sum(len(v) for v in launches.values())
    host = _host_names(module)
    lines = [f"{len(kernels)} loop kernel(s), {total} launch(es):"]
    width = max(len(k.sym_name.data) for k in kernels) + 1
    for k in kernels:
        name = k.sym_name.data
        lines.append(f"  @{name:<{width}} {nest_shape(k.body.block)}")
        outs = written_args(k)
        first = launches.get(name, [None])[0]
        names = [host[v] for v in first.args] if first is not None else [
            a.name_hint or "?" for a in k.args]
        ins = [f"{n} {_type(a.type)}" for i, (n, a) in enumerate(zip(names, k.args))
               if i not in outs]
        lines.append(f"      in  {', '.join(ins) or '-'}")
        lines.append(f"      out {', '.join(f'{names[i]} {_type(k.args[i].type)}' for i in sorted(outs))}")
        lines += [f"      from {line}" for line in origin.summary(origin.of_op(k))]
    return lines


def plan_list(module: ModuleOp) -> list[str]:
    """One line per tile kernel once planned: its name, key and plan (`-v` after tile-plan)."""
    from deplo.analysis.nest import tile_kernels

    lines = []
    for k in tile_kernels(module):
        if (plan := k.the_plan) is not None:
            lines.append(f"plan @{k.sym_name.data} [{k.structural_key}] {plan.text()}")
    return lines


def plan_spaces(module: ModuleOp) -> list[str]:
    """Per tile kernel just planned (after tile-plan): its key, its plan, and every kind it can
    take with the number of legal plans of that kind (`deplo compile --plans`)."""
    from deplo.analysis.nest import tile_kernels
    from deplo.dialects.tile_plan import space
    from deplo.passes.tile.planner import legal_classes

    lines = []
    for k in tile_kernels(module):
        if (plan := k.the_plan) is None:
            continue
        kinds = [f"{kind} {sum(1 for _ in space(kind, facts)):,}"
                 for kind, facts in legal_classes(k)]
        lines += [f"@{k.sym_name.data} [{k.structural_key}]", f"  plan   {plan.text()}",
                  f"  space  {'; '.join(kinds)} legal plans"]
    return lines
