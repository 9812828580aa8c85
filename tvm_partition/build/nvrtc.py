"""Compile a build's CUDA source for one GPU architecture exactly as TVM 0.27 does when it loads it.

A ``cpu,gpu`` executable built without a GPU carries its CUDA kernels as source (a module of
format ``cuda``). Loading it on the GPU machine, TVM's CUDA module calls the global function
``tvm_callback_cuda_compile`` (``CUDAModuleNode::JitCompileFromSource``), which ``import tvm``
registers from ``tvm.support.nvcc``: ``compile_cuda(code, target_format="cubin",
compiler="nvrtc")`` with the architecture of GPU 0 (``sm_XY``; ``sm_90a`` on compute capability 9.x:
``get_target_compute_version`` appends ``a`` from 9.0 on). That function runs NVRTC through
``cuda-bindings`` with TVM's preamble and options (``-default-device``, ``--use_fast_math``, the
half/bfloat16 operators, ``--ptxas-options=-v`` ...) and the CUDA headers under
``find_cuda_path()`` (``$CUDA_PATH``, else the toolkit of ``nvcc`` on the PATH).

:func:`compile_cubin` calls that very function, with the architecture given instead of read from a
GPU, so a machine without a GPU gets the cubin the GPU machine would load (with this machine's
NVRTC). Headers: ``$CUDA_PATH`` if set, else those of the pip wheels ``nvidia-cuda-runtime`` and
``nvidia-cuda-cccl`` (found by ``cuda.pathfinder``; TVM looks for the CCCL headers,
``<cuda/std/cstdint>``, which every kernel source includes, only under a toolkit's
``targets/<triple>/include/cccl``, so their folder is passed with ``-I``), else TVM's own search.
"""

from __future__ import annotations

import contextlib
import os

from ..errors import TvmPartitionError

#: What to install where NVRTC or the headers are missing (all CUDA 13 wheels, no GPU needed).
INSTALL_HINT = "pip install cuda-bindings nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cuda-cccl"


class NvrtcMissing(TvmPartitionError, RuntimeError):
    """NVRTC or the CUDA headers it needs are not installed here."""


class CudaCompileError(TvmPartitionError, RuntimeError):
    """NVRTC refused the source for an architecture; the message holds NVRTC's log."""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcMissing(f"NVRTC is not available (cuda-bindings is not installed): {INSTALL_HINT}") from e
    try:
        err, _, _ = nvrtc.nvrtcVersion()
    except (OSError, RuntimeError) as e:  # cuda-bindings loads libnvrtc lazily
        raise NvrtcMissing(f"cuda-bindings found no NVRTC library ({e}): {INSTALL_HINT}") from e
    if int(err) != 0:
        raise NvrtcMissing(f"nvrtcVersion failed ({err}): {INSTALL_HINT}")
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library cuda-bindings loads."""
    _, major, minor = _nvrtc().nvrtcVersion()
    return int(major), int(minor)


def supported_archs() -> list[str]:
    """The real architectures this NVRTC compiles for, e.g. ``["sm_75", ..., "sm_90", ...]``."""
    _, archs = _nvrtc().nvrtcGetSupportedArchs()
    return [f"sm_{a}" for a in archs]


def _arch_number(arch: str) -> int:
    digits = arch.removeprefix("sm_").rstrip("af")
    if not arch.startswith("sm_") or not digits.isdigit():
        raise ValueError(f"bad architecture {arch!r}: expected e.g. sm_75, sm_90a")
    return int(digits)


def check_arch(arch: str) -> None:
    """Raise :class:`CudaCompileError` naming the NVRTC version and what it supports if this NVRTC
    cannot compile for ``arch`` (CUDA 13 dropped everything before sm_75)."""
    supported = supported_archs()
    if f"sm_{_arch_number(arch)}" not in supported:
        major, minor = nvrtc_version()
        raise CudaCompileError(f"NVRTC {major}.{minor} does not compile for {arch}; it supports {', '.join(supported)}")


def cuda_headers() -> tuple[str, list[str]]:
    """(the folder TVM takes as ``CUDA_PATH``, extra ``-I`` options) for NVRTC's includes."""
    if os.environ.get("CUDA_PATH"):
        return os.environ["CUDA_PATH"], []
    try:
        from cuda import pathfinder

        runtime = pathfinder.find_nvidia_header_directory("cudart")
        cccl = pathfinder.find_nvidia_header_directory("cccl")
    except ImportError:
        runtime = cccl = None
    if runtime and cccl:
        return os.path.dirname(runtime), [f"-I{cccl}"]
    from tvm.support.nvcc import find_cuda_path

    try:
        return find_cuda_path(), []
    except RuntimeError as e:
        raise NvrtcMissing(f"no CUDA headers for NVRTC ({e}): {INSTALL_HINT}, or set CUDA_PATH") from e


@contextlib.contextmanager
def _cuda_path(path: str):
    old = os.environ.get("CUDA_PATH")
    os.environ["CUDA_PATH"] = path
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_PATH", None)
        else:
            os.environ["CUDA_PATH"] = old


def compile_cubin(source: str, arch: str) -> bytes:
    """The cubin TVM's loader makes of ``source`` on a GPU of architecture ``arch`` (``sm_75``,
    ``sm_90a`` ...). Raises :class:`NvrtcMissing` or :class:`CudaCompileError` (with NVRTC's log)."""
    _nvrtc()
    check_arch(arch)
    from tvm.support.nvcc import compile_cuda

    path, options = cuda_headers()
    with _cuda_path(path):
        try:
            return bytes(compile_cuda(source, target_format="cubin", arch=arch, options=options, compiler="nvrtc"))
        except RuntimeError as e:  # TVM raises RuntimeError with NVRTC's log
            if "Cannot find CUDA headers" in str(e):
                raise NvrtcMissing(f"{e}: {INSTALL_HINT}, or set CUDA_PATH") from e
            raise CudaCompileError(f"NVRTC could not compile the kernels for {arch}: {e}") from e
