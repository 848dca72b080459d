"""The sm_90 model on kernels whose behaviour is known from first principles: for each pair, the
model must order them and give a ratio within what the hardware allows (CUDA Programming Guide,
"Device Memory Accesses"; PERF-MODEL.md). The kernels are written in Kernel IR by hand so that
each pair differs in exactly one thing (tuning/validation.py). Where a GPU is lent, the same
pairs are measured (`python -m deplo.tuning.validation`) and the constants refit from them only;
here each runs on the CPU runtime, both kernels of a pair computing the same thing."""

from __future__ import annotations

import pytest

from deplo.analysis import cost_model as cm
from deplo.analysis import roofline as rl
from deplo.tuning.validation import (
    check_on_cpu,
    copy_kernel,
    main,
    pairs,
    parse_kernel,
    predict,
    reuse_kernel,
    transpose_tile_kernel,
)

N = 1 << 22  # 16 MB of fp32: well past launch overhead, well inside L2


def _predict(text: str) -> cm.Prediction:
    return predict(text)


_copy, _reuse, _transpose_tile = copy_kernel, reuse_kernel, transpose_tile_kernel


def test_coalesced_against_stride_k_reads_of_the_same_bytes():
    rows = cols = 2048
    good = _predict(_copy(rows, cols, 512, 256, transposed=False))
    bad = _predict(_copy(rows, cols, 512, 256, transposed=True))
    ratio = bad.us / good.us
    # 32 sectors per warp read instead of 4: up to 8x the L2 traffic of the read (the write
    # stays coalesced); DRAM traffic is the same (L2 holds the lines)
    assert 1.5 < ratio <= 8.0, (good, bad)
    assert bad.l2_bytes > 4 * good.l2_bytes / 2


def test_one_against_256_threads_per_block():
    one = _predict(_copy(2048, 2048, 512, 1, transposed=False))
    many = _predict(_copy(2048, 2048, 512, 256, transposed=False))
    ratio = one.us / many.us
    # one lane per warp: every warp instruction does 1/32 of the work, each access a sector
    # for 4 bytes; the block count and the bytes are the same
    assert 8.0 < ratio <= 64.0, (one, many)


def test_a_bank_conflicting_against_a_padded_shared_tile():
    conflicting, padded = _predict(_transpose_tile(0)), _predict(_transpose_tile(1))
    ratio = conflicting.us / padded.us
    assert conflicting.units["smem"] > 16 * padded.units["smem"]
    assert 4.0 < ratio <= 32.0, (conflicting, padded)


def test_8_against_256_blocks():
    few = _predict(_copy(2048, 2048, 8, 256, transposed=False))
    many = _predict(_copy(2048, 2048, 1024, 256, transposed=False))
    ratio = few.us / many.us
    # the same bytes on 8 of 132 SMs, with one block (8 warps) each instead of a full SM of
    # warps: slower by the SMs (16.5x) times at most the warps in flight (8x; Little's law),
    # and at least half the SM ratio
    assert 132 / 8 / 2 < ratio <= 132 / 8 * 8, (few, many)


def test_a_prediction_is_never_below_its_roofline():
    for text in (_copy(2048, 2048, 512, 256, False), _reuse(True), _transpose_tile(1)):
        p = _predict(text)
        floor = rl.roofline_us(p.dram_bytes, rl.Flops(p.flops))
        assert p.us >= floor * (1 - 1e-9), (p, floor)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_h200_is_faster_on_memory_bound_kernels_only(gpu):
    _, f = parse_kernel(_copy(4096, 8192, 1024, 256, False))
    w = cm.work(f)
    h100 = cm.predict(w, f.grid_dims, f.block_dims, gpu=cm.H100_SXM)
    other = cm.predict(w, f.grid_dims, f.block_dims, gpu=cm.GPUS[gpu])
    assert other.us <= h100.us


def test_every_pair_is_within_its_range_and_runs():
    for pair in pairs():
        ratio = predict(pair.slow).us / predict(pair.fast).us
        assert pair.low < ratio <= pair.high, (pair.name, ratio)
    for pair in pairs(small=True):
        check_on_cpu(pair)


def test_the_runner_without_a_gpu(tmp_path, capsys):
    assert main(["-o", str(tmp_path / "pairs.json")]) == 0
    out = capsys.readouterr().out
    assert out.count("both kernels run on the CPU") == len(pairs())


def test_split_k_in_one_launch_saves_a_launch_and_pays_a_tail():
    """split_sum = last_block: the partial kernel's last blocks add the partials up after the
    rest (a tail the model runs as one more wave of a block a tile). First principles bracket
    it: no faster than the partial kernel alone, no slower than it plus the second kernel (the
    same reads, one launch less, every SM at them)."""
    from deplo.tools.api import compile as deplo_compile

    expr = "F.linear(torch.randn(32,2048), torch.randn(256,2048))"
    plans = deplo_compile(expr).plans()
    (key,) = plans["kernels"]
    times = {}
    for how in ("kernel", "last_block"):
        plans["kernels"][key]["knobs"].update(splits=16, split_sum=how)
        module = deplo_compile(expr, schedule=plans).module("kernel")
        times[how] = {name: p.us for name, p in cm.predict_module(module).items()}
    two, one = times["kernel"], times["last_block"]
    assert set(two) == {"linear", "linear_sum"} and set(one) == {"linear"}, (two, one)
    tail = one["linear"] - two["linear"]
    assert 0 < tail < two["linear_sum"], (one, two)
