"""What deplo knows about the GPU, defined once: CUDA's execution limits (the verifiers of every
level, the planner and the runtimes read them) and the sm_90 parameter table of the cost model
(analysis/cost_model.py), every value with its source.

The limits hold on every GPU deplo targets (sm_80 and up; CUDA C++ Programming Guide, "Compute
Capabilities", technical specifications). The parameters are H100 SXM5 and H200; the sources
and where they disagree are in docs/sm90_constants.md.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP = 32
"""Threads per warp: the width of shuffles and the unit of a block's thread count."""

MAX_BLOCK_THREADS = 1024
"""Threads per block."""

SECTOR = 32
"""Bytes of a global memory sector: the unit L1 asks L2 for and L2 for DRAM (CUDA C++ Best
Practices Guide, coalesced access)."""

MAX_BLOCK = (1024, 1024, 64)
"""Block size per axis (x, y, z)."""

MAX_GRID = (2**31 - 1, 65535, 65535)
"""Grid size per axis (x, y, z)."""

SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory per block. A kernel that declares more gets it as dynamic shared memory
(kernel-to-cuda) with the opt-in attribute at launch (runtime/gpu/driver.py)."""

MAX_SHARED_MEMORY_BYTES = 227 * 1024
"""Shared memory per block with the opt-in attribute on sm_90 (CUDA C++ Programming Guide,
technical specifications: 227 KB; sm_80 163 KB, sm_86/89 99 KB, where a launch past it fails
with the driver's error)."""


@dataclass(frozen=True)
class Gpu:
    """One GPU's parameters, each with its source beside it (the table with every source and
    the disagreements between them: shared/sm90_constants.md). To be refit from measurements
    on the GPU only."""

    name: str
    sms: int  # H100 SXM5: 132 SMs (NVIDIA H100 datasheet)
    clock_ghz: float  # boost clock at which the peaks are quoted (Hopper whitepaper)
    dram_bw: float  # bytes/s, spec (datasheet: H100 SXM 3.35 TB/s, H200 4.8 TB/s)
    dram_efficiency: float  # fraction of the spec a streaming kernel reaches (measured)
    l2_bytes: int  # 50 MB (Hopper whitepaper)
    l2_bw: float  # bytes/s (measured)
    dram_latency: float  # cycles, a global load that misses L2 (measured)
    l2_latency: float  # cycles, a global load that hits L2 (measured)
    l1_latency: float  # cycles, a global load that hits L1 (measured)
    l1_bytes: int  # L1 data cache + shared memory per SM (whitepaper: 256 KB)
    l1_sectors_per_sm: int  # 32-byte sectors L1 serves per clock per SM (128 B/clk)
    fp32_per_sm: int  # FP32 results per clock per SM (CUDA Programming Guide, throughput table)
    sfu_per_sm: int  # special-function results (exp2, rsqrt, sin, ...) per clock per SM (idem)
    mma_flops: float  # FLOP/s of mma.sync m16n8k16 fp16/bf16 with fp32 accumulation (measured)
    dense_tensor_flops: float  # FLOP/s, dense fp16/bf16 tensor peak (datasheet; wgmma only)
    issue_per_sm: int  # warp instructions issued per clock per SM (4 schedulers)
    smem_wavefronts_per_sm: int  # shared-memory wavefronts (32 banks x 4 B) per clock per SM
    launch_us: float  # one kernel launch in a stream, as the GPU sees it (measured)
    ramp_us: float = 0.7  # a kernel touching global memory, beyond its launch, its bytes and
    # one DRAM latency: blocks dispatched, the last stores drained. This project's timing on the
    # H200 (2026-11-27, docs/gpu-runs.md): an empty kernel 2.88 us between its events, a 1 MB
    # read by 1056 blocks 4.32 us from a cold L2: 1.44 more, of which its bytes at the streaming
    # rate (0.25) and one DRAM latency (0.45) explain 0.7. Assumed alike on the H100
    max_threads_per_sm: int = 2048  # CUDA Programming Guide, compute capability 9.0
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    smem_per_sm: int = 228 * 1024
    mlp: int = 4  # independent global loads a warp keeps in flight (nvcc unrolls streaming
    # loops 4x; a modelling assumption, to refit from measurements)
    latency_warps: float = 3.6  # warps a scheduler needs to keep its pipes busy: with fewer,
    # shared-memory and dependent-FMA latencies show. Nsight Compute on the H200 (2026-11-26,
    # second run; docs/gpu-runs.md): an fp32 SIMT matmul with 2.32 warps a scheduler issued 0.65
    # instructions a cycle per scheduler (2.32 / 0.65 = 3.6)
    latency_warps_mma: float = 5.5  # the same with mma.sync and ldmatrix, whose latencies are
    # longer: a bf16 matmul with 1.34 warps a scheduler issued 0.25 a cycle (1.34 / 0.25 = 5.4,
    # rounded up: its ldmatrix-to-mma chains)

    def pipe_rate(self, warps: float, tensor_cores: bool = False) -> float:
        """The fraction of an SM's pipe rates `warps` resident warps reach: each of the
        `issue_per_sm` schedulers needs `latency_warps` of them (Little's law for instructions;
        `latency_warps_mma` for tensor-core kernels); the cost model and the matmul heuristic
        both scale by it."""
        need = self.latency_warps_mma if tensor_cores else self.latency_warps
        schedulers = max(1.0, min(self.issue_per_sm, warps))
        return schedulers / self.issue_per_sm * min(1.0, warps / schedulers / need)

    def stream_bw(self, warps: float, access_bytes: float) -> float:
        """Bytes/s one SM streams from DRAM when `warps` warps each keep `mlp` accesses of
        `access_bytes` in flight (Little's law over the DRAM latency): what a kernel on few
        SMs reaches, the cost model's and loop-split-reductions' one rule."""
        return warps * self.mlp * access_bytes / (self.dram_latency / (self.clock_ghz * 1e9))

    @property
    def fp32_flops(self) -> float:
        return 2 * self.fp32_per_sm * self.sms * self.clock_ghz * 1e9


H100_SXM = Gpu(
    name="H100 SXM5",
    sms=132,  # NVIDIA H100 datasheet; device property multiProcessorCount (H100 SXM dump)
    clock_ghz=1.98,  # clockRate 1980 MHz (device dump); the FP32 peak is quoted at it
    dram_bw=3.35e12,  # datasheet: HBM3 3.35 TB/s (2 x 2619 MHz x 5120 bit)
    dram_efficiency=0.89,  # BabelStream triad 2.97 TB/s on H100 SXM (Azure ND H100 v5 results)
    l2_bytes=50 * 2**20,  # Hopper whitepaper; device property l2CacheSize 52428800
    l2_bw=7.0e12,  # measured L2 read bandwidth: 7.0 TB/s on H100 PCIe, ~10 on H200 (RRZE
    # gpu-benches gpu-l2-cache); 4.9 TB/s by other tools: a middle value until measured here
    dram_latency=800,  # cycles: 650-700 idle pointer chase (RRZE, Luo et al. repo), more loaded
    l2_latency=270,  # cycles, near partition (RRZE gpu-latency h100_pcie: 265; 480 far)
    l1_latency=33,  # cycles (RRZE gpu-latency h100: 32-33; Chips and Cheese H100: ~32)
    l1_bytes=256 * 1024,  # L1 + shared memory per SM (Hopper whitepaper; cuda_occupancy.h)
    l1_sectors_per_sm=4,  # 128 B/clk/SM; measured ~126 B/clk/SM (RRZE gpu-cache)
    fp32_per_sm=128,  # FP32 lanes per SM (device property; 67 TF = 132 x 256 x 1.98 GHz)
    sfu_per_sm=16,  # CUDA C++ Programming Guide, arithmetic throughput (via FA3 footnote 5)
    mma_flops=0.65 * 989e12,  # mma.sync reaches ~65% of the dense peak on Hopper (Luo et al.,
    # arXiv 2501.12084: 494 of 757 TF on H800); FlashAttention-2 (mma.sync) reaches 35-39%
    dense_tensor_flops=989e12,  # datasheet dense FP16/BF16 (at 1.83 GHz; wgmma only)
    issue_per_sm=4,  # 4 schedulers (sub-partitions), one warp instruction per clock each
    smem_wavefronts_per_sm=1,  # 32 banks x 4 B per clock (CUDA Best Practices Guide)
    launch_us=2.5,  # back-to-back dependent launches in one stream: ~2.5 us (RRZE
    # gpu-small-kernels, H200); ~1.3 us inside a CUDA graph
)
H200 = Gpu(**{**H100_SXM.__dict__, "name": "H200 SXM",
              "dram_bw": 4.8e12,  # H200 product page: HBM3e 4.8 TB/s
              "dram_efficiency": 0.86,  # BabelStream triad 4.15 TB/s (Azure ND H200 v5)
              "l2_bw": 10.0e12})  # RRZE gpu-l2-cache h200: 9.7-10.2 TB/s
# launch_us stays the H100's: the RRZE figure is the H200's own, and the two share the GH100
# front end (this project's event timing of an empty kernel on the H200, 2026-11-27, gave 2.88 us
# cold and 2.98 warm, the events' own cost included)
GPUS = {"h100": H100_SXM, "h200": H200}


def model_of(device: str) -> str:
    """The parameter set (GPUS key) of a device description (`gpu_probe`'s: "NVIDIA H200,
    sm_90, ..."): an H200 is timed against the H200 set, anything else against the H100's."""
    return "h200" if "H200" in device.upper() else "h100"


def model_for(chosen: str | None, on_gpu: bool, device: str) -> str:
    """The parameter set to predict with: the user's (--gpu-model), else that of the GPU the
    run is timed on, else the H100's."""
    return chosen or (model_of(device) if on_gpu else "h100")


def add_gpu_model_argument(parser) -> None:
    """`--gpu-model` of the commands that predict or lower for it (compile, run, bench, tune, the
    validation pairs); None unless given: model_for decides."""
    parser.add_argument("--gpu-model", choices=sorted(GPUS), default=None,
                        help="the parameters of the model's predictions (default: the GPU's, "
                             "else h100)")
