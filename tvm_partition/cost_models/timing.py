"""Time sample kernels and copies with the TVM runtime alone (no compiler, no tvm_partition).

This file is both a module of the profiler and, copied as ``time_samples.py``, the timing script
of a profiling bundle (``profile --export-bundle``) for machines the build host cannot reach::

    python time_samples.py BUNDLE_DIR [--out results.jsonl]

It needs only numpy and the runtime-only TVM (``TVM_USE_RUNTIME_LIB=1``,
``../shared/tools/device-bundle.sh``); the bundle brings the two modules of ``tvm_partition`` it
imports (``devices``, ``errors``) in ``BUNDLE/tvm_partition/``. Each kernel is run once to warm up (CUDA modules compile
and load on first use, caches fill), then timed with TVM's time evaluator: ``repeat`` means, each
over as many runs as fill ``min_repeat_ms``. Results are appended one JSON line per sample as they
are measured, so a killed run keeps every sample but the one in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

if __name__ == "__main__":  # a bundle's script: the bundle's tvm_partition (devices, errors) beside it, first,
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also under python -I (-P: no script folder)
from tvm_partition.devices import hardware_fingerprint, load_cuda_runtime, load_runtime_extra, use_cpu_threads  # noqa: E402

REPEAT = 5
#: Standard deviation of random float arguments. Kernel times can depend on the data: GELU's erf
#: takes slower paths as its argument grows. Inside BERT-tiny (activations O(1) after layer norm,
#: weights ~1/sqrt(fan-in)) its matmul+GELU kernel ran 7.6 ms; on random arguments of std 0.1 /
#: 0.3 / 1 it ran 4.7 / 7.4 / 11.5 ms; every other kernel of BERT-tiny and the LSTM was within 7% of
#: its in-model time at any of these (2026-11-23, captured arguments, ``run --kernels``' instrument).
ARG_STD = 0.3
MIN_REPEAT_MS = 10
COPY_REPEAT = 20
#: A sample's time (the log's ``mean_us``) is the median of its repeats, not their mean: a repeat in
#: which the VM's neighbours preempted the process for a tick counts once, not by its length. One
#: such repeat, it seems (the mean of five repeats at 3.9 us and one near 50 us), put an LSTM gate
#: kernel at 13.0 us where its 15-row part took 3.9 and the kernel runs 3.9-5.5 timed again: the
#: LSTM was predicted 39% over (amd-epyc-znver5-2c, 2026-11-25).
SUMMARY = statistics.median


def device(kind: str, index: int = 0, session=None):
    """A local device, or one of an RPC ``session`` (a ``tvm.rpc`` remote)."""
    import tvm

    where = session if session is not None else tvm
    return where.cuda(index) if kind == "gpu" else where.cpu(index)


def random_tensor(shape, dtype, dev, rng):
    """A kernel argument on ``dev``: normal floats of standard deviation :data:`ARG_STD`; zeros for
    integers (indices stay in bounds)."""
    import tvm

    if dtype.startswith("float"):
        x = (ARG_STD * rng.standard_normal(shape)).astype(dtype)
    else:  # indices (take, gather): zeros are in bounds
        x = np.zeros(shape, dtype=dtype)
    return tvm.runtime.tensor(x, device=dev)


def time_kernel(lib, name: str, args_spec: list, dev, repeat: int = REPEAT, min_repeat_ms: int = MIN_REPEAT_MS):
    """``(median_us, std_us, repeats)`` of kernel ``name`` of ``lib`` on ``dev`` (:data:`SUMMARY`)."""
    rng = np.random.default_rng(0)
    args = [random_tensor(shape, dtype, dev, rng) for shape, dtype in args_spec]
    f = lib[name]
    f(*args)  # warm-up
    dev.sync()
    ev = lib.time_evaluator(name, dev, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms)
    res = [float(r) * 1e6 for r in ev(*args).results]
    return SUMMARY(res), (statistics.stdev(res) if len(res) > 1 else 0.0), len(res)


#: Runs of a launch chain before it is timed (microseconds each): a fresh process's first runs of
#: a VM are slow (the LSTM's first 375 us, its fourth on 232; znver4, 2026-11-27)
LAUNCH_WARMUP = 100


def time_launches(path: str, kernels: int, dev, repeat: int = COPY_REPEAT, args: int = 1):
    """``(median_us, std_us, repeats)`` per kernel of the VM running the chain of ``kernels``
    one-element kernels exported at ``path`` (:func:`tvm_partition.profiling.samples.launch_function`),
    its ``main`` given ``args`` one-element tensors (:func:`~tvm_partition.profiling.samples.args_function`
    takes more than one)."""
    import tvm
    from tvm.runtime import vm as rvm

    vm = rvm.VirtualMachine(tvm.runtime.load_module(path), dev)
    # looked up once, as a runner does: ``vm["main"]`` makes a new function object each time, and a
    # run of one kernel timed with the lookup took 2.2-2.3 us, without it 0.8 (znver4, 2026-11-27);
    # a CPU has nothing to wait for (its kernels run in the call)
    main, wait = vm["main"], dev.type != "cpu"
    x = [tvm.runtime.tensor(np.zeros(1, dtype="float32"), device=dev) for _ in range(args)]
    for _ in range(LAUNCH_WARMUP):
        main(*x)
    res = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        main(*x)
        if wait:
            dev.sync()
        res.append((time.perf_counter() - t0) * 1e6 / kernels)
    return SUMMARY(res), statistics.stdev(res), len(res)


#: Rounds of (the model in the VM, then its kernels alone) of :func:`time_context`; the factor is
#: the quickest VM run's over the quickest sum of kernels alone. One round of each, minutes apart
#: from the neighbours' load, read the LSTM's factor 1.68 where the quiet machine measures 1.30 (its
#: run took 899 us in the VM, 594-610 us in three fresh processes minutes later; 2026-11-25). The
#: median of the rounds' ratios then read BERT-tiny at 1.20 from rounds of 8.80, 7.96, 8.13, 6.41
#: and 6.54 ms in the VM against 6.20-6.63 ms alone, where ``bench`` measured the build at 6.28 ms
#: (2026-11-26, amd-epyc-znver5-2c): a neighbour only ever slows a reading down, so the quickest of
#: each is the machine's own figure.
CONTEXT_ROUNDS = 5
#: Milliseconds of runs of the VM a round times at least (the round's figure: their median)
CONTEXT_MIN_MS = 150


def context_factor(vm_us: float, alone_us: float, launches_us: float) -> float:
    """How much longer the kernels took in the VM (``vm_us`` less ``launches_us``, the VM's own
    work: its launches, and its entry, :func:`entry_us`) than alone (``alone_us``); 1.0 where
    nothing was timed, or the VM's own work took all its time (a model of a few one-element
    kernels: what is left is noise)."""
    return (vm_us - launches_us) / alone_us if alone_us > 0 and vm_us > launches_us else 1.0


def entry_us(entry: tuple[float, float], args: int) -> float:
    """What a run of ``main`` given ``args`` tensors costs the VM before its first launch, as the
    simulator prices it (:meth:`tvm_partition.planners.simulate.Simulator.entry_time`): ``entry``
    is ``(run, arg)``, the profile's run of one kernel less its launch and each argument beyond
    the first."""
    run, arg = entry
    return run + max(0, args - 1) * arg


def time_runs(main, args: list, min_ms: float) -> float:
    """The median of runs of ``main(*args)`` timed one by one from Python, as a deployment calls it
    (and ``bench``, and the profile's chains): at least ``min_ms`` of them."""
    times: list[float] = []
    spent = 0.0
    while spent < min_ms * 1e3 or len(times) < 3:
        t0 = time.perf_counter()
        main(*args)
        times.append((time.perf_counter() - t0) * 1e6)
        spent += times[-1]
    return statistics.median(times)


def time_context(path: str, inputs: list, params: list, kernels: list, dev, launch_us: float = 0.0,
                 split: dict | None = None, entry: tuple[float, float] = (0.0, 0.0), host=None) -> dict:
    """A model's kernels in the VM against the same kernels timed alone, in this process: the
    exported one-CPU build at ``path`` run on ``inputs`` and ``params`` (arrays, or ``[shape,
    dtype]`` pairs drawn as :func:`random_tensor`), then each of ``kernels`` (``{"name", "calls",
    "args": [[shape, dtype], ...]}``: every kernel ``main`` launches, with its launch count) timed
    alone, :data:`CONTEXT_ROUNDS` rounds of both. Returns the ``context`` record's timings:
    ``vm_us`` and ``warm_us`` (the quickest of the rounds'), ``rounds``, ``kernels`` (launches),
    ``entry_us`` (:func:`entry_us` of ``entry`` for the build's arguments), ``mean_us``
    (:func:`context_factor`, less ``launch_us`` a launch and the entry) and ``std_us`` (the spread
    of the rounds' own factors). ``split``: the same model's build of more launches (``{"file": path,
    "kernels": [...], "devices": n}``, every op split over ``n`` CPU devices, all ``dev`` here),
    timed in the same rounds: ``split_vm_us``, ``split_warm_us``, ``split_kernels``,
    ``split_entry_us`` and ``split_rounds`` (what :func:`context_launch` separates a launch's cost
    from the factor by). ``host``: the CPU of a GPU ``dev``'s build
    (:func:`tvm_partition.profiling.context.gpu_context`): the VM runs on both, its inputs and
    weights given on the host as ``bench`` gives them, its kernels timed alone on ``dev`` (TVM's
    time evaluator waits for the GPU); its run returns when its outputs are back on the host.

    The VM is timed from Python, run by run (:func:`time_runs`), and its entry taken off: the
    simulator prices a model as its entry + its launches + its kernels x the factor, and the
    entry is the profile's run chain, timed the same way. Timed by TVM's time evaluator (in C++,
    no call from Python), the LSTM's gate matmul alone in the VM (``bench --split-ops``: a model of
    one 4.4 us kernel and four arguments) read 5.15-5.44 us, from Python 5.8-6.05, where the
    entry the simulator adds is 0.9 (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04)."""
    import tvm
    from tvm.runtime import vm as rvm

    rng = np.random.default_rng(0)

    given = dev if host is None else host  # where the model's inputs and weights are given

    def tensor(x):
        return tvm.runtime.tensor(x, device=given) if isinstance(x, np.ndarray) else random_tensor(x[0], x[1], given, rng)

    def runner(file: str, launched: list, devices: int = 1):
        """``(time the VM's main, time each kernel alone, launches)`` of the build in ``file``."""
        loaded = tvm.runtime.load_module(file)
        vm = rvm.VirtualMachine(loaded, [dev] * devices if host is None else [host, dev])
        weights = [tensor(p) for p in params]
        if vm.module.implements_function("main_transform_params"):  # weights laid out as builds lay them
            weights = list(vm["main_transform_params"](weights))
        args = [tensor(x) for x in inputs] + weights
        main = vm["main"]  # looked up once (time_launches says why)
        for _ in range(LAUNCH_WARMUP):
            main(*args)
        lib = loaded.imports[0]
        # a join the build writes in place is listed but never called: no kernel of the library
        timed = [(k["calls"], lib.time_evaluator(k["name"], dev, number=1, repeat=1, min_repeat_ms=MIN_REPEAT_MS),
                  [random_tensor(shape, dtype, dev, rng) for shape, dtype in k["args"]])
                 for k in launched if lib.implements_function(k["name"])]
        if host is not None and launched and not timed:  # a GPU build's library (never timed so before) holds none
            raise RuntimeError(f"{os.path.basename(file)}: none of its {len(launched)} kernels is in its library")
        return (lambda: time_runs(main, args, CONTEXT_MIN_MS),
                lambda: sum(n * float(kev(*kargs).results[0]) * 1e6 for n, kev, kargs in timed),
                sum(n for n, _, _ in timed), entry_us(entry, len(args)))

    builds = [runner(path, kernels)]
    if split is not None:
        builds.append(runner(split["file"], split["kernels"], split.get("devices", 2)))
    rounds: list[list] = [[] for _ in builds]
    for _ in range(CONTEXT_ROUNDS):
        for got, (vm_time, alone_time, _, _) in zip(rounds, builds):
            got.append([vm_time(), alone_time()])
    _, _, launches, entered = builds[0]
    ratios = [context_factor(v, a, launches * launch_us + entered) for v, a in rounds[0]]
    vm_us, warm_us = min(v for v, _ in rounds[0]), min(a for _, a in rounds[0])
    out = {"kernels": launches, "vm_us": vm_us, "warm_us": warm_us, "rounds": rounds[0], "entry_us": entered,
           "mean_us": context_factor(vm_us, warm_us, launches * launch_us + entered),
           "std_us": statistics.stdev(ratios), "repeats": CONTEXT_ROUNDS}
    if split is not None:
        out.update({"split_kernels": builds[1][2], "split_vm_us": min(v for v, _ in rounds[1]),
                    "split_warm_us": min(a for _, a in rounds[1]), "split_rounds": rounds[1],
                    "split_entry_us": builds[1][3]})
    return out


def context_launch(rec: dict) -> tuple[float, float] | None:
    """``(factor, launch_us)`` of a ``context`` record timed with its split build
    (:func:`time_context`'s ``split``): the model's kernels take ``factor`` x their time alone in
    the VM and each launch ``launch_us`` beyond them, solved from both builds (``vm = factor x alone
    + launches x launch_us``, one equation each); None where the record has no split build or the
    two give no such pair. Why: a kernel launch in a model costs the VM more than in the profile's
    chain of one-element kernels (the LSTM at sequence 100 on a Zen 4: 0.28-0.31 us a launch between
    the VM and its kernels alone, its split build 0.32-0.42, the chain 0.11), and the factor, which
    scales kernel time, priced the split build's twice as many launches 9% short (2026-11-30).
    Where a model's kernels are large, the pair is no launch's cost but what each extra launch of
    the split build brings with it: BERT-tiny's split build ran 342 us over its one-CPU build in
    the VM where its parts alone summed 493 us less, solved as 23 us a launch and a factor of 0.87
    (the profile's chain: 0.11 us; amd-epyc-znver5-2c, 2026-12-02). Kept: priced without it (its
    factor alone, the chain's launch) its ``equal`` and ``fixed`` rows read -19% and -21%, with it
    -8% and -10% (``bench --quick``'s rows of 2026-12-03 predicted again).

    Where the pair solves to a launch of negative cost (the split build ran no slower in the VM for
    its extra launches than its kernels alone), a launch costs nothing and the factor is the one
    that prices both builds closest (:func:`_factor_of_both`): the LSTM (sequence 10) ran its
    one-CPU build in 242.6 us (kernels alone 165.4, 86 launches) and its split build in 237.1
    (alone 182.0, 174 launches), a pair of -0.38 us a launch; priced at the one-CPU build's factor
    alone (1.41) and the chain's launch, its ``equal`` and ``fixed`` rows read +22% and +23%
    (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04). None where the record has no split build
    or no such pair (no more launches, or a factor of none)."""
    keys = ("vm_us", "warm_us", "kernels", "split_vm_us", "split_warm_us", "split_kernels")
    if not all(k in rec for k in keys):
        return None
    v1, a1, n1, v2, a2, n2 = (float(rec[k]) for k in keys)
    v1, v2 = v1 - float(rec.get("entry_us", 0.0)), v2 - float(rec.get("split_entry_us", 0.0))  # the VM's entry
    det = a1 * n2 - a2 * n1
    if n2 <= n1 or det <= 0 or min(v1, a1, v2, a2) <= 0:
        return None
    factor, launch = (v1 * n2 - v2 * n1) / det, (a1 * v2 - a2 * v1) / det
    if launch < 0:
        return _factor_of_both((v1, a1), (v2, a2)), 0.0
    return (factor, launch) if factor > 0 else None


def _factor_of_both(*builds: tuple[float, float]) -> float:
    """The factor ``f`` of least squared relative error over ``(vm_us, alone_us)`` builds, each
    priced ``f x alone``: ``sum(r) / sum(r^2)``, ``r = alone / vm``."""
    r = [a / v for v, a in builds]
    return sum(r) / sum(x * x for x in r)


def time_copy(nbytes: int, src, dst, repeat: int = COPY_REPEAT):
    """``(median_us, std_us, repeats)`` of copying a float32 tensor of ``nbytes`` from ``src`` to ``dst``."""
    import tvm

    n = max(1, nbytes // 4)
    a = tvm.runtime.tensor(np.ones(n, dtype="float32"), device=src)
    b = tvm.runtime.empty((n,), "float32", dst)
    for _ in range(3):  # warm-up
        a.copyto(b)
    res = []
    for _ in range(repeat):
        src.sync()
        dst.sync()
        t0 = time.perf_counter()
        a.copyto(b)
        dst.sync()
        src.sync()
        res.append((time.perf_counter() - t0) * 1e6)
    return SUMMARY(res), statistics.stdev(res), len(res)


def _load_library(bundle: str, lib_spec: dict, session):
    """``(module, device)`` of one of a bundle's kernel libraries, or None where its device is missing."""
    import tvm

    dev = device(lib_spec["device"], 0, session)
    if not dev.exist:
        print(f"skipping {lib_spec['file']}: no {lib_spec['device']} device there", file=sys.stderr)
        return None
    path = os.path.join(bundle, lib_spec["file"])
    if session is None:
        return tvm.runtime.load_module(path), dev
    session.upload(path)
    return session.load_module(lib_spec["file"]), dev


def chain_costs(totals: dict[str, float], chains: list[dict]) -> tuple[float, tuple[float, float]]:
    """``(launch_us, (run_us, arg_us))`` on a CPU from the chains timed (``totals``: a chain's
    ``comm`` -> its time, all its kernels): what a launch costs, a run beyond its one launch, an
    argument beyond the first (as :class:`tvm_partition.cost_models.profiled.ProfiledCostModel`
    reads the log's records); 0 for any not timed. ``chains``: the bundle's (their lengths)."""
    length = {c.get("comm", "launch"): int(c["kernels"]) for c in chains if c["device"] == "cpu"}
    launch = totals["launch"] / length["launch"] if "launch" in totals else 0.0
    run = max(0.0, totals["run"] - launch) if "run" in totals else 0.0
    arg = max(0.0, (totals["arg"] - totals["run"]) / length["arg"]) if "arg" in totals and "run" in totals else 0.0
    return launch, (run, arg)


def run_bundle(bundle: str, out: str | None, done: set | None = None, progress=None, on_result=None,
               session=None, fingerprint: dict | None = None) -> int:
    """Time every sample (and model ``context``) of a bundle not in ``done``; append one JSON line each to ``out`` and/or
    hand each result to ``on_result`` as soon as it is measured.

    With an RPC ``session`` the libraries are uploaded and timed on the remote machine (TVM's
    time evaluator runs there, so RPC latency is not in the figures); copies are not timed over
    RPC (a Python-timed copy would measure the network). ``fingerprint`` names the machine the
    results belong to (default: this one)."""
    threads = use_cpu_threads()  # before the first kernel starts TVM's thread pool
    pool = {"threads": threads} if session is None else {}  # what the times were priced with (remote: its own)
    with open(os.path.join(bundle, "bundle.json"), encoding="utf-8") as f:
        spec = json.load(f)
    kinds = [x.get("device", "cpu") for x in spec["libraries"] + spec.get("launches", []) + spec.get("contexts", [])]
    if session is None:
        load_runtime_extra()  # kernels may call its functions by name (an NMS: argsort)
    if session is None and "gpu" in kinds + [k for c in spec.get("copies", []) for k in (c["src"], c["dst"])]:
        load_cuda_runtime()  # a runtime-only TVM sees no GPU without it
    done = done or set()
    count = 0
    fp = fingerprint or hardware_fingerprint(spec.get("mcpu"))  # no LLVM in a runtime-only TVM: its kernels' -mcpu

    def emit(line):
        if out is not None:
            with open(out, "a", encoding="utf-8") as fout:
                fout.write(json.dumps(line) + "\n")
        if on_result is not None:
            on_result(line)

    # copies and launch chains first (a few cheap samples that price every plan's communication and
    # launches), then the kernels in the bundle's order (each op's sizes on every device in turn,
    # whole ops first): timed library by library, the H100 machine's 78 s (2026-11-26) kept 401
    # CPU samples, no GPU kernel and no copy
    for c in spec.get("copies", []) if session is None else []:
        if c["id"] in done:
            continue
        src, dst = device(c["src"], c.get("src_index", 0)), device(c["dst"], c.get("dst_index", 0))
        if not (src.exist and dst.exist):
            continue
        if progress:
            progress(c["id"])
        mean, std, n = time_copy(c["bytes"], src, dst)
        emit({"id": c["id"], "mean_us": mean, "std_us": std, "repeats": n, "fingerprint": fp})
        count += 1
    chained: dict[str, float] = {}  # this run's CPU chains, per comm: a context's VM time less its
    # launches and entry (none timed in a resumed run whose chains were done: its contexts then
    # count them in their factor)
    for launch in spec.get("launches", []) if session is None else []:
        if launch["id"] in done:
            continue
        dev = device(launch["device"])
        if progress:
            progress(launch["id"])
        mean, std, n = time_launches(os.path.join(bundle, launch["file"]), launch["kernels"], dev,
                                     args=launch.get("args", 1))
        emit({"id": launch["id"], "mean_us": mean, "std_us": std, "repeats": n, "fingerprint": fp, **pool})
        if launch["device"] == "cpu":
            chained[launch.get("comm", "launch")] = mean * launch["kernels"]
        count += 1
    # then the models run in the VM against their kernels alone (a few, each seconds): what every
    # CPU prediction of those models is scaled by (tvm_partition.profiling.context)
    launch_us, entry = chain_costs(chained, spec.get("launches", []))
    for ctx in spec.get("contexts", []) if session is None else []:
        if ctx["id"] in done:
            continue
        on_gpu = ctx.get("device") == "gpu"  # a model's gpu plan (profiling.context.gpu_context)
        if on_gpu and not device("gpu").exist:
            continue
        if progress:
            progress(ctx["id"])
        split = dict(ctx["split"], file=os.path.join(bundle, ctx["split"]["file"])) if "split" in ctx else None
        # on the GPU from the host, no CPU launch taken off; on the CPU alone, its chain's launch
        dev, host, launch = (device("gpu"), device("cpu"), 0.0) if on_gpu else (device("cpu"), None, launch_us)
        try:
            timed = time_context(os.path.join(bundle, ctx["file"]), ctx["inputs"], ctx["params"], ctx["kernels"],
                                 dev, launch, split, entry, host=host)
        except Exception as e:  # noqa: BLE001  (a GPU context never ran before: the samples after it must)
            if not on_gpu:
                raise
            print(f"warning: context {ctx['id']} not timed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        emit({"id": ctx["id"], "fingerprint": fp, **timed, **pool})
        count += 1
    owner = {sid: lib_spec for lib_spec in spec["libraries"] for sid in lib_spec["samples"]}
    loaded: dict = {}  # library file -> (module, device), or None where that device is missing
    rank = {sid: i for i, sid in enumerate(spec["records"])}  # the bundle's order
    for sid in sorted(owner, key=lambda s: rank.get(s, len(rank))):
        lib_spec = owner[sid]
        if sid in done:
            continue
        if lib_spec["file"] not in loaded:
            loaded[lib_spec["file"]] = _load_library(bundle, lib_spec, session)
        if loaded[lib_spec["file"]] is None:
            continue
        lib, dev = loaded[lib_spec["file"]]
        if progress:
            progress(sid)
        stats = [time_kernel(lib, n, lib_spec["kernels"][n]["args"], dev) for n in lib_spec["samples"][sid]]
        emit({"id": sid, "mean_us": sum(s[0] for s in stats), "fingerprint": fp,
              "std_us": sum(s[1] ** 2 for s in stats) ** 0.5, "repeats": min((s[2] for s in stats), default=0),
              **pool})
        count += 1
    return count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Time the sample kernels and copies of a tvm_partition profiling bundle "
                                             "with the TVM runtime alone.")
    ap.add_argument("bundle", help="the bundle folder (holds bundle.json)")
    ap.add_argument("--out", help="results file (JSON Lines; default BUNDLE/results.jsonl); a rerun resumes")
    args = ap.parse_args(argv)
    out = args.out or os.path.join(args.bundle, "results.jsonl")
    done = set()
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            for line in f:
                try:
                    done.add(json.loads(line)["id"])
                except (ValueError, KeyError, TypeError):
                    continue
    n = run_bundle(args.bundle, out, done, progress=lambda sid: print(f"timing {sid}", file=sys.stderr))
    print(f"timed {n} samples into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
