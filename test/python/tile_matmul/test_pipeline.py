"""Deeper cp.async pipelines (`buffers` 3 and 4: the copies of the next 2 or 3 K chunks in flight)
and shared memory past the 48 KB a kernel may declare statically (dynamic shared memory, asked
for at launch), on the CPU runtime against numpy under the fiber schedules that expose a
missing barrier, a short cp.async wait or a refill racing its readers."""

from __future__ import annotations

import json
import re

import pytest
import torch
import torch.nn.functional as F
from mm_harness import Case, check
from test_schedules import SCHEDULE, TC_SCHEDULE

import deplo
from deplo import hardware as hw
from deplo.dialects.tile_plan import CLASSES
from deplo.passes.tile.plan import PlanFileError
from deplo.runtime import cpu

_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")


def _buffers(schedule: list[str], n: int) -> list[str]:
    return [f"tile-double-buffer{{buffers={n}}}" if p == "tile-double-buffer" else p
            for p in schedule]


@pytest.mark.parametrize("buffers", [3, 4])
@pytest.mark.parametrize(
    "case", [Case(37, 70, 53), Case(64, 96, 80), Case(37, 64, 48, b_nk=True, bias=True)],
    ids=["37x70x53", "64x96x80", "linear-bias"])
def test_simt_pipelines(case: Case, buffers: int):
    """K chunks of 16: 4 to 6 whole ones (K = 70: and 6 more, unstaged)."""
    low = check(case, _buffers(SCHEDULE, buffers))
    assert f"buffers({buffers})" in low.tile
    assert f"kernel.cp_async_wait {buffers - 1}" in low.kernel


@pytest.mark.parametrize("buffers", [3, 4])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_tensor_core_pipelines(dtype: str, buffers: int):
    """K = 160 in chunks of 32: 5 chunks, fewer than the pipeline is deep at the end."""
    low = check(Case(37, 160, 70, dtype=dtype, b_nk=True), _buffers(TC_SCHEDULE, buffers))
    assert f"kernel.cp_async_wait {buffers - 1}" in low.kernel


def test_as_many_buffers_as_chunks():
    """A loop of 3 chunks with 3 buffers: the prologue fills two, no iteration copies past."""
    check(Case(32, 96, 32), ["tile-register-tile{reg-m=2 reg-n=2}",
                             "tile-map-2d{threads-m=16 threads-n=16}",
                             "tile-chunk-reduce{k-chunk=32}", "tile-stage-chunks",
                             "tile-pad-shared", "tile-double-buffer{buffers=3}", "tile-cp-async"])


def test_dynamic_shared_memory():
    """128 x 128 outputs a block, K chunks of 64, 4 buffers: 147 KB of shared memory, taken
    from the launch's dynamic shared memory; the same results."""
    low = check(Case(128, 256, 128, dtype="bf16", b_nk=True), [
        "tile-tensor-core{warps-m=2 warps-n=4 frags-m=4 frags-n=4}",
        "tile-chunk-reduce{k-chunk=64}", "tile-stage-chunks", "tile-pad-shared",
        "tile-double-buffer{buffers=4}", "tile-cp-async", "tile-unroll"], schedules=("LR-fwd",))
    assert "extern __shared__ __align__(16) unsigned char kc_dyn_smem[];" in low.source
    assert "__shared__ __align__(16) __nv_bfloat16" not in low.source
    offsets = [int(m) for m in re.findall(r"kc_dyn_smem \+ (\d+)\)", low.source)]
    assert offsets == [0, 4 * 128 * 72 * 2]  # A's 4 buffers of 128 x (64 + 8 pad), then B's
    launch = re.search(r"smem (\d+)", low.source)
    assert launch and int(launch[1]) == 2 * 4 * 128 * 72 * 2 > hw.SHARED_MEMORY_BYTES


def _linear_plan(knobs: dict):
    x, w = torch.randn(64, 256), torch.randn(128, 256)
    fn = lambda x, w: F.linear(x, w)  # noqa: E731
    key, plan = next(iter(deplo.compile(fn, [x, w]).plans()["kernels"].items()))
    sched = {"format": "deplo-plans/1",
             "kernels": {key: {"kind": plan["kind"], "knobs": {**plan["knobs"], **knobs}}}}
    c = deplo.compile(fn, [x, w], schedule=json.dumps(sched))
    c.plans()  # (compiling is lazy: this plans it)
    return c, (x, w)


def test_a_plan_sets_the_pipeline_depth():
    c, (x, w) = _linear_plan({"splits": 1, "k_chunk": 32, "stage": True, "copy": "cp_async",
                              "buffers": 4})
    assert next(iter(c.plans()["kernels"].values()))["knobs"]["buffers"] == 4
    assert "kc_cp_async_wait(3)" in c.cuda_source
    assert c.check(seed=5).ok


@pytest.mark.parametrize("knobs, why", [
    ({"splits": 1, "k_chunk": 128, "buffers": 3}, "3 buffers for 2 whole K chunk(s) of 128"),
    ({"splits": 1, "k_chunk": 32, "buffers": 5}, "expected 1 to 4 buffers, got 5"),
])
def test_plan_checks_name_the_knob(knobs: dict, why: str):
    with pytest.raises(PlanFileError, match=re.escape(why)):
        _linear_plan({"stage": True, **knobs})


def test_the_heuristic_keeps_to_static_shared_memory():
    """Plans past 48 KB are legal (the tuner's domain offers up to 4 buffers) but not the
    heuristic's pick."""
    for m, n, k, dt in [(512, 5632, 2048, torch.bfloat16), (128, 2048, 2048, torch.float32),
                        (512, 512, 3584, torch.bfloat16)]:
        c = deplo.compile(lambda x, w: F.linear(x, w), [torch.randn(m, k, dtype=dt),
                                                      torch.randn(n, k, dtype=dt)])
        assert "kc_dyn_smem" not in c.cuda_source, (m, n, k, c.plans())
    assert CLASSES["matmul"].domain("buffers", {"k": 256, "chain": [64, 128]},
                                    {"stage": True, "k_chunk": 32, "splits": 1}) == (1, 2, 3, 4)


def test_the_model_counts_dynamic_shared_memory():
    """ptxas reports static shared memory only: occupancy reads the kernel's own buffers, 147 KB
    here, one block an SM (228 KB), where the 0 bytes ptxas sees would allow several."""
    from deplo.analysis import cost_model as cm
    from deplo.dialects import kernel

    c, _ = _linear_plan({"splits": 1, "mma": False, "reg_m": 8, "reg_n": 8, "threads_m": 8,
                         "threads_n": 8, "k_chunk": 64, "stage": True, "pad": 4,
                         "buffers": 4, "copy": "cp_async", "transpose": False})
    (f,) = [op for op in c.module("kernel").ops if isinstance(op, kernel.FuncOp)]
    assert f.shared_bytes() > hw.SHARED_MEMORY_BYTES
    assert cm.predict_func(f).blocks_per_sm == \
        cm.occupancy(cm.H100_SXM, 64, 32, f.shared_bytes()) == 1


def _bmm_plan(knobs: dict, dtype=torch.float32, k: int = 320):
    a, b = torch.randn(3, 64, k, dtype=dtype), torch.randn(3, k, 64, dtype=dtype)
    fn = torch.bmm
    key, plan = next(iter(deplo.compile(fn, [a, b]).plans()["kernels"].items()))
    sched = {"format": "deplo-plans/1",
             "kernels": {key: {"kind": plan["kind"], "knobs": {**plan["knobs"], **knobs}}}}
    return deplo.compile(fn, [a, b], schedule=json.dumps(sched)), [a, b]


@pytest.mark.parametrize("knobs", [
    {},  # the heuristic's: splits 2, 5 chunks a run
    {"splits": 2, "k_chunk": 32, "buffers": 3},
    {"splits": 2, "k_chunk": 32, "buffers": 4, "copy": "sync"},
    {"splits": 1, "k_chunk": 64, "buffers": 3},
], ids=["heuristic", "b3", "b4-sync", "b3-unsplit"])
def test_pipelines_run_again_by_a_batch_loop(knobs: dict):
    """A batch of products a block walks serially (split K puts the batch in a loop): each
    run's first copies wait at a barrier for every thread's last read of the run before (a
    fast warp's prologue into a buffer a slow warp still reads), under the schedules that
    expose it."""
    c, xs = _bmm_plan(knobs)
    want = torch.bmm(*xs).numpy()
    exe = c.executable("cpu")
    for schedule in ("LR-fwd", "EG-fwd", "EG-rev"):
        (got,) = exe.run([x.numpy() for x in xs], schedule=schedule)
        assert abs(got - want).max() <= 1e-4 * abs(want).max(), schedule


def test_a_pinned_depth_keeps_its_stages():
    """A plan that pins only `buffers` gets them, staged and padded, past 48 KB if need be."""
    c, _ = _linear_plan({"buffers": 4})
    knobs = next(iter(c.plans()["kernels"].values()))["knobs"]
    assert (knobs["buffers"], knobs["stage"]) == (4, True) and knobs["pad"] > 0
    assert c.check(seed=2).ok


def test_the_48k_boundary_counts_the_prelude():
    """Buffers of exactly 48 KB and a split-K arrival flag (16 static bytes of the prelude):
    dynamic, or ptxas finds 48 KB + 16 of static shared data."""
    from deplo.dialects import kernel

    c, _ = _linear_plan({"splits": 2, "split_sum": "last_block", "k_chunk": 32, "stage": True,
                         "pad": 0, "buffers": 3, "copy": "cp_async"})
    (f,) = [op for op in c.module("kernel").ops if isinstance(op, kernel.FuncOp)]
    assert f.shared_bytes() == hw.SHARED_MEMORY_BYTES
    assert f.dynamic_shared_bytes() == hw.SHARED_MEMORY_BYTES
    assert "kc_dyn_smem" in c.cuda_source
    assert c.check(seed=3).ok
