"""Dynamic programming over the layers of chain-like graphs (FlexPie, Sec. 3.3, Alg. 1).

The graph is cut at the dominators of its output (:mod:`.dominators`); each segment is a *unit*
(a single layer on a chain; a whole branching block otherwise: branches are handled as units)
that runs on one device. A unit's only inputs come from the previous unit's last node, so with
``f_k(p, d)`` the time from that node's end on device ``p`` to unit ``k``'s end on device ``d``
(transfers in, then the unit's nodes one after another), the makespan obeys

    J_k(d) = min_p J_{k-1}(p) + f_k(p, d).

FlexPie runs this recurrence from the last layer backwards; the order does not change the optimum,
and running it forward lets each label carry the memory already used on every device, so memory
caps are kept: each state keeps its Pareto-optimal (time, memory) labels, at most ``max_labels``
of them (exact on the chains of the tests; beyond that the fastest labels are kept). On a chain,
where no two layers can overlap, this is the exact optimum (tests compare it with exhaustive
search); on graphs with branches, running a whole block on one device gives up its parallelism.
"""

from __future__ import annotations

import math
import time

from .dominators import segments
from .problem import Problem, ProblemError, Result
from .schedule import lower_bound, retime


def _unit_time(problem: Problem, unit: list, prev, p: str | None, d: str) -> float:
    """Time from the previous unit's end (its last node ``prev`` on ``p``) to this unit's end on ``d``."""
    t, end = 0.0, {}
    for v in unit:
        ready = 0.0
        for u in problem.graph.predecessors(v):
            ready = max(ready, end[u] if u in end else problem.edge_time(prev, v, p, d))
        dur = problem.time(v, d)
        start = max(ready, t) if dur > 0 else ready
        end[v] = start + dur
        if dur > 0:
            t = end[v]
    return max(end.values())


def solve_dp(problem: Problem, max_labels: int | None = None, until: float | None = None) -> Result:
    """``max_labels``: Pareto labels kept per device (default 64, 8 beyond 300 units: the label
    filter is quadratic in it). Past ``until`` (a ``time.perf_counter()`` time) it gives up with
    a :class:`ProblemError`."""
    t0 = time.perf_counter()
    units = segments(problem)
    if max_labels is None:
        max_labels = 64 if len(units) <= 300 else 8
    names = problem.device_names
    caps = [problem.capacity(d) for d in names]
    if sum(problem.mem(v) for v in problem.graph) <= min(caps):
        max_labels = 1  # memory never binds: the fastest label per device is exact
    # labels[d] = [(time, mem tuple, choices tuple)]
    labels = {None: [(0.0, tuple(0.0 for _ in names), ())]}
    prev = None
    for unit in units:
        if until is not None and time.perf_counter() > until:
            raise ProblemError("the DP ran out of time")
        mem = sum(problem.mem(v) for v in unit)
        new: dict = {}
        for di, d in enumerate(names):
            if any(problem.time(v, d) is None for v in unit) or mem > caps[di]:
                continue
            cands = []
            for p, labs in labels.items():
                f = _unit_time(problem, unit, prev, p, d)
                if not math.isfinite(f):
                    continue
                for t, used, choices in labs:
                    if used[di] + mem <= caps[di]:
                        cands.append((t + f, used[:di] + (used[di] + mem,) + used[di + 1:], choices + (d,)))
            if cands:
                new[d] = _pareto(cands, max_labels)
        if not new:
            raise ProblemError(f"dp: no device can hold the unit ending at {unit[-1]!r} within its memory; "
                               "try --strategy milp")
        labels = new
        prev = unit[-1]
    _, _, choices = min((lab for labs in labels.values() for lab in labs), key=lambda x: x[0])
    placement = {v: d for unit, d in zip(units, choices) for v in unit}
    order = [v for unit in units for v in unit]
    sched, makespan, tx = retime(problem, placement, order)
    return Result("dp", makespan, placement, sched, lower_bound(problem), time.perf_counter() - t0,
                  {"units": len(units), "max_labels": max_labels, "order": order}, transfers=tx)


def _pareto(cands: list, limit: int) -> list:
    """Labels no other label beats in time and in every device's memory, fastest first."""
    cands.sort(key=lambda c: (c[0], c[1]))
    keep = []
    for c in cands:
        if not any(k[0] <= c[0] and all(a <= b for a, b in zip(k[1], c[1])) for k in keep):
            keep.append(c)
            if len(keep) >= limit:
                break
    return keep
