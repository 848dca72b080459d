"""Special functions built from elementwise ops (frontend/special.py) and searchsorted, at their
edges — poles, infinities, NaN, +-0, arguments near the recurrence's and the polynomials'
switch points — and over a dense range, against PyTorch at every level: the numpy interpreters
at torch, tensor and loop IR, and the emitted .cu on the CPU runtime."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import deplo
from deplo.frontend.errors import FrontendError

LEVELS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]
NAN, INF = float("nan"), float("inf")


def _with_range(edges: list[float], lo: float, hi: float) -> torch.Tensor:
    """The edge points, then 200 points spread over [lo, hi] (none on an edge by accident)."""
    dense = torch.linspace(lo, hi, 200) + 1e-3
    return torch.cat([torch.tensor(edges), dense]).reshape(-1, 8)


CASES = {
    "lgamma": (torch.lgamma, _with_range(
        [0.0, -0.0, -1.0, -2.5, 0.5, 1e-30, 3e38, -1e30, -INF, INF, NAN, 11.999, 12.0, 12.001,
         -7.25, 1e-3], -9.0, 30.0)),
    "digamma": (torch.digamma, _with_range(
        [0.0, -0.0, -1.0, -2.5, 1.4616321, 1e-30, 100.0, -100.5, -INF, INF, NAN, 11.999, 12.0,
         12.001, -7.25, 1e-3], -9.0, 30.0)),
    "erfinv": (torch.erfinv, _with_range(
        [1.0, -1.0, 0.999999, -0.9999, 1.5, 0.0, -0.0, NAN, 0.9856, -0.9857, 1e-20, 0.5, -INF,
         INF, -1.0001, 0.3], -0.9999, 0.9999)),
    "erfc": (torch.special.erfc, _with_range(
        [0.0, -0.0, 1.0, 5.0, 9.0, 9.5, 30.0, -3.0, -INF, INF, NAN, 0.5, 1e-20, -1e-20, 4.0,
         -30.0], -6.0, 9.0)),
}


@pytest.mark.parametrize("target,level", LEVELS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_function_edges(name, target, level) -> None:
    fn, x = CASES[name]
    c = deplo.compile(fn, [x])
    (got,) = c.run([x.numpy()], target=target, level=level)
    ref = fn(x).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite], ref[~finite])  # +-inf, with its sign
    # within float32's rounding of the float64 value (PyTorch's own float32 digamma is 1e-4
    # off near its roots); erfc past 9 is a denormal, held absolutely there
    exact = fn(x.double()).float().numpy()
    np.testing.assert_allclose(got[finite], exact[finite], rtol=2e-6, atol=1e-37)


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_functions_in_bf16_compute_in_float(name) -> None:
    fn, x = CASES[name]
    x = x[torch.isfinite(x).all(1)].bfloat16()
    c = deplo.compile(fn, [x])
    (got,) = c.run([x.float().numpy()], target="interp", level="loop")
    ref = fn(x).float().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2, equal_nan=True)


@pytest.mark.parametrize("name,fn", [("erfc", torch.special.erfc), ("erfinv", torch.erfinv)])
def test_float64_erfc_erfinv_are_refused_with_the_reason(name, fn) -> None:
    with pytest.raises(FrontendError, match=f"{name}.default' in float64: deplo's {name} is "
                                            "accurate to float32"):
        deplo.compile(fn, [torch.rand(4, dtype=torch.float64)])


@pytest.mark.parametrize("name,fn,args", [
    ("ties_right", lambda s, v: torch.searchsorted(s, v, right=True) * 100
     + torch.searchsorted(s, v), [torch.tensor([1.0, 2.0, 2.0, 2.0, 5.0]),
                                 torch.tensor([[2.0, 0.0, 5.0], [6.0, 1.0, 2.5]])]),
    ("rows_side_int32", lambda s, v: torch.searchsorted(s, v, side="right", out_int32=True),
     [torch.sort(torch.randn(3, 7)).values, torch.randn(3, 4)]),
    ("sorter", lambda s, v, o: torch.searchsorted(s, v, sorter=o),
     [torch.tensor([5.0, 1.0, 3.0, 2.0]), torch.tensor([0.5, 2.0, 2.5, 9.0]),
      torch.tensor([1, 3, 2, 0])]),
    ("scalar_value", lambda s: torch.searchsorted(s, 2.5), [torch.arange(6.0)]),
    ("nan_values_go_last", lambda s, v: torch.searchsorted(s, v) * 10
     + torch.searchsorted(s, v, right=True), [torch.arange(4.0),
                                              torch.tensor([NAN, 1.0, 5.0, -1.0, INF])]),
    ("nan_entries_below_what_no_number_reaches", lambda s, v: torch.searchsorted(s, v),
     [torch.tensor([0.0, 1.0, NAN]), torch.tensor([5.0, 0.5, INF])]),
    ("integer_sequence_float_values", lambda s, v: torch.searchsorted(s, v) * 10
     + torch.searchsorted(s, 3.5), [torch.tensor([1, 3, 3, 7, 9]), torch.tensor([0.5, 3.0, 3.5])]),
])
def test_searchsorted(name, fn, args) -> None:
    c = deplo.compile(fn, args)
    ref = fn(*args).numpy()
    for target, level in LEVELS:
        (got,) = c.run([a.numpy() for a in args], target=target, level=level)
        assert got.dtype == ref.dtype and np.array_equal(got, ref), (target, level, got, ref)
