"""The program's roofline counts the bytes its loop nests can read of each input, not every
input's whole buffer: an embedding reads its tokens' rows, a slice its box. A roofline above
what the program must move made the model predict below it (an embedding lookup at 0.27x)."""

from __future__ import annotations

import pytest

import deplo
from deplo.runtime.bench import min_bytes
from deplo.tools.profile import profile

F32 = 4
CASES = {  # expression: (bytes an input must be read for, output bytes)
    "F.embedding(torch.randint(0,32000,(8,128)), torch.randn(32000,512))":
        (8 * 128 * 8 + 8 * 128 * 512 * F32, 8 * 128 * 512 * F32),
    "torch.randn(1000,1000)[:, :10] @ torch.randn(10,64)":
        (1000 * 10 * F32 + 10 * 64 * F32, 1000 * 64 * F32),
    "torch.randn(64,256) @ torch.randn(256,32)":  # read whole
        (64 * 256 * F32 + 256 * 32 * F32, 64 * 32 * F32),
}


@pytest.mark.parametrize("expr", CASES)
def test_min_bytes_are_what_the_nests_read(expr: str) -> None:
    reads, writes = CASES[expr]
    c = deplo.compile(expr)
    assert min_bytes(c.module("loop")) == reads + writes
    report = profile(c)
    assert report["min_bytes"] == reads + writes
    assert report["predicted_us"] >= report["roofline_us"]


def test_other_levels_count_whole_inputs() -> None:
    c = deplo.compile("F.embedding(torch.randint(0,32000,(8,128)), torch.randn(32000,512))")
    whole = 8 * 128 * 8 + 32000 * 512 * F32 + 8 * 128 * 512 * F32
    assert min_bytes(c.module("kernel")) == whole


@pytest.mark.parametrize("expr", ["F.pad(torch.randn(2048,1024), (1,2))",
                                  "torch.randn(2048, 1030) * 2"])
def test_a_ragged_second_block_is_not_the_average_one(expr: str) -> None:
    """Rows of just over 1024 columns run in two blocks of 1024, the second almost empty: the
    model read only the middle block of the grid (that second one) and predicted half the
    roofline. On an axis of two blocks it takes the mean of both."""
    report = profile(deplo.compile(expr))
    assert report["kernels"][0]["grid"][0] == 2
    assert report["predicted_us"] >= report["roofline_us"]


@pytest.mark.parametrize("expr", ["F.avg_pool2d(torch.randn(32,64,56,56), 2)",
                                  "F.max_pool2d(torch.randn(8,64,56,56), 2)"])
def test_a_window_counts_every_row_it_reads(expr: str) -> None:
    """A 2x2 window, unrolled: its first step moves one column (4 bytes, the same sector), its
    second a row. Extrapolated from the first step, the model counted 1.4 rows of sectors for
    2 and predicted 0.96x the roofline; a loop of 8 iterations or fewer is counted one by
    one."""
    report = profile(deplo.compile(expr))
    assert report["predicted_us"] >= report["roofline_us"]
    (k,) = report["kernels"]
    assert k["dram_bytes"] >= report["min_bytes"]
