"""GPU runtime: NVRTC compile + cubin cache, ptxas reports, SASS opcode counts, driver launch.
Compiling and SASS inspection work without a GPU; GpuModule needs one (NoGpuError otherwise):

    res = compile_cubin(src, arch="sm_90a")
    sass_opcodes(res.cubin)["LDGSTS.E.BYPASS.128"]     # pip's cuobjdump + nvdisasm
    ok, reason = gpu_probe()
    GpuModule(res.cubin, signatures=sigs).launch("k", grid, block, [x, y, n])
"""

from deplo.runtime.gpu.driver import CudaDriverError, GpuModule, NoGpuError, device_arch, gpu_probe
from deplo.runtime.gpu.nvrtc import (
    CompileResult,
    CudaCompileError,
    compile_cubin,
    cuda_include_dirs,
    nvrtc_version,
)
from deplo.runtime.gpu.ptxas import PtxasReport, parse_ptxas_log
from deplo.runtime.gpu.sass import (
    SassToolError,
    count_prefix,
    count_regex,
    sass_by_kernel,
    sass_opcodes,
    sass_text,
)

__all__ = [
    "CompileResult",
    "CudaCompileError",
    "CudaDriverError",
    "GpuModule",
    "NoGpuError",
    "PtxasReport",
    "SassToolError",
    "compile_cubin",
    "count_prefix",
    "count_regex",
    "cuda_include_dirs",
    "device_arch",
    "gpu_probe",
    "nvrtc_version",
    "parse_ptxas_log",
    "sass_by_kernel",
    "sass_opcodes",
    "sass_text",
]
