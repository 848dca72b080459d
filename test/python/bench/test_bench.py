"""The benchmark suite (runtime/bench.py) and `deplo bench` / `deplo compile -v` (tools/), without
a GPU: the suite holds every case of issue 4, a tiny suite runs end to end into valid JSON, the
predicted bytes and FLOPs are what the shapes say, and the launch replay that the GPU timing
uses computes the right values (checked here on the CPU runtime).

The whole LLM suite at one sequence length is `slow`: `pytest -m slow test/python/bench`.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import torch

import deplo
from deplo.runtime.bench import (
    DECODE_KERNELS,
    KERNELS,
    QWEN25_7B,
    SUITES,
    TINY,
    TINYLLAMA,
    Arg,
    Case,
    llm_suite,
)
from deplo.tools.bench import SCHEMA, format_table, run_bench, write_json


def cli(*argv: str) -> tuple[int, str, str]:
    from deplo.tools.deplo_main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def by_name(cases: list[Case]) -> dict[str, Case]:
    return {c.name: c for c in cases}


def test_llm_suite_has_every_case_of_the_issue() -> None:
    cases = llm_suite()
    assert len(KERNELS) == 15  # the 14 kernels of the issue and the whole layer
    assert len(cases) == 2 * 3 * 2 * 15 == 180  # models x seqs x dtypes x kernels
    assert len({c.name for c in cases}) == 180
    combos = {(c.model, c.seq, c.dtype) for c in cases}
    assert combos == {(m, s, d) for m in ("tinyllama-1.1b", "qwen2.5-7b")
                      for s in (32, 128, 512) for d in ("fp32", "bf16")}
    for combo in combos:
        assert sorted(c.kernel for c in cases if (c.model, c.seq, c.dtype) == combo) == sorted(KERNELS)
    assert (TINYLLAMA.hidden, TINYLLAMA.intermediate, TINYLLAMA.heads, TINYLLAMA.kv_heads,
            TINYLLAMA.head_dim) == (2048, 5632, 32, 4, 64)
    assert (QWEN25_7B.hidden, QWEN25_7B.intermediate, QWEN25_7B.heads, QWEN25_7B.kv_heads,
            QWEN25_7B.head_dim) == (3584, 18944, 28, 4, 128)


def test_llm_suite_shapes() -> None:
    cases = by_name(llm_suite())

    def shapes(name: str) -> list[tuple[int, ...]]:
        return [a.shape for a in cases[name].args]

    assert shapes("tinyllama-1.1b/q_proj/s32/fp32") == [(1, 32, 2048), (2048, 2048)]
    assert shapes("qwen2.5-7b/k_proj/s128/bf16") == [(1, 128, 3584), (512, 3584), (512,)]  # bias
    assert shapes("qwen2.5-7b/down_proj/s512/fp32") == [(1, 512, 18944), (3584, 18944)]
    assert shapes("tinyllama-1.1b/softmax/s512/bf16") == [(1, 32, 512, 512)]
    assert shapes("qwen2.5-7b/sdpa_causal_gqa/s32/fp32") == [(1, 28, 32, 128), (1, 4, 32, 128),
                                                            (1, 4, 32, 128)]
    naive = cases["tinyllama-1.1b/attention_naive/s128/fp32"]
    assert naive.args[-1] == Arg("mask", (1, 1, 128, 128), "causal_mask")
    assert shapes("qwen2.5-7b/silu_mul_down/s32/bf16") == [(1, 32, 18944), (1, 32, 18944),
                                                          (3584, 18944)]
    assert llm_suite(["bf16"], [128], [TINYLLAMA])[0].example_inputs()[0].dtype == torch.bfloat16


def test_decode_suite_is_one_token_over_a_cache() -> None:
    cases = llm_suite(suite="decode")
    assert len(cases) == 2 * 2 * 2 * len(DECODE_KERNELS) == 112
    cases = by_name(cases)

    def shapes(name: str) -> list[tuple[int, ...]]:
        return [a.shape for a in cases[name].args]

    assert shapes("tinyllama-1.1b/k_proj/s512/fp32") == [(1, 1, 2048), (256, 2048)]
    assert shapes("qwen2.5-7b/sdpa_gqa/s2048/bf16") == [(1, 28, 1, 128), (1, 4, 2048, 128),
                                                       (1, 4, 2048, 128)]
    assert shapes("tinyllama-1.1b/attention_naive/s512/fp32")[-1] == (1, 1, 1, 512)
    assert shapes("tinyllama-1.1b/softmax/s2048/bf16") == [(1, 32, 1, 2048)]
    assert not any(c.kernel in ("decoder_layer", "sdpa_causal_gqa") for c in cases.values())


def test_decode_attention_compiles_to_split_rows() -> None:
    """A decoded token's attention: lanes owning keys, the cache in slices (split-KV)."""
    (case,) = [c for c in llm_suite(["fp32"], [512], [TINYLLAMA], suite="decode")
               if c.kernel == "sdpa_gqa"]
    c = deplo.compile(case.fn, case.example_inputs())
    (plan,) = c.plans()["kernels"].values()
    assert plan["kind"] == "attention" and plan["knobs"]["key_splits"] > 1


def test_cli_suite_choices_are_the_suites() -> None:
    from deplo.tools.deplo_main import build_parser

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]
    suite = next(a for a in bench._actions if a.dest == "suite")
    assert sorted(suite.choices) == sorted(SUITES)


def test_meta_inputs_compile_at_full_size() -> None:
    """torch.export needs only shapes: the largest Qwen projection captures on meta tensors,
    and its Loop IR counts exactly 2·S·N·K FLOPs."""
    case = by_name(llm_suite(["fp32"], [512], [QWEN25_7B]))["qwen2.5-7b/down_proj/s512/fp32"]
    inputs = case.example_inputs()
    assert all(t.device.type == "meta" for t in inputs)
    from deplo.tools.bench import static_figures

    fig = static_figures(deplo.compile(case.fn, inputs), "sm_90")
    assert fig["flops"] == 2 * 512 * 3584 * 18944
    assert fig["min_bytes"] == 4 * (512 * 18944 + 3584 * 18944 + 512 * 3584)


def test_counts_follow_the_shapes() -> None:
    (case,) = [c for c in llm_suite(["fp32"], models=[TINY], suite="tiny") if c.kernel == "q_proj"]
    s, n, k = 8, TINY.heads * TINY.head_dim, TINY.hidden
    from deplo.tools.bench import static_figures

    fig = static_figures(deplo.compile(case.fn, case.example_inputs()), "sm_90")
    assert fig["flops"] == 2 * s * n * k + s * n  # the bias add
    assert fig["min_bytes"] == 4 * (s * k + n * k + n + s * n)
    assert fig["loop_bytes"] == 4 * (2 * s * n * k + s * n + s * n)  # x and w per MAC, b, out


def unsupported_case() -> Case:
    return Case("tiny", "tiny", "polygamma", 8, "fp32", lambda x: torch.polygamma(1, x.tanh()),
                (Arg("x", (8, 8)),))


def test_tiny_suite_end_to_end_json(tmp_path) -> None:
    cases = llm_suite(["fp32", "bf16"], models=[TINY], suite="tiny")
    cases = [c for c in cases if c.dtype == "fp32" or c.kernel in ("rmsnorm", "sdpa_causal_gqa")]
    cases.append(unsupported_case())
    report = run_bench(cases, gpu=False)
    path = tmp_path / "bench.json"
    write_json(report, str(path))
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA and data["gpu"] is None
    assert data["gpu_model"] == "H100 SXM5"  # without a GPU: the H100's parameters
    assert data["summary"]["cases"] == len(cases) == 18
    entries = {c["name"]: c for c in data["cases"]}
    bad = entries["tiny/polygamma/s8/fp32"]
    assert bad["status"] == "unsupported" and bad["stage"] == "capture"
    assert "polygamma" in bad["reason"] and "static" not in bad
    ok = [c for c in data["cases"] if c["status"] == "ok"]
    assert data["summary"]["ok"] == len(ok) and data["summary"]["unsupported"] == len(cases) - len(ok)
    assert len(ok) >= 16  # every tiny kernel compiles today
    for c in ok:
        s = c["static"]
        assert s["kernels"] == len(s["per_kernel"]) >= 1 and s["launches"] >= s["kernels"]
        assert s["min_bytes"] > 0 and s["loop_bytes"] > 0 and s["flops"] > 0
        for k in s["per_kernel"]:
            assert k["registers"] > 0 and k["spill_stores"] == k["spill_loads"] == 0
            assert len(k["grid"]) == len(k["block"]) == 3 and k["launches"] >= 1
        assert "gpu" not in c
    assert entries["tiny/sdpa_causal_gqa/s8/bf16"]["static"]["kernels"] >= 1
    table = format_table(report)
    assert "tiny/polygamma/s8/fp32" in table and "unsupported (capture)" in table
    assert f"{len(ok)}/18 cases compile" in table


def test_deplo_bench_command(tmp_path) -> None:
    out = tmp_path / "b.json"
    code, stdout, stderr = cli("bench", "--suite", "tiny", "--dtype", "bf16", "--kernel",
                               "softmax,silu_mul", "-o", str(out))
    assert code == 0, stderr
    data = json.loads(out.read_text())
    assert [c["name"] for c in data["cases"]] == ["tiny/softmax/s8/bf16", "tiny/silu_mul/s8/bf16"]
    assert "2/2 cases compile" in stdout and "[2/2]" in stderr
    code, _, stderr = cli("bench", "--suite", "tiny", "--dtype", "fp64")
    assert code == 1 and "unknown dtype" in stderr
    h200 = tmp_path / "h200.json"  # without a GPU, predicted with the H200's parameters
    code, _, stderr = cli("bench", "--suite", "tiny", "--dtype", "bf16", "--kernel", "silu_mul",
                          "--gpu-model", "h200", "--no-gpu", "-o", str(h200))
    assert code == 0, stderr
    a, b = data["cases"][1]["static"], json.loads(h200.read_text())["cases"][0]["static"]
    assert json.loads(h200.read_text())["gpu_model"] == "H200 SXM" != data["gpu_model"]
    assert b["predicted_us"] <= a["predicted_us"]  # more bandwidth, the same die and launch


def test_an_interrupted_bench_reports_the_cases_done(tmp_path, monkeypatch) -> None:
    """Ctrl-C ends the run with the finished cases written, one line, status 130."""
    import deplo.tools.bench as bench

    done = bench.bench_case

    def stop_at_second(case, **kw):
        if case.kernel == "silu_mul":
            raise KeyboardInterrupt
        return done(case, **kw)

    monkeypatch.setattr(bench, "bench_case", stop_at_second)
    out = tmp_path / "b.json"
    code, stdout, stderr = cli("bench", "--suite", "tiny", "--dtype", "bf16", "--kernel",
                               "softmax,silu_mul", "-o", str(out))
    assert code == 130 and "Traceback" not in stderr
    assert "interrupted at case 2 of 2 (tiny/silu_mul/s8/bf16)" in stderr
    data = json.loads(out.read_text())
    assert [c["name"] for c in data["cases"]] == ["tiny/softmax/s8/bf16"]
    assert data["interrupted"].startswith("interrupted at case 2")


def test_compile_verbose_prints_ptxas_per_kernel() -> None:
    expr = ("torch.nn.functional.scaled_dot_product_attention(torch.randn(1,2,8,16), "
            "torch.randn(1,2,8,16), torch.randn(1,2,8,16), is_causal=True)")
    code, stdout, stderr = cli("compile", "-c", expr, "--ir", "cuda", "-v")
    assert code == 0, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("deplo: ptxas sm_90 ")]
    assert len(lines) == stdout.count("__global__") >= 1  # sdpa is one flash kernel since loop-online-softmax
    assert all("registers" in ln and "spills" in ln and "smem" in ln for ln in lines)
    _, _, quiet = cli("compile", "-c", expr, "--ir", "cuda")
    assert "ptxas" not in quiet


@pytest.mark.slow
def test_llm_suite_at_seq_32_compiles(request) -> None:
    """Every LLM case at seq 32 compiles to CUDA without spills (about 20 s)."""
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("slow: run with `pytest -m slow test/python/bench`")
    report = run_bench(llm_suite(seqs=[32]), gpu=False)
    bad = [f"{c['name']}: {c.get('reason')}" for c in report["cases"] if c["status"] != "ok"]
    assert not bad, "\n".join(bad)
    assert not any(c["static"]["spills"] for c in report["cases"])


def test_predictions_use_the_parameters_of_the_card_they_are_timed_on() -> None:
    from deplo.hardware import model_of

    assert model_of("NVIDIA H200, sm_90, driver CUDA 13.0") == "h200"
    assert model_of("NVIDIA H100 80GB HBM3, sm_90, driver CUDA 13.0") == "h100"
    assert model_of("no NVIDIA driver") == "h100"
