"""Kernels in context: how much slower a model's kernels run in the VM than timed alone.

The profiler times each kernel alone, over and over, its data and branch history warm. In a model
the kernels in between evict them. Measured with the same compiled kernels in one process
(intel-r-xeon-r-processor-2c, 2026-11-25, CPU builds, 2 threads), the sum of the kernels timed
alone against the model's run in the VM: LSTM (seq 10) 430 / 583 us (1.36x), GRU 317 / 415 us
(1.31x), BERT-tiny 18.5 / 19.8 ms (1.07x), ResNet-18 (64 px) 4.9 / 5.4 ms (1.10x). The VM's own
work is not it: chains of 64-256 kernels (one-element, or 16x256 serial or parallel, alternating
parallel and serial) ran 0.2-0.6 us a kernel beyond the kernels, and the LSTM's gap is 1.8 us a
kernel. Nor is it a cold cache: with every argument but the first flushed before each run the
kernels summed to 1.6-2.8x the model (LSTM 954 us, GRU 649-1141 us). The factor is a property of
the model and the machine, and a split keeps it: ``equal`` plans of the same models ran 1.46x
(LSTM), 1.065x (BERT-tiny), 1.13x (ResNet-18) their kernels alone, against 1.36x, 1.07x and 1.10x
for their one-CPU builds.

:func:`measure` builds a model for one CPU as builds do, runs it in the VM and times each of its
kernels alone in the same process; the ``context`` record it returns (kept in the profile log,
:mod:`tvm_partition.cost_models.logs`) holds the factor and the signatures of the model's ops, and
the cost model scales every CPU sample of those ops by it (the median factor for ops of models
never run: :meth:`ProfiledCostModel.in_model_us
<tvm_partition.cost_models.profiled.ProfiledCostModel.in_model_us>`), and prices the model itself
(its ``graph``, :func:`tvm_partition.ir.graph.graph_signature`) with its own factor
(:meth:`ProfiledCostModel.for_graph <tvm_partition.cost_models.profiled.ProfiledCostModel.for_graph>`):
the factor grows with a model's length and data, not with its ops (znver4, 2026-11-27: LSTM
sequence 10 1.06x, sequence 100 1.49-1.81x, sharing every gate matmul).
"""

from __future__ import annotations

import os
import statistics
import tempfile

import numpy as np

from ..cost_models.timing import random_tensor

#: Rounds of (the model in the VM, then its kernels alone); the factor is the quickest VM run's
#: over the quickest sum of kernels alone. One round of each, minutes apart from the neighbours'
#: load, read the LSTM's factor 1.68 where the quiet machine measures 1.30 (its run took 899 us in
#: the VM, 594-610 us in three fresh processes minutes later; 2026-11-25). The median of the
#: rounds' ratios then read BERT-tiny at 1.20 from rounds of 8.80, 7.96, 8.13, 6.41 and 6.54 ms in
#: the VM against 6.20-6.63 ms alone, where ``bench`` measured the build at 6.28 ms (2026-11-26,
#: amd-epyc-znver5-2c): a neighbour only ever slows a reading down, so the quickest of each is
#: the machine's own figure.
ROUNDS = 5
#: VM runs per round, each a time-evaluator repeat of at least ``MIN_MS``
VM_REPEAT = 3
MIN_MS = 50


def factor(vm_us: float, alone_us: float, launches_us: float) -> float:
    """How much longer the kernels took in the VM (``vm_us`` less ``launches_us``, the VM's own
    work per kernel) than alone (``alone_us``); 1.0 where nothing was timed."""
    return (vm_us - launches_us) / alone_us if alone_us > 0 else 1.0


def model_key(model) -> str:
    """``lstm batch=16,layers=2,seq_len=10``: which model, at which settings, a record measured."""
    config = ",".join(f"{k}={v}" for k, v in sorted((model.config or {}).items()))
    return f"{model.name} {config}".strip()


def measure(model, device, schedules, launch_us: float = 0.0) -> dict:
    """The ``context`` record of ``model`` (a :class:`tvm_partition.frontend.model.Model`) built for
    the CPU ``device`` (a DeviceSpec) with ``schedules``: its VM time (``vm_us``), its kernels'
    sum timed alone (``warm_us``), each the quickest of :data:`ROUNDS` rounds (``rounds``: both per
    round), and their factor (``mean_us``, :func:`factor`; ``std_us``: the spread of the rounds' own).
    ``launch_us``: the VM's time per kernel launch (the profile's ``launch`` record)."""
    import tvm
    from tvm.runtime import vm as rvm

    from ..build.executable import build, kernel_calls
    from ..devices import use_cpu_threads
    from ..ir.graph import OpGraph, graph_signature, op_signature
    from ..planners.baselines import plan_cpu

    threads = use_cpu_threads()  # before the first kernel starts TVM's pool: the profile's pool
    graph = OpGraph(model.mod)
    result = build(model.mod, plan_cpu(graph, [device]), graph, schedules)
    dev = tvm.cpu()
    # exported and loaded, as deployments and the profile's samples run: the executable tvm.compile
    # returns ran the LSTM (seq 10) in 840-1050 us in the VM, exported and loaded 649 us (same process)
    with tempfile.TemporaryDirectory(prefix="tvmp-context-") as tmp:
        path = os.path.join(tmp, "model.so")
        result.executable.export_library(path)
        loaded = tvm.runtime.load_module(path)
    vm = rvm.VirtualMachine(loaded, dev)
    params = [tvm.runtime.tensor(p, device=dev) for p in model.params]
    if "main_transform_params" in [gv.name_hint for gv in result.module.get_global_vars()]:
        params = list(vm["main_transform_params"](params))
    rng = np.random.default_rng(0)
    inputs = [random_tensor(i["shape"], i["dtype"], dev, rng) for i in model.input_info()]
    ev = vm.time_evaluator("main", dev, number=1, repeat=VM_REPEAT, min_repeat_ms=MIN_MS)
    lib = loaded.imports[0]
    calls = kernel_calls(result.module)
    kernels = []
    for gv, func in result.module.functions_items():
        if calls.get(gv.name_hint) and isinstance(func, tvm.tirx.PrimFunc):
            args = [random_tensor([int(x) for x in b.shape], str(b.dtype), dev, rng) for b in func.params]
            kernels.append((calls[gv.name_hint], lib.time_evaluator(gv.name_hint, dev, number=1, repeat=1,
                                                                   min_repeat_ms=10), args))
    launches = sum(calls.values())
    rounds = []
    for _ in range(ROUNDS):
        vm_us = statistics.median(float(r) * 1e6 for r in ev(*inputs, *params).results)
        alone = sum(n * float(kev(*args).results[0]) * 1e6 for n, kev, args in kernels)
        rounds.append((vm_us, alone))
    ratios = [factor(v, a, launches * launch_us) for v, a in rounds]
    vm_us, warm_us = min(v for v, _ in rounds), min(a for _, a in rounds)
    sigs = sorted({op_signature(op) for op in graph.ops.values() if not op.is_view})
    return {"type": "comm", "comm": "context", "src": "cpu", "dst": "cpu", "bytes": 0, "model": model_key(model),
            "graph": graph_signature(graph),
            "kernels": launches, "vm_us": vm_us, "warm_us": warm_us, "mean_us": factor(vm_us, warm_us, launches * launch_us),
            "std_us": statistics.stdev(ratios), "repeats": ROUNDS, "threads": threads, "sigs": sigs,
            "rounds": [[v, a] for v, a in rounds]}
