"""python -m tvm_partition bench: rows, resume, error rows, the BENCHMARKS.md section, bundles.

Tiny shapes (lstm, seq 4, batch 2) on ``cpu,cpu``; the runs are in process (``bench.main``), the
bundle's runner in a child Python with the runtime-only TVM, as on a machine without a compiler.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from rpc_servers import REPO
from tvm_partition.bench import suite as bench
from tvm_partition.bench.results import FIELDS, ms_cell

LSTM = ["--models", "lstm", "--seq-len", "4", "--batch", "2", "--repeat", "3"]
SCHEMA = {"model", "config", "devices", "strategy", "measured_median_us", "measured_p90_us", "predicted_us",
          "plan_s", "compile_s", "device_names", "ideal_us"}


def run_bench(*argv) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``bench.main(argv)`` (progress goes to stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = bench.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def rows_of(folder) -> list[dict]:
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "res"
    rc, text, err = run_bench(*LSTM, "--strategies", "cpu,equal,tvm-cpu", "--out", out)
    assert rc == 0, err
    return out, text


def test_rows_have_the_schema_and_measured_times(measured):
    out, text = measured
    rows = rows_of(out)
    assert [r["strategy"] for r in rows] == ["cpu", "equal", "tvm-cpu"]
    from tvm_partition.bench import results
    from tvm_partition.devices import fingerprint_id, hardware_fingerprint

    cpu_name = hardware_fingerprint()["cpu"]
    for r in rows:
        assert SCHEMA <= set(r) and "error" not in r, r
        assert r["machine"] == fingerprint_id()  # with the CPU's -mcpu, which the measuring child cannot ask
        assert r["model"] == "lstm" and r["devices"] == "cpu,cpu"
        assert r["config"] == {"batch": 2, "seq_len": 4, "layers": 2}
        assert 0 < r["measured_median_us"] <= r["measured_p90_us"]
        assert r["compile_s"] > 0 and r["ideal_us"] is None and r["repeat"] >= 3  # more where 3 last < BLOCK_MIN_S
        tuned, kernels = map(int, r["tuned_kernels"].split("/"))
        moved, all_kernels = map(int, r["transferred_kernels"].split("/"))
        assert 0 <= tuned + moved <= kernels == all_kernels and kernels > 0
        assert 0 <= r["default_compute_kernels"] <= kernels - tuned - moved
        assert r["command"].startswith("python -m tvm_partition bench --models lstm")
    cpu, equal, ref = rows
    assert cpu["predicted_us"] > 0 and equal["predicted_us"] > 0 and cpu["plan_s"] >= 0
    assert cpu["device_names"] == [cpu_name, cpu_name]
    assert ref["predicted_us"] is None and ref["plan_s"] is None and ref["device_names"] == [cpu_name]
    with open(out / "results.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == FIELDS
    assert [(t["strategy"], float(t["measured_median_us"])) for t in table] == \
        [(r["strategy"], r["measured_median_us"]) for r in rows]
    with zipfile.ZipFile(out / results.PLANS_ZIP) as z:
        assert sorted(z.namelist()) == sorted(f"lstm-batch2-layers2-seq_len4-cpu_cpu-{s}.json"
                                              for s in ("cpu", "equal", "tvm-cpu"))
        assert json.loads(z.read(f"{results.row_id(equal)}.json"))["strategy"] == "equal"
    assert not os.path.exists(out / "plans")
    # the summary: one table, speedups over the cpu row (the only single-device row here)
    assert "lstm (batch=2 layers=2 seq_len=4) on cpu,cpu" in text and "speedup" in text
    speedup = cpu["measured_median_us"] / equal["measured_median_us"]
    assert f"{speedup:.2f}x" in text and "1.00x" in text
    # and how many rows held their predictions, against their medians and their cpu row's ratio
    def held(r):
        return abs(r["predicted_us"] / r["measured_median_us"] - 1) <= 0.1

    ratio = (equal["predicted_us"] / cpu["predicted_us"]) / (equal["measured_median_us"] / cpu["measured_median_us"])
    assert (f"predicted within 10%: {held(cpu) + held(equal)} of 2 rows; within "
            f"10% of their cpu row's ratio: {int(abs(ratio - 1) <= 0.1)} of 1\n") in text


def test_rerun_skips_measured_rows_and_force_measures_again(measured, tmp_path):
    src, _ = measured
    out = tmp_path / "res"
    shutil.copytree(src, out)
    rows = rows_of(out)
    rows[0]["measured_median_us"] = 1e9  # a sentinel no measurement gives
    (out / "results.json").write_text(json.dumps(rows))
    rc, _, err = run_bench(*LSTM, "--strategies", "cpu,equal", "--out", out)
    assert rc == 0 and err.count("done before, skipped") == 2
    assert rows_of(out) == rows
    rc, _, _ = run_bench(*LSTM, "--strategies", "cpu", "--out", out, "--force")
    after = rows_of(out)
    assert rc == 0 and len(after) == 3
    assert 0 < after[0]["measured_median_us"] < 1e9
    assert after[1:] == rows[1:]


def test_a_failing_strategy_is_an_error_row(measured, tmp_path, monkeypatch):
    from tvm_partition import planners

    def boom(graph, devices, cost_model=None):
        raise RuntimeError("planner exploded")

    monkeypatch.setitem(planners.STRATEGIES, "boom", boom)
    src, _ = measured
    out = tmp_path / "res"
    shutil.copytree(src, out)
    rc, text, _ = run_bench(*LSTM, "--strategies", "boom,cpu", "--out", out)
    assert rc == 1  # the run went on and says that a row failed
    rows = {r["strategy"]: r for r in rows_of(out)}
    assert "planner exploded" in rows["boom"]["error"] and rows["boom"]["measured_median_us"] is None
    assert rows["cpu"] == rows_of(src)[0]  # measured before: skipped, untouched
    assert "error: RuntimeError: planner exploded" in text


def test_update_benchmarks_writes_the_table_between_markers(measured, tmp_path):
    out, _ = measured
    md = tmp_path / "BENCHMARKS.md"
    original = open(os.path.join(REPO, "BENCHMARKS.md"), encoding="utf-8").read()
    from tvm_partition.bench.report import BEGIN, BEFORE, END, SECTION

    for marker in (BEGIN, END, SECTION):  # a copy without the section, whatever the repository's has now
        assert original.count(marker) <= 1
    if SECTION in original:
        original = original[:original.index(SECTION)] + original[original.index(END) + len(END):].lstrip("\n")
    md.write_text(original)
    rc, _, _ = run_bench("--update-benchmarks", "--benchmarks", md, "--out", out)
    assert rc == 0
    text = md.read_text()
    at = original.index(BEFORE)
    assert text.startswith(original[:at] + SECTION) and text.endswith(original[at:])
    generated = text[text.index(BEGIN):text.index(END)]
    assert text.index(END) < text.index(BEFORE)
    for r in rows_of(out):
        assert f"| lstm | batch=2 layers=2 seq_len=4 | {r['strategy']} | {ms_cell(r['measured_median_us'])} |" \
            in generated
    assert "python -m tvm_partition bench --models lstm" in generated
    assert (out / "bench-cpu_cpu.png").exists() and "bench-cpu_cpu.png)" in generated
    from tvm_partition.bench.suite import results_folders

    for folder in results_folders():  # the machines' tables in the repository stay beside --out's
        assert f"`{os.path.relpath(os.path.join(folder, 'results.json'), tmp_path)}`" in generated, folder
    rc, _, _ = run_bench("--update-benchmarks", "--benchmarks", md, "--out", out)
    assert rc == 0 and md.read_text() == text  # regenerating changes nothing


def test_bundle_measured_by_the_runtime_only_runner_and_imported(tmp_path):
    bundle, res = tmp_path / "bundle", tmp_path / "res"
    rc, _, err = run_bench(*LSTM, "--strategies", "cpu,equal", "--export-bundle", bundle, "--out", res)
    assert rc == 0, err
    assert not (res / "results.json").exists()  # nothing measured here
    spec = json.loads((bundle / "bench.json").read_text())
    assert [r["strategy"] for r in spec["rows"]] == ["cpu", "equal"]
    a, b = (os.stat(bundle / r["artifact"] / "params.npz") for r in spec["rows"])
    assert a.st_ino == b.st_ino  # the same weights once
    env = {"TVM_USE_RUNTIME_LIB": "1", "PATH": os.environ.get("PATH", "")}
    # -I: neither the checkout nor this environment's PYTHONPATH; the bundle brings tvm_partition's runtime half
    proc = subprocess.run([sys.executable, "-I", str(bundle / "run_bench.py"), "--repeat", "2"], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    there = json.loads((bundle / "results.json").read_text())
    assert [m["id"] for m in there] == [r["id"] for r in spec["rows"]]
    assert all(m["measured_median_us"] > 0 and "predicted_us" not in m for m in there)
    # the runtime-only TVM there cannot name the CPU's microarchitecture: the bundle's -mcpu does
    from tvm_partition.devices import fingerprint_id

    assert all(m["machine"] == fingerprint_id() for m in there)
    rc, text, err = run_bench("--import", bundle, "--out", res)
    assert rc == 0 and "imported 2 rows" in text, err
    rows = rows_of(res)
    for row, m, exported in zip(rows, there, spec["rows"]):
        assert SCHEMA <= set(row) and "artifact" not in row and "id" not in row
        assert row["measured_median_us"] == m["measured_median_us"]
        assert row["predicted_us"] == exported["predicted_us"] > 0
        assert row["plan_s"] == exported["plan_s"] and row["compile_s"] == exported["compile_s"] > 0


def test_split_ops_measure_key_ops_alone_against_the_ideal_bound(tmp_path):
    from tvm_partition import frontend

    out = tmp_path / "res"
    out.mkdir()
    config = {k: v for k, v in frontend.load("lstm", seq_len=4, batch=2).config.items()
              if k in frontend.MODEL_OPTIONS}
    # op rows an earlier run selected: of this setting (retired by the run's selection) and of another
    old = {"strategy": "split", "devices": "cpu,cpu", "op": {}, "measured_median_us": 1.0}
    other = dict(old, model="lstm/fused_other", config=dict(config, batch=8))
    with open(out / "results.json", "w", encoding="utf-8") as f:
        json.dump([dict(old, model="lstm/fused_retired", config=config), other], f)
    rc, text, err = run_bench(*LSTM, "--strategies", "cpu,gpu", "--split-ops", "1", "--out", out)
    assert rc == 0, err
    rows = rows_of(out)
    assert rows[0]["model"] == "lstm/fused_other" and not any(r["model"] == "lstm/fused_retired" for r in rows)
    rows = rows[1:]
    assert [r["strategy"] for r in rows] == ["cpu", "gpu", "cpu", "gpu", "split"]
    ops = rows[2:]
    assert all(r["model"].startswith("lstm/fused_") and r["model"] == ops[0]["model"] for r in ops)
    assert all(r["op"] == ops[0]["op"] for r in ops) and 0 < ops[0]["op"]["gpu_ratio"] < 1
    assert all(r["measured_median_us"] > 0 and "error" not in r for r in rows), rows
    for group in (rows[:2], ops):  # 1 / (1/t_cpu + 1/t_gpu) of the group's measured medians
        t_cpu, t_gpu = (r["measured_median_us"] for r in group[:2])
        assert all(r["ideal_us"] == pytest.approx(1 / (1 / t_cpu + 1 / t_gpu), abs=0.1) for r in group)
    assert "of ideal" in text and "split (" in text


def test_a_selection_of_op_rows_retires_the_others_of_its_setting_only():
    from tvm_partition.bench.results import retire_ops

    def row(model, devices="cpu,cpu", batch=1, op=True):
        return {"model": model, "config": {"batch": batch}, "devices": devices, "strategy": "split",
                **({"op": {}} if op else {})}

    rows = [row("m", op=False), row("m/a"), row("m/b"), row("m/b", devices="cpu,gpu"), row("m/c", batch=2), row("n/a"),
            row("m/x", op=False)]
    kept = retire_ops(rows, [row("m/a")])
    assert kept == [row("m", op=False), row("m/a"), row("m/b", devices="cpu,gpu"), row("m/c", batch=2), row("n/a"),
                    row("m/x", op=False)]
    assert retire_ops(rows, []) == rows


def test_an_op_row_runs_its_kernel_on_the_schedule_the_model_gave_it(monkeypatch, tmp_path):
    """BERT-tiny's FFN output matmul (K=512) opened afresh takes the shipped record of its own
    shape; the model's build gives it the schedule of the attention output matmul (K=128), one axis
    apart, that it scheduled first (672 against 1,179 us on znver5). The op row must run the
    model's kernel, which the profile timed (the row was predicted -41%). Matmuls take a template
    since transfer rules 20, the same for both; replayed records (the template off) still differ."""
    from tvm_partition import frontend
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition.build import templates
    from tvm_partition.build.databases import local_database
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph

    monkeypatch.setattr(templates.matmul, "_matmul_plan", lambda kmod, target, fallback=False: None)

    # a machine with no database of its own (CI's): on the znver3 machine, whose database has a
    # record of the kernel's own shape, the op alone and in the model both run that record
    devices, db = parse_devices("cpu,cpu"), local_database(str(tmp_path))
    model = frontend.load("bert-tiny", batch=16, seq_len=128, layers=2)
    graph = OpGraph(model.mod)
    op = next(v for v, o in graph.ops.items() if o.fused_name == "fused_matmul4_add1_add2")
    wanted = compile_model(model, devices, "cpu", tuning_db=db).kernel_schedules["fused_matmul4_llvm_add1_llvm_add2_llvm"]
    op_model = bench_ops.op_model(model, graph, op)
    (alone,) = compile_model(op_model, devices, "cpu", tuning_db=db).kernel_schedules.values()
    shared = bench.model_schedules(model, devices, db)
    (row,) = compile_model(op_model, devices, "cpu", tuning_db=db, schedules=shared).kernel_schedules.values()
    assert alone != wanted and row == wanted


def test_an_op_model_split_matches_the_op_whole():
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition import frontend
    from tvm_partition.cli.compile import check, compile_model
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.build.tuning import DEFAULT_LOGS

    model = frontend.load("bert-tiny", batch=2, seq_len=8, layers=1)
    graph = OpGraph(model.mod)
    devices = parse_devices("cpu,cpu")
    # the shipped profile of the build machine, whatever machine runs the test: its heaviest op is a matmul
    cm = default_cost_model(devices, os.path.join(DEFAULT_LOGS, "amd-epyc-znver3-2c"))[0]
    [(op_id, split)] = bench_ops.heaviest_key_ops(graph, devices, cm, 1)
    om = bench_ops.op_model(model, graph, op_id)
    op = graph.ops[op_id]
    og = OpGraph(om.mod)
    alone = og.ops[bench_ops.main_op(og)]
    assert alone.fused_name != op.fused_name  # TVM numbers kernels by module: the profile's key differs
    priced = bench_ops.as_parent(cm, graph, op_id, og)
    assert priced.estimate(alone, "cpu") == cm.estimate(op, "cpu")
    assert priced.op_time(alone, "cpu", op.output_shapes[-1]) == cm.op_time(op, "cpu", op.output_shapes[-1])
    assert om.name == f"bert-tiny/{op.fused_name}" and om.output_info()[0]["shape"] == list(op.output_shapes[-1])
    weights = {id(p): i for i, p in enumerate(model.params)}
    assert om.params and all(id(p) in weights for p in om.params)  # the model's own weights, not random ones
    compiled = compile_model(om, devices, plan_file=bench_ops.split_plan(OpGraph(om.mod), devices, split))
    assert sum(1 for d in compiled.plan.ops.values() if getattr(d, "ratios", None)) == 1
    max_err, tol = check(compiled)
    assert max_err <= tol


def test_an_op_model_measured_in_the_vm_is_priced_at_its_reading_through_its_parents_samples(tmp_path):
    """An op row's op model was run in the VM by profile (a context of its own graph: 1.1x its
    time alone, 50 us); its op's samples are keyed by the model's op (TVM names the kernel by
    module, and the name alone is another kernel's: sampled at 200 us). Priced as its parent, it
    is priced at what its context read: 1.1 x 50 us."""
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition import frontend
    from tvm_partition.cost_models import ROOFLINE, AnalyticCostModel
    from tvm_partition.cost_models.logs import ProfileLog
    from tvm_partition.cost_models.profiled import ProfiledCostModel
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph, graph_signature, op_signature

    model = frontend.load("bert-tiny", batch=2, seq_len=8, layers=1)
    graph = OpGraph(model.mod)
    op_id = max((v for v, o in graph.ops.items() if o.kind == "matmul"), key=lambda v: graph.ops[v].flops)
    op = graph.ops[op_id]
    og = OpGraph(bench_ops.op_model(model, graph, op_id).mod)
    alone = og.ops[bench_ops.main_op(og)]
    assert op_signature(alone) != op_signature(op) and sum(1 for o in og.ops.values() if not o.is_view) == 1
    full = list(op.output_shapes[-1])
    log = ProfileLog(str(tmp_path))
    for sig, us in ((op_signature(op), 20.0), (op_signature(alone), 200.0)):
        log.append({"type": "op", "sig": sig, "kind": op.kind, "fused": op.fused_name, "dim": 0,
                    "dim_name": "batch", "size": full[0], "full": full[0], "shape": full, "full_shape": full,
                    "op_flops": op.flops, "op_bytes": op.bytes, "n_inputs": len(op.inputs), "device": "cpu",
                    "mean_us": us, "std_us": 0.1, "repeats": 5, "tuned": True})
    log.append({"type": "comm", "comm": "context", "src": "cpu", "dst": "cpu", "bytes": 0, "model": "bert-tiny/op",
                "mean_us": 1.1, "std_us": 0.0, "repeats": 1, "sigs": [op_signature(alone)], "ops": 1,
                "graph": graph_signature(og), "vm_us": 55.0, "warm_us": 50.0, "kernels": 1})
    cm = ProfiledCostModel(str(tmp_path), parse_devices("cpu,cpu"), fallback=AnalyticCostModel({"cpu": ROOFLINE["cpu"]}))
    priced = bench_ops.as_parent(cm, graph, op_id, og).for_graph(og)
    assert cm.op_time(op, "cpu") == pytest.approx(20.0)
    assert priced.op_time(alone, "cpu") == pytest.approx(55.0)


def test_a_rows_error_against_its_cpu_row_tells_the_model_from_the_machines_phase():
    """``err vs cpu``: a run measured 25% over its cpu row's prediction has none of its rows
    predicted within 10%, and its predicted ratios to the cpu row held: both other rows within 10%
    of theirs (an 8% and a -5% error of the ratio); a group without a measured cpu row has none,
    nor has the cpu row."""
    from tvm_partition.bench import results

    def row(model, strategy, predicted, measured):
        return {"model": model, "config": {}, "devices": "cpu,cpu", "strategy": strategy,
                "predicted_us": predicted, "measured_median_us": measured}

    rows = [row("m", "cpu", 100.0, 125.0), row("m", "equal", 108.0, 125.0), row("m", "eop", 95.0, 125.0),
            row("op", "split", 4.0, 4.5)]
    cpu = results.cpu_row(rows[:3])
    errs = [results.derived(r, None, None, cpu)["vs_cpu_err_pct"] for r in rows[:3]]
    assert errs[0] is None and errs[1] == pytest.approx(8.0) and errs[2] == pytest.approx(-5.0)
    assert results.within(rows) == {"pred": (0, 4), "vs_cpu": (2, 2)}
    assert results.within(rows, 6.0) == {"pred": (0, 4), "vs_cpu": (1, 2)}
    assert results.cpu_row(rows[3:]) is None
    cells = results.table_rows(rows[:3])
    assert [c[results.HEAD.index("err vs cpu")] for c in cells] == ["-", "+8%", "-5%"]
    assert [ms_cell(us) for us in (4.5, 45.67, 523.4, 2345.0)] == ["0.00450", "0.0457", "0.523", "2.345"]


def test_gpu_device_set_without_a_gpu_needs_a_bundle(tmp_path):
    from tvm_partition.devices import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU: cpu,gpu is measured here")
    proc = subprocess.run([sys.executable, "-m", "tvm_partition", "bench", *LSTM, "--devices", "cpu,gpu",
                           "--out", str(tmp_path / "res")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO), cwd=REPO)
    assert proc.returncode == 2 and "--export-bundle" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("argv, message", [
    (["--models", "nosuch"], "unknown model 'nosuch'"),
    (["--models", "lstm", "--strategies", "cpu,nosuch"], "unknown strategy 'nosuch'"),
    (["--models", "lstm", "--strategies", "tvm-gpu"], "ask for gpu"),
    (["--models", "lstm", "--devices", "cpu,tpu"], "unknown device kind 'tpu'"),
    (["--models", "lstm", "--sweep", "batch=x"], "--sweep"),
    (["--models", "lstm", "--sweep", "dims=3"], "KEY one of batch, seq_len, layers, image_size and"),
    (["--models", "lstm", "--repeat", "0"], "--repeat must be >= 1"),
    (["--models", "lstm", "--split-ops", "-1"], "--split-ops must be >= 0"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    assert bench.main([*argv, "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "res").exists()


def test_settings_sweep_and_quick(tmp_path):
    def settings(*argv):
        return bench.settings(bench.parser().parse_args(list(argv)))

    assert settings("--models", "lstm,resnet18", "--sweep", "batch=2,4") == [
        ("lstm", {"batch": 2}), ("lstm", {"batch": 4}), ("resnet18", {"batch": 2}), ("resnet18", {"batch": 4})]
    # seq_len does not apply to resnet18: left out of a seq_len sweep, ignored as a flag
    assert settings("--models", "lstm,resnet18", "--sweep", "seq_len=8") == [("lstm", {"seq_len": 8})]
    assert settings("--models", "lstm,resnet18", "--seq-len", "8") == [("lstm", {"seq_len": 8}), ("resnet18", {})]
    # --dim applies to an ONNX model with named free dimensions, not to the zoo's
    import onnx

    text = tmp_path / "text.onnx"
    onnx.save(onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])], "text",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", "L"])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", "L"])])), str(text))
    assert settings("--models", f"lstm,{text}", "--dim", "L=3,P=2") == [("lstm", {}), (str(text), {"dims": {"L": 3}})]
    assert settings("--models", str(text), "--dim", "P=2") == [(str(text), {})]
    from unittest import mock

    with mock.patch("onnx.load", wraps=onnx.load) as read:  # the options and the names from one read
        settings("--models", str(text), "--dim", "L=3")
    assert read.call_count == 1
    quick = settings("--quick")
    assert [m for m, _ in quick] == list(bench.QUICK_MODELS) and quick[0][1] == {"seq_len": 10}
    assert [m for m, _ in settings()] == list(bench.DEFAULT_MODELS)


def test_row_ids_stay_short_and_distinct():
    from tvm_partition.bench.results import MAX_ID, row_id

    rows = [{"model": "gru/" + "fused_strided_slice_add_tir_sigmoid_" * 9, "config": {"batch": 16},
             "devices": "cpu,cpu", "strategy": s} for s in ("cpu", "gpu", "split")]
    ids = [row_id(r) for r in rows]
    assert all(len(i) <= MAX_ID for i in ids) and len(set(ids)) == 3
    assert row_id({"model": "lstm", "config": {"seq_len": 4}, "devices": "cpu,gpu", "strategy": "eop"}) == \
        "lstm-seq_len4-cpu_gpu-eop"


def test_a_row_is_the_median_over_fresh_processes(monkeypatch):
    from tvm_partition.bench import runtime as bench_runtime

    medians = iter([5.0, 1.0, 3.0])
    calls = []

    def fake(art, repeat, timeout_s=None, preexec=None):
        calls.append(repeat)
        m = next(medians)
        return {"measured_median_us": m, "measured_p90_us": 10 * m, "repeat": repeat, "machine": "x"}

    monkeypatch.setattr(bench_runtime, "measure_process", fake)
    res = bench_runtime.measure_isolated("art", 10)
    assert calls == [4, 4, 4] and res["repeat"] == 12
    assert res["measured_median_us"] == 3.0 and res["measured_p90_us"] == 30.0
    assert res["process_medians_us"] == [1.0, 3.0, 5.0]
    calls.clear()
    monkeypatch.setattr(bench_runtime, "measure_process", lambda art, repeat, t=None, pre=None: calls.append(repeat) or
                        {"measured_median_us": 2.0, "measured_p90_us": 2.0, "repeat": repeat})
    assert bench_runtime.measure_isolated("art", 3)["process_medians_us"] == [2.0] and calls == [3]


def test_the_rows_of_one_model_are_measured_in_rounds(monkeypatch):
    """Each round runs one process timing every TVM artifact in turn and one process of each
    onnxruntime row, the order alternating: a machine that slows down 2x after the first round
    reaches every row alike, so their ratios hold."""
    from tvm_partition.bench import ort as bench_ort
    from tvm_partition.bench import runtime as bench_runtime

    speed = {"a": 100.0, "b": 200.0, "ort": 50.0}
    calls = []

    def fake(art, repeat, timeout_s=None, preexec=None):
        calls.append(art)
        slow = 1.0 if len(calls) <= 2 else 2.0
        row = lambda a: {"measured_median_us": speed[a] * slow, "measured_p90_us": speed[a] * slow,  # noqa: E731
                         "repeat": repeat}
        return {a: row(a) for a in art} if isinstance(art, list) else row(art)

    monkeypatch.setattr(bench_runtime, "measure_process", fake)
    monkeypatch.setattr(bench_ort, "is_artifact", lambda art: art == "ort")
    got = bench_runtime.measure_interleaved(["a", "b", "ort"], 9)
    assert calls == [["a", "b"], "ort", "ort", ["a", "b"], ["a", "b"], "ort"]
    assert got["a"]["process_medians_us"] == [100.0, 200.0, 200.0] and got["a"]["repeat"] == 9
    assert got["b"]["measured_median_us"] / got["a"]["measured_median_us"] == 2.0
    assert got["ort"]["process_medians_us"] == [50.0, 100.0, 100.0]


def test_a_crash_among_the_rows_measured_together_costs_its_row_only(monkeypatch):
    """Where the process timing the TVM rows together fails, each is measured in a process of its
    own from then on (that round too); an artifact whose own process fails is not run again."""
    from tvm_partition.bench import runtime as bench_runtime

    calls = []

    def fake(art, repeat, timeout_s=None, preexec=None):
        calls.append(art)
        if art == "bad" or isinstance(art, list):
            return {"error": "measuring failed: boom"}
        return {"measured_median_us": 100.0, "measured_p90_us": 100.0, "repeat": repeat}

    monkeypatch.setattr(bench_runtime, "measure_process", fake)
    got = bench_runtime.measure_interleaved(["a", "b", "bad"], 9)
    assert calls == [["a", "b", "bad"], "a", "b", "bad", "b", "a", "a", "b"]
    assert got["bad"] == {"error": "measuring failed: boom"}
    assert got["a"]["process_medians_us"] == [100.0] * 3


def test_rows_measured_together_are_timed_in_turn(monkeypatch):
    """measure_together: every artifact warmed up first, then blocks of runs in turn, the order
    reversed from block to block, each block after one untimed run."""
    from tvm_partition.bench import runtime as bench_runtime
    from tvm_partition.runtime import runner as runner_mod

    log = []

    class FakeRunner:
        devices = []

        def __init__(self, art):
            self.art = art

        def example_inputs(self, seed):
            return {}

        def time(self, inputs, repeat, warmup=None, min_s=0.0):
            log.append((self.art, repeat, warmup, min_s))
            return [1.0] * repeat

    monkeypatch.setattr(runner_mod, "Runner", FakeRunner)
    got = bench_runtime.measure_together(["a", "b"], 6)
    block = bench_runtime.BLOCK_MIN_S
    assert log == [("a", 0, None, 0.0), ("b", 0, None, 0.0), ("a", 2, 1, block), ("b", 2, 1, block),
                   ("b", 2, 1, block), ("a", 2, 1, block), ("a", 1, 1, block), ("b", 1, 1, block),
                   ("b", 1, 1, block), ("a", 1, 1, block)]
    assert got["a"]["repeat"] == got["b"]["repeat"] == 6


def test_runs_shorter_than_the_block_are_timed_until_it_is_full():
    """Runner.time with ``min_s``: the runs asked for, then more until their times add up to
    ``min_s`` (2 ms runs, 50 ms: about 25; a loaded machine's sleeps of 6 ms, seen in the suite,
    still more than the 2 asked for), and no more; without it, the runs asked for."""
    import time as clock

    from tvm_partition.runtime.runner import Runner

    runner = Runner.__new__(Runner)
    runner.manifest, runner.params, runner.governor = {"inputs": []}, [], None
    runner.main = lambda: clock.sleep(0.002)
    assert len(runner.time({}, 2, warmup=0)) == 2
    times = runner.time({}, 2, warmup=0, min_s=0.05)
    assert len(times) > 2 and sum(times) >= 5e4 > sum(times[:-1])


def test_paired_ratios_are_taken_within_each_round(monkeypatch, tmp_path):
    """benchmarks/paired.py: the machine slows down 2x between rounds; the ratio of B to the
    baseline stays what it is within a round, and the order alternates."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import paired
    from tvm_partition.bench import runtime as bench_runtime

    speed = {"a": 100.0, "b": 120.0}
    calls = []

    def fake(art, repeat, timeout_s=None, preexec=None):
        calls.append(art)
        slow = 2.0 if len(calls) > 2 else 1.0  # the second round runs on a machine twice as slow
        return {"measured_median_us": speed[art] * slow}

    monkeypatch.setattr(bench_runtime, "measure_process", fake)
    rows = paired.summary(paired.paired(["a", "b"], 2, 5, say=lambda m: None))
    assert calls == ["a", "b", "b", "a"]
    assert [r["ratio_median"] for r in rows] == [1.0, 1.2] and rows[1]["ratio_max"] == pytest.approx(1.2)
    assert rows[0]["median_us"] == 150.0  # the baseline's own times are spread by the drift
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "paired.py"), str(tmp_path / "nope"),
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {tmp_path / 'nope'}: no such artifact folder"


def test_paired_in_process_loads_each_artifact_once(monkeypatch):
    """benchmarks/paired.py --in-process: each artifact loaded once, timed in every round (the
    median of its runs), the order alternating as across processes."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import paired
    from tvm_partition.runtime import runner as runtime_runner

    loads, calls = [], []

    class Fake:
        def __init__(self, art):
            loads.append(art)
            self.art = art

        def example_inputs(self, seed):
            return {"x": seed}

        def time(self, inputs, repeat, warmup=None):
            calls.append((self.art, repeat, warmup))
            return [{"a": 100.0, "b": 80.0}[self.art]] * (repeat - 1) + [1e9]  # one outlier: the median

    monkeypatch.setattr(runtime_runner, "Runner", Fake)
    rows = paired.summary(paired.paired(["a", "b"], 3, 5, say=lambda m: None, measure=paired.in_this_process(5)))
    assert loads == ["a", "b"] and [c[0] for c in calls] == ["a", "b", "b", "a", "a", "b"]
    assert {c[1:] for c in calls} == {(5, 2)} and [r["ratio_median"] for r in rows] == [1.0, 0.8]


def test_ops_vs_ort_rows_pair_both_sides_within_rounds(tmp_path):
    """benchmarks/ops_vs_ort.py: a convolution is one row on both sides though onnxruntime pads its
    channels to NCHWc blocks (SqueezeNet's 1000 classifier channels: 1008 there, 1024 in our build;
    24 input channels: 32 there); a node counts in the round whose run it ran in, warm-up runs out;
    ratios are taken within rounds (the second round on a machine 2x slower leaves them as they are)."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import ops_vs_ort as ovo
    from collections import Counter

    assert ovo.conv_key([1, 512, 13, 13], [1008, 512, 1, 1]) == ovo.conv_key([1, 512, 13, 13], [1024, 512, 1, 1])
    assert ovo.conv_key([1, 32, 56, 56], [144, 32, 1, 1]) == ovo.conv_key([1, 24, 56, 56], [144, 24, 1, 1])
    assert len({ovo.conv_key([1, 64, 56, 56], [64, 64, k, k]) for k in (1, 3)}) == 2
    keys = {"conv2d3": ovo.conv_key([1, 64, 56, 56], [256, 64, 1, 1])}
    assert ovo.our_row("fused_conv2d3_add2_llvm_prepacked", keys) == keys["conv2d3"]
    assert [ovo.our_row(n, keys) for n in ("max_pool2d1_llvm", "vm.builtin.alloc_tensor", "fused_matmul_llvm_add")] \
        == ["pool", "runtime (VM builtins)", "matmul"]

    def node(ts, op, dur, shapes=()):
        return {"cat": "Node", "name": "n_kernel_time", "ts": ts, "dur": dur,
                "args": {"op_name": op, "input_type_shape": [{"float": list(x)} for x in shapes]}}

    conv = ([1, 64, 56, 56], [256, 64, 1, 1])
    runs = [{"name": "model_run", "ts": 100 * i} for i in range(ovo.WARMUP_RUNS + 4)]  # 2 rounds x 2 runs
    events = runs + [node(100 * i + 10, "FusedConv", 50 * (2 if i >= ovo.WARMUP_RUNS + 2 else 1), conv)
                     for i in range(len(runs))] + [node(100 * (ovo.WARMUP_RUNS + 1) + 20, "MaxPool", 8)]
    ort = ovo.ort_rounds(events, 2, 2)
    assert ort == [Counter({keys["conv2d3"]: 50.0, "pool": 4.0}), Counter({keys["conv2d3"]: 100.0})]
    # each row at its median run, as our side reads its own: one run of three 10x slow counts once
    slow = runs[:ovo.WARMUP_RUNS + 3] + [node(100 * i + 10, "FusedConv", 500 if i == ovo.WARMUP_RUNS else 50, conv)
                                         for i in range(ovo.WARMUP_RUNS + 3)]
    assert ovo.ort_rounds(slow, 1, 3) == [Counter({keys["conv2d3"]: 50.0})]
    vm = "runtime (VM builtins)"
    ours = [Counter({keys["conv2d3"]: 75.0, vm: 5.0}), Counter({keys["conv2d3"]: 150.0, vm: 10.0})]
    rows = {r["row"]: r for r in ovo.summary({"ours": ours, "ort": ort})}
    assert rows[keys["conv2d3"]]["ratio"] == pytest.approx(1.5)  # both rounds: 1.5, whatever the machine's speed
    assert rows[vm]["ratio"] is None and rows["pool"]["ratio"] is None  # one side only
    assert list(rows)[-1] == "total" and rows["total"]["ours_us"] == pytest.approx((80 + 160) / 2)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "ops_vs_ort.py"), str(tmp_path / "m.onnx"),
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {tmp_path / 'm.onnx'}: not an .onnx file"


def test_ops_vs_ort_times_onnxruntime_in_a_process_of_its_own_each_round(tmp_path):
    """benchmarks/ops_vs_ort.py end to end on a CPU build of a MatMul + Add + Relu: each round's
    onnxruntime side runs in a child process (its pool spinning, as bench's session) and reports its
    nodes by row; ours, under the VM's instrument here; both read the one matmul row every round."""
    pytest.importorskip("onnxruntime")
    path, art, out = tiny_onnx(tmp_path / "tiny.onnx"), tmp_path / "art", tmp_path / "ovo.json"
    built = subprocess.run([sys.executable, "-m", "tvm_partition", "compile", path, "--devices", "cpu,cpu",
                            "--strategy", "cpu", "--out", str(art)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "ops_vs_ort.py"), path, str(art),
                           "--rounds", "2", "--runs", "2", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert [len(result["per_round"][side]) for side in ("ours", "ort")] == [2, 2]
    assert all(r.get("matmul", 0) > 0 for side in ("ours", "ort") for r in result["per_round"][side])
    rows = {r["row"]: r for r in result["summary"]}
    assert rows["matmul"]["ratio"] > 0 and "| matmul |" in proc.stdout
    assert not list(tmp_path.glob("**/ort_*.json")) and not list(art.glob(".ops_vs_ort_*"))  # no profile left
    # onnxruntime failing in its process: one line saying so, not a traceback
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "onnxruntime.py").write_text("raise ImportError('no onnxruntime in this process')\n")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "ops_vs_ort.py"), path, str(art),
                           "--rounds", "1", "--runs", "1"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": f"{broken}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("error: onnxruntime's side failed: ImportError: "
                                                    "no onnxruntime in this process")


# --- the onnxruntime reference row ------------------------------------------------------------

def tiny_onnx(path) -> str:
    """MatMul + Add + Relu with seeded initializers; the input is named "0", which TVM renames
    ("input_0"): the onnxruntime row must feed it under the ONNX name."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w, b = (numpy_helper.from_array(rng.standard_normal(shape).astype("float32"), name)
            for name, shape in (("w", (8, 4)), ("b", (4,))))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["0", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["sum"]),
         helper.make_node("Relu", ["sum"], ["y"])], "tiny",
        [helper.make_tensor_value_info("0", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w, b])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return str(path)


def test_onnxruntime_row_runs_the_same_model_as_our_build(tmp_path):
    pytest.importorskip("onnxruntime")
    import numpy as np

    from tvm_partition.bench import ort as bench_ort
    from tvm_partition import frontend
    from tvm_partition.bench.report import render_folder
    from tvm_partition.bench.results import row_id, summary
    from tvm_partition.runtime.runner import Runner

    path, out, arts = tiny_onnx(tmp_path / "tiny.onnx"), tmp_path / "res", tmp_path / "arts"
    rc, text, err = run_bench("--models", path, "--strategies", "cpu,onnxruntime", "--repeat", "3", "--out", out,
                              "--artifacts", arts)
    assert rc == 0, err
    cpu, ort = rows_of(out)
    assert (cpu["strategy"], ort["strategy"]) == ("cpu", "onnxruntime") and ort["model"] == "tiny"
    assert SCHEMA <= set(ort) and "error" not in ort and 0 < ort["measured_median_us"] <= ort["measured_p90_us"]
    assert ort["predicted_us"] is None and ort["plan_s"] is None and ort["tuned_kernels"] is None
    assert len(ort["process_medians_us"]) == 1 and ort["repeat"] == 3 and len(ort["device_names"]) == 1
    assert 0 <= ort["max_abs_err_vs_ort"] < 1e-4
    # the oracle: onnxruntime on the row's folder and the Runner on our cpu build, on the frontend's inputs
    model = frontend.load(path, seed=0)
    ort_dir, cpu_dir = arts / row_id(ort), arts / row_id(cpu)
    with np.load(ort_dir / "inputs.npz") as z:
        assert list(z.files) == ["0"] and np.array_equal(z["0"], next(iter(model.inputs.values())))
    assert (ort_dir / "model.onnx").read_bytes() == open(path, "rb").read()
    assert json.loads((ort_dir / "ort.json").read_text())["num_threads"] == os.cpu_count()
    (ours,), (theirs,) = Runner(str(cpu_dir)).run(model.inputs), bench_ort.run(str(ort_dir))
    assert theirs.shape == (2, 4) and np.abs(theirs).max() > 0
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    # shown like tvm-cpu: no prediction, no tuned kernels, a speedup over the cpu row
    line = next(x for x in summary(rows_of(out)).splitlines() if x.strip().startswith("onnxruntime"))
    assert line.split()[1] == ms_cell(ort["measured_median_us"]) and line.split()[3:6] == ["-", "-", "-"]
    assert line.split()[-1] == "-" and line in text
    assert "predicted within 10%: " in text and "cpu row's ratio" not in text  # no row predicted beside a cpu row
    md = "\n".join(render_folder(str(out), str(tmp_path)))
    assert f"| tiny | batch=2 | onnxruntime | {ms_cell(ort['measured_median_us'])} |" in md


def test_onnxruntime_row_carries_the_models_external_data(tmp_path):
    """A model whose weights lie in files beside it (PyTorch's exporter past 2 GiB, or asked to): the
    row's folder holds them at the same places, onnxruntime runs it there as on the original, and a
    data file changed after the copy is a checksum error (a Llama export's row failed to load)."""
    pytest.importorskip("onnxruntime")
    import numpy as np
    import onnx

    from tvm_partition import frontend
    from tvm_partition.bench import ort as bench_ort
    from tvm_partition.runtime.ort import OrtError, session

    proto = onnx.load(tiny_onnx(tmp_path / "inline.onnx"))
    (tmp_path / "src").mkdir()
    path = str(tmp_path / "src" / "tiny.onnx")
    onnx.save(proto, path, save_as_external_data=True, location="tiny.data", size_threshold=0)
    assert bench_ort.external_files(path) == ["tiny.data"]
    model = frontend.load(path, seed=0)
    art = str(tmp_path / "row")
    bench_ort.save(model, art, 1)
    assert os.path.exists(os.path.join(art, "tiny.data"))
    feeds = {"0": next(iter(model.inputs.values()))}
    (expected,) = session(path, 1).run(None, feeds)
    (got,) = bench_ort.run(art)
    assert np.abs(expected).max() > 0 and np.array_equal(got, expected)
    with open(os.path.join(art, "tiny.data"), "r+b") as f:
        f.write(b"\x00\x00\x80\x7f")  # the first weight made inf
    with pytest.raises(OrtError, match="checksum mismatch"):
        bench_ort.run(art)
    # a location outside the model's folder: one line saying so
    for tensor in proto.graph.initializer:  # external since onnx.save above (it converts them in place)
        next(e for e in tensor.external_data if e.key == "location").value = "../elsewhere.data"
    outside = tmp_path / "src" / "outside.onnx"
    outside.write_bytes(proto.SerializeToString())
    with pytest.raises(OrtError, match="outside the model's folder"):
        bench_ort.external_files(str(outside))


def test_onnxruntime_row_is_for_onnx_models_only(tmp_path):
    args = bench.parser().parse_args([])
    assert bench.strategies(args)[-4:] == ["tvm-cpu", "onnxruntime", "pytorch", "pytorch-graph"]
    out = tmp_path / "res"
    rc, text, err = run_bench(*LSTM, "--strategies", "onnxruntime", "--out", out)
    assert rc == 0 and "note: onnxruntime runs .onnx models only; left out for lstm" in err
    assert "0 rows, 0 failed" in text and not (out / "results.json").exists()
    notes = []
    zoo_model = type("M", (), {"name": "lstm", "config": {"batch": 2}})()
    assert bench.applicable(["cpu", "tvm-cpu", "onnxruntime"], zoo_model, False, notes.append) == ["cpu", "tvm-cpu"]
    assert notes == []  # the default strategies leave it out silently


def test_onnxruntime_missing_or_disagreeing_is_an_error_row(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    import numpy as np

    from tvm_partition.cli import compile as compile_mod

    path = tiny_onnx(tmp_path / "tiny.onnx")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    rc, text, _ = run_bench("--models", path, "--strategies", "onnxruntime", "--repeat", "3", "--out", tmp_path / "a")
    (row,) = rows_of(tmp_path / "a")
    assert rc == 1 and row["measured_median_us"] is None
    assert row["error"] == "OrtError: onnxruntime is not installed here: pip install onnxruntime"
    assert "pip install onnxruntime" in text
    monkeypatch.delitem(sys.modules, "onnxruntime")
    # TVM's outputs made to differ: the row says so and is not measured
    monkeypatch.setattr(compile_mod, "reference_outputs", lambda model: [np.full((2, 4), 5.0, "float32")])
    rc, _, _ = run_bench("--models", path, "--strategies", "onnxruntime", "--repeat", "3", "--out", tmp_path / "b")
    (row,) = rows_of(tmp_path / "b")
    assert rc == 1 and row["measured_median_us"] is None and row["max_abs_err_vs_ort"] > 1
    assert "not the same model, not measured" in row["error"]


def test_onnxruntime_row_in_a_bundle(tmp_path):
    pytest.importorskip("onnxruntime")
    path, bundle, res = tiny_onnx(tmp_path / "tiny.onnx"), tmp_path / "bundle", tmp_path / "res"
    rc, _, err = run_bench("--models", path, "--strategies", "onnxruntime", "--export-bundle", bundle, "--out", res)
    assert rc == 0, err
    (spec,) = json.loads((bundle / "bench.json").read_text())["rows"]
    assert (bundle / spec["artifact"] / "model.onnx").exists() and (bundle / "site/tvm_partition/bench/ort.py").exists()
    env = {"TVM_USE_RUNTIME_LIB": "1", "PATH": os.environ.get("PATH", "")}
    proc = subprocess.run([sys.executable, "-I", str(bundle / "run_bench.py"), "--repeat", "2"], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    rc, text, err = run_bench("--import", bundle, "--out", res)
    (row,) = rows_of(res)
    assert rc == 0 and row["strategy"] == "onnxruntime" and row["measured_median_us"] > 0, err


def test_rows_measured_under_load_report_their_tails(tmp_path):
    """bench --load N / --cpu-quota F (issue 21 item 3): each row measured quiet and under each
    condition in the same run; a rerun skips it only if every condition asked for was measured."""
    from test_load import _writable_cgroup

    quota = ["--cpu-quota", "1"] if _writable_cgroup() else []
    rc, text, err = run_bench(*LSTM, "--strategies", "cpu", "--load", "1", "--out", tmp_path)
    assert rc == 0, err
    row = rows_of(tmp_path)[0]
    assert set(row["under"]) == {"load 1"} and 0 < row["measured_p90_us"] <= row["measured_p99_us"]
    tails = row["under"]["load 1"]
    assert 0 < tails["median_us"] <= tails["p90_us"] <= tails["p99_us"] and len(tails["process_medians_us"]) == 1
    assert "quiet and under load" in text and "load 1: median" in text
    rc, _, err = run_bench(*LSTM, "--strategies", "cpu", "--load", "1", "--out", tmp_path)
    assert rc == 0 and "done before, skipped" in err
    if quota:
        rc, _, err = run_bench(*LSTM, "--strategies", "cpu", *quota, "--out", tmp_path)
        assert rc == 0 and "done before" not in err, err
        assert set(rows_of(tmp_path)[0]["under"]) == {"quota 1"}


def test_load_needs_this_machine(tmp_path):
    rc, _, err = run_bench(*LSTM, "--load", "1", "--export-bundle", tmp_path / "b")
    assert rc == 2 and "--load and --cpu-quota measure on this machine" in err and "Traceback" not in err


def test_rows_recorded_before_the_commands_moved_show_the_command_that_runs_today():
    from tvm_partition.bench.report import _command

    old = "python -m tvm_partition.bench --quick --split-ops 2 --force"
    assert _command(old) == "python -m tvm_partition bench --quick --split-ops 2 --force"
    assert _command(_command(old)) == _command(old)


def test_drift_reads_each_thread_count_in_turn_and_sets_the_median_beside_the_profile(monkeypatch, tmp_path, capsys):
    """benchmarks/drift.py: every round reads each thread count once, in order; a build's summary
    is the spread of its readings on one thread count, the default's beside its profile's reading."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import drift

    specs = [{"name": "a", "profile_vm_us": 10.0, "profile_time": "t"}, {"name": "b", "profile_vm_us": None,
                                                                        "profile_time": None}]
    monkeypatch.setattr(drift, "build_all", lambda tmp: specs)
    calls = []

    def read(spec_file, threads):
        calls.append(threads)
        k = len(calls)
        return [{"vm_us": 10.0 + k + (100 if threads == "1" else 0), "alone_us": 9.0}, {"vm_us": 5.0, "alone_us": 4.0}]

    monkeypatch.setattr(drift, "read", read)
    clock = iter(range(0, 1000, 25))  # each look at the clock 25 s on: two rounds in two minutes
    monkeypatch.setattr(drift, "clock", lambda: next(clock))
    monkeypatch.setattr(drift, "pause", lambda s: None)
    out = tmp_path / "drift.json"
    assert drift.main(["--minutes", "2", "--threads", "2,1", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert calls == ["2", "1", "2", "1"] and [r["threads"] for r in got["readings"]] == calls
    two = [r for r in got["summary"] if r["threads"] == "2"]
    assert two[0]["vm_us"] == {"min": 11.0, "median": 12.0, "max": 13.0}
    assert [r for r in got["summary"] if r["threads"] == "1"][0]["vm_us"]["min"] == 112.0
    calls.clear()
    assert drift.main(["--minutes", "0.5"]) == 0 and calls == [None]
    printed = capsys.readouterr().out
    assert "a: in the VM 11.00 / 11.00 / 11.00 us" in printed and "the median +10.0% over it" in printed
    assert drift.series(got) == [("a (profile 10.0 us)", [r["time"][:5] for r in got["readings"][::2]], [1.1, 1.3]),
                                 ("b (min 5.0 us)", [r["time"][:5] for r in got["readings"][::2]], [1.0, 1.0])]
    png = tmp_path / "drift.png"  # a chart of an earlier run's file, of the first thread count it read
    assert drift.main(["--from-json", str(out), "--chart", str(png)]) == 0 and png.stat().st_size > 0
    assert drift.main(["--from-json", str(out)]) == 2
    assert drift.main(["--from-json", str(tmp_path / "nope.json"), "--chart", str(png)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {tmp_path / 'nope.json'}: No such file or directory"


def test_predict_again_prices_a_bench_folders_rows_again_its_op_rows_too(tmp_path, capsys, monkeypatch):
    """benchmarks/predict_again.py --bench: each row of a bench folder with a saved plan is
    simulated again with today's cost model (an op row as its model's op: BERT-tiny's kernels are
    named apart alone, and the Zen 3's profile has samples of the model's, no op model run in the
    VM), and each run's rows within the band are counted as built and now."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import predict_again
    from tvm_partition import cost_models, frontend
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition.bench import results
    from tvm_partition.build.tuning import DEFAULT_LOGS
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners import plan_and_simulate
    from tvm_partition.planners.simulate import simulate

    profile = os.path.join(DEFAULT_LOGS, "amd-epyc-znver3-2c")
    shipped = cost_models.default_cost_model
    monkeypatch.setattr(cost_models, "default_cost_model", lambda devices: shipped(devices, profile))
    config = {}
    model, devices = frontend.load("bert-tiny"), parse_devices("cpu,cpu")
    cm = cost_models.default_cost_model(devices)[0]
    plan, sim = plan_and_simulate(OpGraph(model.mod), devices, "cpu", cost_model=cm)
    om, split, extra, op_cost = next(bench_ops.op_rows(model, devices, cm, 1))
    og = OpGraph(om.mod)
    op_us = simulate(og, split, op_cost.for_graph(og)).latency_us
    rows = [{"model": "bert-tiny", "config": config, "devices": "cpu,cpu", "strategy": "cpu",
             "predicted_us": sim.latency_us / 2, "measured_median_us": sim.latency_us * 1.05},
            {"model": om.name, "config": config, "devices": "cpu,cpu", "strategy": "split", **extra,
             "predicted_us": op_us, "measured_median_us": op_us * 1.25}]
    folder = tmp_path / "bench"
    results.save(str(folder), rows)
    # the plans in the zip bench writes, the first row's saved twice: the second replaces the
    # first, and keeps the other row's (a folder of plans, as kept before: the next test)
    results.save_plan(str(folder), rows[0], split.dumps())
    results.save_plan(str(folder), rows[1], split.dumps())
    results.save_plan(str(folder), rows[0], plan.dumps())
    with zipfile.ZipFile(folder / results.PLANS_ZIP) as z:
        assert sorted(z.namelist()) == sorted(f"{results.row_id(r)}.json" for r in rows)
    got = predict_again.bench_predictions(str(folder))
    assert got[("bert-tiny", "cpu", "cpu,cpu")][1] == pytest.approx(sim.latency_us)
    assert got[(om.name, "split", "cpu,cpu")][1] == pytest.approx(op_us)
    assert predict_again.main(["--bench", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (f"{folder}: 0 of 2 rows within 10% as built, 1 now; "
                                                        "of their cpu row's ratio 0 of 0 as built, 0 now")
    assert predict_again.main(["--bench", str(folder), "--band", "25"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (f"{folder}: 1 of 2 rows within 25% as built, 2 now; "
                                                        "of their cpu row's ratio 0 of 0 as built, 0 now")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "predict_again.py"), "--bench",
                           str(tmp_path / "nope")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr == f"error: {tmp_path / 'nope'}: no results.json (a bench --out folder)\n"


def test_predict_again_finds_an_onnx_rows_file_in_onnx_dir_or_leaves_the_row_out(tmp_path, capsys):
    """Rows of .onnx models measured before their settings kept the file (the light models of
    2026-12-01) load ``--onnx-dir``'s ``<model>.onnx``; without it they are said and left out, not
    a crash."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import predict_again
    from tvm_partition import frontend
    from tvm_partition.bench import results
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners import plan_and_simulate

    onnx_dir = tmp_path / "onnx"
    onnx_dir.mkdir()
    path = tiny_onnx(onnx_dir / "tiny.onnx")
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(frontend.load(path, seed=0).mod)
    plan, sim = plan_and_simulate(graph, devices, "cpu", cost_model=default_cost_model(devices)[0])
    row = {"model": "tiny", "config": {"batch": 2}, "devices": "cpu,cpu", "strategy": "cpu",
           "predicted_us": sim.latency_us, "measured_median_us": sim.latency_us}
    folder = tmp_path / "bench"
    results.save(str(folder), [row])
    (folder / "plans").mkdir()
    plan.save(str(folder / "plans" / f"{results.row_id(row)}.json"))
    assert predict_again.row_source({**row, "config": {"source": "/x.onnx"}}, str(onnx_dir)) == "/x.onnx"
    assert predict_again.bench_predictions(str(folder)) == {}
    assert "tiny cpu left out: no tiny.onnx (--onnx-dir)" in capsys.readouterr().err
    [(got, now)] = predict_again.bench_predictions(str(folder), str(onnx_dir)).values()
    assert got["model"] == "tiny" and now == pytest.approx(sim.latency_us)


def test_hf_models_records_compile_status_and_notes_and_times_only_what_passed(monkeypatch, tmp_path, capsys):
    """benchmarks/hf_models.py: a model whose ``compile --check`` fails is a row with its exit status
    and its error line, not timed (before, the script died on the missing artifact); one that
    passes keeps its ``note:`` lines (BiT's "the reference is the one off" was on stderr only); one
    its exporter refuses is a row of the exporter's error, and what PyTorch prints then stays off
    the rows (before, the run ended there)."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import hf_models

    logs = {"gpt2": (1, "max_abs_err=0.5\nerror: partitioned output differs from onnxruntime (tolerance 0.001)\n"),
            "bit": (0, "checking: ...\nnote: the unpartitioned model is the one off\nmax_abs_err=6.5e-04 "
                       "max_abs_err_onnxruntime=1.9e-04\n")}
    calls = []

    def fake(cmd, timeout=3600):
        calls.append(cmd)
        if "compile" in cmd:
            return logs[os.path.basename(cmd[cmd.index("compile") + 1])[:-len(".onnx")]]
        return 0, "median_us=100.0\n"

    for name in logs:
        (tmp_path / f"{name}.onnx").write_bytes(b"")  # exported already: no torch

    def refused(name, path):  # an exporter that fails (PyTorch's TorchScript one on aten::diff)
        print("graph(%input : Long(1, 64)) ...")  # what PyTorch prints of the traced graph, to stdout
        raise RuntimeError("Exporting the operator 'aten::diff' to ONNX opset version 17 is not supported")

    monkeypatch.setattr(hf_models, "_run", fake)
    monkeypatch.setattr(hf_models, "export", refused)
    monkeypatch.setattr(sys, "argv", ["hf_models.py", "--models", "gemma,gpt2,bit", "--out", str(tmp_path), "--rounds", "1"])
    hf_models.main()
    unexported, failed, passed = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert unexported == {"model": "gemma", "export_error": "RuntimeError: Exporting the operator 'aten::diff' to "
                                                            "ONNX opset version 17 is not supported"}
    assert failed["compile_rc"] == 1 and failed["max_abs_err"] == 0.5 and "ours_us" not in failed
    assert failed["notes"] == ["error: partitioned output differs from onnxruntime (tolerance 0.001)"]
    assert passed["compile_rc"] == 0 and passed["notes"] == ["note: the unpartitioned model is the one off"]
    assert passed["max_abs_err_onnxruntime"] == 1.9e-04 and passed["ours_us"] == passed["ort_us"] == 100.0
    assert len(calls) == 4  # two compiles, one round of two timings for the model that passed


def test_hf_models_batch_norms_standardise_what_reaches_them_through_any_depth():
    """benchmarks/hf_models.py: 24 blocks of a convolution of small weights (0.002: its output's
    variance, 3e-4, under the epsilon) and a batch norm of EfficientNet's epsilon (1e-3) shrink an
    input to nothing; calibrated (:func:`hf_models.calibrate_batch_norms`), the output keeps a
    standard deviation near 1 and each batch norm its input's statistics."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import hf_models

    torch.manual_seed(0)
    layers = []
    for _ in range(24):
        conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        torch.nn.init.normal_(conv.weight, std=0.002)
        torch.nn.init.zeros_(conv.bias)
        layers += [conv, torch.nn.BatchNorm2d(8, eps=1e-3)]
    net = torch.nn.Sequential(*layers).eval()
    x = torch.randn(4, 8, 16, 16)
    with torch.no_grad():
        assert float(net(x).std()) < 1e-15
        hf_models.calibrate_batch_norms(net, x)
        assert 0.9 < float(net(x).std()) < 1.1
        assert 0.5 < float(net(torch.randn(1, 8, 16, 16)).std()) < 2
        first = net[0](x).transpose(0, 1).flatten(1)
    assert torch.allclose(net[1].running_mean, first.mean(1), atol=1e-6)
    assert torch.allclose(net[1].running_var, first.var(1), rtol=1e-4)
    assert net.training is False


def test_build_with_compiles_under_the_constants_given_and_restores_them(monkeypatch, tmp_path):
    """benchmarks/build_with.py: ``compile`` runs with the templates' constant set as given (seen from
    inside the compile), the constant is back after; a name no template defines is one error line."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import build_with

    from tvm_partition import cli
    from tvm_partition.build.templates import matmul

    seen = []
    monkeypatch.setattr(cli, "main", lambda argv: seen.append((argv, matmul.MATMUL_CHUNK_TILES)) or 0)
    before = matmul.MATMUL_CHUNK_TILES
    assert build_with.main(["m.onnx", str(tmp_path / "art"), "MATMUL_CHUNK_TILES=99"]) == 0
    assert seen == [(["compile", "m.onnx", "--devices", "cpu,cpu", "--strategy", "cpu", "--out", str(tmp_path / "art")], 99)]
    assert matmul.MATMUL_CHUNK_TILES == before
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "build_with.py"), "m.onnx", str(tmp_path / "a"),
                           "NO_SUCH_RULE=1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: NO_SUCH_RULE=1: no template defines NO_SUCH_RULE"
    assert not (tmp_path / "a").exists()
