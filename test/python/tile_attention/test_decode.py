"""Decoding's shapes: one query row ([1, heads, 1, D]) and one token's RMSNorm ([1, 1, H]).

The grid skips loops of one iteration, so the row sits one unit loop below the block's region
(analysis/nest.py, `through_unit_loops`): these are flash and reduction rows like prefill's,
not one thread walking the whole reduction. Checked on the CPU runtime against PyTorch.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import tile
from deplo.runtime.cpu import cpu_runtime_available

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")


def _plans(c) -> dict[str, tile.KernelOp]:
    return {k.the_plan.kind: k for k in c.module("tile").walk()
            if isinstance(k, tile.KernelOp) and k.the_plan is not None}


def _decode_qkv(heads: int, kv: int, keys: int, d: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(keys + d)
    return [torch.randn(1, heads, 1, d, generator=g).to(dtype),
            torch.randn(1, kv, keys, d, generator=g).to(dtype),
            torch.randn(1, kv, keys, d, generator=g).to(dtype)]


def _gqa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def test_one_tokens_rms_norm_is_a_row_reduction() -> None:
    c = deplo.compile(lambda x, w: F.rms_norm(x, (256,), w), [torch.randn(1, 1, 256),
                                                               torch.randn(256)])
    k = _plans(c)["row_reduce"]
    assert k.block_dims[0] > 1  # the row's threads share it
    assert c.check(seed=1).ok


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_one_query_row_is_a_flash_row(dtype) -> None:
    """Off tensor cores in bf16 too: one query row would fill 1 of a warp's 16."""
    c = deplo.compile(_gqa, _decode_qkv(8, 2, 100, 32, dtype))
    k = _plans(c)["attention"]
    assert not k.the_plan.knob("mma") and k.the_plan.knob("lane_keys")
    assert c.check(seed=2).ok


@pytest.mark.parametrize("threads,rows,parts,splits,keys", [
    (8, 4, 2, 4, 300),  # a ragged last step of the last slice
    (32, 1, 2, 16, 512),
    (16, 2, 1, 2, 64),
    (4, 8, 4, 8, 257),  # one key lane of four parts; slices of 9 steps, the last of 5
])
def test_key_splits_of_lanes_owning_keys(threads, rows, parts, splits, keys) -> None:
    """Split-KV on the SIMT rows (fp32): slices on block.z, the last one combining."""
    from test_attention_rows import _flash_kernels, _with_rows_options

    c = deplo.compile(_gqa, _decode_qkv(8, 2, keys, 32))
    _with_rows_options(c, f"threads={threads} rows={rows} lane-keys=1 head-parts={parts} "
                          f"key-splits={splits}")
    (k,) = _flash_kernels(c)
    assert k.grid_dims[2] == splits
    assert any(isinstance(op, tile.SplitLastOp) for op in k.walk())
    assert c.check(seed=3).ok


def test_causal_slices_stop_at_the_last_key() -> None:
    """More queries than keys: the causal stop passes the last key; the last slice must not."""
    from test_attention_rows import _with_rows_options

    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    c = deplo.compile(fn, [torch.randn(1, 2, 96, 32), torch.randn(1, 2, 80, 32),
                           torch.randn(1, 2, 80, 32)])
    _with_rows_options(c, "threads=8 rows=4 lane-keys=1 head-parts=1 key-splits=2")
    assert c.check(seed=4).ok


def test_rows_options_replan_the_slices() -> None:
    """key_splits is tile-attention-rows' knob off tensor cores: other options of that pass
    re-plan it (lane_keys 0 drops the slices), as they re-plan its other knobs."""
    from test_attention_rows import _flash_kernels, _with_rows_options

    c = deplo.compile(_gqa, _decode_qkv(32, 4, 2048, 64))
    _with_rows_options(c, "lane-keys=0")
    (k,) = _flash_kernels(c)
    assert k.the_plan.knob("key_splits") == 1 and k.grid_dims[2] == 1


def test_heuristic_splits_a_long_decoded_row() -> None:
    """One token over 2048 keys: a warp a row, 16 slices (32 heads: 512 blocks)."""
    c = deplo.compile(_gqa, [x.to("meta") for x in _decode_qkv(32, 4, 2048, 64)])
    plan = _plans(c)["attention"].the_plan
    assert (plan.knob("threads"), plan.knob("key_splits")) == (32, 16)


def test_prefill_keeps_one_slice() -> None:
    """The heuristic's: a prefill's rows fill the SMs (the cost model, ranking it, may still
    prefer slices)."""
    c = deplo.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                      [torch.randn(1, 8, 256, 32, device="meta")] * 3, rank=False)
    assert _plans(c)["attention"].the_plan.knob("key_splits") == 1


def test_key_splits_need_lanes_that_own_keys() -> None:
    from test_attention_rows import _with_rows_options

    from deplo.passes.tile.kernel_pass import PassOptionError

    c = deplo.compile(_gqa, _decode_qkv(8, 2, 64, 32))
    with pytest.raises(PassOptionError, match="knob key_splits: slices of the keys need lanes"):
        _with_rows_options(c, "threads=8 lane-keys=0 key-splits=2")
