"""Dominator decomposition for graphs too large for one MILP (SortingHat, ICS'25, Sec. 3.1-3.3).

The partition points are the dominators of the output: nodes every input-to-output path passes
through, found with ``nx.immediate_dominators`` from a super-source to a super-sink (Sec. 3.1).
Cutting the topological order at them gives segments whose only inputs from earlier segments
come from the previous dominator. Consecutive segments are joined into submodels of up to
``max_nodes`` nodes (SortingHat's nDom; a segment larger than that is one submodel), and the
submodels are solved one after another with the MILP, each starting from the schedule of the
ones before: device finish times, memory already used, and the fixed producers of its inputs
(Sec. 3.3, the "placeholder" node). The merged schedule is re-timed on the whole graph, and the
best heuristic on the whole graph is returned instead if it is better.
"""

from __future__ import annotations

import dataclasses
import time

import networkx as nx

from .heuristics import best_heuristic
from .milp import setup_seconds, solve_milp
from .problem import Problem, ProblemError, Result
from .schedule import Context, lower_bound, retime, start_order

_SOURCE, _SINK = ("__source__",), ("__sink__",)


def dominator_cuts(graph: nx.DiGraph) -> list:
    """Dominators of the output in topological order (every source-to-sink path crosses each);
    none in a graph of no ops (a model of a ``cumsum`` alone: sorts and scans are no ops of the
    graph, :mod:`tvm_partition.ir.graph`)."""
    if not graph:
        return []
    g = nx.DiGraph(graph.edges)
    g.add_nodes_from(graph)
    g.add_edges_from((_SOURCE, v) for v in graph if graph.in_degree(v) == 0)
    g.add_edges_from((v, _SINK) for v in graph if graph.out_degree(v) == 0)
    idom = nx.immediate_dominators(g, _SOURCE)
    chain = []
    v = idom[_SINK]
    while v != _SOURCE:
        chain.append(v)
        v = idom[v]
    return chain[::-1]


def cut_at_dominators(graph: nx.DiGraph, order: list) -> list[list]:
    """``order`` (a topological order of ``graph``) cut after each dominator of the output."""
    cuts = set(dominator_cuts(graph))
    out, cur = [], []
    for v in order:
        cur.append(v)
        if v in cuts:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def segments(problem: Problem) -> list[list]:
    """The problem's topological order cut after each dominator of the output."""
    return cut_at_dominators(problem.graph, problem.topo_order())


def submodels(problem: Problem, max_nodes: int) -> list[list]:
    groups, cur = [], []
    for seg in segments(problem):
        if cur and len(cur) + len(seg) > max_nodes:
            groups.append(cur)
            cur = []
        cur = cur + seg
    if cur:
        groups.append(cur)
    return groups


def solve_dominators(problem: Problem, time_limit: float = 30.0, max_nodes: int = 150,
                     warm: Result | None = None, warm_seconds_per_node: float = 0.0) -> Result:
    t0 = time.perf_counter()
    if warm is None:
        warm = best_heuristic(problem)
        per_node = (time.perf_counter() - t0) / max(1, problem.graph.number_of_nodes())
    else:
        per_node = warm_seconds_per_node
    parts = submodels(problem, max_nodes)
    n = problem.graph.number_of_nodes()
    placement, end, sched, tx = {}, {}, {}, {}
    ctx = Context()
    heuristic_s, heuristic_nodes = 0.0, 0  # what the heuristics really took on submodels so far
    for k, nodes in enumerate(parts):
        t_sub = time.perf_counter()
        rest = n - len(placement)
        # per node, a submodel's heuristics (with its external producers) and its set-up cost more
        # than the whole graph's: 6,000 synthetic nodes, 1.1 s whole, 1.6 s over 41 submodels
        per = max(per_node, heuristic_s / heuristic_nodes) if heuristic_nodes else per_node
        # keep the time the heuristics need for the submodels after this one, should the MILPs
        # use up the rest: without it a 1.3 s limit took 2.2 s on 2,012 published operators
        left = time_limit - (t_sub - t0) - per * (rest - len(nodes))
        if left < per * len(nodes):  # not even the heuristics end in time: the warm start it is
            return dataclasses.replace(warm, strategy="dominators", solve_s=time.perf_counter() - t0,
                                       meta={"returned_warm_start": True, "out_of_time": True})
        budget = left * len(nodes) / max(1, rest)
        sub = Problem(problem.graph.subgraph(nodes).copy(), problem.devices, problem.bandwidth, problem.latency,
                      problem.congestion)
        ctx.external = {v: [(end[u], placement[u], problem.edge_bytes(u, v))
                            for u in problem.graph.predecessors(v) if u in placement] for v in nodes}
        try:
            # out of time: the rest of the submodels take the heuristics' schedule
            worth = budget >= max(0.2, 2 * (setup_seconds(sub) + per_node * len(nodes)))  # solving, not set-up
            res = solve_milp(sub, budget, ctx, strategy="dominators") if worth else best_heuristic(sub, ctx)
        except ProblemError as e:  # memory left by earlier submodels too small: keep the warm start
            return dataclasses.replace(warm, strategy="dominators", solve_s=time.perf_counter() - t0,
                                       meta={"returned_warm_start": True, "submodel_failed": str(e)})
        if not worth:
            heuristic_s += time.perf_counter() - t_sub
            heuristic_nodes += len(nodes)
        tx.update(res.transfers)
        for v in nodes:
            placement[v] = res.placement[v]
            sched[v] = res.schedule[v]
            end[v] = sched[v][1]
            d = placement[v]
            ctx.mem_used[d] = ctx.mem_used.get(d, 0.0) + problem.mem(v)
            if sched[v][1] > sched[v][0]:
                ctx.release[d] = max(ctx.release.get(d, 0.0), sched[v][1])
    order = start_order(problem, {v: s for v, (s, _) in sched.items()}, {e: s for e, (s, _) in tx.items()})
    full, makespan, tx = retime(problem, placement, order)
    meta = {"submodels": len(parts), "segments": len(segments(problem)), "max_nodes": max_nodes,
            "warm_start": warm.strategy, "warm_start_makespan_us": warm.makespan_us}
    if warm.makespan_us < makespan:
        meta["returned_warm_start"] = True
        placement, full, makespan, tx = warm.placement, warm.schedule, warm.makespan_us, warm.transfers
    return Result("dominators", makespan, dict(placement), full, lower_bound(problem),
                  time.perf_counter() - t0, meta, transfers=dict(tx))
