"""Stages from a placement plan: each plan device is one server (servers A and B of the suite's
local Ray cluster, tests/ray_cluster.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from helpers import SMALL, mlp_model
from tvm_partition.cli.compile import reference_outputs
from tvm_partition.cli.stages import StageError, compile_pipeline
from tvm_partition.runtime.cluster import RayPipeline

# the MLP's fused ops: dense+tanh, reshape (a view), dense, softmax
OPS = ["000_fused_matmul_add_tir_tanh", "001_reshape", "002_fused_matmul1_add1", "003_softmax"]


@pytest.fixture(scope="module")
def servers(ray_cluster):
    return ["A", "B"]


@pytest.fixture(scope="module")
def mlp():
    model = mlp_model()
    return model, reference_outputs(model)


def write_plan(path, ops: dict) -> str:
    from tvm_partition.devices import parse_devices

    plan = {"version": 1, "devices": [d.to_json() for d in parse_devices("cpu,cpu")], "ops": ops}
    path.write_text(json.dumps(plan))
    return str(path)


def on(device: str) -> dict:
    return {"kind": "on_device", "device": device}


def run_remote(out_dir, servers, inputs):
    return RayPipeline(str(out_dir), servers).run(inputs)


def test_first_half_on_server0_rest_on_server1(mlp, servers, tmp_path):
    model, expected = mlp
    plan = write_plan(tmp_path / "plan.json", {OPS[0]: on("cpu"), OPS[2]: on("cpu1"), OPS[3]: on("cpu1")})
    info = compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=plan)
    assert info["stages"] == 2 and info["stage_servers"] == [0, 1]
    spec = json.loads((tmp_path / "p" / "pipeline.json").read_text())
    assert spec["server_devices"] == ["cpu", "cpu1"] and spec["stage_servers"] == [0, 1]
    outs = run_remote(tmp_path / "p", servers, model.inputs)
    np.testing.assert_allclose(outs[0], expected[0], rtol=0, atol=1e-6)


def test_plan_returning_to_first_server(mlp, servers, ray_cluster, tmp_path, capsys):
    """cpu, cpu1, cpu: three stages, the first server holds two of them (an actor each)."""
    from tvm_partition.runtime.pipeline import main

    model, expected = mlp
    plan = write_plan(tmp_path / "plan.json", {OPS[0]: on("cpu"), OPS[2]: on("cpu1"), OPS[3]: on("cpu")})
    info = compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=plan)
    assert info["stage_servers"] == [0, 1, 0]
    np.savez(tmp_path / "in.npz", **model.inputs)
    assert main([str(tmp_path / "p"), "--ray", ray_cluster.address, "--servers", ",".join(servers), "--input",
                 str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz"), "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^servers={','.join(servers)}$", out, re.M), out
    assert re.search(r"^median_us=[0-9.]+ p90_us=[0-9.]+$", out, re.M), out
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["output0"], expected[0], rtol=0, atol=1e-6)


def test_split_decision_is_refused(mlp, tmp_path):
    model, _ = mlp
    split = {"kind": "split", "dim": 0, "ratios": [0.5, 0.5], "devices": ["cpu", "cpu1"]}
    plan = write_plan(tmp_path / "plan.json", {OPS[0]: on("cpu"), OPS[2]: split})
    with pytest.raises(StageError, match=r"op '002_fused_matmul1_add1' is split over \['cpu', 'cpu1'\]: stages "
                                         r"place whole ops"):
        compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=plan)


def test_heft_pipeline_from_the_cli_matches(servers, tmp_path, capsys):
    from tvm_partition import frontend
    from tvm_partition.cli.stages import main

    model = frontend.load("lstm", **SMALL["lstm"])
    assert main(["lstm", "--seq-len", "4", "--batch", "2", "--strategy", "heft", "--no-tuning",
                 "--out", str(tmp_path / "p")]) == 0
    assert "stage_servers" in capsys.readouterr().out
    spec = json.loads((tmp_path / "p" / "pipeline.json").read_text())
    assert spec["plan_strategy"] == "heft" and spec["servers"] == 2
    assert len(spec["stage_servers"]) == len(spec["artifacts"]) == len(spec["stage_io"])
    outs = run_remote(tmp_path / "p", servers, model.inputs)
    np.testing.assert_allclose(outs[0], reference_outputs(model)[0], rtol=0, atol=1e-5)


def test_tensor_handed_past_a_stage(servers, tmp_path):
    """LSTM: the input slices on cpu, the first gate matmul on cpu1, the rest on cpu again: the
    third stage needs slices from the first, handed to it straight from the object store."""
    from tvm_partition import frontend
    from tvm_partition.ir.graph import OpGraph

    model = frontend.load("lstm", **SMALL["lstm"])
    order = OpGraph(model.mod).topo_order()
    ops = {op: on("cpu1" if "matmul" in op and i == min(j for j, o in enumerate(order) if "matmul" in o) else "cpu")
           for i, op in enumerate(order)}
    info = compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=write_plan(tmp_path / "plan.json", ops))
    assert info["stage_servers"] == [0, 1, 0]
    io = json.loads((tmp_path / "p" / "pipeline.json").read_text())["stage_io"]
    assert set(io[0]["outputs"]) & set(io[2]["inputs"]), io  # from stage 0 straight to stage 2
    outs = run_remote(tmp_path / "p", servers, model.inputs)
    np.testing.assert_allclose(outs[0], reference_outputs(model)[0], rtol=0, atol=1e-5)


def test_gpu_device_is_refused(mlp, tmp_path):
    from tvm_partition.devices import parse_devices

    model, _ = mlp
    plan = {"version": 1, "devices": [d.to_json() for d in parse_devices("cpu,gpu")], "ops": {OPS[2]: on("gpu")}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(StageError, match=r"device 'gpu' is a gpu: stages are compiled for CPU servers only"):
        compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=str(tmp_path / "plan.json"))


@pytest.mark.parametrize("argv,pattern", [
    (["--plan", "{tmp}/nosuch.json"], r"placement plan: cannot read plan .*nosuch\.json"),
    (["--plan", "{tmp}/p.json", "--cut-after", "lv"], r"--plan and --cut-after both say where to cut"),
    (["--strategy", "heft", "--mode", "split"], r"--strategy is for --mode stages"),
    (["--plan", "{tmp}/p.json", "--servers", "3"], r"--plan decides the servers"),
    (["--ratios", "speed"], r"--ratios is for --mode split"),
    (["--mode", "split", "--ratios", "speed"], r"--ratios speed measures the servers: give --ray"),
    (["--mode", "split", "--ratios", "1,2,3"], r"--ratios gives 3 ratios for 2 servers"),
    (["--mode", "split", "--ratios", "fast"], r"--ratios 'fast': give equal, speed or numbers"),
    (["--mode", "split", "--ratios", "0,0"], r"not all 0"),
    (["--plan", "{tmp}/p.json", "--ray", "127.0.0.1:1"], r"--plan fixes the placement"),
    (["--ray", "127.0.0.1:1"], r"--ray measures servers for a --strategy placement"),
    (["--mode", "split", "--batch", "3"], r"batch 3 does not divide into 2 equal parts"),
])
def test_stages_cli_refuses_bad_plans_and_flags(tmp_path, capsys, argv, pattern):
    from tvm_partition.cli.stages import main

    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(["lstm", "--seq-len", "2", "--batch", "2", *argv, "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and re.search(pattern, err[0]), err
    assert not (tmp_path / "p").exists()  # nothing written


def test_restarted_server_keeps_both_its_stages(mlp, servers, tmp_path):
    """Server A holds stages 0 and 2 (in its one actor); the actor dies between requests: Ray
    restarts it on A, where it loads both stages again, and the next request is answered there,
    correctly."""
    import ray

    model, expected = mlp
    plan = write_plan(tmp_path / "plan.json", {OPS[0]: on("cpu"), OPS[2]: on("cpu1"), OPS[3]: on("cpu")})
    compile_pipeline(model, 2, "stages", str(tmp_path / "p"), plan_file=plan)
    # the restarted worker imports TVM inside A's one-core quota: seconds here
    pipe = RayPipeline(str(tmp_path / "p"), servers, retry_s=60)
    pipe.run(model.inputs)
    ray.kill(pipe.actors()[servers[0]], no_restart=False)
    outs = pipe.run(model.inputs)
    assert pipe.stage_server == [servers[0], servers[1], servers[0]] and not pipe.gone
    np.testing.assert_allclose(outs[0], expected[0], rtol=0, atol=1e-6)
