"""Column reductions (`x.sum(0)`: the reduced coordinate is a row's stride, the outputs are
consecutive addresses) split by loop-split-reductions into slices of a few rows: a thread a
column over its slice (coalesced, the planner's pointwise plan), the partials [slices, outputs]
reduced by a second launch. Before, a block shared each column and each of its threads read a
sector for one element (the model, H100: [4096, 4096].mean(0) 183 -> 32 us)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import deplo
from deplo.dialects import loop


def _kernels(c) -> dict[str, loop.KernelOp]:
    return {k.sym_name.data: k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)}


@pytest.mark.parametrize("fn,shape,dtype,slices", [
    (lambda x: x.sum(0), (1030, 2048), torch.float32, 103),  # 103 slices of 10 rows
    (lambda x: x.mean(0) * 2, (8192, 256), torch.float32, 256),
    (lambda x: torch.amax(x, 0), (16384, 256), torch.bfloat16, 512),
    (lambda x: x.sum((0, 1)), (32, 128, 512), torch.float32, 128),  # rows through a map
    (lambda x: x.sum(1), (8, 1024, 512), torch.float16, 32),  # a batch of columns
], ids=["sum", "mean-epilogue", "amax-bf16", "two-dims", "middle-f16"])
def test_long_columns_are_split_into_slices(fn, shape, dtype, slices) -> None:
    c = deplo.compile(fn, [torch.randn(*shape, dtype=dtype)])
    kernels = _kernels(c)
    (part,) = [k for n, k in kernels.items() if n.endswith("_part")]
    assert part.body.block.args[-1].type.get_shape()[0] == slices
    plans = {p["name"]: p["kind"] for p in c.plans()["kernels"].values()}
    assert plans[part.sym_name.data] == "pointwise", plans
    result = c.check(seed=11)
    assert result.ok, result.line()


def test_split_column_argmax_keeps_the_first_index() -> None:
    """Slices taken in order by the strictly-better-or-NaN select: ties in two slices, NaN in
    two slices, a column of -inf, the extreme in the last row."""
    x = torch.randn(4096, 512)
    x[[5, 1500], 0] = 9.0
    x[[700, 40], 1] = float("nan")
    x[:, 2] = float("-inf")
    x[2047, 3] = 50.0
    c = deplo.compile(lambda x: x.argmax(0), [x])
    assert any(n.endswith("_part") for n in _kernels(c))
    (got,) = c.executable("cpu").run([x.numpy()])
    np.testing.assert_array_equal(got, x.argmax(0).numpy())


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x.sum(0), (2048, 64)),  # 512 KB: the second launch costs more than it saves
    (lambda x: x.sum(0), (1024, 1024)),  # 4 MB: likewise
    (lambda x: x.sum(0), (36, 50000)),  # 2 slices of 18 rows: too few
    (lambda x: x.sum(0), (100000, 3)),  # rows of 3: nearly contiguous, a row split
    (lambda x: x.sum(0), (1031, 2048)),  # a prime count of rows: no slices divide it
    (lambda x: x.sum(-1), (1024, 1024)),  # a row reduction
], ids=["small", "4-mb", "two-slices", "narrow", "prime-rows", "rows"])
def test_what_stays_unsplit_as_columns(fn, shape) -> None:
    x = torch.randn(*shape)
    c = deplo.compile(fn, [x])
    out = list(fn(x).shape)
    parts = [k for n, k in _kernels(c).items() if n.endswith("_part")]
    assert not any(p.body.block.args[-1].type.get_shape()[1:] == out for p in parts)
    assert c.check(seed=12).ok


def test_columns_enough_for_a_thread_each_are_pointwise() -> None:
    """135168 columns of 64 rows (no split: the columns alone fill the SMs) go a thread a
    column, not a block a column (the model, H100: [64, 262144].sum(0) 184 -> 26 us)."""
    x = torch.randn(64, 132 * 1024)
    c = deplo.compile(lambda x: x.sum(0) * 0.5, [x])
    (plan,) = c.plans()["kernels"].values()
    assert plan["kind"] == "pointwise"
    assert c.check(seed=13).ok


@pytest.mark.parametrize("fn,shape,dtype", [
    (lambda x: x.sum(0, keepdim=True), (4096, 512), torch.float32),
    (lambda x: x.mean(1, keepdim=True), (8, 1024, 512), torch.bfloat16),
    (lambda x: x.argmin(0, keepdim=True), (4096, 512), torch.float32),
    (lambda x: x.sum(1, keepdim=True), (4, 262144), torch.float32),  # a row split
    (lambda x: torch.logsumexp(x, 1, keepdim=True), (4, 262144), torch.float16),  # fission
    (lambda x: x.amax((0, 1), keepdim=True), (1024, 2048), torch.float32),  # two kept dims
], ids=["column-sum", "middle-mean-bf16", "column-argmin", "row-sum", "logsumexp-f16",
        "amax-all"])
def test_keepdim_splits_like_without_it(fn, shape, dtype) -> None:
    """keepdim's kept dims are loops of one iteration after the reduction: inlined, they no
    longer keep the reduction one block's (the model, H100: [4, 1048576].sum(1, keepdim=True)
    417 -> 12 us, [4096, 1000].sum(0, keepdim=True) 21.9 -> 12.7 us)."""
    x = torch.randn(*shape, dtype=dtype)
    c = deplo.compile(fn, [x])
    assert any(n.endswith("_part") for n in _kernels(c))
    for target, level in ("cpu", None), ("interp", "loop"):
        result = c.check(target=target, level=level, seed=14)
        assert result.ok, result.line()
