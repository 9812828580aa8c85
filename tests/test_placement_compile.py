"""Placement plans on zoo models: built through the same ApplyPlan, numerically equal to the
unpartitioned model on CPU devices; --export-problem / --topology on the compile CLI."""

from __future__ import annotations

import json

import pytest

from helpers import SMALL, mlp_model
from tvm_partition.cli import compile as compile_cli
from tvm_partition import frontend
from tvm_partition.cli.compile import check, compile_model
from tvm_partition.devices import parse_devices
from tvm_partition.plan import OnDevice
from tvm_partition.planners.placement import solve
from tvm_partition.planners.problem import Problem
from tvm_partition.planners.schedule import check as check_schedule


def test_milp_plan_for_lstm_compiles_and_matches_on_cpu_cpu():
    model = frontend.load("lstm", **SMALL["lstm"])
    compiled = compile_model(model, parse_devices("cpu,cpu"), "milp", time_limit=3)
    plan = compiled.plan
    assert all(isinstance(d, OnDevice) for d in plan.ops.values())
    assert not any(compiled.graph.ops[k].is_view for k in plan.ops)
    assert {d.device for d in plan.ops.values()} == {"cpu", "cpu1"}, "the LSTM's layers pipeline over both"
    # the placement's own makespan is kept; predicted_latency_us is the VM list schedule, on which
    # two CPU devices share one thread, so it is at least the placement's (parallel CPUs) makespan
    assert 0 < plan.meta["placement"]["makespan_us"] <= plan.predicted_latency_us + 1e-6
    err, tol = check(compiled)
    assert err <= tol, f"max_abs_err={err} > {tol}"


def test_compile_cli_three_devices_topology_and_export(tmp_path, capsys):
    topo = {"devices": [{"name": "cpu", "memory_bytes": 1e9}, {"name": "cpu1", "memory_bytes": 1e9},
                        {"name": "cpu2", "memory_bytes": 1e9}],
            "bandwidth_Bps": {"cpu": {"cpu1": 1e11, "cpu2": 1e11}, "cpu1": {"cpu": 1e11, "cpu2": 1e11},
                              "cpu2": {"cpu": 1e11, "cpu1": 1e11}},
            "latency_us": {}}
    tpath, ppath = tmp_path / "topo.json", tmp_path / "problem.json"
    tpath.write_text(json.dumps(topo))
    rc = compile_cli.main(["lstm", "--seq-len", "4", "--batch", "2", "--devices", "cpu,cpu,cpu", "--no-tuning",
                           "--strategy", "msct", "--topology", str(tpath), "--export-problem", str(ppath), "--check"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "max_abs_err=" in out
    problem = Problem.load(ppath)
    assert problem.device_names == ["cpu", "cpu1", "cpu2"]
    assert problem.comm_time(1e5, "cpu", "cpu2") == pytest.approx(1.0)  # 1e5 B at 1e11 B/s: 1 us, no latency
    res = solve(problem, "milp", time_limit=2)
    assert check_schedule(problem, res.placement, res.schedule, res.makespan_us) == []


def test_compile_cli_rejects_a_topology_naming_other_devices(tmp_path, capsys):
    tpath = tmp_path / "topo.json"
    tpath.write_text(json.dumps({"devices": [{"name": "gpu7", "memory_bytes": 1e9}]}))
    rc = compile_cli.main(["lstm", "--seq-len", "2", "--devices", "cpu,cpu", "--no-tuning", "--strategy", "heft",
                           "--topology", str(tpath)])
    err = capsys.readouterr().err
    assert rc == 2 and "gpu7" in err and "Traceback" not in err


def test_joint_split_and_placement_plan_compiles_and_matches():
    from tvm_partition.plan import Split

    from tvm_partition.cost_models import AnalyticCostModel, DeviceRoofline

    model = mlp_model(batch=64, d_in=256, d_hidden=1024, d_out=16)  # a chain: only splits use both CPUs
    # two CPUs that run at once over a cheap link, whatever this machine's profile says of its own
    # two virtual CPUs (one thread runs both: no split gains there, and a profiled model knows it)
    equal = DeviceRoofline(100.0, 20.0, 0.1)
    cost = AnalyticCostModel({"cpu": equal, "cpu1": equal}, default_link=(50.0, 0.2))
    compiled = compile_model(model, parse_devices("cpu,cpu"), "milp", time_limit=3, split_ratios=(0.25, 0.5, 0.75),
                             cost_model=cost)
    kinds = {type(d) for d in compiled.plan.ops.values()}
    assert Split in kinds, "two equal CPUs: the MILP splits the big matmul"
    err, tol = check(compiled)
    assert err <= tol, f"max_abs_err={err} > {tol}"
