"""Dominator cuts, DP on chains, coarsening, and the place CLI."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from test_placement import EXAMPLE, assert_valid, brute_force
from tvm_partition.cli import place
from tvm_partition.planners.coarsen import coarsen, colocation_groups, parallel_pairs
from tvm_partition.planners.dominators import dominator_cuts, segments, solve_dominators
from tvm_partition.planners.dp import solve_dp
from tvm_partition.planners.heuristics import best_heuristic
from tvm_partition.planners.milp import solve_milp
from tvm_partition.planners.placement import STRATEGY_NAMES, solve
from tvm_partition.planners.problem import Device, Problem
from tvm_partition.planners.synthetic import dnn_like


def _problem(edges, times=None, devices=("a", "b"), mem=None, cap=None, nbytes=100.0) -> Problem:
    g = nx.DiGraph()
    nodes = sorted({x for e in edges for x in e}, key=str)
    for i, v in enumerate(nodes):
        t = (times or {}).get(v, {d: float(3 + (i * 7 + k * 5) % 11) for k, d in enumerate(devices)})
        g.add_node(v, time_us=t, mem_bytes=(mem or {}).get(v, 1.0))
    g.add_edges_from(edges, bytes=nbytes)
    bw = {a: {b: 5e7 for b in devices if b != a} for a in devices}  # 50 bytes per us
    lat = {a: {b: 1.0 for b in devices if b != a} for a in devices}
    return Problem(g, [Device(d, cap or 1e9) for d in devices], bw, lat)


def _is_dominator(g: nx.DiGraph, v) -> bool:
    """Brute force: removing v disconnects every source from every sink."""
    h = g.copy()
    h.remove_node(v)
    sources = [s for s in g if g.in_degree(s) == 0 and s != v]
    sinks = [t for t in g if g.out_degree(t) == 0 and t != v]
    return all(not nx.has_path(h, s, t) for s in sources for t in sinks)


DIAMONDS = [("in", "a1"), ("in", "a2"), ("a1", "j1"), ("a2", "j1"), ("j1", "b1"), ("b1", "b2"), ("j1", "b3"),
            ("b2", "j2"), ("b3", "j2"), ("j2", "out")]


def test_dominator_cuts_on_branches_match_brute_force():
    p = _problem(DIAMONDS)
    cuts = dominator_cuts(p.graph)
    assert cuts == ["in", "j1", "j2", "out"]
    assert set(cuts) == {v for v in p.graph if _is_dominator(p.graph, v)}
    segs = segments(p)
    assert [s[-1] for s in segs] == cuts
    assert sorted(v for s in segs for v in s) == sorted(p.graph)
    # only the previous dominator feeds a segment
    where = {v: k for k, s in enumerate(segs) for v in s}
    for u, v in p.graph.edges:
        assert where[u] == where[v] or (where[v] == where[u] + 1 and u == cuts[where[u]])


def test_dominators_with_two_inputs_and_two_outputs():
    p = _problem([("x", "m"), ("y", "m"), ("m", "p"), ("p", "o1"), ("p", "o2")])
    assert dominator_cuts(p.graph) == ["m", "p"]


@pytest.mark.parametrize("seed", range(3))
def test_dominator_decomposition_is_valid_and_carries_state(seed):
    p = dnn_like(90, 3, seed=seed)
    res = solve_dominators(p, time_limit=4, max_nodes=25)
    assert_valid(p, res)
    assert res.meta["submodels"] > 2
    assert res.makespan_us <= best_heuristic(p).makespan_us + 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_dp_equals_exhaustive_search_on_chains(seed):
    import random

    r = random.Random(seed)
    chain = [(f"l{i}", f"l{i + 1}") for i in range(6)]
    devices = ("a", "b", "c") if seed % 2 else ("a", "b")
    times = {f"l{i}": {d: float(r.randint(1, 30)) for d in devices} for i in range(7)}
    mem = {f"l{i}": float(r.randint(1, 10)) for i in range(7)}
    p = _problem(chain, times, devices, mem=mem, cap=25.0 if seed % 2 else 40.0, nbytes=float(r.randint(10, 200)))
    res = solve_dp(p)
    assert_valid(p, res)
    assert res.makespan_us == pytest.approx(brute_force(p))


def test_dp_is_valid_on_branching_graphs():
    p = dnn_like(150, 4, seed=5)
    res = solve_dp(p)
    assert_valid(p, res)
    assert res.meta["units"] == len(segments(p))


def test_coarsening_follows_quickp_rules_and_keeps_a_dag():
    p = dnn_like(300, 3, seed=2)
    c = coarsen(p)
    assert c.report["nodes_after"] < c.report["nodes_before"]
    assert nx.is_directed_acyclic_graph(c.problem.graph)
    assert sorted(v for vs in c.members.values() for v in vs) == sorted(p.graph)
    for rep, vs in c.members.items():  # a merged node runs its members one after another
        for d, t in c.problem.graph.nodes[rep]["time_us"].items():
            assert t == pytest.approx(sum(p.time(v, d) for v in vs))
    assert c.report["parallel_pairs_after"] <= c.report["parallel_pairs_before"]
    # a coarse placement expands to a valid fine one
    res = solve_milp(c.problem, time_limit=2)
    fine = solve(p, "milp", time_limit=3, coarsen_above=100, large="coarsen")
    assert set(c.expand(res.placement)) == set(p.graph)
    assert_valid(p, fine)
    assert fine.meta["large"] == "coarsen"


def test_fusion_never_merges_a_fork_into_a_join():
    # a -> {b, c} -> d: (a, b) has outdeg(a) = 2 and indeg(b) = 1: b may fuse into a, but no edge into
    # d (indeg 2) from a node with outdeg 2 is merged
    times = {v: {"a": 1.0, "b": 1.0} for v in "abcd"}
    p = _problem([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], times)
    assert parallel_pairs(p.graph) == 1
    c = coarsen(p)
    assert nx.is_directed_acyclic_graph(c.problem.graph)


def test_colocation_groups_tie_forks_to_their_critical_successor():
    times = {"s": {"a": 1.0, "b": 1.0}, "x": {"a": 50.0, "b": 50.0}, "y": {"a": 1.0, "b": 1.0},
             "t": {"a": 1.0, "b": 1.0}}
    p = _problem([("s", "x"), ("s", "y"), ("x", "t"), ("y", "t")], times)
    assert colocation_groups(p) == [["s", "x"]]
    res = solve_milp(p, time_limit=2, colocate=colocation_groups(p))
    assert res.placement["s"] == res.placement["x"]
    assert_valid(p, res)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_place_cli_writes_a_feasible_result(tmp_path, strategy, capsys):
    prob = dnn_like(40, 3, seed=1)
    path = tmp_path / "p.json"
    prob.save(path)
    out = tmp_path / "r.json"
    assert place.main([str(path), "--strategy", strategy, "--time-limit", "2", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert set(r) >= {"strategy", "makespan_us", "lower_bound_us", "gap", "solve_s", "placement", "schedule"}
    assert r["strategy"] == strategy
    loaded = Problem.load(path)
    sched = {k: tuple(v) for k, v in r["schedule"].items()}
    from tvm_partition.planners.schedule import check

    assert check(loaded, r["placement"], sched, r["makespan_us"]) == []
    assert r["makespan_us"] == pytest.approx(max(e for _, e in sched.values()))


def test_place_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    bad = json.loads(json.dumps(EXAMPLE))
    bad["nodes"][0]["time_us"] = {"tpu": 1.0}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert place.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "unknown device 'tpu'" in err and "Traceback" not in err
    path.write_text("{not json")
    assert place.main([str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert place.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_milp_on_a_large_graph_is_never_worse_than_its_warm_start():
    from tvm_partition.planners.dp import solve_dp
    from tvm_partition.planners.heuristics import HEURISTICS

    p = dnn_like(500, 4, seed=7)
    res = solve(p, "milp", time_limit=4, coarsen_above=150)
    assert_valid(p, res)
    assert set(res.meta["tried"]) == {"coarsen", "decompose"}
    others = [fn(p).makespan_us for fn in HEURISTICS.values()] + [solve_dp(p).makespan_us]
    assert res.makespan_us <= min(others) + 1e-9
    assert res.solve_s < 2 * 4  # the time limit (measured 3.9 s), with room for a loaded CI machine


def test_published_tarnawski_format_converts():
    from tvm_partition.planners.convert import from_tarnawski

    d = {"maxSizePerFPGA": 100.0, "maxFPGAs": 2, "maxCPUs": 8,
         "nodes": [{"id": 0, "supportedOnFpga": True, "cpuLatency": 0, "fpgaLatency": 0, "size": 50.0},
                   {"id": 1, "supportedOnFpga": True, "cpuLatency": 9.0, "fpgaLatency": 1.0, "size": 60.0},
                   {"id": 2, "supportedOnFpga": False, "cpuLatency": 2.0, "fpgaLatency": 0.5, "size": 0.0}],
         "edges": [{"sourceId": 0, "destId": 1, "cost": 0.5}, {"sourceId": 1, "destId": 2, "cost": 3.0}]}
    p = from_tarnawski(d)
    assert p.device_names == ["cpu", "acc0", "acc1"]
    assert p.allowed("2") == ["cpu"]
    assert p.comm_time(p.edge_bytes("1", "2"), "acc0", "cpu") == 3.0
    res = solve(p, "milp", time_limit=2)
    assert_valid(p, res)
    # 0 and 1 together exceed an accelerator's memory: 0.5 (move) + 1 (acc) + 3 (back) + 2 (cpu)
    assert res.makespan_us == 6.5 and res.placement["1"].startswith("acc")


@pytest.mark.parametrize("limit", [1.5, 4.0])
def test_the_time_limit_bounds_warm_starts_coarsening_and_decomposition(limit):
    """Issue 21 item 6: the whole solve, not only CP-SAT, ends within the limit. Before, on this
    graph's kind (10,000 nodes), a 1 s budget took 4.1 s: the DP warm start alone 1.7 s, then a
    coarse decomposition and per-submodel heuristics. With ``spent`` (what the command used before
    the solve) the limit counts from the command's start."""
    import time

    p = dnn_like(6000, 6, seed=11)
    t0 = time.perf_counter()
    res = solve(p, "milp", time_limit=limit + 0.5, spent=0.5)
    took = time.perf_counter() - t0
    assert_valid(p, res)
    # 0.8 s: a loaded machine (a clean clone's suite, 2026-11-28: 2.16 s for the 1.5 s limit, the
    # other worker compiling); the bug this guards against overran by ~3 s
    assert took <= limit * 1.05 + 0.8, f"{took:.2f} s for a {limit} s limit"
    assert res.makespan_us <= best_heuristic(p).makespan_us + 1e-9  # never worse than its warm start
