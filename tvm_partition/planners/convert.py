"""Placement problems from other tools' published profiled graphs.

:func:`from_tarnawski` reads the input format of Tarnawski et al., "Efficient Algorithms for
Device Placement of DNN Graph Operators" (NeurIPS 2020; github.com/msr-fiddle/dnn-partitioning,
``latency-inputs/``): nodes with ``cpuLatency``, ``fpgaLatency`` (an accelerator; profiled on a
GPU for the layer graphs), ``supportedOnFpga`` and ``size`` (accelerator memory); edges with
``cost`` (the time to move the tensor between an accelerator and CPU memory); ``maxFPGAs``
accelerators of ``maxSizePerFPGA`` bytes.

The mapping: ``maxFPGAs`` accelerators ``acc0..`` (memory ``maxSizePerFPGA``) and one CPU device
``cpu`` (unbounded memory; the source models ``maxCPUs`` cores, we model one CPU device); every
link takes ``cost`` (bytes = cost, bandwidth 1e6 B/s = 1 byte per us, latency 0), also between two accelerators, and
per edge (the source charges a node's output once per device: ours is at least as costly).
``colorClass`` co-location is not kept. Times stay in the source's unit.
"""

from __future__ import annotations

import networkx as nx

from .problem import Device, Problem, ProblemError


def from_tarnawski(d: dict, accelerators: int | None = None) -> Problem:
    try:
        k = int(accelerators if accelerators is not None else d["maxFPGAs"])
        cap = float(d["maxSizePerFPGA"])
        nodes, edges = d["nodes"], d["edges"]
    except (KeyError, TypeError, ValueError) as e:
        raise ProblemError(f"not a Tarnawski et al. input (maxFPGAs, maxSizePerFPGA, nodes, edges): {e}") from None
    accs = [f"acc{i}" for i in range(k)]
    g = nx.DiGraph()
    for n in nodes:
        times = {"cpu": float(n["cpuLatency"])}
        if n.get("supportedOnFpga"):
            times.update({a: float(n["fpgaLatency"]) for a in accs})
        g.add_node(str(n["id"]), time_us=times, mem_bytes=float(n.get("size", 0.0)), name=n.get("name", ""))
    for e in edges:
        u, v = str(e["sourceId"]), str(e["destId"])
        if g.has_edge(u, v):
            g.edges[u, v]["bytes"] = max(g.edges[u, v]["bytes"], float(e["cost"]))
        else:
            g.add_edge(u, v, bytes=float(e["cost"]))
    names = ["cpu"] + accs
    bw = {a: {b: 1e6 for b in names if b != a} for a in names}  # 1 byte per us: a transfer takes ``cost`` us
    devices = [Device("cpu")] + [Device(a, cap) for a in accs]
    return Problem(g, devices, bw, {})
