"""Baseline strategies (EOP Sec. 1 and Sec. 4): CPU-only, GPU-only and Equal (0.5/0.5) splits.

``cpu`` and ``gpu`` place every op on one device (``gpu`` means the first non-host device, so
on ``cpu,cpu`` it is the second CPU). ``equal`` splits every splittable op half and half on its
batch dimension or, where the batch cannot be split (batch-1 image models), on the next legal
dimension: output channels / N, then H; ops that cannot be split run on the second device.
Reshape-like ops (views) get no decision: the pass keeps them with their producer.
"""

from __future__ import annotations

from ..devices import DeviceSpec
from ..graph import OpGraph
from ..plan import OnDevice, Plan, PlanError, Split


def _accelerator(devices: list[DeviceSpec]) -> DeviceSpec:
    if len(devices) < 2:
        raise PlanError("this strategy needs two devices, e.g. --devices cpu,gpu")
    return next((d for d in devices if d.kind == "gpu"), devices[1])


def plan_cpu(graph: OpGraph, devices: list[DeviceSpec]) -> Plan:
    host = devices[0].name
    return Plan(devices, {i: OnDevice(host) for i, op in graph.ops.items() if not op.is_view}, strategy="cpu")


def plan_gpu(graph: OpGraph, devices: list[DeviceSpec]) -> Plan:
    acc = _accelerator(devices).name
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


def plan_equal(graph: OpGraph, devices: list[DeviceSpec]) -> Plan:
    acc, host = _accelerator(devices).name, devices[0].name
    ops = {}
    for op_id, op in graph.ops.items():
        if op.is_view:
            continue
        dim = preferred_dim(graph, op_id)
        ops[op_id] = OnDevice(acc) if dim is None else Split(dim, (0.5, 0.5), (acc, host))
    return Plan(devices, ops, strategy="equal")


STRATEGIES = {"cpu": plan_cpu, "gpu": plan_gpu, "equal": plan_equal}


def plan_with(strategy: str, graph: OpGraph, devices: list[DeviceSpec]) -> Plan:
    try:
        fn = STRATEGIES[strategy]
    except KeyError:
        raise PlanError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}") from None
    return fn(graph, devices)
