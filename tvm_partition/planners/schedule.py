"""Schedules of a placement problem: device timelines, re-timing a placement, the lower bound,
and the independent checker every strategy's result must pass.

A schedule maps each node to ``(start, end)`` in us. It is *feasible* when every node runs on one
device that can run it, ``end - start`` equals its time there, no two nodes with non-zero time
overlap on one device, every consumer starts no earlier than each producer's end plus the transfer
time between their devices, and every device's memory holds the nodes placed on it.
"""

from __future__ import annotations

import bisect
import dataclasses
import math

from .problem import Problem, ProblemError, Result

#: Relative slack the checker allows for float rounding.
_EPS = 1e-6


@dataclasses.dataclass
class Context:
    """State carried into a sub-problem (SortingHat Sec. 3.3): devices busy until ``release``,
    ``external`` inputs ``{node: [(ready_us, device, bytes)]}`` from nodes already scheduled, and
    memory already used on each device."""

    release: dict = dataclasses.field(default_factory=dict)
    external: dict = dataclasses.field(default_factory=dict)
    mem_used: dict = dataclasses.field(default_factory=dict)


class Timeline:
    """Busy intervals of one device; ``insertion`` lets a node fill an earlier idle gap (HEFT)."""

    def __init__(self, free_from: float = 0.0, insertion: bool = True):
        self.busy: list[tuple[float, float]] = [(-math.inf, free_from)] if free_from > 0 else []
        self.insertion = insertion

    @property
    def free(self) -> float:
        return self.busy[-1][1] if self.busy else 0.0

    def earliest(self, ready: float, dur: float) -> float:
        if dur <= 0:
            return ready
        if not self.insertion:
            return max(ready, self.free)
        t = ready
        # intervals do not overlap, so they are sorted by end too: skip those ending before ready
        first = max(0, bisect.bisect_right(self.busy, (ready, math.inf)) - 1)
        for s, e in self.busy[first:]:
            if t + dur <= s:
                return t
            t = max(t, e)
        return t

    def reserve(self, start: float, end: float) -> None:
        if end > start:
            bisect.insort(self.busy, (start, end))


def data_ready(problem: Problem, v, device: str, placement: dict, end: dict, ctx: Context | None = None) -> float:
    """When all inputs of ``v`` can be on ``device``: producer ends plus transfers."""
    t = 0.0
    for u in problem.graph.predecessors(v):
        t = max(t, end[u] + problem.edge_time(u, v, placement[u], device))
    if ctx is not None:
        for ready, dev, nbytes in ctx.external.get(v, ()):
            t = max(t, ready + problem.comm_time(nbytes, dev, device))
    return t


def timelines(problem: Problem, ctx: Context | None = None, insertion: bool = True) -> dict[str, Timeline]:
    rel = ctx.release if ctx else {}
    return {d: Timeline(rel.get(d, 0.0), insertion) for d in problem.device_names}


def priority_order(graph, key) -> list:
    """A topological order that takes the ready node of least ``key(node)`` first."""
    import heapq

    waiting = {v: graph.in_degree(v) for v in graph}
    heap = [(key(v), i, v) for i, v in enumerate(graph) if waiting[v] == 0]
    heapq.heapify(heap)
    ids = {v: i for i, v in enumerate(graph)}
    out = []
    while heap:
        _, _, v = heapq.heappop(heap)
        out.append(v)
        for w in graph.successors(v):
            waiting[w] -= 1
            if waiting[w] == 0:
                heapq.heappush(heap, (key(w), ids[w], w))
    return out


def retime(problem: Problem, placement: dict, order: list, ctx: Context | None = None,
           splits: dict | None = None) -> tuple[dict, float]:
    """Earliest schedule of ``placement`` (and ``splits``: node -> split option) where each device
    runs its nodes in ``order`` (a topological order). Re-timing a solver's placement with exact
    times in its start order never ends later than the solver's own (rounded) schedule."""
    lines = timelines(problem, ctx, insertion=False)
    sched: dict = {}
    end: dict = {}
    for v in order:
        d = placement[v]
        devs, dur = problem.busy(v, d, (splits or {}).get(v))
        if dur is None:
            raise ProblemError(f"node {v!r} placed on {d!r}, where it cannot run")
        s = data_ready(problem, v, d, placement, end, ctx)
        if dur > 0:
            s = max([s] + [lines[x].free for x in devs])
        for x in devs:
            lines[x].reserve(s, s + dur)
        sched[v] = (s, s + dur)
        end[v] = s + dur
    return sched, max((e for _, e in sched.values()), default=0.0)


def result_from(problem: Problem, strategy: str, placement: dict, order: list, solve_s: float, **meta) -> Result:
    sched, makespan = retime(problem, placement, order)
    return Result(strategy, makespan, dict(placement), sched, lower_bound(problem), solve_s, dict(meta))


def lower_bound(problem: Problem) -> float:
    """max(critical path at each node's fastest time with free transfers, total fastest work / devices)."""
    fastest = {v: min(problem.graph.nodes[v]["time_us"].values()) for v in problem.graph}
    longest: dict = {}
    for v in problem.topo_order():
        longest[v] = fastest[v] + max((longest[u] for u in problem.graph.predecessors(v)), default=0.0)
    cp = max(longest.values(), default=0.0)
    return max(cp, sum(fastest.values()) / len(problem.devices))


def check(problem: Problem, placement: dict, schedule: dict, makespan: float | None = None,
          splits: dict | None = None) -> list[str]:
    """Every way ``schedule`` breaks the problem (empty list: feasible). Independent of the solvers.
    A node in ``splits`` must use one of its split options, with ``placement`` its first device."""
    errs: list[str] = []
    g = problem.graph
    missing = [v for v in g if v not in placement or v not in schedule]
    if missing:
        return [f"nodes without a device or a time: {missing[:5]}"]
    tol = _EPS * max([1.0] + [abs(e) for _, e in schedule.values()])
    per_dev: dict[str, list] = {}
    used: dict[str, float] = {}
    for v in g:
        d = placement[v]
        t, devs = problem.time(v, d), [d]
        s, e = schedule[v]
        opt = (splits or {}).get(v)
        if opt is not None:
            opt = next((o for o in problem.splits(v) if tuple(o["devices"]) == tuple(opt["devices"])
                        and tuple(o["ratios"]) == tuple(opt["ratios"])), None)
            if opt is None or opt["devices"][0] != d:
                errs.append(f"{v!r}: split {splits[v]} is not one of its options on {d!r}")
                continue
            t, devs = opt["time_us"], list(opt["devices"])
        if t is None:
            errs.append(f"{v!r} on {d!r}, which cannot run it")
            continue
        if s < -tol or abs((e - s) - t) > tol:
            errs.append(f"{v!r} runs [{s}, {e}] but takes {t} on {devs}")
        if t > 0:
            for x in devs:
                per_dev.setdefault(x, []).append((s, e, v))
        used[d] = used.get(d, 0.0) + problem.mem(v)
    for d, ivs in per_dev.items():
        ivs.sort()
        for (s1, e1, a), (s2, e2, b) in zip(ivs, ivs[1:]):
            if s2 < e1 - tol:
                errs.append(f"{a!r} and {b!r} overlap on {d!r}")
    for u, v in g.edges:
        need = schedule[u][1] + problem.edge_time(u, v, placement[u], placement[v])
        if schedule[v][0] < need - tol:
            errs.append(f"{v!r} starts at {schedule[v][0]} before its input from {u!r} arrives at {need}")
    for d, m in used.items():
        if m > problem.capacity(d) * (1 + _EPS):
            errs.append(f"{d!r} holds {m:.4g} bytes, over its {problem.capacity(d):.4g}")
    last = max((e for _, e in schedule.values()), default=0.0)
    if makespan is not None and abs(makespan - last) > tol:
        errs.append(f"makespan {makespan} is not the last end {last}")
    return errs
