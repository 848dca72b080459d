"""Every legal plan computes the same result: random legal plans (dialects/tile_plan.sample) of
every kind each kernel can take, at small odd shapes, in fp32 and bf16, pinned through a plan
file and run on the CPU runtime under two fiber schedules against PyTorch. This is the property
the tuner relies on. A matmul plan's predicted shared memory must equal what its stages take.

`DEPLO_PLAN_SEED=<n>` draws other plans (the default seed keeps the suite reproducible);
`DEPLO_PLAN_DRAWS=<n>` draws more per program and kind.
"""

from __future__ import annotations

import os
import random

import pytest
import torch
import torch.nn.functional as F

import deplo
import deplo.runtime.check
import deplo.tools.api
from deplo.analysis.nest import tile_kernels
from deplo.dialects.tile_plan import sample, shared_bytes
from deplo.passes.tile.planner import legal_classes
from deplo.runtime.cpu import cpu_runtime_available

pytestmark = pytest.mark.skipif(not cpu_runtime_available()[0], reason="no g++ for the CPU runtime")

SEED = int(os.environ.get("DEPLO_PLAN_SEED", "0"))
DRAWS = int(os.environ.get("DEPLO_PLAN_DRAWS", "2"))
FIBERS = ("LR-fwd", "EG-rev")


def _inputs(shapes, dtype):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(*s, generator=g).to(dtype) for s in shapes]


PROGRAMS = {
    # name: (callable, input shapes)
    "matmul": (lambda a, b: a @ b, [(37, 53), (53, 70)]),
    "linear": (lambda x, w, b: torch.relu(F.linear(x, w, b)), [(3, 11, 40), (33, 40), (33,)]),
    "tall_skinny": (lambda a, b: a @ b, [(5, 1024), (1024, 24)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (67,), w, 1e-6), [(3, 5, 67), (67,)]),
    "softmax": (lambda x: torch.softmax(x, -1), [(6, 97)]),
    "attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        [(1, 4, 7, 24), (1, 2, 7, 24), (1, 2, 7, 24)],
    ),
    "pointwise": (lambda x, y: torch.sigmoid(x) * y + 1, [(9, 130), (130,)]),
}


def _draw(compiled, rng) -> list[dict]:
    """Per kind any kernel can take, DRAWS plan files: each kernel that can take the kind gets a
    random plan of it, the others a random plan of their heuristic's kind."""
    planned = compiled.planned()
    kernels = [(k.structural_key, k.sym_name.data, legal_classes(k)) for k in tile_kernels(planned)]
    kinds = sorted({kind for _, _, classes in kernels for kind, _ in classes})
    files = []
    for kind in kinds:
        for _ in range(DRAWS):
            entries = {}
            for key, name, classes in kernels:
                options = dict(classes)
                chosen = kind if kind in options else classes[0][0]
                plan = sample(chosen, options[chosen], rng)
                entries[key] = {"name": name, "kind": chosen, "knobs": dict(plan.knobs)}
            files.append({"format": "deplo-plans/1", "kernels": entries})
    return files


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_random_legal_plans_compute_the_same_result(program: str, dtype):
    fn, shapes = PROGRAMS[program]
    examples = _inputs(shapes, dtype)
    rng = random.Random(f"{SEED}/{program}/{dtype}")
    for plans in _draw(deplo.compile(fn, examples), rng):
        compiled = deplo.compile(fn, examples, schedule=plans)
        for k in tile_kernels(compiled.module("tile")):
            plan = k.the_plan
            if plan.kind == "matmul" and "tile-stage-chunks" in k.done_steps:
                predicted = shared_bytes(dict(plan.facts), plan.knob_dict)
                assert k.staged_bytes() == predicted, (k.sym_name.data, plan.text())
        exe = compiled.executable("cpu")
        for fiber in FIBERS:
            inputs = deplo.tools.api.random_inputs(compiled.program, seed=3)
            n = len(compiled.program.example_inputs)
            result = deplo.runtime.check.compare(
                exe.run(inputs, schedule=fiber),
                compiled.program.reference(inputs[:n]),
                compiled.output_element_types(),
            )
            assert result.ok, f"{fiber}: {result.line()}\n{plans}"
