"""topk, sort and argsort rank by counting (frontend/aten.py `_ranked`): exact against PyTorch
at every level and on the CPU runtime, NaN placed as PyTorch places it (greatest), ties kept in
index order (a stable sort), integers, half precision, a dim other than the last."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import deplo
from deplo.frontend.errors import FrontendError
from deplo.runtime.cpu import cpu_runtime_available

NAN = float("nan")
TIES = torch.tensor([[1.0, 3.0, 1.0, NAN, -2.0, 3.0, NAN, -0.0, 0.0]])

CASES = {
    "topk": (lambda x: torch.topk(x, 3), lambda: torch.randn(4, 9)),
    "topk_smallest_dim0": (lambda x: torch.topk(x, 2, dim=0, largest=False),
                           lambda: torch.randn(5, 3, 2)),
    "sort_descending_dim1": (lambda x: torch.sort(x, dim=1, descending=True),
                             lambda: torch.randn(3, 7, 2)),
    "sort_stable_nan_ties": (lambda x: torch.sort(x, stable=True), lambda: TIES),
    "sort_descending_stable_nan_ties": (
        lambda x: torch.sort(x, descending=True, stable=True), lambda: TIES),
    "argsort": (lambda x: torch.argsort(x, dim=-1), lambda: torch.randn(2, 33)),
    "topk_bf16_router": (lambda x: torch.topk(x.softmax(-1), 2),
                         lambda: torch.randn(6, 8).bfloat16()),
    "sort_int": (lambda x: torch.sort(x, stable=True), lambda: torch.randint(-3, 3, (4, 10))),
    "topk_0d": (lambda x: torch.topk(x, 1), lambda: torch.randn(())),
}
TARGETS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]


@pytest.mark.parametrize("target, level", TARGETS, ids=[t[1] or t[0] for t in TARGETS])
@pytest.mark.parametrize("name", CASES)
def test_ranked_ops_match_pytorch_exactly(name: str, target: str, level: str | None) -> None:
    if target == "cpu" and not cpu_runtime_available():
        pytest.skip("no CPU runtime")
    fn, make = CASES[name]
    torch.manual_seed(0)
    x = make()
    ref = fn(x)
    ref = ref if isinstance(ref, tuple) else (ref,)
    outs = deplo.compile(fn, [x]).run([x], target=target, level=level)
    for ours, theirs in zip(outs, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(ours, dtype=np.float64),
                                      theirs.double().numpy())


def test_a_sort_longer_than_the_limit_is_refused() -> None:
    with pytest.raises(FrontendError, match=r"'aten.topk.default' over 5000 elements "
                                            r"\(deplo ranks by counting.*at most 4096\) at "):
        deplo.compile(lambda x: torch.topk(x, 5), [torch.randn(2, 5000)])


@pytest.mark.parametrize("fn", [lambda x: torch.sort(x, 1).indices,
                                lambda x: torch.topk(x, 5, 1, largest=False),
                                lambda x: x.argsort(0, descending=True)])
def test_check_ranks_ties_as_deplo_does(fn) -> None:
    """`--check` on keys with many ties: PyTorch leaves their order unspecified (its CPU sort
    is not stable past 16 elements), so the reference ranks them stably, in index order, as
    deplo does; a check of such a program passes instead of failing on equal keys' indices."""
    x = torch.randint(0, 4, (4, 64)).float()
    compiled = deplo.compile(fn, [x])
    assert compiled.check().ok
    ours = compiled.run([x])
    ref = compiled.program.reference([x.numpy()])
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(a, b)
