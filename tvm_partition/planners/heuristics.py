"""List-scheduling heuristics: HEFT, m-ETF and m-SCT. Baselines, and warm starts for the MILP.

* **HEFT** (Topcuoglu et al. 2002): nodes by decreasing upward rank (mean time + mean transfer
  + the largest successor rank), each on the device giving the earliest finish, filling idle gaps.
* **m-ETF** (Baechi, SoCC'20, Sec. 4.1, cited by MOIRAI Sec. V): of all ready nodes and devices
  with memory left, start the pair that can start earliest (ties: larger upward rank).
* **m-SCT** (Baechi Sec. 4.2): m-ETF with *favourite children*: each node's favourite child is
  the successor it sends the most bytes to; a favourite child goes to its parent's device unless
  another device starts it earlier by more than the transfer it saves. (Baechi picks favourite
  children with an LP relaxation; the most-bytes rule is our simplification.)

All three are memory-aware (a node goes only where the device's memory still holds it) and accept
a :class:`~.schedule.Context` so sub-problems can be scheduled after their predecessors. They
decide placements with transfers that overlap freely; with congestion (MOIRAI Eq. 8) the result
is then re-timed (:func:`~.schedule.simulate`, same placement, nodes in start order, each
device's transfers one at a time), so every schedule they return is congestion-feasible.
"""

from __future__ import annotations

import math
import time

from .problem import Problem, ProblemError, Result
from .schedule import Context, data_ready, lower_bound, retime, timelines


def upward_rank(problem: Problem) -> dict:
    """HEFT's rank_u: mean time over allowed devices + max over successors of (mean transfer + rank)."""
    names = problem.device_names
    pairs = [(a, b) for a in names for b in names if a != b and math.isfinite(problem.comm_time(1.0, a, b))]
    rank: dict = {}
    for v in reversed(problem.topo_order()):
        times = problem.graph.nodes[v]["time_us"].values()
        best = 0.0
        for w in problem.graph.successors(v):
            c = 0.0
            if pairs and len(names) > 1:
                nb = problem.edge_bytes(v, w)
                c = sum(problem.comm_time(nb, a, b) for a, b in pairs) / len(pairs) * (1 - 1 / len(names))
            best = max(best, c + rank[w])
        rank[v] = sum(times) / len(times) + best
    return rank


def _ordered(problem: Problem, rank: dict) -> list:
    pos = {v: i for i, v in enumerate(problem.topo_order())}
    return sorted(problem.graph, key=lambda v: (-rank[v], pos[v]))


class _State:
    """Placement under construction: timelines, memory left, ends."""

    def __init__(self, problem: Problem, ctx: Context | None, insertion: bool):
        self.p = problem
        self.ctx = ctx or Context()
        self.lines = timelines(problem, self.ctx, insertion)
        self.mem = {d: problem.capacity(d) - self.ctx.mem_used.get(d, 0.0) for d in problem.device_names}
        self.placement: dict = {}
        self.end: dict = {}
        self.sched: dict = {}
        self.order: list = []

    def options(self, v) -> list[tuple[float, float, str]]:
        """``(start, finish, device)`` for every device that can run ``v`` and holds it."""
        out = []
        m = self.p.mem(v)
        for d in self.p.allowed(v):
            if m > self.mem[d] + 1e-9:
                continue
            ready = data_ready(self.p, v, d, self.placement, self.end, self.ctx)
            if not math.isfinite(ready):
                continue
            dur = self.p.time(v, d)
            s = self.lines[d].earliest(ready, dur)
            out.append((s, s + dur, d))
        if not out:
            raise ProblemError(f"node {v!r} fits on no device: memory is full everywhere it can run "
                               f"({self.p.allowed(v)}) or no link reaches it")
        return out

    def place(self, v, d: str, s: float) -> None:
        dur = self.p.time(v, d)
        self.lines[d].reserve(s, s + dur)
        self.mem[d] -= self.p.mem(v)
        self.placement[v] = d
        self.sched[v] = (s, s + dur)
        self.end[v] = s + dur
        self.order.append(v)

    def result(self, strategy: str, t0: float) -> Result:
        """The schedule in start order, re-timed by :func:`.retime` (no later where transfers do
        not congest; serialised transfers where they do)."""
        pos = {v: i for i, v in enumerate(self.order)}
        order = sorted(self.sched, key=lambda v: (self.sched[v][0], pos[v]))
        sched, makespan, tx = retime(self.p, self.placement, order, self.ctx)
        return Result(strategy, makespan, dict(self.placement), sched, lower_bound(self.p),
                      time.perf_counter() - t0, {"order": order}, transfers=tx)


def heft(problem: Problem, ctx: Context | None = None) -> Result:
    t0 = time.perf_counter()
    st = _State(problem, ctx, insertion=True)
    for v in _ordered(problem, upward_rank(problem)):
        s, _, d = min(st.options(v), key=lambda o: (o[1], o[0]))
        st.place(v, d, s)
    return st.result("heft", t0)  # HEFT fills gaps: re-timed in its start order


def _ready_list(problem: Problem, ctx: Context | None, strategy: str, favourite: bool) -> Result:
    t0 = time.perf_counter()
    st = _State(problem, ctx, insertion=False)
    rank = upward_rank(problem)
    g = problem.graph
    fav_parent: dict = {}
    if favourite:
        for u in g:
            succ = list(g.successors(u))
            if succ:
                w = max(succ, key=lambda x: (problem.edge_bytes(u, x), rank[x]))
                fav_parent.setdefault(w, u)
    waiting = {v: g.in_degree(v) for v in g}
    ready = {v for v, k in waiting.items() if k == 0}
    pos = {v: i for i, v in enumerate(problem.topo_order())}
    while ready:
        best = None
        for v in sorted(ready, key=pos.get):  # a set's order varies between runs: ties must not
            opts = st.options(v)
            s, f, d = min(opts)
            u = fav_parent.get(v)
            if u is not None and u in st.placement:
                home = [o for o in opts if o[2] == st.placement[u]]
                saved = problem.edge_time(u, v, st.placement[u], d) if d != st.placement[u] else 0.0
                if home and home[0][0] <= s + saved:
                    s, f, d = home[0]
            key = (s, -rank[v], pos[v])
            if best is None or key < best[0]:
                best = (key, v, d, s)
        _, v, d, s = best
        st.place(v, d, s)
        ready.discard(v)
        for w in g.successors(v):
            waiting[w] -= 1
            if waiting[w] == 0:
                ready.add(w)
    return st.result(strategy, t0)


def metf(problem: Problem, ctx: Context | None = None) -> Result:
    return _ready_list(problem, ctx, "metf", favourite=False)


def msct(problem: Problem, ctx: Context | None = None) -> Result:
    return _ready_list(problem, ctx, "msct", favourite=True)


HEURISTICS = {"heft": heft, "metf": metf, "msct": msct}


def best_heuristic(problem: Problem, ctx: Context | None = None, until: float | None = None) -> Result:
    """The heuristic result with the shortest makespan (the MILP's warm start); past ``until`` (a
    ``time.perf_counter()`` time) no further heuristic starts once one has found a placement and
    the slowest so far would not end before it."""
    results, took = [], 0.0
    for fn in HEURISTICS.values():
        if results and until is not None and until - time.perf_counter() < took:  # the next would end past it
            break
        t0 = time.perf_counter()
        try:
            results.append(fn(problem, ctx))
        except ProblemError:
            continue
        finally:
            took = max(took, time.perf_counter() - t0)
    if not results:
        raise ProblemError("infeasible memory: no heuristic found a placement that fits every device's memory "
                           "(check memory_bytes of the devices and mem_bytes of the nodes)")
    return min(results, key=lambda r: r.makespan_us)
