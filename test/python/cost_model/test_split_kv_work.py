"""Split-KV's key slices on block.z: the model reads one block, and the middle block of a causal
split attention (the middle query block's second slice) walks almost no keys. Its work is the
mean over the slices of the middle query block: the causal triangle's, at or above the
roofline, about what one slice a block predicts (a user found 0.65x the roofline, and the
model's ranking preferred that plan for it)."""

from __future__ import annotations

import pytest

import deplo
from deplo.passes.tile import planner
from deplo.tools.profile import profile
from deplo.tuning import ranked
from deplo.tuning.tune import pins, plan_dict, tasks

CAUSAL = "F.scaled_dot_product_attention(*[torch.randn(1,8,1000,64)]*3, is_causal=True)"


@pytest.mark.skipif(not ranked.nvrtc_works(), reason="no NVRTC: no registers to predict with")
def test_split_kv_is_predicted_with_the_whole_causal_walk() -> None:
    (task,) = tasks(deplo.compile(CAUSAL, seed=0, rank=False))
    flops = {}
    for splits in (1, 2, 4):
        plan = plan_dict(planner.complete(task.name, "attention", task.classes["attention"],
                                          {"key_splits": splits}))
        c = deplo.compile(CAUSAL, seed=0, schedule=pins({task.key: (task.name, plan)}))
        p = profile(c, "h100")
        (k,) = p["kernels"]
        assert k["predicted_us"] >= k["roofline_us"] and p["predicted_us"] >= p["roofline_us"]
        flops[splits] = k["flops"]
    for splits in (2, 4):
        assert 0.8 <= flops[splits] / flops[1] <= 1.25, flops
