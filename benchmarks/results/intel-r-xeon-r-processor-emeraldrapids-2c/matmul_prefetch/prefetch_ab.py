"""Chunked weight matmuls of models: the template with its prefetches against without them
(patched out), weights cold (flushed before each run) and warm, alternating rounds (ROUNDS, default 5).

    python prefetch_ab.py MODEL.onnx [MODEL.onnx ...]
"""
import os, sys
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import cold_and_warm, cold_and_warm_line, model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.transfer import blocks_of
from tvm_partition.build.tuning import tuning_target
from tvm_partition.build.templates import matmul
from tvm_partition.devices import parse_devices, use_cpu_threads
use_cpu_threads()
target = tuning_target(parse_devices("cpu", cpu_mcpu=os.environ.get("TARGET_CPU"))[0])
rounds = int(os.environ.get("ROUNDS", 5))
seen = set()
orig = matmul._prefetching
for spec in sys.argv[1:]:
    _, graph = model_graph(spec)
    for op in graph.ops.values():
        if "matmul" not in op.fused_name: continue
        try:
            kmod = kernel_of(graph, op, None if op.split_dims else 0)
        except Exception:
            continue
        bl = blocks_of(kmod)
        if bl in seen: continue
        seen.add(bl)
        plan = matmul._matmul_plan(kmod, target)
        if plan is None or not plan.packed or not plan.chunk: continue  # the chunked ones prefetch
        with_pf = matmul._schedule_matmul(kmod, target, plan)
        matmul._prefetching = lambda func, *args: func
        without = matmul._schedule_matmul(kmod, target, plan)
        matmul._prefetching = orig
        mm = [b for b in bl if b.name.startswith("matmul")][0]
        print(f"{os.path.basename(spec)[:16]:16} {'x'.join(map(str, mm.extents)):20} {plan.rows}x{plan.blocks} c{plan.chunk} "
              f"{cold_and_warm_line(cold_and_warm(without, with_pf, target, rounds))}", flush=True)
