"""Baseline strategies (EOP Sec. 1 and Sec. 4): CPU-only, GPU-only, Equal (0.5/0.5) and Fixed splits.

``cpu`` and ``gpu`` place every op on one device (``gpu`` means the first non-host device, so
on ``cpu,cpu`` it is the second CPU). ``equal`` splits every splittable op half and half on its
batch dimension or, where the batch cannot be split (batch-1 image models), on the next legal
dimension: output channels / N, then H; ops that cannot be split run on the second device. Given a
cost model, a split takes another legal axis where it prices that one :data:`AXIS_GAIN` quicker
(:func:`split_dim`; ``fixed`` likewise).
``fixed`` (EOP Sec. 1, Fig. 1(c), and its baseline 4 in Sec. 5) gives every op of a subgraph the
ratio of the subgraph's speedup s = CPU time / GPU time: s/(1+s) of the op on the GPU, the rest on
the CPU. Subgraphs are the segments between the graph's dominators (every input-to-output path
crosses each cut; :func:`.dominators.dominator_cuts`), unless given.
Reshape-like ops (views) get no decision: the pass keeps them with their producer.
Every planner takes ``(graph, devices, cost_model)``; ``fixed`` needs the cost model, ``equal`` uses
it to choose axes.
"""

from __future__ import annotations

from ..devices import DeviceSpec
from ..ir.graph import OpGraph
from ..ir.split_rules import IllegalSplit
from ..plan import OnDevice, Plan, PlanError, Split
from .eop import EOP
from .roles import accelerator


def plan_cpu(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    host = devices[0].name
    return Plan(devices, {i: OnDevice(host) for i, op in graph.ops.items() if not op.is_view}, strategy="cpu")


def plan_gpu(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    acc = accelerator(devices).name
    return Plan(devices, {i: OnDevice(acc) for i, op in graph.ops.items() if not op.is_view}, strategy="gpu")


def axis_order(graph: OpGraph, op_id: str) -> list[int]:
    """The op's legal split axes, preferred first: batch; then output channels / N; then H; then
    the others in order."""
    op = graph.ops[op_id]
    order = [0]
    if op.kind == "conv2d":
        order += [1, 2, 3]
    elif op.kind == "matmul":
        n = len(op.output_shapes[-1])
        order += [n - 1, n - 2]
    legal = sorted(op.split_dims)
    return [a for a in order if a in legal] + [a for a in legal if a not in order]


def preferred_dim(graph: OpGraph, op_id: str) -> int | None:
    """The first of :func:`axis_order`, None where the op cannot be split."""
    return next(iter(axis_order(graph, op_id)), None)


#: Where the cost model prices a baseline's split of an op on another legal axis this much quicker
#: than on :func:`preferred_dim`'s (EOP's Eq. 2 time: parts, slices and copies), the split takes
#: that axis. Why: ResNet-18's 3x3 convolutions at 16 x 16 (64 channels), split half and half,
#: ran their parts 1.27x the whole op's time at 32 output channels each and 1.02x at 8 rows each
#: (the direct-convolution template keeps its channel tile whole; amd-epyc-znver3-2c profile,
#: 2026-11-29). Not for a few percent: the estimates of an axis never sampled are a pattern's or
#: XGBoost's, and the preferred axis keeps ``equal`` the same plan wherever they are close.
AXIS_GAIN = 0.10


def split_dim(graph: OpGraph, op_id: str, ratios: tuple, eop=None) -> int | None:
    """The axis a baseline splits ``op_id`` on at ``ratios`` (the accelerator's share first):
    :func:`preferred_dim`'s, unless ``eop`` (an :class:`~tvm_partition.planners.eop.EOP` on the
    plan's cost model) prices a later axis of :func:`axis_order` :data:`AXIS_GAIN` quicker: then
    the first such."""
    order = axis_order(graph, op_id)
    if eop is None or len(order) < 2:
        return next(iter(order), None)

    def price(dim: int) -> float:
        try:
            t = eop.split_time(op_id, Split(dim, ratios, (eop.acc, eop.host)))
        except IllegalSplit:  # a cut the split rules refuse (EOP's own search skips it too)
            return float("inf")
        return float("inf") if t is None else t[0]

    first = price(order[0])
    return next((d for d in order[1:] if price(d) < (1.0 - AXIS_GAIN) * first), order[0])


class _Axes:
    """:func:`split_dim` for every op of one plan, on an EOP planner of ``cost_model`` (none: the
    preference order), ops that EOP decides alike (:meth:`EOP.op_key`: repeated layers, RNN steps)
    priced once. Why: an LSTM at EOP's Table 3 setting has 896 ops of a few kernels."""

    def __init__(self, graph: OpGraph, devices: list[DeviceSpec], cost_model):
        self.graph, self.memo = graph, {}
        self.eop = None if cost_model is None else EOP(graph, devices, cost_model)

    def __call__(self, op_id: str, ratios: tuple) -> int | None:
        if self.eop is None:
            return preferred_dim(self.graph, op_id)
        key = (self.eop.op_key(op_id), ratios)
        if key not in self.memo:
            self.memo[key] = split_dim(self.graph, op_id, ratios, self.eop)
        return self.memo[key]


def plan_equal(graph: OpGraph, devices: list[DeviceSpec], cost_model=None) -> Plan:
    acc, host = accelerator(devices).name, devices[0].name
    axis = _Axes(graph, devices, cost_model)
    ops = {}
    for op_id, op in graph.ops.items():
        if op.is_view:
            continue
        dim = axis(op_id, (0.5, 0.5))
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
    axis = _Axes(graph, devices, cost_model)
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
            dim = preferred_dim(graph, v) if beta in (0.0, 1.0) else axis(v, (beta, round(1 - beta, 2)))
            if dim is None or beta in (0.0, 1.0):
                faster = acc if cost_model.op_time(graph.ops[v], acc) < cost_model.op_time(graph.ops[v], host) else host
                ops[v] = OnDevice(faster if dim is None else (acc if beta == 1.0 else host))
            else:
                ops[v] = Split(dim, (beta, round(1 - beta, 2)), (acc, host))
    return Plan(devices, ops, strategy="fixed", meta={"fixed": {"gpu_ratio": ratios}})
