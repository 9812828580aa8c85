"""Devices: what a plan runs on, their TVM targets and virtual devices, and the hardware fingerprint.

A *device set* is written the way users type it: ``cpu,gpu`` (the edge server's CPU and its
CUDA GPU) or ``cpu,cpu`` (two CPU virtual devices, for machines without a GPU and for CI: the
split / concat machinery is the same, only the second device is a CPU, and the copies between the
two are bound to their source at link time: one memory, :mod:`tvm_partition.passes.host_copies`).

TVM 0.27 facts used here (see DESIGN.md): targets are built from JSON dicts (the CLI string form
``"llvm -mcpu=x"`` is refused by 0.27), a relax ``VDevice``'s id must equal the real device id, and
``relax.VirtualMachine(ex, devs)`` takes the devices in vdevice-list order.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import platform
import re
import shutil
import subprocess

from .errors import TvmPartitionError

#: Default CUDA architecture for cross-compiled GPU code (H100).
DEFAULT_GPU_ARCH = "sm_90"


class DeviceError(TvmPartitionError, ValueError):
    """A device set that cannot be built or run here; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """One device a plan may place work on.

    ``name`` is the identifier used in plans (``cpu``, ``cpu1``, ``gpu``); ``kind`` is ``cpu`` or
    ``gpu``; ``index`` is the real device id (also the relax vdevice id); ``target`` is the TVM
    target as a JSON-able dict.
    """

    name: str
    kind: str
    index: int
    target: dict

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "index": self.index, "target": dict(self.target)}

    @staticmethod
    def from_json(d: dict) -> "DeviceSpec":
        try:
            spec = DeviceSpec(str(d["name"]), str(d["kind"]), int(d["index"]), dict(d["target"]))
        except (KeyError, TypeError, ValueError) as e:
            raise DeviceError(f"bad device entry {d!r}: needs name, kind, index, target") from e
        target_kind = {"cpu": "llvm", "gpu": "cuda"}.get(spec.kind)
        if target_kind is None:
            raise DeviceError(f"device {spec.name!r}: kind {spec.kind!r} is not cpu or gpu")
        if spec.target.get("kind") != target_kind:
            raise DeviceError(f"device {spec.name!r}: a {spec.kind} needs a target of kind {target_kind!r}, "
                              f"got {spec.target.get('kind')!r}")
        return spec

    # --- TVM objects (imported lazily: the runtime-only runner must not import the compiler)
    def tvm_target(self):
        import tvm

        if self.kind == "gpu":
            return tvm.target.Target(self.target, host=host_target())
        return tvm.target.Target(codegen_target(self.target))

    @property
    def device_id(self) -> int:
        """The TVM runtime's device id: a GPU's index; 0 for every CPU. The CPU virtual devices of
        one process are one memory: builds bind a copy between two of them to its source
        (:mod:`tvm_partition.passes.host_copies`), so a kernel of ``cpu1`` reads tensors of
        ``cpu``, and a kernel's tensors must agree on their ``device_id`` (TVM's ``MakePackedAPI``
        asserts it)."""
        return self.index if self.kind == "gpu" else 0

    def tvm_device(self):
        import tvm

        return tvm.cuda(self.device_id) if self.kind == "gpu" else tvm.cpu(self.device_id)


@functools.lru_cache(maxsize=None)
def host_cpu_name() -> str:
    """LLVM's name for this machine's CPU (``-mcpu``), e.g. ``znver4``."""
    from tvm.target import codegen

    return str(codegen.llvm_get_system_cpu())


def cpu_target(mcpu: str | None = None) -> dict:
    return {"kind": "llvm", "mcpu": mcpu or host_cpu_name()}


#: The LLVM target feature builds add on x86 CPUs (clang's ``-mno-gather``): no vector gathers in
#: loops LLVM vectorises. Why: its cost model took a stride-2 read for a gather, and ShuffleNet's
#: 3x3 stride-2 average pool (136 channels, 28x28) ran 150-210 us on the pooling template, 70
#: without (the model's other pools, which LLVM vectorised without gathers, the same:
#: icelake-server VM, each alone, 2026-12-03); a convolution template reading its weights a gather
#: a vector had run 3.2x the time of the same reading them packed (:mod:`tvm_partition.build.
#: templates`). End to end, ShuffleNet 0.857x, DenseNet-121, ResNet-50 and both Inceptions
#: 0.958-0.977x, none slower (BENCHMARKS.md, "x86 kernels compiled without vector gathers").
NO_GATHER = "+prefer-no-gather"


#: The LLVM target features of AMX's int8 tiles (:mod:`tvm_partition.build.amx`), and Linux's
#: names of them in /proc/cpuinfo.
AMX_FEATURES, AMX_FLAGS = ("+amx-tile", "+amx-int8"), ("amx_tile", "amx_int8")


def codegen_target(target: dict) -> dict:
    """A CPU ``target`` as builds compile for it: on x86, with :data:`NO_GATHER` unless its own
    ``mattr`` says something of gathers, and where it names this machine's CPU, with the extensions
    Linux lists here (:func:`_this_cpus_features`). MetaSchedule keeps ``target`` as given
    (:func:`tvm_partition.build.tuning.tuning_target`): its records are looked up by target."""
    mattr = list(target.get("mattr", ()))
    if target.get("kind") != "llvm" or not _x86(target):
        return target
    extra = ([] if any("gather" in a for a in mattr) else [NO_GATHER]) + _this_cpus_features(target, mattr)
    return {**target, "mattr": mattr + extra} if extra else target


def _this_cpus_features(target: dict, mattr: list[str]) -> list[str]:
    """Where ``target`` is this machine's CPU by LLVM's name and Linux lists its flags: the
    :data:`AMX_FEATURES` Linux lists (where ``mattr`` says nothing of AMX), and every extension of
    :data:`X86_FLAGS` the name implies that Linux does not list taken off (``-avx512f``...; where
    ``mattr`` does not name it). Why: LLVM names a CPU by the model number a VM reports, and the VM
    decides what it has: this one is named ``rocketlake`` (no AMX) where Linux lists ``amx_int8
    amx_tile``, as Sapphire Rapids has (2026-12-06); a Sapphire Rapids guest whose hypervisor hides
    AMX would otherwise run the AMX template and die of SIGILL. The features follow the machine."""
    here = cpu_flags()
    if target.get("mcpu") != host_cpu_name() or not here:
        return []
    named = {a.lstrip("+-") for a in mattr}
    tiles = set(AMX_FLAGS) <= here and not any("amx" in n for n in named)
    hidden = [f"-{f}" for f in _implied(str(target["mcpu"])) if X86_FLAGS[f] not in here and f not in named]
    return (list(AMX_FEATURES) if tiles else []) + hidden


@functools.lru_cache(maxsize=None)
def _implied(mcpu: str) -> tuple[str, ...]:
    """The extensions of :data:`X86_FLAGS` LLVM's CPU ``mcpu`` has, by LLVM's names."""
    import tvm
    from tvm.target import codegen

    features = codegen.llvm_get_cpu_features(tvm.target.Target({"kind": "llvm", "mcpu": mcpu}))
    return tuple(sorted(f for f in map(str, features) if f in X86_FLAGS))


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    """The flags Linux lists for this machine's first CPU (none where it lists none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


#: LLVM's names of the x86 instruction-set extensions a kernel may be compiled with, and Linux's
#: in /proc/cpuinfo. A build records those of its CPU targets in its manifest
#: (:func:`cpu_flags_needed`); a Runner refuses to load it on a CPU that lacks one
#: (:func:`check_cpu_flags`), where its first kernel using them would kill the process
#: (``SIGILL``). Only extensions LLVM emits in numerical code, which Linux lists on every machine
#: that has them: a VM may hide others its CPU's name implies (this VM's LLVM name ``rocketlake``
#: implies ``sha``, ``vaes``...).
X86_FLAGS = {
    "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "popcnt": "popcnt",
    "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2",
    "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512dq": "avx512dq", "avx512vl": "avx512vl",
    "avx512cd": "avx512cd", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni",
    "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
}


def cpu_flags_needed(target: dict) -> list[str]:
    """Linux's names of the extensions (:data:`X86_FLAGS`) a CPU ``target``'s kernels are compiled
    with (:func:`codegen_target`: LLVM's features of its ``mcpu`` and ``mattr``, for this machine's
    CPU those Linux lists here); none off x86."""
    import tvm
    from tvm.target import codegen

    if target.get("kind") != "llvm" or not _x86(target):
        return []
    features = codegen.llvm_get_cpu_features(tvm.target.Target(codegen_target(target)))
    return sorted({X86_FLAGS[f] for f in map(str, features) if f in X86_FLAGS})


def check_cpu_flags(needed, compiled_for: str = "another CPU") -> None:
    """Raise a DeviceError naming the extensions of ``needed`` (Linux's names) this machine's CPU
    lacks; nothing where Linux lists no flags (another OS: nothing to tell by)."""
    have = cpu_flags()
    missing = sorted(set(needed) - have) if have else []
    if missing:
        raise DeviceError(
            f"this artifact's CPU kernels use instructions this CPU lacks ({', '.join(missing)}; "
            f"compiled for {compiled_for}): compile it again with --target-cpu naming this machine's "
            "CPU (e.g. x86-64-v3 for any CPU with AVX2)"
        )


def _x86(target: dict) -> bool:
    from tvm.target import codegen

    triple = str(target.get("mtriple") or codegen.llvm_get_system_triple())
    return triple.startswith(("x86_64", "i386", "i686"))


def gpu_target(arch: str = DEFAULT_GPU_ARCH) -> dict:
    if not re.fullmatch(r"sm_\d+a?", arch):
        raise DeviceError(f"bad --gpu-arch {arch!r}: expected e.g. sm_80, sm_90")
    return {"kind": "cuda", "arch": arch}


def host_target(mcpu: str | None = None):
    """The host half of a GPU's target, compiled as the CPU's kernels are (:func:`codegen_target`)."""
    import tvm

    return tvm.target.Target(codegen_target(cpu_target(mcpu)))


def parse_devices(text: str, *, gpu_arch: str = DEFAULT_GPU_ARCH, cpu_mcpu: str | None = None) -> list[DeviceSpec]:
    """Parse ``cpu,gpu`` / ``cpu,cpu`` / ``cpu`` into device specs.

    The first device must be a CPU: it is the host that receives the model inputs, holds the
    weights before they are copied once at load time, and returns the outputs.
    """
    kinds = [k.strip().lower() for k in str(text).split(",") if k.strip()]
    if not kinds:
        raise DeviceError("no devices given: use e.g. --devices cpu,gpu or --devices cpu,cpu")
    bad = [k for k in kinds if k not in ("cpu", "gpu")]
    if bad:
        raise DeviceError(f"unknown device kind {bad[0]!r} in {text!r}: use cpu or gpu, e.g. cpu,gpu")
    if kinds[0] != "cpu":
        raise DeviceError(f"the first device must be the host cpu (got {text!r}): write e.g. cpu,gpu")
    specs: list[DeviceSpec] = []
    count = {"cpu": 0, "gpu": 0}
    for k in kinds:
        i = count[k]
        count[k] += 1
        name = k if i == 0 else f"{k}{i}"
        target = cpu_target(cpu_mcpu) if k == "cpu" else gpu_target(gpu_arch)
        specs.append(DeviceSpec(name, k, i, target))
    return specs


def check_local(devices: list[DeviceSpec]) -> None:
    """Raise a clear DeviceError if a device of the set does not exist on this machine."""
    for d in devices:
        if d.kind == "gpu" and not (load_cuda_runtime()["loaded"] and d.tvm_device().exist):
            why = load_cuda_runtime()["error"]
            raise DeviceError(
                f"device {d.name!r} (CUDA GPU {d.index}) is not present on this machine"
                + (f" ({why})" if why else "")
                + ": run this artifact on a machine with an NVIDIA GPU, or compile for --devices cpu,cpu"
            )


def _cuda_library_dirs() -> list[str]:
    """Where a CUDA library may sit that the dynamic loader does not search: a toolkit (CUDA_HOME,
    /usr/local/cuda), the driver's mount (/usr/local/nvidia) and NVIDIA's pip wheels
    (``nvidia/*/lib`` of every ``sys.path`` entry: torch's CUDA runtime, cuda-toolkit)."""
    import glob
    import sys

    homes = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda", "/usr/local/nvidia"]
    out = [os.path.join(h, sub) for h in homes if h for sub in ("lib64", "lib", "targets/x86_64-linux/lib")]
    for entry in sys.path:
        out += sorted(glob.glob(os.path.join(entry or ".", "nvidia", "*", "lib")))
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]


@functools.lru_cache(maxsize=None)
def load_runtime_extra() -> bool:
    """Load ``libtvm_runtime_extra.so`` (beside ``libtvm_runtime.so``) where ``import tvm`` did not;
    whether it is loaded. It registers the runtime's contributed functions that kernels call by
    name: ``tvm.contrib.sort.argsort``, which TVM's non-maximum suppression calls (an ONNX
    ``NonMaxSuppression``). Under ``TVM_USE_RUNTIME_LIB=1`` (an edge server, a bundle, ``bench``'s
    timing processes) ``tvm/backend/_autoload_backends.py`` loads it only with the compiler, and
    such a model failed there ("Cannot find function tvm.contrib.sort.argsort in the imported
    modules or global registry")."""
    from pathlib import Path

    from tvm.base import _LOADED_LIBS
    from tvm_ffi.libinfo import load_lib_ctypes

    if "tvm_runtime_extra" in _LOADED_LIBS:
        return True
    runtime_dir = os.path.dirname(os.path.realpath(_LOADED_LIBS["tvm_runtime"]._name))
    try:
        _LOADED_LIBS["tvm_runtime_extra"] = load_lib_ctypes(package="tvm", target_name="tvm_runtime_extra",
                                                            extra_lib_paths=[Path(runtime_dir)], mode="RTLD_LOCAL")
    except (OSError, RuntimeError, FileNotFoundError):
        return False
    return True


@functools.lru_cache(maxsize=None)
def load_cuda_runtime() -> dict:
    """Make this process's TVM able to use a CUDA GPU; returns ``{"loaded", "error", "libraries"}``
    (``libraries``: what was loaded from where, for the record).

    ``import tvm`` loads ``libtvm_runtime_cuda.so`` (TVM's CUDA device API and the loader of CUDA
    modules) only with the compiler: under ``TVM_USE_RUNTIME_LIB=1`` (an edge server, a bundle)
    ``tvm/backend/_autoload_backends.py`` loads no backend, so ``tvm.cuda(0).exist`` is False and
    a CUDA artifact fails to load ("a loader of that name is not registered"), GPU or not. This
    loads it as TVM itself does (``load_lib_ctypes``, beside ``libtvm_runtime.so``), after the
    CUDA runtime it links (``libcudart.so.N``, N read from the library) and the driver
    (``libcuda.so.1``) where the dynamic loader would not find them alone (:func:`_cuda_library_dirs`):
    once loaded under their sonames, they satisfy its dependencies. With the compiler, TVM has
    already tried; a load that failed there (no CUDA runtime) is tried again here, once."""
    import ctypes
    import re

    from tvm.base import _LOADED_LIBS

    found = {}
    if "tvm_runtime_cuda" in _LOADED_LIBS:
        return {"loaded": True, "error": None, "libraries": {"libtvm_runtime_cuda": _LOADED_LIBS["tvm_runtime_cuda"]._name}}
    runtime_dir = os.path.dirname(os.path.realpath(_LOADED_LIBS["tvm_runtime"]._name))
    sidecar = os.path.join(runtime_dir, "libtvm_runtime_cuda.so")
    if not os.path.exists(sidecar):
        return {"loaded": False, "error": f"this TVM has no {sidecar}", "libraries": found}
    with open(sidecar, "rb") as f:
        cudart = re.search(rb"libcudart\.so\.\d+", f.read())
    for name in [cudart.group().decode()] if cudart else []:
        for path in [name] + [os.path.join(d, name) for d in _cuda_library_dirs()]:
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            found[name] = path if os.sep in path else f"{name} (dynamic loader)"
            break
    from pathlib import Path

    from tvm_ffi.libinfo import load_lib_ctypes

    try:
        _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(package="tvm", target_name="tvm_runtime_cuda",
                                                           extra_lib_paths=[Path(runtime_dir)], mode="RTLD_LOCAL")
    except (OSError, RuntimeError) as e:
        missing = (re.findall(r"lib[\w.+-]+\.so[.\d]*(?=: cannot open)", str(e)) or [str(e).splitlines()[0][:200]])[0]
        return {"loaded": False, "error": f"TVM's CUDA runtime does not load: {missing} not found", "libraries": found}
    found["libtvm_runtime_cuda"] = sidecar
    import tvm

    if getattr(tvm, "_RUNTIME_ONLY", False):
        _compile_cuda_for_this_gpu()
    return {"loaded": True, "error": None, "libraries": found}


def init_rpc_server() -> None:
    """``server_init_callback`` of TVM's RPC server on an edge server (a deploy bundle's
    ``rpc_server.py``): loads TVM's CUDA backend (:func:`load_cuda_runtime`) in the server's
    process, whose forked sessions inherit it and the compile callback, and says on stderr whether
    it loaded. Without it a runtime-only server loads no CUDA backend, and a CUDA artifact sent by
    ``run --rpc`` fails to load. It does not touch the GPU: a process that has initialised CUDA
    cannot fork sessions that use it."""
    import sys

    load_runtime_extra()
    state = load_cuda_runtime()
    print("CUDA backend loaded" if state["loaded"] else f"CUDA backend not loaded: {state['error']}",
          file=sys.stderr, flush=True)


def _compile_cuda_for_this_gpu() -> None:
    """Register a ``tvm_callback_cuda_compile`` that compiles for GPU 0's architecture.

    A cross-compiled CUDA module holds CUDA source; loading it calls that callback, and TVM's own
    (``tvm.support.nvcc``) asks the compiler for the architecture, ``Target.current()``, which a
    runtime-only TVM does not have (``tvm.target._ffi_api`` lacks ``TargetCurrent``: checked under
    ``TVM_USE_RUNTIME_LIB=1``), so every CUDA artifact would fail to load there. This one names
    the architecture of the GPU that will run the kernels and otherwise does what TVM's does: NVRTC
    to a cubin, or nvcc to a fatbin with ``TVM_CUDA_COMPILE_MODE=nvcc``."""
    import tvm
    import tvm_ffi

    def compile_for_this_gpu(code, *_):
        from tvm.support.nvcc import compile_cuda

        mode = os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower()
        arch = "sm_" + tvm.cuda(0).compute_version.replace(".", "")
        return compile_cuda(code, target_format="fatbin" if mode == "nvcc" else "cubin", arch=arch, compiler=mode)

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", compile_for_this_gpu, override=True)


def meminfo_bytes(field: str) -> int | None:
    """A field of Linux's /proc/meminfo (``MemTotal``, ``MemAvailable``) in bytes; None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def gpu_available() -> bool:
    import tvm

    return load_cuda_runtime()["loaded"] and bool(tvm.cuda(0).exist)


@functools.lru_cache(maxsize=None)
def _llvm_cpu() -> str | None:
    """LLVM's name for this CPU where TVM's compiler is here to say it, else None (a runtime-only
    TVM has no LLVM)."""
    try:
        return host_cpu_name()
    except Exception:  # noqa: BLE001 - no compiler library, or no tvm at all: the name is unknown
        return None


@functools.lru_cache(maxsize=None)
def hardware_fingerprint(built_for: str | None = None) -> dict:
    """CPU model, LLVM's name for its microarchitecture (``mcpu``: where TVM's compiler is here to
    ask, else ``built_for``, the ``-mcpu`` the kernels a runtime-only TVM runs were compiled for),
    cores, GPU model and driver (where ``nvidia-smi`` answers).

    The model name alone does not tell CPUs apart: cloud VMs report a bare "AMD EPYC" for Zen 3
    (``znver3``, AVX2) and Zen 5 (``znver5``, AVX-512) alike, and a profile of one priced the other's
    kernels 2-4.5x too slow (2026-11-25: ResNet-18 at 64 px predicted 8.5 ms, measured 1.9)."""
    cpu_model = platform.processor() or "unknown-cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    fp = {"cpu": cpu_model, "mcpu": _llvm_cpu() or built_for, "cores": os.cpu_count() or 1, "gpu": None, "driver": None}
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10, check=True,
            ).stdout.strip().splitlines()
            if out:
                name, driver = [s.strip() for s in out[0].split(",", 1)]
                fp.update(gpu=name, driver=driver)
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    return fp


def _quota_file(folder: str, v2: bool) -> float | None:
    """The CPU quota, in CPUs, one cgroup folder sets: v2's ``cpu.max`` ("QUOTA PERIOD", or "max
    PERIOD": none), v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1: none)."""
    def read(name):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read().split()

    try:
        quota, period = read("cpu.max")[:2] if v2 else (read("cpu.cfs_quota_us")[0], read("cpu.cfs_period_us")[0])
        return None if quota in ("max", "-1") or float(period) <= 0 else float(quota) / float(period)
    except (OSError, ValueError, IndexError):
        return None


#: The usual mount names of cgroup v1's cpu controller under the cgroup root.
CGROUP_V1_CPU = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


def _cgroup_quota(root: str, proc_cgroup: str) -> float | None:
    """The tightest CPU quota, in CPUs, of this process's cgroup and its ancestors (cgroup v2, or
    v1's cpu controller under any of its usual mount names). None where no quota applies or nothing
    can be read."""
    try:
        with open(proc_cgroup, encoding="utf-8") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
    except OSError:
        return None
    found = []
    for _, controllers, path in lines:
        if controllers == "":  # v2: one unified hierarchy
            bases, v2 = [root], True
        elif "cpu" in controllers.split(","):
            bases, v2 = [os.path.join(root, c) for c in CGROUP_V1_CPU], False
        else:
            continue
        parts = [p for p in path.split("/") if p]
        folders = [os.path.join(base, *parts[:k]) for base in bases for k in range(len(parts) + 1)]  # cgroup and ancestors
        found += [q for q in (_quota_file(d, v2) for d in folders) if q is not None]
    return min(found) if found else None


def usable_cpus(cgroup_root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int:
    """CPUs this process may really use: its affinity mask (``taskset``, container cpusets), capped
    by a cgroup CPU quota (``docker --cpus``, systemd ``CPUQuota``), rounded down, at least 1.

    Not ``os.cpu_count()``: a pool with more workers than the quota waits at every parallel
    kernel's barrier for a worker the kernel has throttled. Measured on the build machine (lstm,
    seq 10, CPU build, run --repeat 50, a cgroup quota of one core): 2 threads median 1216 us,
    p90 2117; 1 thread 1333 / 1424 (issue 21). Rounded down for the same reason."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota(cgroup_root, proc_cgroup)
    if quota is not None:
        n = min(n, int(quota))
    return max(1, n)


#: Set beside ``TVM_NUM_THREADS`` when :func:`use_cpu_threads` chose the value (not the user), so
#: a child process (a benchmark's measuring process, perhaps inside a CPU quota) sizes its own pool.
CHOSEN_THREADS = "TVM_PARTITION_CHOSEN_THREADS"


def threads_fixed_by_user() -> bool:
    """Whether ``TVM_NUM_THREADS`` is the user's (the documented override), not :func:`use_cpu_threads`'s."""
    value = os.environ.get("TVM_NUM_THREADS")
    return bool(value) and value != os.environ.get(CHOSEN_THREADS)


def use_cpu_threads(n: int | None = None) -> int:
    """Size TVM's CPU thread pool to ``n`` workers, at most :func:`usable_cpus` (default: all of
    them), unless the user's ``TVM_NUM_THREADS`` says otherwise (the documented override), and let
    the workers float (``TVM_BIND_THREADS=0``, unless the user set it). Every process that times or
    runs kernels calls this first, so profiles, kernel benchmarks and deployed artifacts run with
    the same pool. Returns the pool size in effect.

    Through ``TVM_NUM_THREADS``, which TVM reads when its thread pool starts (the first parallel
    kernel of the process). Unbound because TVM otherwise pins each worker to a core (and the
    calling thread to core 0) whatever ``TVM_NUM_THREADS`` says, and a worker pinned to the core a
    busy neighbour runs on waits for it at every parallel kernel's barrier: lstm (seq 10, CPU build,
    ``run --repeat 200``) beside one busy process, pinned, p90 100-144 ms in 2 of 4 runs against a
    quiet 0.58 ms, median 109 ms in a bench row; unbound 0.61-0.64 ms in 4 of 4 runs, quiet
    latency unchanged (0.55 ms both; issue 21, 2026-11-24). Unbound also lets
    :class:`tvm_partition.runtime.threads.Governor` resize the pool while it runs."""
    os.environ.setdefault("TVM_BIND_THREADS", "0")
    if not threads_fixed_by_user():
        usable = usable_cpus()
        os.environ["TVM_NUM_THREADS"] = os.environ[CHOSEN_THREADS] = str(min(int(n or usable), usable))
    try:
        return int(os.environ["TVM_NUM_THREADS"])
    except ValueError:  # TVM's own reading of a malformed value decides
        return 0


def fingerprint_id(fp: dict | None = None) -> str:
    """A folder-name-safe id for a fingerprint, e.g. ``amd-epyc-znver5-2c`` or ``...-nvidia-h100``
    (without the microarchitecture where the fingerprint has none: taken by a runtime-only TVM)."""
    fp = fp or hardware_fingerprint()
    parts = [fp["cpu"]] + ([fp["mcpu"]] if fp.get("mcpu") else []) + [f"{fp['cores']}c"] + ([fp["gpu"]] if fp.get("gpu") else [])
    slug = re.sub(r"[^a-z0-9]+", "-", " ".join(str(p) for p in parts).lower()).strip("-")
    return slug or "unknown"


def dumps(devices: list[DeviceSpec]) -> str:
    return json.dumps([d.to_json() for d in devices])


def _shipped_logs() -> str:
    """The shipped tuning logs: ``tuning_logs`` inside the installed package (a wheel, ``pip install
    .``: setup.py packs the repository's ``tuning_logs/`` there), else beside the package (this
    tree, and an editable install of it)."""
    package = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(package, "tuning_logs")
    return installed if os.path.isdir(installed) else os.path.join(os.path.dirname(package), "tuning_logs")


#: The shipped tuning logs; override with --tuning-logs.
DEFAULT_LOGS = _shipped_logs()


def database_dir(logs: str | None = None, fingerprint: str | None = None) -> str:
    """``logs`` itself if it already holds a database, else ``logs/<fingerprint>``."""
    logs = logs or DEFAULT_LOGS
    if os.path.exists(os.path.join(logs, "database_workload.json")):
        return logs
    return os.path.join(logs, fingerprint or fingerprint_id())
