"""The placement problem as a file: a task graph, devices with memory caps, and links.

A problem is networkx node-link JSON (``nx.node_link_data(G, edges="links")``)::

    {"directed": true, "multigraph": false,
     "graph": {"devices": [{"name": "gpu0", "memory_bytes": 8e9}, {"name": "cpu0", "memory_bytes": 3.2e10}],
               "bandwidth_Bps": {"gpu0": {"cpu0": 1.2e10}, "cpu0": {"gpu0": 1.2e10}},
               "latency_us":    {"gpu0": {"cpu0": 10.0},   "cpu0": {"gpu0": 10.0}}},
     "nodes": [{"id": "conv1", "time_us": {"gpu0": 12.5, "cpu0": 80.0}, "mem_bytes": 1048576}],
     "links": [{"source": "conv1", "target": "relu1", "bytes": 4096}]}

A node runs only on the devices its ``time_us`` names. A node may also list ``splits``, ways to
run it split over several devices at once (joint split + placement)::

    "splits": [{"devices": ["gpu0", "cpu0"], "ratios": [0.75, 0.25], "time_us": 9.5}]

``time_us`` there is the whole split op (slowest part plus moving the parts); it occupies every
device of the split, and its output is on the first device (where the parts are joined). A transfer between two devices takes
``latency_us + bytes / bandwidth_Bps``; a pair the file does not give uses the best multi-hop
path, whose bandwidth is the minimum over its links (MOIRAI Sec. III-C, "Communication time")
and whose latency is the sum over its links. Zero-time nodes occupy no device time.

Link congestion (MOIRAI Sec. III-D, "Congestion control", Eq. 8, term (4g) of its model (4)) is
on by default: two transfers leaving one device, or two arriving at one device, never overlap. ``"congestion": false``
in the ``graph`` part (or ``Problem(..., congestion=False)``) turns it off, for comparison with
the model where transfers overlap freely.

The ``graph`` part alone is a *topology* (``--topology FILE`` of ``compile``; JSON, or YAML where
PyYAML is installed). :func:`from_opgraph` turns a TVM :class:`~tvm_partition.ir.graph.OpGraph` and
a cost model into the same problem, so the planners never need TVM.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math

import networkx as nx
import numpy as np

from ..devices import meminfo_bytes
from ..errors import TvmPartitionError

#: Default links where a topology gives none (PCIe-class host<->device, 10 us latency).
DEFAULT_BANDWIDTH_BPS = 1.2e10
DEFAULT_LATENCY_US = 10.0


class ProblemError(TvmPartitionError, ValueError):
    """A placement problem that cannot be solved as written; the message names the thing."""


@dataclasses.dataclass(frozen=True)
class Device:
    name: str
    memory_bytes: float = math.inf

    def to_json(self) -> dict:
        return {"name": self.name, "memory_bytes": None if math.isinf(self.memory_bytes) else self.memory_bytes}


@dataclasses.dataclass
class Result:
    """A placement with its schedule: what ``tvm-partition place`` writes."""

    strategy: str
    makespan_us: float
    placement: dict[str, str]
    schedule: dict[str, tuple[float, float]]
    lower_bound_us: float | None = None
    solve_s: float = 0.0
    meta: dict = dataclasses.field(default_factory=dict)
    splits: dict = dataclasses.field(default_factory=dict)  # node -> split option (joint mode)
    #: (u, v) -> (start, end) of every cross-device transfer that takes time (see schedule.check)
    transfers: dict = dataclasses.field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        if self.lower_bound_us is None:
            return None
        if self.makespan_us <= 0:
            return 0.0
        return max(0.0, (self.makespan_us - self.lower_bound_us) / self.makespan_us)

    def to_json(self) -> dict:
        return {
            "strategy": self.strategy, "makespan_us": self.makespan_us, "lower_bound_us": self.lower_bound_us,
            "gap": self.gap, "solve_s": round(self.solve_s, 4), "placement": dict(self.placement),
            "schedule": {k: [s, e] for k, (s, e) in self.schedule.items()},
            "transfers": {f"{u}->{v}": [s, e] for (u, v), (s, e) in self.transfers.items()}, "meta": self.meta,
        } | ({"splits": {k: {"devices": list(o["devices"]), "ratios": list(o["ratios"])}
                          for k, o in self.splits.items()}} if self.splits else {})


def _num(x, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ProblemError(f"{what} must be a number, got {x!r}") from None
    if math.isnan(v) or v < 0:
        raise ProblemError(f"{what} must be a non-negative number, got {x!r}")
    return v


class Problem:
    """A validated placement problem.

    ``graph``: DAG whose nodes carry ``time_us`` ({device: us}) and ``mem_bytes``, edges ``bytes``.
    ``devices``: :class:`Device` list. ``bandwidth`` / ``latency``: the direct links as given.
    ``congestion``: transfers out of one device, and into one device, are serialised (MOIRAI
    Eq. 8); False lets them overlap (the model before congestion, for comparison).
    """

    def __init__(self, graph: nx.DiGraph, devices: list[Device], bandwidth: dict | None = None,
                 latency: dict | None = None, congestion: bool = True):
        self.graph = graph
        self.congestion = bool(congestion)
        self.devices = list(devices)
        self.bandwidth = {a: dict(b) for a, b in (bandwidth or {}).items()}
        self.latency = {a: dict(b) for a, b in (latency or {}).items()}
        self.validate()
        self._paths = self._all_pairs()
        self._topo = list(nx.topological_sort(self.graph))

    # ------------------------------------------------------------------ accessors
    @property
    def device_names(self) -> list[str]:
        return [d.name for d in self.devices]

    def capacity(self, device: str) -> float:
        return next(d.memory_bytes for d in self.devices if d.name == device)

    def time(self, node, device: str) -> float | None:
        """Time of ``node`` on ``device`` in us, or None where it cannot run there."""
        return self.graph.nodes[node]["time_us"].get(device)

    def allowed(self, node) -> list[str]:
        t = self.graph.nodes[node]["time_us"]
        return [d for d in self.device_names if d in t]

    def splits(self, node) -> list[dict]:
        """Split options of ``node``: ``{"devices", "ratios", "time_us"}``; the output is on devices[0]."""
        return self.graph.nodes[node].get("splits") or []

    def busy(self, node, device: str, split: dict | None = None) -> tuple[list[str], float]:
        """Devices ``node`` occupies and for how long, run whole on ``device`` or as ``split``."""
        if split is not None:
            return list(split["devices"]), split["time_us"]
        return [device], self.time(node, device)

    def mem(self, node) -> float:
        return self.graph.nodes[node].get("mem_bytes", 0.0)

    def edge_bytes(self, u, v) -> float:
        return self.graph.edges[u, v].get("bytes", 0.0)

    def topo_order(self) -> list:
        return list(self._topo)

    def comm_time(self, nbytes: float, src: str, dst: str) -> float:
        """Microseconds: ``latency_us + bytes / bandwidth_Bps`` (seconds, so times 1e6) on the link or
        best path (inf where none connects them)."""
        if src == dst:
            return 0.0
        bw, lat = self._paths.get((src, dst), (0.0, 0.0))
        if bw <= 0:
            return math.inf
        return lat + nbytes / bw * 1e6

    def edge_time(self, u, v, src: str, dst: str) -> float:
        return self.comm_time(self.edge_bytes(u, v), src, dst)

    # ------------------------------------------------------------------ links
    def _all_pairs(self) -> dict:
        """(bandwidth, latency) for every ordered device pair: direct links as given, other pairs
        the widest path (bottleneck bandwidth, MOIRAI Sec. III-C), ties broken by least latency."""
        names = self.device_names
        links = {(a, b): (bw, self.latency.get(a, {}).get(b, 0.0))
                 for a, row in self.bandwidth.items() for b, bw in row.items() if bw > 0 and a != b}
        out = {}
        for a in names:
            for b in names:
                if a == b:
                    continue
                if (a, b) in links:
                    out[a, b] = links[a, b]
                    continue
                best = _widest(names, links, a, b)
                if best > 0:
                    out[a, b] = (best, _least_latency(names, links, a, b, best))
        return out

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        names = self.device_names
        if not names:
            raise ProblemError("the problem has no devices: give graph.devices, e.g. [{\"name\": \"gpu0\"}]")
        if len(set(names)) != len(names):
            raise ProblemError(f"a device is listed twice: {names}")
        for table, what in ((self.bandwidth, "bandwidth_Bps"), (self.latency, "latency_us")):
            for a, row in table.items():
                if a not in names or not isinstance(row, dict):
                    raise ProblemError(f"{what} names unknown device {a!r} (devices: {names})")
                for b, v in row.items():
                    if b not in names:
                        raise ProblemError(f"{what}[{a!r}] names unknown device {b!r} (devices: {names})")
                    row[b] = _num(v, f"{what}[{a!r}][{b!r}]")
        g = self.graph
        if not nx.is_directed_acyclic_graph(g):
            cycle = nx.find_cycle(g)
            raise ProblemError(f"the task graph has a cycle: {' -> '.join(str(u) for u, _ in cycle)} -> {cycle[0][0]}")
        for v, data in g.nodes(data=True):
            t = data.get("time_us")
            if not isinstance(t, dict) or not t:
                raise ProblemError(f"node {v!r} has no time_us {{device: us}}: it fits on no device")
            for d, x in t.items():
                if d not in names:
                    raise ProblemError(f"node {v!r}: time_us names unknown device {d!r} (devices: {names})")
                t[d] = _num(x, f"node {v!r} time_us[{d!r}]")
            data["mem_bytes"] = _num(data.get("mem_bytes", 0.0), f"node {v!r} mem_bytes")
            data["splits"] = [self._split_option(v, o) for o in data.get("splits") or []]
            if not data["splits"]:
                del data["splits"]
            fits = [d for d in t if data["mem_bytes"] <= self.capacity(d)]
            if not fits:
                raise ProblemError(f"node {v!r} needs {data['mem_bytes']:.4g} bytes, more than the memory of "
                                   f"every device it can run on ({sorted(t)})")
        for u, v, data in g.edges(data=True):
            data["bytes"] = _num(data.get("bytes", 0.0), f"edge {u!r}->{v!r} bytes")
        total = sum(g.nodes[v]["mem_bytes"] for v in g)
        cap = sum(d.memory_bytes for d in self.devices)
        if total > cap:
            raise ProblemError(f"infeasible memory: the nodes need {total:.4g} bytes, all devices together "
                               f"hold {cap:.4g}")

    def _split_option(self, v, o) -> dict:
        where = f"node {v!r} split {o!r}"
        if not isinstance(o, dict) or not {"devices", "ratios", "time_us"} <= set(o):
            raise ProblemError(f"{where}: needs devices, ratios and time_us")
        devs, ratios = [str(d) for d in o["devices"]], [_num(r, f"{where} ratio") for r in o["ratios"]]
        if len(devs) < 2 or len(set(devs)) != len(devs) or len(ratios) != len(devs):
            raise ProblemError(f"{where}: needs two or more distinct devices and one ratio each")
        bad = [d for d in devs if d not in self.graph.nodes[v]["time_us"]]
        if bad:
            raise ProblemError(f"{where}: device {bad[0]!r} is not one the node can run on")
        if abs(sum(ratios) - 1) > 1e-6:
            raise ProblemError(f"{where}: ratios sum to {sum(ratios):.6g}, not 1")
        return {"devices": tuple(devs), "ratios": tuple(ratios), "time_us": _num(o["time_us"], f"{where} time_us")}

    # ------------------------------------------------------------------ JSON
    def topology_json(self) -> dict:
        return {"devices": [d.to_json() for d in self.devices], "bandwidth_Bps": self.bandwidth,
                "latency_us": self.latency} | ({} if self.congestion else {"congestion": False})

    def to_json(self) -> dict:
        g = self.graph.copy()
        g.graph = self.topology_json()
        return nx.node_link_data(g, edges="links")

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")

    @staticmethod
    def from_json(d: dict) -> "Problem":
        if not isinstance(d, dict) or "nodes" not in d:
            raise ProblemError("a problem must be a node-link JSON object with 'graph', 'nodes' and 'links'")
        devices, bw, lat = parse_topology(d.get("graph") or {})
        ids = set()
        for n in d["nodes"]:
            if not isinstance(n, dict) or "id" not in n:
                raise ProblemError(f"node entry {n!r} has no 'id'")
            ids.add(n["id"])
        links = d.get("links", d.get("edges", []))
        for e in links:
            for end in ("source", "target"):
                if not isinstance(e, dict) or e.get(end) not in ids:
                    raise ProblemError(f"link {e!r}: {end} is not a node of the problem")
        try:
            g = nx.node_link_graph({"directed": True, "multigraph": False, "graph": {}, "nodes": d["nodes"],
                                    "links": links}, edges="links")
        except (KeyError, TypeError, nx.NetworkXError) as e:
            raise ProblemError(f"bad node-link data: {e}") from None
        congestion = (d.get("graph") or {}).get("congestion", True)
        if not isinstance(congestion, bool):
            raise ProblemError(f"graph.congestion must be true or false, got {congestion!r}")
        return Problem(nx.DiGraph(g), devices, bw, lat, congestion)

    @staticmethod
    def load(path) -> "Problem":
        return Problem.from_json(_read_structured(path, "problem"))


def _read_structured(path, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ProblemError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if str(path).endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ProblemError(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or write JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ProblemError(f"{what} {path} is not valid YAML: {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ProblemError(f"{what} {path} is not valid JSON: {e}") from None


def parse_topology(d: dict) -> tuple[list[Device], dict, dict]:
    """``(devices, bandwidth, latency)`` from the ``graph`` part of a problem (a topology)."""
    if not isinstance(d, dict):
        raise ProblemError("a topology must be an object with 'devices', 'bandwidth_Bps', 'latency_us'")
    devices = []
    for x in d.get("devices") or []:
        if isinstance(x, str):
            x = {"name": x}
        if not isinstance(x, dict) or "name" not in x:
            raise ProblemError(f"device entry {x!r} needs a 'name'")
        cap = x.get("memory_bytes")
        devices.append(Device(str(x["name"]), math.inf if cap is None else _num(cap, f"device {x['name']!r} memory_bytes")))
    for key in ("bandwidth_Bps", "latency_us"):
        if not isinstance(d.get(key) or {}, dict):
            raise ProblemError(f"topology {key} must be an object {{src: {{dst: value}}}}")
    return devices, dict(d.get("bandwidth_Bps") or {}), dict(d.get("latency_us") or {})


def load_topology(path) -> tuple[list[Device], dict, dict]:
    return parse_topology(_read_structured(path, "topology"))


def _widest(names, links, a, b) -> float:
    """Bottleneck bandwidth of the widest a->b path (modified Dijkstra), 0 if none."""
    best = {a: math.inf}
    heap = [(-math.inf, a)]
    while heap:
        negw, u = heapq.heappop(heap)
        w = -negw
        if u == b:
            return w
        if w < best.get(u, 0):
            continue
        for v in names:
            bw = links.get((u, v), (0, 0))[0]
            cand = min(w, bw)
            if cand > best.get(v, 0):
                best[v] = cand
                heapq.heappush(heap, (-cand, v))
    return 0.0


def _least_latency(names, links, a, b, min_bw: float) -> float:
    """Least summed latency of an a->b path using only links of at least ``min_bw``."""
    dist = {a: 0.0}
    heap = [(0.0, a)]
    while heap:
        d, u = heapq.heappop(heap)
        if u == b:
            return d
        if d > dist.get(u, math.inf):
            continue
        for v in names:
            bw, lat = links.get((u, v), (0, 0))
            if bw >= min_bw and d + lat < dist.get(v, math.inf):
                dist[v] = d + lat
                heapq.heappush(heap, (d + lat, v))
    return 0.0


# ---------------------------------------------------------------------- from a TVM model
def local_topology(specs) -> tuple[list[Device], dict, dict]:
    """Devices of a ``--devices`` set on this machine: memory from /proc/meminfo (CPUs) and
    nvidia-smi (GPUs) where they answer, default PCIe-class links between every pair."""
    total = meminfo_bytes("MemTotal")
    cpu_mem = math.inf if total is None else float(total)
    gpu_mem = _gpu_memory_bytes()
    devices = []
    for s in specs:
        cap = cpu_mem if s.kind == "cpu" else (gpu_mem[s.index] if s.index < len(gpu_mem) else math.inf)
        devices.append(Device(s.name, cap))
    names = [d.name for d in devices]
    bw = {a: {b: DEFAULT_BANDWIDTH_BPS for b in names if b != a} for a in names}
    lat = {a: {b: DEFAULT_LATENCY_US for b in names if b != a} for a in names}
    return devices, bw, lat


def _gpu_memory_bytes() -> list[float]:
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return [float(x) * 2**20 for x in out.split()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return []


def from_opgraph(opgraph, cost_model, devices: list[Device], bandwidth: dict, latency: dict,
                 cpus=frozenset()) -> Problem:
    """The placement problem of a TVM OpGraph: node times from ``cost_model.op_time`` on every
    device it knows, ``mem_bytes`` = the op's output bytes (activations; weights are copied once
    at load time), edge bytes from the OpGraph. Views get time 0 (they run no kernel), and so do
    the ops a CPU build makes views of (:attr:`OpGraph.views_on_cpu
    <tvm_partition.ir.graph.OpGraph.views_on_cpu>`) on the devices named in ``cpus``: a node's time
    cannot depend on where its producers go, and a producer elsewhere costs the edge's copy."""
    g = nx.DiGraph()
    names = [d.name for d in devices]
    for op_id in opgraph.topo_order():
        op = opgraph.ops[op_id]
        times = {}
        for d in names:
            try:
                free = op.is_view or (d in cpus and op_id in opgraph.views_on_cpu)
                times[d] = 0.0 if free else float(cost_model.op_time(op, d))
            except KeyError:
                continue
        out_bytes = sum(math.prod(s) * np.dtype(str(t)).itemsize for s, t in zip(op.output_shapes, op.output_dtypes))
        g.add_node(op_id, time_us=times, mem_bytes=float(out_bytes), kind=op.kind)
    for u, v, data in opgraph.graph.edges(data=True):
        g.add_edge(u, v, bytes=float(data.get("bytes", 0)))
    return Problem(g, devices, bandwidth, latency)
