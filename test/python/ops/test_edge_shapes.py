"""0-d and zero-size tensors at every level (interpreters at torch, tensor and loop IR, and the
`.cu` on the CPU runtime), against PyTorch: results keep their rank, a kernel with nothing to
compute is never emitted (its output is only allocated), an empty reduction is its identity.
Also the Python API on module paths that are not identifiers (nn.Sequential's `0.weight`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.runtime.cpu import cpu_runtime_available

TARGETS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]

CASES = {
    "exp_0d": (torch.exp, [()]),
    "0d_read_twice": (lambda a, b: torch.where(b > 0, a, a * b), [(10, 5), ()]),  # (not staged)
    "add_0d_and_vector": (torch.add, [(), (5,)]),
    "sum_0d_dim0": (lambda x: torch.sum(x, 0), [()]),
    "sum_0d_keepdim": (lambda x: x.sum(-1, keepdim=True), [()]),
    "mean_0d_dim0": (lambda x: torch.mean(x, 0), [()]),
    "amax_0d": (lambda x: x.amax(0), [()]),
    "softmax_0d": (lambda x: torch.softmax(x, 0), [()]),
    "matmul_vectors_0d_result": (torch.matmul, [(5,), (5,)]),
    "exp_empty": (torch.exp, [(1, 0, 3)]),
    "add_empty_broadcast": (torch.add, [(0, 1, 3), (0, 10, 3)]),
    "mm_empty_rows": (torch.mm, [(0, 5), (5, 10)]),
    "mm_empty_k": (torch.mm, [(5, 0), (0, 10)]),
    "sum_over_empty": (lambda x: x.sum(1), [(3, 0)]),
    "mean_over_empty": (lambda x: x.mean(1), [(3, 0)]),  # NaN, as torch
    "sum_all_empty": (lambda x: x.sum(), [(0, 4)]),
    "cat_with_empty": (lambda a, b: torch.cat([a, b], 1) * 2, [(3, 0), (3, 4)]),
    "softmax_empty": (lambda x: torch.softmax(x, -1), [(5, 0, 0)]),
    "linear_empty_batch": (lambda x, w: F.linear(x, w), [(0, 4), (3, 4)]),
}


@pytest.fixture(scope="module")
def compiled() -> dict:
    return {}


@pytest.mark.parametrize("target,level", TARGETS, ids=lambda t: str(t))
@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch(compiled, name: str, target: str, level: str | None) -> None:
    if target == "cpu" and not cpu_runtime_available():
        pytest.skip("no g++ for the CPU runtime")
    if name not in compiled:
        fn, shapes = CASES[name]
        compiled[name] = deplo.compile(fn, [torch.randn(s) for s in shapes])
    result = compiled[name].check(target=target, level=level, seed=1)
    assert result.ok, result.line()


def test_zero_size_kernels_are_not_emitted() -> None:
    """exp of a (1, 0, 3) tensor allocates its result and launches nothing; an empty K gives
    zeros from a kernel with no reduce loop."""
    loop_ir = deplo.compile(torch.exp, [torch.randn(1, 0, 3)]).text("loop")
    assert "loop.kernel" not in loop_ir and "memref.alloc() : memref<1x0x3xf32>" in loop_ir
    loop_ir = deplo.compile(torch.mm, [torch.randn(5, 0), torch.randn(0, 10)]).text("loop")
    assert "reduce" not in loop_ir and loop_ir.count("loop.kernel") == 1


def test_results_keep_their_rank() -> None:
    c = deplo.compile(lambda x: torch.exp(x) * 2, [torch.randn(())])
    for target, level in TARGETS:
        (out,) = c.run(target=target, level=level, seed=0)
        assert np.shape(out) == ()


def test_sequential_parameter_names() -> None:
    """`0.weight` is no SSA name: the hint is sanitized, the parameter list keeps the path."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    c = deplo.compile(m, [torch.randn(2, 4)])
    assert c.program.param_names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert "%_0.weight" in c.text("torch")
    assert c.check(target="interp", level="torch").ok
