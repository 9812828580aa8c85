"""Placement across several devices: problem files, the schedule checker, heuristics and the MILP.

The brute force here is written independently of the planners: every placement that fits the
memory caps, times every topological order with a plain non-delay simulation; the minimum over
both is the optimum (every semi-active schedule is the simulation of some topological order).
"""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import pytest

from tvm_partition.planners.heuristics import HEURISTICS, best_heuristic
from tvm_partition.planners.milp import solve_milp
from tvm_partition.planners.problem import Device, Problem, ProblemError
from tvm_partition.planners.schedule import check
from tvm_partition.planners.synthetic import dnn_like, random_dag


def brute_force(p: Problem) -> float:
    g = p.graph
    nodes = list(g)
    names = p.device_names
    best = math.inf
    orders = list(nx.all_topological_sorts(g))
    for combo in itertools.product(names, repeat=len(nodes)):
        place = dict(zip(nodes, combo))
        if any(place[v] not in g.nodes[v]["time_us"] for v in nodes):
            continue
        used = {d: 0.0 for d in names}
        for v in nodes:
            used[place[v]] += g.nodes[v]["mem_bytes"]
        if any(used[d] > p.capacity(d) for d in names):
            continue
        for order in orders:
            free = {d: 0.0 for d in names}
            end = {}
            for v in order:
                d = place[v]
                ready = max([end[u] + p.comm_time(g.edges[u, v]["bytes"], place[u], d) for u in g.predecessors(v)],
                            default=0.0)
                t = g.nodes[v]["time_us"][d]
                s = max(ready, free[d]) if t > 0 else ready
                end[v] = s + t
                if t > 0:
                    free[d] = end[v]
            best = min(best, max(end.values()))
    return best


def assert_valid(p: Problem, res) -> None:
    """Feasible, transfers (and so congestion, where the problem has it) included."""
    errs = check(p, res.placement, res.schedule, res.makespan_us, res.splits, res.transfers)
    assert not errs, errs[:3]


EXAMPLE = {
    "directed": True, "multigraph": False,
    "graph": {"devices": [{"name": "gpu0", "memory_bytes": 8e9}, {"name": "cpu0", "memory_bytes": 3.2e10}],
              "bandwidth_Bps": {"gpu0": {"cpu0": 1.2e10}, "cpu0": {"gpu0": 1.2e10}},
              "latency_us": {"gpu0": {"cpu0": 10.0}, "cpu0": {"gpu0": 10.0}}},
    "nodes": [{"id": "conv1", "time_us": {"gpu0": 12.5, "cpu0": 80.0}, "mem_bytes": 1048576},
              {"id": "relu1", "time_us": {"gpu0": 2.0, "cpu0": 3.0}, "mem_bytes": 1048576}],
    "links": [{"source": "conv1", "target": "relu1", "bytes": 4096}],
}


def _example(**changes) -> dict:
    d = json.loads(json.dumps(EXAMPLE))
    for path, value in changes.items():
        target = d
        *keys, last = path.split(".")
        for k in keys:
            target = target[int(k)] if k.isdigit() else target[k]
        target[int(last) if last.isdigit() else last] = value
    return d


def test_problem_round_trips_and_solves():
    p = Problem.from_json(EXAMPLE)
    again = Problem.from_json(json.loads(json.dumps(p.to_json())))
    assert sorted(again.graph.edges) == sorted(p.graph.edges)
    res = solve_milp(p, time_limit=5)
    assert res.placement == {"conv1": "gpu0", "relu1": "gpu0"}
    assert res.makespan_us == pytest.approx(14.5)
    assert_valid(p, res)


@pytest.mark.parametrize("change, message", [
    ({"nodes.0.time_us": {"tpu": 1.0}}, "unknown device 'tpu'"),
    ({"nodes.0.time_us": {}}, "fits on no device"),
    ({"links": [{"source": "conv1", "target": "relu1"}, {"source": "relu1", "target": "conv1"}]}, "cycle"),
    ({"links": [{"source": "conv1", "target": "nope"}]}, "not a node"),
    ({"nodes.0.mem_bytes": 4e10}, "more than the memory"),
    ({"graph.devices": [{"name": "gpu0", "memory_bytes": 1.5e6}, {"name": "cpu0", "memory_bytes": 1.5e6}],
      "nodes.1.mem_bytes": 1.4e6, "nodes.0.mem_bytes": 1.4e6, "nodes.1.time_us": {"gpu0": 1.0}}, None),
    ({"graph.devices": [{"name": "gpu0", "memory_bytes": 1e6}, {"name": "cpu0", "memory_bytes": 5e5}],
      "nodes.0.mem_bytes": 9e5, "nodes.1.mem_bytes": 9e5}, "infeasible memory"),
    ({"graph.latency_us": {"gpu0": {"npu": 1.0}}}, "unknown device 'npu'"),
    ({"nodes.0.time_us": {"gpu0": -1}}, "non-negative"),
])
def test_bad_problems_say_what_is_wrong(change, message):
    if message is None:  # feasible: each node alone on a device
        p = Problem.from_json(_example(**change))
        res = solve_milp(p, time_limit=2)
        assert res.placement["relu1"] == "gpu0" and res.placement["conv1"] == "cpu0"
        assert_valid(p, res)
        return
    with pytest.raises(ProblemError, match=message):
        Problem.from_json(_example(**change))


def test_memory_too_small_for_every_placement_is_reported():
    # each node fits somewhere, the total fits, but no assignment does (bin packing)
    d = _example(**{"graph.devices": [{"name": "gpu0", "memory_bytes": 10}, {"name": "cpu0", "memory_bytes": 10}]})
    d["nodes"] = [{"id": f"n{i}", "time_us": {"gpu0": 1, "cpu0": 1}, "mem_bytes": 6} for i in range(3)]
    d["links"] = []
    with pytest.raises(ProblemError, match="infeasible memory"):
        best_heuristic(Problem.from_json(d))


def test_multi_hop_takes_the_bottleneck_bandwidth():
    devs = [Device("a"), Device("b"), Device("c")]
    g = nx.DiGraph()
    p = Problem(g, devs, {"a": {"b": 10e6}, "b": {"c": 5e6}}, {"a": {"b": 1.0}, "b": {"c": 2.0}})
    assert p.comm_time(100, "a", "c") == pytest.approx(3.0 + 100 / 5.0)  # MOIRAI Sec. III-C example, in us
    assert p.comm_time(100, "a", "b") == pytest.approx(1.0 + 10.0)
    assert math.isinf(p.comm_time(100, "c", "a"))


def test_checker_catches_each_kind_of_violation():
    p = Problem.from_json(EXAMPLE)
    place = {"conv1": "gpu0", "relu1": "cpu0"}
    ok = {"conv1": (0.0, 12.5), "relu1": (12.5 + 10 + 4096 / 1.2e4, 25.5 + 4096 / 1.2e4)}  # 1.2e10 B/s
    assert check(p, place, ok) == []
    assert any("before its input" in e for e in check(p, place, {**ok, "relu1": (12.5, 15.5)}))
    assert any("takes" in e for e in check(p, place, {**ok, "conv1": (0.0, 10.0)}))
    same = {"conv1": "gpu0", "relu1": "gpu0"}
    assert any("overlap" in e for e in check(p, same, {"conv1": (0.0, 12.5), "relu1": (12.0, 14.0)}) if e)
    assert any("makespan" in e for e in check(p, place, ok, makespan=1.0))


@pytest.mark.parametrize("seed", range(6))
def test_milp_equals_brute_force_optimum(seed):
    n, devices = (6, 2) if seed % 2 == 0 else (5, 3)
    p = random_dag(n, devices, seed=seed, p_edge=0.35)
    p.congestion = False  # this brute force lets transfers overlap (test_placement_congestion: serialised)
    opt = brute_force(p)
    res = solve_milp(p, time_limit=10)
    assert_valid(p, res)
    assert res.meta["status"] == "OPTIMAL"
    assert res.makespan_us == pytest.approx(opt)
    assert res.gap == pytest.approx(0.0, abs=1e-9)
    for name, fn in HEURISTICS.items():
        h = fn(p)
        assert_valid(p, h)
        assert h.makespan_us >= opt - 1e-9, name


@pytest.mark.parametrize("devices", [2, 4, 6])
def test_heuristics_and_milp_are_valid_on_dnn_like_graphs(devices):
    p = dnn_like(120, devices, seed=devices)
    warm = best_heuristic(p)
    for fn in HEURISTICS.values():
        assert_valid(p, fn(p))
    res = solve_milp(p, time_limit=3)
    assert_valid(p, res)
    assert res.makespan_us <= warm.makespan_us + 1e-9
    assert res.lower_bound_us <= res.makespan_us + 1e-9
    assert 0.0 <= res.gap < 1.0


def test_node_restricted_to_some_devices_stays_there():
    p = random_dag(8, 3, seed=3)
    for v in list(p.graph)[:4]:
        p.graph.nodes[v]["time_us"].pop("d0")
    for res in [fn(p) for fn in HEURISTICS.values()] + [solve_milp(p, time_limit=3)]:
        assert_valid(p, res)
        assert all(res.placement[v] != "d0" for v in list(p.graph)[:4])


def test_joint_split_is_chosen_when_it_pays_and_the_checker_enforces_it():
    d = _example(**{"nodes.0.time_us": {"gpu0": 100.0, "cpu0": 100.0}})
    d["nodes"][0]["splits"] = [{"devices": ["gpu0", "cpu0"], "ratios": [0.5, 0.5], "time_us": 55.0},
                               {"devices": ["cpu0", "gpu0"], "ratios": [0.25, 0.75], "time_us": 90.0}]
    p = Problem.from_json(d)
    res = solve_milp(p, time_limit=5)
    assert res.splits["conv1"]["ratios"] == (0.5, 0.5)
    assert res.makespan_us == pytest.approx(57.0)
    assert check(p, res.placement, res.schedule, res.makespan_us, res.splits) == []
    assert res.to_json()["splits"] == {"conv1": {"devices": ["gpu0", "cpu0"], "ratios": [0.5, 0.5]}}
    # a split occupies both devices: relu1 on cpu0 during it overlaps
    bad = dict(res.schedule, relu1=(10.0, 13.0))
    assert any("overlap" in e for e in check(p, {**res.placement, "relu1": "cpu0"}, bad, None, res.splits))
    with pytest.raises(ProblemError, match="ratios sum"):
        d["nodes"][0]["splits"][0]["ratios"] = [0.5, 0.6]
        Problem.from_json(d)


@pytest.mark.parametrize("seed", range(3))
def test_joint_split_never_worse_than_whole_placement(seed):
    import random

    p = random_dag(9, 3, seed=seed, p_edge=0.25)
    base = solve_milp(p, time_limit=3)
    r = random.Random(seed)
    for v in list(p.graph)[:4]:
        t = p.graph.nodes[v]["time_us"]
        p.graph.nodes[v]["splits"] = [{"devices": ("d0", "d1"), "ratios": (0.5, 0.5),
                                       "time_us": float(max(t["d0"], t["d1"]) // 2 + r.randint(0, 3))}]
    p.validate()
    joint = solve_milp(p, time_limit=3)
    assert check(p, joint.placement, joint.schedule, joint.makespan_us, joint.splits) == []
    assert joint.makespan_us <= base.makespan_us + 1e-9
