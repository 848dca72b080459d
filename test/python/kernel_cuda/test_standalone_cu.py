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
    done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", cu.name, "-o", "k.cubin"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0
