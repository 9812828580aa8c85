"""The GPU machine's half of the GPU proof kit: runs the kit's time plan with the TVM runtime alone.

``kit.py pack`` copies this file into the kit; the kit's ``run.py`` unpacks the kit and starts it::

    python3 run.py plan                  # the time plan
    python3 run.py STEP --out DIR        # one step of it (1, 2), results under DIR

It needs Python, numpy and the kit's ``site/`` (a runtime-only TVM, ``libtvm_compiler.so`` left
out, and the runtime half of ``tvm_partition``): no compiler, no package registry. A step first
draws the zoo weights the kit left out (:func:`prepare`: the manifests' seeded recipes, checked
against their sha256), records the machine (``facts-STEP.txt``: ``nvidia-smi``, ``lscpu``, the
CUDA libraries, and, where the kit has a GPU, which way of compiling the CUDA kernels at load time
works: :func:`probe_cuda`), then runs its parts, each in child processes in a process group of its
own, killed at the part's deadline: a part's share of the step's time, in proportion to the
plan's budgets of the parts left, so a hang costs one part and the time an early part leaves
goes to the next. Every result is written to DIR as soon as it is measured (``checks.json``,
``bench-PART.json``, ``profile.jsonl``, ``variants.jsonl``, ``log-STEP.txt``), so a killed step loses nothing it had
measured. ``kit.py import`` merges DIR back on the build machine.

TVM 0.27 facts it relies on: under ``TVM_USE_RUNTIME_LIB=1`` no CUDA backend is loaded unless
asked (:func:`tvm_partition.devices.load_cuda_runtime`); a cross-compiled CUDA module holds CUDA
source that TVM compiles when it loads, through the ``tvm_callback_cuda_compile`` of
``tvm.support.nvcc``: NVRTC (``cuda-bindings``) unless ``TVM_CUDA_COMPILE_MODE=nvcc``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from tvm_partition.errors import TvmPartitionError  # the kit's site/ (run.py puts it on the path)

HERE = os.path.dirname(os.path.abspath(__file__))
#: The kit's description (written by kit.py pack): parts, the time plan, the checks.
KIT_JSON = "kit.json"
#: Zoo weights the kit left out, and how to draw them again (:func:`prepare`).
WEIGHTS_JSON, WEIGHTS_NPZ = "weights.json", "weights.npz"
#: The probe's choice of how CUDA kernels compile at load time, kept while the machine is warm.
CUDA_JSON = ".cuda-mode.json"
#: A check runs one inference in a fresh process: loading, CUDA compilation and one run.
CHECK_TIMEOUT_S = 120
#: Checks run at once (each a process of its own with the machine's cores shared among them).
CHECK_WORKERS = 4
#: Seconds an artifact of a bench part may take (its fresh processes together).
ROW_TIMEOUT_S = 150


class KitError(TvmPartitionError, ValueError):
    """The kit cannot run here; the message says why."""


def load_kit(work: str) -> dict:
    with open(os.path.join(work, KIT_JSON), encoding="utf-8") as f:
        return json.load(f)


def plan_text(kit: dict) -> str:
    """The time plan as printed by ``kit.py pack`` and ``run.py plan``."""
    plan = kit["plan"]
    lines = [f"time plan: {len(plan['steps'])} commands on the GPU machine, "
             f"{sum(s['budget_s'] for s in plan['steps']) / 60:.1f} min of them "
             f"(each stops its parts by its budget; one device-tool call a step, carrying .gpu-kit/carry/STEP)"]
    for s in plan["steps"]:
        lines.append(f"  step {s['step']} ({s['budget_s']} s, timeout_s {s.get('timeout_s', 600)}): "
                     f"python3 .gpu-kit/carry/{s['step']}/run.py {s['step']} --out $OUT")
        for p in s["parts"]:
            est = p.get("estimate_s")
            lines.append(f"    {p['name']:<10} {p['what']:<44} budget {p['budget_s']:>4} s"
                         + (f", estimate {est:.0f} s" + (" (over: its last items may be left)"
                                                         if est > p["budget_s"] else "") if est is not None else ""))
    lines.append(f"  estimates assume {plan['assumptions']}")
    return "\n".join(lines)


# --- weights ---------------------------------------------------------------------------------

def prepare(work: str, say) -> None:
    """Draw again every ``params.npz`` the kit left out (``weights.json``: the recipes of the
    artifacts' manifests, and for each file which drawn array or stored one each weight is), write
    it as the compiler did (:func:`tvm_partition.runtime.artifact.write_params`) and check it
    against the sha256 its manifest records. Once per unpacked kit."""
    marker = os.path.join(work, ".weights-drawn")
    path = os.path.join(work, WEIGHTS_JSON)
    if os.path.exists(marker) or not os.path.exists(path):
        return
    import numpy as np

    from tvm_partition.inputs import draw_weights
    from tvm_partition.runtime.artifact import sha256, write_params

    t0 = time.monotonic()
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    literals = np.load(os.path.join(work, WEIGHTS_NPZ)) if os.path.exists(os.path.join(work, WEIGHTS_NPZ)) else {}
    drawn: dict = {}
    bad = written = 0
    for digest, entry in spec["files"].items():
        # a step's kit holds its own parts' artifacts: the others' weights are not drawn here
        entry = dict(entry, paths=[p for p in entry["paths"] if os.path.isdir(os.path.dirname(os.path.join(work, p)))])
        if not entry["paths"]:
            continue
        arrays = []
        for source, i in entry["arrays"]:
            if source == "stored":
                arrays.append(literals[f"p{i}"])
                continue
            if source not in drawn:
                drawn[source] = draw_weights(spec["recipes"][source])
            arrays.append(drawn[source][i])
        first = os.path.join(work, entry["paths"][0])
        write_params(first + ".tmp", arrays)
        if sha256(first + ".tmp") != digest:
            bad += 1
            os.remove(first + ".tmp")
            say(f"error: {entry['paths'][0]}: the weights drawn here (numpy {np.__version__}) differ from the "
                f"compiled ones: the {len(entry['paths'])} artifacts that use them will fail their checksum")
            continue
        os.replace(first + ".tmp", first)
        written += 1
        for other in entry["paths"][1:]:
            os.link(first, os.path.join(work, other))
    if not bad:
        open(marker, "w").close()
    say(f"weights: {written} params.npz drawn again from {len(drawn)} seeded recipes in "
        f"{time.monotonic() - t0:.1f} s" + (f", {bad} wrong" if bad else ""))


# --- facts -----------------------------------------------------------------------------------

def _command(cmd: list[str], timeout: float = 20) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (proc.stdout + proc.stderr).strip() or f"(exit {proc.returncode}, no output)"
    except (OSError, subprocess.SubprocessError) as e:
        return f"({cmd[0]}: {e})"


def _versions(names: tuple[str, ...]) -> dict:
    import importlib.metadata as md

    out = {}
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith(names):
            out[name] = dist.version
    return dict(sorted(out.items()))


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


#: LLVM's x86-64 micro-architecture levels by the cpuinfo flags each adds (what a ``--target-cpu``
#: for this machine's CPU kernels may assume; the kit was compiled for ``x86-64-v3``).
LEVELS = (("x86-64-v2", {"sse4_2", "popcnt", "ssse3", "cx16"}),
          ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe"}),
          ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}))


def cpu_level(flags: set[str]) -> str:
    """The highest x86-64 level whose flags this CPU has (each level includes those below)."""
    best = "x86-64"
    for name, needs in LEVELS:
        if not needs <= flags:
            break
        best = name
    return best


def require_cpu_level(kit: dict, flags: set[str]) -> None:
    """Refuse, in one line, a kit whose CPU kernels assume an x86-64 level this CPU lacks: every
    artifact holds such kernels (the host code at least), and each would die of SIGILL mid-step."""
    order = ["x86-64"] + [name for name, _ in LEVELS]
    need, have = kit["target_cpu"], cpu_level(flags)
    if need in order and order.index(need) > order.index(have):
        raise KitError(f"this kit's CPU kernels are compiled for {need}; this CPU is {have}: pack the kit "
                       f"again with --target-cpu {have}")


def facts(step: int, out: str, say, kit: dict) -> dict:
    """What this machine is: written to ``facts-STEP.txt`` (commands' output) and
    ``facts-STEP.json`` (the fingerprint the results are filed under, and the CPU level)."""
    import platform

    import numpy as np

    from tvm_partition.devices import fingerprint_id, hardware_fingerprint, usable_cpus

    flags = cpu_flags()
    fp = hardware_fingerprint(kit["target_cpu"])  # no LLVM here to name the CPU: the kit's CPU kernels do
    info = {"step": step, "fingerprint": fp, "machine": fingerprint_id(fp), "usable_cpus": usable_cpus(),
            "cpu_level": cpu_level(flags), "avx512": sorted(f for f in flags if f.startswith(("avx512", "amx"))),
            "python": platform.python_version(), "numpy": np.__version__,
            "packages": _versions(("cuda-", "nvidia-cuda", "nvidia-cudnn", "nvidia-nvjitlink", "cupy", "torch"))}
    text = [f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}", json.dumps(info, indent=1)]
    for cmd in (["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                "pcie.link.gen.max,pcie.link.width.max", "--format=csv"], ["lscpu"], ["nvidia-smi"],
                ["nvcc", "--version"], ["sh", "-c", "ldconfig -p | grep -E 'libcuda\\.|libcudart|libnvrtc'"]):
        text.append(f"$ {' '.join(cmd)}\n{_command(cmd)}")
        if cmd[-1] in ("--format=csv", "lscpu"):  # on the console too: what the step runs on
            say(text[-1])
    with open(os.path.join(out, f"facts-{step}.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(text) + "\n")
    with open(os.path.join(out, f"facts-{step}.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    say(f"machine {info['machine']}: {usable_cpus()} usable CPUs, {info['cpu_level']}"
        + (f" ({', '.join(info['avx512'][:4])}...)" if info["avx512"] else "") + f", GPU {fp.get('gpu') or 'none'}"
        + f" driver {fp.get('driver') or '-'}; python {info['python']}, numpy {info['numpy']}")
    return info


def check_entry(kit: dict, cid: str) -> dict:
    """The kit's entry of check ``cid`` (its artifact, data, tolerance...)."""
    return next(c for p in kit["parts"].values() for c in p.get("checks", []) if c["id"] == cid)


def probe_cuda(work: str, kit: dict, env: dict, out: str, step: int, deadline: float, say) -> str | None:
    """How this machine compiles the kit's CUDA kernels at load time: the first check artifact with a
    GPU is run with NVRTC (TVM's default), then with nvcc if that failed; the way that works is
    kept for the step's children (``TVM_CUDA_COMPILE_MODE``) and written to the facts with the CUDA
    libraries the process had loaded. None: the kit has no GPU, or neither way works."""
    probe = kit.get("probe")
    if probe is None:
        return None
    entry = check_entry(kit, probe)
    if not os.path.isdir(os.path.join(work, entry["artifact"])):
        # a step whose kit carries no check artifacts (the profile's, since the kit was packed in
        # two): its children compile with TVM's default, NVRTC; the H200 run of 2026-11-27 printed
        # a false "no way of compiling" here and then timed all 870 samples, GPU ones included
        say("CUDA kernels compile at load time with TVM's default (NVRTC): this step carries no check to probe")
        return None
    cached = os.path.join(work, CUDA_JSON)
    if os.path.exists(cached):  # probed by an earlier step on this machine
        with open(cached, encoding="utf-8") as f:
            mode = json.load(f)["mode"]
        say(f"CUDA kernels compile at load time with {mode} (probed by an earlier step)")
        return mode
    found, tried = None, []
    for mode in ("nvrtc", "nvcc"):
        rc, text = bounded(python() + [os.path.join(work, "there.py"), "probe", probe, "--kit", work],
                           dict(env, TVM_CUDA_COMPILE_MODE=mode), min(deadline, time.monotonic() + CHECK_TIMEOUT_S))
        res = _last_json(text) if rc == 0 else None
        tried.append({"mode": mode, "result": res, "output_tail": None if res else text[-3000:]})
        if res and res.get("ok"):
            found = mode
            break
    with open(os.path.join(out, f"facts-{step}.txt"), "a", encoding="utf-8") as f:
        f.write("\n$ CUDA kernels compiled at load time (probe: " + probe + ")\n" + json.dumps(tried, indent=1) + "\n")
    if found:
        libs = tried[-1]["result"].get("mapped", [])
        say(f"CUDA kernels compile at load time with {found}; loaded: {', '.join(os.path.basename(x) for x in libs)}")
        with open(cached, "w", encoding="utf-8") as f:
            json.dump({"mode": found}, f)
    else:
        say("error: no way of compiling the CUDA kernels at load time worked (NVRTC, nvcc): see facts-"
            f"{step}.txt; GPU rows will fail")
    return found


# --- child processes -------------------------------------------------------------------------

def python() -> list[str]:
    """This interpreter, as it was started (``-S`` kept: a run without site-packages stays one)."""
    return [sys.executable] + (["-S"] if sys.flags.no_site else [])


def child_env(work: str, mode: str | None) -> dict:
    """The runtime-only TVM of the kit first on the path; the probe's CUDA compilation mode."""
    path = [os.path.join(work, "site")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, TVM_USE_RUNTIME_LIB="1", PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(path))
    if mode:
        env["TVM_CUDA_COMPILE_MODE"] = mode
    return env


def bounded(cmd: list[str], env: dict, deadline: float, say=None) -> tuple[int | None, str]:
    """Run ``cmd`` in a process group of its own until it ends or ``deadline`` (monotonic), when the
    whole group is killed (its measuring children too): ``(exit code or None, output)``; ``say``
    gets each line as it comes."""
    if deadline - time.monotonic() < 1:
        return None, "(no time left)"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []

    def pump():
        for line in proc.stdout:
            lines.append(line)
            if say and not line.startswith("timing s"):  # the profile's per-sample lines: count only
                say(line.rstrip())

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc = None
    reader.join(timeout=5)
    return rc, "".join(lines)


def _last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def write_json(path: str, data) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


# --- parts -----------------------------------------------------------------------------------

def run_checks(work: str, kit: dict, part: dict, out: str, deadline: float, env: dict, say) -> None:
    """Each check in a fresh process (:func:`check`), :data:`CHECK_WORKERS` at a time, results to
    ``checks.json`` (in the kit's order) after each. Checks time nothing, so they may share the
    machine: one took 5-9 s alone in the fifth GPU run (most of it one CPU thread loading the
    artifact and compiling its CUDA kernels with NVRTC), and its 27 did not fit the 185 s of their
    part one after another."""
    from tvm_partition.devices import usable_cpus

    checks = kit["parts"][part["name"]]["checks"]
    workers = max(1, min(CHECK_WORKERS, len(checks)))
    child = dict(env) if "TVM_NUM_THREADS" in env else \
        dict(env, TVM_NUM_THREADS=str(max(1, usable_cpus() // workers)))
    results: dict[int, dict] = {}
    lock = threading.Lock()

    def one(i: int, c: dict) -> None:
        if deadline - time.monotonic() < 1:
            return
        rc, text = bounded(python() + [os.path.join(work, "there.py"), "check", c["id"], "--kit", work], child,
                           min(deadline, time.monotonic() + CHECK_TIMEOUT_S))
        if rc is None and time.monotonic() >= deadline - 1:
            say(f"checks: out of time in {c['id']}")
            return
        res = _last_json(text) if rc == 0 else None
        if res is None:
            last = (text.strip().splitlines() or ["no output"])[-1][:300]
            res = {"ok": False, "error": "timed out" if rc is None else f"exit {rc}: {last}"}
        with lock:
            results[i] = {"id": c["id"], **res}
            write_json(os.path.join(out, "checks.json"), [results[k] for k in sorted(results)])
        say(f"check {c['id']}: " + ("ok" if res.get("ok") else "FAILED") +
            (f" (max_abs_err {res['max_abs_err']:.3g}, tolerance {res['tol']:.3g})" if "max_abs_err" in res
             else f" ({res.get('error')})"))

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(one, i, c) for i, c in enumerate(checks)]:
            f.result()
    if len(results) < len(checks):
        say(f"checks: {len(checks) - len(results)} of {len(checks)} left at the part's deadline")


def run_bench(work: str, kit: dict, part: dict, out: str, deadline: float, env: dict, say) -> None:
    """The part's bench bundle measured by its own ``run_bench.py`` (``bench --export-bundle``)."""
    folder = os.path.join(work, kit["parts"][part["name"]]["dir"])
    cmd = python() + [os.path.join(folder, "run_bench.py"), "--results",
                      os.path.join(out, f"bench-{part['name']}.json"), "--timeout", str(ROW_TIMEOUT_S)]
    rc, _ = bounded(cmd, env, deadline, say)
    if rc is None:
        say(f"{part['name']}: stopped at its deadline; the rows measured so far are kept")


def run_profile(work: str, kit: dict, part: dict, out: str, deadline: float, env: dict, say) -> None:
    """A bundle of samples timed by its own ``time_samples.py`` (``profile --export-bundle``; the
    variants part's kernels under each dlight rule are such a bundle), results to the part's file."""
    spec = kit["parts"][part["name"]]
    folder = os.path.join(work, spec["dir"])
    results = os.path.join(out, spec.get("results", "profile.jsonl"))
    rc, _ = bounded(python() + [os.path.join(folder, "time_samples.py"), folder, "--out", results], env, deadline, say)
    n = sum(1 for _ in open(results, encoding="utf-8")) if os.path.exists(results) else 0
    say(f"{part['name']}: {n} samples timed" + (", stopped at its deadline" if rc is None else ""))


RUNNERS = {"checks": run_checks, "bench": run_bench, "profile": run_profile, "variants": run_profile}


def run_step(work: str, step: int, out: str) -> int:
    kit = load_kit(work)
    steps = {s["step"]: s for s in kit["plan"]["steps"]}
    if step not in steps:
        raise KitError(f"no step {step} in this kit's plan (steps {', '.join(map(str, steps))})")
    t0 = time.monotonic()
    plan = steps[step]
    deadline = t0 + plan["budget_s"]
    os.makedirs(out, exist_ok=True)
    log = open(os.path.join(out, f"log-{step}.txt"), "a", encoding="utf-8")

    def say(line: str) -> None:
        stamp = f"[{time.monotonic() - t0:6.1f}s] "
        print(stamp + line, flush=True)
        log.write(stamp + line + "\n")
        log.flush()

    say(f"step {step} of {len(steps)}: {', '.join(p['name'] for p in plan['parts'])} within {plan['budget_s']} s; "
        f"kit packed {kit['created']} from {kit['commit']} for {kit['devices']} ({kit['target_cpu']}, {kit['gpu_arch']})")
    prepare(work, say)
    facts(step, out, say, kit)
    require_cpu_level(kit, cpu_flags())
    mode = probe_cuda(work, kit, child_env(work, None), out, step, deadline, say)
    env = child_env(work, mode)
    parts = plan["parts"]
    for i, part in enumerate(parts):
        now = time.monotonic()
        share = max(0.0, deadline - now) * part["budget_s"] / sum(p["budget_s"] for p in parts[i:])
        say(f"part {part['name']}: {share:.0f} s")
        RUNNERS[kit["parts"][part["name"]]["kind"]](work, kit, part, out, now + share, env, say)
        say(f"part {part['name']}: done in {time.monotonic() - now:.0f} s")
    say(f"step {step}: {time.monotonic() - t0:.0f} s; results in {out}: {', '.join(sorted(os.listdir(out)))}")
    log.close()
    return 0


# --- one inference, in a child process ---------------------------------------------------------

def check(work: str, cid: str, probe: bool = False) -> dict:
    """Run check ``cid``'s artifact on its stored inputs with the runtime alone and compare with the
    outputs the build machine computed on its CPU (the unpartitioned model). ``probe``: also say
    which CUDA libraries this process loaded."""
    import numpy as np
    import tvm

    from tvm_partition.devices import fingerprint_id, hardware_fingerprint, load_cuda_runtime
    from tvm_partition.runtime.runner import Runner

    kit = load_kit(work)
    entry = check_entry(kit, cid)
    runner = Runner(os.path.join(work, entry["artifact"]))
    with np.load(os.path.join(work, entry["data"])) as z:
        inputs = {k[len("input:"):]: z[k] for k in z.files if k.startswith("input:")}
        refs = [z[f"output{i}"] for i in range(sum(k.startswith("output") for k in z.files))]

    def error(outs) -> float:
        return max(float(np.max(np.abs(o - r))) if r.size else 0.0 for o, r in zip(outs, refs)) \
            if len(outs) == len(refs) else float("inf")

    # main runs compiled to native code; its bytecode twin (the same kernels, the VM's interpreter)
    # runs too, so that a failure on this machine says which of the two it is
    twin = error(runner.run(inputs, bytecode=True))
    try:
        err, main_error = error(runner.run(inputs)), None
    except Exception as e:  # noqa: BLE001  (TVM's errors: reported, the twin's result kept)
        err, main_error = float("inf"), f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}"
    ok = err <= entry["tol"] and (not entry.get("needs_split") or entry["splits"] > 0)
    res = {"ok": ok, "max_abs_err": err, "tol": entry["tol"], "splits": entry["splits"], "twin_max_abs_err": twin,
           **({"main_error": main_error} if main_error else {}),
           "devices": [d.kind for d in runner.devices], "runtime_only": bool(getattr(tvm, "_RUNTIME_ONLY", False)),
           "machine": fingerprint_id(hardware_fingerprint(kit["target_cpu"]))}
    if probe:
        res["cuda"] = load_cuda_runtime()
        with open("/proc/self/maps", encoding="utf-8") as f:
            res["mapped"] = sorted({line.split()[-1] for line in f
                                    if re.search(r"lib(nvrtc|cuda|cudart|nvJitLink|nvptxcompiler|tvm_runtime_cuda)", line)})
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="run.py", description="Run the GPU proof kit's time plan here with the TVM "
                                                            "runtime alone (see kit.py in benchmarks/gpu_proof).")
    ap.add_argument("what", help="a step number of the plan, or 'plan'")
    ap.add_argument("item", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="folder for the step's results (on the device tool: $OUT)")
    ap.add_argument("--kit", default=HERE, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        if args.what == "plan":
            print(plan_text(load_kit(args.kit)))
            return 0
        if args.what in ("check", "probe"):  # a child process of a step
            print(json.dumps(check(args.kit, args.item, probe=args.what == "probe")))
            return 0
        if not args.what.isdigit() or not args.out:
            raise KitError("usage: run.py STEP --out DIR, or run.py plan")
        return run_step(args.kit, int(args.what), args.out)
    except TvmPartitionError as e:  # the kit's, an artifact's (checksum), a device's: one line
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
