"""Measure benchmark artifacts end to end with the TVM runtime alone (numpy + runtime-only TVM).

The measuring half of ``python -m tvm_partition bench``, used on the build machine and, copied
into a benchmark bundle (``bench --export-bundle DIR``), on a machine without a compiler::

    python -m tvm_partition.bench.runtime ARTIFACT_DIR [--repeat N]   # one JSON line on stdout
    python3 DIR/run_bench.py [--repeat N] [--force]                  # every artifact of a bundle

Each artifact is measured in fresh child processes (:data:`PROCESSES`, the median of their
medians; the rows of one model setting in rounds, the TVM ones timed in turn within each process,
:func:`measure_interleaved`) with
``TVM_USE_RUNTIME_LIB=1`` (an artifact that crashes the runtime costs its row, not the run):
:class:`tvm_partition.runtime.run.Runner` loads it,
:meth:`~tvm_partition.runtime.run.Runner.time` times ``repeat`` end-to-end runs after warm-up and
:func:`~tvm_partition.runtime.run.latency_stats` gives the median and p90, exactly as ``run --repeat``.
The onnxruntime row's folder (:mod:`tvm_partition.bench.ort`) is measured the same way, with
onnxruntime in place of the Runner (the measuring machine then needs onnxruntime).
A bundle's ``results.json`` is rewritten after every model setting; a rerun skips measured rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

#: The bundle's description of its rows (written by ``bench --export-bundle``).
BUNDLE_SPEC = "bench.json"
RESULTS = "results.json"


def device_names(kinds: list[str]) -> list[str]:
    """Human names of this machine's devices of ``kinds``: the CPU model, the GPU name."""
    from ..devices import hardware_fingerprint

    fp = hardware_fingerprint()
    return [fp["cpu"] if k == "cpu" else (fp.get("gpu") or "no GPU found") for k in kinds]


def measure(art_dir: str, repeat: int, seed: int = 0) -> dict:
    """Median and p90 end-to-end latency of the artifact in this process (an onnxruntime row's
    folder, :mod:`tvm_partition.bench.ort`, on onnxruntime; a PyTorch row's,
    :mod:`tvm_partition.bench.torch_ref`, on PyTorch and the GPU; their inputs are stored, not seeded here)."""
    from . import ort as bench_ort, torch_ref as bench_torch
    from ..runtime.runner import Runner

    if bench_ort.is_artifact(art_dir):
        return _result(bench_ort.time_runs(art_dir, repeat), ["cpu"])
    if bench_torch.is_artifact(art_dir):
        return measure_together([art_dir], repeat)[art_dir]
    runner = Runner(art_dir)
    return _result(runner.time(runner.example_inputs(seed), repeat, min_s=BLOCKS * BLOCK_MIN_S),
                   [d.kind for d in runner.devices])


#: Blocks of runs :func:`measure_together` times each artifact in, in turn with the others'.
BLOCKS = 4
#: Seconds of timed runs a block lasts at least (more runs than ``repeat`` asks where they are
#: short), as the profile times a kernel for at least ``timing.MIN_REPEAT_MS``. Why: ``bench
#: --quick`` (10 runs: 4 a process, one a block) read the LSTM's gate matmul split at 9.4 us
#: (processes 9.1, 9.4, 10.4; -15% against its 8.0 predicted) where 4,000 runs of the same artifact
#: in each of three processes read 8.7 (its whole op 7.3 and 7.1): one run a block is the second
#: after the other artifact's, its caches not yet the op's (znver4, 2026-11-30). 20 ms is a few
#: thousand runs of an op row, eight of ResNet-18 at 64 px, one of anything over 20 ms.
BLOCK_MIN_S = 0.02


def measure_together(arts: list[str], repeat: int, seed: int = 0) -> dict:
    """``{art: result}`` as :func:`measure` gives for each, the artifacts (TVM ones, or PyTorch rows
    alone: :func:`tvm_partition.bench.torch_ref.time_together`) loaded and warmed up in this process
    and timed in turn: :data:`BLOCKS` blocks of runs each, the order reversed from block to block,
    each block after one untimed run (the caches the artifact before left) and at least
    :data:`BLOCK_MIN_S` long. Why: this VM runs one artifact up to 1.5x apart minutes apart (see
    :func:`measure_interleaved`), and rows measured in processes one after another each caught
    another phase: in ``bench --quick`` (2026-11-29, amd-epyc-znver3-2c) the GRU's ``auto`` row, the
    same plan as its ``cpu`` row, read 0.263 ms against 0.354."""
    from . import torch_ref as bench_torch
    from ..runtime.runner import Runner

    if all(bench_torch.is_artifact(a) for a in arts):  # PyTorch's rows of a model: in turn, the same way
        got = bench_torch.time_together(arts, repeat, BLOCKS, BLOCK_MIN_S)
        return {a: {**_result(t, ["gpu"]), "max_abs_err_vs_torch": float(f"{err:.3g}")} for a, (t, err) in got.items()}
    runners = [Runner(a) for a in arts]
    inputs = [r.example_inputs(seed) for r in runners]
    for r, x in zip(runners, inputs):
        r.time(x, 0)  # warm-up (Runner.time's)
    times: dict[str, list] = {a: [] for a in arts}
    blocks = max(1, min(BLOCKS, repeat))
    for b in range(blocks):
        runs = repeat // blocks + (b < repeat % blocks)
        turn = list(zip(arts, runners, inputs))
        for art, r, x in (turn if b % 2 == 0 else turn[::-1]):
            times[art] += r.time(x, runs, warmup=1, min_s=BLOCK_MIN_S)
    return {a: _result(times[a], [d.kind for d in r.devices]) for a, r in zip(arts, runners)}


def _result(times: list[float], kinds: list[str]) -> dict:
    """The result of a row timed ``times`` (us) on devices of ``kinds``."""
    from ..devices import fingerprint_id
    from ..runtime.runner import latency_stats
    from .results import US_DIGITS

    stats = latency_stats(times)
    return {"measured_median_us": round(stats["median_us"], US_DIGITS), "measured_p90_us": round(stats["p90_us"], US_DIGITS),
            "measured_p99_us": round(stats["p99_us"], US_DIGITS), "repeat": len(times),
            "device_names": device_names(kinds), "machine": fingerprint_id(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


#: Fresh processes one row is measured in (with at least 3 runs each). The same artifact measured
#: in fresh processes on the 2-core build machine (a VM with neighbours) gave medians up to 1.5x
#: apart (lstm seq 10: 0.67 and 1.01 ms, 2026-11-23); the median over processes keeps one unlucky
#: process from deciding a row.
PROCESSES = 3


def measure_isolated(art_dir: str, repeat: int, timeout_s: float | None = None, preexec=None) -> dict:
    """``repeat`` runs spread over :data:`PROCESSES` fresh processes (:func:`measure_process`):
    the median, p90 and p99 are the medians over the processes of theirs, ``process_medians_us``
    says each; ``{"error": ...}`` if one fails. ``preexec``: run in each child before it starts
    (:func:`tvm_partition.bench.load.quota` moves it into a cgroup)."""
    return measure_interleaved([art_dir], repeat, timeout_s, preexec)[art_dir]


def measure_interleaved(arts: list[str], repeat: int, timeout_s: float | None = None, preexec=None) -> dict:
    """``{art: result}``: each artifact measured as :func:`measure_isolated` measures one, but in
    rounds: each round runs one fresh process that times every TVM artifact in turn
    (:func:`measure_together`), one that times the PyTorch rows in turn, and one of each onnxruntime
    row, in an order that alternates from round to round. Why: the rows of one model are compared
    with each other (a split over ``cpu``, ours over onnxruntime), and this VM runs the same build
    up to 1.2x apart minutes apart (ResNet-50 29.1 ms in paired rounds, 34.7 in a ``bench`` row 20
    minutes later; onnxruntime's ShuffleNet 1.34 and 3.24 ms; amd-epyc-znver5-2c, 2026-11-26):
    measured one after another, the rows of one model could each take another phase; in rounds each
    phase reaches every row, and within one process every TVM row of it. onnxruntime keeps a process
    of its own: its threads spin after a run, on the cores the next row would run on; PyTorch's rows
    keep one of theirs (a CUDA context and cuDNN's choices of its own). Where the process of all of
    them fails (an artifact that crashes the runtime), each is measured in a process of its own from
    then on; an artifact whose own process fails is not measured again, its result the ``error``."""
    from . import torch_ref as bench_torch

    n = PROCESSES if repeat >= 3 * PROCESSES else 1
    each = -(-repeat // n)
    runs: dict[str, list] = {a: [] for a in arts}
    failed: dict[str, dict] = {}
    # TVM's rows in one process, PyTorch's in another, each onnxruntime row alone
    groups = [g for g in ([a for a in arts if not is_reference(a)], [a for a in arts if bench_torch.is_artifact(a)])
              if len(g) > 1]
    for k in range(n):
        units = groups + [[a] for a in arts if not any(a in g for g in groups)]
        for unit in (units if k % 2 == 0 else units[::-1]):
            if len(unit) > 1:
                res = measure_process(unit, each, timeout_s, preexec)
                if "error" not in res:
                    for art, r in res.items():
                        runs[art].append(r)
                    continue
                groups = [g for g in groups if g is not unit]  # each alone from now on, this round too
            for art in unit:
                if art in failed:
                    continue
                res = measure_process(art, each, timeout_s, preexec)
                if "error" in res:
                    failed[art] = res
                else:
                    runs[art].append(res)
    return {a: failed.get(a) or _over_processes(runs[a]) for a in arts}


def is_reference(art_dir: str) -> bool:
    """Whether ``art_dir`` is a reference row's folder (onnxruntime, PyTorch), not a TVM artifact."""
    from . import ort as bench_ort, torch_ref as bench_torch

    return bench_ort.is_artifact(art_dir) or bench_torch.is_artifact(art_dir)


def _over_processes(runs: list[dict]) -> dict:
    """One artifact's result from its processes' (see :func:`measure_isolated`); ``repeat``: the
    runs timed in all of them."""
    runs = sorted(runs, key=lambda r: r["measured_median_us"])
    mid = runs[len(runs) // 2]
    tails = {k: sorted(r[k] for r in runs if k in r) for k in ("measured_p90_us", "measured_p99_us")}
    return {**mid, **{k: v[len(v) // 2] for k, v in tails.items() if v}, "repeat": sum(r["repeat"] for r in runs),
            "process_medians_us": [r["measured_median_us"] for r in runs]}


def measure_process(art_dir: str | list[str], repeat: int, timeout_s: float | None = None, preexec=None) -> dict:
    """:func:`measure` in a child process with the runtime-only TVM (of a list of artifacts,
    :func:`measure_together`: ``{art: result}``); ``{"error": ...}`` if it fails."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TVM_USE_RUNTIME_LIB="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p))
    # -S kept: a bundle run without site-packages (numpy and the bundle's TVM only) measures the same way
    arts = art_dir if isinstance(art_dir, list) else [art_dir]
    cmd = [sys.executable, *(["-S"] if sys.flags.no_site else []), "-m", "tvm_partition.bench.runtime", *arts,
           "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return {"error": f"measuring took more than {timeout_s:.0f} s (raise --timeout)"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            return json.loads(lines[-1])
        except ValueError:
            pass
    last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return {"error": f"measuring failed: {last}"}


def run_bundle(bundle: str, repeat: int | None = None, force: bool = False, timeout_s: float | None = None,
               progress=print, out: str | None = None) -> list[dict]:
    """Measure every row of a bundle, the rows of one model setting together
    (:func:`measure_interleaved`); ``out`` (default ``BUNDLE/results.json``) holds one entry per row
    (``id`` plus :func:`measure`'s fields, or ``error``), rewritten after each model setting."""
    from .results import write_json
    from ..devices import fingerprint_id, hardware_fingerprint

    with open(os.path.join(bundle, BUNDLE_SPEC), encoding="utf-8") as f:
        spec = json.load(f)
    out = out or os.path.join(bundle, RESULTS)
    results = {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            results = {r["id"]: r for r in json.load(f)}
    repeat = repeat or spec.get("repeat", 20)
    rows = spec["rows"]
    groups: dict[str, list] = {}  # the rows of one model setting are measured together, in rounds
    for i, row in enumerate(rows, 1):
        if "artifact" not in row:  # failed to compile on the build machine: nothing to measure
            continue
        if not force and "measured_median_us" in results.get(row["id"], {}):
            progress(f"[{i}/{len(rows)}] {row['id']}: measured before, skipped")
            continue
        groups.setdefault(json.dumps([row.get("model"), row.get("config")], sort_keys=True), []).append((i, row))
    machine = fingerprint_id(hardware_fingerprint(spec.get("mcpu")))
    for group in groups.values():
        arts = {row["id"]: os.path.join(bundle, row["artifact"]) for _, row in group}
        got = measure_interleaved(list(arts.values()), repeat, timeout_s)
        for i, row in group:
            res = {"id": row["id"], **got[arts[row["id"]]]}
            if "error" not in res:  # every row, onnxruntime's too, under the machine its kernels were built for
                res["machine"] = machine
            results[row["id"]] = res
            what = res.get("error") or f"median {res['measured_median_us'] / 1e3:.3f} ms"
            progress(f"[{i}/{len(rows)}] {row['id']}: {what}")
        write_json(out, list(results.values()))
    return list(results.values())


def bundle_main(bundle: str, argv=None) -> int:
    ap = argparse.ArgumentParser(prog="run_bench.py", description="Measure every artifact of this benchmark "
                                 "bundle with the TVM runtime alone; writes results.json beside this script.")
    ap.add_argument("--repeat", type=int, help="timed runs per artifact (default: the bundle's)")
    ap.add_argument("--force", action="store_true", help="measure rows measured before again")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per artifact (default 1800)")
    ap.add_argument("--results", metavar="FILE", help=f"write the results here (default: {RESULTS} beside this "
                                                       "script; a rerun resumes from it)")
    args = ap.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        print("error: --repeat must be >= 1", file=sys.stderr)
        return 2
    out = args.results or os.path.join(bundle, RESULTS)
    results = run_bundle(bundle, args.repeat, args.force, args.timeout, out=out)
    failed = sum(1 for r in results if "error" in r)
    print(f"{len(results) - failed} rows measured, {failed} failed: {out}; "
          f"bring it back and run tvm-partition bench --import {os.path.basename(os.path.abspath(bundle))}")
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tvm_partition.bench.runtime",
                                 description="Time one artifact (several TVM ones: in turn, in this process); print the result as one JSON line.")
    ap.add_argument("artifact", nargs="+", help="one artifact, or several TVM ones timed in turn ({art: result})")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    from ..runtime.artifact import ArtifactError
    from ..devices import DeviceError

    try:
        arts = args.artifact
        print(json.dumps(measure(arts[0], args.repeat) if len(arts) == 1 else measure_together(arts, args.repeat)))
    except (ArtifactError, DeviceError, ValueError) as e:  # bench_ort.OrtError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
