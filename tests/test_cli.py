"""The two command lines, as a user runs them: ``python -m tvm_partition compile`` and ``... .run``.

Everything here is a subprocess with ``sys.executable``. Good input must succeed with the documented
output; bad input must exit non-zero with one ``error: ...`` line on stderr and no traceback.

Each subprocess spends most of its time importing TVM, so the ``cli_results`` fixture runs all of
them once, concurrently (one per core), and the tests check the results. Commands that need the
lstm artifact (``run``, a saved plan) are queued as soon as it is written.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tvm_partition.devices import cpu_flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LSTM = ["lstm", "--seq-len", "3", "--batch", "2"]
CPU2 = ["--devices", "cpu,cpu"]
LSTM_INPUT = {"name": "x", "shape": [2, 3, 80], "dtype": "float32"}
LSTM_OUTPUT = {"name": "output0", "shape": [2, 64], "dtype": "float32"}


def cli(command: str, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "tvm_partition", command, *map(str, args)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout,
    )


def in_process(command: str, *args) -> subprocess.CompletedProcess:
    """The command run in this process (``module.main``), as :func:`cli` reports it: refusals end
    before any real work, so the 3-4 s a subprocess spends importing TVM would be most of their time."""
    import contextlib
    import io

    from tvm_partition.cli import command_module

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = command_module(command).main([str(a) for a in args])
        except SystemExit as e:
            rc = e.code
    return subprocess.CompletedProcess([command, *args], rc, out.getvalue(), err.getvalue())


#: Jobs run in this process, beside the subprocesses of the others: those that only refuse (bad
#: input), and compiles whose command line other jobs' subprocesses cover (``art``, ``gpu-art``,
#: ``profile-budget``): a subprocess spends 4-5 s of CPU importing TVM, ours and their libraries
#: (2026-11-29, ``python -X importtime``), on a machine the suite keeps busy.
IN_PROCESS = ("strategy-unknown", "illegal-softmax", "run-missing-dir", "plan-ratio", "run-tampered", "run-no-sha",
              "run-wrong-name", "run-wrong-shape", "run-unwritable-output",
              "check-explain", "strategy-cpu", "strategy-gpu", "eop-explain", "free-batch", "saved-plan")


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def max_abs_err(proc) -> float:
    m = re.search(r"^max_abs_err=(\S+)$", proc.stdout, re.M)
    assert m, proc.stdout
    return float(m.group(1))


def assert_clean_error(proc, pattern: str, rc: int | None = None) -> str:
    """Non-zero exit, exactly one ``error:`` line (ours, or argparse's ``prog: error:``), no traceback."""
    assert proc.returncode != 0, f"accepted bad input:\n{proc.stdout}\n{proc.stderr}"
    if rc is not None:
        assert proc.returncode == rc, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if re.match(r"^(\S.*: )?error: ", line)]
    assert len(errors) == 1, proc.stderr
    assert re.search(pattern, errors[0]), errors[0]
    return errors[0]


# --- bad input to compile: (args, pattern of the error line); {d} is the fixture's folder -------

COMPILE_REFUSALS = {
    "missing-onnx": (["{d}/missing.onnx"], r"missing\.onnx: no such file"),
    "corrupt-onnx": (["{d}/corrupt.onnx"], r"corrupt\.onnx: not a readable ONNX model"),
    "truncated-onnx": (["{d}/truncated.onnx"], r"truncated\.onnx: not a readable ONNX model"),
    "unsupported-op": (["{d}/custom_op.onnx", *CPU2], r"custom_op\.onnx: TVM's ONNX importer failed: .*FancyOp"),
    "free-sequence": (["{d}/symbolic_len.onnx", *CPU2], r"input 'x' has a free dimension 1 \(L\): give --seq-len N"),
    "free-unbound": (["{d}/symbolic_len.onnx", *CPU2, "--batch", "2", "--seq-len", "3", "--image-size", "8"],
                     r"--image-size binds a free height or width .* \(inputs: x 2x3\)"),
    "layers-onnx": (["{d}/free_batch.onnx", *CPU2, "--layers", "2"], r"--layers applies to the zoo's"),
    "dim-unknown": (["{d}/symbolic_len.onnx", *CPU2, "--dim", "L=3", "--dim", "M=2"],
                    r"--dim M: no input has a free dimension of that name \(the free ones: N, L\)"),
    "dim-syntax": (["{d}/symbolic_len.onnx", "--dim", "L"], r"--dim takes NAME=N, got 'L'"),
    "dim-zoo": (["lstm", "--dim", "L=3"], r"lstm: --dim binds an ONNX model's free dimensions by name"),
    "dim-not-a-model": (["{d}/model.txt", "--dim", "L=3"], r"model\.txt: not an \.onnx file"),
    "not-onnx": (["{d}/model.txt"], r"model\.txt: not an \.onnx file"),
    "unknown-zoo": (["nosuchnet"], r"unknown model 'nosuchnet'.*lstm"),
    "plan-not-json": ([*LSTM, *CPU2, "--plan", "{d}/not_json.json"], r"plan is not valid JSON"),
    "plan-missing": ([*LSTM, *CPU2, "--plan", "{d}/no_plan.json"], r"cannot read plan .*no_plan\.json"),
    "devices-gpu-first": ([*LSTM, "--devices", "gpu,cpu"], r"first device must be the host cpu"),
    "devices-tpu": ([*LSTM, "--devices", "cpu,tpu"], r"unknown device kind 'tpu'"),
    "batch-0": (["lstm", "--batch", "0"], r"--batch must be >= 1"),
    "profile-budget-negative": ([*LSTM, "--profile-budget", "-1"], r"--profile-budget must be >= 0"),
    "inapplicable-option": (["resnet18", "--seq-len", "4"], r"seq_len do not apply to zoo model 'resnet18'"),
    "out-is-a-file": ([*LSTM, *CPU2, "--out", "{d}/a_file"], r"a_file: cannot write the artifact"),
    # TVM's ONNX importer emits a per-channel PRelu that TVM's own legalization rejects
    "tvm-cannot-lower": ([os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data",
                                       "pytorch-converted", "test_PReLU_2d_multiparam", "model.onnx"), *CPU2],
                         r"TVM cannot lower this model"),
}


def softmax_onnx(path) -> None:
    """MatMul + Softmax over axis 1, the smallest model with a reduction a split must not cut."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Softmax", ["h"], ["y"], axis=1)],
        "softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.save(proto, str(path))


def odd_onnx(path, op_domain: str | None = None, dims=(4, 8)) -> None:
    """Relu, then an op of ``op_domain`` that no importer knows (``FancyOp``) if given; input dims
    may be symbolic names."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["h" if op_domain else "y"])]
    opsets = [helper.make_opsetid("", 13)]
    if op_domain:
        nodes.append(helper.make_node("FancyOp", ["h"], ["y"], domain=op_domain))
        opsets.append(helper.make_opsetid(op_domain, 1))
    graph = helper.make_graph(nodes, "odd", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))])
    proto = helper.make_model(graph, opset_imports=opsets)
    proto.ir_version = 8
    onnx.save(proto, str(path))


def illegal_softmax_plan(onnx_path, plan_path) -> str:
    """A plan splitting the softmax along its reduced axis; the op id comes from the OpGraph API."""
    from tvm_partition import frontend
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph

    g = OpGraph(frontend.load(str(onnx_path)).mod)
    (softmax,) = [i for i, op in g.ops.items() if op.kind == "softmax"]
    assert 1 not in g.ops[softmax].split_dims and 0 in g.ops[softmax].split_dims
    plan = {
        "version": 1, "strategy": "manual",
        "devices": [d.to_json() for d in parse_devices("cpu,cpu")],
        "ops": {softmax: {"kind": "split", "dim": 1, "ratios": [0.5, 0.5], "devices": ["cpu1", "cpu"]}},
    }
    plan_path.write_text(json.dumps(plan))
    return softmax


class Results(dict):
    """name -> CompletedProcess, plus the folder and facts the tests need."""

    def __getitem__(self, name):
        if name not in self:
            pytest.fail(f"{name!r} did not run: {self.get('why', 'a command it needs failed')}")
        return dict.__getitem__(self, name)


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "corrupt.onnx").write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    (d / "model.txt").write_text("not a model\n")
    (d / "not_json.json").write_text("{not json")
    (d / "a_file").write_text("")
    np.savez(d / "wrong_name.npz", y=np.zeros(LSTM_INPUT["shape"], np.float32))
    np.savez(d / "wrong_shape.npz", x=np.zeros([2, 4, 80], np.float32))
    softmax_onnx(d / "softmax.onnx")
    (d / "plogs").mkdir()  # a machine with no profile yet
    # the first half of a real model: a download cut short
    whole = (d / "softmax.onnx").read_bytes()
    (d / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    odd_onnx(d / "custom_op.onnx", op_domain="com.example")
    odd_onnx(d / "symbolic_len.onnx", dims=["N", "L"])
    odd_onnx(d / "free_batch.onnx", dims=["N", 8])
    res = Results(dir=d, softmax=illegal_softmax_plan(d / "softmax.onnx", d / "softmax_plan.json"))
    art, gpu_art, host_art = d / "art", d / "gpu_art", d / "host_art"

    jobs = {
        # first the two artifacts other commands need, then everything independent
        "art": ("compile", *LSTM, *CPU2, "--strategy", "equal", "--out", art),
        "gpu-art": ("compile", *LSTM, "--devices", "cpu,gpu", "--strategy", "gpu", "--out", gpu_art),
        # a cpu,gpu plan that launches nothing on the GPU (the README's LSTM, auto choosing cpu)
        "host-art": ("compile", *LSTM, "--devices", "cpu,gpu", "--strategy", "cpu", "--out", host_art),
        "check-explain": ("compile", *LSTM, *CPU2, "--strategy", "equal", "--check", "--explain"),
        # 60 s: 10 were spent building the sample kernels and timing one copy with two test workers
        # and this fixture's own jobs on 2 cores (2026-11-28), 43 on the Ice Lake VM in a slow phase
        # (2026-12-03: "profiled 0 samples" at a budget of 30)
        "profile-budget": ("compile", *LSTM, *CPU2, "--strategy", "cpu", "--profile-budget", 60,
                           "--tuning-logs", d / "plogs", "--explain"),
        "strategy-cpu": ("compile", *LSTM, *CPU2, "--strategy", "cpu", "--check"),
        "strategy-gpu": ("compile", *LSTM, *CPU2, "--strategy", "gpu", "--check"),
        # the shipped profile of the build machine (a CPU profile, no GPU one), whatever machine runs the test
        "eop-explain": ("compile", *LSTM, "--devices", "cpu,gpu", "--strategy", "eop", "--explain",
                        "--tuning-logs", os.path.join(REPO, "tuning_logs", "amd-epyc-znver3-2c")),
        "strategy-unknown": ("compile", *LSTM, "--strategy", "fastest"),
        "free-batch": ("compile", d / "free_batch.onnx", *CPU2, "--strategy", "cpu", "--check"),
        "illegal-softmax": ("compile", d / "softmax.onnx", "--plan", d / "softmax_plan.json"),
        "run-missing-dir": ("run", d / "nowhere"),
        **{f"refuse-{k}": ("compile", *[a.format(d=d) for a in args],
                           *([] if "--out" in args else ["--out", d / f"out-{k}"]))
           for k, (args, _) in COMPILE_REFUSALS.items()},
    }
    local = {k: jobs.pop(k) for k in list(jobs) if k in IN_PROCESS or k.startswith("refuse-")}
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        futures = {k: pool.submit(cli, *job) for k, job in jobs.items()}
        res.update({k: in_process(*job) for k, job in local.items()})

        res["art"] = futures.pop("art").result()
        if res["art"].returncode == 0:
            later = _after_art(d, art)
            futures.update({k: pool.submit(cli, *job) for k, job in later.items() if k not in IN_PROCESS})
            res.update({k: in_process(*job) for k, job in later.items() if k in IN_PROCESS})
        else:
            res["why"] = f"compile --out failed:\n{res['art'].stderr}"
        for name, folder in (("gpu-art", gpu_art), ("host-art", host_art)):
            res[name] = futures.pop(name).result()
            if res[name].returncode == 0:
                futures[f"run-{name}"] = pool.submit(cli, "run", folder, "--output", d / f"{name}.npz")
        res.update({k: f.result() for k, f in futures.items()})
    return res


#: an x86 extension this machine's CPU lacks: AMD's on Intel's, Intel's on AMD's
_LACKED = next(f for f in ("sse4a", "fma4", "amx_fp16", "avx512_vp2intersect") if f not in cpu_flags())


def _after_art(d, art) -> dict:
    from tvm_partition.inputs import random_input

    manifest = json.loads((art / "manifest.json").read_text())
    # the inputs `run` uses by default (seed 0), keyed by the manifest's input name
    info = manifest["inputs"][0]
    np.savez(d / "in.npz", **{info["name"]: random_input(info["shape"], info["dtype"], np.random.default_rng(0))})
    # a saved plan with one split's ratios changed to sum to 1.3
    plan = json.loads((art / "plan.json").read_text())
    op_id = next(k for k, v in sorted(plan["ops"].items()) if v["kind"] == "split")
    plan["ops"][op_id]["ratios"] = [0.65, 0.65]
    (d / "ratio_plan.json").write_text(json.dumps(plan))
    (d / "ratio_op").write_text(op_id)
    # a copy whose params.npz changed after compile, and one whose manifest lost its checksums
    shutil.copytree(art, d / "tampered")
    with np.load(d / "tampered" / "params.npz") as z:
        params = {k: z[k] for k in z.files}
    params["p0"] = params["p0"] + 1.0
    np.savez(d / "tampered" / "params.npz", **params)
    shutil.copytree(art, d / "no_sha")
    (d / "no_sha" / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "sha256"}))
    # a copy whose kernels would need an extension this CPU lacks (as an artifact compiled elsewhere)
    shutil.copytree(art, d / "other_cpu")
    (d / "other_cpu" / "manifest.json").write_text(json.dumps({**manifest, "cpu_flags": manifest["cpu_flags"] + [_LACKED]}))

    jobs = {
        "run-repeat": ("run", art, "--repeat", 5, "--output", d / "out.npz"),
        "run-input": ("run", art, "--input", d / "in.npz", "--output", d / "out2.npz"),
        "saved-plan": ("compile", *LSTM, *CPU2, "--plan", art / "plan.json", "--out", d / "again", "--check"),
        "plan-ratio": ("compile", *LSTM, *CPU2, "--plan", d / "ratio_plan.json"),
        "run-tampered": ("run", d / "tampered"),
        "run-no-sha": ("run", d / "no_sha"),
        "run-other-cpu": ("run", d / "other_cpu"),
        "run-wrong-name": ("run", art, "--input", d / "wrong_name.npz"),
        "run-wrong-shape": ("run", art, "--input", d / "wrong_shape.npz"),
        "run-unwritable-output": ("run", art, "--output", d / "a_file" / "out.npz"),
    }
    return jobs


# --- compile: the good path ------------------------------------------------------------------

def test_check_and_explain(cli_results):
    proc = ok(cli_results["check-explain"])
    assert max_abs_err(proc) <= 1e-4
    assert "checking: the artifact and the unpartitioned model" in proc.stderr  # said before the silent minutes
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("op "))
    for col in ("kind", "output", "MFLOP", "legal dims", "time from", "decision"):
        assert col in lines[header]
    m = re.search(r"^(\d+) fused ops; (\d+) splittable$", proc.stdout, re.M)
    assert m and int(m.group(1)) >= int(m.group(2)) >= 1
    rows = lines[header + 1: header + 1 + int(m.group(1))]
    assert all(re.match(r"^\d{3}_\S+ ", r) for r in rows), rows
    assert any("matmul" in r and "split batch cpu1:0.50 cpu:0.50" in r for r in rows)
    assert re.search(r"^op times from: \S+ \d+", proc.stdout, re.M), proc.stdout


def test_profile_budget_prices_the_plan_on_its_own_measurements(cli_results):
    """--profile-budget on a machine with no profile: the model's ops are timed first, appended to the
    machine's profile, and the plan's op times come from those measurements."""
    proc = ok(cli_results["profile-budget"])
    assert re.search(r"^profiled [1-9]\d* samples of lstm in \d+ s", proc.stderr, re.M), proc.stderr
    (log,) = (cli_results["dir"] / "plogs").glob("*/profile.jsonl")
    assert sum(1 for _ in log.open()) >= 1
    sources = re.search(r"^op times from: (.*)$", proc.stdout, re.M).group(1)
    assert "measured" in sources, sources


def test_out_writes_artifact_and_manifest(cli_results):
    import tvm

    art = cli_results["dir"] / "art"
    assert f"wrote {art}" in ok(cli_results["art"]).stdout
    assert sorted(os.listdir(art)) == ["manifest.json", "model.so", "params.npz", "plan.json", "plan.png"]
    with open(art / "plan.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "the Gantt chart is a PNG"
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["inputs"] == [LSTM_INPUT]
    assert manifest["outputs"] == [LSTM_OUTPUT]
    assert [(d["name"], d["kind"]) for d in manifest["devices"]] == [("cpu", "cpu"), ("cpu1", "cpu")]
    assert set(manifest["targets"]) == {"cpu", "cpu1"}
    assert all(t["kind"] == "llvm" for t in manifest["targets"].values())
    # the extensions of this machine's CPU the kernels are compiled with, and which it has
    if platform.machine() == "x86_64":
        assert {"avx2", "fma"} <= set(manifest["cpu_flags"]) <= cpu_flags()
    assert manifest["tvm_version"] == tvm.__version__
    assert set(manifest["sha256"]) == {"model.so", "params.npz", "plan.json"}
    plan = json.loads((art / "plan.json").read_text())
    assert plan["strategy"] == "equal" and plan["ops"]


def test_run_repeat_and_input_output(cli_results):
    d = cli_results["dir"]
    proc = ok(cli_results["run-repeat"])
    timing = [line for line in proc.stdout.splitlines() if line.startswith("median_us=")]
    assert len(timing) == 1 and re.fullmatch(r"median_us=[0-9.]+ p90_us=[0-9.]+", timing[0]), proc.stdout
    with np.load(d / "out.npz") as z:
        assert z.files == ["output0"]
        out = z["output0"]
    assert list(out.shape) == LSTM_OUTPUT["shape"] and str(out.dtype) == LSTM_OUTPUT["dtype"]
    assert np.all(np.isfinite(out)) and np.any(out != 0)
    # --input with the same inputs gives the same output
    ok(cli_results["run-input"])
    with np.load(d / "out2.npz") as z:
        np.testing.assert_allclose(z["output0"], out, rtol=0, atol=1e-6)


def test_run_kernels_times_every_call(cli_results):
    proc = ok(cli("run", cli_results["dir"] / "art", "--kernels", "--repeat", "3"))
    rows = [line.split() for line in proc.stdout.splitlines() if re.match(r"\s*[0-9.]+\s+[0-9.]+%\s+\d+\s+\S", line)]
    names = [r[3] for r in rows]
    assert any(n.endswith("_llvm") for n in names) and any(n.startswith("vm.builtin.") for n in names), proc.stdout
    us = [float(r[0]) for r in rows]
    # each share is printed to 0.1%: their sum is 100 within half of that a row (99.5 over 40 rows seen)
    shares = sum(float(r[1][:-1]) for r in rows)
    assert us == sorted(us, reverse=True) and shares == pytest.approx(100, abs=max(0.5, 0.05 * len(rows) + 1e-9))
    total = re.search(r"([0-9.]+)\s+(\d+)\s+sum of calls", proc.stdout)
    assert total and float(total.group(1)) == pytest.approx(sum(us), abs=0.1 * len(us))
    assert int(total.group(2)) == sum(int(r[2]) for r in rows) and "the instrument adds about" in proc.stdout



def test_run_kernels_reads_each_call_at_its_median_run(monkeypatch):
    """``run --kernels`` reads each function at its median over the runs, after a plain run's
    warm-up: one slow run (a fresh VM's first runs) once read a model's one allocation at 251 us a
    run, 65% of it, where it takes 3-4. On a fake clock: a kernel of 10 us that takes 1 s in
    one of ten runs, an allocation of 1 us."""
    from types import SimpleNamespace

    from tvm_partition.runtime import runner as runner_module

    clock, run = [0.0], [0]
    monkeypatch.setattr(runner_module.time, "perf_counter", lambda: clock[0])
    vm = SimpleNamespace(instrument=None)
    vm.set_instrument = lambda f: setattr(vm, "instrument", f)

    def instrumented(*args):
        calls = [("alloc", 1e-6), ("kernel", 1.0 if vm.instrument is not None and run[0] == 3 else 10e-6)]
        for name, seconds in calls:
            if vm.instrument is not None:
                vm.instrument(None, name, True, None)
            clock[0] += seconds
            if vm.instrument is not None:
                vm.instrument(None, name, False, None)
        run[0] += vm.instrument is not None

    r = runner_module.Runner.__new__(runner_module.Runner)
    r.vm, r.instrumented, r.devices, r.params = vm, instrumented, [], []
    monkeypatch.setattr(r, "_args", lambda inputs: [], raising=False)
    times, wall = r.kernel_times({}, 10)
    assert times == {"kernel": (1, pytest.approx(10.0)), "alloc": (1, pytest.approx(1.0))}
    assert wall == pytest.approx(11.0) and run[0] == 10

def test_run_says_when_it_runs_with_fewer_threads_than_built_for(cli_results, monkeypatch):
    art = cli_results["dir"] / "art"
    manifest = json.loads((art / "manifest.json").read_text())
    built = manifest["num_threads"]
    assert all(isinstance(t, int) and t >= 1 for t in manifest["profile_threads"])  # what the plan was priced with
    if built < 2:
        pytest.skip("built on one CPU: no fewer threads to run with")
    assert "note: running with" not in ok(cli("run", art)).stderr
    monkeypatch.delenv("TVM_PARTITION_CHOSEN_THREADS", raising=False)  # the value is the user's
    monkeypatch.setenv("TVM_NUM_THREADS", str(built - 1))  # as a cgroup quota or affinity mask would leave it
    proc = ok(cli("run", art))
    assert f"note: running with {built - 1} CPU thread(s), fewer than the {built}" in proc.stderr, proc.stderr


def test_run_kernels_refuses_rpc(cli_results):
    proc = cli("run", cli_results["dir"] / "art", "--kernels", "--rpc", "127.0.0.1:1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error: --kernels times the VM's calls on this machine, not over RPC" in proc.stderr, proc.stderr


def test_saved_plan_reproduces(cli_results):
    d = cli_results["dir"]
    assert max_abs_err(ok(cli_results["saved-plan"])) <= 1e-4
    assert json.loads((d / "again" / "plan.json").read_text()) == json.loads((d / "art" / "plan.json").read_text())


# equal: test_check_and_explain. Explicit ids: conftest.py skips items with a "gpu" keyword.
@pytest.mark.parametrize("strategy", ["cpu", "gpu"], ids=["strategy-cpu", "strategy-gpu"])
def test_strategies_check(cli_results, strategy):
    proc = ok(cli_results[f"strategy-{strategy}"])
    assert max_abs_err(proc) <= 1e-4
    assert f"plan {strategy}:" in proc.stdout


def test_eop_explain_prints_key_ops_and_prediction(cli_results):
    out = ok(cli_results["eop-explain"]).stdout
    assert "cost model:" in out and "GPU times are roofline estimates" in out, "says where GPU times come from"
    assert re.search(r"plan eop: \d+ fused ops, \d+ split; predicted \d+\.\d+ ms", out)
    assert re.search(r"predicted latency \d+\.\d+ ms \(list schedule\); EOP's sum of op times AT\(G,R\)", out)
    assert re.search(r"EOP: \d+ key ops take 95% of the time; candidates separate ", out)
    header = next(line for line in out.splitlines() if line.startswith("key op "))
    for col in ("decision", "dim", "alpha(cpu)", "beta(gpu)", "Eq.2 us", "sim us"):
        assert col in header


def test_free_batch_without_batch_is_bound_to_one_and_said(cli_results):
    proc = ok(cli_results["free-batch"])
    assert max_abs_err(proc) <= 1e-4
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note: ")]
    assert notes == ["note: free_batch: free batch x[0] (N) bound to 1; give --batch N for another batch size"]


# --- compile: bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("case", list(COMPILE_REFUSALS))
def test_compile_refuses(cli_results, case):
    """One error line, and nothing written: each refusal ran with ``--out`` (its own folder, or the
    file of the out-is-a-file case), which is left as it was."""
    assert_clean_error(cli_results[f"refuse-{case}"], COMPILE_REFUSALS[case][1])
    d = cli_results["dir"]
    if case == "out-is-a-file":
        assert (d / "a_file").read_text() == ""
    else:
        assert not (d / f"out-{case}").exists()


def test_unknown_strategy_is_an_argparse_error(cli_results):
    assert_clean_error(cli_results["strategy-unknown"], r"invalid choice: 'fastest'", rc=2)


def test_plan_ratios_must_sum_to_one(cli_results):
    err = assert_clean_error(cli_results["plan-ratio"], r"sum to 1\.3")
    assert (cli_results["dir"] / "ratio_op").read_text() in err


def test_illegal_split_of_softmax_reduced_axis(cli_results):
    """Softmax normalises along axis 1: split there, each part would have its own sum."""
    err = assert_clean_error(cli_results["illegal-softmax"], r"cannot be split on dim 1")
    assert cli_results["softmax"] in err


# --- run: bad input --------------------------------------------------------------------------

def test_run_refuses_missing_dir(cli_results):
    assert_clean_error(cli_results["run-missing-dir"], r"nowhere: no such artifact directory")


def test_run_refuses_tampered_params(cli_results):
    assert_clean_error(cli_results["run-tampered"], r"params\.npz: checksum mismatch")


def test_run_refuses_manifest_without_checksums(cli_results):
    assert_clean_error(cli_results["run-no-sha"], r"manifest lacks sha256")


def test_run_refuses_a_cpu_lacking_the_kernels_extensions(cli_results):
    """Not the process killed by its first kernel (SIGILL): one line naming what is lacking."""
    if not cpu_flags():
        pytest.skip("Linux lists no CPU flags here: nothing to tell by")
    assert_clean_error(cli_results["run-other-cpu"], rf"instructions this CPU lacks \({_LACKED}; compiled for \S+\)")


def test_run_gpu_artifact_without_gpu(cli_results):
    from tvm_partition.devices import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU: the cpu,gpu artifact runs here")
    ok(cli_results["gpu-art"])
    assert_clean_error(cli_results["run-gpu-art"], r"'gpu' \(CUDA GPU 0\) is not present on this machine")


def test_run_host_only_gpu_artifact_without_gpu(cli_results):
    """A cpu,gpu artifact whose plan keeps every op on the CPU runs where no GPU is, a CPU in the
    GPU's place (as compile --check runs it), and says so; its outputs are the cpu,cpu build's."""
    from tvm_partition.devices import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU: the artifact runs as built")
    ok(cli_results["host-art"])
    res = cli_results["run-host-art"]
    ok(res)
    assert res.stderr.startswith("note: no GPU here, and the artifact launches no kernel on its GPU")
    d = cli_results["dir"]
    with np.load(d / "host-art.npz") as host, np.load(d / "out.npz") as cpus:
        np.testing.assert_allclose(host["output0"], cpus["output0"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "case,pattern",
    [("wrong-name", r"input 'x' is missing"), ("wrong-shape", r"'x': expected float32\[2, 3, 80\], got float32\[2, 4, 80\]")],
)
def test_run_refuses_wrong_input(cli_results, case, pattern):
    assert_clean_error(cli_results[f"run-{case}"], pattern)


def test_run_refuses_unwritable_output(cli_results):
    assert_clean_error(cli_results["run-unwritable-output"], r"cannot write the outputs")


def test_readme_plan_example_applies():
    """The plan JSON shown in the README names real ops of `lstm --seq-len 4`."""
    import json as _json

    from tvm_partition import frontend
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.plan import Plan

    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    block = readme.split("```json\n", 1)[1].split("```", 1)[0]
    plan = Plan.from_json(_json.loads(block))
    plan.validate(OpGraph(frontend.load("lstm", seq_len=4).mod))
