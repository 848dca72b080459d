"""group_heads: the query heads of one K/V head (grouped-query attention, fact kv_group) run in
one block on thread.z, their rows reading each key's K and V at the same time. Against float64
PyTorch on the CPU runtime under the fiber schedules: GQA 2, 3, 4 and 7 (Qwen2.5's), causal or
not, a mask, a batch of two (the heads on block.y under a batch on block.z), rows that do not
fill the last block, bf16 rows off tensor cores; the fact, the heuristic and the plan checks."""

from __future__ import annotations

import json
import re

import pytest
import torch
import torch.nn.functional as F
from test_attention_rows import _flash_kernels, _sdpa, _with_rows_options, matches_float64

import deplo
from deplo.passes.tile.kernel_pass import PassOptionError
from deplo.runtime.cpu import cpu_runtime_available

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")


def _qkv(hq: int, hk: int, s: int, d: int, batch: int = 1, dtype=torch.float32):
    g = torch.Generator().manual_seed(hq + s + d)
    return [torch.randn(batch, hq, s, d, generator=g, dtype=dtype),
            torch.randn(batch, hk, s, d, generator=g, dtype=dtype),
            torch.randn(batch, hk, s, d, generator=g, dtype=dtype)]


def _plan(c) -> dict:
    (k,) = _flash_kernels(c)
    return dict(k.the_plan.knobs), dict(k.the_plan.facts), k


@pytest.mark.parametrize("hq,hk,s,d,causal,options", [
    (8, 2, 37, 16, True, "threads=8 rows=2 lane-keys=1 group-heads=4"),
    (8, 2, 37, 16, False, "threads=8 rows=4 lane-keys=2 group-heads=2"),
    (6, 2, 9, 32, True, "threads=4 rows=8 lane-keys=1 head-parts=2 group-heads=3"),
    (14, 2, 20, 64, True, "threads=16 rows=2 lane-keys=1 head-parts=2 group-heads=7"),
    (4, 4, 12, 16, True, None),  # MHA: nothing to group
])
def test_grouped_heads(hq, hk, s, d, causal, options) -> None:
    c = deplo.compile(_sdpa(causal), _qkv(hq, hk, s, d))
    if options:
        _with_rows_options(c, options)
    knobs, facts, k = _plan(c)
    assert facts.get("kv_group", 1) == hq // hk
    heads = knobs["group_heads"]
    assert k.block_dims[2] == heads and k.grid_dims[1] == hq // heads
    assert heads == (int(options.split("group-heads=")[1]) if options else 1)
    matches_float64(c, _sdpa(causal))


def test_the_heuristic_groups_a_kv_heads_query_heads() -> None:
    """8 lanes a row (512 keys: long rows), a warp of rows (4) for each of the 4 heads."""
    c = deplo.compile(_sdpa(True), _qkv(8, 2, 512, 16), rank=False)  # (the model's: split-KV)
    knobs, _, k = _plan(c)
    assert (knobs["group_heads"], knobs["rows"], knobs["threads"]) == (4, 4, 8)
    assert k.block_dims == (8, 4, 4) and k.grid_dims[:2] == (128, 2)


def test_mask_and_a_batch() -> None:
    """An additive mask read by (row, key), GQA 2, a batch of two on block.z."""
    g = torch.Generator().manual_seed(3)
    q, k, v = _qkv(4, 2, 11, 16, batch=2)
    mask = torch.randn(2, 1, 11, 11, generator=g)

    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    c = deplo.compile(f, [q, k, v, mask])
    knobs, _, kern = _plan(c)
    assert knobs["group_heads"] == 2 and kern.grid_dims[2] == 2
    matches_float64(c, f)


def test_bf16_rows_off_tensor_cores() -> None:
    """bf16 rows on lanes (a plan's SIMT knobs), grouped; fp32 arithmetic, bf16 tolerance."""
    xs = _qkv(4, 2, 19, 24, dtype=torch.bfloat16)
    key = next(iter(deplo.compile(_sdpa(True), xs).plans()["kernels"]))
    simt = {"grid_dims": 2, "mma": False, "threads": 8, "group_heads": 2, "rows": 4,
            "stage_keys": 0, "lane_keys": 1, "head_parts": 1, "key_splits": 1,
            "stage_inputs": "reused", "copy": "sync", "unroll": 32}
    c = deplo.compile(_sdpa(True), xs, schedule=json.dumps({
        "format": "deplo-plans/1", "kernels": {key: {"kind": "attention", "knobs": simt}}}))
    knobs, _, _ = _plan(c)
    assert knobs["mma"] is False and knobs["group_heads"] == 2
    assert c.check(seed=4).ok


def test_decoding_keeps_split_kv() -> None:
    """One query row a head over a long cache: the heads are the rows' grid loop (the query
    row a unit loop), so no fact kv_group; the keys in slices (split-KV)."""
    for keys in (100, 2048):
        c = deplo.compile(_sdpa(False), [torch.randn(1, 8, 1, 64),
                                         torch.randn(1, 2, keys, 64),
                                         torch.randn(1, 2, keys, 64)])
        knobs, facts, _ = _plan(c)
        assert "kv_group" not in facts and knobs["group_heads"] == 1
        assert knobs["key_splits"] > 1 or keys == 100
        assert c.check(seed=1).ok


@pytest.mark.parametrize("options, why", [
    ("threads=8 rows=4 lane-keys=1 group-heads=3", "expected a divisor of the 4 query head(s)"),
    ("threads=8 rows=2 lane-keys=1 group-heads=2 key-splits=2",
     "2 heads a block: one slice of the keys (key_splits 1)"),
    ("threads=64 rows=1 lane-keys=0 group-heads=2", "a row's lanes must be one warp's at most"),
])
def test_plan_checks(options: str, why: str) -> None:
    c = deplo.compile(_sdpa(True), _qkv(8, 2, 40, 64))
    with pytest.raises(PassOptionError, match=re.escape(why)):
        _with_rows_options(c, options)


@pytest.mark.parametrize("hq,hk,s,d", [(8, 2, 3, 64), (16, 4, 3, 16), (28, 4, 5, 128),
                                       (6, 2, 4, 32)])
def test_short_rows_stay_attention(hq, hk, s, d) -> None:
    """A few query rows: the heuristic's block stays whole warps (or within one), so the kernel
    keeps its attention plan."""
    c = deplo.compile(_sdpa(True), _qkv(hq, hk, s, d))
    knobs, _, k = _plan(c)
    block = k.block_dims[0] * k.block_dims[1] * k.block_dims[2]
    assert block <= 32 or block % 32 == 0, (knobs, k.block_dims)
    assert c.check(seed=2).ok


def test_groups_divide_the_heads() -> None:
    """6 query heads read at head floordiv 4 (a slice of a GQA 4 expansion): blocks of
    gcd(4, 6) = 2 heads."""
    g = torch.Generator().manual_seed(9)
    q = torch.randn(1, 6, 24, 16, generator=g)
    k, v = (torch.randn(1, 2, 1, 24, 16, generator=g) for _ in range(2))

    def f(q, k, v):
        kk = k.expand(1, 2, 4, 24, 16).reshape(1, 8, 24, 16)[:, :6]
        vv = v.expand(1, 2, 4, 24, 16).reshape(1, 8, 24, 16)[:, :6]
        return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

    c = deplo.compile(f, [q, k, v])
    knobs, facts, _ = _plan(c)
    assert facts.get("kv_group", 1) in (1, 2) and knobs["group_heads"] in (1, 2)
    assert c.check(seed=1).ok


def test_thread_z_caps_a_group() -> None:
    """One K/V head for 128 query heads: at most 64 heads a block (thread.z)."""
    c = deplo.compile(_sdpa(False), _qkv(128, 1, 16, 16))
    knobs, facts, _ = _plan(c)
    assert facts["kv_group"] == 128 and knobs["group_heads"] <= 64
    with pytest.raises(PassOptionError, match=re.escape("up to 64 (thread.z), got 128")):
        _with_rows_options(c, "threads=4 rows=1 lane-keys=1 group-heads=128")


def test_a_per_head_mask_leaves_the_group_to_k_and_v() -> None:
    """An additive bias per query head ([1, H, S, S], read by head and key): K and V decide
    the group; each head's rows read their own bias."""
    g = torch.Generator().manual_seed(2)
    q, k, v = _qkv(8, 2, 20, 16)
    mask = torch.randn(1, 8, 20, 20, generator=g)

    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    c = deplo.compile(f, [q, k, v, mask])
    knobs, facts, _ = _plan(c)
    assert facts["kv_group"] == 4 and knobs["group_heads"] == 4
    matches_float64(c, f)


@pytest.mark.parametrize("scan", [torch.cumsum, torch.logcumsumexp])
def test_a_flash_row_with_no_grid_loop_plans(scan) -> None:
    """softmax(scan(a)) @ b over one 1 x 1 row: a flash row with no row loop on the grid (the
    heuristic's grouped heads had indexed the last of no rows: an IndexError)."""
    def f(a, b):
        return torch.softmax(scan(a, 1), 1) @ b

    a, b = torch.randn(1, 1), torch.randn(1, 1)
    torch.testing.assert_close(deplo.compile(f, [a, b])(a, b), f(a, b))
