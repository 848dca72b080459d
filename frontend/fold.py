"""Evaluate at import time what depends only on shapes and constants.

A causal LM computes its attention mask and its rotary cos/sin tables from the sequence length
and config-derived buffers, not from the token values. Exported, that is a few dozen ATen nodes
(`arange`, `cumsum`, `eq`, `__and__`, `new_ones(input_ids)`, `cos`, ...). The importer runs them
once on the CPU instead of compiling them: their results become constant arguments of `@main`,
and a mask that is exactly the causal triangle turns `scaled_dot_product_attention` into
`is_causal=True` with no mask at all.

A node is *static* when every tensor it reads is static: a constant, a buffer whose value is on
the CPU, or a shape-only use of an input (`new_ones(x, ...)` reads x's shape, not its values).
Parameters and the values of user inputs are never static: weights are not folded.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

aten = torch.ops.aten

# ops that read only the shape / dtype / device of their first (tensor) argument
SHAPE_ONLY = {
    aten.new_ones.default, aten.new_zeros.default, aten.new_full.default, aten.new_empty.default,
    aten.zeros_like.default, aten.ones_like.default, aten.full_like.default,
    aten.empty_like.default, aten.sym_size.int,
}

SDPA = aten.scaled_dot_product_attention.default


def draws_random(op) -> bool:
    """True for an op PyTorch tags as drawing from its random generator (randn, rand_like,
    bernoulli, normal, multinomial, ...): never static, and refused (aten.refusal)."""
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


def _nodes_in(value) -> Iterable[torch.fx.Node]:
    if isinstance(value, torch.fx.Node):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _nodes_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _nodes_in(v)


def _substitute(value, env: dict):
    """Node -> its value; any device -> the CPU (the graph was exported on the meta device)."""
    if isinstance(value, torch.fx.Node):
        return env[value]
    if isinstance(value, torch.device):
        return torch.device("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, env) for k, v in value.items()}
    return value


def _stand_in(node: torch.fx.Node) -> torch.Tensor:
    """A CPU tensor with the node's shape and dtype, for shape-only ops."""
    val = node.meta["val"]
    return torch.zeros(tuple(val.shape), dtype=val.dtype)


class StaticEvaluator:
    """Tracks which FX nodes are static and computes their values on the CPU."""

    def __init__(self, static_inputs: dict[torch.fx.Node, torch.Tensor]):
        self.values: dict[torch.fx.Node, object] = dict(static_inputs)

    def is_static(self, node) -> bool:
        return isinstance(node, torch.fx.Node) and node in self.values

    def try_fold(self, node: torch.fx.Node) -> bool:
        """Evaluate `node` if everything it reads is static; True if it is now static."""
        if node.op != "call_function" or node.target is SDPA or draws_random(node.target):
            return False  # (a random op folded would be one draw, frozen)
        args, kwargs = node.args, node.kwargs
        env = dict(self.values)
        dynamic = [n for n in _nodes_in((args, kwargs)) if n not in self.values]
        if dynamic:
            if node.target not in SHAPE_ONLY or dynamic != [args[0]]:
                return False
            env[args[0]] = _stand_in(args[0])
        try:
            with torch.no_grad():
                self.values[node] = node.target(*_substitute(args, env), **_substitute(kwargs, env))
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            return False
        return True


def is_causal_mask(mask: torch.Tensor, q_len: int, kv_len: int) -> bool:
    """True if `mask` (bool: keep, or additive float) allows exactly j <= i, for every batch/head."""
    if mask.shape[-2:] != (q_len, kv_len) or q_len != kv_len:
        return False
    tril = torch.ones(q_len, kv_len, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        keep = mask
    else:
        allowed = mask == 0
        blocked = mask <= torch.finfo(mask.dtype).min / 2
        if not bool((allowed | blocked).all()):
            return False
        keep = allowed
    return bool((keep == tril).all())


def fold_causal_mask(node: torch.fx.Node, ev: StaticEvaluator) -> None:
    """Rewrite sdpa(q, k, v, attn_mask=<static causal triangle>) into sdpa(q, k, v, is_causal=True)."""
    args = list(node.args)
    kwargs = dict(node.kwargs)
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    if not ev.is_static(mask):
        return
    q, k = node.args[0].meta["val"], node.args[1].meta["val"]
    if not is_causal_mask(ev.values[mask], q.shape[-2], k.shape[-2]):
        return
    del args[3:]
    kwargs.pop("attn_mask", None)
    kwargs["is_causal"] = True
    node.args = tuple(args)
    node.kwargs = kwargs
