"""Capture a one-line PyTorch expression as a module plus example inputs.

    torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))
    torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))

Every `torch.randn(...)`/`torch.rand(...)` call becomes an input of the program (its arguments give
the shape and dtype of the example), and every `nn.X(...)` constructor call becomes a submodule
built once, whose parameters become the program's weights. What remains is the body of
`forward`, so `torch.export` sees exactly the computation the user wrote.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import torch

from deplo.frontend.errors import FrontendError

INPUT_FACTORIES = (torch.randn, torch.rand)


@dataclass
class CapturedExpr:
    module: torch.nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    source: str


class _ExprModule(torch.nn.Module):
    """forward(*inputs) evaluates the rewritten expression; submodules are the nn.X(...) calls."""

    def __init__(self, code, input_names: list[str], modules: dict[str, torch.nn.Module], env):
        super().__init__()
        for name, mod in modules.items():
            self.add_module(name, mod)
        self._code = code
        self._input_names = input_names
        self._env = env

    def forward(self, *inputs):
        scope = dict(self._env)
        scope.update(zip(self._input_names, inputs))
        scope.update(self.named_children())
        return eval(self._code, scope)


def _namespace() -> dict:
    import numpy as np

    return {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "np": np, "math": __import__("math")}


def capture_expression(source: str, seed: int | None = None) -> CapturedExpr:
    """Parse `source`, pull out inputs and modules, and return a module to export."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as e:
        raise FrontendError(f"cannot parse the expression: {e.msg} (column {e.offset})") from None
    env = _namespace()
    if seed is not None:
        torch.manual_seed(seed)
    inputs: list[torch.Tensor] = []
    input_names: list[str] = []
    modules: dict[str, torch.nn.Module] = {}

    def evaluate(node: ast.expr):
        try:
            return eval(compile(ast.Expression(node), "<expr>", "eval"), env)
        except Exception as e:  # noqa: BLE001 - the user's expression may raise anything
            raise FrontendError(
                f"cannot evaluate `{ast.unparse(node)}`: {type(e).__name__}: {e}"
            ) from None

    class Rewriter(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call):
            try:
                fn = eval(compile(ast.Expression(node.func), "<expr>", "eval"), env)
            except Exception:  # noqa: BLE001 - the user's code may raise anything
                fn = None
            if fn in INPUT_FACTORIES:
                value = evaluate(node)
                name = f"x{len(inputs)}"
                inputs.append(value)
                input_names.append(name)
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
            if isinstance(fn, type) and issubclass(fn, torch.nn.Module):
                mod = evaluate(node)
                base = fn.__name__.lower()
                name = base if base not in modules else f"{base}{len(modules)}"
                modules[name] = mod
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
            return self.generic_visit(node)

    body = ast.fix_missing_locations(Rewriter().visit(tree))
    if not inputs:
        raise FrontendError("the expression has no inputs: use torch.randn(...) for each input")
    if len(inputs) == 1:
        input_names[0] = "x"
        body = _rename(body, "x0", "x")
    code = compile(body, "<expr>", "eval")
    module = _ExprModule(code, input_names, modules, env).eval()
    try:  # eagerly once, so a shape error reads as the user's error, not an export failure
        with torch.no_grad():
            module(*inputs)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything
        raise FrontendError(f"cannot evaluate `{source.strip()}`: {type(e).__name__}: {e}") from None
    return CapturedExpr(module, tuple(inputs), input_names, source.strip())


def _rename(tree: ast.Expression, old: str, new: str) -> ast.Expression:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
    return tree
