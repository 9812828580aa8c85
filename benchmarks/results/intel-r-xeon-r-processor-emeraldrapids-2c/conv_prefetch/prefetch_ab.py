"""Direct-template convolutions of models: with the next block's prefetches against without them
(PREFETCH_BYTES set to infinity: no split of the reduction, no prefetch), weights cold (flushed before
each run) and warm, alternating rounds (ROUNDS, default 5). PREFETCH_BYTES=0 in the environment: every
direct-template convolution, whatever its weights.

    python prefetch_ab.py MODEL.onnx [MODEL.onnx ...]
"""
import os, sys
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import cold_and_warm, cold_and_warm_line, model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.transfer import blocks_of
from tvm_partition.build.tuning import tuning_target
from tvm_partition.build.templates import convolution, common
from tvm_partition.devices import parse_devices, use_cpu_threads
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
rounds = int(os.environ.get("ROUNDS", 5))
convolution.PREFETCH_BYTES = int(os.environ.get("PREFETCH_BYTES", convolution.PREFETCH_BYTES))
seen = set()
for spec in sys.argv[1:]:
    _, graph = model_graph(spec)
    for op in graph.ops.values():
        if op.kind != "conv2d": continue
        try:
            kmod = common._epilogue_operands_inlined(kernel_of(graph, op, None if op.split_dims else 0))
        except Exception:
            continue
        bl = blocks_of(kmod)
        if bl in seen: continue
        seen.add(bl)
        if convolution._pointwise_plan(kmod, target) is not None: continue
        plan = convolution._plan(kmod, target)
        if plan is None: continue
        with_pf = convolution._schedule_conv(kmod, target, plan)
        if "prefetch" not in with_pf.script(): continue
        keep, convolution.PREFETCH_BYTES = convolution.PREFETCH_BYTES, float("inf")
        without = convolution._schedule_conv(kmod, target, plan)
        convolution.PREFETCH_BYTES = keep
        shapes = " ".join("x".join(str(int(d)) for d in s) for s in op.input_shapes[:2])
        print(f"{os.path.basename(spec)[:12]:12} {shapes:34} {plan.row}x{plan.blocks} cl{int(plan.channels_last)} "
              f"{cold_and_warm_line(cold_and_warm(without, with_pf, target, rounds))}", flush=True)
