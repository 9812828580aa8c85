"""Baseline strategies (EOP Sec. 1 and Sec. 4): CPU-only, GPU-only, Equal (0.5/0.5) and Fixed splits.

``cpu`` and ``gpu`` place every op on one device (``gpu`` means the first non-host device, so
on ``cpu,cpu`` it is the second CPU). ``equal`` splits every splittable op half and half on its
batch dimension or, where the batch cannot be split (batch-1 image models), on the next legal
dimension: output channels / N, then H; ops that cannot be split run on the second device.
``fixed`` (EOP Sec. 1, Fig. 1(c), and its baseline 4 in Sec. 5) gives every op of a subgraph the
ratio of the subgraph's speedup s = CPU time / GPU time: s/(1+s) of the op on the GPU, the rest on
the CPU. Subgraphs are the segments between the graph's dominators (every input-to-output path
crosses each cut; :func:`.dominators.dominator_cuts`), unless given.
Reshape-like ops (views) get no decision: the pass keeps them with their producer.
Every planner takes ``(graph, devices, cost_model)``; only ``fixed`` uses the cost model.
"""

from __future__ import annotations

from ..devices import DeviceSpec
from ..ir.graph import OpGraph
from ..plan import OnDevice, Plan, PlanError, Split


def accelerator(devices: list[DeviceSpec]) -> DeviceSpec:
    if len(devices) < 2:
        raise PlanError("this strategy needs two devices, e.g. --devices cpu,gpu")
    return next((d for d in devices if d.kind == "gpu"), devices[1])


#: A plan using several devices must be predicted at least this much faster than the best
#: single-device plan to be chosen over it. Below it a split is a coin toss: on the build machine's
#: tuned builds, predictions were 0-25% off end to end (BENCHMARKS.md), and on 2026-11-23 EOP
#: split one BERT-tiny transpose at a 0.8% predicted gain that measured 1-3% slower.
MIN_GAIN = 0.03


def pick(predicted: dict[str, float], single: tuple[str, ...]) -> str:
    """The key of ``predicted`` (plan name -> predicted us) to keep: the fastest, unless it is not
    one of the ``single``-device plans and beats the best of them by less than :data:`MIN_GAIN`."""
    best = min(predicted, key=predicted.get)
    singles = [k for k in single if k in predicted]
    if best in singles or not singles:
        return best
    alone = min(singles, key=predicted.get)
    return best if predicted[best] < (1.0 - MIN_GAIN) * predicted[alone] else alone


def plan_cpu(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    host = devices[0].name
    return Plan(devices, {i: OnDevice(host) for i, op in graph.ops.items() if not op.is_view}, strategy="cpu")


def plan_gpu(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    acc = accelerator(devices).name
    return Plan(devices, {i: OnDevice(acc) for i, op in graph.ops.items() if not op.is_view}, strategy="gpu")


def preferred_dim(graph: OpGraph, op_id: str) -> int | None:
    """Batch first; then output channels / N; then H; then any other legal axis."""
    op = graph.ops[op_id]
    legal = op.split_dims
    if not legal:
        return None
    order = [0]
    if op.kind == "conv2d":
        order += [1, 2, 3]
    elif op.kind == "matmul":
        n = len(op.output_shapes[-1])
        order += [n - 1, n - 2]
    return next((a for a in order if a in legal), min(legal))


def plan_equal(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    acc, host = accelerator(devices).name, devices[0].name
    ops = {}
    for op_id, op in graph.ops.items():
        if op.is_view:
            continue
        dim = preferred_dim(graph, op_id)
        ops[op_id] = OnDevice(acc) if dim is None else Split(dim, (0.5, 0.5), (acc, host))
    return Plan(devices, ops, strategy="equal")


def subgraphs(graph: OpGraph) -> list[list[str]]:
    """The graph cut at its dominators, in topological order (each cut op ends a segment)."""
    from .dominators import cut_at_dominators

    return cut_at_dominators(graph.graph, graph.topo_order())


def plan_fixed(graph: OpGraph, devices: list[DeviceSpec], cost_model, groups: list[list[str]] | None = None) -> Plan:
    """EOP's Fixed baseline: each subgraph's speedup s sets ratio s/(1+s) on the GPU for all its ops."""
    if cost_model is None:
        raise PlanError("the fixed strategy needs a cost model (the subgraph speedups come from it)")
    acc, host = accelerator(devices).name, devices[0].name
    ops, ratios = {}, {}
    for group in groups or subgraphs(graph):
        members = [v for v in group if not graph.ops[v].is_view]
        t_cpu = sum(cost_model.op_time(graph.ops[v], host) for v in members)
        t_gpu = sum(cost_model.op_time(graph.ops[v], acc) for v in members)
        if not members:
            continue
        s = t_cpu / t_gpu if t_gpu > 0 else float("inf")
        beta = 1.0 if s == float("inf") else round(s / (1 + s), 2)
        for v in members:
            ratios[v] = beta
            dim = preferred_dim(graph, v)
            if dim is None or beta in (0.0, 1.0):
                faster = acc if cost_model.op_time(graph.ops[v], acc) < cost_model.op_time(graph.ops[v], host) else host
                ops[v] = OnDevice(faster if dim is None else (acc if beta == 1.0 else host))
            else:
                ops[v] = Split(dim, (beta, round(1 - beta, 2)), (acc, host))
    return Plan(devices, ops, strategy="fixed", meta={"fixed": {"gpu_ratio": ratios}})
