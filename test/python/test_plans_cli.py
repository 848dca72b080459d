"""Plans as a user handles them: `deplo compile --plans`, `--schedule-out` then `--schedule` give
the same `.cu`; a changed knob changes what it controls and still checks; an illegal value or a
bad file is one line naming the kernel and the knob; `deplo.compile(..., schedule=dict)`."""

from __future__ import annotations

import json

import pytest
import torch
from test_cli import assert_clean_error, run

import deplo
from deplo.dialects.tile_plan import retarget
from deplo.passes.tile.planner import matmul_facts

MM = "torch.matmul(torch.randn(200,300), torch.randn(300,100))"
PROGRAMS = {
    "matmul": MM,
    "rms_norm": "torch.nn.RMSNorm(96)(torch.randn(2,5,96))",
    "softmax": "torch.softmax(torch.randn(4,200), -1)",
    "attention": "torch.nn.functional.scaled_dot_product_attention(torch.randn(1,2,9,64), "
                 "torch.randn(1,2,9,64), torch.randn(1,2,9,64), is_causal=True)",
}
# one knob per program that changes the code, with a legal new value
CHANGES = {
    "matmul": [("threads_m", 8), ("reg_n", 2), ("k_chunk", 16)],
    "rms_norm": [("vector", 1)],
    "softmax": [("threads", 32)],
    "attention": [("threads", 32)],
}


def _compile(expr: str, tmp_path, name: str, *extra: str) -> str:
    out = tmp_path / f"{name}.cu"
    p = run("deplo", "compile", "-c", expr, "--ir", "cuda", "-o", str(out), *extra)
    assert p.returncode == 0, p.stderr
    return out.read_text()


@pytest.mark.parametrize("program", PROGRAMS)
def test_written_plans_reproduce_the_cu_and_a_changed_knob_changes_it(program, tmp_path):
    expr = PROGRAMS[program]
    plans = tmp_path / "p.json"
    first = _compile(expr, tmp_path, "a", "--schedule-out", str(plans))
    assert _compile(expr, tmp_path, "b", "--schedule", str(plans)) == first
    data = json.loads(plans.read_text())
    (entry,) = data["kernels"].values()
    for knob, value in CHANGES[program]:
        assert entry["knobs"][knob] != value
        changed = json.loads(json.dumps(data))
        next(iter(changed["kernels"].values()))["knobs"][knob] = value
        edited = tmp_path / f"{knob}.json"
        edited.write_text(json.dumps(changed))
        assert _compile(expr, tmp_path, knob, "--schedule", str(edited)) != first, knob
        p = run("deplo", "run", "-c", expr, "--schedule", str(edited), "--check")
        assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize(
    "knobs, needles",
    [
        ({"threads_m": 4096}, ["kernel @matmul", "knob threads_m", "1024"]),
        ({"mma": True}, ["knob mma", "f16 or bf16"]),
        ({"k_chunk": 300}, ["knob k_chunk"]),
        ({"splits": 7}, ["knob splits", "divisor of K = 300"]),
        ({"splits": 1, "k_chunk": 128, "threads_m": 32, "threads_n": 32, "reg_m": 4, "reg_n": 4},
         ["knob k_chunk", "shared memory"]),
        ({"wobble": 1}, ["knob wobble", "unknown knob"]),
        ({"k_chunk": "32"}, ["knob k_chunk", "expected an integer"]),
        ({"threads_m": 0}, ["knob threads_m", "expected an integer >= 1, got 0"]),  # (was a
        ({"splits": 0}, ["knob splits", ">= 1"]),  # ZeroDivisionError in the heuristic)
        ({"splits": 3, "k_chunk": 100}, ["knob k_chunk", "the 100 of K = 300 a block walks"]),
    ],
)
def test_an_illegal_plan_is_one_line_naming_the_kernel_and_the_knob(knobs, needles, tmp_path):
    plans = tmp_path / "p.json"
    _compile(MM, tmp_path, "a", "--schedule-out", str(plans))
    data = json.loads(plans.read_text())
    next(iter(data["kernels"].values()))["knobs"].update(knobs)
    plans.write_text(json.dumps(data))
    p = run("deplo", "compile", "-c", MM, "--schedule", str(plans))
    assert_clean_error(p, str(plans), *needles)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.parametrize(
    "text, needle",
    [
        ("{", "not JSON"),
        ('{"format": "deplo-plans/1", "kernels": {"0123456789abcdef": {"kind": "matmul"}}}',
         "matches no kernel"),
        ('{"format": "deplo-plans/1", "kernels": {}, "extra": 1}', "unknown field 'extra'"),
        ('{"format": "other"}', "deplo-plans/1"),
    ],
)
def test_a_bad_plan_file_is_one_line(text, needle, tmp_path):
    plans = tmp_path / "p.json"
    plans.write_text(text)
    assert_clean_error(run("deplo", "compile", "-c", MM, "--schedule", str(plans)), needle)


def test_plans_lists_each_kernel_with_its_space():
    p = run("deplo", "compile", "-c", MM, "--plans")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("@matmul [") and "plan   matmul(chain = [200, 100]" in lines[1]
    assert lines[2].startswith("  space  matmul ") and "pointwise" in lines[2]


def test_the_api_takes_plans_as_a_dict():
    mod = torch.nn.Linear(64, 48)
    x = torch.randn(37, 64)
    plans = deplo.compile(mod, [x]).plans()
    entry = next(iter(plans["kernels"].values()))
    entry["knobs"] = {"reg_m": 1, "reg_n": 1}  # the rest: the heuristic's around them
    c = deplo.compile(mod, [x], schedule=plans)
    assert "reg_m = 1, reg_n = 1" in c.text("tile")
    assert c.check().ok


def test_fiber_schedules_flag_and_no_abbreviations():
    p = run("deplo", "run", "-c", "torch.relu(torch.randn(8, 8))", "--fiber-schedules", "all",
            "--check")
    assert p.returncode == 0 and p.stdout.count("PASS") == 4, p.stdout
    bad = run("deplo", "run", "-c", "torch.relu(torch.randn(8, 8))", "--fiber", "all")
    assert bad.returncode == 2 and "unrecognized arguments: --fiber" in bad.stderr


def test_a_plan_retargets_to_a_smaller_shape():
    c = deplo.compile("torch.matmul(torch.randn(200,300), torch.randn(300,100))")
    from deplo.analysis.nest import tile_kernels

    kernel = tile_kernels(c.planned())[0]
    plan = kernel.the_plan
    small = deplo.compile("torch.matmul(torch.randn(20,30), torch.randn(30,10))")
    facts = matmul_facts(tile_kernels(small.planned())[0])
    moved = retarget(plan, facts)
    assert moved.facts == facts and not moved.violations()
    assert moved.knob("reg_m") <= 20 and moved.knob("k_chunk") < 30


def test_a_whole_plan_from_before_a_knob_keeps_its_kernel():
    """A complete plan written before `transpose` and `split_sum` existed (a plan file, the
    tuning store) keeps their defaults — the kernel it was measured for — while a partial one
    gets the heuristic's choices around its pins."""
    lin = "F.linear(torch.randn(32,2048), torch.randn(256,2048))"
    plans = deplo.compile(lin).plans()
    entry = next(iter(plans["kernels"].values()))
    assert entry["knobs"]["transpose"] and entry["knobs"]["split_sum"] == "last_block"
    old = {k: v for k, v in entry["knobs"].items() if k not in ("transpose", "split_sum")}
    entry["knobs"] = old
    text = deplo.compile(lin, schedule=plans).text("tile")
    assert "split_sum = kernel" in text and "transpose = false" in text and "@linear_sum" in text
    entry["knobs"] = {"reg_m": 2}
    text = deplo.compile(lin, schedule=plans).text("tile")
    assert "split_sum = last_block" in text and "transpose = true" in text


def test_bisect_a_split_k_finished_by_its_last_block():
    p = run("deplo", "bisect", "-c", "F.linear(torch.randn(64,512), torch.randn(64,512))")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "mismatch" not in p.stdout + p.stderr, p.stdout


def test_bench_stops_at_an_illegal_plan_file(tmp_path):
    """`deplo bench --schedule` with an illegal knob is the user's error, as `deplo run`'s: one
    line naming the file, kernel and knob, status 1 (the case was counted "unsupported", its
    reason cut short, and the run exited 0)."""
    plans = tmp_path / "p.json"
    args = ("deplo", "bench", "--suite", "tiny", "--kernel", "q_proj", "--dtype", "fp32",
            "--no-gpu", "-q", "-o", str(tmp_path / "b.json"))
    assert run(*args, "--schedule-out", str(plans)).returncode == 0
    data = json.loads(plans.read_text())
    next(iter(data["kernels"].values()))["knobs"]["threads"] = 7
    plans.write_text(json.dumps(data))
    assert_clean_error(run(*args, "--schedule", str(plans)), str(plans), "knob threads",
                       "multiple of 32")


@pytest.mark.parametrize("kind, needles", [
    ("matmull", ["kind: unknown kind 'matmull'", "expected one of matmul"]),
    ("attention", ["kind: the kernel cannot take an attention plan", "it can take: matmul"]),
    (3, ['expected "kind" a string']),
])
def test_a_wrong_kind_names_the_files_field(kind, needles, tmp_path):
    """Errors about a plan's kind say "kind", the plan file's field (they said "class")."""
    plans = tmp_path / "p.json"
    _compile(MM, tmp_path, "a", "--schedule-out", str(plans))
    data = json.loads(plans.read_text())
    next(iter(data["kernels"].values()))["kind"] = kind
    plans.write_text(json.dumps(data))
    assert_clean_error(run("deplo", "compile", "-c", MM, "--schedule", str(plans)), *needles)


def test_options_no_kernel_takes_are_a_warning(tmp_path):
    """tile-map-2d's knobs on a program without a matmul: the IR is unchanged, and stderr says
    nothing took them (before, silence)."""
    loop = tmp_path / "softmax.mlir"
    assert run("deplo", "compile", "-c", "torch.softmax(torch.randn(64,200),-1)", "--ir", "loop",
               "-o", str(loop)).returncode == 0
    plain = run("deplo-opt", str(loop), "-p", "loop-to-tile,tile-plan,tile-map-2d")
    pinned = run("deplo-opt", str(loop), "-p",
                 "loop-to-tile,tile-plan,tile-map-2d{threads-m=8 threads-n=16}")
    assert plain.returncode == pinned.returncode == 0 and plain.stdout == pinned.stdout
    assert "warning" not in plain.stderr
    assert "warning: tile-map-2d{threads-m=8 threads-n=16}: no kernel has this step, so nothing " \
           "takes the options (@softmax row_reduce)" in pinned.stderr
