"""Deployment over TVM RPC on one machine: one loopback server alone vs two, each pinned to a core.

    python benchmarks/rpc_pipeline.py [--model resnet18] [--image-size 64] [--batch 4] [--repeat 20]
        [--out benchmarks/results/amd-epyc-2c/rpc_pipeline.json]

Starts ``python -m tvm.exec.rpc_server`` processes on 127.0.0.1, each under ``taskset -c <core>``
with ``TVM_NUM_THREADS=1``, and measures, side by side in one run:

* ``one``: the whole model (batch B) on the server pinned to core 0, end to end as seen by the
  client (inputs sent, run, outputs fetched), and TVM's time evaluator on the server (no RPC);
  their difference is the RPC overhead;
* ``split``: the batch halved, one half per server (cores 0 and 1), both run at once, one
  thread and one RPC session per server, outputs concatenated here;
* ``stages``: the model cut into two consecutive stages, one per server, tensors forwarded.

All builds use TVM's default CPU schedules (``--no-tuning``): the tuning database holds only the
models' default shapes, and the halves must not get better kernels than the whole.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def start_server(core: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TVM_NUM_THREADS="1")
    proc = subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-m", "tvm.exec.rpc_server",
                             "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(300):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"127.0.0.1:{port}"
        time.sleep(0.1)
    raise RuntimeError(f"RPC server on core {core} did not start")


def stats(times_us) -> dict:
    return {"median_us": round(float(np.median(times_us)), 1), "p90_us": round(float(np.percentile(times_us, 90)), 1)}


def timed(fn, repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def main(argv=None) -> int:
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import hardware_fingerprint, parse_devices
    from tvm_partition.runtime.pipeline import Pipeline
    from tvm_partition.runtime.remote import Endpoint, RemoteRunner
    from tvm_partition.cli.stages import compile_pipeline

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results", "amd-epyc-2c", "rpc_pipeline.json"))
    args = ap.parse_args(argv)
    load = {"batch": args.batch, "image_size": args.image_size}
    work = tempfile.mkdtemp(prefix="tvmp-rpc-bench-")
    t0 = time.perf_counter()
    model = frontend.load(args.model, **load)
    compile_model(model, parse_devices("cpu"), "cpu", num_threads=1).save(os.path.join(work, "whole"))
    compile_pipeline(args.model, 2, "split", os.path.join(work, "split"), threads=1, **load)
    stages = compile_pipeline(args.model, 2, "stages", os.path.join(work, "stages"), threads=1, **load)
    print(f"compiled in {time.perf_counter() - t0:.0f}s into {work}", flush=True)
    load_before = os.getloadavg()[0]
    servers = [start_server(0), start_server(1)]
    try:
        addr = [a for _, a in servers]
        inputs = dict(model.inputs)
        whole = RemoteRunner(os.path.join(work, "whole"), Endpoint(rpc=addr[0]))
        expected = whole.run(inputs)
        one = timed(lambda: whole.run(inputs), args.repeat)
        device = whole.device_times(inputs, args.repeat)
        whole.close()  # free server 0 (one session at a time) before the pipelines take it
        results = {"one": {**stats(one), "device": stats(device)}}
        for mode in ("split", "stages"):
            pipe = Pipeline(os.path.join(work, mode), [Endpoint(rpc=a) for a in addr])
            outs, _ = pipe.run(inputs)
            err = max(float(np.max(np.abs(o - e))) for o, e in zip(outs, expected))
            per = []
            total = timed(lambda: per.append(pipe.run(inputs)[1]), args.repeat)
            parts = [stats(col) for col in zip(*per[3:])]
            results[mode] = {**stats(total), "per_server": parts, "max_abs_err_vs_one": err}
            pipe.close()
        results["stages"]["cut_after"] = stages["cut_after"]
    finally:
        for proc, _ in servers:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    one_med = results["one"]["median_us"]
    results["speedup_split_vs_one"] = round(one_med / results["split"]["median_us"], 2)
    results["rpc_overhead_one_us"] = round(one_med - results["one"]["device"]["median_us"], 1)
    results["setup"] = {"model": args.model, **load, "repeat": args.repeat, "tuning": "none (default schedules)",
                        "servers": "python -m tvm.exec.rpc_server --host 127.0.0.1, taskset -c 0 / -c 1, TVM_NUM_THREADS=1",
                        "machine": hardware_fingerprint(), "cpu": platform.processor() or platform.machine(),
                        "cores": os.cpu_count(),
                        "loadavg_1min_before": round(load_before, 2), "date": time.strftime("%Y-%m-%d"),
                        "command": "python benchmarks/rpc_pipeline.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
