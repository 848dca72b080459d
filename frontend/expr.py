"""Capture a one-line PyTorch expression as a module plus example inputs.

    torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))
    torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))

Every `torch.randn(...)`/`torch.rand(...)`/`torch.randint(...)` call becomes an input of the program
(its arguments give the shape and dtype of the example; a check draws integers in the example's
range), and every `nn.X(...)` constructor call becomes a submodule
built once, whose parameters become the program's weights (with its conversions:
`nn.Linear(3, 4).to(torch.bfloat16)` is the bf16 module). What remains is the body of
`forward`, so `torch.export` sees exactly the computation the user wrote.

The expression language is Python's expression syntax restricted (`check_expression`) to what
describes a computation: the names `torch`, `nn`, `F` (torch.nn.functional) and `math`; calls
with positional and keyword arguments; attributes and method calls (not `_private` ones, not
file I/O such as `torch.load`, and no module outside torch, torch.nn, torch.nn.functional,
torch.linalg, torch.special, torch.fft and math); numbers, strings, tuples, lists, indexing and
slicing; arithmetic (`+ - * / // % ** @ << >> & | ^ ~`, `**`/`<<` on tensors) and comparisons.
No builtins, lambdas, comprehensions or assignments, integers below 2^32: `-c` cannot run
arbitrary Python, nor compute for ever.
"""

from __future__ import annotations

import ast
import builtins
import logging
import math
import os
import re
import types
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.flop_counter import FlopCounterMode

from deplo.frontend.errors import FrontendError

INPUT_FACTORIES = (torch.randn, torch.rand, torch.randint)  # randint: indices, targets


# an expression of at most this many matmul/conv FLOPs also runs eagerly when captured (a
# few ms in fp32; fp16 matmuls run at ~0.3 GFLOP/s on a CPU): errors only values show
EAGER_CHECK_FLOPS = 10**8


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
    """The names an expression sees. Its builtins hold only `__import__`: torch's C++ argument
    parser imports modules through the calling frame's builtins (a float `scale=` of
    F.scaled_dot_product_attention); the expression itself cannot name it (no `_` names)."""
    return {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "math": math,
            "__builtins__": {"__import__": builtins.__import__}}


_NODES = (ast.Expression, ast.Call, ast.keyword, ast.Attribute, ast.Name, ast.Constant, ast.BinOp,
          ast.UnaryOp, ast.Compare, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Starred,
          ast.operator, ast.unaryop, ast.cmpop, ast.Load)
_MODULES = {id(m) for m in (torch, torch.nn, torch.nn.functional, torch.linalg, torch.special,
                            torch.fft, math)}
_REFUSED = {"load", "save", "from_file", "tofile", "numpy", "dump", "dumps", "compile", "export",
            "factorial", "comb", "perm"}


def _dotted(node: ast.expr) -> bool:
    """`a.b.c`: names and attributes only (resolving it runs no code of the expression)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def check_expression(tree: ast.Expression) -> None:
    """Refuse anything outside the expression language (the module docstring), naming it."""
    env = _namespace()
    for node in ast.walk(tree):
        what = None
        if not isinstance(node, _NODES):
            what = f"{type(node).__name__.lower()} `{ast.unparse(node)}`"
        elif isinstance(node, ast.Constant) and isinstance(node.value, int) and not (
                abs(node.value) < 2**32):
            raise FrontendError(f"the integer {node.value} is too large for deplo's expression "
                                "language (integers below 2**32, so that no size runs away; "
                                "write a float such as 1e23 for a big scale)")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift)) and not (
                any(isinstance(n, ast.Name) for n in ast.walk(node))):
            what = f"`{ast.unparse(node)}` on numbers (write the number)"  # 9**9**9 never ends
        elif isinstance(node, ast.Name) and (node.id not in env or node.id.startswith("_")) or (
                isinstance(node, ast.Attribute) and (node.attr.startswith("_")
                                                     or node.attr in _REFUSED)):
            what = f"`{ast.unparse(node)}`"
        elif isinstance(node, ast.Attribute) and _dotted(node):
            value = env.get(ast.unparse(node).split(".")[0])
            for name in ast.unparse(node).split(".")[1:]:  # `torch.hub`: a module, not allowed
                value = getattr(value, name, None)
                if isinstance(value, types.ModuleType) and id(value) not in _MODULES:
                    what = f"module `{ast.unparse(node)}`"
        if what:
            hint = ("; for float('inf') / float('nan') write math.inf / math.nan"
                    if what == "`float`" else "")
            raise FrontendError(f"{what} is not part of deplo's expression language (torch, nn, "
                                f"F and math calls, attributes, arithmetic, indexing){hint}")


def capture_expression(source: str, seed: int | None = None) -> CapturedExpr:
    """Parse `source`, pull out inputs and modules, and return a module to export."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as e:
        hint = ""
        if os.path.isdir(source) or re.fullmatch(r"[\w.-]+/[\w.-]+", source.strip()):
            hint = f"; a model goes without -c (deplo run {source})"
        raise FrontendError(f"cannot parse the expression: {e.msg} (column {e.offset})"
                            f"{hint}") from None
    except RecursionError:
        raise FrontendError("cannot parse the expression: nested too deeply") from None
    check_expression(tree)
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
                with torch.device("meta"):  # its size first: torch.randn(10**5, 10**5) is 40 GB
                    _fits(evaluate(node), inputs, ast.unparse(node))
                value = evaluate(node)
                name = f"x{len(inputs)}"
                inputs.append(value)
                input_names.append(name)
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
            made = isinstance(fn, type) and issubclass(fn, torch.nn.Module)
            if made or (isinstance(getattr(fn, "__self__", None), torch.nn.Module)
                        and getattr(fn, "__name__", "") in _MODULE_CONVERSIONS):
                mod = evaluate(node)  # (nn.Linear(3, 4).to(torch.bfloat16): the converted one)
                base = type(mod).__name__.lower()
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
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # (a meta kernel's error is logged: eager's message)
    try:  # shapes first, on fake tensors: a 2048^3 fp16 matmul takes a minute on a CPU
        with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True), \
                FlopCounterMode(display=False) as flops:
            module(*inputs)
        eager = flops.get_total_flops() <= EAGER_CHECK_FLOPS
    except Exception:  # noqa: BLE001 - the user's code may raise anything: eager says what
        eager = True
    finally:
        fake_log.setLevel(level)
    try:  # and eagerly where that is cheap: a value error (an index past its dim) is theirs
        if eager:
            with torch.no_grad():
                module(*inputs)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything
        raise FrontendError(f"cannot evaluate `{source.strip()}`: {type(e).__name__}: {e}") from None
    return CapturedExpr(module, tuple(inputs), input_names, source.strip())


# methods of a module that return it converted: applied when the expression is captured
_MODULE_CONVERSIONS = {"to", "half", "float", "double", "bfloat16", "eval", "train", "cpu",
                       "requires_grad_"}


def _fits(new: torch.Tensor, inputs: list[torch.Tensor], call: str) -> None:
    """The inputs within half the memory available (a run keeps copies: numpy, the reference's,
    the runtime's), or one line naming the call that passes it."""
    from deplo.frontend.models import available_memory

    size = sum(t.numel() * t.element_size() for t in (*inputs, new))
    if (have := available_memory()) is not None and size > have // 2:
        raise FrontendError(f"`{call}`: the expression's inputs reach {size / 1e6:,.0f} MB, more "
                            f"than half the {have / 1e6:,.0f} MB of memory available")


def _rename(tree: ast.Expression, old: str, new: str) -> ast.Expression:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
    return tree
