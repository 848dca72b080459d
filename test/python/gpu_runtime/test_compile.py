"""compile_cubin: NVRTC from pip, ptxas reports, the on-disk cache and error messages."""

from pathlib import Path

import pytest

from deplo.runtime.gpu import (
    CudaCompileError,
    PtxasReport,
    compile_cubin,
    cuda_include_dirs,
    parse_ptxas_log,
)

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path / "cache"))


def kernel(name: str) -> str:
    return (KERNELS / name).read_text()


def test_include_dirs_have_cuda_headers():
    dirs = [Path(d) for d in cuda_include_dirs()]
    assert any((d / "cuda_fp16.h").is_file() for d in dirs)
    assert any((d / "cuda" / "pipeline").is_file() for d in dirs)  # cccl


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_reduction_report_and_cache(arch):
    res = compile_cubin(kernel("block_sum.cu"), arch=arch)
    assert not res.cached
    assert res.cubin[:4] == b"\x7fELF"
    assert f".target {arch}" in res.ptx
    rep = res.kernels["block_sum"]
    assert rep.registers > 0
    assert rep.barriers == 1
    assert rep.smem_bytes == 32 * 4  # __shared__ float warp_sums[32]
    assert (rep.spill_stores, rep.spill_loads, rep.stack_bytes) == (0, 0, 0)
    again = compile_cubin(kernel("block_sum.cu"), arch=arch)
    assert again.cached
    assert again.cubin == res.cubin
    assert again.kernels == res.kernels


def test_cache_key_includes_own_headers(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "scale.cuh").write_text("#define SCALE 2.f\n")
    src = '#include "scale.cuh"\nextern "C" __global__ void k(float* x) { x[0] *= SCALE; }\n'
    assert not compile_cubin(src, extra_include_dirs=[str(inc)]).cached
    assert compile_cubin(src, extra_include_dirs=[str(inc)]).cached
    (inc / "scale.cuh").write_text("#define SCALE 3.f\n")
    assert not compile_cubin(src, extra_include_dirs=[str(inc)]).cached


def test_spills_are_errors():
    with pytest.raises(CudaCompileError, match="spill") as err:
        compile_cubin(kernel("spill.cu"))
    assert "Registers are spilled to local memory in function 'spill'" in str(err.value)
    res = compile_cubin(kernel("spill.cu"), spills_are_errors=False)
    rep = res.kernels["spill"]
    assert rep.registers <= 32
    assert rep.spill_stores > 0 and rep.spill_loads > 0


def test_syntax_error_quotes_the_line():
    src = 'extern "C" __global__ void f(float* x) {\n  x[0] = 1.f\n  x[1] = 2.f;\n}\n'
    with pytest.raises(CudaCompileError) as err:
        compile_cubin(src, name="bad.cu")
    msg = str(err.value)
    assert 'bad.cu(3): error: expected a ";"' in msg  # the NVRTC log itself
    assert 'bad.cu:3: error: expected a ";"' in msg
    assert ">    3 |   x[1] = 2.f;" in msg
    assert "     2 |   x[0] = 1.f" in msg  # context
    assert err.value.source == src


def test_static_smem_over_48k_is_rejected():
    src = (
        'extern "C" __global__ void big(float* x) {\n'
        "  __shared__ float s[16384];\n"
        "  s[threadIdx.x] = x[threadIdx.x];\n"
        "  __syncthreads();\n"
        "  x[threadIdx.x] = s[(threadIdx.x + 1) & 16383];\n"
        "}\n"
    )
    with pytest.raises(CudaCompileError) as err:
        compile_cubin(src)
    msg = str(err.value)
    assert "kernel 'big' uses 65536 bytes of static __shared__ memory" in msg
    assert "48 KB" in msg


def test_max_static_smem_names_the_kernel():
    with pytest.raises(CudaCompileError, match="kernel 'block_sum' .* 128 bytes of static"):
        compile_cubin(kernel("block_sum.cu"), max_static_smem=64)


def test_parse_ptxas_log_two_kernels():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
"""
    assert parse_ptxas_log(log) == {
        "a": PtxasReport(40, 1, 2048, 8, 4, 8),
        "b": PtxasReport(registers=12),
    }
