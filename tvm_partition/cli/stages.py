"""Compile a model for several edge servers: consecutive stages, or parts of the batch.

``--mode stages`` cuts ``main`` into N consecutive stages, one per server; a stage hands on the
tensors it computes that are still live at its cut (e.g. an LSTM's h and c); the pipeline runner
gives each to the later stages that need it (``stage_io`` in ``pipeline.json``). The cut points are
hand-written (``--cut-after``: names of the Relax bindings after which to cut, as TVMScript
prints ``main``) or chosen to balance an estimate of each stage's arithmetic (multiply-adds of
matmul / conv, one per output element elsewhere), forwarding the fewest bytes near each share. ``--mode split`` divides the batch over N servers (FlexPie's setting: one
layer's work divided over the servers): one artifact per slice size, run on every server at once,
outputs concatenated on axis 0; it needs a model whose rows are independent (every zoo model).
``--ratios`` sets the slices: ``equal`` (a batch divisible by N), given ratios, or ``speed``: each
server of the Ray cluster ``--ray`` runs the part and the links to it are measured, and the slices
balance the predicted finish times in whole items (EOP VEE '22 Eq. 5 applied to servers,
:mod:`tvm_partition.planners.servers`). With ``--ray``, a ``--strategy`` placement is priced on the
measured servers (:class:`~tvm_partition.cost_models.base.ServersCostModel`: each server's speed
relative to this machine's profile, the measured links), and ``predicted_ms`` (the plan's
makespan plus the trip from and to the driver) goes into pipeline.json.

``--plan plan.json`` (or ``--strategy milp|heft|dp|...``: a placement planner over ``--servers``
CPUs ``cpu,cpu1,...``) stages a placement instead: each plan device is one server, the ops are
put in a topological order that stays on one device as long as it can, and ``main`` is cut
wherever the device changes. A placement that returns to a device (A, B, A) gives more stages
than servers; that server's actor of each stage runs on it. Split decisions are refused (a
stage is whole ops on one server); so are GPU devices (stages are compiled for CPU).

Each stage or part is an ordinary artifact (``DIR/stage0``, ... or ``DIR/part``) for one CPU;
``DIR/pipeline.json`` says how they chain. ``tvm-partition pipeline DIR --ray HOST:PORT`` runs it
on a Ray cluster (:mod:`tvm_partition.runtime.cluster`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile

import numpy as np

from .. import flags
from ..errors import TvmPartitionError

FORMAT_VERSION = 1


class StageError(TvmPartitionError, ValueError):
    """The model cannot be cut as asked; the message says why and what to try."""


def _main_block(func):
    from tvm import relax

    body = func.body
    if not isinstance(body, relax.SeqExpr) or len(body.blocks) != 1 or not isinstance(body.blocks[0], relax.DataflowBlock):
        raise StageError("main must be one dataflow block to be cut into stages")
    return list(body.blocks[0].bindings), body.body


def _cost(binding) -> float:
    """Multiply-adds of matmul / conv, one unit per output element otherwise (a balancing proxy)."""
    ty = getattr(binding.var, "ty", None)
    shape = getattr(ty, "shape", None)
    try:
        out = float(np.prod([int(v) for v in shape.values])) if shape is not None else 0.0
    except (TypeError, ValueError, AttributeError):
        return 0.0
    value = binding.value
    op = getattr(getattr(value, "op", None), "name", "")
    try:
        if op == "relax.matmul":
            return out * int(value.args[0].ty.shape.values[-1])
        if op.startswith("relax.nn.conv"):
            return out * float(np.prod([int(v) for v in value.args[1].ty.shape.values[1:]]))
    except (TypeError, ValueError, AttributeError, IndexError):
        pass
    return out


def cut_points(func) -> list[tuple[int, list]]:
    """``(k, live)`` for every k where cutting before binding k leaves only tensors ``live`` (in
    definition order) for the rest of ``main``, besides the weights."""
    from tvm import relax

    bindings, ret = _main_block(func)
    num_input = int(func.attrs["num_input"]) if func.attrs and "num_input" in func.attrs else len(func.params)
    defined = {p: -1 for p in func.params[:num_input]}
    last_use: dict = {}
    for i, b in enumerate(bindings):
        for v in relax.analysis.free_vars(b.value):
            last_use[v] = i
        defined[b.var] = i
    for v in relax.analysis.free_vars(ret):
        last_use[v] = len(bindings)
    points = []
    for k in range(1, len(bindings)):
        live = [v for v, d in defined.items() if d < k <= last_use.get(v, -1)]
        if live and all(isinstance(getattr(v, "ty", None), relax.TensorType) for v in live):
            points.append((k, live))
    return points


def _bytes(live) -> int:
    return sum(int(np.prod([int(d) for d in v.ty.shape.values])) * np.dtype(str(v.ty.dtype)).itemsize for v in live)


def choose_cuts(func, n: int, cut_after: list[str] | None = None) -> list[tuple[int, list]]:
    """``n - 1`` cut points: the named ones, or, near each equal share of the cost (within 10% of
    the total), the one forwarding the fewest bytes."""
    bindings, _ = _main_block(func)
    points = cut_points(func)
    if cut_after:
        by_name = {bindings[k - 1].var.name: (k, live) for k, live in points}
        bad = [name for name in cut_after if name not in by_name]
        if bad:
            raise StageError(f"cannot cut after {bad[0]!r}: not a binding of main's dataflow block "
                             f"(e.g. {', '.join(list(by_name)[:8])}, ...)")
        if len(cut_after) != n - 1:
            raise StageError(f"{n} servers need {n - 1} cut points, --cut-after gives {len(cut_after)}")
        cuts = sorted((by_name[name] for name in cut_after), key=lambda c: c[0])
    else:
        cum = np.cumsum([_cost(b) for b in bindings])
        cuts, last = [], 0
        for i in range(1, n):
            target = cum[-1] * i / n
            options = [(abs(cum[k - 1] - target), k, live) for k, live in points if k > last]
            if not options:
                break
            near = [o for o in options if o[0] <= 0.1 * cum[-1]] or [min(options, key=lambda o: o[0])]
            _, last, live = min(near, key=lambda o: (_bytes(o[2]), o[0]))
            cuts.append((last, live))
    if len(cuts) != n - 1 or len({k for k, _ in cuts}) != n - 1:
        raise StageError(f"main has {len(points)} cut points: cannot make {n} stages")
    return cuts


def plan_of(model, plan_file: str | None, strategy: str | None, servers: int, time_limit: float = 10.0,
            measured: "Servers | None" = None):
    """The placement plan to stage: read from ``plan_file`` or made by a placement strategy over
    ``servers`` CPU devices (``cpu,cpu1,...``; with ``measured``, priced by the servers' measured
    speeds and links); one plan device is one server."""
    from ..planners import make_plan
    from ..devices import parse_devices
    from ..ir.graph import OpGraph
    from ..plan import Plan, PlanError

    graph = OpGraph(model.mod)
    try:
        if plan_file:
            plan = Plan.load(plan_file)
            plan.validate(graph)
        else:
            options = {"cost_model": measured.cost_model, "topology": measured.topology()} if measured else {}
            plan = make_plan(graph, parse_devices(",".join(["cpu"] * servers)), strategy, time_limit=time_limit,
                             **options)
    except PlanError as e:
        raise StageError(f"placement plan: {e}") from None
    for op_id, dec in plan.ops.items():
        if not hasattr(dec, "device"):
            raise StageError(f"op {op_id!r} is split over {list(dec.devices)}: stages place whole ops on one "
                             "server each; give it an on_device decision (a Split runs on the devices of one machine: "
                             "tvm-partition compile --plan)")
    gpus = [d for d in plan.devices if d.kind != "cpu"]
    if gpus:
        raise StageError(f"device {gpus[0].name!r} is a {gpus[0].kind}: stages are compiled for CPU servers "
                         "only; use cpu devices in the plan")
    return graph, plan


def _device_order(graph, plan) -> list[str]:
    """The ops in a topological order that stays on one device as long as it can (ready ops on
    the current device, or views without a decision, first; then the earliest in graph order)."""
    rank = {v: i for i, v in enumerate(graph.topo_order())}
    dev = {v: (plan.ops[v].device if v in plan.ops else None if graph.ops[v].is_view else plan.host)
           for v in graph.ops}
    indeg = {v: graph.graph.in_degree(v) for v in graph.ops}
    ready = [rank[v] for v in graph.ops if indeg[v] == 0]
    order, current, by_rank = [], None, {r: v for v, r in rank.items()}
    while ready:
        same = [r for r in ready if dev[by_rank[r]] in (None, current)]
        r = min(same or ready)
        ready.remove(r)
        v = by_rank[r]
        order.append(v)
        current = dev[v] or current
        for w in graph.graph.successors(v):
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(rank[w])
    return order


def placed_bindings(model, graph, plan):
    """``main``'s bindings reordered so that each op's bindings follow the op order of
    :func:`_device_order` (a topological order again), and the device of each (None: a weight-only
    binding or a view without a decision, which goes with the stage it falls in)."""
    import heapq

    from tvm import relax

    bindings, ret = _main_block(model.mod["main"])
    ops = _device_order(graph, plan)
    op_rank = {v: i for i, v in enumerate(ops)}
    rank = [float("inf")] * len(bindings)
    for i in reversed(range(len(bindings))):  # a binding outside every op goes with its first user
        op = graph.op_of_binding.get(i)
        rank[i] = op_rank[op] if op is not None else min([rank[u] for u in graph.users[bindings[i].var]] or [rank[i]])
    waiting = [len({v for v in graph.free[i] if v in graph.index_of}) for i in range(len(bindings))]
    ready = [(rank[i], i) for i in range(len(bindings)) if not waiting[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for u in graph.users[bindings[i].var]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (rank[u], u))
    if len(order) != len(bindings):
        raise StageError("main's bindings have no topological order (a cycle?)")
    devices = []
    for i in order:
        op = graph.op_of_binding.get(i)
        free = op is None or (graph.ops[op].is_view and op not in plan.ops)
        devices.append(None if free else plan.decision(op).device)
    func = model.mod["main"]
    body = relax.SeqExpr([relax.DataflowBlock([bindings[i] for i in order])], ret)
    return relax.Function(list(func.params), body, ret.ty, attrs=func.attrs), devices


def plan_cuts(func, devices: list, names: list[str]) -> tuple[list, list[int]]:
    """Cut ``func`` wherever the device changes: ``(cuts, server of each stage)``. Between two
    bindings on different devices the cut goes where the fewest bytes are live (bindings without a
    device in between may go either way)."""
    points = dict(cut_points(func))
    bindings, _ = _main_block(func)
    placed = [i for i, d in enumerate(devices) if d is not None] or [0]
    first = devices[placed[0]] or names[0]
    cuts, servers = [], [names.index(first)]
    for a, b in zip(placed, placed[1:]):
        if devices[a] == devices[b]:
            continue
        options = [k for k in range(a + 1, b + 1) if k in points]
        if not options:
            raise StageError(f"cannot cut between {bindings[a].var.name} (on {devices[a]}) and "
                             f"{bindings[b].var.name} (on {devices[b]}): a value that is not a tensor is live "
                             "there; put both on one device")
        k = min(options, key=lambda k: (_bytes(points[k]), k))
        cuts.append((k, points[k]))
        servers.append(names.index(devices[b]))
    return cuts, servers


def _outputs(body: list, live: list, i: int):
    """Bind the tensors a stage hands on to one output var (a tuple where there are several)."""
    from tvm import relax

    if len(live) == 1:
        out = relax.Var(f"stage{i}_out", live[0].ty)
        body.append(relax.VarBinding(out, live[0]))
    else:
        out = relax.Var(f"stage{i}_out", relax.TupleType([v.ty for v in live]))
        body.append(relax.VarBinding(out, relax.Tuple(list(live))))
    return out


def _handoff(bindings, bounds: list[int], live: list, i: int) -> list:
    """The tensors stage ``i`` hands on: those live at its end that it defines. One defined earlier
    (or a model input) is kept by the runner of the pipeline and given to the stage that needs it:
    a stage cannot return its own input over TVM RPC (a client-allocated tensor on the server)."""
    defined = {b.var for b in bindings[bounds[i]:bounds[i + 1]]}
    out = [v for v in live[i + 1] if v in defined]
    if not out:
        raise StageError(f"stage {i} hands nothing on to the next stage: cut elsewhere")
    return out


def stage_io(model, cuts) -> list[dict]:
    """Per stage, the keys of its inputs and outputs (``pipeline.json``'s ``stage_io``): a model
    input's name, or ``NAME@K`` for binding K of ``main``; the last stage returns the model outputs."""
    bindings, _ = _main_block(model.mod["main"])
    index = {b.var: k for k, b in enumerate(bindings)}
    bounds = [0] + [k for k, _ in cuts] + [len(bindings)]
    live = [None] + [v for _, v in cuts] + [None]

    def key(v):
        return f"{v.name}@{index[v]}" if v in index else v.name

    io = []
    for i in range(len(bounds) - 1):
        ins = list(model.inputs) if live[i] is None else [key(v) for v in live[i]]
        outs = None if live[i + 1] is None else [key(v) for v in _handoff(bindings, bounds, live, i)]
        io.append({"inputs": ins, "outputs": outs})
    return io


def stage_modules(model, cuts) -> list:
    """One :class:`~tvm_partition.frontend.model.Model` per stage, in order."""
    import tvm
    from tvm import relax

    from .. import frontend

    func = model.mod["main"]
    bindings, ret = _main_block(func)
    num_input = int(func.attrs["num_input"]) if func.attrs and "num_input" in func.attrs else len(func.params)
    weights = dict(zip(func.params[num_input:], model.params))
    bounds = [0] + [k for k, _ in cuts] + [len(bindings)]
    live = [None] + [v for _, v in cuts] + [None]
    stages = []
    for i in range(len(bounds) - 1):
        body = list(bindings[bounds[i]:bounds[i + 1]])
        if live[i] is None:
            inputs, example = list(func.params[:num_input]), dict(model.inputs)
        else:
            inputs = [relax.Var(f"stage{i}_in{j}", v.ty) for j, v in enumerate(live[i])]
            body[:0] = [relax.VarBinding(v, p) for v, p in zip(live[i], inputs)]
            example = {p.name: np.zeros([int(d) for d in p.ty.shape.values], str(p.ty.dtype)) for p in inputs}
        out = ret if live[i + 1] is None else _outputs(body, _handoff(bindings, bounds, live, i), i)
        used = set(relax.analysis.free_vars(out))
        for b in body:
            used.update(relax.analysis.free_vars(b.value))
        params = [p for p in func.params[num_input:] if p in used]
        f = relax.Function(inputs + params, relax.SeqExpr([relax.DataflowBlock(body)], out), out.ty,
                           attrs=tvm.ir.make_node("ir.DictAttrs", num_input=len(inputs), global_symbol="main"))
        stage = frontend.load(tvm.IRModule({"main": f}), params=[weights[p] for p in params], inputs=example)
        stage.name = f"{model.name}-stage{i}"
        stages.append(stage)
    return stages


def write(out_dir: str, mode: str, servers: int, artifacts: list[str], model, extra: dict) -> None:
    spec = {"format_version": FORMAT_VERSION, "mode": mode, "servers": servers, "model": model.name,
            "inputs": model.input_info(), "outputs": model.output_info(), "artifacts": artifacts, **extra}
    from ..runtime.cluster import PIPELINE

    with open(os.path.join(out_dir, PIPELINE), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")


def _placed_stages(model, plan_file, strategy, servers, time_limit, measured=None):
    """The model reordered for the plan, its cuts, the server of each stage, the device names and
    the plan (``measured``: :class:`Servers` to place over)."""
    import copy

    import tvm

    graph, plan = plan_of(model, plan_file, strategy, servers, time_limit, measured)
    func, devices = placed_bindings(model, graph, plan)
    names = [d.name for d in plan.devices]
    cuts, stage_servers = plan_cuts(func, devices, names)
    placed = copy.copy(model)
    placed.mod = tvm.IRModule({"main": func})
    return placed, cuts, stage_servers, names, plan


@dataclasses.dataclass(frozen=True)
class Servers:
    """Edge servers as measured through Ray: names, each one's ms a run of a probe artifact
    (:func:`tvm_partition.runtime.cluster.time_on`) and
    what this machine's profile predicts for it (``local_ms``), the cost model that prices plan devices ``cpu``, ``cpu1``, ... (the
    servers in order) with them, the links between servers (``bandwidth_Bps`` / ``latency_us`` by
    device name, the placement planners' topology) and to the driver (``driver``: latency us,
    bandwidth B/s)."""

    names: tuple[str, ...]
    ms: tuple[float, ...]
    local_ms: float
    cost_model: object
    bandwidth_Bps: dict
    latency_us: dict
    driver: tuple[float, float]
    ms_together: tuple[float, ...] | None = None

    def topology(self) -> tuple[list, dict, dict]:
        return [], self.bandwidth_Bps, self.latency_us

    def driver_ms(self, nbytes: float) -> float:
        lat, bw = self.driver
        return (lat + nbytes / bw * 1e6) / 1e3

    def trip_ms(self, model) -> float:
        """The inputs from the driver and the outputs back (the ends of a staged request)."""
        return self.driver_ms(_nbytes(model.input_info())) + self.driver_ms(_nbytes(model.output_info()))

    def record(self) -> dict:
        """What pipeline.json keeps of the measurement."""
        together = {"measured_servers_together": {n: round(ms, 3) for n, ms in zip(self.names, self.ms_together)}
                    } if self.ms_together else {}
        return {"measured_servers": {n: round(ms, 3) for n, ms in zip(self.names, self.ms)}, **together,
                "predicted_local_ms": round(self.local_ms, 3)}


def _nbytes(infos: list[dict]) -> int:
    # a dimension known at run time only (None) counted once
    return sum(int(np.prod([d or 1 for d in i["shape"]])) * np.dtype(i["dtype"]).itemsize for i in infos)


#: the servers measured together run for this many of the slowest one's runs
TOGETHER_RUNS = 3
#: transfer sizes of the link probe: the latency from the small one, the bandwidth from both
LINK_BYTES = (1 << 10, 4 << 20)


def _link(src, dst) -> tuple[float, float]:
    """``(latency us, bandwidth B/s)`` of one direction, ``None``: the driver."""
    from ..runtime.cluster import link_ms

    small, big = (link_ms(src, dst, n) for n in LINK_BYTES)
    bw = (LINK_BYTES[1] - LINK_BYTES[0]) / max(1e-6, (big - small) / 1e3)
    return max(0.0, small * 1e3 - LINK_BYTES[0] / bw * 1e6), bw


def measure_servers(address: str, probe: str, inputs: dict, count: int, repeat: int = 5) -> Servers:
    """Run artifact ``probe`` on the first ``count`` servers of the Ray cluster at ``address``,
    price them against this machine's profile's prediction for it, and measure the links between
    them and to this driver (ping-pong through the object store)."""
    from ..cost_models import default_cost_model
    from ..cost_models.base import ServersCostModel
    from ..devices import parse_devices
    from ..runtime import cluster

    cluster.connect(address)
    names = cluster.server_names()[:count]
    if len(names) < count:
        raise StageError(f"the Ray cluster at {address} has {len(names)} live servers ({', '.join(names) or 'none'}): "
                         f"{count} needed")
    ms = tuple(cluster.time_on(n, probe, inputs, repeat) for n in names)
    # each server's factor is its measured time over what this machine's profile predicts for the
    # same artifact, so a placement of every op on one server is priced at that server's measured
    # time. Over this machine's measured time instead (no quota, 2 threads) the factors carried the
    # profile's own error: ResNet-18 at 64 px, batch 8, all on server A predicted 32.6 ms,
    # measured 81 ms (benchmarks/ray_servers.py, 2026-11-25)
    local_ms = _predicted_ms(probe)
    devices = parse_devices(",".join(["cpu"] * count))
    dev = dict(zip(names, (d.name for d in devices)))
    bw, lat = {dev[a]: {} for a in names}, {dev[a]: {} for a in names}
    for a in names:
        for b in names:
            if a != b:
                lat[dev[a]][dev[b]], bw[dev[a]][dev[b]] = _link(a, b)
    ends = [_link(None, n) for n in names] + [_link(n, None) for n in names]
    driver = (float(np.mean([e[0] for e in ends])), float(np.mean([e[1] for e in ends])))
    factors = {dev[n]: t / local_ms for n, t in zip(names, ms)}
    model = ServersCostModel(default_cost_model(devices)[0], factors, bw, lat, local=devices[0].name)
    return Servers(tuple(names), ms, local_ms, model, bw, lat, driver)


def _predicted_ms(art_dir: str) -> float:
    """What this machine's profile predicted for the artifact at ``art_dir`` (its plan.json)."""
    with open(os.path.join(art_dir, "plan.json"), encoding="utf-8") as f:
        return float(json.load(f)["predicted_latency_us"]) / 1e3


def _cpu_artifact(model, out_dir: str, tuning_db, threads) -> None:
    """``model`` compiled whole for one server's CPU, written to ``out_dir``: a probe or a part."""
    from .compile import compile_model
    from ..devices import parse_devices

    compile_model(model, parse_devices("cpu"), "cpu", tuning_db=tuning_db, num_threads=threads).save(out_dir)


def _measure_whole(model, servers: int, ray: str, tuning_db, threads) -> Servers:
    """:func:`measure_servers` with the whole model compiled for one CPU as the probe."""
    with tempfile.TemporaryDirectory(prefix="tvmp-probe-") as d:
        _cpu_artifact(model, d, tuning_db, threads)
        return measure_servers(ray, d, model.inputs, servers)


def parse_ratios(text: str, servers: int) -> str | list[float]:
    """``equal``, ``speed`` or ``servers`` numbers >= 0 (not all 0)."""
    if text in ("equal", "speed"):
        return text
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not v >= 0 for v in values) or not sum(values) > 0:
        raise StageError(f"--ratios {text!r}: give equal, speed or numbers R1,R2,... (>= 0, not all 0)")
    if len(values) != servers:
        raise StageError(f"--ratios gives {len(values)} ratios for {servers} servers")
    return values


def _split_plan(source, model, load_args, servers: int, ratios, ray, tuning_db, threads):
    """The batch split (:mod:`tvm_partition.planners.servers`) and, where measured, the servers and
    the planner's model of each (:class:`~tvm_partition.planners.servers.ServerModel`)."""
    from .. import frontend
    from ..planners import servers as sp
    from ..runtime import cluster

    batch = next(iter(model.inputs.values())).shape[0]
    if ratios == "equal" and batch % servers:
        raise StageError(f"batch {batch} does not divide into {servers} equal parts (use --batch, or --ratios)")
    if not ray:
        dummy = [sp.ServerModel(f"s{i}", 1.0) for i in range(servers)]
        return (sp.equal(dummy, batch) if ratios == "equal" else sp.fixed(dummy, batch, ratios)), None, None
    probe_batch = max(1, batch // servers)
    part = frontend.load(source, **{**load_args, "batch": probe_batch})
    with tempfile.TemporaryDirectory(prefix="tvmp-probe-") as d:
        _cpu_artifact(part, d, tuning_db, threads)
        measured = measure_servers(ray, d, part.inputs, servers)
        # the servers slow each other down where they share a machine or a link: each one's time
        # while all run at once prices the splits that keep several busy (planners/servers.py)
        window_s = TOGETHER_RUNS * max(measured.ms) / 1e3
        together = cluster.time_together(list(measured.names), d, part.inputs, window_s) if servers > 1 else measured.ms
    # per request: the driver link's latency both ways; per item: the run and its bytes both ways
    lat_ms, bw = measured.driver[0] / 1e3, measured.driver[1]
    item_bytes = (_nbytes(part.input_info()) + _nbytes(part.output_info())) / probe_batch
    models = [sp.ServerModel(n, ms / probe_batch + item_bytes / bw * 1e3, 2 * lat_ms,
                             shared / probe_batch + item_bytes / bw * 1e3)
              for n, ms, shared in zip(measured.names, measured.ms, together)]
    measured = dataclasses.replace(measured, ms_together=together)
    plan = {"speed": lambda: sp.balanced(models, batch), "equal": lambda: sp.equal(models, batch)}.get(
        ratios if isinstance(ratios, str) else "", lambda: sp.fixed(models, batch, ratios))()
    return plan, measured, models


def _compile_split(model_name, model, servers, out_dir, ratios, ray, tuning_db, threads, load_args) -> dict:
    """One part artifact per slice size (``part<items>``), ``slices`` per server in pipeline.json."""
    from .. import frontend

    if hasattr(model_name, "mod"):
        raise StageError("--mode split reloads the model at the slices' batch sizes: give a zoo name or an .onnx path")
    plan, measured, models = _split_plan(model_name, model, load_args, servers, parse_ratios(ratios, servers),
                                         ray, tuning_db, threads)
    os.makedirs(out_dir, exist_ok=True)
    arts = {}
    for items in sorted(set(n for n in plan.slices if n)):
        part = frontend.load(model_name, **{**load_args, "batch": items})
        arts[items] = f"part{items}"
        _cpu_artifact(part, os.path.join(out_dir, arts[items]), tuning_db, threads)
    first = next(iter(arts.values()))
    extra = {"axis": 0, "slices": list(plan.slices), "slice_artifacts": [arts.get(n, first) for n in plan.slices],
             "ratios": plan.how}
    if measured:
        # the times the split was priced with, as the planner saw them: why these slices
        extra.update(measured.record(), predicted_ms=round(plan.predicted_ms, 3),
                     split_models=[dataclasses.asdict(m) for m in models])
    write(out_dir, "split", servers, sorted(arts.values()), model, extra)
    return {"parts": servers, "slices": list(plan.slices), **({"predicted_ms": extra["predicted_ms"]} if measured else {})}


def compile_pipeline(model_name, servers: int, mode: str, out_dir: str, *, cut_after=None,
                     plan_file: str | None = None, strategy: str | None = None, time_limit: float = 10.0,
                     threads: int | None = None, tuning_db: str | None = None, ratios: str = "equal",
                     ray: str | None = None, **load_args) -> dict:
    """``model_name``: a zoo name, an .onnx path or a loaded Model. Stages come from a placement plan
    (``plan_file``, or ``strategy`` over ``servers`` CPUs; with ``ray``, over the cluster's servers
    as measured), else from ``cut_after`` or the balance. Split: slices by ``ratios`` (equal, speed:
    measured on ``ray``'s servers, or R1,R2,...)."""
    from .. import frontend

    model = model_name if hasattr(model_name, "mod") else frontend.load(model_name, **load_args)
    if mode == "split":
        return _compile_split(model_name, model, servers, out_dir, ratios, ray, tuning_db, threads, load_args)
    extra = {}
    if plan_file or strategy:
        measured = _measure_whole(model, servers, ray, tuning_db, threads) if ray else None
        staged, cuts, stage_servers, names, plan = _placed_stages(model, plan_file, strategy, servers, time_limit,
                                                                  measured)
        servers = len(names)
        extra = {"stage_servers": stage_servers, "server_devices": names, "plan_strategy": plan.strategy}
        if measured:
            extra.update(measured.record(), predicted_ms=round(plan.predicted_latency_us / 1e3
                                                               + measured.trip_ms(model), 3))
    else:
        staged, cuts = model, choose_cuts(model.mod["main"], servers, cut_after)
    bindings, _ = _main_block(staged.mod["main"])
    after = [bindings[k - 1].var.name for k, _ in cuts]
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for i, stage in enumerate(stage_modules(staged, cuts)):
        _cpu_artifact(stage, os.path.join(out_dir, f"stage{i}"), tuning_db, threads)
        names.append(f"stage{i}")
    write(out_dir, "stages", servers, names, model, {"cut_after": after, "stage_io": stage_io(staged, cuts), **extra})
    return {"stages": len(names), "cut_after": after, **{k: v for k, v in extra.items() if k == "stage_servers"}}


def _arg_problem(args) -> str | None:
    """What is wrong with the combination of flags, or None."""
    given = (("--plan", args.plan), ("--strategy", args.strategy), ("--cut-after", args.cut_after))
    placement = [flag for flag, value in given if value]
    if len(placement) > 1:
        return f"{placement[0]} and {placement[1]} both say where to cut: give one"
    if placement and args.mode == "split":
        return f"{placement[0]} is for --mode stages"
    if args.plan and args.servers is not None:
        return "--plan decides the servers (one per plan device): leave out --servers"
    return _ray_problem(args)


def _ray_problem(args) -> str | None:
    """What is wrong with --ratios / --ray, or None."""
    if args.ratios is not None and args.mode != "split":
        return "--ratios is for --mode split"
    if args.ratios is not None:
        try:
            parse_ratios(args.ratios, args.servers or 2)
        except StageError as e:
            return str(e)
    if args.ratios == "speed" and not args.ray:
        return "--ratios speed measures the servers: give --ray HOST:PORT"
    if args.ray and args.plan:
        return "--plan fixes the placement: --ray measures servers for --ratios speed or --strategy"
    if args.ray and args.mode == "stages" and not args.strategy:
        return "--ray measures servers for a --strategy placement (or --mode split --ratios speed)"
    return None


def parser():
    ap = flags.parser("stages", "Compile a model as stages or batch parts for several edge servers (run on Ray).",
                      epilog=flags.ZOO_EPILOG)
    ap.add_argument("model", help="zoo name or .onnx path")
    ap.add_argument("--servers", type=flags.at_least(1), metavar="N",
                    help="number of edge servers (default 2; with --plan: the plan's devices)")
    ap.add_argument("--mode", choices=["stages", "split"], default="stages",
                    help="stages: consecutive stages, one per server; split: batch parts run at once")
    ap.add_argument("--cut-after", metavar="VAR,...", help="stages: comma-separated Relax binding names to cut after")
    ap.add_argument("--plan", metavar="FILE", help="stages: a placement plan (plan.json of OnDevice decisions); "
                    "each plan device is one server, in the plan's device order")
    ap.add_argument("--strategy", choices=flags.PLACEMENT_STRATEGIES,
                    help="stages: make the placement plan with this strategy over --servers CPUs (cpu,cpu1,...)")
    ap.add_argument("--ratios", metavar="equal|speed|R1,R2,...",
                    help="split: the batch slices: equal (default), speed (each server's measured speed, EOP Eq. 5 "
                         "balance; needs --ray) or given ratios")
    ap.add_argument("--ray", metavar="HOST:PORT",
                    help="a Ray cluster whose servers to measure (speed, links) for --ratios speed or --strategy")
    flags.add_time_limit(ap, "seconds for --strategy milp/dominators (default 10)")
    flags.add_model_args(ap)
    flags.add_threads(ap, "CPU threads each server's runner uses (default: all here)")
    ap.add_argument("--no-tuning", action="store_true", help="build without the tuning database")
    flags.add_out(ap, "folder for the stage artifacts and pipeline.json", required=True)
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)  # before TVM is imported: --help and bad flags answer at once

    from .. import frontend
    from ..build.databases import local_database

    problem = _arg_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.ray:  # unreachable: one line before anything is compiled or written
        from ..runtime.cluster import connect

        connect(args.ray)
    load_args = {k: getattr(args, k) for k in frontend.MODEL_OPTIONS if getattr(args, k)}
    info = compile_pipeline(args.model, args.servers or 2, args.mode, args.out,
                            cut_after=args.cut_after.split(",") if args.cut_after else None,
                            plan_file=args.plan, strategy=args.strategy, time_limit=args.time_limit,
                            threads=args.threads, tuning_db=None if args.no_tuning else local_database(None),
                            ratios=args.ratios or "equal", ray=args.ray, **load_args)
    print(f"wrote {args.out}/ ({args.mode}: {info})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
