"""The runtime half: load a compiled artifact on the devices it was built for, run it, time it.

Imports only the TVM runtime and numpy (no compiler): it is what a deployed bundle runs
(:mod:`tvm_partition.cli.deploy` copies it), and what the ``run`` command, the multi-server
pipeline and the benchmarks time artifacts with (:class:`Runner`, :func:`latency_stats`).
"""

from __future__ import annotations

import time

import numpy as np

from . import artifact
from ..devices import check_cpu_flags, check_local, gpu_available, load_runtime_extra, use_cpu_threads
from ..inputs import random_input
from .threads import governor


#: Warm-up of :meth:`Runner.time`: at least ``WARMUP_RUNS[0]`` runs, up to ``WARMUP_RUNS[1]`` while
#: the warm-up has taken less than ``WARMUP_S``. The first runs of a process are slow until its
#: memory is reused: BERT-tiny's FFN output matmul on the second virtual CPU, whose run copies 6 MB
#: between the devices, took 2.2-3.0 ms for each of its first 7 runs and 0.7-0.8 ms from then on
#: (the same op with no copy: 2 slow runs), so ``bench --quick`` (3 warm-up runs, then 4 timed, in
#: each of 3 processes) read 2.57 ms for it and the row's prediction -71% (znver5, 2026-11-25).
#: A model of one tiny kernel needs more runs than that, not more time: the LSTM's 9 us gate
#: matmul alone ran 16-19 us a run for its first 50-100 runs, then 9-12 us (medians of blocks of
#: 4,000 runs in three fresh processes, amd-epyc-znver3-2c, 2026-11-28), so 10 warm-up runs had
#: ``bench --split-ops`` read it at 18 us against 10 predicted. With up to 200 (within the same
#: second) the same command's op rows of the RNNs read 8-14 us, their whole ops -30% to +4% off
#: their predictions (were -34% to -56%), ResNet-18's two convolutions -15% and -22% (were -31%,
#: -33%); the command took 468 s, 411 before (models of milliseconds now warm up for 1 s).
WARMUP_RUNS = (3, 200)
WARMUP_S = 1.0


def warm_up(run) -> int:
    """Call ``run`` as :data:`WARMUP_RUNS` and :data:`WARMUP_S` say; the number of runs."""
    t0, n = time.perf_counter(), 0
    while n < WARMUP_RUNS[0] or (n < WARMUP_RUNS[1] and time.perf_counter() - t0 < WARMUP_S):
        run()
        n += 1
    return n


class Runner:
    """A loaded artifact: weights already transformed and copied to their devices."""

    governor = None  # a remote runner's pool is the server's
    local = True  # runs on this machine's devices (a remote runner on a server's)

    def __init__(self, art_dir: str):
        """On the manifest's devices, with a CPU in a GPU's place where this machine has none and
        the artifact launches nothing there (:func:`tvm_partition.runtime.artifact.host_stand_in`)."""
        import tvm

        self.art_dir = art_dir
        self.manifest = artifact.read_manifest(art_dir)
        artifact.verify(art_dir, self.manifest)
        stand_in = artifact.host_stand_in(self.manifest, gpu_here=False) if self.local else None
        if stand_in is not None and gpu_available():  # asked only of an artifact that could stand one in
            stand_in = None
        #: whether a CPU runs in the place of a GPU this machine lacks (the artifact launches nothing there)
        self.stand_in = stand_in is not None
        self.devices = stand_in or artifact.devices_of(self.manifest)
        self.tvm = tvm
        self._load()

    def _load(self) -> None:
        """Load the library and the weights on this machine's devices."""
        from tvm.runtime import vm as rvm

        check_local(self.devices)
        # an artifact of a build before the manifest recorded them: runs as before
        check_cpu_flags(self.manifest.get("cpu_flags", ()), str(self.devices[0].target.get("mcpu", "another CPU")))
        #: CPU threads this process runs with: the build's, fewer where this process may use fewer
        #: CPUs (affinity, cgroup quota) or TVM_NUM_THREADS says so (:func:`devices.use_cpu_threads`)
        self.threads = use_cpu_threads(self.manifest.get("num_threads"))
        #: resizes the pool to the CPUs other processes leave free (None: the pool keeps its size)
        self.governor = governor(self.threads)
        load_runtime_extra()  # kernels may call its functions by name (devices.load_runtime_extra)
        self.lib = self.tvm.runtime.load_module(f"{self.art_dir}/model.so")
        self.host = self.devices[0].tvm_device()
        self.vm = rvm.VirtualMachine(self.lib, [d.tvm_device() for d in self.devices])
        params = [self.tvm.runtime.tensor(p, device=self.host) for p in artifact.load_params(self.art_dir, self.manifest)]
        if self.manifest.get("transform_params"):
            self.params = list(self.vm["main_transform_params"](params))
        else:
            self.params = params
        self.main = self.vm["main"]
        try:  # the bytecode twin the instrument sees (artifact.KERNELS_MAIN); older builds: main
            self.instrumented = self.vm[artifact.KERNELS_MAIN]
        except AttributeError:
            self.instrumented = self.main

    @property
    def input_info(self) -> list[dict]:
        return self.manifest["inputs"]

    def example_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {i["name"]: random_input(i["shape"], i["dtype"], rng) for i in self.input_info}

    def _args(self, inputs: dict[str, np.ndarray]):
        args = []
        for info in self.input_info:
            if info["name"] not in inputs:
                raise ValueError(f"input {info['name']!r} is missing (have {sorted(inputs)})")
            x = np.asarray(inputs[info["name"]])
            if list(x.shape) != list(info["shape"]) or str(x.dtype) != info["dtype"]:
                raise ValueError(
                    f"input {info['name']!r}: expected {info['dtype']}{info['shape']}, got {x.dtype}{list(x.shape)}"
                )
            args.append(self.tvm.runtime.tensor(x, device=self.host))
        return args

    def _ready(self) -> None:
        if self.governor is not None:
            self.governor.poll()

    def run(self, inputs: dict[str, np.ndarray], bytecode: bool = False) -> list[np.ndarray]:
        """The outputs of one run; ``bytecode``: of ``main``'s bytecode twin (:attr:`instrumented`)."""
        self._ready()
        program = self.instrumented if bytecode else self.main
        return [o.numpy() for o in self._outputs(program(*self._args(inputs), *self.params))]

    def _outputs(self, out) -> list:
        return list(out) if isinstance(out, tuple | list) or type(out).__name__ == "Array" else [out]

    def time(self, inputs: dict[str, np.ndarray], repeat: int, warmup: int | None = None,
             min_s: float = 0.0) -> list[float]:
        """Wall time of ``repeat`` end-to-end runs in microseconds (outputs return to the host),
        after ``warmup`` runs (default :func:`warm_up`'s); more runs while the timed ones have
        taken less than ``min_s`` seconds in all (as TVM's time evaluator's ``min_repeat_ms``)."""
        args = self._args(inputs)

        def run():
            self._ready()
            self.main(*args, *self.params)

        if warmup is None:
            warm_up(run)
        else:
            for _ in range(warmup):
                run()
        times: list[float] = []
        spent = 0.0  # the timed runs' total (a sum over the list each run: quadratic in a 20 ms block of 7 us runs)
        while len(times) < repeat or spent < min_s * 1e6:
            self._ready()
            t0 = time.perf_counter()
            self.main(*args, *self.params)
            times.append((time.perf_counter() - t0) * 1e6)
            spent += times[-1]
        return times

    def kernel_times(self, inputs: dict[str, np.ndarray], repeat: int) -> tuple[dict[str, tuple[int, float]], float]:
        """``({name: (calls per run, microseconds per run)}, instrumented run us)`` of every
        function the VM calls (kernels, copies, allocations), timed by a VM instrument over
        ``repeat`` runs after the warm-up :meth:`time` gives a plain run: each function's time a run
        and the instrumented run's are the medians over the runs, as ``bench`` and the profile
        read theirs. Why: after one warm-up run the mean of 10 put a ResNet-18 convolution's model's
        one ``vm.builtin.alloc_storage`` at 251 us a run (65% of it), where 50 runs read 9-13 us:
        a fresh VM's first runs (amd-epyc-znver5-2c, 2026-12-03). A GPU is synchronised after each
        call, so GPU kernels are timed to completion (and nothing overlaps: the sum is the serial
        time, not the end-to-end latency). The instrument is a Python callback around every call:
        it adds microseconds to each, which the second value (a whole instrumented run) shows. It
        runs the bytecode twin of ``main`` (:data:`artifact.KERNELS_MAIN`): the same kernels in the
        same order, each call interpreted by the VM where ``main``'s compiled code calls them
        directly."""
        args = self._args(inputs)
        warm_up(lambda: self.instrumented(*args, *self.params))
        gpus = [d.tvm_device() for d in self.devices if d.kind == "gpu"]
        runs: list[dict[str, list]] = []  # per run: {name: [calls, us]}
        start: list[float] = []

        def instrument(func, name, before, ret, *fargs):
            if before:
                start.append(time.perf_counter())
            else:
                for g in gpus:
                    g.sync()
                entry = runs[-1].setdefault(str(name), [0, 0.0])
                entry[0] += 1
                entry[1] += (time.perf_counter() - start.pop()) * 1e6
            return 0

        walls = []
        self.vm.set_instrument(instrument)
        try:
            for _ in range(repeat):
                runs.append({})
                t0 = time.perf_counter()
                self.instrumented(*args, *self.params)
                walls.append((time.perf_counter() - t0) * 1e6)
        finally:
            self.vm.set_instrument(None)
        names = {name for run in runs for name in run}
        times = {name: (max(run.get(name, [0])[0] for run in runs),
                        float(np.median([run.get(name, [0, 0.0])[1] for run in runs]))) for name in names}
        return dict(sorted(times.items(), key=lambda kv: -kv[1][1])), float(np.median(walls))


def kernel_table(times: dict[str, tuple[int, float]], run_us: float, end_to_end_us: float | None = None) -> str:
    """The text table of :meth:`Runner.kernel_times`, heaviest first, with what the instrument costs."""
    total = sum(us for _, us in times.values())
    calls = sum(n for n, _ in times.values())
    lines = [f"{'us/run':>10} {'share':>6} {'calls':>5}  function"]
    lines += [f"{us:10.1f} {100 * us / total if total else 0:5.1f}% {n:5d}  {name}" for name, (n, us) in times.items()]
    lines.append(f"{total:10.1f} {'':6} {calls:5d}  sum of calls")
    if end_to_end_us:
        lines.append(f"instrumented run {run_us:.1f} us, plain run {end_to_end_us:.1f} us: the instrument adds about "
                     f"{max(0.0, run_us - end_to_end_us) / max(1, calls):.1f} us to each call (and the bytecode VM's "
                     f"own work, where main runs compiled and its bytecode twin is timed)")
    return "\n".join(lines) + "\n"


def read_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable npz file ({e})") from None


def write_outputs(path: str | None, outs: list[np.ndarray]) -> None:
    """Write ``output0``, ``output1``, ... to ``path`` (if given) and print their shapes."""
    if path:
        try:
            np.savez(path, **{f"output{i}": o for i, o in enumerate(outs)})
        except OSError as e:
            raise ValueError(f"{path}: cannot write the outputs ({e.strerror or e})") from None
    for i, o in enumerate(outs):
        print(f"output{i}: shape={list(o.shape)} dtype={o.dtype}")


def latency_stats(times_us: list[float]) -> dict:
    """``{"median_us", "p90_us", "p99_us"}`` of end-to-end times (:meth:`Runner.time`)."""
    return {"median_us": float(np.median(times_us)), "p90_us": float(np.percentile(times_us, 90)),
            "p99_us": float(np.percentile(times_us, 99))}


def latency_line(times_us: list[float]) -> str:
    stats = latency_stats(times_us)
    return f"median_us={stats['median_us']:.1f} p90_us={stats['p90_us']:.1f}"
