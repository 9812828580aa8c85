"""The VM program compiled to native code against the same program in bytecode: what each costs to
build, and what each costs a run.

    python benchmarks/vm_modes.py lstm --seq-len 100 --strategy cpu
    python benchmarks/vm_modes.py lstm --seq-len 10 --strategy equal --rounds 7

A build links ``main`` compiled (``relax.build(..., exec_mode="compiled")``) beside a bytecode twin
``main_kernels`` that calls the same kernels in the same order (``build.executable.link``). This
lowers the model once, links it both ways (seconds each: the compiled link's extra is LLVM's work on
the program's one function), then runs ``main`` and ``main_kernels`` of the compiled build in one
process, alternating, ``--rounds`` times (median of ``--number`` runs each): their ratio is what the
compiled program saves a run, within this process's noise (BENCHMARKS.md, "What a split costs in
the VM on `cpu,cpu`").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    from tvm_partition import flags, frontend

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a zoo model")
    ap.add_argument("--strategy", default="cpu", help="the plan to build (default cpu)")
    ap.add_argument("--devices", default="cpu,cpu")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds of the two programs (default 7)")
    ap.add_argument("--number", type=int, default=20, help="runs a round times each program (default 20)")
    flags.add_model_args(ap)
    args = ap.parse_args(argv)

    import tvm
    from tvm import relax

    from tvm_partition.build import executable as ex
    from tvm_partition.build.align import align_splits
    from tvm_partition.build.databases import local_database
    from tvm_partition.build.tuning import open_schedules
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners import plan_and_simulate
    from tvm_partition.runtime.artifact import KERNELS_MAIN

    model = frontend.load_from_args(args.model, args)
    graph, devices = OpGraph(model.mod), parse_devices(args.devices)
    schedules = open_schedules(local_database(None))
    align_splits(graph, devices, schedules)  # the cuts a build plans (compile_model)
    plan, _ = plan_and_simulate(graph, devices, args.strategy)
    lowered, placed = ex.lower(model.mod, plan, graph, schedules)
    pipeline = ex.link_pipeline(lowered, placed, plan.host)

    t0 = time.perf_counter()
    executable = ex.link(lowered, pipeline)
    compiled_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    relax.build(lowered, relax_pipeline=pipeline, exec_mode="bytecode")
    bytecode_s = time.perf_counter() - t0
    calls = executable.as_text().count("call ")
    print(f"{model.name} {args.strategy} on {args.devices}: {calls} calls in {KERNELS_MAIN}; "
          f"link compiled {compiled_s:.1f} s, bytecode only {bytecode_s:.1f} s")

    vm = relax.VirtualMachine(executable, [d.tvm_device() for d in plan.devices])
    host = plan.devices[0].tvm_device()
    weights = list(vm["main_transform_params"]([tvm.runtime.tensor(p, device=host) for p in model.params]))
    inputs = [tvm.runtime.tensor(v, device=host) for v in model.inputs.values()] + weights
    times = {"main": [], KERNELS_MAIN: []}
    for _ in range(args.rounds):
        for name, got in times.items():
            timer = vm.time_evaluator(name, host, number=args.number, repeat=3)
            got.append(statistics.median(timer(*inputs).results) * 1e6)
    ratios = [c / b for c, b in zip(times["main"], times[KERNELS_MAIN])]
    print(f"run: compiled main {statistics.median(times['main']):.1f} us, bytecode {statistics.median(times[KERNELS_MAIN]):.1f} us; "
          f"compiled / bytecode median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f} over {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
