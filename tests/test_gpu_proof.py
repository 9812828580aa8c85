"""benchmarks/gpu_proof: the GPU proof kit's dry run, so that it cannot rot where CI has no GPU.

The kit is packed with its ``dry`` settings (``cpu,cpu``: no GPU rows, tiny models, the same
parts, steps and files as on a GPU machine); its three steps run as the GPU machine runs them:
``run.py`` under ``python -S`` with numpy alone on the path (no site-packages, so no compiler TVM
and no tvm_partition but the kit's); the folders they write are imported into a copy of the
repository's results. Then what the kit must catch: an artifact damaged after packing, a result
missing on import, a kit over the device tool's size limit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from rpc_servers import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks", "gpu_proof"))
import kit as gpu_kit  # noqa: E402
import there  # noqa: E402
from tvm_partition.bench.results import ms_cell  # noqa: E402
from tvm_partition.cost_models.logs import ProfileLog  # noqa: E402

STEPS = (1, 2, 3)


def pack(out, *argv) -> tuple[int, str, str]:
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        rc = gpu_kit.main(["pack", "--config", "dry", "--out", str(out), *argv])
    return rc, o.getvalue(), e.getvalue()


def numpy_only(folder) -> str:
    """A folder holding nothing but numpy (links to this environment's), for ``python -S``."""
    os.makedirs(folder, exist_ok=True)
    site = os.path.dirname(os.path.dirname(np.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.exists(os.path.join(site, name)):
            os.symlink(os.path.join(site, name), os.path.join(folder, name))
    return str(folder)


def run_step(carry, step: int, out, tmp) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp), "PYTHONPATH": numpy_only(os.path.join(tmp, "np"))
           if not os.path.exists(os.path.join(tmp, "np")) else os.path.join(tmp, "np")}
    return subprocess.run([sys.executable, "-S", os.path.join(carry, "run.py"), str(step), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)


def import_(kit_dir, root, *dirs) -> tuple[int, str]:
    o = io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(o):
        rc = gpu_kit.main(["import", *map(str, dirs), "--kit", str(kit_dir), "--root", str(root)])
    return rc, o.getvalue()


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    if there.cpu_level(there.cpu_flags()) < "x86-64-v3":
        pytest.skip("the kit's CPU kernels are compiled for x86-64-v3 (AVX2, FMA): this CPU lacks them")
    out = tmp_path_factory.mktemp("kit") / ".gpu-kit"
    rc, text, err = pack(out)
    assert rc == 0, err[-3000:]
    return out, text


@pytest.fixture(scope="module")
def ran(packed, tmp_path_factory):
    out, _ = packed
    tmp = tmp_path_factory.mktemp("there")
    results = []
    for step in STEPS:
        proc = run_step(out / "carry" / str(step), step, tmp / f"out{step}", tmp)
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
        results.append(tmp / f"out{step}")
    return tmp, results


def test_pack_writes_the_carry_and_prints_its_size_and_the_plan(packed):
    out, text = packed
    kit = there.load_kit(str(out / "stage"))
    assert sorted(os.listdir(out / "carry")) == [str(s) for s in STEPS]  # a folder a step: one call carries one
    assert there.plan_text(kit) in text and "of the device tool's 64 MiB" in text
    assert [[p["name"] for p in s["parts"]] for s in kit["plan"]["steps"]] == \
        [["checks", "quick"], ["split-ops", "profile"], ["variants", "crossover"]]
    assert all(s["budget_s"] < s["timeout_s"] <= 600 for s in kit["plan"]["steps"])
    names, weights = [], []
    for s in kit["plan"]["steps"]:
        folder = out / "carry" / str(s["step"])
        assert sorted(os.listdir(folder)) == ["kit.tar.gz", "run.py"]
        size = sum(os.path.getsize(folder / n) for n in os.listdir(folder)) / 2**20
        assert f"step {s['step']}: kit {size:.1f} MiB" in text
        assert f'carry=[".gpu-kit/carry/{s["step"]}"], timeout_s={s["timeout_s"]}' in text
        with tarfile.open(folder / "kit.tar.gz") as tar:
            mine = tar.getnames()
            # every artifact is a zoo model or one of its ops: no weights travel, they are drawn again
            # there; a params.npz travels only where it holds none (an op that reads no weight)
            weights += [len(np.load(io.BytesIO(tar.extractfile(n).read())).files) for n in mine
                        if n.endswith("params.npz")]
        # a step's kit holds its own parts and no other's
        steps_parts = {p["name"] for p in s["parts"]}
        assert {n.split("/")[1] for n in mine if n.startswith("parts/")} == steps_parts - {"checks"}
        assert ("export/checks/checks.json" in mine) == ("checks" in steps_parts)
        names += mine
    arts = {n for n in names if n.endswith("/manifest.json")}  # quick and split-ops share an export
    assert len(arts) == len(kit["parts"]["checks"]["checks"]) + sum(
        len(kit["parts"][p]["rows"]) for p in ("quick", "split-ops", "crossover"))
    assert len(weights) < len(arts) and not any(weights)
    assert "site/tvm/lib/libtvm_runtime.so" in names and not [n for n in names if "libtvm_compiler" in n]
    assert {"there.py", "kit.json", "weights.json", "parts/profile/time_samples.py", "parts/variants/time_samples.py",
            "parts/quick/run_bench.py", "parts/split-ops/bench.json"} <= set(names)


def test_the_steps_run_with_the_runtime_alone_and_write_every_result(packed, ran):
    out, _ = packed
    kit = there.load_kit(str(out / "stage"))
    _, dirs = ran
    files = [sorted(os.listdir(d)) for d in dirs]
    assert files == [["bench-quick.json", "checks.json", "facts-1.json", "facts-1.txt", "log-1.txt"],
                     ["bench-split-ops.json", "facts-2.json", "facts-2.txt", "log-2.txt", "profile.jsonl"],
                     ["bench-crossover.json", "facts-3.json", "facts-3.txt", "log-3.txt", "variants.jsonl"]]
    checks = json.loads((dirs[0] / "checks.json").read_text())
    assert [c["id"] for c in checks] == [c["id"] for c in kit["parts"]["checks"]["checks"]]
    assert all(c["ok"] and c["runtime_only"] and c["max_abs_err"] <= c["tol"] for c in checks), checks
    # the bytecode twin ran too (what tells a compiled main's failure from a kernel's there)
    assert all(c["twin_max_abs_err"] <= c["tol"] and "main_error" not in c for c in checks), checks
    for d, part in ((dirs[0], "quick"), (dirs[1], "split-ops"), (dirs[2], "crossover")):
        rows = json.loads((d / f"bench-{part}.json").read_text())
        assert [r["id"] for r in rows] == kit["parts"][part]["rows"]
        assert all(r["measured_median_us"] > 0 for r in rows)
    assert sum(1 for _ in open(dirs[1] / "profile.jsonl")) == kit["parts"]["profile"]["samples"]
    # every matmul of the LSTM, whole, once per distinct computation, as its build schedules it (a CPU)
    variants = [json.loads(x) for x in open(dirs[2] / "variants.jsonl")]
    assert len(variants) == kit["parts"]["variants"]["samples"] > 0 and all(v["mean_us"] > 0 for v in variants)
    log = (dirs[0] / "log-1.txt").read_text()
    assert "params.npz drawn again from 1 seeded recipes" in log and "part quick: done" in log
    facts = (dirs[0] / "facts-1.txt").read_text()
    assert "$ lscpu" in facts and "$ nvidia-smi" in facts
    assert json.loads((dirs[0] / "facts-1.json").read_text())["cpu_level"].startswith("x86-64")


def test_import_merges_every_result_and_regenerates_benchmarks(packed, ran, tmp_path):
    out, _ = packed
    kit = there.load_kit(str(out / "stage"))
    _, dirs = ran
    shutil.copy(os.path.join(REPO, "BENCHMARKS.md"), tmp_path / "BENCHMARKS.md")
    rc, text = import_(out, tmp_path, *dirs)
    assert rc == 0, text
    machine = json.loads((dirs[0] / "facts-1.json").read_text())["machine"]
    folder = tmp_path / "benchmarks" / "results" / machine
    rows = json.loads((folder / "bench" / "results.json").read_text())
    expected = {i for p in ("quick", "split-ops", "crossover") for i in kit["parts"][p]["rows"]}  # a row in two parts: one
    assert len(rows) == len(expected) and all(r["measured_median_us"] > 0 and r["predicted_us"] for r in rows)
    assert len(open(tmp_path / "tuning_logs" / machine / "profile.jsonl").readlines()) == \
        kit["parts"]["profile"]["samples"]
    # the profiled model ran in the VM against its kernels alone there, keyed by its graph, and so
    # did the model of its split-op row's op (one op: it prices that row)
    ctx, op = [r for r in ProfileLog(str(tmp_path / "tuning_logs" / machine)).comms() if r["comm"] == "context"]
    assert ctx["model"].startswith("lstm batch=2") and ctx["graph"].startswith("graph-") and ctx["vm_us"] > 0
    [split_op] = {r["model"] for r in rows if "/" in r["model"]}
    assert op["model"].split()[0] == split_op and op["ops"] == 1 and op["vm_us"] > 0
    assert sorted(os.listdir(folder / "gpu_proof")) == sorted(
        ["checks.json", "variants.json"] + [f"{k}-{s}.{e}" for s in STEPS for k, e in (("facts", "json"), ("facts", "txt"), ("log", "txt"))])
    md = (tmp_path / "BENCHMARKS.md").read_text()
    assert f"| lstm | batch=2 layers=2 seq_len=4 | equal | {ms_cell(rows[1]['measured_median_us'])} |" in md
    assert "checks: 1 of 1 passed" in text
    variants = json.loads((folder / "gpu_proof" / "variants.json").read_text())
    assert {(v["kind"], v["rule"]) for v in variants} == {("matmul", "build")} and "variants lstm/" in text


def test_a_damaged_artifact_and_a_missing_result_are_caught(packed, ran, tmp_path):
    out, _ = packed
    there_tmp, dirs = ran
    work = tmp_path / "work"
    # a copy of step 1's kit as `ran` unpacked it (run.py unpacks a kit once, named by its digest)
    (unpacked,) = [p for p in there_tmp.glob("tvmp-gpu-kit-*") if (p / "export" / "checks").is_dir()]
    unpacked = shutil.copytree(unpacked, work / unpacked.name, symlinks=True)
    model = unpacked / "export" / "checks" / "lstm-equal" / "model.so"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    proc = run_step(out / "carry" / "1", 1, tmp_path / "bad1", work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (check,) = json.loads((tmp_path / "bad1" / "checks.json").read_text())
    assert not check["ok"] and "model.so: checksum mismatch" in check["error"]
    rc, text = import_(out, tmp_path / "root", tmp_path / "bad1", dirs[1], dirs[2])
    assert rc == 1 and "missing or failed: check lstm-equal: exit 2: " in text and "checksum mismatch" in text
    os.remove(dirs[1] / "profile.jsonl")  # the last test that reads it
    rc, text = import_(out, tmp_path / "root2", dirs[0], dirs[1])
    assert rc == 1
    assert "missing or failed: profile: no profile.jsonl" in text
    assert "missing or failed: crossover: nothing from step 3 (no facts-3.json)" in text


def test_a_kit_over_the_limit_is_refused_and_nothing_is_written(packed, tmp_path):
    out, _ = packed
    copy = tmp_path / ".gpu-kit"
    shutil.copytree(out, copy, symlinks=True)
    before = {p: p.read_bytes() for p in (copy / "carry").rglob("*") if p.is_file()}
    rc, _, err = pack(copy, "--limit-mib", "1")
    lines = err.strip().splitlines()
    assert rc == 2 and lines[-1].startswith("error: step 1: kit ") and lines[-1].endswith(
        "of the device tool's 1 MiB: over; leave parts out (--parts) or shrink the tree")
    assert {p: p.read_bytes() for p in (copy / "carry").rglob("*") if p.is_file()} == before
    assert sorted(os.listdir(copy)) == ["carry", "stage"]


def test_the_checkout_leaves_a_step_of_the_gpu_kit_its_room():
    """The device tool sends the whole tree with every call: the pack refuses a step past 64 MiB
    with it, but only on the day a GPU machine is lent (2026-11-30: a 50.7 MiB tree and a 14.0 MiB
    step). Checked here, where CI sees the tree grow."""
    size, where = gpu_kit.tree_bytes(REPO)
    if not size:
        pytest.skip(where)
    assert size / 2**20 <= gpu_kit.LIMIT_MIB - gpu_kit.KIT_ROOM_MIB, f"{where}: {size / 2**20:.1f} MiB"


def test_variants_hold_each_gpu_kernel_under_every_dlight_rule_that_schedules_it(tmp_path, monkeypatch):
    """The variants part on cpu,gpu (built here, timed only on a GPU machine): each matmul of a
    one-layer LSTM once on the CPU as built and once per dlight rule that schedules it, a library
    per rule whose CUDA NVRTC compiles for sm_90; a rule NVRTC refuses is left out whole."""
    import argparse
    import dataclasses

    from tvm_partition.build.gpu_schedules import GPU_RULES
    from tvm_partition.devices import parse_devices

    cfg = dataclasses.replace(gpu_kit.DRY, devices="cpu,gpu", variants=(("lstm", {"seq_len": 2, "batch": 2,
                                                                                  "layers": 1}),))
    devices = parse_devices("cpu,gpu", cpu_mcpu="x86-64-v3")
    args = argparse.Namespace(tuning_logs=None, gpu_arch="sm_90")
    checked = []
    compiles = gpu_kit._compiles
    monkeypatch.setattr(gpu_kit, "_compiles", lambda module, arch, what: checked.append(what) or compiles(
        module, arch, what))
    spec = gpu_kit.variants_bundle(str(tmp_path / "v"), cfg, devices, args)
    records = spec["records"].values()
    ops = {r["sig"] for r in records}
    rules = {(r["sig"], r["device"], r["rule"]) for r in records}
    assert ops and {(s, "cpu", "build") for s in ops} | {(s, "gpu", "Matmul") for s in ops} <= rules
    assert {r["rule"] for r in records if r["device"] == "gpu"} <= set(GPU_RULES)
    files = {lib["file"] for lib in spec["libraries"]}
    assert files == {"cpu-build.so"} | {f"gpu-{r}.so" for _, d, r in rules if d == "gpu"}
    assert len(checked) == len(files) - 1 and all((tmp_path / "v" / f).exists() for f in files)

    monkeypatch.setattr(gpu_kit, "_compiles", lambda module, arch, what: "Matmul" not in what)
    spec = gpu_kit.variants_bundle(str(tmp_path / "w"), cfg, devices, args)
    assert not [r for r in spec["records"].values() if r["rule"] == "Matmul"]
    assert "gpu-Matmul.so" not in {lib["file"] for lib in spec["libraries"]}


def test_gpu_calls_picks_the_rnns_gpu_and_split_rows():
    sys.path.insert(0, os.path.join(REPO, "benchmarks", "gpu_proof"))
    import gpu_calls

    names = ["gru-batch16-layers2-seq_len10-cpu_gpu-equal", "lstm-batch16-layers2-seq_len10-cpu_gpu-cpu",
             "lstm_fused_matmul_add_add-batch16-layers2-seq_len10-cpu_gpu-gpu", "bert-tiny-batch16-cpu_gpu-gpu",
             "lstm-batch16-layers2-seq_len10-cpu_gpu-equal", "lstm-batch16-layers2-seq_len10-cpu_gpu-gpu",
             "gru-batch16-layers2-seq_len10-cpu_gpu-gpu", "lstm-batch16-layers2-seq_len10-cpu_cpu-equal"]
    assert gpu_calls.rows(names) == ["lstm-batch16-layers2-seq_len10-cpu_gpu-gpu",
                                     "lstm-batch16-layers2-seq_len10-cpu_gpu-equal",
                                     "gru-batch16-layers2-seq_len10-cpu_gpu-gpu",
                                     "gru-batch16-layers2-seq_len10-cpu_gpu-equal"]
    assert gpu_calls.rows(names, "cpu_cpu") == ["lstm-batch16-layers2-seq_len10-cpu_cpu-equal"]


def test_gpu_calls_times_each_row_call_by_call_then_plain(packed, ran, tmp_path):
    """On the dry kit (cpu,cpu: no GPU row, nothing to time, exit 0), and on its split row as if it
    were one (``--devices cpu_cpu``): a table of calls, then a plain run; import keeps both files."""
    tmp, dirs = ran
    out = tmp / "calls"
    env = {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp), "PYTHONPATH": str(tmp / "np")}
    script = os.path.join(REPO, "benchmarks", "gpu_proof", "gpu_calls.py")
    proc = subprocess.run([sys.executable, "-S", script, "--out", str(out)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0 and "nothing to time" in proc.stdout and not out.exists()
    proc = subprocess.run([sys.executable, "-S", script, "--out", str(out), "--devices", "cpu_cpu", "--repeat", "3"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    lines = [json.loads(x) for x in (out / "gpu-calls.jsonl").read_text().splitlines()]
    assert [r["kernels"] for r in lines] == [True, False]
    assert all(r["rc"] == 0 and r["median_us"] > 0 and r["artifact"].endswith("-cpu_cpu-equal") for r in lines)
    assert (out / "gpu-calls.txt").read_text().count("sum of calls") == 1
    import_(packed[0], tmp_path, dirs[0], out)
    machine = json.loads((dirs[0] / "facts-1.json").read_text())["machine"]
    proof = tmp_path / "benchmarks" / "results" / machine / "gpu_proof"
    assert (proof / "gpu-calls.jsonl").read_text() == (out / "gpu-calls.jsonl").read_text()


def test_cpu_threads_times_the_quick_cpu_rows_at_each_thread_count(packed, ran, tmp_path):
    tmp, dirs = ran  # the steps' TMPDIR: where run.py unpacked the kit
    out = tmp / "threads"
    env = {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp), "PYTHONPATH": str(tmp / "np")}
    proc = subprocess.run([sys.executable, "-S", os.path.join(REPO, "benchmarks", "gpu_proof", "cpu_threads.py"),
                           "--out", str(out), "--threads", "1,2", "--repeat", "3", "--rounds", "1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    lines = [json.loads(x) for x in (out / "cpu-threads.jsonl").read_text().splitlines()]
    # --kernels at the fewest and the most, then round 0 at each count: the dry kit's one cpu row
    assert [(r["round"], r["threads"]) for r in lines] == [(None, 1), (None, 2), (0, 1), (0, 2)]
    assert all(r["rc"] == 0 and r["median_us"] > 0 and r["artifact"].endswith("-cpu_cpu-cpu") for r in lines)
    tables = (out / "cpu-kernels.txt").read_text()
    assert tables.count("sum of calls") == 2 and "TVM_NUM_THREADS=2" in tables
    # brought back beside a step's files, import keeps both beside the step's facts (steps 2 and 3
    # left out here: the import says they are missing)
    rc, text = import_(packed[0], tmp_path, dirs[0], out)
    machine = json.loads((dirs[0] / "facts-1.json").read_text())["machine"]
    proof = tmp_path / "benchmarks" / "results" / machine / "gpu_proof"
    assert rc == 1 and "nothing from step 2" in text
    assert (proof / "cpu-threads.jsonl").read_text() == (out / "cpu-threads.jsonl").read_text()
    assert (proof / "cpu-kernels.txt").read_text() == tables
    # an empty file brought back (a script that ran out of time before its tables) is left out
    (out / "cpu-kernels.txt").write_text("")
    (proof / "cpu-kernels.txt").unlink()
    import_(packed[0], tmp_path, dirs[0], out)
    assert not (proof / "cpu-kernels.txt").exists() and (proof / "cpu-threads.jsonl").exists()


def test_a_kit_for_a_cpu_level_this_cpu_lacks_is_refused_in_one_line():
    v3 = set().union(*(needs for _, needs in there.LEVELS[:2]))
    assert there.cpu_level(v3) == "x86-64-v3"
    there.require_cpu_level({"target_cpu": "x86-64-v3"}, v3)
    there.require_cpu_level({"target_cpu": "znver4"}, v3)  # a named CPU: the packer's word for it
    with pytest.raises(there.KitError, match="compiled for x86-64-v4; this CPU is x86-64-v3: pack the kit again "
                                             "with --target-cpu x86-64-v3"):
        there.require_cpu_level({"target_cpu": "x86-64-v4"}, v3)


@pytest.mark.parametrize("levels, expected", [((), "x86-64-v3"), (("x86-64-v4", "x86-64-v4"), "x86-64-v4"),
                                              (("x86-64-v4", "x86-64-v3"), "x86-64-v3"),
                                              (("x86-64-v4", None), "x86-64-v3")])
def test_the_kit_compiles_for_the_lowest_level_the_gpu_machines_reported(tmp_path, levels, expected):
    for i, level in enumerate(levels):
        folder = tmp_path / "benchmarks" / "results" / f"machine{i}" / "gpu_proof"
        folder.mkdir(parents=True)
        (folder / "facts-1.json").write_text(json.dumps({"step": 1} | ({"cpu_level": level} if level else {})))
    assert gpu_kit.recorded_cpu_level(str(tmp_path)) == expected


def test_checks_run_several_at_once_and_keep_the_kits_order(tmp_path, monkeypatch):
    """run_checks runs CHECK_WORKERS checks at a time (they time nothing), each child with the
    machine's cores shared out; checks.json lists them in the kit's order whatever order they end
    in, and a check the deadline stops is left out, not reported failed."""
    import threading
    import time

    running, peak, lock, envs = [0], [0], threading.Lock(), []
    slow = {"c0": 0.3, "c1": 0.05, "c2": 0.2, "c3": 0.05, "c4": 0.1, "late": 30.0}

    def fake_bounded(cmd, env, deadline, say=None):
        cid = cmd[cmd.index("check") + 1]
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            envs.append(env.get("TVM_NUM_THREADS"))
        try:
            if time.monotonic() + slow[cid] > deadline:
                time.sleep(max(0.0, deadline - time.monotonic()))
                return None, ""
            time.sleep(slow[cid])
            return 0, json.dumps({"ok": True, "max_abs_err": 0.0, "tol": 1.0})
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(there, "bounded", fake_bounded)
    monkeypatch.setattr("tvm_partition.devices.usable_cpus", lambda: 16)
    kit = {"parts": {"checks": {"checks": [{"id": c} for c in slow]}}}
    lines = []
    there.run_checks(str(tmp_path), kit, {"name": "checks"}, str(tmp_path), time.monotonic() + 2.0, {}, lines.append)
    with open(tmp_path / "checks.json", encoding="utf-8") as f:
        results = json.load(f)
    assert [r["id"] for r in results] == ["c0", "c1", "c2", "c3", "c4"]  # the kit's order; 'late' left out
    assert all(r["ok"] for r in results)
    assert peak[0] == there.CHECK_WORKERS > 1
    assert set(envs) == {str(16 // there.CHECK_WORKERS)}
    assert any("1 of 6 left" in line for line in lines)


def test_import_says_what_a_gpu_context_leaves_over_its_entry_copies_and_kernels(tmp_path):
    """A model timed on the GPU (:func:`kit.gpu_context_lines`): its run in the VM less its entry,
    its copies priced by the profile's series, and its kernels alone, over its launches."""
    log = ProfileLog(str(tmp_path))

    def comm(kind, src, dst, nbytes, us, **extra):
        log.append({"type": "comm", "comm": kind, "src": src, "dst": dst, "bytes": nbytes, "mean_us": us, **extra})

    for src, dst in (("cpu", "gpu"), ("gpu", "cpu")):
        comm("copy", src, dst, 1000, 10.0)
        comm("copy", src, dst, 3000, 14.0)
    comm("launch", "gpu", "gpu", 0, 4.0, kernels=256)
    comm("context", "gpu", "gpu", 0, 2.0, model="lstm seq_len=10", vm_us=300.0, warm_us=100.0, kernels=40,
         entry_us=2.0, in_bytes=2000, out_bytes=1000)
    comm("context", "cpu", "cpu", 0, 1.2, model="lstm seq_len=10", vm_us=150.0, warm_us=125.0, kernels=40)
    # 300 - 2 - (12 + 10) - 100 = 176 us left, 4.40 a launch
    assert gpu_kit.gpu_context_lines(str(tmp_path / "none")) == []
    assert gpu_kit.gpu_context_lines(str(tmp_path)) == [
        "GPU context of lstm seq_len=10: 300.0 us in the VM from the host; entry 2.0, copies 22.0 (priced), "
        "its 40 launches 100.0 alone: 176.0 us left, 4.40 a launch (the profile's launch chain: 4.00)",
        "the cost model prices a run's use of the GPU at 176.0 us and each GPU kernel's gap on its stream at 0.00 us "
        "(fitted to 1 of them)"]
    # a profile cut before its copies: they are left in what is left, and the import goes on
    bare = ProfileLog(str(tmp_path / "bare"))
    bare.append({"type": "comm", "comm": "context", "src": "gpu", "dst": "gpu", "bytes": 0, "mean_us": 2.0,
                 "model": "gru", "vm_us": 50.0, "warm_us": 20.0, "kernels": 1, "entry_us": 2.0, "in_bytes": 8})
    assert gpu_kit.gpu_context_lines(str(tmp_path / "bare")) == [
        "GPU context of gru: 50.0 us in the VM from the host; entry 2.0, copies not profiled, its 1 launches 20.0 "
        "alone: 28.0 us left, 28.00 a launch (the profile's launch chain: 0.00)",
        "the cost model prices a run's use of the GPU at 0.0 us and each GPU kernel's gap on its stream at 0.00 us "
        "(fitted to 0 of them)"]


def test_the_time_plan_starts_a_models_pytorch_rows_once():
    """bench_estimate: the PyTorch rows of a model setting share one process a round (torch's import,
    its CUDA context: :data:`kit.START_S`), as ``measure_interleaved`` runs them."""
    rows = [{"model": "lstm", "config": {"batch": 1}, "devices": "cpu,gpu", "strategy": s, "artifact": s,
             "predicted_us": p} for s, p in (("cpu", 1000.0), ("gpu", 1000.0), ("pytorch", None), ("pytorch-graph", None))]
    tvm, one, both = (gpu_kit.bench_estimate(rows[:n], 8) for n in (2, 3, 4))
    run = both - one  # a row's runs at the cpu row's predicted latency, no start
    assert 0 < run < 1 and one - tvm == pytest.approx(gpu_kit.START_S["pytorch"] + run)
    other = dict(rows[3], config={"batch": 2})  # another setting: another process
    assert gpu_kit.bench_estimate(rows + [other], 8) - both == pytest.approx(gpu_kit.START_S["pytorch"] + 3 * 1e-3 + 0.08)
