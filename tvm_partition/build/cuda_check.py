"""Do a build's CUDA kernels compile, and fit the GPU they are meant for? Checked without a GPU.

Every CUDA module of an executable is compiled with NVRTC the way TVM's loader compiles it on the
GPU machine (:func:`tvm_partition.build.nvrtc.compile_cubin`), for each architecture asked: sm_75
(RTX 2060 class, EOP's GPU), sm_87 (Jetson Orin), sm_90 (H100; TVM's loader asks NVRTC for
``sm_90a`` there). Then each kernel's resources, read from the cubin
(:mod:`tvm_partition.build.cubin`), are checked against the architecture's limits (CUDA C
Programming Guide, "Technical Specifications per Compute Capability"; the CUDA Occupancy
Calculator's allocation rules) and its launch configuration:

* threads per block: TVM writes ``__launch_bounds__(N)`` with N the product of the kernel's
  ``threadIdx`` extents (``CodeGenCUDA::PrintExtraAttrs``), so N is what every launch uses; it
  must not exceed 1024 (ptxas only warns and ignores a larger bound). A kernel with no bound is
  launched with one thread, or with extents known only at run time: it is checked at 1024;
* registers: at most 255 per thread, and the block's registers, allocated per warp in units of
  256, must fit the SM's register file (64 Ki registers) or the launch fails with "too many
  resources requested for launch";
* shared memory: the kernel's static shared memory must fit the static limit (48 KiB), and with
  the driver's per-block reserve, the SM.
"""

from __future__ import annotations

import dataclasses
import math

from .cubin import DRIVER_RESERVED_SMEM, KernelResources, kernel_resources
from .nvrtc import CudaCompileError, compile_cubin


@dataclasses.dataclass(frozen=True)
class ArchLimits:
    max_threads_per_block: int = 1024
    max_registers_per_thread: int = 255
    registers_per_sm: int = 64 * 1024  # also the most one block may use
    register_unit: int = 256  # registers are allocated per warp in units of this many
    static_shared_per_block: int = 48 * 1024
    shared_per_sm: int = 64 * 1024
    reserved_shared_per_block: int = 0  # what the driver keeps per block (cc >= 8.0)


#: Compute capability 7.5, 8.7 and 9.0 (the suffix ``a`` of sm_90a changes no limit).
LIMITS = {
    75: ArchLimits(shared_per_sm=64 * 1024),
    87: ArchLimits(shared_per_sm=164 * 1024, reserved_shared_per_block=DRIVER_RESERVED_SMEM),
    90: ArchLimits(shared_per_sm=228 * 1024, reserved_shared_per_block=DRIVER_RESERVED_SMEM),
}

#: The architectures the checks cover (issue 19): EOP's RTX 2060, Jetson Orin, H100.
ARCHS = ("sm_75", "sm_87", "sm_90")


def limits_of(arch: str) -> ArchLimits:
    number = int(arch.removeprefix("sm_").rstrip("af"))
    if number not in LIMITS:
        raise ValueError(f"no limits recorded for {arch}: add them to LIMITS ({sorted(LIMITS)})")
    return LIMITS[number]


@dataclasses.dataclass
class ArchReport:
    """One CUDA source compiled for one architecture: its kernels' resources, or NVRTC's error."""

    arch: str
    kernels: dict[str, KernelResources] = dataclasses.field(default_factory=dict)
    problems: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None  # NVRTC's message where the source did not compile

    @property
    def ok(self) -> bool:
        return self.error is None and not self.problems


def block_registers(registers: int, threads: int, limits: ArchLimits) -> int:
    """Registers a block of ``threads`` threads takes on the SM: per warp, rounded up to the unit."""
    per_warp = math.ceil(registers * 32 / limits.register_unit) * limits.register_unit
    return math.ceil(threads / 32) * per_warp


def kernel_problems(k: KernelResources, arch: str) -> list[str]:
    """What keeps kernel ``k`` from launching on ``arch`` (empty: nothing)."""
    lim = limits_of(arch)
    out = []
    threads = k.max_threads or lim.max_threads_per_block
    if k.max_threads is not None and k.max_threads > lim.max_threads_per_block:
        out.append(f"{k.name}: {k.max_threads} threads per block, {arch} allows {lim.max_threads_per_block}")
        threads = k.max_threads
    if k.registers > lim.max_registers_per_thread:
        out.append(f"{k.name}: {k.registers} registers per thread, {arch} allows {lim.max_registers_per_thread}")
    regs = block_registers(k.registers, threads, lim)
    if regs > lim.registers_per_sm:
        bound = f"{threads} threads" if k.max_threads else f"up to {threads} threads (no __launch_bounds__)"
        out.append(f"{k.name}: {k.registers} registers x {bound} = {regs} registers per block, "
                   f"the {arch} register file holds {lim.registers_per_sm}")
    if k.shared_bytes > lim.static_shared_per_block:
        out.append(f"{k.name}: {k.shared_bytes} bytes of static shared memory, {arch} allows "
                   f"{lim.static_shared_per_block} per block")
    if k.shared_bytes + lim.reserved_shared_per_block > lim.shared_per_sm:
        out.append(f"{k.name}: {k.shared_bytes} + {lim.reserved_shared_per_block} reserved bytes of shared "
                   f"memory do not fit one {arch} SM ({lim.shared_per_sm})")
    return out


def check_source(source: str, arch: str) -> ArchReport:
    """Compile ``source`` (a CUDA module's source) for ``arch`` as TVM's loader does and check
    every kernel. NVRTC's refusal is reported in ``error``; NVRTC missing raises
    :class:`tvm_partition.build.nvrtc.NvrtcMissing`."""
    report = ArchReport(arch)
    try:
        cubin = compile_cubin(source, arch)
    except CudaCompileError as e:
        report.error = str(e)
        return report
    report.kernels = kernel_resources(cubin)
    for k in report.kernels.values():
        report.problems.extend(kernel_problems(k, arch))
    return report


def check_executable(executable, archs=ARCHS) -> list[ArchReport]:
    """:func:`check_source` for every CUDA module of a Relax VM executable and every arch."""
    from .executable import cuda_sources

    return [check_source(src, arch) for src in cuda_sources(executable) for arch in archs]
