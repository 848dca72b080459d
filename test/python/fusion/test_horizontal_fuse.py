"""kernel-horizontal-fuse on real programs: projections of one normed input (and the norm)
become one launch of kernel.parts, and the fused program still computes what PyTorch does (every fiber
schedule of the CPU runtime, fp32 and bf16, a split-K part finishing in its last block); the
cost model predicts a fused kernel from its parts."""

from __future__ import annotations

import pytest
import torch

import deplo
from deplo.analysis import cost_model as cm
from deplo.dialects import kernel
from deplo.runtime.cpu import DEFAULT_SCHEDULES
from deplo.tools.api import check_program, random_inputs


class Attention(torch.nn.Module):
    """A decoder layer's front: RMSNorm, q/k/v projections (k, v narrower: grouped heads) and
    a rotation of q and k, summed with v so every output is used."""

    def __init__(self, d: int = 128, kv: int = 32):
        super().__init__()
        self.norm = torch.nn.RMSNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv, bias=True)
        self.v = torch.nn.Linear(d, kv, bias=False)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        return torch.cat([-q[..., 1:], q[..., :1]], -1) * 0.5 + q, k * 2.0, v


def _fused(compiled) -> list[kernel.FuncOp]:
    return [k for k in compiled.module("kernel").ops
            if isinstance(k, kernel.FuncOp) and k.parts()]


def _check_all_schedules(compiled) -> None:
    inputs = random_inputs(compiled.program, seed=3)
    n = len(compiled.program.example_inputs)
    exe = compiled.executable("cpu")
    ref = compiled.program.reference(inputs[:n])
    for schedule in DEFAULT_SCHEDULES:
        got = check_program(exe.run(inputs, schedule=schedule), compiled.program, inputs[:n],
                            compiled.output_element_types(), ref)
        assert got.ok, (schedule, got)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_projections_fuse_and_match_pytorch(dtype):
    m = Attention().to(dtype)
    c = deplo.compile(m, [torch.randn(1, 8, 128, dtype=dtype)], seed=1)
    fused = _fused(c)
    assert fused and all(len(k.parts()) >= 2 for k in fused)
    assert "linear_1" in str(fused[0].attributes["origin"])  # k_proj's, beside the norm's
    _check_all_schedules(c)


def test_split_k_part_finishes_in_its_last_block():
    """A part whose split-K tiles are summed by the last block to arrive (kc_arrive_last),
    fused with an independent matmul: the arrivals count the part's own blocks."""

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(512, 64, bias=False)
            self.b = torch.nn.Linear(512, 64, bias=False)

        def forward(self, x):
            return self.a(x), self.b(x) + 1.0

    c = deplo.compile(Two(), [torch.randn(16, 512)], seed=2, rank=False)
    plans = c.plans()
    for entry in plans["kernels"].values():
        if entry["kind"] == "matmul":
            entry["knobs"].update(splits=4, split_sum="last_block")
    c = deplo.compile(Two(), [torch.randn(16, 512)], seed=2, schedule=plans, rank=False)
    parts = [p for k in _fused(c) for p in k.parts()]
    assert len(parts) == 2
    assert all(any(isinstance(op, kernel.ArriveLastOp) for op in p.walk()) for p in parts)
    _check_all_schedules(c)


def test_fused_prediction_from_its_parts():
    """Each part is predicted as the kernel it was (its own grid, block ids and buffers: the
    same figures as the unfused program's kernel); fusing latency-bound launches that leave SMs
    idle is predicted faster than running them apart (one launch, the SMs shared)."""
    c = deplo.compile(Attention(), [torch.randn(1, 8, 128)], seed=1, rank=False)
    apart_c = deplo.compile(Attention(), [torch.randn(1, 8, 128)], seed=1, rank=False,
                            launch_fusion=False)
    alone = {k.sym_name.data: k for k in apart_c.module("kernel").ops
             if isinstance(k, kernel.FuncOp)}
    (f,) = _fused(c)
    whole = cm.work(f)
    apart = 0.0
    for part, (w, grid) in zip(f.parts(), whole.parts, strict=True):
        k = alone[part.kernel.data]
        assert grid == k.grid_dims and k.block_dims == f.block_dims
        mine, theirs = cm.predict(w, grid, f.block_dims), cm.predict(cm.work(k), grid, k.block_dims)
        assert (mine.us, mine.flops, mine.dram_bytes) == pytest.approx(
            (theirs.us, theirs.flops, theirs.dram_bytes))
        apart += theirs.us
    together = cm.predict(whole, f.grid_dims, f.block_dims)
    assert 0 < together.us < apart
    assert together.flops == pytest.approx(sum(
        cm.predict(w, g, f.block_dims).flops for w, g in whole.parts))


def test_launch_fusion_can_be_turned_off(tmp_path):
    """`--no-launch-fusion` (`launch_fusion=False`): one launch a kernel, as before the pass;
    `--gpu-model` reaches the pass's predictions."""
    from test_cli import run

    c = deplo.compile(Attention(), [torch.randn(1, 8, 128)], seed=1, launch_fusion=False)
    assert not _fused(c) and c.check().ok
    c.gpu_model, c.launch_fusion = "h200", True
    assert "kernel-horizontal-fuse{gpu=h200}" in c.pass_spec("tile-to-kernel,kernel-horizontal-fuse")
    e = "(F.linear(torch.randn(64,512), torch.randn(256,512)), F.linear(torch.randn(64,512), " \
        "torch.randn(64,512)))"
    fused = run("deplo", "compile", "-c", e, "--ir", "kernel")
    apart = run("deplo", "compile", "-c", e, "--ir", "kernel", "--no-launch-fusion")
    assert fused.returncode == apart.returncode == 0, fused.stderr + apart.stderr
    assert fused.stdout.count("kernel.part") == 2 and "kernel.part" not in apart.stdout
    assert apart.stdout.count("kernel.launch") == 2 and fused.stdout.count("kernel.launch") == 1
