"""Coarsening a placement problem before the MILP (MOIRAI Sec. III-B; QuickP Sec. IV).

The base unit is already TVM's fused kernel (an OpGraph node): MOIRAI's point that the runtime's
own fusion must be kept. On top of it:

* **fusion rules** (QuickP Alg. 1): edge ``(i, j)`` is merged when ``p_i <= alpha`` and
  ``outdeg(i) = 1``, or ``p_j <= alpha`` and ``indeg(j) = 1``; ``alpha`` is the 90th percentile
  of the non-zero op times (QuickP Sec. V). An edge where ``outdeg(i) >= 2`` and ``indeg(j) >= 2``
  is never merged (Fig. 3): merging it would remove parallel pairs, and it could close a cycle.
  ``p`` is a node's fastest time over its devices; a merged node takes the sum of its members'
  times on each device both can run on, and holds the sum of their memory.
* **co-location groups** (QuickP Sec. IV-C, Eq. 7): ranks ``r_i = p_i + max_j (r_j + t_ij)``;
  every node with several successors is tied to its critical successor (the max); the weakly
  connected components of those ties are groups whose nodes share one device.
* **parallelizable pairs** (QuickP Def. 1): pairs with no path between them, the only pairs
  whose non-overlap matters; reported before and after (CP-SAT's ``AddNoOverlap`` takes a whole
  device at once, so they are a measure of the search space here, not constraints).
"""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np

from .problem import Problem
from .schedule import priority_order, retime


@dataclasses.dataclass
class Coarsened:
    problem: Problem  # the coarse problem; node ids are representative member ids
    members: dict  # coarse node -> [original nodes, in topological order]
    alpha_us: float
    report: dict

    def expand(self, placement: dict) -> dict:
        return {v: placement[c] for c, vs in self.members.items() for v in vs}

    def project(self, result):
        """A fine-graph result as a coarse warm start: each coarse node on the device where most of
        its members' time ran (among devices it can run on), in the order its members started."""
        from .problem import Result

        placement, first = {}, {}
        for c, vs in self.members.items():
            can = self.problem.allowed(c)
            votes = {d: 0.0 for d in can}
            for v in vs:
                d = result.placement[v]
                if d in votes:
                    votes[d] += result.schedule[v][1] - result.schedule[v][0] + 1e-9
            placement[c] = max(can, key=lambda d: votes[d])
            first[c] = min(result.schedule[v][0] for v in vs)
        order = priority_order(self.problem.graph, first.get)
        sched, makespan, tx = retime(self.problem, placement, order)
        return Result(result.strategy + "-projected", makespan, placement, sched, meta={"order": order}, transfers=tx)


def _fastest(times: dict) -> float:
    return min(times.values())


def coarsen(problem: Problem, percentile: float = 90.0, max_nodes: int | None = None) -> Coarsened:
    """Apply QuickP Alg. 1 until no edge qualifies (or the graph has ``max_nodes`` nodes)."""
    g = problem.graph.copy()
    nonzero = [_fastest(g.nodes[v]["time_us"]) for v in g if _fastest(g.nodes[v]["time_us"]) > 0]
    alpha = float(np.percentile(nonzero, percentile)) if nonzero else 0.0
    pos = {v: i for i, v in enumerate(problem.topo_order())}
    members = {v: [v] for v in g}
    changed = True
    while changed and (max_nodes is None or g.number_of_nodes() > max_nodes):
        changed = False
        for i in sorted(g, key=pos.get):
            if i not in g or g.out_degree(i) == 0:
                continue
            for j in sorted(g.successors(i), key=pos.get):
                if _fusible(g, i, j, alpha):
                    _merge(g, i, j, members)
                    changed = True
                    break
    pairs_before = parallel_pairs(problem.graph)
    coarse = Problem(g, problem.devices, problem.bandwidth, problem.latency,
                  problem.congestion)
    report = {"nodes_before": problem.graph.number_of_nodes(), "nodes_after": g.number_of_nodes(),
              "edges_before": problem.graph.number_of_edges(), "edges_after": g.number_of_edges(),
              "parallel_pairs_before": pairs_before, "parallel_pairs_after": parallel_pairs(g),
              "alpha_us": alpha}
    return Coarsened(coarse, members, alpha, report)


def _fusible(g: nx.DiGraph, i, j, alpha: float) -> bool:
    ti, tj = g.nodes[i]["time_us"], g.nodes[j]["time_us"]
    if not set(ti) & set(tj):
        return False
    return ((_fastest(ti) <= alpha and g.out_degree(i) == 1)
            or (_fastest(tj) <= alpha and g.in_degree(j) == 1))


def _merge(g: nx.DiGraph, i, j, members: dict) -> None:
    """Contract edge (i, j) into i (safe: i has one successor or j one predecessor, so no other
    path i -> j exists and no cycle forms)."""
    ti, tj = g.nodes[i]["time_us"], g.nodes[j]["time_us"]
    g.nodes[i]["time_us"] = {d: ti[d] + tj[d] for d in ti if d in tj}
    g.nodes[i]["mem_bytes"] = g.nodes[i].get("mem_bytes", 0.0) + g.nodes[j].get("mem_bytes", 0.0)
    for u in list(g.predecessors(j)):
        if u != i:
            _add_bytes(g, u, i, g.edges[u, j]["bytes"])
    for w in list(g.successors(j)):
        _add_bytes(g, i, w, g.edges[j, w]["bytes"])
    g.remove_node(j)
    members[i] = members[i] + members.pop(j)


def _add_bytes(g: nx.DiGraph, u, v, nbytes: float) -> None:
    if g.has_edge(u, v):
        g.edges[u, v]["bytes"] += nbytes
    else:
        g.add_edge(u, v, bytes=nbytes)


def parallel_pairs(g: nx.DiGraph) -> int:
    """Node pairs with no path either way (QuickP Def. 1); counted with reachability bitsets."""
    order = list(nx.topological_sort(g))
    idx = {v: k for k, v in enumerate(order)}
    reach = {}
    for v in reversed(order):
        bits = 1 << idx[v]
        for w in g.successors(v):
            bits |= reach[w]
        reach[v] = bits
    n = len(order)
    related = sum(bin(b).count("1") - 1 for b in reach.values())  # ordered pairs (u, v) with u ~> v
    return n * (n - 1) // 2 - related


def colocation_groups(problem: Problem) -> list[list]:
    """QuickP Eq. 7: tie each node with several successors to its critical successor; the weakly
    connected components with more than one node are the co-location groups."""
    g = problem.graph
    names = problem.device_names
    pairs = [(a, b) for a in names for b in names if a != b]
    rank: dict = {}
    ties = nx.Graph()
    for i in reversed(problem.topo_order()):
        best, arg = 0.0, None
        for j in g.successors(i):
            finite = [c for a, b in pairs if (c := problem.edge_time(i, j, a, b)) < float("inf")]
            c = min(finite) if finite else 0.0
            if rank[j] + c > best or arg is None:
                best, arg = rank[j] + c, j
        rank[i] = _fastest(g.nodes[i]["time_us"]) + best
        if g.out_degree(i) > 1:
            ties.add_edge(i, arg)
    groups = []
    for comp in nx.connected_components(ties):
        common = set.intersection(*(set(g.nodes[v]["time_us"]) for v in comp))
        if len(comp) > 1 and common:
            groups.append(sorted(comp, key=problem.topo_order().index))
    return groups
