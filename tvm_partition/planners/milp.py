"""Exact placement and scheduling with OR-Tools CP-SAT (MOIRAI Sec. IV, Eq. 4-8; QuickP (P2)).

MOIRAI's MILP, as a CP-SAT model instead of Gurobi big-M constraints:

* assignment (MOIRAI Eq. 4): one Boolean ``x[v, d]`` per node and device that can run it and
  whose memory holds it; exactly one is true;
* compute time (Eq. 5): ``end[v] = start[v] + sum_d time(v, d) * x[v, d]``;
* precedence with communication (Eq. 6-7): ``start[v] >= end[u] + comm(u, v, d1, d2)`` enforced
  by ``x[u, d1] and x[v, d2]`` for every device pair; the transfer takes the best channel
  (direct link or widest multi-hop path, MOIRAI Sec. III-C), chosen when the problem is loaded;
* non-overlap on a device: one optional interval per (node, device), ``AddNoOverlap`` per device
  (instead of MOIRAI's big-M disjunctions; zero-time nodes get no interval);
* memory caps (Eq. 5, (4d)): ``sum_v mem(v) x[v, d] <= capacity(d)``;
* link congestion (Sec. III-D "Congestion control", Eq. 8, term (4g) of model (4)), when the
  problem has it (the default): the transfer of each edge is one start ``ts`` and size shared by
  a *send* interval per source device (present iff the edge leaves it) and a *receive* interval
  per destination device (present iff it arrives there), ``end[u] <= ts`` and
  ``ts + size <= start[v]`` when the edge crosses devices, and ``AddNoOverlap`` over each
  device's sends and over its receives (:func:`_transfer`): 2*E*D optional intervals, not one per
  (edge, source, destination), and E*D on two devices;
* co-location groups (QuickP Sec. IV-C, Eq. 9-10): nodes of a group share their device;
* objective: the makespan ``M >= end[v]``.

Times are integers in a unit chosen so that rounding is negligible (1 us where every time is a
whole number; then the model is exact). Durations and transfers are rounded up, so the solver's
schedule is feasible; it is re-timed with exact times in the solver's start order, which never
ends later. The model is warm-started (``AddHint``) from the best heuristic, and the result is
never worse than that hint: if the solver returns nothing better in the time limit, the hint is
returned. The lower bound is CP-SAT's objective bound (less the rounding slack), or the simple
bound of :func:`.schedule.lower_bound` if that is higher; ``gap = (makespan - bound) / makespan``.

The warm start is re-timed with congestion (:func:`.schedule.simulate`), so its hint is feasible;
the solver's schedule is re-timed in its start order, transfers included. Transfers from an
earlier sub-problem (a :class:`.Context`'s ``external`` inputs) are not serialised with this one's.
"""

from __future__ import annotations

import math
import time

from ortools.sat.python import cp_model

from .heuristics import best_heuristic
from .problem import Problem, ProblemError, Result
from .schedule import Context, Durations, lower_bound, retime, simulate, start_order

_MAX_UNITS = 2_000_000


def _integral(values) -> bool:
    return all(abs(x - round(x)) < 1e-9 for x in values)


class _Units:
    """us <-> integer ticks; rounding up keeps every rounded schedule feasible for real times."""

    def __init__(self, problem: Problem, horizon_us: float):
        times = [t for v in problem.graph for t in problem.graph.nodes[v]["time_us"].values()]
        times += [o["time_us"] for v in problem.graph for o in problem.splits(v)]
        comms = [problem.edge_time(u, v, a, b) for u, v in problem.graph.edges
                 for a in problem.allowed(u) for b in problem.allowed(v) if a != b]
        comms = [c for c in comms if math.isfinite(c)]
        exact = _integral(times + comms) and horizon_us <= _MAX_UNITS
        self.us = 1.0 if exact else max(horizon_us, 1e-9) / (_MAX_UNITS / 2)
        self.exact = exact

    def up(self, us: float) -> int:
        return int(math.ceil(us / self.us - 1e-9))


class _Ticks(Durations):
    """The problem's durations in ticks, rounded up (the model's own times)."""

    def __init__(self, problem: Problem, units: _Units):
        super().__init__(problem)
        self.units = units

    def busy(self, v, device, split):
        devs, dur = super().busy(v, device, split)
        return devs, None if dur is None else self.units.up(dur)

    def edge(self, u, v, src, dst):
        return self.units.up(super().edge(u, v, src, dst))

    def external(self, ready, nbytes, src, dst):
        return self.units.up(super().external(ready, nbytes, src, dst))

    def release(self, device, ctx):
        return self.units.up(super().release(device, ctx))


def _int_schedule(problem: Problem, placement: dict, order: list, units: _Units, ctx: Context | None):
    """The hint's schedule in ticks (same placement and device order, rounded-up times, transfers
    serialised with congestion): ``(start, end, transfers)``."""
    sched, _, tx = simulate(problem, placement, order, ctx, units=_Ticks(problem, units))
    return ({v: int(s) for v, (s, _) in sched.items()}, {v: int(e) for v, (_, e) in sched.items()},
            {k: (int(s), int(e)) for k, (s, e) in tx.items()})


def _split_choices(m, problem: Problem, units: _Units, v, i: int, loc: dict, start, end, per_dev: dict,
                   split_vars: dict) -> dict:
    """Joint split + placement: the node runs whole on one device (``whole[d]``) or as one of its
    split options (``y``, an interval on every device of the split); ``loc[d]`` (where the output
    is) is the whole choice or a split joined on ``d``. Returns the ``whole`` literals."""
    opts = [o for o in problem.splits(v) if o["devices"][0] in loc]
    dur = {d: units.up(problem.time(v, d)) for d in loc}
    if not opts:
        m.add_exactly_one(loc.values())
        m.add(end == start + sum(dur[d] * loc[d] for d in loc))
        return loc
    whole = {d: m.new_bool_var(f"w{i}_{d}") for d in loc}
    ys = [m.new_bool_var(f"y{i}_{k}") for k in range(len(opts))]
    m.add_exactly_one(list(whole.values()) + ys)
    for d in loc:
        m.add(loc[d] == whole[d] + sum(y for y, o in zip(ys, opts) if o["devices"][0] == d))
    m.add(end == start + sum(dur[d] * whole[d] for d in loc) + sum(units.up(o["time_us"]) * y for y, o in zip(ys, opts)))
    for k, (y, o) in enumerate(zip(ys, opts)):
        if units.up(o["time_us"]) > 0:
            for d in o["devices"]:
                per_dev[d].append(m.new_optional_fixed_size_interval_var(start, units.up(o["time_us"]), y, f"p{i}_{k}_{d}"))
    split_vars[v] = list(zip(ys, opts))
    return whole


def _precedence(m, problem: Problem, units: _Units, u, v, x, start, end) -> None:
    """``start[v] >= end[u] + transfer``: per source device one constraint with the cheapest
    transfer to any other device (enforced by ``x[u, a] and not x[v, a]``), plus pair constraints
    only where a destination costs more -- exact, and D instead of D^2 constraints on a uniform
    topology."""
    m.add(start[v] >= end[u])
    for a, xa in x[u].items():
        ticks = {}
        for b, xb in x[v].items():
            if b == a:
                continue
            c = problem.edge_time(u, v, a, b)
            if not math.isfinite(c):
                m.add_bool_or([xa.Not(), xb.Not()])
            else:
                ticks[b] = units.up(c)
        if not ticks:
            continue
        low = min(ticks.values())
        if low > 0:
            stay = [x[v][a].Not()] if a in x[v] else []
            m.add(start[v] >= end[u] + low).only_enforce_if([xa] + stay)
        for b, c in ticks.items():
            if c > low:
                m.add(start[v] >= end[u] + c).only_enforce_if([xa, x[v][b]])


def _and_not(m, p, q, name: str):
    """A literal equal to ``p and not q`` (``p`` itself where ``q`` is None)."""
    if q is None:
        return p
    z = m.new_bool_var(name)
    m.add_implication(z, p)
    m.add_implication(z, q.Not())
    m.add_bool_or([p.Not(), q, z])
    return z


def _transfer(m, problem: Problem, units: _Units, k: int, u, v, x, start, end, horizon: int, outs: dict,
              ins: dict):
    """The transfer of edge ``u -> v`` as intervals for congestion (MOIRAI Eq. 8).

    MOIRAI gives each data flow q a start S_q and end C_q (Eq. 7) and, for two flows r, q leaving
    (or entering) one device k, the big-M disjunction S_q >= C_r or S_r >= C_q (Eq. 8). Here the
    flow has one start ``ts`` and a size (its transfer time; where device pairs differ, at least
    the time of the chosen pair), and 2D optional intervals sharing them: a *send* interval on device ``a``
    present iff ``u`` is on ``a`` and ``v`` is not, and a *receive* interval on ``b`` present iff
    ``v`` is on ``b`` and ``u`` is not; ``AddNoOverlap`` over each device's sends and over its
    receives is Eq. 8 without big-M, with O(E*D) intervals instead of one per (edge, a, b) (on
    two devices the sends alone: a device's receives are the other's sends).
    ``end[u] <= ts`` and ``ts + size <= start[v]`` hold when the edge crosses devices.
    Returns ``(ts, send, recv, cross)`` for the hint, or None where no crossing transfer takes time (an
    edge whose transfer is free on some crossing pair and not on another is left unserialised
    here; :func:`.simulate` still serialises it in the returned schedule)."""
    costs = {(a, b): problem.edge_time(u, v, a, b) for a in x[u] for b in x[v] if a != b}
    costs = {ab: units.up(c) for ab, c in costs.items() if math.isfinite(c)}
    if not costs or min(costs.values()) <= 0:
        return None
    lo, hi = min(costs.values()), max(costs.values())
    ts = m.new_int_var(0, horizon, f"ts{k}")
    if lo == hi:
        size, te = lo, ts + lo
    else:
        size, te = m.new_int_var(lo, hi, f"tz{k}"), m.new_int_var(0, horizon, f"te{k}")
        for (a, b), c in costs.items():
            if c > lo:
                m.add(size >= c).only_enforce_if([x[u][a], x[v][b]])
    send = {a: _and_not(m, x[u][a], x[v].get(a), f"snd{k}_{a}") for a in x[u]}
    # on two devices the receives on one are the sends from the other: sends alone serialise both
    recv = {b: _and_not(m, x[v][b], x[u].get(b), f"rcv{k}_{b}") for b in x[v]} if len(problem.devices) > 2 else {}
    cross = m.new_bool_var(f"cross{k}")
    m.add(cross == sum(send.values()))
    m.add(ts >= end[u]).only_enforce_if(cross)
    m.add(te <= start[v]).only_enforce_if(cross)
    for table, lits in ((outs, send), (ins, recv)):
        for d, lit in lits.items():
            table[d].append(m.new_optional_interval_var(ts, size, te, lit, f"t{k}_{d}_{len(table[d])}"))
    return ts, send, recv, cross


def _serial_bound(problem: Problem, ctx: Context | None) -> float:
    """A horizon no optimal schedule exceeds: everything one after another, slowest choices."""
    g = problem.graph
    t = sum(max(g.nodes[v]["time_us"].values()) for v in g)
    for u, v in g.edges:
        t += max([c for a in problem.allowed(u) for b in problem.allowed(v)
                  if math.isfinite(c := problem.edge_time(u, v, a, b))], default=0.0)
    if ctx is not None:
        t += max(list(ctx.release.values()) + [r + problem.comm_time(nb, dv, d) for ins in ctx.external.values()
                                                for r, dv, nb in ins for d in problem.device_names
                                                if math.isfinite(problem.comm_time(nb, dv, d))], default=0.0)
    return t


def _hint_transfers(m, transfers: dict, x: dict, placement: dict, h_end: dict, h_tx: dict) -> None:
    """Hint each transfer's start and literals from the (congestion-feasible) warm start."""
    for (u, v), (ts, send, recv, cross) in transfers.items():
        a, b = placement[u], placement[v]
        m.add_hint(ts, h_tx[u, v][0] if (u, v) in h_tx else h_end[u])
        m.add_hint(cross, a != b)
        for d, lit in send.items():
            if lit is not x[u][d]:
                m.add_hint(lit, d == a != b)
        for d, lit in recv.items():
            if lit is not x[v][d]:
                m.add_hint(lit, d == b != a)


def _solver_order(problem: Problem, solver, start: dict, transfers: dict, placement: dict) -> list:
    """Nodes and transfers by the solver's start times (:func:`.start_order`): re-timing in this
    order never ends later than the solver."""
    return start_order(problem, {v: solver.value(start[v]) for v in problem.graph},
                       {(u, v): solver.value(t[0]) for (u, v), t in transfers.items() if placement[u] != placement[v]})


#: Seconds to build and start a CP-SAT model, per node and device (warm start given): 85-105 us
#: measured on 300-2,012 nodes x 4-13 devices (2026-11-24), whatever the time limit; a time
#: limit shorter than this cannot hold, so callers with less time use their warm start instead.
SETUP_S_PER_NODE_DEVICE = 1e-4


def setup_seconds(problem: Problem) -> float:
    """About how long :func:`solve_milp` takes before it can stop, on ``problem``."""
    return SETUP_S_PER_NODE_DEVICE * problem.graph.number_of_nodes() * len(problem.devices)


def solve_milp(problem: Problem, time_limit: float = 10.0, ctx: Context | None = None, hint: Result | None = None,
               colocate: list | None = None, workers: int = 2, strategy: str = "milp") -> Result:
    """Minimise the makespan of ``problem`` within ``time_limit`` seconds (see the module docstring)."""
    t0 = time.perf_counter()
    if hint is None:
        try:
            hint = best_heuristic(problem, ctx)
        except ProblemError:
            hint = None  # memory too tight for the greedy heuristics: solve cold
    if hint is not None:
        order = hint.meta.get("order") or sorted(hint.schedule, key=lambda v: hint.schedule[v][0])
        units = _Units(problem, hint.makespan_us)
        h_start, h_end, h_tx = _int_schedule(problem, hint.placement, order, units, ctx)
        horizon = max(h_end.values(), default=0)
    else:
        order = problem.topo_order()
        units = _Units(problem, _serial_bound(problem, ctx))
        horizon = units.up(_serial_bound(problem, ctx)) + 2 * problem.graph.number_of_nodes()
    m = cp_model.CpModel()
    g = problem.graph
    used = ctx.mem_used if ctx else {}
    x: dict = {}
    split_vars: dict = {}
    start, end = {}, {}
    per_dev: dict = {d: [] for d in problem.device_names}
    for d, rel in (ctx.release if ctx else {}).items():
        if units.up(rel) > 0:
            per_dev[d].append(m.new_fixed_size_interval_var(0, units.up(rel), f"busy_{d}"))
    for i, v in enumerate(problem.topo_order()):
        start[v] = m.new_int_var(0, horizon, f"s{i}")
        end[v] = m.new_int_var(0, horizon, f"e{i}")
        devs = [d for d in problem.allowed(v) if problem.mem(v) <= problem.capacity(d) - used.get(d, 0.0)]
        if not devs:
            raise ProblemError(f"node {v!r} fits in the memory of none of its devices {problem.allowed(v)}")
        x[v] = {d: m.new_bool_var(f"x{i}_{d}") for d in devs}
        whole = _split_choices(m, problem, units, v, i, x[v], start[v], end[v], per_dev, split_vars)
        dur = {d: units.up(problem.time(v, d)) for d in devs}
        for d in devs:
            if dur[d] > 0:
                per_dev[d].append(m.new_optional_fixed_size_interval_var(start[v], dur[d], whole[d], f"i{i}_{d}"))
        for ready, dev, nb in (ctx.external.get(v, ()) if ctx else ()):
            for d in devs:
                m.add(start[v] >= units.up(ready + problem.comm_time(nb, dev, d))).only_enforce_if(x[v][d])
    for ivs in per_dev.values():
        if len(ivs) > 1:
            m.add_no_overlap(ivs)
    for u, v in g.edges:
        _precedence(m, problem, units, u, v, x, start, end)
    transfers: dict = {}
    if problem.congestion:
        outs: dict = {d: [] for d in problem.device_names}
        ins: dict = {d: [] for d in problem.device_names}
        for k, (u, v) in enumerate(g.edges):
            t = _transfer(m, problem, units, k, u, v, x, start, end, horizon, outs, ins)
            if t is not None:
                transfers[u, v] = t
        for ivs in list(outs.values()) + list(ins.values()):
            if len(ivs) > 1:
                m.add_no_overlap(ivs)
    for d in problem.device_names:
        cap = problem.capacity(d) - used.get(d, 0.0)
        users = [(problem.mem(v), x[v][d]) for v in g if d in x[v] and problem.mem(v) > 0]
        if math.isfinite(cap) and users and sum(mb for mb, _ in users) > cap:
            scale = max(1.0, max(mb for mb, _ in users) / 1e6)
            m.add(sum(int(math.ceil(mb / scale)) * xv for mb, xv in users) <= int(cap / scale))
    for group in colocate or ():
        group = [v for v in group if v in x]
        for a, b in zip(group, group[1:]):
            for d in sorted(set(x[a]) | set(x[b])):
                if d in x[a] and d in x[b]:
                    m.add(x[a][d] == x[b][d])
                else:
                    m.add(x[a][d] == 0) if d in x[a] else m.add(x[b][d] == 0)
    makespan = m.new_int_var(0, horizon, "makespan")
    for v in g:
        if g.out_degree(v) == 0:
            m.add(makespan >= end[v])
    m.minimize(makespan)
    if hint is not None:
        for v in g:
            for d, xv in x[v].items():
                m.add_hint(xv, hint.placement[v] == d)
            m.add_hint(start[v], h_start[v])
            m.add_hint(end[v], h_end[v])
        m.add_hint(makespan, horizon)
        _hint_transfers(m, transfers, x, hint.placement, h_end, h_tx)

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, time_limit - (time.perf_counter() - t0))
    solver.parameters.num_workers = workers
    # presolve's symmetry breaking (identical devices) otherwise makes the hint infeasible, and
    # CP-SAT may spend the whole time limit repairing it (seen on 418 nodes x 7 devices)
    solver.parameters.keep_symmetry_in_presolve = True
    if transfers:  # probing the transfer literals took 10 of 20 s on 500 nodes x 6 devices, then no solution
        solver.parameters.probing_deterministic_time_limit = 0.05
    status = solver.solve(m)
    meta = {"status": solver.status_name(status), "warm_start": hint.strategy if hint else None,
            "warm_start_makespan_us": hint.makespan_us if hint else None, "tick_us": units.us,
            "nodes": g.number_of_nodes()}
    if hint is None and status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.INFEASIBLE:
            raise ProblemError("infeasible memory: no placement fits every device's memory "
                               "(check memory_bytes of the devices and mem_bytes of the nodes)")
        raise ProblemError(f"no placement found in {time_limit:g} s (memory is tight and the heuristics "
                           "failed): raise --time-limit")
    best = hint
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        placement = {v: next(d for d, xv in x[v].items() if solver.boolean_value(xv)) for v in g}
        splits = {v: o for v, opts in split_vars.items() for y, o in opts if solver.boolean_value(y)}
        sorder = _solver_order(problem, solver, start, transfers, placement)
        sched, mk, tx = retime(problem, placement, sorder, ctx, splits)
        if hint is None or mk < hint.makespan_us - 1e-9:
            best = Result(strategy, mk, placement, sched, meta=dict(order=[v for v in sorder if v in g]),
                          splits=splits, transfers=tx)
    # a critical chain of the rounded model has at most one rounded duration and transfer per node
    # (with congestion, also one per transfer queued on a link before it)
    chain = 2 * g.number_of_nodes() + 1 + (g.number_of_edges() if problem.congestion else 0)
    slack = 0.0 if units.exact else units.us * chain
    bound = solver.best_objective_bound * units.us - slack if status != cp_model.UNKNOWN else 0.0
    simple = lower_bound(problem) if ctx is None else 0.0
    meta["bound"] = "cp-sat" if bound > simple else "simple"
    lb = min(max(bound, simple), best.makespan_us)
    meta["improved_over_warm_start"] = best is not hint
    meta["order"] = best.meta.get("order", order)
    return Result(strategy, best.makespan_us, dict(best.placement), dict(best.schedule), lb,
                  time.perf_counter() - t0, meta, dict(best.splits), dict(best.transfers))

