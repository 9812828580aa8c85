"""Placement strategies by name, on problems and on TVM OpGraphs.

:func:`solve` runs one strategy on a :class:`~.problem.Problem`. ``milp`` solves graphs of up to
``coarsen_above`` nodes in one CP-SAT model, warm-started from the best of HEFT, m-ETF, m-SCT
and the DP. Larger graphs are decomposed at dominators (``large="decompose"``: :mod:`.dominators`,
one MILP per submodel), coarsened with QuickP's rules first (``large="coarsen"``: :mod:`.coarsen`,
then one MILP, or dominators if the coarse graph is still large), or both with half the time each
(``large="both"``, the default: coarsening wins on the published operator graphs, decomposition on
our synthetic ones, see BENCHMARKS.md). The result is re-timed on the original graph and compared
with the warm start, so it is never worse than it. :func:`plan_placement` turns an OpGraph into a problem with a cost
model, solves it and returns a :class:`~tvm_partition.plan.Plan` of ``OnDevice`` decisions (views
get none): that is what ``tvm-partition compile --strategy milp`` uses.
"""

from __future__ import annotations

import dataclasses
import time

from .coarsen import coarsen, colocation_groups
from .dominators import solve_dominators
from .dp import solve_dp
from .heuristics import HEURISTICS, best_heuristic
from .milp import setup_seconds, solve_milp
from .problem import Device, Problem, ProblemError, Result, from_opgraph, local_topology
from .schedule import check, lower_bound, retime

STRATEGY_NAMES = ("milp", "dominators", "dp", "heft", "metf", "msct")


#: A solver phase (the coarse MILP, the decomposition) given less than this many seconds is
#: skipped, and the best schedule found so far returned: on 10,000 nodes, setting up either took
#: longer (the decomposition's per-submodel heuristics alone about 1 s; a 2 s limit ran 5.4 s).
MIN_PHASE_S = 0.5
#: The DP warm start may take this share of the time left after the heuristics: its cost does
#: not follow theirs (7.5x HEFT's on 10,000 synthetic nodes, 0.2x on 2,012 published operators,
#: 4 s of a 3.9 s budget on 3,705 nodes x 13 devices), so it stops where its share ends.
DP_SHARE = 0.3


def _warm_start(problem: Problem, until: float | None = None) -> Result:
    """The best of HEFT, m-ETF, m-SCT and the DP: the MILP's hint and the result it must beat.
    Near ``until`` (a ``time.perf_counter()`` time) it settles for what it has found so far."""
    best = best_heuristic(problem, until=until)
    now = time.perf_counter()
    try:
        dp = solve_dp(problem, until=None if until is None else now + DP_SHARE * (until - now))
    except ProblemError:
        return best
    return dp if dp.makespan_us < best.makespan_us else best


def _milp(problem: Problem, time_limit: float, coarsen_above: int, colocate: bool, large: str) -> Result:
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    warm = _warm_start(problem, deadline)
    per_node = (time.perf_counter() - t0) / max(1, problem.graph.number_of_nodes())
    if problem.graph.number_of_nodes() <= coarsen_above:
        if deadline - time.perf_counter() < setup_seconds(problem):  # no time to solve: the warm start
            return dataclasses.replace(warm, strategy="milp", solve_s=time.perf_counter() - t0,
                                       meta={"returned_warm_start": True, "out_of_time": True})
        groups = colocation_groups(problem) if colocate else None
        return solve_milp(problem, deadline - time.perf_counter(), hint=warm, colocate=groups)
    tried = []
    if large in ("coarsen", "both"):
        share = (0.5 if large == "both" else 1.0) * (deadline - time.perf_counter())
        if share >= MIN_PHASE_S:
            tried.append(_coarsened(problem, share, warm, coarsen_above, colocate))
    if large in ("decompose", "both") and deadline - time.perf_counter() >= MIN_PHASE_S:
        tried.append(solve_dominators(problem, deadline - time.perf_counter(), warm=warm, warm_seconds_per_node=per_node))
    best = min(tried, key=lambda r: r.makespan_us) if tried else warm
    meta = {"large": large, "tried": {r.meta.get("large", "decompose"): r.makespan_us for r in tried},
            "warm_start": warm.strategy, "warm_start_makespan_us": warm.makespan_us}
    meta.update({k: v for r in tried for k, v in r.meta.items() if k in ("coarsen", "submodels")})
    if warm.makespan_us <= best.makespan_us:
        meta["returned_warm_start"] = True
        best = warm
    return Result("milp", best.makespan_us, dict(best.placement), dict(best.schedule), lower_bound(problem),
                  time.perf_counter() - t0, meta, transfers=dict(best.transfers))


def _coarsened(problem: Problem, time_limit: float, warm: Result, coarsen_above: int, colocate: bool) -> Result:
    """QuickP: coarsen, solve the coarse graph (warm-started from the projected fine warm start),
    expand and re-time on the fine graph."""
    t0 = time.perf_counter()
    c = coarsen(problem)
    left = time_limit - (time.perf_counter() - t0)
    if c.problem.graph.number_of_nodes() > coarsen_above:
        coarse = solve_dominators(c.problem, left)
    else:
        hint = _better(c.project(warm), best_heuristic(c.problem), c.problem)
        if left < setup_seconds(c.problem):  # no time to solve the coarse graph: its warm start
            coarse = hint
        else:
            groups = colocation_groups(c.problem) if colocate else None
            coarse = solve_milp(c.problem, left, hint=hint, colocate=groups)
    placement = c.expand(coarse.placement)
    pos = {v: i for i, v in enumerate(problem.topo_order())}
    first = {v: coarse.schedule[g][0] for g, vs in c.members.items() for v in vs}
    order = sorted(problem.graph, key=lambda v: (first[v], pos[v]))
    sched, makespan, tx = retime(problem, placement, order)
    return Result("milp", makespan, placement, sched, meta={"large": "coarsen", "coarsen": c.report}, transfers=tx)


def _better(a: Result, b: Result, problem: Problem) -> Result:
    """Of two warm starts for ``problem``, the one whose re-timed schedule ends first."""
    mk_a = retime(problem, a.placement, a.meta["order"])[1]
    return a if mk_a <= retime(problem, b.placement, b.meta["order"])[1] else b


#: Seconds kept back from a time limit for the work after the solvers (the schedule check, the
#: result's JSON): per node, and at least. Measured: the check takes 0.02 s on 10,000 nodes, the
#: whole command's work after the solve about 0.1 s.
RESERVE_S_PER_NODE, RESERVE_S = 2e-5, 0.05


def solver_seconds(problem: Problem, time_limit: float, spent: float) -> float:
    """What is left of ``time_limit`` for the solvers when ``spent`` seconds of it are gone."""
    return time_limit - spent - max(RESERVE_S, RESERVE_S_PER_NODE * problem.graph.number_of_nodes())


def solve(problem: Problem, strategy: str, time_limit: float = 10.0, coarsen_above: int = 400,
          colocate: bool = False, large: str = "both", spent: float = 0.0) -> Result:
    """Run ``strategy`` (one of :data:`STRATEGY_NAMES`) on ``problem``; ``large``: how milp handles
    graphs above ``coarsen_above`` nodes: ``decompose`` (dominators), ``coarsen`` (QuickP), or
    ``both`` (half the time each, the better result). With the problem's ``congestion`` (on by
    default, MOIRAI Eq. 8) every strategy's schedule serialises the transfers out of and into
    each device; the result (its ``transfers`` included) is checked before it is returned.
    ``time_limit`` bounds it all, warm starts, coarsening, decomposition and the check included,
    with ``spent`` seconds of it gone before the call (the command's start, loading the problem:
    :func:`solver_seconds`)."""
    if large not in ("decompose", "coarsen", "both"):
        raise ProblemError(f"large must be 'decompose', 'coarsen' or 'both', not {large!r}")
    budget = solver_seconds(problem, time_limit, spent)
    if strategy == "milp":
        res = _milp(problem, budget, coarsen_above, colocate, large)
    elif strategy == "dominators":
        res = solve_dominators(problem, budget)
    elif strategy == "dp":
        res = solve_dp(problem)
    elif strategy in HEURISTICS:
        res = HEURISTICS[strategy](problem)
    else:
        raise ProblemError(f"unknown placement strategy {strategy!r}: choose one of {', '.join(STRATEGY_NAMES)}")
    res.meta.pop("order", None)
    res.meta["congestion"] = problem.congestion
    errs = check(problem, res.placement, res.schedule, res.makespan_us, res.splits, res.transfers)
    if errs:  # a bug in a strategy, not bad input
        raise RuntimeError(f"internal error: the {strategy} schedule is infeasible: {errs[0]}")
    return res


# ---------------------------------------------------------------------- TVM models
def problem_for(opgraph, devices, cost_model=None, topology=None, split_ratios=()) -> Problem:
    """The placement problem of an OpGraph on ``devices`` (DeviceSpec list). ``topology``:
    ``(devices, bandwidth, latency)`` from :func:`.problem.load_topology` (its devices must be
    named as in ``devices``; missing ones take this machine's memory), or None for this machine.
    ``split_ratios``: give the key ops split options at these ratios (joint split + placement)."""
    if cost_model is None:
        from ..cost_models import default_cost_model

        cost_model = default_cost_model(devices)[0]
    local, bw, lat = local_topology(devices)
    if topology is not None:
        t_devs, t_bw, t_lat = topology
        names = [d.name for d in devices]
        unknown = [d.name for d in t_devs if d.name not in names]
        if unknown:
            raise ProblemError(f"the topology names device {unknown[0]!r}, which --devices does not have "
                               f"(devices: {names})")
        caps = {d.name: d.memory_bytes for d in t_devs}
        local = [Device(d.name, caps.get(d.name, d.memory_bytes)) for d in local]
        if t_bw:  # links as the topology gives them (a missing latency is 0); else this machine's defaults
            bw, lat = t_bw, t_lat
    problem = from_opgraph(opgraph, cost_model, local, bw, lat, cpus={d.name for d in devices if d.kind == "cpu"})
    if split_ratios:
        from .joint import add_split_options

        add_split_options(problem, opgraph, cost_model, split_ratios)
    return problem


def plan_placement(strategy: str, opgraph, devices, cost_model=None, topology=None, time_limit: float = 10.0,
                   split_ratios=()):
    """A Plan of OnDevice decisions (none for views) from a placement strategy; with
    ``split_ratios`` the MILP may also split key ops (Split decisions, :mod:`.joint`)."""
    from ..plan import OnDevice, Plan
    from .joint import split_decision

    t0 = time.perf_counter()
    problem = problem_for(opgraph, devices, cost_model, topology, split_ratios)
    res = solve(problem, strategy, time_limit, spent=time.perf_counter() - t0)
    ops = {v: (split_decision(opgraph, v, res.splits[v]) if v in res.splits else OnDevice(d))
           for v, d in res.placement.items() if not opgraph.ops[v].is_view}
    skip = ("placement", "schedule", "transfers", "meta")
    meta = {"placement": {k: v for k, v in res.to_json().items() if k not in skip}}
    return Plan(list(devices), ops, strategy=strategy, predicted_latency_us=res.makespan_us, meta=meta)


def strategies(time_limit: float = 10.0) -> dict:
    """``{name: plan(graph, devices)}`` for ``planners.STRATEGIES``."""
    return {name: (lambda graph, devices, cost_model=None, _n=name:
                   plan_placement(_n, graph, devices, cost_model, time_limit=time_limit))
            for name in STRATEGY_NAMES}
