"""How a split's slices reach the servers: inside the actor call, or through the object store.

    python benchmarks/ray_transport.py [--shares 1,0.4] [--batch 32] [--rounds 7] [--requests 20]
        [--out benchmarks/results/MACHINE/ray/ray_transport.json]

One local cluster (:func:`tvm_partition.bench.servers.local_cluster`), one ``speed`` batch split of
ResNet-18 at 64 px compiled over its measured servers (as ``benchmarks/ray_servers.py`` does), run
by one :class:`~tvm_partition.runtime.cluster.RayPipeline` in alternating rounds: ``store`` puts
each slice in the driver node's object store first (``ray.put``, which the server's node then
pulls: how the pipeline sent them before 2026-11-26), ``call`` hands the slice to the actor call
(Ray sends arguments up to ``max_direct_call_object_size`` inside the call:
:data:`tvm_partition.runtime.cluster.INLINE_BYTES`). Each round times ``--requests`` requests one at
a time per mode (after two warm-ups) and takes the ratio call / store within the round, so the
figure survives the drift of a shared VM.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def through_store(pipe, i: int, server: str, inputs: dict):
    """The slice put in the object store, its reference handed to the call (the old path)."""
    import ray

    names = [info["name"] for info in pipe.spec["inputs"]]
    return pipe.pool.actor(server).run.remote(pipe._art(pipe.parts[i][1]), names, None, ray.put(pipe._slice(i, inputs)))


def main(argv=None) -> int:
    from ray_servers import parse_shares, timed
    from tvm_partition.bench.servers import local_cluster
    from tvm_partition.build.databases import local_database
    from tvm_partition.cli.stages import compile_pipeline
    from tvm_partition.devices import fingerprint_id
    from tvm_partition.runtime.cluster import RayPipeline

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shares", default="1,0.4", help="each server's share of one core")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--out", help="default benchmarks/results/<machine>/ray/ray_transport.json")
    args = ap.parse_args(argv)
    shares = parse_shares(args.shares)
    out = args.out or os.path.join(REPO, "benchmarks", "results", fingerprint_id(), "ray", "ray_transport.json")
    res: dict[str, list[float]] = {"store": [], "call": []}
    with tempfile.TemporaryDirectory(prefix="tvmp-ray-transport-") as work, local_cluster(shares) as cluster:
        path = os.path.join(work, "speed")
        compile_pipeline("resnet18", len(shares), "split", path, ray=cluster.address, tuning_db=local_database(None),
                         ratios="speed", image_size=64, batch=args.batch)
        with open(os.path.join(path, "pipeline.json"), encoding="utf-8") as f:
            spec = json.load(f)
        pipe = RayPipeline(path, list(shares))
        inputs = pipe.example_inputs(0)
        in_call = RayPipeline._submit_slice
        try:
            for r in range(args.rounds):
                for mode in ("store", "call") if r % 2 == 0 else ("call", "store"):
                    RayPipeline._submit_slice = in_call if mode == "call" else through_store
                    res[mode].append(timed(pipe, inputs, args.requests)[0])
                print(f"round {r + 1}/{args.rounds}: store {res['store'][-1]:.1f} ms, call {res['call'][-1]:.1f} ms",
                      flush=True)
        finally:
            RayPipeline._submit_slice = in_call
            pipe.close()
    ratios = [c / s for c, s in zip(res["call"], res["store"])]
    result = {"machine": fingerprint_id(), "host": platform.node(), "date": datetime.date.today().isoformat(),
              "command": "python benchmarks/ray_transport.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "shares": shares, "batch": args.batch, "slices": spec["slices"], "requests": args.requests,
              "store_ms": res["store"], "call_ms": res["call"], "call_over_store": ratios,
              "median_call_over_store": float(np.median(ratios))}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"slices {spec['slices']}: store {np.median(res['store']):.1f} ms, call {np.median(res['call']):.1f} ms, "
          f"call / store {np.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}); {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
