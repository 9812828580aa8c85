"""Synthetic placement problems shaped like DNN graphs, for tests and benchmarks.

:func:`dnn_like` builds a chain of blocks; a block is a single op, a residual pair (two ops and
a skip edge into an add) or an inception-like fork of 2-4 parallel branches joined by a concat,
so the graph has dominators between blocks and parallel work inside them. Devices are
heterogeneous: device ``k`` is ``speed[k]`` times faster than the slowest on compute ops, and
every pair of devices shares one link (default 12 GB/s, 10 us).
"""

from __future__ import annotations

import random

import networkx as nx

from .problem import Device, Problem


def random_dag(n: int, devices: int, seed: int = 0, p_edge: float = 0.3, integral: bool = True) -> Problem:
    """An Erdos-Renyi-like DAG (edges only forward); integer times where ``integral``: tiny,
    dense problems for brute-force comparisons."""
    r = random.Random(seed)
    names = [f"d{i}" for i in range(devices)]
    g = nx.DiGraph()
    for i in range(n):
        times = {d: float(r.randint(1, 20)) if integral else r.uniform(1, 20) for d in names}
        g.add_node(f"n{i}", time_us=times, mem_bytes=float(r.randint(0, 100)))
    for i in range(n):
        for j in range(i + 1, n):
            if r.random() < p_edge:
                g.add_edge(f"n{i}", f"n{j}", bytes=float(r.randint(0, 5) * 10))
    bw = {a: {b: 1e7 for b in names if b != a} for a in names}  # 10 bytes per us: small integral times
    lat = {a: {b: 2.0 for b in names if b != a} for a in names}
    cap = 50.0 * n / devices * 2.0
    return Problem(g, [Device(d, cap) for d in names], bw, lat)


def dnn_like(n: int, devices: int, seed: int = 0, bandwidth: float = 1.2e10, latency: float = 10.0,
             memory_slack: float = 2.0) -> Problem:
    """About ``n`` nodes of chained blocks (see the module docstring) on ``devices`` devices."""
    r = random.Random(seed)
    names = [f"dev{i}" for i in range(devices)]
    speed = [1.0] + [r.uniform(1.0, 4.0) for _ in range(devices - 1)]
    g = nx.DiGraph()
    count = 0

    def node(prev: list) -> str:
        nonlocal count
        v = f"op{count}"
        count += 1
        base = r.lognormvariate(3.0, 1.2)  # us on the slowest device
        heavy = r.random() < 0.6
        out = float(r.choice([16, 64, 256, 1024]) * 1024)
        g.add_node(v, time_us={d: round(base / (speed[k] if heavy else 1.0), 3) for k, d in enumerate(names)},
                   mem_bytes=out)
        for u in prev:
            g.add_edge(u, v, bytes=g.nodes[u]["mem_bytes"])
        return v

    last = [node([])]
    while count < n:
        kind = r.random()
        if kind < 0.5:
            last = [node(last)]
        elif kind < 0.75:
            a = node(last)
            b = node([a])
            last = [node([b] + last)]
        else:
            branches = []
            for _ in range(r.randint(2, 4)):
                tip = [node(last)]
                for _ in range(r.randint(0, 2)):
                    tip = [node(tip)]
                branches += tip
            last = [node(branches)]
    total = sum(g.nodes[v]["mem_bytes"] for v in g)
    cap = memory_slack * total / devices
    bw = {a: {b: bandwidth for b in names if b != a} for a in names}
    lat = {a: {b: latency for b in names if b != a} for a in names}
    return Problem(g, [Device(d, cap) for d in names], bw, lat)
