"""Transferred kernels whose replay changes with reduction loops fitted without the power of two: before vs after."""
import os, sys
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import alternated, kernels, model_graph
from tvm_partition.build import transfer
from tvm_partition.build.tuning import open_schedules, tuning_target
from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads

use_cpu_threads()
target = tuning_target(parse_devices("cpu", cpu_mcpu=os.environ.get("TARGET_CPU"))[0])
rounds = int(os.environ.get("ROUNDS", 3))
fixed = transfer._reduction_axes
total = [0.0, 0.0]
for spec in sys.argv[1:]:
    _, graph = model_graph(spec)
    for op, kmod, blocks in kernels(graph, ""):
        funcs = []
        for fn in (lambda sch, main: [], fixed):
            transfer._reduction_axes = fn
            sch = open_schedules(database_dir(None))
            func, label = sch.schedule(kmod, target)
            funcs.append(func)
        transfer._reduction_axes = fixed
        if funcs[0] is None or str(funcs[0]) == str(funcs[1]):
            continue
        times, ratio = alternated(funcs, target, rounds)
        total = [total[0] + times[0], total[1] + times[1]]
        ext = "x".join(map(str, max(blocks, key=lambda b: len(b.extents)).extents))
        print(f"{os.path.basename(spec)[:18]:18} {op.fused_name[:26]:26} {ext:22} {times[0]:9.1f} {times[1]:9.1f} {ratio:5.2f}  {label.split(' (')[0][:70]}", flush=True)
print("all", total)
