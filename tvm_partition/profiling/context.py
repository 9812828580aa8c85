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

:func:`measure` builds a model for one CPU as builds do (:func:`build_context`), runs it in the VM
and times each of its kernels alone in the same process
(:func:`tvm_partition.cost_models.timing.time_context`, the TVM runtime alone: a profile bundle
runs the same on a machine with no compiler, :func:`tvm_partition.profiling.profiler.add_contexts`); the ``context`` record it returns (kept in the profile log,
:mod:`tvm_partition.cost_models.logs`) holds the factor and the signatures of the model's ops, and
the cost model scales every CPU sample of those ops by it (the median factor for ops of models
never run: :meth:`ProfiledCostModel.in_model_us
<tvm_partition.cost_models.profiled.ProfiledCostModel.in_model_us>`), and prices the model itself
(its ``graph``, :func:`tvm_partition.ir.graph.graph_signature`) with its own factor
(:meth:`ProfiledCostModel.for_graph <tvm_partition.cost_models.profiled.ProfiledCostModel.for_graph>`):
the factor grows with a model's length and data, not with its ops (znver4, 2026-11-27: LSTM
sequence 10 1.06x, sequence 100 1.49-1.81x, sharing every gate matmul).

The same model's ``equal`` build over two CPUs runs in the same rounds: about twice the launches
for the same kernels' work, so the two builds separate what a launch costs in the model from how
much slower its kernels run (:func:`tvm_partition.cost_models.timing.context_launch`). A factor
alone scales kernel time, and a plan of more launches was priced short: the LSTM at sequence 100
ran its ``equal`` build 272 us over its one-CPU build where 131 were predicted (znver4,
2026-11-30); its launches cost 0.31 us there, the GRU's 0.16, against the profile's chain of
one-element kernels' 0.11.

The VM is timed from Python, run by run, and what the simulator prices beside the kernels taken
off (the launches, the run's entry: :func:`tvm_partition.cost_models.timing.entry_us`), so that
a model of one 4 us kernel measures the factor its kernel runs at: the RNNs' gate matmuls alone in
the VM (``bench --split-ops``' op rows, run here after a profile over two devices:
``cli/profile.py``) ran 1.03-1.06x their kernels alone, and priced at 1.0 read 9% to 17% low
(intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04). A record keeps how many ops its model has
(``ops``): a model of one op prices its own graph only
(:class:`tvm_partition.cost_models.profiled.Context`).

On a GPU (:func:`gpu_context`) the model's ``gpu`` plan runs from the host, its copies and its
kernels' launches in the run, against its GPU kernels alone: a record of ``src`` ``gpu`` (the CPU
factors read ``src`` ``cpu`` only) whose time left over its entry, its copies as the profile prices
them and its kernels the cost model fits over the models as a time once a run uses the GPU and
one after each kernel on its stream (:meth:`ProfiledCostModel._gpu_overheads
<tvm_partition.cost_models.profiled.ProfiledCostModel._gpu_overheads>`); the GPU kit prints each
model's (``benchmarks/gpu_proof/kit.py`` ``gpu_context_lines``).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

import numpy as np


def model_key(model) -> str:
    """``lstm batch=16,layers=2,seq_len=10``: which model, at which settings, a record measured."""
    config = ",".join(f"{k}={v}" for k, v in sorted((model.config or {}).items()))
    return f"{model.name} {config}".strip()


def build_context(model, device, schedules, path: str, split_path: str | None = None,
                  host=None) -> tuple[dict, dict]:
    """The compiler's half of a ``context`` measurement: ``model`` (a
    :class:`tvm_partition.frontend.model.Model`) built for the CPU ``device`` (a DeviceSpec) with
    ``schedules`` as builds do, exported to ``path``; a GPU ``device``: the model's ``gpu`` plan in
    a build of the CPU ``host`` and the GPU (:func:`gpu_context`). Returns ``(spec, record)``: what
    :func:`tvm_partition.cost_models.timing.time_context` runs (``inputs`` and ``params`` as
    ``[shape, dtype]``, every kernel ``main`` launches with its launch count and arguments), and the
    ``context`` record it is timed into (the model's key, its graph's signature and its ops').
    ``split_path``: also the model's ``equal`` build over two such CPUs, exported there (the spec's
    ``split``: its file as given, its kernels, its devices; none where that build fails), which
    launches about twice the kernels for the same work:
    :func:`tvm_partition.cost_models.timing.context_launch` tells a launch's cost from the factor
    by both."""
    from ..build.executable import BuildError
    from ..devices import parse_devices
    from ..ir.graph import OpGraph
    from ..planners.baselines import plan_cpu, plan_equal

    graph = OpGraph(model.mod)
    if graph.cpu_only:  # its kernels' arguments have no sizes until the model runs
        raise BuildError("the sizes of some of its tensors depend on the data: its kernels cannot be timed alone")
    spec = {"inputs": [[list(i["shape"]), i["dtype"]] for i in model.input_info()],
            "params": [[list(p.shape), str(p.dtype)] for p in model.params]}
    if device.kind == "gpu":
        return gpu_context(model, graph, [host, device], schedules, path, spec)
    spec["kernels"] = _exported(model, graph, plan_cpu(graph, [device]), schedules, path)
    if split_path is not None:
        twin = dataclasses.replace(parse_devices("cpu,cpu")[1], target=device.target)  # parse_devices names it
        try:
            spec["split"] = {"file": split_path, "devices": 2,
                             "kernels": _exported(model, graph, plan_equal(graph, [device, twin]), schedules, split_path)}
        except BuildError:  # the model keeps its factor and the chain's launch
            pass
    return spec, _record(model, graph, spec, schedules, "cpu")


def _record(model, graph, spec: dict, schedules, kind: str) -> dict:
    """The ``context`` record a build's timings go into: the model's key, its graph's signature,
    its ops' and its kernels' schedules (:func:`schedules_digest`), on a device of ``kind``."""
    from ..ir.graph import graph_signature, op_signature

    stamp = schedules.stamp if schedules is not None else ""
    return {"type": "comm", "comm": "context", "src": kind, "dst": kind, "bytes": 0, "model": model_key(model),
            "graph": graph_signature(graph), "schedules": schedules_digest(spec["kernels"], stamp),
            "sigs": sorted({op_signature(op) for op in graph.ops.values() if not op.is_view}),
            "ops": sum(1 for op in graph.ops.values() if not op.is_view)}


def gpu_context(model, graph, devices: list, schedules, path: str, spec: dict) -> tuple[dict, dict]:
    """:func:`build_context` on a GPU: the model's ``gpu`` plan over ``devices`` (the CPU host, the
    GPU) built as builds do and exported to ``path``, its inputs given on the host and its outputs
    returned there, as ``bench`` runs a ``gpu`` row; ``spec`` gains its kernels (every one a GPU
    kernel) and ``device``. The record (``src`` ``gpu``) keeps the bytes its copies move
    (``in_bytes``: the inputs to the GPU, ``out_bytes``: the outputs back), which the cost model
    prices beside the kernels. No split build: there is one GPU.

    Why: the H200 host's ``gpu`` rows ran 11-21% over their predictions as built, its one-op
    models' 13-38% (``bench --quick``, 2026-12-04: the LSTM 544 us against 431, a model of one
    gate matmul 49 us against 34), with
    every kernel priced at its sample alone, its launch at the profile's chain and its copies at the
    copy series; the model's kernels alone in the same process against its run in the VM say how
    much of that is the kernels in the model, how much the VM's run around them."""
    from ..planners.baselines import plan_gpu

    spec["kernels"] = _exported(model, graph, plan_gpu(graph, devices), schedules, path)
    spec["device"] = "gpu"
    record = _record(model, graph, spec, schedules, "gpu")
    record["in_bytes"] = sum(_bytes(i) for i in model.input_info())
    record["out_bytes"] = sum(_bytes(o) for o in model.output_info())
    return spec, record


def _bytes(info: dict) -> int:
    # a dimension known at run time only (None) counted once
    return int(np.prod([d or 1 for d in info["shape"]], dtype=np.int64)) * np.dtype(info["dtype"]).itemsize


def schedules_digest(kernels: list[dict], stamp: str = "") -> str:
    """A digest of which schedule each of a build's kernels runs (:func:`_exported`'s ``schedule``:
    tuned, a template, transferred from which record, default) and of ``stamp``
    (:attr:`tvm_partition.build.tuning.Schedules.stamp`: the transfer rules and databases they were
    read under): two ``context`` records of one model timed the same kernels only where it agrees
    (:func:`tvm_partition.profiling.profiler.same_kernels`). The stamp, because a label names a
    template, not its tiles: under transfer rules 55 ResNet-18's stem at 64 px took other tiles
    (0.52-0.79x its time alone) with the same labels and a sum alone 10% apart, and the profile kept
    the earlier build's factor (1.45, where the new build read 1.78; amd-epyc-znver5-2c, 2026-12-03)."""
    import hashlib

    text = "\n".join(sorted(f"{k['name']}={k.get('schedule', '')}" for k in kernels)) + stamp
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _exported(model, graph, plan, schedules, path: str) -> list[dict]:
    """``model`` built for ``plan`` as builds do and exported to ``path``; every kernel its ``main``
    launches, with its launch count and arguments."""
    import tvm

    from ..build.executable import build, kernel_calls, kernel_schedules
    from .samples import kernel_args

    result = build(model.mod, plan, graph, schedules)
    # exported and loaded, as deployments and the profile's samples run: the executable tvm.compile
    # returns ran the LSTM (seq 10) in 840-1050 us in the VM, exported and loaded 649 us (same process)
    result.executable.export_library(path)
    calls, labels = kernel_calls(result.module), kernel_schedules(result.module)
    return [{"name": gv.name_hint, "calls": calls[gv.name_hint], "args": kernel_args(func),
             "schedule": labels[gv.name_hint]}
            for gv, func in result.module.functions_items()
            if calls.get(gv.name_hint) and isinstance(func, tvm.tirx.PrimFunc)]


def measure(model, device, schedules, launch_us: float = 0.0, entry: tuple[float, float] = (0.0, 0.0)) -> dict:
    """The ``context`` record of ``model`` built for the CPU ``device`` with ``schedules``
    (:func:`build_context`) and timed here on the model's own weights
    (:func:`tvm_partition.cost_models.timing.time_context`: ``vm_us``, ``warm_us``, ``rounds``,
    the factor ``mean_us``). ``launch_us``: the VM's time per kernel launch (the profile's
    ``launch`` record); ``entry``: its run beyond a launch and its time per argument
    (:func:`tvm_partition.cost_models.timing.entry_us`). A profile bundle times the same on another machine, on drawn weights
    (:func:`tvm_partition.profiling.profiler.export_bundle`)."""
    import tvm

    from ..cost_models.timing import time_context
    from ..devices import use_cpu_threads

    threads = use_cpu_threads()  # before the first kernel starts TVM's pool: the profile's pool
    with tempfile.TemporaryDirectory(prefix="tvmp-context-") as tmp:
        path = os.path.join(tmp, "model.so")
        spec, record = build_context(model, device, schedules, path, os.path.join(tmp, "split.so"))
        timed = time_context(path, spec["inputs"], [np.asarray(p) for p in model.params], spec["kernels"],
                             tvm.cpu(), launch_us, spec.get("split"), entry)
    return {**record, **timed, "threads": threads}
