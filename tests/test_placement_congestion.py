"""Link congestion (MOIRAI Eq. 8): transfers out of one device, and into one device, are serialised.

The brute force here is independent of the planners: for every placement, every sequence of the
nodes on each device and of the transfers on each device's outgoing and incoming link, the
earliest schedule is a longest path in the constraint graph (none where the sequences contradict
the DAG). Every feasible schedule keeps some such sequences and is no earlier than their earliest
schedule, so the minimum over all of them is the optimum.
"""

from __future__ import annotations

import itertools
import json
import math
import random

import networkx as nx
import pytest

from test_placement import assert_valid, brute_force
from tvm_partition.planners.heuristics import HEURISTICS
from tvm_partition.planners.milp import solve_milp
from tvm_partition.planners.placement import STRATEGY_NAMES, solve
from tvm_partition.planners.problem import Device, Problem
from tvm_partition.planners.schedule import check
from tvm_partition.planners.synthetic import dnn_like


def _longest(items: dict, arcs: list) -> dict | None:
    """Earliest starts for ``arcs`` (i, j, w): start[j] >= start[i] + w; None if cyclic."""
    succ: dict = {k: [] for k in items}
    indeg = {k: 0 for k in items}
    for i, j, w in arcs:
        succ[i].append((j, w))
        indeg[j] += 1
    start = {k: 0.0 for k in items}
    ready = [k for k in items if indeg[k] == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for j, w in succ[i]:
            start[j] = max(start[j], start[i] + w)
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return start if seen == len(items) else None


def _placement_optimum(p: Problem, place: dict) -> float:
    g = p.graph
    dur = {("n", v): g.nodes[v]["time_us"][place[v]] for v in g}
    arcs, resources = [], {}
    for v in g:
        if dur["n", v] > 0:
            resources.setdefault(("dev", place[v]), []).append(("n", v))
    for u, v in g.edges:
        c = p.edge_time(u, v, place[u], place[v])
        if place[u] != place[v] and c > 0:
            dur["t", u, v] = c
            arcs += [(("n", u), ("t", u, v), dur["n", u]), (("t", u, v), ("n", v), c)]
            resources.setdefault(("out", place[u]), []).append(("t", u, v))
            resources.setdefault(("in", place[v]), []).append(("t", u, v))
        else:
            arcs.append((("n", u), ("n", v), dur["n", u] + c))
    # a link's send and receive queues holding the same transfers must keep one order (else a cycle)
    queues = list({frozenset(items): items for items in resources.values()}.values())
    best = math.inf
    for seqs in itertools.product(*(itertools.permutations(q) for q in queues)):
        chain = [(a, b, dur[a]) for seq in seqs for a, b in zip(seq, seq[1:])]
        start = _longest(dur, arcs + chain)
        if start is not None:
            best = min(best, max(start["n", v] + dur["n", v] for v in g))
    return best


def congested_brute_force(p: Problem) -> float:
    g, names = p.graph, p.device_names
    best = math.inf
    for combo in itertools.product(names, repeat=g.number_of_nodes()):
        place = dict(zip(g, combo))
        if any(place[v] not in g.nodes[v]["time_us"] for v in g):
            continue
        if any(sum(p.mem(v) for v in g if place[v] == d) > p.capacity(d) for d in names):
            continue
        best = min(best, _placement_optimum(p, place))
    return best


def _problem(nodes: dict, edges: list, devices=("d0", "d1"), bw: float = 1.0, congestion: bool = True) -> Problem:
    """``nodes``: {id: {device: us}}; ``edges``: (u, v, bytes); every link takes bytes / ``bw`` us
    (``bw`` bytes per us is bandwidth_Bps ``bw * 1e6``), no latency."""
    g = nx.DiGraph()
    for v, t in nodes.items():
        g.add_node(v, time_us=dict(t), mem_bytes=0.0)
    for u, v, nb in edges:
        g.add_edge(u, v, bytes=float(nb))
    links = {a: {b: bw * 1e6 for b in devices if b != a} for a in devices}
    return Problem(g, [Device(d) for d in devices], links, {}, congestion=congestion)


def _fan_out(congestion: bool = True) -> Problem:
    """s must run on d0, three consumers on d1, 10 us transfers each."""
    cons = {f"c{i}": {"d1": 1.0} for i in range(3)}
    return _problem({"s": {"d0": 1.0}, **cons}, [("s", c, 10) for c in cons], congestion=congestion)


def test_fan_out_of_heavy_edges_serialises_and_changes_the_optimum():
    free, busy = _fan_out(congestion=False), _fan_out()
    # overlapping transfers: all three arrive at 11, consumers run back to back until 14;
    # serialised: they arrive at 11, 21, 31, so the last consumer ends at 32
    assert brute_force(free) == pytest.approx(14.0)
    assert congested_brute_force(busy) == pytest.approx(32.0)
    assert solve_milp(free, time_limit=5).makespan_us == pytest.approx(14.0)
    res = solve_milp(busy, time_limit=5)
    assert res.meta["status"] == "OPTIMAL" and res.makespan_us == pytest.approx(32.0)
    assert_valid(busy, res)
    spans = sorted(res.transfers.values())
    assert len(spans) == 3 and all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))


def test_fan_in_from_two_devices_serialises_on_the_receiving_device():
    nodes = {"a": {"d0": 1.0}, "b": {"d2": 1.0}, "c": {"d1": 1.0}}
    p = _problem(nodes, [("a", "c", 10), ("b", "c", 10)], devices=("d0", "d1", "d2"))
    assert congested_brute_force(p) == pytest.approx(22.0)  # 1 + 10 + 10 + 1: one link into d1 at a time
    res = solve_milp(p, time_limit=5)
    assert res.makespan_us == pytest.approx(22.0)
    assert_valid(p, res)
    p.congestion = False
    assert solve_milp(p, time_limit=5).makespan_us == pytest.approx(12.0)


def test_checker_rejects_overlapping_and_missing_transfers():
    p = _fan_out()
    res = solve_milp(p, time_limit=5)
    (e1, t1), (e2, _) = sorted(res.transfers.items(), key=lambda kv: kv[1])[:2]
    overlap = {**res.transfers, e2: t1}
    assert any("overlap out of 'd0'" in e for e in check(p, res.placement, res.schedule, None, None, overlap))
    missing = {k: t for k, t in res.transfers.items() if k != e1}
    assert any("has no time" in e for e in check(p, res.placement, res.schedule, None, None, missing))
    p.congestion = False  # overlapping transfers are fine without congestion
    assert check(p, res.placement, res.schedule, None, None, overlap) == []


def _tiny(seed: int) -> Problem:
    """4-5 nodes on 2 devices, some nodes tied to one device (so edges cross), transfers as long
    as the ops (so they congest), integer times."""
    r = random.Random(seed)
    n = 4 + seed % 2
    nodes = {}
    for i in range(n):
        times = {d: float(r.randint(1, 10)) for d in ("d0", "d1")}
        if r.random() < 0.5:
            times.pop(r.choice(("d0", "d1")))
        nodes[f"n{i}"] = times
    edges = [(f"n{i}", f"n{j}", r.randint(0, 8)) for i in range(n) for j in range(i + 1, n) if r.random() < 0.6]
    return _problem(nodes, edges)


SEEDS = (0, 1, 2, 3, 13, 15, 29, 46)  # congestion makes the optimum later on the last four


@pytest.mark.parametrize("seed", SEEDS)
def test_milp_equals_congested_brute_force_optimum(seed):
    p = _tiny(seed)
    opt = congested_brute_force(p)
    res = solve_milp(p, time_limit=10)
    assert_valid(p, res)
    assert res.meta["status"] == "OPTIMAL"
    assert res.makespan_us == pytest.approx(opt)
    for name, fn in HEURISTICS.items():
        h = fn(p)
        assert_valid(p, h)
        assert h.makespan_us >= opt - 1e-9, name


def test_congestion_binds_on_some_of_those_dags():
    """The comparisons above include DAGs whose optimum congestion makes later."""
    later = 0
    for seed in SEEDS:
        p = _tiny(seed)
        busy = congested_brute_force(p)
        p.congestion = False
        later += busy > brute_force(p) + 1e-9
    assert later >= 4


@pytest.mark.parametrize("large", [False, True])
def test_every_strategy_passes_the_congestion_checker(large):
    p = dnn_like(60, 3, seed=5, bandwidth=2e8)  # slow links: many transfers queue
    kw = {"coarsen_above": 20} if large else {}
    for name in STRATEGY_NAMES:
        res = solve(p, name, time_limit=1.5, **kw)
        assert_valid(p, res)
        assert res.meta["congestion"] is True
        if name == "milp":
            assert res.transfers, "no cross-device transfers: the test checks nothing"


def test_congestion_is_on_by_default_and_off_round_trips_json():
    p = _fan_out()
    assert p.congestion and "congestion" not in p.to_json()["graph"]
    p.congestion = False
    q = Problem.from_json(json.loads(json.dumps(p.to_json())))
    assert q.congestion is False
    res = solve(_fan_out(), "heft")
    assert set(res.to_json()["transfers"]) == {"s->c0", "s->c1", "s->c2"}
