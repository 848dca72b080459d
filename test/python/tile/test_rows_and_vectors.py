"""Rows the grid used to give one thread: an online softmax row shared by a block's threads
(its (m, l) pair combined: max, then each share's l rescaled), masked scores (-inf) at the start
of a row or filling a thread's whole share, and matrix-vector products (decoding's
projections) as row reductions. Checked on the CPU runtime against PyTorch.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import loop
from deplo.runtime.cpu import cpu_runtime_available

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")


def _kind(c) -> str:
    (plan,) = c.plans()["kernels"].values()
    return plan["kind"]


def _masked(rows: int, n: int) -> torch.Tensor:
    x = torch.randn(rows, n)
    x[:, n // 2:] = float("-inf")  # whole shares of the threads masked
    x[0, :5] = float("-inf")  # a row whose first scores are masked
    return x


def _run(c, x: torch.Tensor) -> np.ndarray:
    (got,) = c.executable("cpu").run([x.numpy()])
    return got


@pytest.mark.parametrize("kind", ["row_reduce", "pointwise"])
def test_masked_softmax_rows(kind) -> None:
    """-inf scores add exp(-inf - m) = 0 wherever they are (the running max starts at the
    lowest float, not -inf: exp(-inf + inf) was NaN), shared or one thread a row."""
    fn = lambda x: torch.softmax(x, -1)  # noqa: E731
    x = _masked(4, 2048)
    c = deplo.compile(fn, [x])
    key = next(iter(c.plans()["kernels"]))
    pinned = json.dumps({"format": "deplo-plans/1", "kernels": {key: {"kind": kind, "knobs": {}}}})
    c = deplo.compile(fn, [x], schedule=pinned)
    assert _kind(c) == kind
    got = _run(c, x)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, fn(x).numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn,shape", [
    (lambda x: torch.softmax(x, -1), (32, 2048)),
    (lambda x: torch.softmax(x, -1), (1, 8, 1, 1500)),
    (lambda x: torch.logsumexp(x, -1), (16, 1200)),
], ids=["softmax", "softmax-unit-dims", "logsumexp"])
def test_online_rows_are_shared(fn, shape) -> None:
    c = deplo.compile(fn, [torch.randn(*shape)])
    assert _kind(c) == "row_reduce"
    assert c.check(seed=1).ok


def test_attention_with_leading_masked_keys() -> None:
    """Left padding as an additive -inf mask: the flash row's first key steps are all masked
    (NaN before the running max started at the lowest float)."""
    q, k, v = (torch.randn(1, 2, 64, 16) for _ in range(3))
    mask = torch.zeros(1, 1, 64, 64)
    mask[..., :40] = float("-inf")
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    c = deplo.compile(fn, [q, k, v, mask])
    (got,) = c.executable("cpu").run([t.numpy() for t in (q, k, v, mask)])
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, fn(q, k, v, mask).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m,n", [(1, 256), (1, 2048), (2, 256), (16, 32)])
def test_matrix_vector_products_are_row_reductions(m, n) -> None:
    """One token through a projection: a block's threads share each output's dot product
    (each weight row read once, coalesced), not a 2-D tile walking all of K."""
    c = deplo.compile(lambda x, w: F.linear(x, w), [torch.randn(m, 2048), torch.randn(n, 2048)])
    assert _kind(c) == "row_reduce"
    assert c.check(seed=2).ok


@pytest.mark.parametrize("fn,shape,dtype", [
    (lambda x: x.sum((1, 2)), (16, 64, 32), torch.float32),
    (lambda x: x.mean((0, 2, 3)), (8, 64, 16, 16), torch.float32),
    (lambda x: x.var((0, 2, 3), keepdim=True), (4, 24, 6, 10), torch.float32),
    (lambda x: torch.amax(x, (0, 2)), (16, 64, 32), torch.bfloat16),
    (lambda x: x.sum((0, 1, 3)), (3, 5, 7, 9), torch.float16),
    (lambda x: F.layer_norm(x, x.shape[-2:]), (6, 12, 20), torch.float32),
], ids=["sum-trailing", "batchnorm-mean", "var-keepdim", "amax-0-2-bf16", "sum-odd-f16",
        "layernorm-2d"])
def test_reductions_over_several_dims_are_shared(fn, shape, dtype) -> None:
    """A reduction over several dims is one reduce loop after loop-flatten-reductions, so a
    block's threads share it (it was one thread walking the whole nest: BatchNorm's statistic,
    the model, 29 -> 4 us)."""
    c = deplo.compile(fn, [torch.randn(*shape, dtype=dtype)])
    kinds = {p["kind"] for p in c.plans()["kernels"].values()}
    assert kinds == {"row_reduce"}, kinds
    result = c.check(seed=3)
    assert result.ok, result.line()


def test_batchnorm_training_statistics() -> None:
    """batch_norm in training mode: mean and biased variance over (N, H, W) per channel, each a
    reduction over three dims shared by a block's threads."""
    w, b = torch.randn(24), torch.randn(24)
    fn = lambda x: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    c = deplo.compile(fn, [torch.randn(4, 24, 6, 10)])
    assert "row_reduce" in {p["kind"] for p in c.plans()["kernels"].values()}
    assert c.check(seed=2).ok


def _ties(rows: int, n: int, dtype=torch.float32) -> torch.Tensor:
    """Rows whose extreme repeats across threads' shares, a NaN row, an all -inf row."""
    x = torch.randn(rows, n).to(dtype)
    x[0, [700, 3, 300]] = 9.0  # the first is index 3 (thread 3's share, not thread 0's)
    x[1, [5, 600]] = -9.0
    x[2, [40, 900]] = float("nan")
    x[3] = float("-inf")
    x[4, -1] = 50.0  # the last element, in the last thread's share
    return x


@pytest.mark.parametrize("fn", [
    lambda x: x.argmax(-1),
    lambda x: x.argmin(-1, keepdim=True),
    lambda x: torch.max(x, -1),
    lambda x: torch.min(x, 1),
], ids=["argmax", "argmin-keepdim", "max-dim", "min-dim"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_arg_reductions_are_shared_and_keep_the_first_index(fn, dtype) -> None:
    """argmax/argmin over a row shared by a block's threads (each thread's first extreme, then
    the extreme, then the least index holding it; NaN the largest): ties, NaN and -inf rows
    give PyTorch's index (it was one thread walking the row: the model, 15.9 -> 3.7 us)."""
    x = _ties(6, 1000, dtype)
    c = deplo.compile(fn, [x])
    assert {p["kind"] for p in c.plans()["kernels"].values()} == {"row_reduce"}
    got = c.executable("cpu").run([x.float().numpy()])
    ref = fn(x)
    for g, r in zip(got, ref if isinstance(ref, tuple) else (ref,), strict=True):
        np.testing.assert_array_equal(g, r.float().numpy() if r.is_floating_point() else r.numpy())


@pytest.mark.parametrize("fn,shape,dtype,slices", [
    (lambda x: x.sum() * 2, (40000,), torch.float32, 16),
    (lambda x: x.mean(), (64, 1024), torch.float32, 32),  # flattened first, then split
    (lambda x: torch.amax(x, -1), (3, 131072), torch.bfloat16, 64),
    (lambda x: torch.linalg.vector_norm(x), (2, 65536), torch.float32, 64),
    (lambda x: F.mse_loss(x, torch.zeros_like(x)), (128, 512), torch.float16, 32),
    (lambda x: x.sum() + 1, (40009,), torch.float32, 16),  # prime: 9 past the slices
], ids=["sum", "mean-2d", "amax-rows-bf16", "norm", "mse-f16", "sum-prime"])
def test_long_reductions_over_few_outputs_are_split(fn, shape, dtype, slices) -> None:
    """loop-split-reductions: partials over `slices` rows of 2048+ elements each (a second
    launch reduces them), so a long reduction is not one block's (the model, x.sum() of 4M
    floats: 1581 -> 12.6 us)."""
    c = deplo.compile(fn, [torch.randn(*shape, dtype=dtype)])
    (part,) = [k for k in c.module("loop").walk() if getattr(k, "sym_name", None) is not None
               and k.sym_name.data.endswith("_part")]
    assert part.body.block.args[-1].type.get_shape()[-1] == slices
    plans = {p["name"]: p["kind"] for p in c.plans()["kernels"].values()}
    assert plans[part.sym_name.data] == "row_reduce", plans
    result = c.check(seed=4)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=5).ok


@pytest.mark.parametrize("fn,shape,dtype,launches", [
    (lambda x: torch.logsumexp(x, -1), (2, 262144), torch.float32, 4),
    (lambda x: torch.softmax(x, -1), (3, 32768), torch.float32, 2),
    (lambda x: torch.log_softmax(x * 30, -1), (1, 65536), torch.bfloat16, 2),
    (lambda x: F.layer_norm(x, (65536,)), (2, 65536), torch.float32, 4),
    (lambda x: F.rms_norm(x, (65536,)), (1, 65536), torch.float16, 2),
    (lambda x: torch.var(x, -1), (2, 262144), torch.float32, 4),
    (lambda x: F.cosine_similarity(x[:, :262144], x[:, 262144:]), (2, 524288), torch.float32, 4),
    # the scaling a nest over [64, 32, 32], flattened to one loop the slices cut
    (lambda x: F.layer_norm(x, (64, 32, 32)), (3, 64, 32, 32), torch.float32, 4),
    (lambda x: F.layer_norm(x, (64, 64, 64)), (2, 64, 64, 64), torch.bfloat16, 4),
    # 16 x 6151: whole slices for the normalization (32 would leave a tail it cannot take)
    (lambda x: torch.softmax(x, -1), (2, 98416), torch.float32, 2),
], ids=["logsumexp", "softmax", "log-softmax-bf16", "layer-norm", "rms-norm-f16", "var",
        "cosine-two-sums", "layer-norm-3d", "layer-norm-3d-bf16", "softmax-16-slices"])
def test_long_rows_of_dependent_reductions_are_split(fn, shape, dtype, launches) -> None:
    """A long row with a max then a sum of exp (logsumexp), a mean then squares (var), an
    online softmax pair, or a loop over the row after them (softmax's normalization, a norm's
    scaling): each reduction split, the epilogue a slice a block; none is one block's row
    (the model, softmax of [2, 152064]: 123 -> 9.5 us)."""
    c = deplo.compile(fn, [torch.randn(*shape, dtype=dtype)])
    kernels = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)]
    assert len(kernels) == launches, [k.sym_name.data for k in kernels]
    assert sum(k.sym_name.data.endswith("_part") for k in kernels) == launches // 2
    result = c.check(seed=7)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=8).ok


@pytest.mark.parametrize("fn,shape,dtype", [
    (lambda x: x.cumsum(-1), (2, 20000), torch.float32),
    (lambda x: x.cumsum(0) * 2 + 1, (16384,), torch.float32),
    (lambda x: torch.cumsum(x, 1), (3, 16384, 1), torch.float16),
    (lambda x: x.cumsum(-1), (40, 4096), torch.float32),
    (lambda x: x.cumsum(0), (16384, 3), torch.float32),
    (lambda x: x.cumsum(1), (2, 16384, 2), torch.bfloat16),
    (lambda x: x.cumsum(-1) * 3, (2, 16411), torch.float32),
    (lambda x: x.cumsum(0), (20011, 2), torch.float16),
    (lambda x: (x * 100).long().cumsum(-1), (20011,), torch.float32),
    (lambda x: (x > 0).cumsum(-1, dtype=torch.int32), (2, 16384), torch.float32),
    (lambda x: (1 + x * 1e-3).cumprod(-1), (2, 16411), torch.float32),
    (lambda x: x.sign().long().cumprod(0), (16384,), torch.float32),
], ids=["rows", "1-d-epilogue", "f16", "many-rows", "first-dim", "middle-dim-bf16",
        "no-divisor-tail", "no-divisor-first-dim-f16", "int64", "bool-to-int32", "cumprod",
        "int-cumprod"])
def test_long_scans_are_chunked(fn, shape, dtype) -> None:
    """loop-chunk-scans: a long cumsum is chunk sums, their exclusive prefix and each output's
    offset plus its masked sum within the chunk, not a masked sum of the whole row per output
    (the model, [2, 100000]: 408x its roofline -> 9.7x); a row with no divisor to chunk by
    (16411 = 512 x 32 + 27) adds a tail kernel; a cumprod is chunk products the same way."""
    c = deplo.compile(fn, [torch.randn(*shape, dtype=dtype)])
    names = {k.sym_name.data for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)}
    assert any(n.endswith("_part") for n in names) and any(n.endswith("_offsets") for n in names)
    assert any(n.endswith("_tail") for n in names) == (max(shape) % 16 != 0)
    result = c.check(seed=9)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=10).ok


def test_a_chunked_scans_outputs_take_a_thread_each() -> None:
    """The outputs of a chunked scan (2^18 in chunks of 64: every SM's warps busy) share their
    chunk's reads across a warp: a thread each (pointwise), not a block each sharing its chunk
    (the model, [4, 10^6]: 418 -> 50 us, the scan 48x -> 8.8x its roofline)."""
    c = deplo.compile(lambda x: x.cumsum(-1), [torch.randn(2**18)])
    kinds = {p["name"]: p["kind"] for p in c.plans()["kernels"].values()}
    assert kinds["cumsum"] == "pointwise", kinds
    assert c.check(seed=3).ok


@pytest.mark.parametrize("fn,width,kind", [
    (lambda x: torch.softmax(x, -1), 32, "row_reduce"),
    (lambda x: F.layer_norm(x, (x.shape[-1],)), 16, "row_reduce"),
    (lambda x: torch.softmax(x, -1), 8, "pointwise"),
    (lambda x: x.sum(-1), 32, "pointwise"),
], ids=["softmax-32", "layer_norm-16", "softmax-8", "sum-32"])
def test_short_rows_then_written_take_a_warp(fn, width, kind) -> None:
    """A short row (16 to 63) reduced and then written (softmax, layer_norm) is shared by a
    warp: a pointwise plan's threads over the written row each redid its reductions (the model,
    softmax of [65536, 32]: 20.3 -> 9.1 us). Rows of 8, and rows only reduced, stay pointwise."""
    c = deplo.compile(fn, [torch.randn(300, width)])
    assert _kind(c) == kind
    assert c.check(seed=4).ok


def test_split_softmax_rows_of_minus_inf() -> None:
    """A slice of -inf only (a mask) has l = 0 and weighs nothing; a row of -inf only is NaN
    as PyTorch's."""
    x = torch.randn(2, 16384)
    x[0, :4096] = float("-inf")
    x[1, :] = float("-inf")
    c = deplo.compile(lambda x: torch.softmax(x, -1), [x])
    got = _run(c, x)
    ref = torch.softmax(x, -1).numpy()
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-5, atol=1e-12)
    assert np.isnan(got[1]).all() and np.isnan(ref[1]).all()


def test_split_reductions_propagate_nan() -> None:
    """A NaN in one slice reaches the max (NaN-propagating partials and their max)."""
    x = torch.randn(2, 16384)
    x[1, 9000] = float("nan")
    c = deplo.compile(lambda x: torch.amax(x, -1), [x])
    got = _run(c, x)
    assert np.isnan(got[1]) and got[0] == x[0].max().item()


@pytest.mark.parametrize("fn", [lambda x: x.sum(-1), lambda x: x.amax(-1)], ids=["sum", "amax"])
def test_batches_of_rows_are_row_reductions(fn) -> None:
    """Rows [4, 16] (a batch of sequences) are shared by a block's threads like rows [64]: the
    planner preferred a thread a row where two free loops held the reduction."""
    c = deplo.compile(fn, [torch.randn(4, 16, 512)])
    assert _kind(c) == "row_reduce"
    assert c.check(seed=6).ok


@pytest.mark.parametrize("fn", [
    lambda x: x.argmax(-1), lambda x: x.argmin(-1), lambda x: torch.max(x, -1),
], ids=["argmax", "argmin", "max-dim"])
@pytest.mark.parametrize("target,level", [("cpu", None), ("interp", "loop")])
def test_split_arg_reductions_keep_the_first_index(fn, target, level) -> None:
    """argmax over long rows in slices of 2048: each slice's first extreme and its global index,
    then the slices in order (strictly better, or NaN, replaces). Rows: ties in two slices, a
    NaN in a later slice than another NaN, all -inf, the extreme in the last slice, and an
    extreme at a slice's first element (the vocabulary argmax, the model: 63 -> 8.3 us)."""
    x = torch.randn(6, 65536)
    x[0, 100] = x[0, 9000] = 9.0  # ties in two slices: the first
    x[0, 12000] = -9.0
    x[1, 15000] = x[1, 5000] = float("nan")  # two NaNs: the first
    x[2] = float("-inf")  # none better than the init: index 0
    x[3, 65535] = 50.0
    x[3, 0] = -50.0
    x[4, 2048] = 50.0  # a slice's first element
    x[4, 4095] = -50.0
    c = deplo.compile(fn, [x])
    kinds = {p["name"]: p["kind"] for p in c.plans()["kernels"].values()}
    parts = {k for n, k in kinds.items() if n.endswith("_part")}
    assert parts == {"row_reduce"}, kinds
    got = c.run([x.numpy()], target=target, level=level)
    ref = fn(x)
    for g, r in zip(got, ref if isinstance(ref, tuple) else (ref,), strict=True):
        np.testing.assert_array_equal(g, r.numpy())


@pytest.mark.parametrize("target,level", [("cpu", None), ("interp", "loop")])
def test_the_elements_past_whole_slices_come_last(target, level) -> None:
    """A row of 65539 (prime): 32 slices of 2048, then 3 elements after the partials. An
    extreme tied between a slice and the tail keeps the slice's index; a NaN in the tail wins;
    the tail's own extreme and sum count."""
    x = torch.randn(3, 65539)
    x[0, 7] = x[0, 65537] = 9.0
    x[1, 65538] = float("nan")
    x[2, 65536] = 50.0
    c = deplo.compile(lambda x: (x.argmax(-1), x.amax(-1), x.sum(-1)), [x])
    assert any(k.sym_name.data.endswith("_part") for k in c.module("loop").walk()
               if isinstance(k, loop.KernelOp))
    (i, m, total) = c.run([x.numpy()], target=target, level=level)
    np.testing.assert_array_equal(i, [7, 65538, 65536])
    np.testing.assert_array_equal(m, x.amax(-1).numpy())
    np.testing.assert_allclose(total[[0, 2]], x.sum(-1).numpy()[[0, 2]], rtol=1e-5, atol=1e-3)


def test_one_input_reduced_over_trailing_dims_is_no_matmul() -> None:
    """`x.mean((2, 3))` has a matmul's loops (two free, one reduce) but one load: nothing to
    tile. As a matmul it was 8 blocks (the model, [8, 512, 7, 7]: 26 -> 6.1 us)."""
    c = deplo.compile(lambda x: x.mean((2, 3)), [torch.randn(8, 64, 7, 7)])
    assert _kind(c) != "matmul"
    assert c.check(seed=3).ok


@pytest.mark.parametrize("shapes", [((1, 4096), (4096, 32)), ((8, 4, 4096), (8, 4096, 1))],
                         ids=["vector-times-kn", "batched-columns"])
def test_few_outputs_a_row_reduction_takes_stay_rows(shapes) -> None:
    """Few outputs over a long K split into matmul tiles only where no row reduction takes
    them (the model, [1, 4096] @ [4096, 32]: 4.3 us as rows, 14.2 split)."""
    c = deplo.compile(lambda a, b: a @ b, [torch.randn(*s) for s in shapes])
    assert _kind(c) != "matmul"
    assert c.check(seed=4).ok


@pytest.mark.parametrize("fn,shape,launches", [
    (lambda x: x.sum(-1), (64, 16384), 1),
    (lambda x: torch.softmax(x, -1), (64, 16384), 1),
    (lambda x: torch.argmax(x, -1), (1, 16384), 1),
    (lambda x: F.group_norm(x, 8), (8, 64, 32, 32), 3),
    (lambda x: x.sum(-1), (8, 65536), 2),
], ids=["sum-64-rows", "softmax-64-rows", "argmax-one-row", "group-norm", "sum-8-long-rows"])
def test_rows_one_block_streams_faster_are_not_split(fn, shape, launches) -> None:
    """loop-split-reductions weighs a row on one block (its bytes at what one SM's warps keep
    in flight, 16-byte accesses) against the split's launches: 64 rows of 64 KB, or one of
    64 KB, stay one kernel (the model, [64, 16384].sum(1): 4.8 us, 7.9 split; group_norm of 8
    groups over [8, 64, 32, 32] three loop kernels, two launches, 9.2 us, was seven and five,
    19.8); 8 rows of 256 KB split."""
    x = torch.randn(*shape)
    c = deplo.compile(fn, [x])
    kernels = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)]
    assert len(kernels) == launches, [k.sym_name.data for k in kernels]
    assert c.check(seed=11).ok


@pytest.mark.parametrize("fn,shape,dtype,width", [
    (lambda x: x.sum(-1), (8, 4096), torch.float32, "kc_ld128"),
    (lambda x: F.rms_norm(x, (2048,)), (8, 2048), torch.bfloat16, "kc_ld128"),
    (lambda x: torch.softmax(x, -1), (8, 1000), torch.float32, "kc_st128"),
    (lambda x: x.argmax(-1), (8, 4096), torch.float32, "kc_ld128"),
], ids=["sum", "rms-norm-bf16", "softmax-store", "argmax"])
def test_rows_are_read_in_16_byte_steps(fn, shape, dtype, width) -> None:
    """row_reduce's `vector` (fact contiguous): a thread takes 4 fp32 (8 bf16) neighbours of the
    row a step, one 128-bit access, and the row's epilogue stores likewise; the results are
    PyTorch's (argmax's first index: a thread's neighbours in order)."""
    x = torch.randn(*shape, dtype=dtype)
    c = deplo.compile(fn, [x])
    plans = [p for p in c.plans()["kernels"].values() if p["kind"] == "row_reduce"]
    assert plans and all(p["knobs"]["vector"] == 16 // x.element_size() for p in plans), plans
    assert width in c.cuda_source
    assert c.check(seed=12).ok


@pytest.mark.parametrize("expr,block", [("torch.relu(torch.randn(7))", 32),
                                        ("torch.randn(4, 48).sum(-1) + 1", 32),
                                        ("torch.relu(torch.randn(200))", 224)])
def test_a_short_1d_loop_is_one_block_of_the_warps_it_needs(expr: str, block: int) -> None:
    """relu of 7 elements was 7 blocks of one thread; 4 short rows 4 blocks of one."""
    from deplo.dialects import kernel

    c = deplo.compile(expr)
    (f,) = [f for f in c.module("kernel").ops if isinstance(f, kernel.FuncOp)]
    assert (f.grid_dims, f.block_dims) == ((1, 1, 1), (block, 1, 1))
    assert c.check(seed=1).ok


def test_split_reduction_reading_a_zero_d_constant() -> None:
    """logsigmoid's row sum reads a 0-d constant inside the reduction (its load's map has no
    coordinate): the column test took that map's last coordinate (IndexError)."""
    c = deplo.compile(lambda a: F.logsigmoid(a).sum(-1), [torch.randn(8, 8192)])
    result = c.check(seed=3)
    assert result.ok, result.line()
