"""Kernel tuning: MetaSchedule end to end on small kernels, the database, and builds that use it.

One tuning session (two trials of the one kernel of a small ONNX Linear model that the onnx
package ships) runs once per test module through the CLI; the other tests read its database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tvm_partition import frontend
from tvm_partition.build import templates
from tvm_partition.build.executable import PACKING_LABEL, SCHEDULE_ATTR, tuned_kernels
from tvm_partition.cli.compile import check, compile_model
from tvm_partition.devices import database_dir, parse_devices
from tvm_partition.cli.tune import extract_kernels
from tvm_partition import planners
from tvm_partition.build.executable import lower
from tvm_partition.ir.graph import OpGraph
from tvm_partition.build.transfer import provenance
from tvm_partition.build.databases import open_database
from tvm_partition.build.tuning import (
    Schedules,
    best_record,
    is_default,
    is_tuned,
    load_races,
    open_schedules,
    template_won,
    trials_measured,
    tune,
    tuning_target,
)

import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINEAR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "pytorch-converted", "test_Linear",
                      "model.onnx")
MODEL = [LINEAR]
TRIALS = 2


def cli(command, *args, timeout=900):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "tvm_partition", command, *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    logs = tmp_path_factory.mktemp("tuning_logs")
    t0 = time.perf_counter()
    proc = cli("tune", *MODEL, "--devices", "cpu", "--trials", TRIALS, "--tuning-logs", logs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return logs, proc, time.perf_counter() - t0


@pytest.fixture(scope="module")
def tuned_only(tuned, tmp_path_factory):
    """The tuned database without its default-schedule records. On this tiny kernel TVM's default
    schedule is faster than anything two trials find, so builds would rightly keep it; the tests
    of how tuned schedules are applied use this copy."""
    import tvm.s_tir.meta_schedule as ms

    src = open_database(database_dir(str(tuned[0])))
    path = str(tmp_path_factory.mktemp("tuned_only"))
    dst = open_database(path, create=True)
    for r in src.get_all_tuning_records():
        if not is_default(r):
            dst.commit_tuning_record(ms.database.TuningRecord(r.trace, dst.commit_workload(r.workload.mod),
                                                              [float(x) for x in r.run_secs],
                                                              r.target, r.args_info))
    return path


def model():
    return frontend.load(LINEAR)


def compute_kernels():
    return [k for k in extract_kernels(model(), parse_devices("cpu")) if k.computes]


def test_tune_writes_a_database_for_every_kernel(tuned):
    logs, proc, _ = tuned
    path = database_dir(str(logs))
    assert os.path.exists(os.path.join(path, "database_tuning_record.json"))
    kernels = compute_kernels()
    db = open_database(path)  # a fresh read of the files: the database round-trips
    assert kernels and all(is_tuned(db, k) for k in kernels)
    assert f"tuned {len(kernels)}," in proc.stdout
    assert f"{TRIALS}/{TRIALS}" in proc.stderr  # the progress bar counts trials to the end
    # TVM's default schedule of each kernel is measured and recorded beside the tuned ones
    for k in kernels:
        records = db.get_top_k(db.commit_workload(k.mod), 1000)
        assert sum(is_default(r) for r in records) == 1 and len(records) > 1
    assert f"default schedules measured {len(kernels)}" in proc.stdout


def test_a_default_schedule_faster_than_every_tuned_one_is_kept(tuned):
    import tvm.s_tir.meta_schedule as ms

    logs, _, _ = tuned
    m = model()
    plan = planners.plan_with("cpu", OpGraph(m.mod), parse_devices("cpu"))
    db = open_database(database_dir(str(logs)))

    def with_default_time(secs):  # the same records, the default schedule timed at ``secs``
        out = ms.database.MemoryDatabase()
        for k in compute_kernels():
            for r in db.get_top_k(db.commit_workload(k.mod), 1000):
                out.commit_tuning_record(ms.database.TuningRecord(
                    r.trace, out.commit_workload(k.mod), [secs] if is_default(r) else [float(x) for x in r.run_secs],
                    r.target, r.args_info))
        return out

    assert tuned_kernels(lower(m.mod, plan, schedules=Schedules(None, with_default_time(1.0), None))[0])
    assert tuned_kernels(lower(m.mod, plan, schedules=Schedules(None, with_default_time(1e-12), None))[0]) == []


def test_data_movement_kernels_are_not_tuned(tuned):
    logs, _, _ = tuned
    movers = [k for k in extract_kernels(model(), parse_devices("cpu")) if not k.computes]
    assert movers, "the Linear model transposes its weight: one kernel without arithmetic"
    db = open_database(database_dir(str(logs)))
    assert not any(is_tuned(db, k) for k in movers)
    listed = cli("tune", *MODEL, "--tuning-logs", logs, "--list").stdout
    [line] = [line for line in listed.splitlines() if line.endswith(" " + movers[0].name)]
    assert line.startswith("copy ")


def test_rerun_skips_tuned_kernels(tuned):
    logs, _, first_s = tuned
    kernels = compute_kernels()
    t0 = time.perf_counter()
    stats = tune(kernels, database_dir(str(logs)), trials=TRIALS)
    assert stats == {"tuned": 0, "skipped": len(kernels), "left": 0, "defaults": 0, "raced": 0}
    assert time.perf_counter() - t0 < first_s / 2


def test_a_rerun_with_more_trials_continues(tuned, tmp_path):
    import shutil

    path = str(tmp_path / "db")
    shutil.copytree(database_dir(str(tuned[0])), path)
    kernels = compute_kernels()
    before = [trials_measured(open_database(path), k) for k in kernels]
    assert before == [TRIALS] * len(kernels)
    stamp = open_schedules(path).stamp
    assert stamp and open_schedules(path).stamp == stamp
    stats = tune(kernels, path, trials=TRIALS + 4)
    assert stats["tuned"] == len(kernels) and stats["skipped"] == 0
    assert open_schedules(path).stamp != stamp  # profile samples of the old databases are stale
    after = [trials_measured(open_database(path), k) for k in kernels]
    assert all(TRIALS < a <= TRIALS + 4 for a in after), after


def test_build_uses_the_tuned_schedules_and_stays_correct(tuned_only):
    m = model()
    for strategy in ("cpu",):  # the tuned kernel is the whole op on the host
        compiled = compile_model(m, parse_devices("cpu,cpu"), strategy, tuning_db=tuned_only)
        names = tuned_kernels(compiled.build.module)
        assert names, "no kernel took a schedule from the database"
        func = compiled.build.module[compiled.build.module.get_global_var(names[0])]
        assert func.attrs[SCHEDULE_ATTR] == "tuned" and func.attrs["tirx.is_scheduled"]
        err, tol = check(compiled)
        assert err <= tol
    untuned = compile_model(m, parse_devices("cpu,cpu"), "cpu")
    assert tuned_kernels(untuned.build.module) == []


def test_a_record_tuned_for_a_small_kernel_is_replayed_without_its_parallel_loop():
    """Records MetaSchedule found on the rocketlake VM (shipped): each for a kernel under
    ``transfer.SERIAL_FLOPS`` whose parallel loop a build's ``target`` takes off, computing the same
    values as the record as tuned; a kernel above it keeps its loop."""
    import numpy as np
    import tvm

    from tvm_partition.build.transfer import SERIAL_FLOPS, provenance, serial
    from tvm_partition.build.databases import open_best
    from tvm_partition.build.tuning import scheduled

    db = open_best(os.path.join(REPO, "tuning_logs", "intel-r-xeon-r-processor-rocketlake-2c"))
    own = [r for r in db.get_all_tuning_records() if not is_default(r) and provenance(r.trace) is None]
    small = [r for r in own if serial(r.workload.mod, r.target) and "T.parallel" in scheduled(None, r).script()]
    large = [r for r in own if not serial(r.workload.mod, r.target) and "T.parallel" in scheduled(None, r).script()]
    assert small and large, "the shipped database has records of both kinds"
    assert all("T.parallel" in scheduled(None, r, r.target).script() for r in large)
    for r in small[:2]:
        assert float(tvm.s_tir.analysis.estimate_tir_flops(r.workload.mod)) < SERIAL_FLOPS
        as_tuned, serial_replay = scheduled(None, r), scheduled(None, r, r.target)
        assert "T.parallel" not in serial_replay.script()
        outs = []
        for func in (as_tuned, serial_replay):  # compiled for this machine: the records' CPU has AVX-512, a Zen 2 not
            lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target="llvm")
            data = np.random.default_rng(1)  # the same arguments for both
            arrays = [tvm.runtime.tensor(data.standard_normal([int(x) for x in b.shape]).astype(str(b.dtype)))
                      for b in func.params]
            lib["main"](*arrays)
            outs.append(arrays[-1].numpy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


def test_the_matmul_template_races_a_record_tuned_here_and_the_faster_keeps_the_kernel(tuned_only, tmp_path):
    import shutil

    from tvm_partition.build.databases import RACES_FILE
    from tvm_partition.build.tuning import TRANSFER_RULES, load_races, race_templates

    path = str(tmp_path / "db")
    shutil.copytree(tuned_only, path)  # the module's copy stays without races
    [kernel] = compute_kernels()
    target = tuning_target(kernel.device)
    assert templates.label(kernel.mod, target) == templates.MATMUL_LABEL
    assert open_schedules(path).schedule(kernel.mod, target)[1] == "tuned"  # no race yet: the record
    assert race_templates(open_database(path), path, [kernel], rounds=1) == 1
    [race] = load_races(path).values()
    assert race["kernel"] == kernel.name and race["record_us"] > 0 and race["template_us"] > 0
    assert race_templates(open_database(path), path, [kernel], rounds=1) == 0  # raced against this record already
    winner = templates.MATMUL_LABEL if race["template_us"] < race["record_us"] else "tuned"
    assert open_schedules(path).schedule(kernel.mod, target)[1] == winner

    def chosen_when(**change):  # the race's result rewritten
        races = load_races(path)
        races[next(iter(races))].update(change)
        with open(os.path.join(path, RACES_FILE), "w", encoding="utf-8") as fh:
            json.dump(races, fh)
        return open_schedules(path).schedule(kernel.mod, target)[1]

    assert chosen_when(template_us=0.5 * race["record_us"]) == templates.MATMUL_LABEL
    assert chosen_when(template_us=2.0 * race["record_us"]) == "tuned"
    # a race run against another record (tuning went on since) leaves the kernel to its record
    assert chosen_when(template_us=0.5 * race["record_us"], record_secs=2 * race["record_secs"]) == "tuned"
    # one run under older transfer rules: builds keep its verdict, and the next tune races again
    assert race["rules"] == TRANSFER_RULES
    assert chosen_when(template_us=0.5 * race["record_us"], record_secs=race["record_secs"],
                       rules=TRANSFER_RULES - 1) == templates.MATMUL_LABEL
    assert race_templates(open_database(path), path, [kernel], rounds=1) == 1
    [again] = load_races(path).values()
    assert again["rules"] == TRANSFER_RULES


def test_tune_with_no_trials_tunes_nothing_and_times_what_builds_choose_between(tuned, tmp_path):
    """``--trials 0``: no MetaSchedule trial and no record added; the template races the best
    record unless it is the default schedule (on this tiny kernel it usually is)."""
    import shutil

    from tvm_partition.build.databases import RACES_FILE
    from tvm_partition.build.tuning import load_races

    logs = tmp_path / "logs"
    shutil.copytree(tuned[0], logs)
    folder = database_dir(str(logs))
    if os.path.exists(os.path.join(folder, RACES_FILE)):  # the fixture's tune raced already
        os.remove(os.path.join(folder, RACES_FILE))
    [kernel] = compute_kernels()
    before = {f: open(os.path.join(folder, f), "rb").read() for f in ("database_workload.json",
                                                                     "database_tuning_record.json")}
    proc = cli("tune", *MODEL, "--devices", "cpu", "--trials", "0", "--tuning-logs", logs)
    assert proc.returncode == 0, proc.stderr
    assert "tuned 0, already tuned 1," in proc.stdout and "default schedules measured 0" in proc.stdout
    assert {f: open(os.path.join(folder, f), "rb").read() for f in before} == before
    db = open_database(folder)
    raced = not is_default(best_record(db, kernel.mod, tuning_target(kernel.device)))
    assert f"records raced by the matmul template {int(raced)}" in proc.stdout
    assert os.path.exists(os.path.join(folder, RACES_FILE)) == raced and len(load_races(folder)) == int(raced)


def test_cli_tuning_flags_and_manifest(tuned_only, tmp_path):
    logs = tuned_only
    with_db, without = tmp_path / "tuned", tmp_path / "untuned"
    a = cli("compile", *MODEL, "--devices", "cpu,cpu", "--strategy", "cpu", "--tuning-logs", logs,
            "--threads", "1", "--out", with_db, "--explain")
    assert a.returncode == 0, a.stderr
    assert "kernels tuned (database" in a.stdout
    b = cli("compile", *MODEL, "--devices", "cpu,cpu", "--strategy", "cpu", "--tuning-logs", logs, "--no-tuning",
            "--out", without)
    assert b.returncode == 0, b.stderr
    m_a = json.loads((with_db / "manifest.json").read_text())
    m_b = json.loads((without / "manifest.json").read_text())
    assert m_a["tuned_kernels"] and m_a["tuning_db"]
    assert m_b["tuned_kernels"] == [] and m_b["tuning_db"] is None
    assert m_a["num_threads"] == 1
    # the runner sizes TVM's thread pool from the manifest
    code = ("import tvm; from tvm_partition.runtime.runner import Runner; r = Runner(%r); "
            "r.run(r.example_inputs()); print(tvm.runtime.num_threads())" % str(with_db))
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TVM_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1"


def test_tune_list_and_bad_input(tuned):
    logs, _, _ = tuned
    listed = cli("tune", *MODEL, "--tuning-logs", logs, "--list")
    assert listed.returncode == 0
    lines = [line for line in listed.stdout.splitlines() if not line.startswith("copy")]
    # a tuned kernel says so, but where tune's race gave it to the matmul template (cold timings on
    # this machine: a suite run on a loaded VM had the template win): the label follows the race
    folder = database_dir(str(logs))
    db, races = open_database(folder), load_races(folder)
    want = ["template" if template_won(races, k.mod, tuning_target(k.device), best_record(db, k.mod, tuning_target(k.device)))
            else "tuned" for k in compute_kernels()]
    assert [line.split()[0] for line in lines] == want and len(want) == len(compute_kernels()) > 0
    for args, message in [
        (["--trials", "-1"], "--trials must be >= 0"),
        (["--ratios", "1.5"], "strictly between 0 and 1"),
        (["--devices", "cpu,tpu"], "unknown device kind"),
    ]:
        proc = cli("tune", *MODEL, *args, "--list")
        assert proc.returncode != 0 and message in proc.stderr and "Traceback" not in proc.stderr


def test_kernel_benchmark_times_default_and_tuned_schedules(tuned, tmp_path):
    logs, _, _ = tuned
    proc = cli("bench-kernels", *MODEL, "--tuning-logs", logs, "--out", tmp_path, "--repeat", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "kernels.json").read_text())
    assert [r["kernel"] for r in result["kernels"]] == [k.name for k in compute_kernels()]
    assert all(r["default_us"] > 0 and r["tuned_us"] > 0 for r in result["kernels"])
    assert result["peak_gflops"] > 0
    [whole] = result["models"]
    assert whole["default_us"] > 0 and whole["tuned_us"] > 0
    assert "| model | kernel |" in (tmp_path / "kernels.md").read_text()


def test_the_peak_is_the_faster_gemm_of_numpy_and_onnxruntime(monkeypatch):
    import time

    from tvm_partition.bench import kernels

    monkeypatch.setattr(kernels, "_ort_matmul", lambda n, threads: lambda a, b: time.sleep(0.05))
    gflops, probe = kernels.peak(n=64, repeat=2)
    assert probe == "numpy" and gflops > 0
    monkeypatch.setattr(kernels, "_ort_matmul", lambda n, threads: lambda a, b: None)  # "instant"
    assert kernels.peak(n=64, repeat=2)[1] == "onnxruntime"
    monkeypatch.setattr(kernels, "_ort_matmul", lambda n, threads: None)  # not installed
    assert kernels.peak(n=64, repeat=2)[1] == "numpy"


def test_kernel_benchmark_of_transfer_times_whole_ops_and_parts(tuned_only, tmp_path):
    proc = cli("bench-kernels", *MODEL, "--tuning-logs", tuned_only, "--out", tmp_path, "--transfer",
               "--fractions", "0.5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "transfer.json").read_text())["transfer"]
    whole = [r for r in rows if r["fraction"] == 1.0]
    assert len(whole) == 1 and whole[0]["schedule"] == "tuned" and whole[0]["left_out_us"] >= 0
    # its own record left out, the kernel takes a shipped database's matmul record
    assert whole[0]["left_out_schedule"].startswith("transferred from "), whole[0]["left_out_schedule"]
    parts = [r for r in rows if r["fraction"] < 1.0]
    assert parts and all(r["schedule"].startswith("transferred from") and r["scheduled_us"] > 0 for r in parts)
    for r in parts:  # the whole op's time x the part's fraction (rounded to 0.01 us either side)
        assert r["ideal_us"] == pytest.approx(whole[0]["scheduled_us"] * r["size"] / r["full"], abs=0.011)
    assert "scheduled / ideal" in (tmp_path / "transfer.md").read_text()
    bad = cli("bench-kernels", *MODEL, "--tuning-logs", tuned_only, "--transfer", "--fractions", "1.5")
    assert bad.returncode == 2 and "strictly between 0 and 1" in bad.stderr and "Traceback" not in bad.stderr


def test_kernel_benchmark_on_a_machine_never_tuned(tmp_path):
    """No database of this machine (a new CPU): each kernel timed with TVM's default schedule and the
    one a build gives it, here transferred from a shipped database; no tuned column."""
    (tmp_path / "empty").mkdir()
    proc = cli("bench-kernels", *MODEL, "--tuning-logs", tmp_path / "empty", "--out", tmp_path / "out", "--no-models")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "kernels.json").read_text())["kernels"]
    assert rows and all(r["tuned_us"] is None and r["default_us"] > 0 for r in rows)
    assert all(r["transferred_us"] > 0 for r in rows)


def test_kernel_table_units():
    from tvm_partition.bench.kernels import render

    row = {"model": "m", "kernel": "k", "mflop": 2.0, "default_us": 4.0, "tuned_us": 1.0}
    table = render({"fingerprint": "f", "cpu": "c", "threads": 2, "peak_gflops": 4000.0, "kernels": [row], "models": []})
    # 2 MFLOP in 1 us is 2000 GFLOP/s, half of a 4000 GFLOP/s peak, 4x faster than 4 us
    assert "| 4.0x | 2000.0 | 50% |" in table


def test_a_budget_ends_the_session_after_the_round_in_flight(tmp_path, monkeypatch):
    from tvm_partition.build import tuning

    made = []  # one builder and one runner a call, for its session and its default schedules
    for name in ("_builder", "_runner"):
        monkeypatch.setattr(tuning, name, lambda make=getattr(tuning, name), name=name: made.append(name) or make())
    kernels = compute_kernels()
    path = str(tmp_path / "db")
    t0 = time.perf_counter()
    stats = tune(kernels, path, trials=64, budget_s=0.0)  # spent before it starts: nothing runs
    assert stats["tuned"] == 0 and stats["left"] == len(kernels) and time.perf_counter() - t0 < 30
    stats = tune(kernels[:1], path, trials=32, budget_s=1.0)
    db = open_database(path)
    records = [r for r in db.get_top_k(db.commit_workload(kernels[0].mod), 1000) if not is_default(r)]
    assert stats["tuned"] == 1  # the round measured before the deadline is kept
    assert sorted(made) == ["_builder", "_runner"] and stats["defaults"] == 1
    assert 0 < len(records) <= 16, "the session went on past its first round of 16 trials"


def test_compile_tune_budget_measures_the_plans_kernels_first(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    out = tmp_path / "art"
    proc = cli("compile", *MODEL, "--devices", "cpu", "--strategy", "cpu", "--tuning-logs", logs,
               "--tune-budget", "20", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "kernels of the plan in 20 s" in proc.stderr and "transferred schedules picked by measurement 1" in proc.stderr
    db = open_database(database_dir(str(logs)))
    assert all(db.has_workload(k.mod) for k in compute_kernels())  # each kernel has a record now
    labels = json.loads((out / "manifest.json").read_text())["kernel_schedules"]
    [label] = [v for k, v in labels.items() if "matmul" in k and v != PACKING_LABEL]
    # the build runs the fastest record the budget left: the measured pick of the transferred
    # schedules and the default, or a MetaSchedule trial that beat both in the time left; where
    # the pick is a transferred schedule, the matmul template outranks it (Schedules._choose: it
    # packs the weight at load time), as it did in a suite run on a busy machine, and so it does a
    # trial where it won their race (race_templates; CI on 2026-11-28 had the template win)
    [kernel] = compute_kernels()
    target = tuning_target(kernel.device)
    best = best_record(db, kernel.mod, target)
    races = load_races(database_dir(str(logs)))
    if provenance(best.trace) is not None or template_won(races, kernel.mod, target, best):
        want = templates.MATMUL_LABEL
    else:
        want = "default" if is_default(best) else "tuned"
    assert label == want
    bad = cli("compile", *MODEL, "--tune-budget", "-1")
    assert bad.returncode == 2 and "--tune-budget must be >= 0" in bad.stderr and "Traceback" not in bad.stderr


def test_a_cpu_session_registers_the_x86_intrinsics_only():
    """A CPU tuning session loads x86's tensor intrinsics and not CUDA's (24 s to import here),
    and MetaSchedule's own import of the package then finds it loaded."""
    code = ("import sys, tvm; from tvm_partition.build.tuning import load_intrinsics; load_intrinsics('llvm'); "
            "import tvm.s_tir.tensor_intrin; from tvm.s_tir import TensorIntrin; "
            "TensorIntrin.get('dot_16x4_vnni'); "
            "print('cuda' if 'tvm.s_tir.tensor_intrin.cuda' in sys.modules else 'x86 only')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "x86 only"


def _small_database(folder, records: int = 40):
    """``records`` records of a shipped database (all its workloads), at ``folder``: its records in
    turn, each pass over them with its run times scaled otherwise (the shipped databases keep a
    workload's fastest record per target and its default schedule's, tuning_logs/README.md, so a
    workload gets candidates of several speeds only so)."""
    src = os.path.join(REPO, "tuning_logs", "intel-r-xeon-r-processor-rocketlake-2c")
    folder.mkdir()
    (folder / "database_workload.json").write_text(open(os.path.join(src, "database_workload.json")).read())
    with open(os.path.join(src, "database_tuning_record.json")) as f:
        shipped = [json.loads(line) for line in f if line.strip()]
    lines = []
    for i in range(records):
        workload, (trace, run_secs, target, args) = shipped[i % len(shipped)]
        scale = (1.0, 1.7, 0.6, 1.3)[i // len(shipped) % 4]
        lines.append(json.dumps([workload, [trace, [x * scale for x in run_secs], target, args]]) + "\n")
    (folder / "database_tuning_record.json").write_text("".join(lines))
    return folder


def _contents(db) -> list:
    """Each record as (its workload's structural hash, its run times), sorted: comparable across opens."""
    import tvm_ffi

    return sorted((int(tvm_ffi.structural_hash(r.workload.mod)), tuple(float(x) for x in r.run_secs))
                  for r in db.get_all_tuning_records())


def test_a_torn_or_corrupt_database_line_costs_that_line_only(tmp_path, capfd):
    """A kill mid-append leaves a torn last line, and MetaSchedule refused the whole database for
    it (every compile failed). Readers now skip it and any corrupt line, with one warning naming
    the lines, and leave the files alone; tuning rewrites them whole and appends after them."""
    import tvm.s_tir.meta_schedule as ms

    db = _small_database(tmp_path / "db")
    whole = _contents(open_database(str(db)))
    assert len(whole) == 40 and not capfd.readouterr().err
    rec_file = db / "database_tuning_record.json"
    lines = rec_file.read_text().splitlines(keepends=True)
    torn = "".join(lines[:9] + ["{not json\n"] + lines[10:39]) + lines[39][: len(lines[39]) // 2]
    rec_file.write_text(torn)

    got = _contents(open_database(str(db)))
    err = capfd.readouterr().err
    assert f"{rec_file}: skipped 2 torn or corrupt line(s): line 10, 40" in err and err.count("\n") == 1, err
    assert len(got) == 38 and not set(got) - set(whole)
    assert rec_file.read_text() == torn  # reading repairs nothing

    tuning = open_database(str(db), create=True)  # what tune opens: the files rewritten whole first
    assert "skipped 2" in capfd.readouterr().err
    rec = tuning.get_all_tuning_records()[0]
    tuning.commit_tuning_record(ms.database.TuningRecord(rec.trace, tuning.commit_workload(rec.workload.mod),
                                                         [1e-3], rec.target, rec.args_info))
    assert all(json.loads(line) for line in rec_file.read_text().splitlines())
    assert len(_contents(open_database(str(db)))) == 39 and not capfd.readouterr().err


def test_the_best_records_read_off_the_json_lines_are_those_metaschedule_parses_fastest(tmp_path, monkeypatch, capfd):
    """open_best picks each workload's fastest record from the files' JSON lines and parses only
    those (MetaSchedule replays every record's trace: 20 s for the shipped Zen 3 database); the
    oracle is MetaSchedule's parse of the whole database. A torn line is dropped with the warning
    open_database gives, and the pick is the same without it."""
    import tvm_ffi

    from tvm_partition.build import databases, tuning

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    db = _small_database(tmp_path / "db", records=200)
    rec_file = db / "database_tuning_record.json"
    lines = rec_file.read_text().splitlines(keepends=True)

    def fastest(full) -> list:
        best: dict = {}
        for r in full.get_all_tuning_records():
            key = (int(tvm_ffi.structural_hash(r.workload.mod)), str(r.target))
            if r.run_secs and (key not in best or tuning._mean_secs(r) < tuning._mean_secs(best[key])):
                best[key] = r
        return sorted((k[0], tuple(float(x) for x in r.run_secs), str(r.trace)) for k, r in best.items())

    def picked(folder) -> list:
        return sorted((int(tvm_ffi.structural_hash(r.workload.mod)), tuple(float(x) for x in r.run_secs), str(r.trace))
                      for r in databases.open_best(str(folder)).get_all_tuning_records())

    want = fastest(open_database(str(db)))
    assert len(want) > 1 and picked(db) == want
    assert len(databases._best_lines(str(db))[1]) == len(want) < 200
    rec_file.write_text("".join(lines) + lines[-1][:40])  # torn mid-append
    assert picked(db) == want and "skipped 1 torn or corrupt line(s): line 201" in capfd.readouterr().err


def test_a_corrupt_workload_line_drops_its_records_and_renumbers_the_rest(tmp_path, capfd):
    db = _small_database(tmp_path / "db")
    whole = _contents(open_database(str(db)))
    wl_file = db / "database_workload.json"
    workloads = wl_file.read_text().splitlines(keepends=True)
    index = json.loads((db / "database_tuning_record.json").read_text().splitlines()[0])[0]
    lost = int(json.loads(workloads[index])[0])  # MetaSchedule's first field: the workload's structural hash
    workloads[index] = workloads[index][:50] + "\n"
    wl_file.write_text("".join(workloads))
    got = _contents(open_database(str(db)))
    assert f"{wl_file}: skipped 1 torn or corrupt line(s): line {index + 1}" in capfd.readouterr().err
    assert got == [r for r in whole if r[0] != lost] and len(got) < len(whole)


def test_the_replay_rules_are_part_of_the_schedules_stamp(monkeypatch):
    """Samples profiled under other transfer rules ran other kernels: the stamp names the rules."""
    from tvm_partition.build import tuning

    stamp = open_schedules(None).stamp
    assert stamp and open_schedules(None).stamp == stamp
    monkeypatch.setattr(tuning, "TRANSFER_RULES", tuning.TRANSFER_RULES + 1)
    assert open_schedules(None).stamp != stamp
    assert open_schedules(None, transfer=False).stamp == ""  # nothing read, nothing transferred


HOPPER_VARIANTS = [os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results", machine, "gpu_proof",
                                "variants.json")
                   for machine in ("intel-r-xeon-r-processor-x86-64-v3-16c-nvidia-h100-80gb-hbm3",
                                   "intel-r-xeon-r-processor-x86-64-v3-16c-nvidia-h200")]


def test_gpu_kernels_take_the_dlight_rule_the_hopper_gpus_measured_quickest_within_a_tenth():
    """Every ResNet-18 (64 px) convolution and matmul, and every BERT-tiny and LSTM matmul, the H100
    and the H200 machines timed under each dlight rule (the GPU proof's ``variants``, 2026-11-27,
    two runs; the LSTM's on the H200 only): on each, the
    rule ``schedule_gpu`` picks is never slower than dlight's first rule, and all together within
    1.1x of the quickest rule of each (dlight's order alone: 8.3x on ResNet-18, whose 3x3
    convolutions Matmul spreads over 4-8 blocks)."""
    import tvm

    from tvm_partition.build.gpu_schedules import GPU_RULES, gpu_rule
    from tvm_partition.profiling.samples import lower_sample, sample_module, samples_of

    machines = []
    for path in HOPPER_VARIANTS:
        with open(path, encoding="utf-8") as f:
            measured = {}
            for r in json.load(f):
                if r["device"] == "gpu":
                    measured.setdefault((r["model"], r["fused"]), {})[r["rule"]] = r["mean_us"]
        machines.append(measured)
    gpu = parse_devices("cpu,gpu")[1]
    totals = [[0.0, 0.0, 0.0, 0] for _ in machines]  # picked, first, best us; kernels
    for name, opts in (("resnet18", {"image_size": 64}), ("bert-tiny", {}), ("lstm", {"seq_len": 10})):
        graph = OpGraph(frontend.load(name, seed=0, **opts).mod)
        for s in samples_of(graph, ["gpu"]):
            op = graph.ops[s.op_id]
            timed = [(m.get((name, op.fused_name)), t) for m, t in zip(machines, totals)]
            if s.size != s.full or not any(times for times, _ in timed) or name != "resnet18" and s.kind != "matmul":
                continue
            [(kname, kmod)] = lower_sample(sample_module(graph, op, s.dim, s.size))
            func = kmod["main"].with_attr("target", gpu.tvm_target())
            rule, _ = gpu_rule(tvm.ir.GlobalVar(kname), func)
            for times, total in timed:
                if not times:
                    continue
                first = times[next(r for r in GPU_RULES if r in times)]
                assert times[rule] <= first, (op.fused_name, rule)
                total[:] = total[0] + times[rule], total[1] + first, total[2] + min(times.values()), total[3] + 1
    for picked_us, first_us, best_us, kernels in totals:
        assert kernels >= 18 and picked_us <= 1.1 * best_us < first_us / 5
