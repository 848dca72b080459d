"""topk, sort and argsort rank by counting (frontend/aten.py `_ranked`), a longer row by
merges of counted runs: exact against PyTorch
at every level and on the CPU runtime, NaN placed as PyTorch places it (greatest), ties kept in
index order (a stable sort), integers, half precision, a dim other than the last."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import deplo
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


def _ties(*shape: int) -> torch.Tensor:
    """Integers as floats (many ties), with NaN and +-inf among them."""
    x = torch.randint(-40, 40, shape).float()
    flat = x.view(-1)
    pick = torch.randperm(flat.numel())
    flat[pick[:11]], flat[pick[11:14]], flat[pick[14:16]] = NAN, math.inf, -math.inf
    return x


# past RANK_LIMIT: runs sorted by counting, then merged (`_merge_sorted`); stable, NaN
# greatest, any dim, an odd length, every dtype: values and indices exactly PyTorch's
MERGED = {
    "sort_odd_ties_nan": (lambda x: torch.sort(x, stable=True), lambda: _ties(2, 4097)),
    "sort_descending_ties_nan": (lambda x: torch.sort(x, descending=True, stable=True),
                                 lambda: _ties(2, 10001)),
    "argsort_dim0": (lambda x: torch.argsort(x, dim=0, stable=True), lambda: _ties(5000, 2)),
    "sort_int64": (lambda x: torch.sort(x, stable=True), lambda: torch.randint(-9, 9, (2, 6000))),
    "sort_int32_descending": (lambda x: torch.sort(x, descending=True, stable=True),
                              lambda: torch.randint(-9, 9, (2, 6000), dtype=torch.int32)),
    "sort_fp16": (lambda x: torch.sort(x, stable=True), lambda: _ties(1, 5000).half()),
    "sort_bf16_descending": (lambda x: torch.sort(x, descending=True, stable=True),
                             lambda: _ties(1, 5000).bfloat16()),
    "topk_large_k": (lambda x: torch.topk(x, 3000), lambda: torch.randn(2, 6007)),
    "kthvalue": (lambda x: torch.kthvalue(x, 4321).values, lambda: _ties(3, 5003)),
    "median_nan": (lambda x: torch.median(x, -1).values, lambda: _ties(3, 5003)),
    "median_dim0": (lambda x: torch.median(x, 0), lambda: torch.randn(4097, 3)),
    "nanmedian": (lambda x: torch.nanmedian(x, -1).values, lambda: _ties(3, 5003)),
}


@pytest.mark.parametrize("name", MERGED)
def test_a_sort_past_the_limit_merges_runs(name: str) -> None:
    fn, make = MERGED[name]
    torch.manual_seed(2)
    x = make()
    ref = fn(x)
    ref = ref if isinstance(ref, tuple) else (ref,)
    outs = deplo.compile(fn, [x]).run([x], target="interp", level="torch")
    for ours, theirs in zip(outs, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(ours, dtype=np.float64), theirs.double().numpy())


def test_a_vocabulary_sorted_descending_on_the_cpu_runtime() -> None:
    """Top-p sampling's sort over a vocabulary, every level down to the C++ runtime."""
    if not cpu_runtime_available():
        pytest.skip("no CPU runtime")
    torch.manual_seed(3)
    x = _ties(1, 8193)
    fn = lambda x: torch.sort(x, descending=True, stable=True)
    values, idx = deplo.compile(fn, [x]).run([x], target="cpu")
    ref = fn(x)
    np.testing.assert_array_equal(np.asarray(values, np.float64), ref.values.double().numpy())
    np.testing.assert_array_equal(np.asarray(idx), ref.indices.numpy())


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


def _nan_row(n: int, numbers: int) -> torch.Tensor:
    """Two rows of n: the first with NaNs among numbers, the second NaN but for `numbers`
    elements (a top k that must take NaNs, never the padding after them)."""
    x = torch.randn(2, n)
    x[0, torch.randperm(n)[:9]] = NAN
    x[1, torch.randperm(n)[numbers:]] = NAN
    return x


# topk by chunks (`_chunked_top`), past RANK_LIMIT or within it: a vocabulary's logits, a dim
# other than the last, half precision, NaNs, a length no chunk size divides, integers (ties),
# candidates themselves past the limit (chunked again)
LONG = {
    "vocab_largest": (lambda x: torch.topk(x, 50), lambda: torch.randn(2, 32000)),
    "smallest_dim0": (lambda x: torch.topk(x, 7, dim=0, largest=False),
                      lambda: torch.randn(10000, 3)),
    "fp16": (lambda x: torch.topk(x, 20), lambda: torch.randn(2, 9000).half()),
    "bf16_smallest": (lambda x: torch.topk(x, 20, largest=False),
                      lambda: torch.randn(2, 9000).bfloat16()),
    "nan_largest": (lambda x: torch.topk(x, 12), lambda: _nan_row(6007, 3)),
    "nan_smallest": (lambda x: torch.topk(x, 12, largest=False), lambda: _nan_row(6007, 3)),
    "ragged": (lambda x: torch.topk(x, 5), lambda: torch.randn(3, 4099)),
    "int_ties": (lambda x: torch.topk(x, 30, largest=False),
                 lambda: torch.randint(-100, 100, (2, 5003))),
    "chunked_within_the_limit": (lambda x: torch.topk(x, 9), lambda: torch.randn(3, 3000)),
    "chunked_again": (lambda x: torch.topk(x, 300), lambda: torch.randn(1, 9000)),
}


def test_a_large_k_over_a_vocabulary_compiles() -> None:
    """Chunks of 2k = 2000: the first stage's row, read through the chunks' reshape at
    `c * 2000 + j`, spans more than the plan's K-chunk slab; tile-stage-chunks leaves it in
    global memory (staged, it took 240 KB of shared memory: an IR verification error)."""
    x = torch.randn(4, 32000)
    kmod = deplo.compile(lambda x: torch.topk(x, 1000), [x]).module("kernel")
    assert kmod is not None


@pytest.mark.parametrize("name", LONG)
def test_topk_past_the_limit_matches_pytorch(name: str) -> None:
    """Values exactly PyTorch's (sorted, NaN greatest); indices int64 into the original dim,
    distinct, each at an element equal to its value (PyTorch leaves ties' order open)."""
    if not cpu_runtime_available():
        pytest.skip("no CPU runtime")
    fn, make = LONG[name]
    torch.manual_seed(1)
    x = make()
    ref = fn(x)
    values, idx = deplo.compile(fn, [x]).run([x], target="cpu")
    np.testing.assert_array_equal(np.asarray(values, np.float64), ref.values.double().numpy())
    idx = torch.from_numpy(np.asarray(idx))
    assert idx.dtype == torch.int64 and idx.shape == ref.indices.shape
    d = 0 if name == "smallest_dim0" else -1
    assert (idx.sort(d).values.diff(dim=d) > 0).all()  # distinct
    np.testing.assert_array_equal(x.gather(d, idx).double().numpy(),
                                  ref.values.double().numpy())
