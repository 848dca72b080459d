"""index_put (`x[indices] = v`, `+=`: frontend/aten.py `_index_put`), index_reduce,
masked_scatter, cummax / cummin and logcumsumexp against PyTorch at every level and on the CPU runtime: in-place indexing inside a
forward, indices on non-adjacent dims (x[indices] puts the index first), repeated entries (the
last write wins; accumulate sums), boolean masks, NaN and ties in running extremes, and prefix
sums whose terms span more than float32's range."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import deplo
from deplo.frontend.errors import FrontendError
from deplo.runtime.cpu import cpu_runtime_available

T = torch.tensor
TARGETS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]


class InPlace(torch.nn.Module):
    def forward(self, x, i, v):
        y = x.clone()
        y[x < 0] = 0
        y[i] = v
        y[i, 2] += v[:, 0]
        y[:, 1:3][i] *= 2
        return y


def _nonadjacent(x, i, j, v):
    y = x.clone()
    y[i, :, j] += v  # the index's dims first in y[i, :, j]: [3, 5]; v broadcasts
    return y


def _leading_one(x, v):
    y = x.clone()
    y[T([4, 1])] = v  # (setitem drops v's leading 1s; index_put itself would not)
    return y


CASES = {
    "in_place_module": (InPlace(), lambda: (torch.randn(6, 4), T([0, 3]), torch.randn(2, 4))),
    "repeated_last_wins": (lambda x, v: x.index_put((T([0, 3, 0, -1]),), v),
                           lambda: (torch.randn(6, 4), torch.randn(4, 4))),
    "values_with_a_leading_one": (_leading_one, lambda: (torch.randn(6, 4), torch.randn(1, 2, 4))),
    "accumulate_repeated": (lambda x, v: x.index_put((T([0, 3, 0]), T([[1], [2]])), v, True),
                            lambda: (torch.randn(5, 4, 3), torch.randn(2, 3, 3))),
    "nonadjacent_dims": (_nonadjacent,
                         lambda: (torch.randn(4, 5, 6), T([1, 2, 1]), T([0, 5, 0]),
                                  torch.randn(5))),
    "mask_rows": (lambda x, m, v: x.index_put((m,), v),
                  lambda: (torch.randn(6, 4), T([1, 0, 1, 0, 0, 1]).bool(), torch.randn(4))),
    "bf16_accumulate": (lambda x, v: x.index_put((T([2, 2, 5]),), v, True),
                        lambda: (torch.randn(6, 4).bfloat16(), torch.randn(3, 4).bfloat16())),
    "index_reduce_amax": (lambda x, s: x.index_reduce(1, T([1, 0, 1]), s, "amax",
                                                       include_self=False),
                          lambda: (torch.randn(2, 4), torch.randn(2, 3))),
    "masked_scatter_broadcast": (lambda x, m, s: x.masked_scatter(m, s),
                                 lambda: (torch.randn(3, 1, 5), torch.randn(4, 5) > 0,
                                          torch.randn(70))),
    "cummax_nan_ties": (lambda x: torch.cummax(x, 1),
                        lambda: (T([[1.0, math.nan, 3.0, 0.0], [2.0, 2.0, 1.0, 2.0]]),)),
    "cummin_dim0_int": (lambda x: torch.cummin(x, 0), lambda: (T([[3, 1], [1, 1], [2, 0]]),)),
    "logcumsumexp_wide": (lambda x: torch.logcumsumexp(x, -1),
                          lambda: (T([[-200.0, 0.0, 150.0, -math.inf], [-math.inf, -math.inf,
                                                                        1.0, 2.0]]),)),
}


@pytest.mark.parametrize("target, level", TARGETS, ids=[t[1] or t[0] for t in TARGETS])
@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch(name: str, target: str, level: str | None) -> None:
    if target == "cpu" and not cpu_runtime_available():
        pytest.skip("no CPU runtime")
    fn, make = CASES[name]
    torch.manual_seed(0)
    xs = make()
    want = fn(*xs)
    want = want if isinstance(want, tuple) else (want,)
    compiled = deplo.compile(fn, xs)
    got = compiled.run(list(xs) + list(compiled.program.params), target=target, level=level)
    tol = 1e-2 if xs[0].dtype == torch.bfloat16 else 1e-6
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w.double().numpy(),
                                   atol=tol, rtol=tol)


def test_mask_with_a_value_per_picked_element_is_refused() -> None:
    """x[mask] = v with one value for each element the mask picks: v's shape depends on how
    many it picks, which no static program knows."""
    def put(x, m, v):
        return x.index_put((m,), v)

    xs = (torch.randn(6, 4), T([1, 0, 1, 0, 0, 1]).bool(), torch.randn(3, 4))
    with pytest.raises(FrontendError, match="boolean mask and values whose shape depends"):
        deplo.compile(put, xs).module("torch")
