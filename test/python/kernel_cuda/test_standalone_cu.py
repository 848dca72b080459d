"""The emitted `.cu` stands alone: plain `nvcc -cubin -arch=sm_90 k.cu`, no include path, accepts
it (the prelude is inlined), for fp32, bf16 tensor-core and attention kernels of the LLM suite."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_cli import run

NVCC = shutil.which("nvcc")
PROGRAMS = {
    "rmsnorm_fp32": "torch.randn(8,256) * torch.rsqrt(torch.randn(8,256).pow(2).mean(-1, keepdim=True) + 1e-6)",
    "matmul_bf16": "torch.matmul(torch.randn(64,128,dtype=torch.bfloat16), torch.randn(128,64,dtype=torch.bfloat16))",
    "sdpa_bf16": "F.scaled_dot_product_attention(torch.randn(1,4,32,64,dtype=torch.bfloat16), "
                 "torch.randn(1,2,32,64,dtype=torch.bfloat16), torch.randn(1,2,32,64,dtype=torch.bfloat16), "
                 "is_causal=True, enable_gqa=True)",
}


@pytest.mark.skipif(NVCC is None, reason="no nvcc on the PATH")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_plain_nvcc_accepts_the_emitted_cu(tmp_path, name: str) -> None:
    cu = tmp_path / "k.cu"
    p = run("deplo", "compile", "-c", PROGRAMS[name], "--ir", "cuda", "-o", str(cu))
    assert p.returncode == 0, p.stderr
    done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", cu.name, "-o", "k.cubin"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0


def _suite_sources(dtype: str) -> list[tuple[str, str]]:
    import deplo
    from deplo.runtime.bench import llm_suite

    return [(c.name, deplo.compile(c.fn, c.example_inputs()).cuda_source)
            for c in llm_suite([dtype], suite="tiny")]


def _nvcc_all(tmp_path, sources: list[tuple[str, str]]) -> list[str]:
    from concurrent.futures import ThreadPoolExecutor

    def build(item):
        i, (name, src) = item
        cu = tmp_path / f"case{i}.cu"
        cu.write_text(src)
        done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", cu.name, "-o", f"case{i}.cubin"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
        return None if done.returncode == 0 else f"{name}: {done.stderr[-500:]}"

    with ThreadPoolExecutor(2) as pool:
        return [e for e in pool.map(build, enumerate(sources)) if e]


@pytest.mark.skipif(NVCC is None, reason="no nvcc on the PATH")
def test_plain_nvcc_accepts_every_kernel_of_the_tiny_llm_suite(tmp_path) -> None:
    """Every kernel kind of the LLM suite (projections, fused RMSNorm, SiLU, attention, a whole
    decoder layer) at small shapes, bf16: the tensor-core and 16-bit paths."""
    sources = _suite_sources("bf16")
    assert len(sources) >= 15
    assert _nvcc_all(tmp_path, sources) == []


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="no nvcc on the PATH")
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_plain_nvcc_accepts_every_emitted_cu_of_the_llm_suite(request, tmp_path, dtype: str) -> None:
    """Every case of the LLM suite (2.5 min for both dtypes on 2 cores)."""
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("slow: run with `pytest -m slow test/python/kernel_cuda`")
    import deplo
    from deplo.runtime.bench import llm_suite

    sources = [(c.name, deplo.compile(c.fn, c.example_inputs()).cuda_source)
               for c in llm_suite([dtype])]
    assert _nvcc_all(tmp_path, sources) == []
