"""Schedules of a placement problem: device timelines, re-timing a placement, the lower bound,
and the independent checker every strategy's result must pass.

A schedule maps each node to ``(start, end)`` in us. It is *feasible* when every node runs on one
device that can run it, ``end - start`` equals its time there, no two nodes with non-zero time
overlap on one device, every consumer starts no earlier than each producer's end plus the transfer
time between their devices, and every device's memory holds the nodes placed on it.

With congestion (MOIRAI Eq. 8, term (4g) of its model (4); on unless the problem turns it off)
every cross-device transfer that takes time is an interval of its own (a result's ``transfers``,
``{(u, v): (start, end)}``) between its producer's end and its consumer's start, and the transfers
leaving one device, and those arriving at one device, run one at a time. :func:`simulate` times
a placement that way; every strategy's result is re-timed by it, so every result is feasible.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from typing import NamedTuple

from .problem import Problem, ProblemError

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


@dataclasses.dataclass(frozen=True)
class Transfer:
    """An event in a re-timing order: send the output of ``u`` to ``v`` (a cross-device edge)."""

    u: object
    v: object


class Timed(NamedTuple):
    schedule: dict
    makespan: float
    transfers: dict


class Durations:
    """Durations in us, exactly as the problem gives them (the MILP subclasses it with ticks)."""

    def __init__(self, problem: Problem):
        self.problem = problem

    def busy(self, v, device: str, split: dict | None) -> tuple[list[str], float | None]:
        return self.problem.busy(v, device, split)

    def edge(self, u, v, src: str, dst: str) -> float:
        return self.problem.edge_time(u, v, src, dst)

    def external(self, ready: float, nbytes: float, src: str, dst: str) -> float:
        return ready + self.problem.comm_time(nbytes, src, dst)

    def release(self, device: str, ctx: Context | None) -> float:
        return (ctx.release if ctx else {}).get(device, 0.0)


def simulate(problem: Problem, placement: dict, order: list, ctx: Context | None = None, splits: dict | None = None,
             units=None) -> Timed:
    """Earliest schedule where each device runs its nodes in ``order`` and, with congestion
    (MOIRAI Eq. 8), each device sends and receives its transfers one at a time, in order.

    ``order`` is a topological order of the nodes; it may also hold :class:`Transfer` events, which
    fix where a transfer goes in its links' order; a transfer not listed goes right before its
    consumer (in the order of its producers in ``order``). A transfer of ``u -> v`` starts no
    earlier than ``u`` ends and ``v`` starts no earlier than it ends; transfers from a
    :class:`Context`'s earlier sub-problems are not serialised. ``units``: the
    :class:`Durations` (default: exact us; the MILP passes its ticks)."""
    units = units or Durations(problem)
    lines = {d: Timeline(units.release(d, ctx), insertion=False) for d in problem.device_names}
    out_free: dict = {}
    in_free: dict = {}
    sched, tx = {}, {}
    pos = {v: i for i, v in enumerate(x for x in order if not isinstance(x, Transfer))}

    def send(u, v):
        a, b = placement[u], placement[v]
        c = units.edge(u, v, a, b)
        t = sched[u][1]
        if problem.congestion and c > 0:
            t = max(t, out_free.get(a, 0.0), in_free.get(b, 0.0))
            out_free[a] = in_free[b] = t + c
        tx[u, v] = (t, t + c)

    for x in order:
        if isinstance(x, Transfer):
            if x.u not in sched:
                raise ProblemError(f"the order lists the transfer {x.u!r}->{x.v!r} before {x.u!r} runs")
            if placement[x.u] != placement[x.v] and (x.u, x.v) not in tx:
                send(x.u, x.v)
            continue
        v, d = x, placement[x]
        devs, dur = units.busy(v, d, (splits or {}).get(v))
        if dur is None:
            raise ProblemError(f"node {v!r} placed on {d!r}, where it cannot run")
        preds = sorted(problem.graph.predecessors(v), key=pos.get)
        s = 0.0
        for u in preds:
            if placement[u] != d and (u, v) not in tx:
                send(u, v)
            s = max(s, tx[u, v][1] if placement[u] != d else sched[u][1])
        for ready, dev, nb in (ctx.external.get(v, ()) if ctx else ()):
            s = max(s, units.external(ready, nb, dev, d))
        if dur > 0:
            s = max([s] + [lines[y].free for y in devs])
        for y in devs:
            lines[y].reserve(s, s + dur)
        sched[v] = (s, s + dur)
    tx = {e: t for e, t in tx.items() if t[1] > t[0]}
    return Timed(sched, max((e for _, e in sched.values()), default=0.0), tx)


def start_order(problem: Problem, starts: dict, transfer_starts: dict | None = None) -> list:
    """Nodes by ``starts`` and :class:`Transfer` events by ``transfer_starts`` (``{(u, v): t}``),
    a transfer after its producer and before its consumer at equal times: the order in which
    :func:`simulate` re-times a schedule no later than it was (device and link orders kept)."""
    pos = {v: i for i, v in enumerate(problem.topo_order())}
    keys = [((starts[v], 0, pos[v]), v) for v in problem.graph]
    keys += [((t, 1, pos[v]), Transfer(u, v)) for (u, v), t in (transfer_starts or {}).items()]
    return [e for _, e in sorted(keys, key=lambda kv: kv[0])]


def retime(problem: Problem, placement: dict, order: list, ctx: Context | None = None,
           splits: dict | None = None) -> Timed:
    """Earliest schedule of ``placement`` (and ``splits``: node -> split option) in ``order``
    (:func:`simulate` in us): ``(schedule, makespan, transfers)``. Re-timing a solver's placement
    with exact times in its start order (transfers included) never ends later than the solver's
    own (rounded) schedule."""
    return simulate(problem, placement, order, ctx, splits)


def lower_bound(problem: Problem) -> float:
    """max(critical path at each node's fastest time with free transfers, total fastest work / devices)."""
    fastest = {v: min(problem.graph.nodes[v]["time_us"].values()) for v in problem.graph}
    longest: dict = {}
    for v in problem.topo_order():
        longest[v] = fastest[v] + max((longest[u] for u in problem.graph.predecessors(v)), default=0.0)
    cp = max(longest.values(), default=0.0)
    return max(cp, sum(fastest.values()) / len(problem.devices))


def check(problem: Problem, placement: dict, schedule: dict, makespan: float | None = None,
          splits: dict | None = None, transfers: dict | None = None) -> list[str]:
    """Every way ``schedule`` breaks the problem (empty list: feasible). Independent of the solvers.
    A node in ``splits`` must use one of its split options, with ``placement`` its first device.
    ``transfers`` (``{(u, v): (start, end)}``, a result's ``transfers``) are checked where given:
    see :func:`check_transfers`; without them congestion cannot be checked."""
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
    if transfers is not None:
        errs += check_transfers(problem, placement, schedule, transfers, tol)
    last = max((e for _, e in schedule.values()), default=0.0)
    if makespan is not None and abs(makespan - last) > tol:
        errs.append(f"makespan {makespan} is not the last end {last}")
    return errs


def check_transfers(problem: Problem, placement: dict, schedule: dict, transfers: dict, tol: float = 1e-9) -> list[str]:
    """Every cross-device edge ``u -> v`` whose transfer takes time has one transfer
    ``[start, end]`` of exactly that time within ``[end of u, start of v]``; with congestion
    (MOIRAI Eq. 8: "two communication operations should not be processing simultaneously on the
    same channel"), no two transfers out of one device overlap, nor two into one device."""
    errs: list[str] = []
    outs: dict = {}
    ins: dict = {}
    for u, v in problem.graph.edges:
        a, b = placement[u], placement[v]
        c = problem.edge_time(u, v, a, b)
        if a == b or c <= 0:
            continue
        if (u, v) not in transfers:
            errs.append(f"transfer {u!r}->{v!r} ({a!r} to {b!r}, {c:.6g} us) has no time")
            continue
        s, e = transfers[u, v]
        if abs((e - s) - c) > tol or s < schedule[u][1] - tol or e > schedule[v][0] + tol:
            errs.append(f"transfer {u!r}->{v!r} runs [{s}, {e}]: it takes {c:.6g} us between the end of "
                        f"{u!r} ({schedule[u][1]}) and the start of {v!r} ({schedule[v][0]})")
        outs.setdefault(a, []).append((s, e, (u, v)))
        ins.setdefault(b, []).append((s, e, (u, v)))
    if problem.congestion:
        for what, table in (("out of", outs), ("into", ins)):
            for d, ivs in table.items():
                ivs.sort(key=lambda t: (t[0], t[1]))
                for (_, e1, x), (s2, _, y) in zip(ivs, ivs[1:]):
                    if s2 < e1 - tol:
                        errs.append(f"transfers {x[0]!r}->{x[1]!r} and {y[0]!r}->{y[1]!r} overlap {what} {d!r} "
                                    "(congestion, MOIRAI Eq. 8)")
    return errs
