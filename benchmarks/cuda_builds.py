"""Models compiled for ``cpu,gpu`` under each strategy, their CUDA kernels compiled with NVRTC for
sm_75, sm_87 and sm_90 and checked against each architecture's limits: no GPU needed.

    python benchmarks/cuda_builds.py build/pytorch_models/*.onnx resnet18 [--strategies equal,fixed,eop,auto]

``tests/test_cuda_kernels.py`` does this for the zoo's models in CI; this runs it on any models
(the ONNX exports of BENCHMARKS.md's sections, which CI does not have). Why: compiling the PyTorch
exports and seven torchvision and onnx-package models for ``cpu,gpu`` (2026-11-30) found three
builds that stopped, none of which a ``cpu,cpu`` build or the zoo showed: a weight packing of one
tile (``executable.lift_weight_packing``), a depthwise map of one row (``templates``) and one
conv2d kernel called on both devices (``executable.kernel_per_target``). One line a build; exits
1 where one failed to load, to build, or to compile for an architecture, or broke its limits.
CPU kernels for ``--target-cpu`` (default ``x86-64-v4``, the GPU machines' hosts so far).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="zoo names or .onnx paths")
    ap.add_argument("--strategies", default="equal,fixed,eop,auto", help="comma-separated (default: %(default)s)")
    ap.add_argument("--target-cpu", default="x86-64-v4", help="LLVM -mcpu of the host's kernels (default: %(default)s)")
    args = ap.parse_args(argv)

    from tvm_partition import frontend
    from tvm_partition.build.cuda_check import ARCHS, check_executable
    from tvm_partition.build.databases import local_database
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.errors import TvmPartitionError

    devices = parse_devices("cpu,gpu", cpu_mcpu=args.target_cpu)
    cost_model = default_cost_model(devices, None)[0]
    db = local_database(None)
    failed = 0
    for source in args.models:
        name = os.path.basename(source)
        try:
            model = frontend.load(source)
        except TvmPartitionError as e:
            print(f"{name}: not loaded: {e}", flush=True)
            failed += 1
            continue
        for strategy in args.strategies.split(","):
            t0 = time.monotonic()
            try:
                compiled = compile_model(model, devices, strategy, tuning_db=db, cost_model=cost_model)
                reports = check_executable(compiled.build.executable)
            except Exception as e:  # noqa: BLE001 - a build's failure is this script's finding, whatever its type
                print(f"{name} {strategy}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                failed += 1
                continue
            kernels = {r.arch: len(r.kernels) for r in reports}
            bad = [f"{r.arch}: {r.error or '; '.join(r.problems)}" for r in reports if r.error or r.problems]
            failed += bool(bad)
            print(f"{name} {strategy}: {len(reports) // len(ARCHS)} CUDA module(s), kernels {kernels}, "
                  f"{'PROBLEMS ' + ' | '.join(bad)[:400] if bad else 'all compile and fit'} "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
